/* Generalized requests: query_fn fills the status when a wait, test or get-status reports
 * completion, free_fn runs once when the request is freed (also when MPI_Request_free came
 * before MPI_Grequest_complete), cancel_fn learns whether it completed, and a callback's
 * error becomes the call's. */
#include "check.h"

struct ctx {
    int queries, frees, cancels, last_complete, query_rc;
};

static int query_fn(void *extra, MPI_Status *st) {
    struct ctx *c = extra;
    c->queries++;
    MUST(MPI_Status_set_source(st, 3));
    MUST(MPI_Status_set_tag(st, 7));
    MUST(MPI_Status_set_elements(st, MPI_INT, 5));
    MUST(MPI_Status_set_cancelled(st, 0));
    return c->query_rc;
}

static int free_fn(void *extra) {
    ((struct ctx *)extra)->frees++;
    return MPI_SUCCESS;
}

static int cancel_fn(void *extra, int complete) {
    struct ctx *c = extra;
    c->cancels++;
    c->last_complete = complete;
    return MPI_SUCCESS;
}

int main(int argc, char **argv) {
    MUST(MPI_Init(&argc, &argv));
    MPI_Request r, keep;
    MPI_Status st;
    int flag, n;

    /* The life of one: pending, cancelled, completed, peeked at, waited for. */
    struct ctx a = {0};
    MUST(MPI_Grequest_start(query_fn, free_fn, cancel_fn, &a, &r));
    MUST(MPI_Test(&r, &flag, &st));
    CHECK(!flag && a.queries == 0 && a.frees == 0, "pending: flag %d", flag);
    MUST(MPI_Cancel(&r));
    CHECK(a.cancels == 1 && a.last_complete == 0, "cancel_fn before completion");
    MUST(MPI_Grequest_complete(r));
    MUST(MPI_Cancel(&r));
    CHECK(a.cancels == 2 && a.last_complete == 1, "cancel_fn after completion");
    MUST(MPI_Request_get_status(r, &flag, &st));
    CHECK(flag && st.MPI_SOURCE == 3 && st.MPI_TAG == 7 && a.queries == 1 && a.frees == 0,
          "get_status: flag %d source %d tag %d", flag, st.MPI_SOURCE, st.MPI_TAG);
    MUST(MPI_Wait(&r, &st));
    MUST(MPI_Get_count(&st, MPI_INT, &n));
    CHECK(r == MPI_REQUEST_NULL && st.MPI_SOURCE == 3 && st.MPI_TAG == 7 && n == 5,
          "wait: source %d tag %d count %d", st.MPI_SOURCE, st.MPI_TAG, n);
    CHECK(a.queries == 2 && a.frees == 1, "wait: %d queries, %d frees", a.queries, a.frees);

    /* Freed before it completes: free_fn runs at MPI_Grequest_complete. */
    struct ctx b = {0};
    MUST(MPI_Grequest_start(query_fn, free_fn, cancel_fn, &b, &r));
    keep = r;
    MUST(MPI_Request_free(&r));
    CHECK(r == MPI_REQUEST_NULL && b.frees == 0, "freed while pending");
    MUST(MPI_Grequest_complete(keep));
    CHECK(b.frees == 1 && b.queries == 0, "free_fn at completion: %d", b.frees);

    /* Several at once, one of them failing in query_fn: MPI_ERR_IN_STATUS, its own error in
     * its status, every free_fn run. */
    MUST(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    struct ctx c[3] = {{0}, {0}, {0}};
    c[1].query_rc = MPI_ERR_BUFFER;
    MPI_Request rs[3];
    MPI_Status sts[3];
    for (int i = 0; i < 3; i++) MUST(MPI_Grequest_start(query_fn, free_fn, NULL, &c[i], &rs[i]));
    for (int i = 2; i >= 0; i--) MUST(MPI_Grequest_complete(rs[i]));
    int rc = MPI_Waitall(3, rs, sts);
    CHECK(rc == MPI_ERR_IN_STATUS, "waitall: %d", rc);
    CHECK(sts[1].MPI_ERROR == MPI_ERR_BUFFER && sts[0].MPI_ERROR == MPI_SUCCESS &&
              sts[2].MPI_ERROR == MPI_SUCCESS,
          "statuses' errors %d %d %d", sts[0].MPI_ERROR, sts[1].MPI_ERROR, sts[2].MPI_ERROR);
    for (int i = 0; i < 3; i++)
        CHECK(rs[i] == MPI_REQUEST_NULL && c[i].frees == 1 && sts[i].MPI_TAG == 7,
              "waitall %d: frees %d tag %d", i, c[i].frees, sts[i].MPI_TAG);

    /* A generalized request beside a message in one MPI_Waitany loop. */
    struct ctx d = {0};
    int rank, x = 0, y = 42;
    MUST(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    MUST(MPI_Grequest_start(query_fn, free_fn, NULL, &d, &rs[0]));
    MUST(MPI_Irecv(&x, 1, MPI_INT, rank, 9, MPI_COMM_WORLD, &rs[1]));
    MUST(MPI_Send(&y, 1, MPI_INT, rank, 9, MPI_COMM_WORLD));
    MUST(MPI_Grequest_complete(rs[0]));
    for (int k = 0; k < 2; k++) {
        int idx;
        MUST(MPI_Waitany(2, rs, &idx, &st));
        CHECK(idx == 0 ? st.MPI_TAG == 7 : st.MPI_TAG == 9, "waitany %d: tag %d", idx, st.MPI_TAG);
    }
    CHECK(x == 42 && d.frees == 1 && d.queries == 1, "waitany: x %d frees %d", x, d.frees);
    CHECK(MPI_Grequest_complete(keep) != MPI_SUCCESS, "completing a freed one again");

    MUST(MPI_Finalize());
    return 0;
}
