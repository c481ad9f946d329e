/* The large-count (_c) forms of point-to-point and blocking collectives, which take
 * MPI_Count counts and run the same code as the int forms, the non-destructive
 * MPI_Request_get_status_any/all/some, and their bad-input cases. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"

#define N 8

static void p2p(int rank, int size) {
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    int out[N], in[N], i, k;
    MPI_Request r[2];
    MPI_Status st;
    MPI_Count c;
    char buf[4096];
    void *old;
    int oldsize;
    for (i = 0; i < N; i++) out[i] = rank * 100 + i;

    /* Each send mode, blocking, nonblocking and persistent, around the ring. */
    for (k = 0; k < 9; k++) {
        memset(in, 0, sizeof in);
        MUST(MPI_Irecv_c(in, (MPI_Count)N, MPI_INT, prev, k, MPI_COMM_WORLD, &r[0]));
        if (k == 0) {
            MUST(MPI_Buffer_attach(buf, sizeof buf));
            MUST(MPI_Bsend_c(out, (MPI_Count)N, MPI_INT, next, k, MPI_COMM_WORLD));
            MUST(MPI_Wait(&r[0], &st));
            MUST(MPI_Buffer_detach(&old, &oldsize));
        } else if (k == 1) {
            /* Ready mode: the receive is posted everywhere before anyone sends. */
            MUST(MPI_Barrier(MPI_COMM_WORLD));
            MUST(MPI_Rsend_c(out, (MPI_Count)N, MPI_INT, next, k, MPI_COMM_WORLD));
            MUST(MPI_Wait(&r[0], &st));
        } else if (k == 2) {
            MUST(MPI_Issend_c(out, (MPI_Count)N, MPI_INT, next, k, MPI_COMM_WORLD, &r[1]));
            MUST(MPI_Waitall(2, r, MPI_STATUSES_IGNORE));
        } else if (k == 3) {
            MPI_Count csize = 0;
            MUST(MPI_Buffer_attach_c(buf, (MPI_Count)sizeof buf));
            MUST(MPI_Ibsend_c(out, (MPI_Count)N, MPI_INT, next, k, MPI_COMM_WORLD, &r[1]));
            MUST(MPI_Waitall(2, r, MPI_STATUSES_IGNORE));
            MUST(MPI_Buffer_detach_c(&old, &csize));
            CHECK(old == (void *)buf && csize == (MPI_Count)sizeof buf, "buffer_detach_c %p %lld",
                  old, (long long)csize);
        } else if (k == 4) {
            MUST(MPI_Barrier(MPI_COMM_WORLD));
            MUST(MPI_Irsend_c(out, (MPI_Count)N, MPI_INT, next, k, MPI_COMM_WORLD, &r[1]));
            MUST(MPI_Waitall(2, r, MPI_STATUSES_IGNORE));
        } else {
            int (*init[4])(const void *, MPI_Count, MPI_Datatype, int, int, MPI_Comm,
                           MPI_Request *) = {MPI_Send_init_c, MPI_Ssend_init_c,
                                             MPI_Rsend_init_c, MPI_Bsend_init_c};
            if (k == 8) MUST(MPI_Buffer_attach(buf, sizeof buf));
            if (k == 7) MUST(MPI_Barrier(MPI_COMM_WORLD));
            MUST(init[k - 5](out, (MPI_Count)N, MPI_INT, next, k, MPI_COMM_WORLD, &r[1]));
            MUST(MPI_Start(&r[1]));
            MUST(MPI_Waitall(2, r, MPI_STATUSES_IGNORE));
            MUST(MPI_Request_free(&r[1]));
            if (k == 8) MUST(MPI_Buffer_detach(&old, &oldsize));
        }
        for (i = 0; i < N; i++) CHECK(in[i] == prev * 100 + i, "mode %d: in[%d] = %d", k, i, in[i]);
    }

    /* A persistent receive, and the send-receive forms. */
    memset(in, 0, sizeof in);
    MUST(MPI_Recv_init_c(in, (MPI_Count)N, MPI_INT, prev, 20, MPI_COMM_WORLD, &r[0]));
    MUST(MPI_Start(&r[0]));
    MUST(MPI_Send_c(out, (MPI_Count)N, MPI_INT, next, 20, MPI_COMM_WORLD));
    MUST(MPI_Wait(&r[0], &st));
    MUST(MPI_Get_count_c(&st, MPI_INT, &c));
    CHECK(c == N && in[N - 1] == prev * 100 + N - 1, "persistent receive: %lld", (long long)c);
    MUST(MPI_Request_free(&r[0]));
    memset(in, 0, sizeof in);
    MUST(MPI_Sendrecv_c(out, (MPI_Count)N, MPI_INT, next, 21, in, (MPI_Count)N, MPI_INT, prev,
                        21, MPI_COMM_WORLD, &st));
    CHECK(in[0] == prev * 100 && st.MPI_SOURCE == prev, "sendrecv");
    memcpy(in, out, sizeof in);
    MUST(MPI_Sendrecv_replace_c(in, (MPI_Count)N, MPI_INT, next, 22, prev, 22, MPI_COMM_WORLD, &st));
    CHECK(in[3] == prev * 100 + 3, "sendrecv_replace");
    memset(in, 0, sizeof in);
    MUST(MPI_Isendrecv_c(out, (MPI_Count)N, MPI_INT, next, 23, in, (MPI_Count)N, MPI_INT, prev,
                         23, MPI_COMM_WORLD, &r[0]));
    MUST(MPI_Wait(&r[0], &st));
    CHECK(in[5] == prev * 100 + 5, "isendrecv");
    memcpy(in, out, sizeof in);
    MUST(MPI_Isendrecv_replace_c(in, (MPI_Count)N, MPI_INT, next, 24, prev, 24, MPI_COMM_WORLD,
                                 &r[0]));
    MUST(MPI_Wait(&r[0], &st));
    CHECK(in[7] == prev * 100 + 7, "isendrecv_replace");

    /* Matched receives. */
    {
        MPI_Message m;
        MUST(MPI_Isend_c(out, (MPI_Count)N, MPI_INT, next, 25, MPI_COMM_WORLD, &r[1]));
        MUST(MPI_Mprobe(prev, 25, MPI_COMM_WORLD, &m, &st));
        memset(in, 0, sizeof in);
        MUST(MPI_Mrecv_c(in, (MPI_Count)N, MPI_INT, &m, &st));
        CHECK(m == MPI_MESSAGE_NULL && in[2] == prev * 100 + 2, "mrecv");
        MUST(MPI_Wait(&r[1], MPI_STATUS_IGNORE));
        MUST(MPI_Isend_c(out, (MPI_Count)N, MPI_INT, next, 26, MPI_COMM_WORLD, &r[1]));
        MUST(MPI_Mprobe(prev, 26, MPI_COMM_WORLD, &m, &st));
        memset(in, 0, sizeof in);
        MUST(MPI_Imrecv_c(in, (MPI_Count)N, MPI_INT, &m, &r[0]));
        MUST(MPI_Waitall(2, r, MPI_STATUSES_IGNORE));
        CHECK(in[6] == prev * 100 + 6, "imrecv");
    }

    MUST(MPI_Status_set_elements_c(&st, MPI_INT, (MPI_Count)5));
    MUST(MPI_Get_elements_c(&st, MPI_INT, &c));
    CHECK(c == 5, "set_elements_c: %lld", (long long)c);
}

