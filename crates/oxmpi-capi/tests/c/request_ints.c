/* Request integers (MPI_Request_c2f / MPI_Request_f2c, which the Fortran bindings use for
 * their request handles): 100k requests converted over time reuse a bounded set of
 * integers, each integer round-trips while its request lives and is distinct from every
 * other live one (sends complete as they started may share one), a persistent request keeps
 * its integer over restarts until freed, MPI_REQUEST_NULL is its own value, and integers that
 * name no live request are refused. */
#include "check.h"
#include <limits.h>
#include <stdint.h>

#define CONVERSIONS 100000
#define WINDOW 4 /* receives and sends live at once */

/* MPI_Wait on the request integer `f` stands for must fail with MPI_ERR_REQUEST. */
static void refused(MPI_Fint f, const char *what) {
    MPI_Request h = MPI_Request_f2c(f);
    int rc = MPI_Wait(&h, MPI_STATUS_IGNORE), cls = -1;
    CHECK(rc != MPI_SUCCESS, "%s (%d): wait succeeded", what, (int)f);
    MUST(MPI_Error_class(rc, &cls));
    CHECK(cls == MPI_ERR_REQUEST, "%s (%d): error class %d", what, (int)f, cls);
}

/* Whether request `r` has completed (it stays allocated). */
static int done(MPI_Request r) {
    int flag = 0;
    MUST(MPI_Request_get_status(r, &flag, MPI_STATUS_IGNORE));
    return flag;
}

