/* Communicators and groups: dup, split, split_type, create, compare, group algebra,
 * intercommunicators. */
#include <string.h>
#include "check.h"

int main(int argc, char **argv) {
    int rank, size, r, s, res;
    MUST(MPI_Init(&argc, &argv));
    MUST(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    MUST(MPI_Comm_size(MPI_COMM_WORLD, &size));

    MPI_Comm dup;
    MUST(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    MUST(MPI_Comm_compare(MPI_COMM_WORLD, dup, &res));
    CHECK(res == MPI_CONGRUENT, "compare dup %d", res);
    MUST(MPI_Comm_compare(dup, dup, &res));
    CHECK(res == MPI_IDENT, "compare self %d", res);

    /* Split by parity, ordered by descending rank. */
    MPI_Comm half;
    MUST(MPI_Comm_split(dup, rank % 2, -rank, &half));
    MUST(MPI_Comm_size(half, &s));
    MUST(MPI_Comm_rank(half, &r));
    CHECK(s == (size + 1 - rank % 2) / 2, "half size %d", s);
    CHECK(r == (s - 1) - rank / 2, "half rank %d (world %d)", r, rank);
    int sum = 0;
    MUST(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, half));
    int want = 0;
    for (int i = rank % 2; i < size; i += 2) want += i;
    CHECK(sum == want, "sum over half %d != %d", sum, want);

    char name[MPI_MAX_OBJECT_NAME];
    int len;
    MUST(MPI_Comm_get_name(MPI_COMM_WORLD, name, &len));
    CHECK(strcmp(name, "MPI_COMM_WORLD") == 0 && len == 14, "world name %s", name);
    MUST(MPI_Comm_set_name(dup, "the duplicate"));
    MUST(MPI_Comm_get_name(dup, name, &len));
    CHECK(strcmp(name, "the duplicate") == 0, "dup name %s", name);
    MPI_Comm parent;
    MUST(MPI_Comm_get_parent(&parent));
    CHECK(parent == MPI_COMM_NULL, "no parent");

    MPI_Comm none;
    MUST(MPI_Comm_split(MPI_COMM_WORLD, MPI_UNDEFINED, 0, &none));
    CHECK(none == MPI_COMM_NULL, "undefined color gives COMM_NULL");

    MPI_Comm node;
    MUST(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node));
    MUST(MPI_Comm_size(node, &s));
    CHECK(s == size, "one host: node size %d", s);

    /* Groups: the first half of the world, and its complement. */
    MPI_Group world_g, first, rest, both, common;
    MUST(MPI_Comm_group(MPI_COMM_WORLD, &world_g));
    int n = (size + 1) / 2, ranks[64];
    for (int i = 0; i < n; i++) ranks[i] = i;
    MUST(MPI_Group_incl(world_g, n, ranks, &first));
    MUST(MPI_Group_excl(world_g, n, ranks, &rest));
    MUST(MPI_Group_union(first, rest, &both));
    MUST(MPI_Group_compare(both, world_g, &res));
    CHECK(res == MPI_IDENT, "union is the world %d", res);
    MUST(MPI_Group_intersection(first, rest, &common));
    MUST(MPI_Group_size(common, &s));
    CHECK(s == 0, "halves are disjoint");
    MUST(MPI_Group_rank(first, &r));
    CHECK(rank < n ? r == rank : r == MPI_UNDEFINED, "group rank %d", r);
    int out[64];
    MUST(MPI_Group_translate_ranks(world_g, size, (int[]){0, 1, 2, 3}, first, out));
    CHECK(out[0] == 0, "translate 0 -> %d", out[0]);
    int range[1][3] = {{0, size - 1, 2}};
    MPI_Group evens;
    MUST(MPI_Group_range_incl(world_g, 1, range, &evens));
    MUST(MPI_Group_size(evens, &s));
    CHECK(s == (size + 1) / 2, "range_incl size %d", s);

    MPI_Comm sub;
    MUST(MPI_Comm_create(MPI_COMM_WORLD, first, &sub));
    if (rank < n) {
        MUST(MPI_Comm_size(sub, &s));
        CHECK(s == n, "created size %d", s);
        MUST(MPI_Comm_free(&sub));
    } else {
        CHECK(sub == MPI_COMM_NULL, "non-members get COMM_NULL");
    }

    if (size >= 2) {
        /* Intercommunicator between the parity halves, merged back. */
        MPI_Comm par, inter, merged;
        MUST(MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &par));
        MUST(MPI_Intercomm_create(par, 0, MPI_COMM_WORLD, rank % 2 == 0 ? 1 : 0, 9, &inter));
        MUST(MPI_Comm_test_inter(inter, &res));
        CHECK(res == 1, "test_inter");
        MUST(MPI_Comm_remote_size(inter, &s));
        CHECK(s == size / 2 + (rank % 2 ? size % 2 : 0), "remote size %d", s);
        MUST(MPI_Intercomm_merge(inter, rank % 2, &merged));
        MUST(MPI_Comm_size(merged, &s));
        CHECK(s == size, "merged size %d", s);
        MUST(MPI_Comm_free(&merged));
        MUST(MPI_Comm_free(&inter));
        MUST(MPI_Comm_free(&par));
    }

    MUST(MPI_Group_free(&evens));
    MUST(MPI_Group_free(&common));
    MUST(MPI_Group_free(&both));
    MUST(MPI_Group_free(&rest));
    MUST(MPI_Group_free(&first));
    MUST(MPI_Group_free(&world_g));
    CHECK(world_g == MPI_GROUP_NULL, "group freed");
    MUST(MPI_Comm_free(&node));
    MUST(MPI_Comm_free(&half));
    MUST(MPI_Comm_free(&dup));
    CHECK(dup == MPI_COMM_NULL, "comm freed");
    CHECK(MPI_Comm_c2f(MPI_COMM_WORLD) == 257 && MPI_Comm_f2c(257) == MPI_COMM_WORLD, "c2f");
    CHECK(MPI_Comm_toint(MPI_COMM_SELF) == 258, "toint");
    MUST(MPI_Finalize());
    return 0;
}
