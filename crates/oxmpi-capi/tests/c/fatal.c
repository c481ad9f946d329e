/* The default handler (or the one named by argv[1]) on a bad call: the job must end with one
 * message naming the rank, the function and the error class. */
#include <string.h>
#include "check.h"

int main(int argc, char **argv) {
    int rank, size, x = 0;
    if (argc > 1 && !strcmp(argv[1], "preinit")) {
        /* Before MPI_Init no handler can be set: the default one ends the process. */
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        fprintf(stderr, "UNREACHED the fatal handler returned\n");
        return 0;
    }
    MUST(MPI_Init(&argc, &argv));
    MUST(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    MUST(MPI_Comm_size(MPI_COMM_WORLD, &size));
    if (argc > 1 && !strcmp(argv[1], "abort-handler"))
        MUST(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ABORT));
    if (argc > 1 && !strcmp(argv[1], "abort")) {
        if (rank == size - 1) MPI_Abort(MPI_COMM_WORLD, 7);
    } else if (rank == size - 1) {
        MPI_Send(&x, 1, MPI_INT, size, 0, MPI_COMM_WORLD);
        fprintf(stderr, "UNREACHED the fatal handler returned\n");
        return 0;
    }
    /* The other ranks wait for a message that never comes; the launcher ends them. */
    MPI_Recv(&x, 1, MPI_INT, MPI_ANY_SOURCE, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    return 0;
}
