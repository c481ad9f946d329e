/* Collectives over predefined datatypes: every blocking collective, MPI_IN_PLACE forms,
 * MINLOC/MAXLOC pairs, user operations (one calling MPI itself), reduce_local. */
#include <stdint.h>
#include "check.h"

/* Element-wise a*b over ints (commutative) that also checks the datatype it is given. */
static void times(void *in, void *inout, int *len, MPI_Datatype *dt) {
    if (*dt != MPI_INT) exit(3);
    for (int i = 0; i < *len; i++) ((int *)inout)[i] *= ((int *)in)[i];
}

/* MPI_Op_create_c's large-count function: a op b = a (the earlier operand), associative
 * but not commutative, so the operand order shows; `seen` is the largest length it was
 * called with. */
static MPI_Count seen;
static void affine_c(void *in, void *inout, MPI_Count *len, MPI_Datatype *dt) {
    if (*dt != MPI_INT64_T) exit(4);
    if (*len > seen) seen = *len;
    for (MPI_Count i = 0; i < *len; i++)
        ((int64_t *)inout)[i] = ((int64_t *)in)[i];
}

/* A sum that calls MPI itself (MPI_Iprobe and MPI_Type_size), which user functions may:
 * every call must succeed, so the library must not run it inside its progress engine. */
static int probe_failures;
static void probing_sum(void *in, void *inout, int *len, MPI_Datatype *dt) {
    int flag, size;
    if (MPI_Iprobe(MPI_ANY_SOURCE, 12345, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE) !=
            MPI_SUCCESS ||
        MPI_Type_size(*dt, &size) != MPI_SUCCESS || size != (int)sizeof(int))
        probe_failures++;
    for (int i = 0; i < *len; i++) ((int *)inout)[i] += ((int *)in)[i];
}

/* probing_sum in a blocking, a nonblocking and a persistent allreduce and a reduce, over a
 * few ints and past the shared-memory slots and single-copy crossovers. */
static void user_op_calling_mpi(int rank, int size) {
    static int x[40000], y[40000];
    const int ns[3] = {1, 300, 40000};
    MPI_Op op;
    MPI_Request q;
    MUST(MPI_Op_create(probing_sum, 1, &op));
    for (int t = 0; t < 3; t++) {
        int n = ns[t];
        for (int form = 0; form < 4; form++) {
            for (int i = 0; i < n; i++) { x[i] = rank + i; y[i] = -1; }
            if (form == 0) MUST(MPI_Allreduce(x, y, n, MPI_INT, op, MPI_COMM_WORLD));
            if (form == 1) {
                MUST(MPI_Iallreduce(x, y, n, MPI_INT, op, MPI_COMM_WORLD, &q));
                MUST(MPI_Wait(&q, MPI_STATUS_IGNORE));
            }
            if (form == 2) {
                MUST(MPI_Allreduce_init(x, y, n, MPI_INT, op, MPI_COMM_WORLD, MPI_INFO_NULL, &q));
                for (int k = 0; k < 2; k++) {
                    MUST(MPI_Start(&q));
                    MUST(MPI_Wait(&q, MPI_STATUS_IGNORE));
                }
                MUST(MPI_Request_free(&q));
            }
            if (form == 3) {
                MUST(MPI_Reduce_init(x, y, n, MPI_INT, op, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &q));
                MUST(MPI_Start(&q));
                MUST(MPI_Wait(&q, MPI_STATUS_IGNORE));
                MUST(MPI_Request_free(&q));
            }
            for (int i = 0; i < n && (form != 3 || rank == 0); i++)
                CHECK(y[i] == size * (size - 1) / 2 + size * i,
                      "user op calling MPI, n %d form %d: y[%d] = %d", n, form, i, y[i]);
        }
    }
    CHECK(probe_failures == 0, "%d MPI calls inside the user function failed", probe_failures);
    MUST(MPI_Op_free(&op));
}

