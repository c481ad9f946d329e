/* Large point-to-point messages through derived datatypes around a ring (on one host they
 * move as iovec lists when the blocks are large, packed otherwise): a vector of 4 KiB
 * blocks received through shuffled hindexed blocks, contiguous doubles received through a
 * vector and the reverse, 64-byte blocks (below the crossover), with MPI_Send/MPI_Recv,
 * MPI_Ssend, MPI_Isend/MPI_Irecv and MPI_Sendrecv. Every byte of the receive span is
 * checked against the sender's pattern unpacked through the receive type into a
 * sentinel-filled buffer (gap bytes keep the sentinel). A receive type shorter than the
 * message gives MPI_ERR_TRUNCATE and writes nothing outside its type map. */
#include <stdint.h>
#include <string.h>
#include "check.h"

#define SENTINEL 0xEE
#define MIB (1 << 20)

static int rank, size;

static unsigned char *alloc(size_t n) {
    unsigned char *p = malloc(n ? n : 1);
    CHECK(p != NULL, "malloc");
    memset(p, SENTINEL, n);
    return p;
}

static void pattern(unsigned char *p, size_t n, int r, int tag) {
    for (size_t i = 0; i < n; i++) p[i] = (unsigned char)(r * 37 + tag * 11 + i * 7 + (i >> 9) + 1);
}

static MPI_Aint extent_of(MPI_Datatype t) {
    MPI_Aint lb, ext;
    MUST(MPI_Type_get_extent(t, &lb, &ext));
    CHECK(lb == 0, "lb %ld", (long)lb);
    return ext;
}

/* `n` blocks of `dbl` doubles in shuffled order, a gap of one to three doubles after each. */
static MPI_Datatype shuffled(int n, int dbl, unsigned seed) {
    int *lens = malloc(sizeof(int) * n);
    MPI_Aint *disps = malloc(sizeof(MPI_Aint) * n);
    MPI_Aint at = 0;
    for (int i = 0; i < n; i++) {
        lens[i] = dbl;
        disps[i] = at;
        at += (MPI_Aint)(dbl + 1 + (i * 7 + seed) % 3) * 8;
    }
    for (int i = n - 1; i > 0; i--) {
        seed = seed * 1103515245u + 12345u;
        int j = (int)(seed % (unsigned)(i + 1));
        MPI_Aint d = disps[i];
        disps[i] = disps[j];
        disps[j] = d;
    }
    MPI_Datatype t;
    MUST(MPI_Type_create_hindexed(n, lens, disps, MPI_DOUBLE, &t));
    MUST(MPI_Type_commit(&t));
    free(lens);
    free(disps);
    return t;
}

static MPI_Datatype vector(int n, int dbl) {
    MPI_Datatype t;
    MUST(MPI_Type_vector(n, dbl, 2 * dbl, MPI_DOUBLE, &t));
    MUST(MPI_Type_commit(&t));
    return t;
}

/* What receiving `rn` of `rt` from rank `from` (who sent `sn` of `st`, pattern `tag`) must
 * leave in a sentinel-filled buffer of `rspan` bytes. */
static unsigned char *expected(MPI_Datatype rt, int rn, size_t rspan, int from, int tag,
                               MPI_Datatype st, int sn) {
    size_t sspan = (size_t)(sn * extent_of(st));
    int psize;
    MUST(MPI_Pack_size(sn, st, MPI_COMM_WORLD, &psize));
    unsigned char *src = alloc(sspan), *packed = alloc((size_t)psize), *want = alloc(rspan);
    pattern(src, sspan, from, tag);
    int pos = 0;
    MUST(MPI_Pack(src, sn, st, packed, psize, &pos, MPI_COMM_WORLD));
    int rsize;
    MUST(MPI_Pack_size(rn, rt, MPI_COMM_WORLD, &rsize));
    int in = 0;
    MUST(MPI_Unpack(packed, pos < rsize ? pos : rsize, &in, want, rn, rt, MPI_COMM_WORLD));
    free(src);
    free(packed);
    return want;
}

typedef struct {
    const char *name;
    MPI_Datatype st, rt;
    int sn, rn;
} Case;

enum { BLOCKING, SYNCHRONOUS, NONBLOCKING, SENDRECV, MODES };

