/* Reductions on buffers not aligned for their datatype (MPI does not require alignment):
   every predefined operation family (arithmetic, logical, bitwise, MINLOC/MAXLOC pairs) on
   send and receive buffers at odd addresses, through reduce, allreduce (also in place),
   scan, exscan, reduce_scatter(_block) and reduce_local, blocking, nonblocking and
   persistent, and accumulate into a window at an odd address. Values are read and written
   with memcpy, as a C program must at such addresses. */
#include <stdint.h>
#include <string.h>

#include "check.h"

#define N 5
#define MAXP 4

typedef struct {
    double v;
    int k;
} dint;

static int rank, size;

static size_t esize(MPI_Datatype t) {
    if (t == MPI_INT) return sizeof(int);
    if (t == MPI_DOUBLE_INT) return sizeof(dint);
    return 8; /* MPI_DOUBLE, MPI_LONG_LONG */
}

/* Element i of a buffer of type t, as (value, index). */
static void enc(MPI_Datatype t, char *b, int i, long long v, int k) {
    char *at = b + (size_t)i * esize(t);
    if (t == MPI_INT) {
        int x = (int)v;
        memcpy(at, &x, sizeof x);
    } else if (t == MPI_DOUBLE) {
        double x = (double)v;
        memcpy(at, &x, sizeof x);
    } else if (t == MPI_LONG_LONG) {
        memcpy(at, &v, sizeof v);
    } else {
        dint x;
        memset(&x, 0, sizeof x);
        x.v = (double)v;
        x.k = k;
        memcpy(at, &x, sizeof x);
    }
}

static void dec(MPI_Datatype t, const char *b, int i, long long *v, int *k) {
    const char *at = b + (size_t)i * esize(t);
    *k = 0;
    if (t == MPI_INT) {
        int x;
        memcpy(&x, at, sizeof x);
        *v = x;
    } else if (t == MPI_DOUBLE) {
        double x;
        memcpy(&x, at, sizeof x);
        *v = (long long)x;
    } else if (t == MPI_LONG_LONG) {
        memcpy(v, at, sizeof *v);
    } else {
        dint x;
        memcpy(&x, at, sizeof x);
        *v = (long long)x.v;
        *k = x.k;
    }
}

/* What rank r contributes at element i under op. */
static long long contrib(MPI_Op op, int r, int i) {
    if (op == MPI_LAND || op == MPI_LOR || op == MPI_LXOR) return (r + i) % 2;
    if (op == MPI_BAND || op == MPI_BOR || op == MPI_BXOR) return (1LL << ((r + i) % 8)) | 0x100;
    if (op == MPI_PROD) return r + 1 + i % 2;
    if (op == MPI_MINLOC || op == MPI_MAXLOC) return (r * 7 + i) % 3;
    return r * 3 + i + 1;
}

static void fold(MPI_Op op, long long *v, int *k, long long w, int j) {
    if (op == MPI_SUM) *v += w;
    else if (op == MPI_PROD) *v *= w;
    else if (op == MPI_MAX) *v = w > *v ? w : *v;
    else if (op == MPI_MIN) *v = w < *v ? w : *v;
    else if (op == MPI_LAND) *v = *v && w;
    else if (op == MPI_LOR) *v = *v || w;
    else if (op == MPI_LXOR) *v = !*v != !w;
    else if (op == MPI_BAND) *v &= w;
    else if (op == MPI_BOR) *v |= w;
    else if (op == MPI_BXOR) *v ^= w;
    else if (op == MPI_MINLOC) {
        if (w < *v || (w == *v && j < *k)) *v = w, *k = j;
    } else if (op == MPI_MAXLOC) {
        if (w > *v || (w == *v && j < *k)) *v = w, *k = j;
    }
}

/* The reduction of ranks [0, upto) at element i. */
static void expect(MPI_Op op, int upto, int i, long long *v, int *k) {
    int r;
    *v = contrib(op, 0, i);
    *k = 0;
    for (r = 1; r < upto; r++) fold(op, v, k, contrib(op, r, i), r);
}

static void fill(MPI_Datatype t, MPI_Op op, char *b, int n) {
    int i;
    for (i = 0; i < n; i++) enc(t, b, i, contrib(op, rank, i % N), rank);
}

