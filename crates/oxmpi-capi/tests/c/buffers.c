/* Buffered-send buffers: the process's, automatic buffering (MPI_BUFFER_AUTOMATIC), a
 * communicator's own (MPI-4.1), flushing them blocking and nonblocking, and the errors.
 * Messages go one hop round the ring; the large ones exceed the eager size, so their copies
 * stay in flight until the receiver takes them. */
#include <stdint.h>
#include <string.h>
#include "check.h"

#define BIG (64 * 1024) /* doubles: 512 KiB, sent by rendezvous */
#define SMALL 100

static double out[BIG], in[BIG];

static void fill(double *b, int n, int who, int salt)
{
    for (int i = 0; i < n; i++) b[i] = who * 1.0e7 + salt * 1.0e5 + i;
}

static void verify(const double *b, int n, int who, int salt, int line)
{
    for (int i = 0; i < n; i++)
        CHECK(b[i] == who * 1.0e7 + salt * 1.0e5 + i, "line %d: element %d of %d (salt %d)",
              line, i, n, salt);
}

/* One hop round the ring on `comm`: the receive is posted first, then `n` doubles are
 * buffered-sent and `flush` (0 none, 1 blocking, 2 nonblocking) runs before the receive is
 * waited for; the received data is checked. */
static void hop(MPI_Comm comm, int n, int salt, int flush, int comm_scope)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    MPI_Request r;
    memset(in, 0, sizeof in);
    MUST(MPI_Irecv(in, n, MPI_DOUBLE, prev, salt, comm, &r));
    fill(out, n, rank, salt);
    MUST(MPI_Bsend(out, n, MPI_DOUBLE, next, salt, comm));
    /* The copy was taken: the user buffer may change at once. */
    memset(out, 0xff, (size_t)n * sizeof(double));
    if (flush == 1) {
        if (comm_scope)
            MUST(MPI_Comm_flush_buffer(comm));
        else
            MUST(MPI_Buffer_flush());
    } else if (flush == 2) {
        MPI_Request f;
        if (comm_scope)
            MUST(MPI_Comm_iflush_buffer(comm, &f));
        else
            MUST(MPI_Buffer_iflush(&f));
        CHECK(f != MPI_REQUEST_NULL, "iflush gives a request");
        MUST(MPI_Wait(&f, MPI_STATUS_IGNORE));
        CHECK(f == MPI_REQUEST_NULL, "wait frees the flush request");
    }
    MPI_Status st;
    MUST(MPI_Wait(&r, &st));
    int count;
    MUST(MPI_Get_count(&st, MPI_DOUBLE, &count));
    CHECK(count == n && st.MPI_SOURCE == prev, "count %d source %d", count, st.MPI_SOURCE);
    verify(in, n, prev, salt, __LINE__);
}

