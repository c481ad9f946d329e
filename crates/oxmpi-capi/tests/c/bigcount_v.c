/* The blocking large-count v-collectives take their MPI_Count counts and MPI_Aint
   displacements whole: counts beyond INT_MAX (of a zero-size datatype, so no memory is
   needed) and displacements beyond INT_MAX (absolute addresses from MPI_BOTTOM) reach the
   core instead of being narrowed to int (which returned MPI_ERR_COUNT). */
#include <limits.h>
#include <stdint.h>
#include <string.h>

#include "check.h"

#define MAXP 4

int main(int argc, char **argv) {
    int rank, size, i;
    const MPI_Count big = (MPI_Count)INT_MAX + 7;
    MPI_Count counts[MAXP], ones[MAXP];
    MPI_Aint displs[MAXP], sat[MAXP], rat[MAXP];
    MPI_Datatype empty, int1;
    /* On the stack: its addresses lie far above INT_MAX on every 64-bit Linux. */
    int send[MAXP], recv[MAXP], junk = 42;

    MUST(MPI_Init(&argc, &argv));
    MUST(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    MUST(MPI_Comm_size(MPI_COMM_WORLD, &size));
    CHECK(size <= MAXP, "at most %d ranks", MAXP);

    /* Counts beyond int of a zero-size type: a no-op transfer every rank agrees on. */
    MUST(MPI_Type_contiguous(0, MPI_INT, &empty));
    MUST(MPI_Type_commit(&empty));
    for (i = 0; i < size; i++) {
        counts[i] = big;
        displs[i] = (MPI_Aint)INT_MAX + i;
    }
    MUST(MPI_Gatherv_c(&junk, big, empty, &junk, counts, displs, empty, 0, MPI_COMM_WORLD));
    MUST(MPI_Scatterv_c(&junk, counts, displs, empty, &junk, big, empty, 0, MPI_COMM_WORLD));
    MUST(MPI_Allgatherv_c(&junk, big, empty, &junk, counts, displs, empty, MPI_COMM_WORLD));
    MUST(MPI_Alltoallv_c(&junk, counts, displs, empty, &junk, counts, displs, empty,
                         MPI_COMM_WORLD));
    CHECK(junk == 42, "a zero-size transfer wrote %d", junk);

    /* Displacements beyond int: absolute byte addresses from MPI_BOTTOM, through an int
       resized to extent 1 so that a displacement counts bytes. */
    MUST(MPI_Type_create_resized(MPI_INT, 0, 1, &int1));
    MUST(MPI_Type_commit(&int1));
    for (i = 0; i < size; i++) {
        MUST(MPI_Get_address(&recv[i], &rat[i]));
        MUST(MPI_Get_address(&send[i], &sat[i]));
        CHECK(rat[i] > INT_MAX && sat[i] > INT_MAX, "address %lld fits an int",
              (long long)rat[i]);
        ones[i] = 1;
    }

    for (i = 0; i < size; i++) send[i] = rank * 100 + i;
    memset(recv, 0, sizeof recv);
    MUST(MPI_Gatherv_c(send, (MPI_Count)1, MPI_INT, MPI_BOTTOM, ones, rat, int1, 0,
                       MPI_COMM_WORLD));
    if (rank == 0)
        for (i = 0; i < size; i++) CHECK(recv[i] == i * 100, "gatherv [%d] = %d", i, recv[i]);

    memset(recv, 0, sizeof recv);
    MUST(MPI_Allgatherv_c(send, (MPI_Count)1, MPI_INT, MPI_BOTTOM, ones, rat, int1,
                          MPI_COMM_WORLD));
    for (i = 0; i < size; i++) CHECK(recv[i] == i * 100, "allgatherv [%d] = %d", i, recv[i]);

    memset(recv, 0, sizeof recv);
    MUST(MPI_Scatterv_c(MPI_BOTTOM, ones, sat, int1, recv, (MPI_Count)1, MPI_INT, 0,
                        MPI_COMM_WORLD));
    CHECK(recv[0] == rank, "scatterv %d", recv[0]);

    memset(recv, 0, sizeof recv);
    MUST(MPI_Alltoallv_c(MPI_BOTTOM, ones, sat, int1, MPI_BOTTOM, ones, rat, int1,
                         MPI_COMM_WORLD));
    for (i = 0; i < size; i++)
        CHECK(recv[i] == i * 100 + rank, "alltoallv [%d] = %d", i, recv[i]);

    /* Reduce_scatter_c reads MPI_Count counts (no count beyond int is feasible here: it
       needs a reducible datatype, which has a size). */
    for (i = 0; i < size; i++) send[i] = i + 1;
    MUST(MPI_Reduce_scatter_c(send, recv, ones, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    CHECK(recv[0] == (rank + 1) * size, "reduce_scatter %d", recv[0]);

    MUST(MPI_Type_free(&int1));
    MUST(MPI_Type_free(&empty));
    MUST(MPI_Finalize());
    return 0;
}