static void check(const char *what, MPI_Datatype t, MPI_Op op, const char *b, int upto, int n,
                  int first) {
    int i, k, ek;
    long long v, ev;
    for (i = 0; i < n; i++) {
        dec(t, b, i, &v, &k);
        expect(op, upto, (first + i) % N, &ev, &ek);
        CHECK(v == ev && k == ek, "%s element %d: (%lld, %d), expected (%lld, %d)", what, i, v,
              k, ev, ek);
    }
}

/* Storage with room for MAXP * N of the largest element, and a pointer into it at `odd`
   bytes past an 8-byte boundary. */
static char sraw[MAXP * N * sizeof(dint) + 64], rraw[MAXP * N * sizeof(dint) + 64];

static char *at_odd(char *raw, int odd) {
    return raw + (8 - (uintptr_t)raw % 8) % 8 + odd;
}

enum { BLOCKING, NONBLOCKING, PERSISTENT };

static void wait_for(int how, MPI_Request *rq) {
    if (how == PERSISTENT) {
        MUST(MPI_Start(rq));
        MUST(MPI_Wait(rq, MPI_STATUS_IGNORE));
        MUST(MPI_Request_free(rq));
    } else if (how == NONBLOCKING) {
        MUST(MPI_Wait(rq, MPI_STATUS_IGNORE));
    }
}

static void one_case(MPI_Datatype t, MPI_Op op, int how) {
    char *s = at_odd(sraw, 1), *r = at_odd(rraw, 3);
    MPI_Request rq = MPI_REQUEST_NULL;
    int counts[MAXP], i;
    for (i = 0; i < size; i++) counts[i] = N;

    fill(t, op, s, N);
    memset(r, 0x5a, N * esize(t));
    if (how == BLOCKING) MUST(MPI_Reduce(s, r, N, t, op, 0, MPI_COMM_WORLD));
    else if (how == NONBLOCKING) MUST(MPI_Ireduce(s, r, N, t, op, 0, MPI_COMM_WORLD, &rq));
    else MUST(MPI_Reduce_init(s, r, N, t, op, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &rq));
    wait_for(how, &rq);
    if (rank == 0) check("reduce", t, op, r, size, N, 0);

    if (how == BLOCKING) MUST(MPI_Allreduce(s, r, N, t, op, MPI_COMM_WORLD));
    else if (how == NONBLOCKING) MUST(MPI_Iallreduce(s, r, N, t, op, MPI_COMM_WORLD, &rq));
    else MUST(MPI_Allreduce_init(s, r, N, t, op, MPI_COMM_WORLD, MPI_INFO_NULL, &rq));
    wait_for(how, &rq);
    check("allreduce", t, op, r, size, N, 0);

    fill(t, op, r, N);
    if (how == BLOCKING) MUST(MPI_Allreduce(MPI_IN_PLACE, r, N, t, op, MPI_COMM_WORLD));
    else if (how == NONBLOCKING)
        MUST(MPI_Iallreduce(MPI_IN_PLACE, r, N, t, op, MPI_COMM_WORLD, &rq));
    else MUST(MPI_Allreduce_init(MPI_IN_PLACE, r, N, t, op, MPI_COMM_WORLD, MPI_INFO_NULL, &rq));
    wait_for(how, &rq);
    check("allreduce in place", t, op, r, size, N, 0);

    if (how == BLOCKING) MUST(MPI_Scan(s, r, N, t, op, MPI_COMM_WORLD));
    else if (how == NONBLOCKING) MUST(MPI_Iscan(s, r, N, t, op, MPI_COMM_WORLD, &rq));
    else MUST(MPI_Scan_init(s, r, N, t, op, MPI_COMM_WORLD, MPI_INFO_NULL, &rq));
    wait_for(how, &rq);
    check("scan", t, op, r, rank + 1, N, 0);

    if (how == BLOCKING) MUST(MPI_Exscan(s, r, N, t, op, MPI_COMM_WORLD));
    else if (how == NONBLOCKING) MUST(MPI_Iexscan(s, r, N, t, op, MPI_COMM_WORLD, &rq));
    else MUST(MPI_Exscan_init(s, r, N, t, op, MPI_COMM_WORLD, MPI_INFO_NULL, &rq));
    wait_for(how, &rq);
    if (rank > 0) check("exscan", t, op, r, rank, N, 0);

    fill(t, op, s, N * size);
    if (how == BLOCKING) MUST(MPI_Reduce_scatter_block(s, r, N, t, op, MPI_COMM_WORLD));
    else if (how == NONBLOCKING)
        MUST(MPI_Ireduce_scatter_block(s, r, N, t, op, MPI_COMM_WORLD, &rq));
    else
        MUST(MPI_Reduce_scatter_block_init(s, r, N, t, op, MPI_COMM_WORLD, MPI_INFO_NULL, &rq));
    wait_for(how, &rq);
    check("reduce_scatter_block", t, op, r, size, N, 0);

    if (how == BLOCKING) MUST(MPI_Reduce_scatter(s, r, counts, t, op, MPI_COMM_WORLD));
    else if (how == NONBLOCKING)
        MUST(MPI_Ireduce_scatter(s, r, counts, t, op, MPI_COMM_WORLD, &rq));
    else
        MUST(MPI_Reduce_scatter_init(s, r, counts, t, op, MPI_COMM_WORLD, MPI_INFO_NULL, &rq));
    wait_for(how, &rq);
    check("reduce_scatter", t, op, r, size, N, 0);

    if (how == BLOCKING) {
        /* inout = in op inout, with in as rank 1's and inout as rank 0's contribution. */
        int me = rank;
        rank = 0;
        fill(t, op, r, N);
        rank = 1;
        fill(t, op, s, N);
        rank = me;
        MUST(MPI_Reduce_local(s, r, N, t, op));
        check("reduce_local", t, op, r, 2, N, 0);
    }
}

