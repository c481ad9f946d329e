/* The large-count (_c) forms of the nonblocking, persistent and neighbourhood collectives:
 * MPI_Count counts and count arrays, MPI_Aint displacements. Each collective runs in its
 * nonblocking form (waited for) and its persistent form (started twice), the blocking _c
 * forms of alltoallw and the neighbourhood collectives too, and every value is checked;
 * then the bad inputs: negative counts, counts whose bytes exceed the address space, a
 * NULL request. */
#include <stdint.h>
#include <string.h>
#include "check.h"

#define N 64

static int rank, size;
static MPI_Request r;

/* Completes the request of `form`: 0 nonblocking (wait), 1 persistent (start and wait
 * twice, then free). */
static void complete(int form) {
    if (form == 0) {
        MUST(MPI_Wait(&r, MPI_STATUS_IGNORE));
        return;
    }
    for (int k = 0; k < 2; k++) {
        MUST(MPI_Start(&r));
        MUST(MPI_Wait(&r, MPI_STATUS_IGNORE));
    }
    MUST(MPI_Request_free(&r));
}

static void fill(int *p, int n, int v) {
    for (int i = 0; i < n; i++) p[i] = v;
}

static void rooted(void) {
    int sb[N], rb[N];
    MPI_Count counts[N];
    MPI_Aint displs[N];
    int root = size - 1;
    for (int form = 0; form < 2; form++) {
        /* bcast: three values from the root. */
        fill(rb, N, rank == root ? 7 : -1);
        MUST(form ? MPI_Bcast_init_c(rb, 3, MPI_INT, root, MPI_COMM_WORLD, MPI_INFO_NULL, &r)
                  : MPI_Ibcast_c(rb, 3, MPI_INT, root, MPI_COMM_WORLD, &r));
        complete(form);
        for (int i = 0; i < 3; i++) CHECK(rb[i] == 7, "bcast form %d [%d] = %d", form, i, rb[i]);
        CHECK(rb[3] == (rank == root ? 7 : -1), "bcast wrote past its count");

        /* gather: two values per rank at the root. */
        sb[0] = rank;
        sb[1] = 10 * rank;
        fill(rb, N, -1);
        MUST(form ? MPI_Gather_init_c(sb, 2, MPI_INT, rb, 2, MPI_INT, root, MPI_COMM_WORLD,
                                      MPI_INFO_NULL, &r)
                  : MPI_Igather_c(sb, 2, MPI_INT, rb, 2, MPI_INT, root, MPI_COMM_WORLD, &r));
        complete(form);
        if (rank == root)
            for (int i = 0; i < size; i++)
                CHECK(rb[2 * i] == i && rb[2 * i + 1] == 10 * i, "gather form %d from %d", form, i);

        /* scatter: block i of the root to rank i. */
        for (int i = 0; i < 2 * size; i++) sb[i] = 100 + i;
        fill(rb, N, -1);
        MUST(form ? MPI_Scatter_init_c(sb, 2, MPI_INT, rb, 2, MPI_INT, root, MPI_COMM_WORLD,
                                       MPI_INFO_NULL, &r)
                  : MPI_Iscatter_c(sb, 2, MPI_INT, rb, 2, MPI_INT, root, MPI_COMM_WORLD, &r));
        complete(form);
        CHECK(rb[0] == 100 + 2 * rank && rb[1] == 101 + 2 * rank, "scatter form %d", form);

        /* gatherv: rank i sends i + 1 values, placed in reverse order of ranks. */
        fill(sb, N, rank);
        int at = 0;
        for (int i = size - 1; i >= 0; i--) {
            counts[i] = i + 1;
            displs[i] = at;
            at += i + 1;
        }
        fill(rb, N, -1);
        MUST(form ? MPI_Gatherv_init_c(sb, rank + 1, MPI_INT, rb, counts, displs, MPI_INT, root,
                                       MPI_COMM_WORLD, MPI_INFO_NULL, &r)
                  : MPI_Igatherv_c(sb, rank + 1, MPI_INT, rb, counts, displs, MPI_INT, root,
                                   MPI_COMM_WORLD, &r));
        complete(form);
        if (rank == root)
            for (int i = 0; i < size; i++)
                for (int j = 0; j < i + 1; j++)
                    CHECK(rb[displs[i] + j] == i, "gatherv form %d from %d", form, i);

        /* scatterv: the same layout back. */
        for (int i = 0; i < size; i++)
            for (int j = 0; j < i + 1; j++) sb[displs[i] + j] = 1000 * i + j;
        fill(rb, N, -1);
        MUST(form ? MPI_Scatterv_init_c(sb, counts, displs, MPI_INT, rb, rank + 1, MPI_INT, root,
                                        MPI_COMM_WORLD, MPI_INFO_NULL, &r)
                  : MPI_Iscatterv_c(sb, counts, displs, MPI_INT, rb, rank + 1, MPI_INT, root,
                                    MPI_COMM_WORLD, &r));
        complete(form);
        for (int j = 0; j < rank + 1; j++)
            CHECK(rb[j] == 1000 * rank + j, "scatterv form %d [%d] = %d", form, j, rb[j]);
        CHECK(rb[rank + 1] == -1, "scatterv wrote past its count");

        /* reduce, allreduce, scan, exscan of (rank + 1, 2 (rank + 1)). */
        int in[2] = {rank + 1, 2 * (rank + 1)}, out[2];
        int total = size * (size + 1) / 2, upto = (rank + 1) * (rank + 2) / 2;
        for (int kind = 0; kind < 4; kind++) {
            fill(out, 2, -1);
            int rc;
            if (kind == 0)
                rc = form ? MPI_Reduce_init_c(in, out, 2, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD,
                                              MPI_INFO_NULL, &r)
                          : MPI_Ireduce_c(in, out, 2, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD, &r);
            else if (kind == 1)
                rc = form ? MPI_Allreduce_init_c(in, out, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD,
                                                 MPI_INFO_NULL, &r)
                          : MPI_Iallreduce_c(in, out, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r);
            else if (kind == 2)
                rc = form ? MPI_Scan_init_c(in, out, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD,
                                            MPI_INFO_NULL, &r)
                          : MPI_Iscan_c(in, out, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r);
            else
                rc = form ? MPI_Exscan_init_c(in, out, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD,
                                              MPI_INFO_NULL, &r)
                          : MPI_Iexscan_c(in, out, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r);
            MUST(rc);
            complete(form);
            int want = kind == 2 ? upto : kind == 3 ? upto - (rank + 1) : total;
            if ((kind == 0 && rank != root) || (kind == 3 && rank == 0)) continue;
            CHECK(out[0] == want && out[1] == 2 * want, "reduction %d form %d: %d %d (want %d)",
                  kind, form, out[0], out[1], want);
        }
    }
}