static void run(Case c, int tag, int mode) {
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    size_t sspan = (size_t)(c.sn * extent_of(c.st)), rspan = (size_t)(c.rn * extent_of(c.rt));
    unsigned char *sbuf = alloc(sspan), *rbuf = alloc(rspan + 4096);
    pattern(sbuf, sspan, rank, tag);
    MPI_Status st;
    if (mode == NONBLOCKING) {
        MPI_Request r[2];
        MUST(MPI_Irecv(rbuf, c.rn, c.rt, prev, tag, MPI_COMM_WORLD, &r[0]));
        MUST(MPI_Isend(sbuf, c.sn, c.st, next, tag, MPI_COMM_WORLD, &r[1]));
        MPI_Status sts[2];
        MUST(MPI_Waitall(2, r, sts));
        st = sts[0];
    } else if (mode == SENDRECV) {
        MUST(MPI_Sendrecv(sbuf, c.sn, c.st, next, tag, rbuf, c.rn, c.rt, prev, tag, MPI_COMM_WORLD,
                          &st));
    } else if (rank % 2 == 0) {
        if (mode == SYNCHRONOUS)
            MUST(MPI_Ssend(sbuf, c.sn, c.st, next, tag, MPI_COMM_WORLD));
        else
            MUST(MPI_Send(sbuf, c.sn, c.st, next, tag, MPI_COMM_WORLD));
        MUST(MPI_Recv(rbuf, c.rn, c.rt, prev, tag, MPI_COMM_WORLD, &st));
    } else {
        MUST(MPI_Recv(rbuf, c.rn, c.rt, prev, tag, MPI_COMM_WORLD, &st));
        if (mode == SYNCHRONOUS)
            MUST(MPI_Ssend(sbuf, c.sn, c.st, next, tag, MPI_COMM_WORLD));
        else
            MUST(MPI_Send(sbuf, c.sn, c.st, next, tag, MPI_COMM_WORLD));
    }
    int count;
    MUST(MPI_Get_count(&st, c.rt, &count));
    CHECK(count == c.rn, "%s mode %d: count %d, want %d", c.name, mode, count, c.rn);
    unsigned char *want = expected(c.rt, c.rn, rspan, prev, tag, c.st, c.sn);
    for (size_t i = 0; i < rspan + 4096; i++) {
        unsigned char w = i < rspan ? want[i] : SENTINEL;
        CHECK(rbuf[i] == w, "%s mode %d: byte %zu is %#x, want %#x", c.name, mode, i, rbuf[i], w);
    }
    free(want);
    free(sbuf);
    free(rbuf);
}

/* A receive type holding less than the message: MPI_ERR_TRUNCATE; the received bytes are
 * the message's first ones or untouched, and nothing outside the type map changes. */
static void truncation(MPI_Datatype st, int sn, MPI_Datatype rt, int rn, int tag) {
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    size_t sspan = (size_t)(sn * extent_of(st)), rspan = (size_t)(rn * extent_of(rt));
    unsigned char *sbuf = alloc(sspan), *rbuf = alloc(rspan + 4096);
    pattern(sbuf, sspan, rank, tag);
    MPI_Request r[2];
    MUST(MPI_Irecv(rbuf, rn, rt, prev, tag, MPI_COMM_WORLD, &r[0]));
    MUST(MPI_Isend(sbuf, sn, st, next, tag, MPI_COMM_WORLD, &r[1]));
    MPI_Status sts[2];
    int rc = MPI_Waitall(2, r, sts);
    CHECK(rc == MPI_ERR_IN_STATUS, "truncation: Waitall returned %d", rc);
    int cls;
    MUST(MPI_Error_class(sts[0].MPI_ERROR, &cls));
    CHECK(cls == MPI_ERR_TRUNCATE, "truncation: class %d", cls);
    unsigned char *want = expected(rt, rn, rspan, prev, tag, st, sn);
    for (size_t i = 0; i < rspan + 4096; i++) {
        unsigned char w = i < rspan ? want[i] : SENTINEL;
        CHECK(rbuf[i] == w || rbuf[i] == SENTINEL, "truncation: byte %zu is %#x, want %#x", i,
              rbuf[i], w);
    }
    free(want);
    free(sbuf);
    free(rbuf);
}

int main(int argc, char **argv) {
    MUST(MPI_Init(&argc, &argv));
    MUST(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    MUST(MPI_Comm_size(MPI_COMM_WORLD, &size));
    MUST(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    MPI_Datatype v4k = vector(256, 512);        /* 1 MiB in 4 KiB blocks */
    MPI_Datatype h2k = shuffled(512, 256, 17);  /* 1 MiB in shuffled 2 KiB blocks */
    MPI_Datatype v64 = vector(8192, 8);         /* 512 KiB in 64-byte blocks */
    MPI_Datatype h1k = shuffled(512, 128, 5);   /* 512 KiB in shuffled 1 KiB blocks */
    MPI_Datatype h3k = shuffled(200, 384, 3);   /* 600 KiB in shuffled 3 KiB blocks */
    Case cases[] = {
        {"vector 4 KiB -> shuffled 2 KiB", v4k, h2k, 1, 1},
        {"doubles -> vector 4 KiB", MPI_DOUBLE, v4k, MIB / 8, 1},
        {"shuffled 2 KiB -> doubles", h2k, MPI_DOUBLE, 1, MIB / 8},
        {"64 B blocks -> shuffled 1 KiB", v64, h1k, 1, 1},
        {"two vectors -> two hindexed", v4k, h2k, 2, 2},
    };
    int ncases = (int)(sizeof cases / sizeof cases[0]);
    for (int k = 0; k < ncases; k++)
        for (int mode = 0; mode < MODES; mode++) run(cases[k], 10 * k + mode, mode);
    truncation(v4k, 1, h3k, 1, 900);
    truncation(v4k, 1, v64, 1, 901);
    MUST(MPI_Barrier(MPI_COMM_WORLD));
    MPI_Type_free(&v4k);
    MPI_Type_free(&h2k);
    MPI_Type_free(&v64);
    MPI_Type_free(&h1k);
    MPI_Type_free(&h3k);
    MUST(MPI_Finalize());
    return 0;
}