static void get_status(int rank, int size) {
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    int in = -1, out = rank, flag, index, count, idx[3];
    MPI_Request r[3];
    MPI_Status st, sts[3];

    /* No active request: any/some say MPI_UNDEFINED, all says done. */
    r[0] = r[1] = r[2] = MPI_REQUEST_NULL;
    MUST(MPI_Request_get_status_any(3, r, &index, &flag, &st));
    CHECK(flag && index == MPI_UNDEFINED, "any of nulls: %d %d", flag, index);
    MUST(MPI_Request_get_status_some(3, r, &count, idx, sts));
    CHECK(count == MPI_UNDEFINED, "some of nulls: %d", count);
    MUST(MPI_Request_get_status_all(3, r, &flag, sts));
    CHECK(flag, "all of nulls");

    /* A receive that cannot complete before its send (ordered by a barrier). */
    MUST(MPI_Irecv(&in, 1, MPI_INT, prev, 30, MPI_COMM_WORLD, &r[1]));
    MUST(MPI_Request_get_status_any(3, r, &index, &flag, &st));
    CHECK(!flag, "pending receive reported complete");
    MUST(MPI_Request_get_status_all(3, r, &flag, sts));
    CHECK(!flag, "pending all");
    MUST(MPI_Request_get_status_some(3, r, &count, idx, sts));
    CHECK(count == 0, "pending some: %d", count);
    MUST(MPI_Barrier(MPI_COMM_WORLD));
    MUST(MPI_Send(&out, 1, MPI_INT, next, 30, MPI_COMM_WORLD));
    do {
        MUST(MPI_Request_get_status_any(3, r, &index, &flag, &st));
    } while (!flag);
    CHECK(index == 1 && st.MPI_SOURCE == prev && st.MPI_TAG == 30, "any: %d from %d", index,
          st.MPI_SOURCE);
    CHECK(r[1] != MPI_REQUEST_NULL, "get_status_any does not free");
    MUST(MPI_Request_get_status_some(3, r, &count, idx, sts));
    CHECK(count == 1 && idx[0] == 1 && sts[0].MPI_SOURCE == prev, "some: %d", count);
    MUST(MPI_Request_get_status_all(3, r, &flag, sts));
    CHECK(flag && sts[1].MPI_SOURCE == prev, "all");
    CHECK(r[1] != MPI_REQUEST_NULL, "still not freed");
    MUST(MPI_Wait(&r[1], &st));
    CHECK(in == prev && st.MPI_TAG == 30, "received %d", in);
}

