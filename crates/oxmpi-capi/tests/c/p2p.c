/* Point-to-point in every mode around a ring, wildcards, probes, sendrecv, status queries,
 * PROC_NULL, and truncation reported with MPI_ERRORS_RETURN. */
#include <string.h>
#include "check.h"

#define N 1000

int main(int argc, char **argv) {
    int rank, size, count;
    MPI_Status st;
    MUST(MPI_Init(&argc, &argv));
    MUST(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    MUST(MPI_Comm_size(MPI_COMM_WORLD, &size));
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    static double out[N], in[N];
    for (int i = 0; i < N; i++) out[i] = rank * 10000.0 + i;

    /* Each blocking mode, one hop round the ring: post the receive first (rsend needs it). */
    for (int mode = 0; mode < 4; mode++) {
        MPI_Request r;
        memset(in, 0, sizeof in);
        MUST(MPI_Irecv(in, N, MPI_DOUBLE, prev, mode, MPI_COMM_WORLD, &r));
        MUST(MPI_Barrier(MPI_COMM_WORLD));
        if (mode == 3) {
            static char bbuf[N * sizeof(double) + MPI_BSEND_OVERHEAD];
            MUST(MPI_Buffer_attach(bbuf, sizeof bbuf));
            MUST(MPI_Bsend(out, N, MPI_DOUBLE, next, mode, MPI_COMM_WORLD));
            void *back;
            int back_size;
            MUST(MPI_Wait(&r, &st));
            MUST(MPI_Buffer_detach(&back, &back_size));
            CHECK(back == bbuf && back_size == (int)sizeof bbuf, "detach gives the buffer back");
        } else {
            if (mode == 0) MUST(MPI_Send(out, N, MPI_DOUBLE, next, mode, MPI_COMM_WORLD));
            if (mode == 1) MUST(MPI_Ssend(out, N, MPI_DOUBLE, next, mode, MPI_COMM_WORLD));
            if (mode == 2) MUST(MPI_Rsend(out, N, MPI_DOUBLE, next, mode, MPI_COMM_WORLD));
            MUST(MPI_Wait(&r, &st));
        }
        CHECK(r == MPI_REQUEST_NULL, "wait frees the request");
        CHECK(st.MPI_SOURCE == prev && st.MPI_TAG == mode, "status %d/%d", st.MPI_SOURCE, st.MPI_TAG);
        MUST(MPI_Get_count(&st, MPI_DOUBLE, &count));
        CHECK(count == N, "count %d", count);
        for (int i = 0; i < N; i++) CHECK(in[i] == prev * 10000.0 + i, "mode %d element %d", mode, i);
    }

    /* Wildcards and probes. */
    int v = rank, got = -1, flag = 0;
    MUST(MPI_Send(&v, 1, MPI_INT, next, 42, MPI_COMM_WORLD));
    MUST(MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
    CHECK(st.MPI_SOURCE == prev && st.MPI_TAG == 42, "probe %d/%d", st.MPI_SOURCE, st.MPI_TAG);
    MUST(MPI_Iprobe(prev, 42, MPI_COMM_WORLD, &flag, &st));
    CHECK(flag == 1, "iprobe sees the probed message");
    MUST(MPI_Get_count(&st, MPI_BYTE, &count));
    CHECK(count == (int)sizeof(int), "probe bytes %d", count);
    MUST(MPI_Recv(&got, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
    CHECK(got == prev, "wildcard receive %d", got);
    MUST(MPI_Iprobe(MPI_ANY_SOURCE, 43, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE));
    CHECK(flag == 0, "nothing with tag 43");

    /* Matched probes: the probed message is received by Mrecv, not by a later receive. */
    MPI_Message msg;
    int first = rank * 3, second = rank * 3 + 1;
    MUST(MPI_Send(&first, 1, MPI_INT, next, 50, MPI_COMM_WORLD));
    MUST(MPI_Send(&second, 1, MPI_INT, next, 50, MPI_COMM_WORLD));
    MUST(MPI_Mprobe(prev, 50, MPI_COMM_WORLD, &msg, &st));
    CHECK(msg != MPI_MESSAGE_NULL && st.MPI_TAG == 50, "mprobe");
    flag = 0;
    MPI_Message msg2 = MPI_MESSAGE_NULL;
    while (!flag) MUST(MPI_Improbe(prev, 50, MPI_COMM_WORLD, &flag, &msg2, MPI_STATUS_IGNORE));
    MUST(MPI_Mrecv(&got, 1, MPI_INT, &msg2, &st));
    CHECK(got == prev * 3 + 1 && msg2 == MPI_MESSAGE_NULL, "improbe + mrecv got %d", got);
    MUST(MPI_Mrecv(&got, 1, MPI_INT, &msg, &st));
    CHECK(got == prev * 3, "mprobe + mrecv got %d", got);
    MUST(MPI_Mprobe(MPI_PROC_NULL, 0, MPI_COMM_WORLD, &msg, &st));
    CHECK(msg == MPI_MESSAGE_NO_PROC, "mprobe PROC_NULL");
    MUST(MPI_Mrecv(&got, 1, MPI_INT, &msg, &st));
    CHECK(st.MPI_SOURCE == MPI_PROC_NULL, "mrecv NO_PROC");

    /* Large-count forms. */
    MPI_Count cnt = 0;
    MPI_Request lr;
    MUST(MPI_Irecv_c(in, (MPI_Count)N, MPI_DOUBLE, prev, 60, MPI_COMM_WORLD, &lr));
    MUST(MPI_Send_c(out, (MPI_Count)N, MPI_DOUBLE, next, 60, MPI_COMM_WORLD));
    MUST(MPI_Wait(&lr, &st));
    MUST(MPI_Get_count_c(&st, MPI_DOUBLE, &cnt));
    CHECK(cnt == N && in[N - 1] == prev * 10000.0 + N - 1, "large-count exchange %lld", (long long)cnt);
    MUST(MPI_Isend_c(out, 3, MPI_DOUBLE, next, 61, MPI_COMM_WORLD, &lr));
    MUST(MPI_Recv_c(in, 3, MPI_DOUBLE, prev, 61, MPI_COMM_WORLD, &st));
    MUST(MPI_Wait(&lr, MPI_STATUS_IGNORE));
    MUST(MPI_Type_size_c(MPI_DOUBLE, &cnt));
    CHECK(cnt == 8, "type_size_c %lld", (long long)cnt);

    /* Sendrecv and sendrecv_replace. */
    MUST(MPI_Sendrecv(&v, 1, MPI_INT, next, 5, &got, 1, MPI_INT, prev, 5, MPI_COMM_WORLD, &st));
    CHECK(got == prev, "sendrecv %d", got);
    long x = rank;
    MUST(MPI_Sendrecv_replace(&x, 1, MPI_LONG, next, 6, prev, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    CHECK(x == prev, "sendrecv_replace %ld", x);

    /* PROC_NULL completes at once, empty. */
    MUST(MPI_Send(&v, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD));
    MUST(MPI_Recv(&got, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &st));
    CHECK(st.MPI_SOURCE == MPI_PROC_NULL, "proc_null source %d", st.MPI_SOURCE);
    MUST(MPI_Get_count(&st, MPI_INT, &count));
    CHECK(count == 0, "proc_null count %d", count);

    /* Truncation: the class comes back with MPI_ERRORS_RETURN. */
    MUST(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    int two[2] = {1, 2};
    MUST(MPI_Send(two, 2, MPI_INT, next, 77, MPI_COMM_WORLD));
    int rc = MPI_Recv(&got, 1, MPI_INT, prev, 77, MPI_COMM_WORLD, &st);
    int cls = -1;
    MUST(MPI_Error_class(rc, &cls));
    CHECK(cls == MPI_ERR_TRUNCATE, "truncation class %d", cls);

    /* The rest of the truncated message is gone; status conversion on a complete status. */
    MUST(MPI_Send(&v, 1, MPI_INT, next, 78, MPI_COMM_WORLD));
    MUST(MPI_Recv(&got, 1, MPI_INT, prev, 78, MPI_COMM_WORLD, &st));
    MPI_Fint f[MPI_F_STATUS_SIZE];
    MPI_Status back;
    MUST(MPI_Status_c2f(&st, f));
    MUST(MPI_Status_f2c(f, &back));
    CHECK(back.MPI_SOURCE == st.MPI_SOURCE && f[MPI_F_TAG] == 78, "status c2f/f2c");

    MUST(MPI_Barrier(MPI_COMM_WORLD));
    MUST(MPI_Finalize());
    return 0;
}
