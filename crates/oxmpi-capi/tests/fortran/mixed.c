/* The C side of a mixed job (tests/fortran/mixed.f90 is the Fortran side): every rank sends
 * its rank and language to every other, gathers all of them, then an allreduce over
 * MPI_INTEGER / MPI_DOUBLE_PRECISION buffers as both languages see them. */
#include <mpi.h>
#include <stdio.h>

#define CHECK(c)                                                                               \
    do {                                                                                       \
        if (!(c)) {                                                                            \
            fprintf(stderr, "FAILED at line %d: %s\n", __LINE__, #c);                          \
            MPI_Abort(MPI_COMM_WORLD, 1);                                                      \
        }                                                                                      \
    } while (0)

int main(void) {
    MPI_Init(NULL, NULL);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    /* Language codes: C = 1, Fortran = 2; the Fortran ranks come after the C ranks. */
    int mine[2] = {rank, 1}, all[2 * 64];
    CHECK(size <= 64);
    MPI_Allgather(mine, 2, MPI_INT, all, 2, MPI_INTEGER, MPI_COMM_WORLD);
    int nc = 0;
    for (int i = 0; i < size; i++) {
        CHECK(all[2 * i] == i);
        nc += all[2 * i + 1] == 1;
    }
    CHECK(nc >= 1 && nc < size);
    /* Point to point with the first Fortran rank. */
    if (rank == 0) {
        double d[3] = {1.5, 2.5, 3.5};
        MPI_Send(d, 3, MPI_DOUBLE_PRECISION, nc, 5, MPI_COMM_WORLD);
        int back[3];
        MPI_Status st;
        MPI_Recv(back, 3, MPI_INT, nc, 6, MPI_COMM_WORLD, &st);
        CHECK(st.MPI_SOURCE == nc && back[0] == 15 && back[1] == 25 && back[2] == 35);
    }
    double x = rank, sum = 0;
    MPI_Allreduce(&x, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    CHECK(sum == size * (size - 1) / 2.0);
    MPI_Finalize();
    return 0;
}