int main(int argc, char **argv)
{
    MUST(MPI_Init(&argc, &argv));
    MUST(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    void *back;
    int back_size;
    MPI_Count back_count;

    /* The process's buffer, flushed blocking and nonblocking, with copies in flight. */
    size_t cap = 2 * (BIG * sizeof(double) + MPI_BSEND_OVERHEAD);
    char *pbuf = malloc(cap);
    CHECK(pbuf != NULL, "malloc");
    MUST(MPI_Buffer_attach(pbuf, (int)cap));
    CHECK(MPI_Buffer_attach(pbuf, (int)cap) == MPI_ERR_BUFFER, "a second attach is refused");
    for (int flush = 0; flush < 3; flush++) {
        hop(MPI_COMM_WORLD, BIG, 1 + flush, flush, 0);
        hop(MPI_COMM_WORLD, SMALL, 4 + flush, flush, 0);
    }
    /* Nothing in flight: a flush returns at once, an iflush completes. */
    MUST(MPI_Buffer_flush());
    MUST(MPI_Comm_flush_buffer(MPI_COMM_WORLD)); /* no buffer of its own: nothing to do */
    MUST(MPI_Buffer_detach(&back, &back_size));
    CHECK(back == pbuf && back_size == (int)cap, "detach gives the buffer back");
    CHECK(MPI_Buffer_detach(&back, &back_size) == MPI_ERR_BUFFER, "nothing left to detach");

    /* Automatic buffering: more messages in flight than any fixed buffer was given for. */
    MUST(MPI_Buffer_attach(MPI_BUFFER_AUTOMATIC, 0));
    for (int k = 0; k < 4; k++) hop(MPI_COMM_WORLD, BIG, 10 + k, k % 3, 0);
    MUST(MPI_Buffer_detach_c(&back, &back_count));
    CHECK(back == MPI_BUFFER_AUTOMATIC && back_count == 0, "detach gives MPI_BUFFER_AUTOMATIC");

    /* A communicator's buffer is used for its sends; the others use the process's. */
    MPI_Comm c2;
    MUST(MPI_Comm_dup(MPI_COMM_WORLD, &c2));
    MUST(MPI_Comm_set_errhandler(c2, MPI_ERRORS_RETURN));
    static char tiny[MPI_BSEND_OVERHEAD + 8];
    MUST(MPI_Buffer_attach(tiny, (int)sizeof tiny));
    char *cbuf = malloc(cap);
    CHECK(cbuf != NULL, "malloc");
    MUST(MPI_Comm_attach_buffer(c2, cbuf, (int)cap));
    CHECK(MPI_Comm_attach_buffer(c2, cbuf, (int)cap) == MPI_ERR_BUFFER,
          "a second attach to one communicator is refused");
    for (int flush = 0; flush < 3; flush++) hop(c2, BIG, 20 + flush, flush, 1);
    {
        int rank, size;
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        MPI_Comm_size(MPI_COMM_WORLD, &size);
        CHECK(MPI_Bsend(out, BIG, MPI_DOUBLE, (rank + 1) % size, 30, MPI_COMM_WORLD) ==
                  MPI_ERR_BUFFER,
              "the world's buffered send uses the tiny process buffer, not c2's");
    }
    MUST(MPI_Comm_detach_buffer(c2, &back, &back_size));
    CHECK(back == cbuf && back_size == (int)cap, "comm detach gives the buffer back");
    CHECK(MPI_Comm_detach_buffer(c2, &back, &back_size) == MPI_ERR_BUFFER,
          "nothing left to detach from c2");
    /* Automatic on a communicator. */
    MUST(MPI_Comm_attach_buffer_c(c2, MPI_BUFFER_AUTOMATIC, 0));
    hop(c2, BIG, 31, 2, 1);
    MUST(MPI_Comm_detach_buffer_c(c2, &back, &back_count));
    CHECK(back == MPI_BUFFER_AUTOMATIC && back_count == 0, "comm detach of automatic");

    /* A communicator freed with its copies still in flight: they arrive, and the next
     * communicator (which may reuse its context) does not inherit its buffer. */
    MUST(MPI_Comm_attach_buffer(c2, cbuf, (int)cap));
    {
        int rank, size;
        MPI_Comm_rank(c2, &rank);
        MPI_Comm_size(c2, &size);
        int next = (rank + 1) % size, prev = (rank + size - 1) % size;
        MPI_Request r;
        memset(in, 0, sizeof in);
        MUST(MPI_Irecv(in, BIG, MPI_DOUBLE, prev, 40, c2, &r));
        fill(out, BIG, rank, 40);
        MUST(MPI_Bsend(out, BIG, MPI_DOUBLE, next, 40, c2));
        MUST(MPI_Comm_free(&c2));
        MUST(MPI_Wait(&r, MPI_STATUS_IGNORE));
        verify(in, BIG, prev, 40, __LINE__);
        MPI_Comm c3;
        MUST(MPI_Comm_dup(MPI_COMM_WORLD, &c3));
        MUST(MPI_Comm_set_errhandler(c3, MPI_ERRORS_RETURN));
        CHECK(MPI_Bsend(out, BIG, MPI_DOUBLE, next, 41, c3) == MPI_ERR_BUFFER,
              "a new communicator has no buffer of its own");
        MUST(MPI_Comm_free(&c3));
    }
    MUST(MPI_Barrier(MPI_COMM_WORLD));
    MUST(MPI_Buffer_detach(&back, &back_size));
    CHECK(back == tiny, "the tiny buffer comes back");

    /* Bad arguments. */
    CHECK(MPI_Comm_attach_buffer(MPI_COMM_NULL, cbuf, 8) == MPI_ERR_COMM, "null communicator");
    CHECK(MPI_Comm_flush_buffer(MPI_COMM_NULL) == MPI_ERR_COMM, "flush of a null communicator");
    CHECK(MPI_Buffer_attach(cbuf, -1) != MPI_SUCCESS, "negative size");
    CHECK(MPI_Buffer_attach(NULL, 8) == MPI_ERR_BUFFER, "NULL buffer with a size");
    CHECK(MPI_Buffer_iflush(NULL) == MPI_ERR_ARG, "iflush without a request pointer");

    MUST(MPI_Barrier(MPI_COMM_WORLD));
    free(pbuf);
    free(cbuf);
    MUST(MPI_Finalize());
    return 0;
}