int main(int argc, char **argv) {
    int rank, size;
    MUST(MPI_Init(&argc, &argv));
    MUST(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    MUST(MPI_Comm_size(MPI_COMM_WORLD, &size));
    MUST(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;

    MPI_Fint null_int = MPI_Request_c2f(MPI_REQUEST_NULL);
    CHECK(null_int == (MPI_Fint)(intptr_t)MPI_REQUEST_NULL, "null's integer %d", (int)null_int);
    CHECK(MPI_Request_f2c(null_int) == MPI_REQUEST_NULL, "null round trip");

    /* Nonblocking requests, WINDOW receives and WINDOW sends at a time, completed through
     * the handles their integers give back. */
    MPI_Fint lo = INT_MAX, hi = INT_MIN;
    int in[WINDOW], out[WINDOW], converted = 0;
    for (int round = 0; converted < CONVERSIONS; round++) {
        MPI_Request r[2 * WINDOW];
        MPI_Fint f[2 * WINDOW];
        for (int i = 0; i < WINDOW; i++) {
            out[i] = rank * 1000 + round % 1000 + i;
            MUST(MPI_Irecv(&in[i], 1, MPI_INT, prev, i, MPI_COMM_WORLD, &r[i]));
            MUST(MPI_Isend(&out[i], 1, MPI_INT, next, i, MPI_COMM_WORLD, &r[WINDOW + i]));
        }
        for (int j = 0; j < 2 * WINDOW; j++) {
            f[j] = MPI_Request_c2f(r[j]);
            converted++;
            CHECK(f[j] != null_int && f[j] > 0, "round %d: request %d got %d", round, j, (int)f[j]);
            CHECK(MPI_Request_f2c(f[j]) == r[j], "round %d: request %d round trip", round, j);
            CHECK(MPI_Request_c2f(r[j]) == f[j], "round %d: request %d converted twice", round, j);
            /* Sends that finished as they started may share one request, as in MPICH
             * (nothing tells them apart); any other two live requests never share. */
            for (int k = 0; k < j; k++)
                CHECK(f[k] != f[j] || (k >= WINDOW && done(r[k]) && done(r[j])),
                      "round %d: live requests %d and %d share %d", round, k, j, (int)f[j]);
            lo = f[j] < lo ? f[j] : lo;
            hi = f[j] > hi ? f[j] : hi;
        }
        /* Half through MPI_Wait, half through MPI_Waitall, as Fortran would. */
        for (int j = 0; j < WINDOW; j++) {
            MPI_Request h = MPI_Request_f2c(f[j]);
            MUST(MPI_Wait(&h, MPI_STATUS_IGNORE));
            CHECK(h == MPI_REQUEST_NULL, "wait frees");
            f[j] = MPI_Request_c2f(h);
            CHECK(f[j] == null_int, "a completed request's integer is null's");
        }
        MPI_Request rest[WINDOW];
        for (int j = 0; j < WINDOW; j++) rest[j] = MPI_Request_f2c(f[WINDOW + j]);
        MUST(MPI_Waitall(WINDOW, rest, MPI_STATUSES_IGNORE));
        for (int i = 0; i < WINDOW; i++)
            CHECK(in[i] == prev * 1000 + round % 1000 + i, "round %d: got %d", round, in[i]);
    }
    /* The integers come back: as few as the requests live at once, not one per request. */
    CHECK(hi - lo < 2 * 64, "%d conversions used integers %d..%d", converted, (int)lo, (int)hi);

    /* An integer whose request completed (no request took its place) is refused, as are
     * integers never handed out. */
    int x = -1;
    MPI_Request r;
    MUST(MPI_Irecv(&x, 1, MPI_INT, prev, 99, MPI_COMM_WORLD, &r));
    MPI_Fint stale = MPI_Request_c2f(r);
    MUST(MPI_Send(&rank, 1, MPI_INT, next, 99, MPI_COMM_WORLD));
    MUST(MPI_Wait(&r, MPI_STATUS_IGNORE));
    CHECK(x == prev, "received %d", x);
    refused(stale, "a completed request's integer");
    refused(-7, "a negative integer");
    refused(INT_MAX, "the largest integer");
    refused(hi + 2 * 1000, "an integer never handed out");

    /* Persistent requests: one integer per request over its restarts; freed, it is refused
     * and reused. */
    MPI_Fint plo = INT_MAX, phi = INT_MIN;
    for (int k = 0; k < 1000; k++) {
        MPI_Request p[2];
        int pin = -1, pout = rank + k;
        MUST(MPI_Recv_init(&pin, 1, MPI_INT, prev, 7, MPI_COMM_WORLD, &p[0]));
        MUST(MPI_Send_init(&pout, 1, MPI_INT, next, 7, MPI_COMM_WORLD, &p[1]));
        MPI_Fint fp[2] = {MPI_Request_c2f(p[0]), MPI_Request_c2f(p[1])};
        CHECK(fp[0] != fp[1] && fp[0] != null_int && fp[1] != null_int, "persistent integers");
        for (int start = 0; start < 2; start++) {
            MPI_Request h[2] = {MPI_Request_f2c(fp[0]), MPI_Request_f2c(fp[1])};
            CHECK(h[0] == p[0] && h[1] == p[1], "persistent round trip");
            MUST(MPI_Startall(2, h));
            MUST(MPI_Waitall(2, h, MPI_STATUSES_IGNORE));
            CHECK(MPI_Request_c2f(h[0]) == fp[0] && MPI_Request_c2f(h[1]) == fp[1],
                  "a persistent request keeps its integer");
            CHECK(pin == prev + k, "persistent %d got %d", k, pin);
        }
        MUST(MPI_Request_free(&p[0]));
        MUST(MPI_Request_free(&p[1]));
        if (k == 0) {
            refused(fp[0], "a freed persistent request's integer");
            refused(fp[1], "a freed persistent request's integer");
        }
        for (int j = 0; j < 2; j++) {
            plo = fp[j] < plo ? fp[j] : plo;
            phi = fp[j] > phi ? fp[j] : phi;
        }
    }
    CHECK(phi - plo < 2 * 64, "2000 persistent requests used integers %d..%d", (int)plo, (int)phi);

    MUST(MPI_Barrier(MPI_COMM_WORLD));
    MUST(MPI_Finalize());
    return 0;
}