int main(int argc, char **argv) {
    int rank, size;
    MUST(MPI_Init(&argc, &argv));
    MUST(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    MUST(MPI_Comm_size(MPI_COMM_WORLD, &size));
    int all[16], counts[16], displs[16];
    double d = rank + 0.5, dsum = 0;

    MUST(MPI_Barrier(MPI_COMM_WORLD));
    int b = rank == size - 1 ? 99 : -1;
    MUST(MPI_Bcast(&b, 1, MPI_INT, size - 1, MPI_COMM_WORLD));
    CHECK(b == 99, "bcast %d", b);

    MUST(MPI_Gather(&rank, 1, MPI_INT, all, 1, MPI_INT, 0, MPI_COMM_WORLD));
    if (rank == 0) for (int i = 0; i < size; i++) CHECK(all[i] == i, "gather %d", i);
    if (rank == 0) {
        all[0] = 0;
        MUST(MPI_Gather(MPI_IN_PLACE, 1, MPI_INT, all, 1, MPI_INT, 0, MPI_COMM_WORLD));
        for (int i = 0; i < size; i++) CHECK(all[i] == i, "gather in place %d", i);
    } else {
        MUST(MPI_Gather(&rank, 1, MPI_INT, NULL, 0, MPI_INT, 0, MPI_COMM_WORLD));
    }

    /* Gatherv: rank i sends i+1 copies of i. */
    int mine[16];
    for (int i = 0; i <= rank; i++) mine[i] = rank;
    int off = 0;
    for (int i = 0; i < size; i++) { counts[i] = i + 1; displs[i] = off; off += i + 1; }
    int vall[64];
    MUST(MPI_Gatherv(mine, rank + 1, MPI_INT, vall, counts, displs, MPI_INT, 0, MPI_COMM_WORLD));
    if (rank == 0)
        for (int i = 0; i < size; i++)
            for (int k = 0; k <= i; k++) CHECK(vall[displs[i] + k] == i, "gatherv %d/%d", i, k);
    MUST(MPI_Allgatherv(mine, rank + 1, MPI_INT, vall, counts, displs, MPI_INT, MPI_COMM_WORLD));
    for (int i = 0; i < size; i++) CHECK(vall[displs[i]] == i, "allgatherv %d", i);

    int piece = -1;
    for (int i = 0; i < size; i++) all[i] = 10 * i;
    MUST(MPI_Scatter(all, 1, MPI_INT, &piece, 1, MPI_INT, 0, MPI_COMM_WORLD));
    CHECK(piece == 10 * rank, "scatter %d", piece);
    int vpiece[16];
    MUST(MPI_Scatterv(vall, counts, displs, MPI_INT, vpiece, rank + 1, MPI_INT, 0, MPI_COMM_WORLD));
    CHECK(vpiece[rank] == rank, "scatterv %d", vpiece[rank]);

    MUST(MPI_Allgather(&rank, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD));
    for (int i = 0; i < size; i++) CHECK(all[i] == i, "allgather %d", i);
    all[rank] = rank;
    MUST(MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, all, 1, MPI_INT, MPI_COMM_WORLD));

    int sendv[16], recvv[16];
    for (int i = 0; i < size; i++) sendv[i] = rank * 100 + i;
    MUST(MPI_Alltoall(sendv, 1, MPI_INT, recvv, 1, MPI_INT, MPI_COMM_WORLD));
    for (int i = 0; i < size; i++) CHECK(recvv[i] == i * 100 + rank, "alltoall %d", i);
    for (int i = 0; i < size; i++) { counts[i] = 1; displs[i] = i; }
    MUST(MPI_Alltoallv(sendv, counts, displs, MPI_INT, recvv, counts, displs, MPI_INT, MPI_COMM_WORLD));
    for (int i = 0; i < size; i++) CHECK(recvv[i] == i * 100 + rank, "alltoallv %d", i);

    int s = 0;
    MUST(MPI_Reduce(&rank, &s, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD));
    if (rank == 0) CHECK(s == size * (size - 1) / 2, "reduce %d", s);
    MUST(MPI_Allreduce(&d, &dsum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
    CHECK(dsum == size * (size - 1) / 2.0 + 0.5 * size, "allreduce double %g", dsum);
    long mx = rank;
    MUST(MPI_Allreduce(MPI_IN_PLACE, &mx, 1, MPI_LONG, MPI_MAX, MPI_COMM_WORLD));
    CHECK(mx == size - 1, "allreduce in place max %ld", mx);
    unsigned char bits = (unsigned char)(1u << rank);
    MUST(MPI_Allreduce(MPI_IN_PLACE, &bits, 1, MPI_BYTE, MPI_BOR, MPI_COMM_WORLD));
    CHECK(bits == (1u << size) - 1, "bor %u", bits);

    struct { double v; int i; } loc = {(double)(rank % 2), rank}, res;
    MUST(MPI_Allreduce(&loc, &res, 1, MPI_DOUBLE_INT, MPI_MAXLOC, MPI_COMM_WORLD));
    CHECK(res.v == (size > 1 ? 1.0 : 0.0) && res.i == (size > 1 ? 1 : 0), "maxloc %g@%d", res.v, res.i);

    long lsum = 0, lmine = rank;
    MUST(MPI_Allreduce_c(&lmine, &lsum, (MPI_Count)1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD));
    CHECK(lsum == (long)size * (size - 1) / 2, "allreduce_c %ld", lsum);
    MUST(MPI_Reduce_c(&lmine, &lsum, 1, MPI_LONG, MPI_MAX, 0, MPI_COMM_WORLD));
    if (rank == 0) CHECK(lsum == size - 1, "reduce_c %ld", lsum);
    b = rank == 0 ? 5 : 0;
    MUST(MPI_Bcast_c(&b, 1, MPI_INT, 0, MPI_COMM_WORLD));
    CHECK(b == 5, "bcast_c %d", b);

    int sc = 0;
    MUST(MPI_Scan(&rank, &sc, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    CHECK(sc == rank * (rank + 1) / 2, "scan %d", sc);
    int ex = -7;
    MUST(MPI_Exscan(&rank, &ex, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    if (rank > 0) CHECK(ex == rank * (rank - 1) / 2, "exscan %d", ex);

    for (int i = 0; i < size; i++) { sendv[i] = i; counts[i] = 1; }
    MUST(MPI_Reduce_scatter(sendv, &piece, counts, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    CHECK(piece == rank * size, "reduce_scatter %d", piece);
    MUST(MPI_Reduce_scatter_block(sendv, &piece, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    CHECK(piece == rank * size, "reduce_scatter_block %d", piece);

    MPI_Op op;
    int commute = 0;
    MUST(MPI_Op_create(times, 1, &op));
    MUST(MPI_Op_commutative(op, &commute));
    CHECK(commute == 1, "commutative");
    int two = 2, prod = 0;
    MUST(MPI_Allreduce(&two, &prod, 1, MPI_INT, op, MPI_COMM_WORLD));
    CHECK(prod == 1 << size, "user op product %d", prod);
    int a[3] = {1, 2, 3}, c[3] = {4, 5, 6};
    MUST(MPI_Reduce_local(a, c, 3, MPI_INT, op));
    CHECK(c[0] == 4 && c[1] == 10 && c[2] == 18, "reduce_local user");
    MUST(MPI_Reduce_local(a, c, 3, MPI_INT, MPI_SUM));
    CHECK(c[2] == 21, "reduce_local sum");
    MUST(MPI_Op_free(&op));
    CHECK(op == MPI_OP_NULL, "op freed");

    /* The large-count user function: reduce_local with the operands in order, then an
     * allreduce checked against the serial fold over ranks 0, 1, ... */
    MUST(MPI_Op_create_c(affine_c, 0, &op));
    MUST(MPI_Op_commutative(op, &commute));
    CHECK(commute == 0, "not commutative");
    int64_t in5[5], io5[5];
    for (int i = 0; i < 5; i++) { in5[i] = i; io5[i] = 100 + i; }
    MUST(MPI_Reduce_local_c(in5, io5, 5, MPI_INT64_T, op));
    for (int i = 0; i < 5; i++) CHECK(io5[i] == i, "reduce_local_c element %d", i);
    CHECK(seen == 5, "called with length %lld", (long long)seen);
    int64_t mine64[3], all64[3];
    for (int i = 0; i < 3; i++) mine64[i] = (rank + 1) * 10 + i;
    MUST(MPI_Allreduce_c(mine64, all64, 3, MPI_INT64_T, op, MPI_COMM_WORLD));
    /* In rank order, x_0 op x_1 op ... is rank 0's contribution. */
    for (int i = 0; i < 3; i++)
        CHECK(all64[i] == 10 + i, "allreduce_c element %d: %lld", i, (long long)all64[i]);
    MUST(MPI_Op_free(&op));
    user_op_calling_mpi(rank, size);
    MUST(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    CHECK(MPI_Op_create_c(NULL, 1, &op) == MPI_ERR_ARG, "a NULL function is refused");

    MUST(MPI_Finalize());
    return 0;
}
