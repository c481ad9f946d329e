/* Requests: immediate sends in every mode, waitall/any/some, test families, persistent
 * requests with startall, cancel, request_free, request_get_status, and sends that finish as
 * they start through every request call. */
#include "check.h"

int main(int argc, char **argv) {
    int rank, size, flag, idx, outcount, indices[8];
    MPI_Status st, sts[8];
    MUST(MPI_Init(&argc, &argv));
    MUST(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    MUST(MPI_Comm_size(MPI_COMM_WORLD, &size));
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;

    /* Four receives, four sends of each immediate mode; completed by waitall. */
    int out[4], in[4] = {-1, -1, -1, -1};
    MPI_Request r[8];
    for (int i = 0; i < 4; i++) {
        out[i] = rank * 100 + i;
        MUST(MPI_Irecv(&in[i], 1, MPI_INT, prev, i, MPI_COMM_WORLD, &r[i]));
    }
    static char bbuf[4 * 64 + 4 * MPI_BSEND_OVERHEAD];
    MUST(MPI_Buffer_attach(bbuf, sizeof bbuf));
    MUST(MPI_Barrier(MPI_COMM_WORLD));
    MUST(MPI_Isend(&out[0], 1, MPI_INT, next, 0, MPI_COMM_WORLD, &r[4]));
    MUST(MPI_Issend(&out[1], 1, MPI_INT, next, 1, MPI_COMM_WORLD, &r[5]));
    MUST(MPI_Irsend(&out[2], 1, MPI_INT, next, 2, MPI_COMM_WORLD, &r[6]));
    MUST(MPI_Ibsend(&out[3], 1, MPI_INT, next, 3, MPI_COMM_WORLD, &r[7]));
    MUST(MPI_Waitall(8, r, sts));
    for (int i = 0; i < 8; i++) CHECK(r[i] == MPI_REQUEST_NULL, "request %d freed", i);
    for (int i = 0; i < 4; i++) {
        CHECK(in[i] == prev * 100 + i, "mode %d got %d", i, in[i]);
        CHECK(sts[i].MPI_SOURCE == prev && sts[i].MPI_TAG == i, "status %d", i);
    }
    void *b;
    int bs;
    MUST(MPI_Buffer_detach(&b, &bs));

    /* waitany / testany / waitsome over a receive and a null request. */
    int x = -1;
    r[0] = MPI_REQUEST_NULL;
    MUST(MPI_Irecv(&x, 1, MPI_INT, prev, 10, MPI_COMM_WORLD, &r[1]));
    MUST(MPI_Testany(2, r, &idx, &flag, &st));
    MUST(MPI_Send(&rank, 1, MPI_INT, next, 10, MPI_COMM_WORLD));
    if (!flag) MUST(MPI_Waitany(2, r, &idx, &st));
    CHECK(idx == 1 && x == prev, "waitany index %d value %d", idx, x);
    MUST(MPI_Waitany(2, r, &idx, &st));
    CHECK(idx == MPI_UNDEFINED, "all inactive gives MPI_UNDEFINED");

    MUST(MPI_Irecv(&x, 1, MPI_INT, prev, 11, MPI_COMM_WORLD, &r[0]));
    MUST(MPI_Send(&rank, 1, MPI_INT, next, 11, MPI_COMM_WORLD));
    outcount = 0;
    while (outcount == 0) MUST(MPI_Testsome(1, r, &outcount, indices, sts));
    CHECK(outcount == 1 && indices[0] == 0, "testsome");
    MUST(MPI_Waitsome(1, r, &outcount, indices, sts));
    CHECK(outcount == MPI_UNDEFINED, "waitsome on nothing active");

    /* test until done, with get_status first. */
    MUST(MPI_Irecv(&x, 1, MPI_INT, prev, 12, MPI_COMM_WORLD, &r[0]));
    MUST(MPI_Send(&rank, 1, MPI_INT, next, 12, MPI_COMM_WORLD));
    do MUST(MPI_Request_get_status(r[0], &flag, &st)); while (!flag);
    CHECK(r[0] != MPI_REQUEST_NULL, "get_status keeps the request");
    MUST(MPI_Test(&r[0], &flag, &st));
    CHECK(flag && r[0] == MPI_REQUEST_NULL && st.MPI_SOURCE == prev, "test completes");
    int all = 0;
    MUST(MPI_Testall(1, r, &all, MPI_STATUSES_IGNORE));
    CHECK(all == 1, "testall on null requests");

    /* Persistent requests, started three times. */
    int pin = -1, pout = rank;
    MPI_Request p[2];
    MUST(MPI_Recv_init(&pin, 1, MPI_INT, prev, 20, MPI_COMM_WORLD, &p[0]));
    MUST(MPI_Send_init(&pout, 1, MPI_INT, next, 20, MPI_COMM_WORLD, &p[1]));
    for (int round = 0; round < 3; round++) {
        pout = rank + round;
        MUST(MPI_Startall(2, p));
        MUST(MPI_Waitall(2, p, MPI_STATUSES_IGNORE));
        CHECK(p[0] != MPI_REQUEST_NULL, "persistent requests stay allocated");
        CHECK(pin == prev + round, "round %d got %d", round, pin);
    }
    MPI_Fint fr = MPI_Request_c2f(p[1]);
    CHECK(MPI_Request_f2c(fr) == p[1] && MPI_Request_c2f(p[1]) == fr, "request c2f/f2c");
    CHECK(MPI_Request_fromint(MPI_Request_toint(MPI_REQUEST_NULL)) == MPI_REQUEST_NULL, "null");
    MUST(MPI_Start(&p[0]));
    MUST(MPI_Cancel(&p[0]));
    MUST(MPI_Wait(&p[0], &st));
    MUST(MPI_Test_cancelled(&st, &flag));
    CHECK(flag == 1, "an unmatched receive is cancelled");
    MUST(MPI_Request_free(&p[0]));
    MUST(MPI_Request_free(&p[1]));
    CHECK(p[0] == MPI_REQUEST_NULL, "request_free sets NULL");

    /* Small sends finish as they start: whatever handles they get, every request call must
     * treat them as complete sends, each one completed on its own. */
    int v[7], w[7];
    MPI_Request s[7], q[7];
    for (int i = 0; i < 7; i++) {
        w[i] = -1;
        MUST(MPI_Irecv(&w[i], 1, MPI_INT, prev, 30 + i, MPI_COMM_WORLD, &q[i]));
    }
    MUST(MPI_Barrier(MPI_COMM_WORLD));
    for (int i = 0; i < 7; i++) {
        v[i] = rank * 10 + i;
        MUST(MPI_Isend(&v[i], 1, MPI_INT, next, 30 + i, MPI_COMM_WORLD, &s[i]));
        CHECK(s[i] != MPI_REQUEST_NULL, "an immediate send returns a request");
    }
    do MUST(MPI_Request_get_status(s[0], &flag, &st)); while (!flag);
    CHECK(s[0] != MPI_REQUEST_NULL, "get_status keeps a send's request");
    MUST(MPI_Wait(&s[0], &st));
    CHECK(s[0] == MPI_REQUEST_NULL, "wait frees a send's request");
    MUST(MPI_Test_cancelled(&st, &flag));
    CHECK(flag == 0, "a send's status is not cancelled");
    do MUST(MPI_Test(&s[1], &flag, &st)); while (!flag);
    CHECK(s[1] == MPI_REQUEST_NULL, "test frees a send's request");
    MUST(MPI_Cancel(&s[2]));
    MUST(MPI_Wait(&s[2], &st));
    MUST(MPI_Test_cancelled(&st, &flag));
    CHECK(flag == 0 && s[2] == MPI_REQUEST_NULL, "a send that went out is not cancelled");
    MUST(MPI_Request_free(&s[3]));
    CHECK(s[3] == MPI_REQUEST_NULL, "request_free of a send");
    MPI_Request back = MPI_Request_f2c(MPI_Request_c2f(s[4]));
    MUST(MPI_Wait(&back, &st));
    CHECK(back == MPI_REQUEST_NULL, "a send's request through its Fortran integer");
    MPI_Request mix[3] = {s[5], MPI_REQUEST_NULL, q[0]};
    MUST(MPI_Waitall(3, mix, sts));
    CHECK(mix[0] == MPI_REQUEST_NULL && mix[2] == MPI_REQUEST_NULL, "waitall frees all");
    CHECK(sts[2].MPI_SOURCE == prev && sts[2].MPI_TAG == 30 && w[0] == prev * 10, "receive");
    CHECK(sts[1].MPI_SOURCE == MPI_ANY_SOURCE && sts[1].MPI_TAG == MPI_ANY_TAG, "null status");
    MPI_Request sends_only[2] = {MPI_REQUEST_NULL, s[6]};
    MUST(MPI_Waitall(2, sends_only, sts));
    CHECK(sends_only[0] == MPI_REQUEST_NULL && sends_only[1] == MPI_REQUEST_NULL, "sends only");
    CHECK(sts[0].MPI_SOURCE == MPI_ANY_SOURCE && sts[0].MPI_TAG == MPI_ANY_TAG, "null status");
    MUST(MPI_Test_cancelled(&sts[1], &flag));
    CHECK(flag == 0, "a send's status from waitall");
    MUST(MPI_Waitall(6, q + 1, MPI_STATUSES_IGNORE));
    for (int i = 0; i < 7; i++) CHECK(w[i] == prev * 10 + i, "message %d got %d", i, w[i]);

    MUST(MPI_Barrier(MPI_COMM_WORLD));
    MUST(MPI_Finalize());
    return 0;
}