static void all(void) {
    int sb[N], rb[N];
    MPI_Count sc[N], rc[N];
    MPI_Aint sd[N], rd[N];
    MPI_Datatype st[N], rt[N];
    for (int form = 0; form < 2; form++) {
        /* allgather */
        sb[0] = rank;
        fill(rb, N, -1);
        MUST(form ? MPI_Allgather_init_c(sb, 1, MPI_INT, rb, 1, MPI_INT, MPI_COMM_WORLD,
                                         MPI_INFO_NULL, &r)
                  : MPI_Iallgather_c(sb, 1, MPI_INT, rb, 1, MPI_INT, MPI_COMM_WORLD, &r));
        complete(form);
        for (int i = 0; i < size; i++) CHECK(rb[i] == i, "allgather form %d [%d]", form, i);

        /* alltoall: block j for rank j holds 100 rank + j. */
        for (int j = 0; j < size; j++) sb[j] = 100 * rank + j;
        fill(rb, N, -1);
        MUST(form ? MPI_Alltoall_init_c(sb, 1, MPI_INT, rb, 1, MPI_INT, MPI_COMM_WORLD,
                                        MPI_INFO_NULL, &r)
                  : MPI_Ialltoall_c(sb, 1, MPI_INT, rb, 1, MPI_INT, MPI_COMM_WORLD, &r));
        complete(form);
        for (int i = 0; i < size; i++)
            CHECK(rb[i] == 100 * i + rank, "alltoall form %d [%d] = %d", form, i, rb[i]);

        /* allgatherv: rank i gives i + 1 copies of i, packed in rank order. */
        fill(sb, N, rank);
        for (int i = 0, at = 0; i < size; at += i + 1, i++) {
            rc[i] = i + 1;
            rd[i] = at;
        }
        fill(rb, N, -1);
        MUST(form ? MPI_Allgatherv_init_c(sb, rank + 1, MPI_INT, rb, rc, rd, MPI_INT,
                                          MPI_COMM_WORLD, MPI_INFO_NULL, &r)
                  : MPI_Iallgatherv_c(sb, rank + 1, MPI_INT, rb, rc, rd, MPI_INT, MPI_COMM_WORLD,
                                      &r));
        complete(form);
        for (int i = 0; i < size; i++)
            for (int j = 0; j <= i; j++)
                CHECK(rb[rd[i] + j] == i, "allgatherv form %d from %d", form, i);

        /* alltoallv: one value to each rank, at reversed displacements on both sides. */
        for (int j = 0; j < size; j++) {
            sc[j] = rc[j] = 1;
            sd[j] = rd[j] = size - 1 - j;
            sb[size - 1 - j] = 100 * rank + j;
        }
        fill(rb, N, -1);
        MUST(form ? MPI_Alltoallv_init_c(sb, sc, sd, MPI_INT, rb, rc, rd, MPI_INT, MPI_COMM_WORLD,
                                         MPI_INFO_NULL, &r)
                  : MPI_Ialltoallv_c(sb, sc, sd, MPI_INT, rb, rc, rd, MPI_INT, MPI_COMM_WORLD, &r));
        complete(form);
        for (int i = 0; i < size; i++)
            CHECK(rb[size - 1 - i] == 100 * i + rank, "alltoallv form %d from %d", form, i);

        /* alltoallw: the same in bytes (the blocking _c form as form 2). */
        for (int j = 0; j < size; j++) {
            sd[j] *= sizeof(int);
            rd[j] *= sizeof(int);
            st[j] = rt[j] = MPI_INT;
        }
        for (int f = form; f < (form ? 2 : 3); f += (form ? 1 : 2)) {
            fill(rb, N, -1);
            if (f == 2) {
                MUST(MPI_Alltoallw_c(sb, sc, sd, st, rb, rc, rd, rt, MPI_COMM_WORLD));
            } else {
                MUST(f ? MPI_Alltoallw_init_c(sb, sc, sd, st, rb, rc, rd, rt, MPI_COMM_WORLD,
                                              MPI_INFO_NULL, &r)
                       : MPI_Ialltoallw_c(sb, sc, sd, st, rb, rc, rd, rt, MPI_COMM_WORLD, &r));
                complete(f);
            }
            for (int i = 0; i < size; i++)
                CHECK(rb[size - 1 - i] == 100 * i + rank, "alltoallw form %d from %d", f, i);
        }

        /* reduce_scatter: rank i gets i + 1 sums; reduce_scatter_block: two each. */
        for (int i = 0; i < size; i++) rc[i] = i + 1;
        for (int i = 0; i < N; i++) sb[i] = i + rank;
        int base = rank * (rank + 1) / 2;
        fill(rb, N, -1);
        MUST(form ? MPI_Reduce_scatter_init_c(sb, rb, rc, MPI_INT, MPI_SUM, MPI_COMM_WORLD,
                                              MPI_INFO_NULL, &r)
                  : MPI_Ireduce_scatter_c(sb, rb, rc, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r));
        complete(form);
        for (int j = 0; j <= rank; j++)
            CHECK(rb[j] == size * (base + j) + size * (size - 1) / 2,
                  "reduce_scatter form %d [%d] = %d", form, j, rb[j]);
        fill(rb, N, -1);
        MUST(form ? MPI_Reduce_scatter_block_init_c(sb, rb, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD,
                                                    MPI_INFO_NULL, &r)
                  : MPI_Ireduce_scatter_block_c(sb, rb, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r));
        complete(form);
        for (int j = 0; j < 2; j++)
            CHECK(rb[j] == size * (2 * rank + j) + size * (size - 1) / 2,
                  "reduce_scatter_block form %d [%d] = %d", form, j, rb[j]);
    }
}

