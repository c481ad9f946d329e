/* MPI_THREAD_MULTIPLE: several threads per rank exchange messages on their own duplicate
 * communicator at once, with immediate operations waited for on the same thread. */
#include <pthread.h>
#include "check.h"

#define THREADS 3
#define ROUNDS 200

static int rank, size;
static MPI_Comm comms[THREADS];

static void *worker(void *arg) {
    int t = (int)(long)arg, next = (rank + 1) % size, prev = (rank + size - 1) % size;
    for (int i = 0; i < ROUNDS; i++) {
        int out = rank * 1000000 + t * 1000 + i, in = -1;
        MPI_Request r;
        MUST(MPI_Irecv(&in, 1, MPI_INT, prev, i, comms[t], &r));
        MUST(MPI_Send(&out, 1, MPI_INT, next, i, comms[t]));
        MUST(MPI_Wait(&r, MPI_STATUS_IGNORE));
        CHECK(in == prev * 1000000 + t * 1000 + i, "thread %d round %d got %d", t, i, in);
    }
    return NULL;
}

int main(int argc, char **argv) {
    int provided;
    MUST(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided));
    CHECK(provided == MPI_THREAD_MULTIPLE, "provided %d", provided);
    MUST(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    MUST(MPI_Comm_size(MPI_COMM_WORLD, &size));
    for (int t = 0; t < THREADS; t++) MUST(MPI_Comm_dup(MPI_COMM_WORLD, &comms[t]));
    pthread_t th[THREADS];
    for (long t = 0; t < THREADS; t++) CHECK(pthread_create(&th[t], NULL, worker, (void *)t) == 0, "spawn");
    for (int t = 0; t < THREADS; t++) pthread_join(th[t], NULL);
    int flag;
    MUST(MPI_Is_thread_main(&flag));
    CHECK(flag == 1, "the main thread");
    for (int t = 0; t < THREADS; t++) MUST(MPI_Comm_free(&comms[t]));
    MUST(MPI_Finalize());
    return 0;
}