/* Accumulate from an odd origin into a window whose base is at an odd address. */
static void accumulate(MPI_Datatype t) {
    char *s = at_odd(sraw, 1), *r = at_odd(rraw, 5);
    MPI_Win win;
    memset(r, 0, N * esize(t));
    MUST(MPI_Win_create(r, (MPI_Aint)(N * esize(t)), 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    fill(t, MPI_SUM, s, N);
    MUST(MPI_Win_fence(0, win));
    /* Rank 0's contribution goes in by MPI_REPLACE first; the others add theirs after. */
    if (rank == 0) MUST(MPI_Accumulate(s, N, t, 0, 0, N, t, MPI_REPLACE, win));
    MUST(MPI_Win_fence(0, win));
    if (rank != 0) MUST(MPI_Accumulate(s, N, t, 0, 0, N, t, MPI_SUM, win));
    MUST(MPI_Win_fence(0, win));
    if (rank == 0) check("accumulate", t, MPI_SUM, r, size, N, 0);
    MUST(MPI_Win_free(&win));
}

int main(int argc, char **argv) {
    const MPI_Op arith[] = {MPI_SUM, MPI_PROD, MPI_MAX, MPI_MIN};
    const MPI_Op logical[] = {MPI_LAND, MPI_LOR, MPI_LXOR};
    const MPI_Op bitwise[] = {MPI_BAND, MPI_BOR, MPI_BXOR};
    const MPI_Datatype numeric[] = {MPI_DOUBLE, MPI_INT, MPI_LONG_LONG};
    const MPI_Datatype integer[] = {MPI_INT, MPI_LONG_LONG};
    int how, o, d;

    MUST(MPI_Init(&argc, &argv));
    MUST(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    MUST(MPI_Comm_size(MPI_COMM_WORLD, &size));
    CHECK(size <= MAXP, "at most %d ranks", MAXP);
    CHECK((uintptr_t)at_odd(sraw, 1) % 4 != 0 && (uintptr_t)at_odd(rraw, 3) % 4 != 0,
          "buffers are misaligned");

    for (how = BLOCKING; how <= PERSISTENT; how++) {
        for (o = 0; o < 4; o++)
            for (d = 0; d < 3; d++) one_case(numeric[d], arith[o], how);
        for (o = 0; o < 3; o++)
            for (d = 0; d < 2; d++) {
                one_case(integer[d], logical[o], how);
                one_case(integer[d], bitwise[o], how);
            }
        one_case(MPI_DOUBLE_INT, MPI_MINLOC, how);
        one_case(MPI_DOUBLE_INT, MPI_MAXLOC, how);
    }
    accumulate(MPI_DOUBLE);
    accumulate(MPI_INT);
    MUST(MPI_Finalize());
    return 0;
}
