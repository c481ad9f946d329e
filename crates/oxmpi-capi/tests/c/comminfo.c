/* Communicator hints and duplication with info, nonblocking duplication, the guided split
 * types, names of the null handle, MPI_PROC_NULL in Group_translate_ranks, and the
 * bad-input cases of each. */
#include <string.h>
#include "check.h"

static void check_congruent(MPI_Comm a, MPI_Comm b) {
    int r;
    MUST(MPI_Comm_compare(a, b, &r));
    CHECK(r == MPI_CONGRUENT, "compare %d", r);
}

static int has(MPI_Info info, const char *key, const char *want) {
    char val[MPI_MAX_INFO_VAL];
    int len = sizeof val, flag;
    MUST(MPI_Info_get_string(info, key, &len, val, &flag));
    return flag && strcmp(val, want) == 0;
}

int main(int argc, char **argv) {
    int rank, size, n, flag, x;
    MPI_Comm dup, idup, split;
    MPI_Info info, used;
    MPI_Request req;
    MPI_Status st;
    MUST(MPI_Init(&argc, &argv));
    MUST(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    MUST(MPI_Comm_size(MPI_COMM_WORLD, &size));

    /* Hints set on a communicator come back from Comm_get_info; Comm_dup copies them,
     * Comm_dup_with_info replaces them. */
    MUST(MPI_Info_create(&info));
    MUST(MPI_Info_set(info, "mpi_assert_no_any_tag", "true"));
    MUST(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    MUST(MPI_Comm_set_info(dup, info));
    MUST(MPI_Comm_get_info(dup, &used));
    CHECK(has(used, "mpi_assert_no_any_tag", "true"), "hint kept");
    MUST(MPI_Info_free(&used));
    MUST(MPI_Comm_dup(dup, &idup));
    MUST(MPI_Comm_get_info(idup, &used));
    CHECK(has(used, "mpi_assert_no_any_tag", "true"), "Comm_dup copies hints");
    MUST(MPI_Info_free(&used));
    MUST(MPI_Comm_free(&idup));
    MUST(MPI_Comm_dup_with_info(dup, MPI_INFO_NULL, &idup));
    MUST(MPI_Comm_get_info(idup, &used));
    MUST(MPI_Info_get_nkeys(used, &n));
    CHECK(n == 0, "Comm_dup_with_info(MPI_INFO_NULL) has %d hints", n);
    MUST(MPI_Info_free(&used));
    check_congruent(dup, idup);
    /* The new communicator works and is separate from its parent. */
    x = rank;
    MUST(MPI_Allreduce(MPI_IN_PLACE, &x, 1, MPI_INT, MPI_SUM, idup));
    CHECK(x == size * (size - 1) / 2, "sum %d", x);
    MUST(MPI_Comm_free(&idup));
    MUST(MPI_Comm_set_info(dup, MPI_INFO_NULL));
    MUST(MPI_Comm_get_info(dup, &used));
    MUST(MPI_Info_get_nkeys(used, &n));
    CHECK(n == 0, "hints cleared: %d", n);
    MUST(MPI_Info_free(&used));

    /* Nonblocking duplication: usable once the request completes. */
    MUST(MPI_Comm_idup(MPI_COMM_WORLD, &idup, &req));
    MUST(MPI_Wait(&req, &st));
    CHECK(req == MPI_REQUEST_NULL, "request freed");
    check_congruent(MPI_COMM_WORLD, idup);
    x = 1;
    MUST(MPI_Allreduce(MPI_IN_PLACE, &x, 1, MPI_INT, MPI_SUM, idup));
    CHECK(x == size, "idup sum %d", x);
    MUST(MPI_Comm_free(&idup));
    MUST(MPI_Comm_idup_with_info(MPI_COMM_WORLD, info, &idup, &req));
    MUST(MPI_Test(&req, &flag, &st));
    CHECK(flag, "an idup request completes");
    MUST(MPI_Comm_get_info(idup, &used));
    CHECK(has(used, "mpi_assert_no_any_tag", "true"), "idup_with_info hints");
    MUST(MPI_Info_free(&used));
    MUST(MPI_Comm_free(&idup));

    /* Guided splits: the host for mpi_shared_memory, MPI_COMM_NULL otherwise. */
    MUST(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_HW_GUIDED, 0, MPI_INFO_NULL, &split));
    CHECK(split == MPI_COMM_NULL, "no resource named");
    MUST(MPI_Info_set(info, "mpi_hw_resource_type", "no-such-resource"));
    MUST(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_RESOURCE_GUIDED, 0, info, &split));
    CHECK(split == MPI_COMM_NULL, "unknown resource");
    MUST(MPI_Info_set(info, "mpi_hw_resource_type", "mpi_shared_memory"));
    MUST(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_HW_GUIDED, rank, info, &split));
    CHECK(split != MPI_COMM_NULL, "shared memory split");
    MUST(MPI_Comm_size(split, &n));
    CHECK(n == size, "one host: %d of %d", n, size); /* the tests run on one host */
    MUST(MPI_Comm_free(&split));
    /* Unguided: nothing finer than the host is known, and the host is all of WORLD. */
    MUST(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_HW_UNGUIDED, 0, MPI_INFO_NULL, &split));
    CHECK(split == MPI_COMM_NULL, "unguided split of one host");

    /* Names and translations of the null values. */
    {
        char name[MPI_MAX_OBJECT_NAME];
        int len, from[2] = {MPI_PROC_NULL, 0}, to[2];
        MPI_Group g;
        MUST(MPI_Comm_get_name(MPI_COMM_NULL, name, &len));
        CHECK(strcmp(name, "MPI_COMM_NULL") == 0 && len == 13, "name %s", name);
        MUST(MPI_Type_get_name(MPI_DATATYPE_NULL, name, &len));
        CHECK(strcmp(name, "MPI_DATATYPE_NULL") == 0, "name %s", name);
        MUST(MPI_Comm_group(MPI_COMM_WORLD, &g));
        MUST(MPI_Group_translate_ranks(g, 2, from, g, to));
        CHECK(to[0] == MPI_PROC_NULL && to[1] == 0, "translated %d %d", to[0], to[1]);
        /* Comm_create_group outside the group: MPI_COMM_NULL, a local call. */
        {
            MPI_Group self_only;
            MPI_Comm c;
            int me[1];
            me[0] = rank;
            MUST(MPI_Group_incl(g, 1, me, &self_only));
            MUST(MPI_Comm_create_group(MPI_COMM_WORLD, self_only, 7, &c));
            CHECK(c != MPI_COMM_NULL, "own group");
            MUST(MPI_Comm_free(&c));
            MUST(MPI_Group_free(&self_only));
            if (size > 1) {
                me[0] = (rank + 1) % size;
                MUST(MPI_Group_incl(g, 1, me, &self_only));
                /* Only the other rank is in this group; it creates its own communicator
                 * alone, this one gets nothing. */
                MUST(MPI_Comm_create_group(MPI_COMM_WORLD, self_only, 8, &c));
                CHECK(c == MPI_COMM_NULL, "not a member");
                MUST(MPI_Group_free(&self_only));
            }
        }
        MUST(MPI_Group_free(&g));
    }

    /* Bad input returns its class. */
    MUST(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    CHECK(MPI_Comm_idup(MPI_COMM_WORLD, &idup, NULL) == MPI_ERR_ARG, "null request");
    CHECK(MPI_Comm_idup(MPI_COMM_NULL, &idup, &req) == MPI_ERR_COMM, "idup of COMM_NULL");
    CHECK(MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, NULL) == MPI_ERR_ARG, "null newcomm");
    CHECK(MPI_Comm_set_info(MPI_COMM_NULL, info) == MPI_ERR_COMM, "set_info on COMM_NULL");
    CHECK(MPI_Comm_get_info(MPI_COMM_WORLD, NULL) == MPI_ERR_ARG, "null info_used");
    CHECK(MPI_Comm_get_info(MPI_COMM_NULL, &used) == MPI_ERR_COMM, "get_info on COMM_NULL");
    {
        MPI_Info freed;
        MUST(MPI_Info_create(&freed));
        MPI_Info stale = freed;
        MUST(MPI_Info_free(&freed));
        CHECK(MPI_Comm_set_info(dup, stale) == MPI_ERR_INFO, "freed info");
    }
    CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, 12345, 0, MPI_INFO_NULL, &split) == MPI_ERR_ARG,
          "unknown split type");
    MUST(MPI_Info_free(&info));
    MUST(MPI_Comm_free(&dup));
    MUST(MPI_Finalize());
    return 0;
}
