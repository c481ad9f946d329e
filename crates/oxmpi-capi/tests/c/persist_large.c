/* Persistent collectives past the single-copy crossovers, through the C layer's staging:
 * an allreduce of a derived datatype (pairs of doubles), an in-place allreduce on a buffer
 * that is not aligned for its doubles, a broadcast of the derived type and a reduce to the
 * last rank, each restarted with new contents before every start. */
#include <string.h>
#include "check.h"

#define N 40000 /* doubles: 320 KB, past every crossover */

int main(int argc, char **argv) {
    int rank, size;
    MUST(MPI_Init(&argc, &argv));
    MUST(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    MUST(MPI_Comm_size(MPI_COMM_WORLD, &size));
    MPI_Datatype pair;
    MUST(MPI_Type_contiguous(2, MPI_DOUBLE, &pair));
    MUST(MPI_Type_commit(&pair));
    static double s[N], d[N], red[N];
    static char raw[N * sizeof(double) + 8];
    char *odd = raw + 4; /* doubles at an address that is not 8-aligned */
    MPI_Request q[4];
    MUST(MPI_Allreduce_init(s, d, N / 2, pair, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &q[0]));
    MUST(MPI_Allreduce_init(MPI_IN_PLACE, odd, N, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD,
                            MPI_INFO_NULL, &q[1]));
    MUST(MPI_Bcast_init(d, N / 2, pair, size - 1, MPI_COMM_WORLD, MPI_INFO_NULL, &q[2]));
    MUST(MPI_Reduce_init(s, red, N, MPI_DOUBLE, MPI_MAX, size - 1, MPI_COMM_WORLD,
                         MPI_INFO_NULL, &q[3]));
    for (int k = 0; k < 4; k++) {
        for (int i = 0; i < N; i++) {
            double v = rank * 2 + i - k;
            s[i] = rank + i + k;
            memcpy(odd + i * sizeof(double), &v, sizeof v);
        }
        MUST(MPI_Start(&q[0]));
        MUST(MPI_Wait(&q[0], MPI_STATUS_IGNORE));
        MUST(MPI_Start(&q[1]));
        MUST(MPI_Wait(&q[1], MPI_STATUS_IGNORE));
        MUST(MPI_Start(&q[3]));
        MUST(MPI_Wait(&q[3], MPI_STATUS_IGNORE));
        for (int i = 0; i < N; i++) {
            double v;
            memcpy(&v, odd + i * sizeof(double), sizeof v);
            CHECK(d[i] == size * (size - 1) / 2.0 + size * (double)(i + k),
                  "run %d: allreduce of pairs, element %d = %g", k, i, d[i]);
            CHECK(v == size * (size - 1) + size * (double)(i - k),
                  "run %d: misaligned in-place allreduce, element %d = %g", k, i, v);
            CHECK(rank != size - 1 || red[i] == size - 1 + i + k,
                  "run %d: reduce max, element %d = %g", k, i, red[i]);
        }
        if (rank == size - 1)
            for (int i = 0; i < N; i++) d[i] = i * 3 + k;
        MUST(MPI_Start(&q[2]));
        MUST(MPI_Wait(&q[2], MPI_STATUS_IGNORE));
        for (int i = 0; i < N; i++)
            CHECK(d[i] == i * 3 + k, "run %d: broadcast of pairs, element %d = %g", k, i, d[i]);
    }
    for (int i = 0; i < 4; i++) MUST(MPI_Request_free(&q[i]));
    MUST(MPI_Type_free(&pair));
    MUST(MPI_Finalize());
    return 0;
}
