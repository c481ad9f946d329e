/* Profiling interface: this program defines MPI_Send and MPI_Allreduce itself, counts the
 * calls and forwards them to PMPI_; the library's own symbols must give way. */
#include "check.h"

static int sends = 0, allreduces = 0;

int MPI_Send(const void *buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm) {
    sends++;
    return PMPI_Send(buf, count, dt, dest, tag, comm);
}

int MPI_Allreduce(const void *s, void *r, int n, MPI_Datatype dt, MPI_Op op, MPI_Comm comm) {
    allreduces++;
    return PMPI_Allreduce(s, r, n, dt, op, comm);
}

int main(int argc, char **argv) {
    int rank, size, x = 0, sum = 0;
    MUST(MPI_Init(&argc, &argv));
    MUST(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    MUST(MPI_Comm_size(MPI_COMM_WORLD, &size));
    for (int i = 0; i < 5; i++) {
        MUST(MPI_Send(&rank, 1, MPI_INT, (rank + 1) % size, i, MPI_COMM_WORLD));
        MUST(MPI_Recv(&x, 1, MPI_INT, (rank + size - 1) % size, i, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    }
    MUST(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    CHECK(sends == 5 && allreduces == 1, "intercepted %d sends, %d allreduces", sends, allreduces);
    CHECK(sum == size * (size - 1) / 2, "sum %d", sum);
    MUST(MPI_Finalize());
    return 0;
}