/* Neighbourhood collectives over a periodic ring: sources and destinations are (left,
 * right). Blocks from a neighbour are checked by their sender's rank (with one or two
 * ranks both neighbours are the same process). */
static void neighbours(void) {
    MPI_Comm ring;
    int dims[1] = {size}, periods[1] = {1}, left, right;
    MUST(MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &ring));
    MUST(MPI_Cart_shift(ring, 0, 1, &left, &right));
    int from[2] = {left, right};
    int sb[8], rb[8];
    MPI_Count c1[2] = {1, 1}, c2[2] = {2, 2};
    MPI_Aint d1[2] = {1, 0}, d2[2] = {2, 0}, w[2] = {sizeof(int), 0};
    MPI_Datatype t[2] = {MPI_INT, MPI_INT};
    for (int f = 0; f < 3; f++) {
        /* allgather: my rank from each neighbour. */
        fill(rb, 8, -1);
        if (f == 2)
            MUST(MPI_Neighbor_allgather_c(&rank, 1, MPI_INT, rb, 1, MPI_INT, ring));
        else {
            MUST(f ? MPI_Neighbor_allgather_init_c(&rank, 1, MPI_INT, rb, 1, MPI_INT, ring,
                                                   MPI_INFO_NULL, &r)
                   : MPI_Ineighbor_allgather_c(&rank, 1, MPI_INT, rb, 1, MPI_INT, ring, &r));
            complete(f);
        }
        CHECK(rb[0] == left && rb[1] == right && rb[2] == -1, "neighbor_allgather form %d", f);

        /* alltoall: 100 rank + j to destination j. */
        sb[0] = 100 * rank;
        sb[1] = 100 * rank + 1;
        fill(rb, 8, -1);
        if (f == 2)
            MUST(MPI_Neighbor_alltoall_c(sb, 1, MPI_INT, rb, 1, MPI_INT, ring));
        else {
            MUST(f ? MPI_Neighbor_alltoall_init_c(sb, 1, MPI_INT, rb, 1, MPI_INT, ring,
                                                  MPI_INFO_NULL, &r)
                   : MPI_Ineighbor_alltoall_c(sb, 1, MPI_INT, rb, 1, MPI_INT, ring, &r));
            complete(f);
        }
        for (int i = 0; i < 2; i++)
            CHECK(rb[i] / 100 == from[i], "neighbor_alltoall form %d [%d] = %d", f, i, rb[i]);

        /* allgatherv: two copies of my rank from each, the left one's placed second. */
        int two[2] = {rank, rank};
        fill(rb, 8, -1);
        if (f == 2)
            MUST(MPI_Neighbor_allgatherv_c(two, 2, MPI_INT, rb, c2, d2, MPI_INT, ring));
        else {
            MUST(f ? MPI_Neighbor_allgatherv_init_c(two, 2, MPI_INT, rb, c2, d2, MPI_INT, ring,
                                                    MPI_INFO_NULL, &r)
                   : MPI_Ineighbor_allgatherv_c(two, 2, MPI_INT, rb, c2, d2, MPI_INT, ring, &r));
            complete(f);
        }
        CHECK(rb[2] == left && rb[3] == left && rb[0] == right && rb[1] == right,
              "neighbor_allgatherv form %d", f);

        /* alltoallv and alltoallw: one value each way at swapped displacements. */
        sb[1] = 100 * rank;
        sb[0] = 100 * rank + 1;
        for (int v = 0; v < 2; v++) {
            fill(rb, 8, -1);
            if (v == 0 && f == 2)
                MUST(MPI_Neighbor_alltoallv_c(sb, c1, d1, MPI_INT, rb, c1, d1, MPI_INT, ring));
            else if (v == 0)
                MUST(f ? MPI_Neighbor_alltoallv_init_c(sb, c1, d1, MPI_INT, rb, c1, d1, MPI_INT,
                                                       ring, MPI_INFO_NULL, &r)
                       : MPI_Ineighbor_alltoallv_c(sb, c1, d1, MPI_INT, rb, c1, d1, MPI_INT, ring,
                                                   &r));
            else if (f == 2)
                MUST(MPI_Neighbor_alltoallw_c(sb, c1, w, t, rb, c1, w, t, ring));
            else
                MUST(f ? MPI_Neighbor_alltoallw_init_c(sb, c1, w, t, rb, c1, w, t, ring,
                                                       MPI_INFO_NULL, &r)
                       : MPI_Ineighbor_alltoallw_c(sb, c1, w, t, rb, c1, w, t, ring, &r));
            if (f < 2) complete(f);
            CHECK(rb[1] / 100 == left && rb[0] / 100 == right,
                  "neighbor_alltoall%c form %d: %d %d", v ? 'w' : 'v', f, rb[0], rb[1]);
        }
    }
    MUST(MPI_Comm_free(&ring));
}