static void collectives(int rank, int size) {
    int send[4 * N], recv[4 * N], i, x;
    for (i = 0; i < 4 * N; i++) send[i] = rank * 1000 + i;

    memset(recv, 0, sizeof recv);
    MUST(MPI_Gather_c(send, (MPI_Count)2, MPI_INT, recv, (MPI_Count)2, MPI_INT, 0, MPI_COMM_WORLD));
    if (rank == 0)
        for (i = 0; i < size; i++)
            CHECK(recv[2 * i] == i * 1000 && recv[2 * i + 1] == i * 1000 + 1, "gather %d", i);
    MUST(MPI_Scatter_c(send, (MPI_Count)2, MPI_INT, recv, (MPI_Count)2, MPI_INT, 0, MPI_COMM_WORLD));
    CHECK(recv[0] == 2 * rank && recv[1] == 2 * rank + 1, "scatter %d %d", recv[0], recv[1]);
    MUST(MPI_Allgather_c(send, (MPI_Count)1, MPI_INT, recv, (MPI_Count)1, MPI_INT, MPI_COMM_WORLD));
    for (i = 0; i < size; i++) CHECK(recv[i] == i * 1000, "allgather %d", i);
    MUST(MPI_Alltoall_c(send, (MPI_Count)1, MPI_INT, recv, (MPI_Count)1, MPI_INT, MPI_COMM_WORLD));
    for (i = 0; i < size; i++) CHECK(recv[i] == i * 1000 + rank, "alltoall %d", i);
    x = 1;
    MUST(MPI_Scan_c(&x, recv, (MPI_Count)1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    CHECK(recv[0] == rank + 1, "scan %d", recv[0]);
    recv[0] = -7;
    MUST(MPI_Exscan_c(&x, recv, (MPI_Count)1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    if (rank > 0) CHECK(recv[0] == rank, "exscan %d", recv[0]);
    for (i = 0; i < size; i++) send[i] = i;
    MUST(MPI_Reduce_scatter_block_c(send, recv, (MPI_Count)1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    CHECK(recv[0] == rank * size, "reduce_scatter_block %d", recv[0]);
    /* The v-forms: counts as MPI_Count, displacements as MPI_Aint. */
    {
        MPI_Count counts[4], ones[4];
        MPI_Aint displs[4], at[4];
        for (i = 0; i < size; i++) {
            counts[i] = 2;
            displs[i] = 2 * (size - 1 - i); /* reversed order */
            ones[i] = 1;
            at[i] = i;
        }
        for (i = 0; i < 4 * N; i++) send[i] = rank * 1000 + i;
        memset(recv, 0, sizeof recv);
        MUST(MPI_Gatherv_c(send, (MPI_Count)2, MPI_INT, recv, counts, displs, MPI_INT, 0,
                           MPI_COMM_WORLD));
        if (rank == 0)
            for (i = 0; i < size; i++)
                CHECK(recv[2 * (size - 1 - i)] == i * 1000, "gatherv %d", i);
        MUST(MPI_Allgatherv_c(send, (MPI_Count)2, MPI_INT, recv, counts, displs, MPI_INT,
                              MPI_COMM_WORLD));
        for (i = 0; i < size; i++)
            CHECK(recv[2 * (size - 1 - i) + 1] == i * 1000 + 1, "allgatherv %d", i);
        MUST(MPI_Scatterv_c(send, counts, displs, MPI_INT, recv, (MPI_Count)2, MPI_INT, 0,
                            MPI_COMM_WORLD));
        CHECK(recv[0] == 2 * (size - 1 - rank), "scatterv %d", recv[0]);
        MUST(MPI_Alltoallv_c(send, ones, at, MPI_INT, recv, ones, at, MPI_INT, MPI_COMM_WORLD));
        for (i = 0; i < size; i++) CHECK(recv[i] == i * 1000 + rank, "alltoallv %d", i);
        for (i = 0; i < size; i++) send[i] = i;
        MUST(MPI_Reduce_scatter_c(send, recv, ones, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
        CHECK(recv[0] == rank * size, "reduce_scatter %d", recv[0]);
        /* A block beyond the address space is refused with its class, not truncated
           (counts beyond int are taken: bigcount_v.c). */
        MUST(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
        counts[0] = (MPI_Count)1 << 62;
        CHECK(MPI_Allgatherv_c(send, (MPI_Count)2, MPI_INT, recv, counts, displs, MPI_INT,
                               MPI_COMM_WORLD) == MPI_ERR_COUNT,
              "block beyond the address space");
        MUST(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
    }
    for (i = 0; i < N; i++) recv[i] = i;
    MUST(MPI_Reduce_local_c(send, recv, (MPI_Count)1, MPI_INT, MPI_PROD));
    CHECK(recv[0] == 0, "reduce_local");
}

static void bad_input(void) {
    int x = 0, index, flag, count, idx[1];
    MPI_Request r = MPI_REQUEST_NULL, bogus = (MPI_Request)(intptr_t)0x5;
    MPI_Status st;
    MUST(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    CHECK(MPI_Send_c(&x, (MPI_Count)-1, MPI_INT, 0, 0, MPI_COMM_WORLD) == MPI_ERR_COUNT, "count");
    CHECK(MPI_Bsend_c(NULL, (MPI_Count)4, MPI_INT, 0, 0, MPI_COMM_WORLD) == MPI_ERR_BUFFER, "null buffer");
    CHECK(MPI_Issend_c(&x, (MPI_Count)1, MPI_DATATYPE_NULL, 0, 0, MPI_COMM_WORLD, &r) == MPI_ERR_TYPE,
          "datatype");
    CHECK(MPI_Rsend_c(&x, (MPI_Count)1, MPI_INT, 0, -5, MPI_COMM_WORLD) == MPI_ERR_TAG, "tag");
    CHECK(MPI_Sendrecv_c(&x, (MPI_Count)1, MPI_INT, 0, 0, &x, (MPI_Count)-2, MPI_INT, 0, 0,
                         MPI_COMM_WORLD, &st) == MPI_ERR_COUNT,
          "sendrecv count");
    CHECK(MPI_Send_init_c(&x, (MPI_Count)1, MPI_INT, 0, 0, MPI_COMM_NULL, &r) == MPI_ERR_COMM, "comm");
    CHECK(MPI_Gather_c(&x, (MPI_Count)-1, MPI_INT, &x, (MPI_Count)1, MPI_INT, 0, MPI_COMM_WORLD) ==
              MPI_ERR_COUNT,
          "gather count");
    CHECK(MPI_Reduce_local_c(&x, &x, (MPI_Count)1, MPI_INT, MPI_OP_NULL) == MPI_ERR_OP, "op");
    CHECK(MPI_Request_get_status_any(1, &bogus, &index, &flag, &st) == MPI_ERR_REQUEST, "bogus request");
    CHECK(MPI_Request_get_status_all(-1, &r, &flag, &st) == MPI_ERR_COUNT, "negative count");
    CHECK(MPI_Request_get_status_some(1, &r, NULL, idx, &st) == MPI_ERR_ARG, "null outcount");
    CHECK(MPI_Request_get_status_any(1, &r, NULL, &flag, &st) == MPI_ERR_ARG, "null index");
    (void)count;
    {
        /* A buffer attached with the _c form whose size an int cannot hold: the int detach
           refuses it and leaves it attached; the _c form gives it back. Its pages are never
           touched, so the allocation costs address space only. */
        MPI_Count big = (MPI_Count)INT_MAX + 4096, csize = 0;
        char *region = malloc((size_t)big);
        void *old = NULL;
        int isize = 0;
        CHECK(region != NULL, "malloc %lld", (long long)big);
        MUST(MPI_Buffer_attach_c(region, big));
        CHECK(MPI_Buffer_detach(&old, &isize) == MPI_ERR_VALUE_TOO_LARGE, "int detach of a big buffer");
        MUST(MPI_Buffer_detach_c(&old, &csize));
        CHECK(old == (void *)region && csize == big, "detach_c %p %lld", old, (long long)csize);
        free(region);
    }
}

int main(int argc, char **argv) {
    int rank, size;
    MUST(MPI_Init(&argc, &argv));
    MUST(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    MUST(MPI_Comm_size(MPI_COMM_WORLD, &size));
    p2p(rank, size);
    get_status(rank, size);
    collectives(rank, size);
    bad_input();
    MUST(MPI_Finalize());
    return 0;
}
