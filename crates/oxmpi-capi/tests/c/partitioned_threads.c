/* Partitioned communication as it is meant to be used: at MPI_THREAD_MULTIPLE, the main
 * thread starts and waits, one thread per partition writes it and marks it ready, and one
 * thread per partition waits for it to arrive (MPI_Parrived) and reads it. */
#include <pthread.h>
#include <stdint.h>
#include "check.h"

#define NT 4
#define PER 1000

static double out[NT * PER], in[NT * PER];
static MPI_Request sreq, rreq;
static int rank, size, prev, round_;

static double value(int from, int round, int i) { return from * 1e7 + round * 1e5 + i; }

static void *filler(void *arg)
{
    int p = (int)(intptr_t)arg;
    for (int i = 0; i < PER; i++) out[p * PER + i] = value(rank, round_, p * PER + i);
    return (void *)(intptr_t)MPI_Pready(p, sreq);
}

static void *reader(void *arg)
{
    int p = (int)(intptr_t)arg, flag = 0;
    do {
        int rc = MPI_Parrived(rreq, p, &flag);
        if (rc != MPI_SUCCESS) return (void *)(intptr_t)rc;
    } while (!flag);
    for (int i = 0; i < PER; i++)
        if (in[p * PER + i] != value(prev, round_, p * PER + i)) return (void *)(intptr_t)-1;
    return NULL;
}

int main(int argc, char **argv)
{
    int provided;
    MUST(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided));
    CHECK(provided == MPI_THREAD_MULTIPLE, "thread level %d", provided);
    MUST(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    MUST(MPI_Comm_size(MPI_COMM_WORLD, &size));
    int next = (rank + 1) % size;
    prev = (rank + size - 1) % size;
    MUST(MPI_Psend_init(out, NT, PER, MPI_DOUBLE, next, 3, MPI_COMM_WORLD, MPI_INFO_NULL, &sreq));
    MUST(MPI_Precv_init(in, NT, PER, MPI_DOUBLE, prev, 3, MPI_COMM_WORLD, MPI_INFO_NULL, &rreq));
    for (round_ = 0; round_ < 3; round_++) {
        for (int i = 0; i < NT * PER; i++) in[i] = -1;
        MUST(MPI_Start(&rreq));
        MUST(MPI_Barrier(MPI_COMM_WORLD));
        MUST(MPI_Start(&sreq));
        pthread_t f[NT], r[NT];
        for (int p = 0; p < NT; p++) {
            CHECK(pthread_create(&r[p], NULL, reader, (void *)(intptr_t)p) == 0, "reader");
            CHECK(pthread_create(&f[p], NULL, filler, (void *)(intptr_t)p) == 0, "filler");
        }
        for (int p = 0; p < NT; p++) {
            void *rc;
            CHECK(pthread_join(f[p], &rc) == 0 && rc == NULL, "filler %d: %d", p, (int)(intptr_t)rc);
            CHECK(pthread_join(r[p], &rc) == 0 && rc == NULL, "reader %d: %d", p, (int)(intptr_t)rc);
        }
        MUST(MPI_Wait(&sreq, MPI_STATUS_IGNORE));
        MUST(MPI_Wait(&rreq, MPI_STATUS_IGNORE));
    }
    MUST(MPI_Request_free(&sreq));
    MUST(MPI_Request_free(&rreq));
    MUST(MPI_Finalize());
    return 0;
}