static int class_of(int rc) {
    int cls;
    MUST(MPI_Error_class(rc, &cls));
    return cls;
}

static void bad_inputs(void) {
    int buf[4];
    MPI_Count neg[N], huge[N];
    MPI_Aint zero[N];
    for (int i = 0; i < N; i++) {
        neg[i] = -1;
        huge[i] = INT64_MAX / 2;
        zero[i] = 0;
    }
    MUST(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    int rc = MPI_Ibcast_c(buf, -1, MPI_INT, 0, MPI_COMM_WORLD, &r);
    CHECK(class_of(rc) == MPI_ERR_COUNT, "Ibcast_c count -1: %d", rc);
    rc = MPI_Iallreduce_c(buf, buf + 2, -5, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r);
    CHECK(class_of(rc) == MPI_ERR_COUNT, "Iallreduce_c count -5: %d", rc);
    rc = MPI_Iallgatherv_c(buf, 1, MPI_INT, buf, neg, zero, MPI_INT, MPI_COMM_WORLD, &r);
    CHECK(class_of(rc) == MPI_ERR_COUNT, "Iallgatherv_c negative counts: %d", rc);
    /* Counts whose bytes exceed the address space are refused, not wrapped. */
    rc = MPI_Iallgatherv_c(buf, 1, MPI_INT, buf, huge, zero, MPI_INT, MPI_COMM_WORLD, &r);
    CHECK(class_of(rc) == MPI_ERR_COUNT, "Iallgatherv_c huge counts: %d", rc);
    rc = MPI_Alltoallv_init_c(buf, huge, zero, MPI_INT, buf, huge, zero, MPI_INT,
                              MPI_COMM_WORLD, MPI_INFO_NULL, &r);
    CHECK(class_of(rc) == MPI_ERR_COUNT, "Alltoallv_init_c huge counts: %d", rc);
    rc = MPI_Ireduce_scatter_c(buf, buf, neg, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r);
    CHECK(class_of(rc) == MPI_ERR_COUNT, "Ireduce_scatter_c negative counts: %d", rc);
    rc = MPI_Igather_c(buf, 1, MPI_INT, buf, 1, MPI_INT, 0, MPI_COMM_WORLD, NULL);
    CHECK(class_of(rc) == MPI_ERR_ARG, "Igather_c NULL request: %d", rc);
    rc = MPI_Iscatter_c(buf, 1, MPI_INT, buf, 1, MPI_INT, size, MPI_COMM_WORLD, &r);
    CHECK(class_of(rc) == MPI_ERR_ROOT, "Iscatter_c root %d: %d", size, rc);
    MUST(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
}

int main(int argc, char **argv) {
    MUST(MPI_Init(&argc, &argv));
    MUST(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    MUST(MPI_Comm_size(MPI_COMM_WORLD, &size));
    rooted();
    all();
    neighbours();
    bad_inputs();
    MUST(MPI_Barrier(MPI_COMM_WORLD));
    MUST(MPI_Finalize());
    return 0;
}
