/* MPI_THREAD_MULTIPLE: several threads per rank exchange messages on their own duplicate
 * communicator at once, with immediate operations waited for on the same thread; a
 * nonblocking request completes on another thread, a persistent one only on its own. */
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

static MPI_Request handed;
static int handed_rc;
static void *waiter(void *arg) {
    (void)arg;
    handed_rc = MPI_Wait(&handed, MPI_STATUS_IGNORE);
    return NULL;
}
static void *starter(void *arg) {
    (void)arg;
    handed_rc = MPI_Start(&handed);
    return NULL;
}

/* A receive started here is waited for by another thread; a persistent send made here is
 * refused by another thread's MPI_Start (MPI_ERR_REQUEST) and still runs here. */
static void handed_over(void) {
    pthread_t th;
    int in = -1, out = rank + 7, cls;
    MUST(MPI_Irecv(&in, 1, MPI_INT, 0, 5, MPI_COMM_SELF, &handed));
    MUST(MPI_Send(&out, 1, MPI_INT, 0, 5, MPI_COMM_SELF));
    CHECK(pthread_create(&th, NULL, waiter, NULL) == 0, "spawn");
    pthread_join(th, NULL);
    CHECK(handed_rc == MPI_SUCCESS && handed == MPI_REQUEST_NULL && in == out,
          "wait on another thread: rc %d, got %d", handed_rc, in);
    MUST(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    MUST(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN));
    MUST(MPI_Send_init(&out, 1, MPI_INT, 0, 6, MPI_COMM_SELF, &handed));
    CHECK(pthread_create(&th, NULL, starter, NULL) == 0, "spawn");
    pthread_join(th, NULL);
    MPI_Error_class(handed_rc, &cls);
    CHECK(cls == MPI_ERR_REQUEST, "persistent start on another thread: class %d", cls);
    MUST(MPI_Start(&handed));
    MUST(MPI_Recv(&in, 1, MPI_INT, 0, 6, MPI_COMM_SELF, MPI_STATUS_IGNORE));
    MUST(MPI_Wait(&handed, MPI_STATUS_IGNORE));
    MUST(MPI_Request_free(&handed));
    CHECK(in == out, "persistent send on its own thread: got %d", in);
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
    handed_over();
    int flag;
    MUST(MPI_Is_thread_main(&flag));
    CHECK(flag == 1, "the main thread");
    for (int t = 0; t < THREADS; t++) MUST(MPI_Comm_free(&comms[t]));
    MUST(MPI_Finalize());
    return 0;
}
