/*
 * oxbench.c — the oxmpi benchmark suite against the standard MPI C API.
 *
 * One program, built with any MPI's mpicc, run with that MPI's launcher:
 *
 *     mpiexec -n 2 ./oxbench latency [--min SIZE] [--max SIZE] [--iters N] [--warmup N]
 *
 * Subcommands (argv[1]):
 *   latency    one-way latency of a ping-pong between ranks 0 and 1 (half the round trip), us
 *   bw         unidirectional bandwidth, rank 0 -> 1, windows of W nonblocking sends, MB/s
 *   bibw       bidirectional bandwidth, both ranks send a window at once, MB/s
 *   msgrate    aggregate message rate of np/2 pairs (rank i -> i+np/2), windows of W, msgs/s
 *   multi-bw   aggregate bandwidth of np/2 pairs between the two halves of the ranks, MB/s
 *   multi-lat  one-way latency while all np/2 pairs ping-pong at once (mean over pairs), us
 *   barrier    MPI_Barrier latency, us (printed as size 0)
 *   bcast reduce allreduce gather scatter allgather alltoall allreduce-init
 *              collective latency, us, averaged over ranks; SIZE is the bytes each rank
 *              contributes (reduce/allreduce: SIZE/4 ints summed); allreduce-init is the
 *              allreduce as one MPI_Allreduce_init request, each call an MPI_Start + MPI_Wait
 *   ddt-contig ddt-vector ddt-vector64k ddt-indexed ddt-struct
 *              ping-pong bandwidth of SIZE data bytes through one element of a derived type
 *              (ranks 0 and 1), MB/s; see "Derived datatypes" below for the types
 *   ddt-pack-vector ddt-pack-indexed ddt-pack-struct
 *              MPI_Pack + MPI_Unpack throughput of the same types, MB/s
 *   init       MPI_Init and MPI_Finalize only (start-up timing); with --report-mem it also
 *              reports memory per rank (see below)
 *
 * The method is that of the OSU micro-benchmarks: a barrier before each size, warm-up
 * iterations that are not timed, then many timed iterations; bandwidth keeps a window of 64
 * messages in flight and waits for a short acknowledgement after each window; collectives time
 * each call separately with a barrier (not timed) between calls. Without --iters/--warmup the
 * OSU defaults apply, with fewer iterations above 8 KiB. --iters/--warmup set the count for
 * every size. Sizes go in powers of two from --min to --max (SIZE accepts K, M, G suffixes).
 *
 * Output (rank 0, stdout), OSU style: one header line
 *     # oxbench <benchmark> np=<N>: <quantity> (<unit>)
 * then one line "SIZE VALUE" per size. MB means 10^6 bytes.
 *
 * Every benchmark checks its data: receive buffers are filled with the complement of the
 * expected bytes before the warm-up, and checked after the last timed iteration, so each size is
 * verified on data that really crossed. A mismatch prints "oxbench: verification failed: ..." on
 * stderr and aborts the job with a non-zero exit. The barrier, which carries no data, is checked
 * for its one promise: rank 0 creates a marker file just before entering it, and every rank on
 * rank 0's host checks right after leaving that the file exists.
 *
 * init --report-mem, after an all-to-all that connects every pair of ranks, prints
 *     vmhwm-max-kB V      largest peak resident set (VmHWM) of any rank
 *     vmhwm-mean-kB V     mean VmHWM over ranks
 *     shm-mapped-per-rank-kB V
 *                         distinct shared mappings (MAP_SHARED: /dev/shm files, SysV segments,
 *                         memfd, shared files) of all ranks, each segment counted once by its
 *                         device and inode at its largest mapped extent, divided by np
 *     rss-shmem-mean-kB V mean RssShmem (shared-memory pages resident in each rank)
 *
 * Only the standard MPI C API is used; nothing here is specific to one implementation.
 */
#define _POSIX_C_SOURCE 200809L

#include <mpi.h>

#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* OSU defaults. */
#define LARGE_MESSAGE_SIZE 8192
#define LAT_ITERS 10000
#define LAT_WARMUP 100
#define LAT_ITERS_LARGE 1000
#define LAT_WARMUP_LARGE 10
#define BW_ITERS 100
#define BW_WARMUP 10
#define BW_ITERS_LARGE 20
#define BW_WARMUP_LARGE 2
#define COLL_ITERS 1000
#define COLL_WARMUP 100
#define COLL_ITERS_LARGE 100
#define COLL_WARMUP_LARGE 10
#define DEFAULT_WINDOW 64
#define MAX_WINDOW 1024

#define TAG_DATA 1
#define TAG_ACK 2

enum iter_class { ITERS_LAT, ITERS_BW, ITERS_COLL };

struct options {
    size_t min, max;
    long iters, warmup; /* -1: OSU default for the size */
    int window;
    int report_mem;
};

struct ctx {
    const char *name;
    int rank, np;
    struct options opt;
};

/* ------------------------------------------------------------------------------------------ */
/* Failure reporting                                                                          */

static void sleep_ms(long ms);
static void fail(const struct ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void fail(const struct ctx *c, const char *fmt, ...)
{
    /* One write for the whole line: stderr is unbuffered, and the abort that follows may end
     * the job before a launcher forwards a line that arrived in pieces. */
    char line[1024];
    va_list ap;
    int n = snprintf(line, sizeof line, "oxbench: %s: rank %d: ", c->name, c->rank);
    if (n < 0 || n >= (int)sizeof line)
        n = 0;
    va_start(ap, fmt);
    int m = vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
    va_end(ap);
    size_t len = m < 0 ? (size_t)n : strlen(line);
    if (len > sizeof line - 2)
        len = sizeof line - 2;
    line[len] = '\n';
    fwrite(line, 1, len + 1, stderr);
    fflush(stderr);
    sleep_ms(200); /* launchers forward output asynchronously; an abort can outrun it */
    MPI_Abort(MPI_COMM_WORLD, 3);
    exit(3);
}

static void *xalloc(const struct ctx *c, size_t bytes)
{
    void *p = NULL;
    if (bytes == 0)
        bytes = 1;
    if (posix_memalign(&p, 4096, bytes) != 0)
        fail(c, "cannot allocate %zu bytes", bytes);
    memset(p, 0, bytes);
    return p;
}

/* ------------------------------------------------------------------------------------------ */
/* Payload patterns                                                                           */

static uint64_t mix(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 27;
    x *= 0x94D049BB133111EBull;
    x ^= x >> 31;
    return x;
}

/* A seed naming one message: which benchmark size, which sender, which receiver. */
static uint64_t seed_of(size_t size, int src, int dst)
{
    return mix(((uint64_t)size << 24) ^ ((uint64_t)(unsigned)src << 12) ^ (uint64_t)(unsigned)dst);
}

static uint8_t pattern_byte(uint64_t seed, size_t i)
{
    return (uint8_t)(mix(seed + (uint64_t)i * 0x9E3779B97F4A7C15ull) >> 56);
}

static void fill(uint8_t *buf, size_t n, uint64_t seed)
{
    for (size_t i = 0; i < n; i++)
        buf[i] = pattern_byte(seed, i);
}

/* Fill with the complement of the pattern, so that no byte matches before the data arrives. */
static void poison(uint8_t *buf, size_t n, uint64_t seed)
{
    for (size_t i = 0; i < n; i++)
        buf[i] = (uint8_t)~pattern_byte(seed, i);
}

static void check(const struct ctx *c, const uint8_t *buf, size_t n, uint64_t seed, size_t size,
                  int src)
{
    for (size_t i = 0; i < n; i++) {
        uint8_t want = pattern_byte(seed, i);
        if (buf[i] != want)
            fail(c,
                 "verification failed: size %zu, data from rank %d, byte %zu: expected 0x%02x, "
                 "got 0x%02x",
                 size, src, i, want, buf[i]);
    }
}

/* Values summed by reduce/allreduce: small enough that no sum overflows. */
static int32_t reduce_value(size_t size, size_t i, int rank)
{
    return (int32_t)(mix(((uint64_t)size << 32) ^ i) & 0xffff) + 7 * rank;
}

static int32_t reduce_expected(size_t size, size_t i, int np)
{
    return (int32_t)(mix(((uint64_t)size << 32) ^ i) & 0xffff) * np + 7 * (np * (np - 1) / 2);
}

/* ------------------------------------------------------------------------------------------ */
/* Options                                                                                    */

static int parse_size(const char *s, size_t *out)
{
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno != 0 || end == s || s[0] == '-')
        return -1;
    unsigned shift = 0;
    if (*end == 'K' || *end == 'k')
        shift = 10, end++;
    else if (*end == 'M' || *end == 'm')
        shift = 20, end++;
    else if (*end == 'G' || *end == 'g')
        shift = 30, end++;
    if (*end != '\0' || v > (SIZE_MAX >> shift))
        return -1;
    *out = (size_t)(v << shift);
    return 0;
}

static int parse_count(const char *s, long lo, long hi, long *out)
{
    char *end = NULL;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

static const char *const usage =
    "usage: oxbench BENCHMARK [--min SIZE] [--max SIZE] [--iters N] [--warmup N] [--window W]\n"
    "       oxbench init [--report-mem]\n"
    "benchmarks: latency latency-fresh bw bibw msgrate multi-bw multi-lat barrier bcast reduce\n"
    "            allreduce"
    " gather scatter allgather alltoall allreduce-init put_latency get_latency\n"
    "            put_bw get_bw acc_latency fop_counter ddt-contig ddt-vector ddt-vector64k\n"
    "            ddt-indexed ddt-struct ddt-pack-vector ddt-pack-indexed ddt-pack-struct init\n";

/* Returns NULL on success, or a message naming the bad argument. */
static const char *parse_options(int argc, char **argv, struct options *o)
{
    static char msg[256];
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        long n = 0;
        if (strcmp(a, "--report-mem") == 0) {
            o->report_mem = 1;
            continue;
        }
        if (v == NULL) {
            snprintf(msg, sizeof msg, "option '%s' is unknown or lacks a value", a);
            return msg;
        }
        if (strcmp(a, "--min") == 0) {
            if (parse_size(v, &o->min) != 0)
                goto bad;
        } else if (strcmp(a, "--max") == 0) {
            if (parse_size(v, &o->max) != 0)
                goto bad;
        } else if (strcmp(a, "--iters") == 0) {
            if (parse_count(v, 1, 1L << 30, &n) != 0)
                goto bad;
            o->iters = n;
        } else if (strcmp(a, "--warmup") == 0) {
            if (parse_count(v, 0, 1L << 30, &n) != 0)
                goto bad;
            o->warmup = n;
        } else if (strcmp(a, "--window") == 0) {
            if (parse_count(v, 1, MAX_WINDOW, &n) != 0)
                goto bad;
            o->window = (int)n;
        } else {
            snprintf(msg, sizeof msg, "unknown option '%s'", a);
            return msg;
        }
        i++;
        continue;
    bad:
        snprintf(msg, sizeof msg, "bad value '%s' for %s", v, a);
        return msg;
    }
    if (o->min > o->max) {
        snprintf(msg, sizeof msg, "--min %zu is larger than --max %zu", o->min, o->max);
        return msg;
    }
    return NULL;
}

static long iters_for(const struct ctx *c, enum iter_class k, size_t size)
{
    int large = size > LARGE_MESSAGE_SIZE;
    if (c->opt.iters > 0)
        return c->opt.iters;
    switch (k) {
    case ITERS_LAT: return large ? LAT_ITERS_LARGE : LAT_ITERS;
    case ITERS_BW: return large ? BW_ITERS_LARGE : BW_ITERS;
    case ITERS_COLL: return large ? COLL_ITERS_LARGE : COLL_ITERS;
    }
    return 1;
}

static long warmup_for(const struct ctx *c, enum iter_class k, size_t size)
{
    int large = size > LARGE_MESSAGE_SIZE;
    if (c->opt.warmup >= 0)
        return c->opt.warmup;
    switch (k) {
    case ITERS_LAT: return large ? LAT_WARMUP_LARGE : LAT_WARMUP;
    case ITERS_BW: return large ? BW_WARMUP_LARGE : BW_WARMUP;
    case ITERS_COLL: return large ? COLL_WARMUP_LARGE : COLL_WARMUP;
    }
    return 0;
}

static size_t next_size(size_t s)
{
    return s == 0 ? 1 : s * 2;
}

static int mpi_count(const struct ctx *c, size_t n)
{
    if (n > (size_t)INT32_MAX)
        fail(c, "size %zu exceeds the MPI int count range", n);
    return (int)n;
}

static void header(const struct ctx *c, const char *quantity, const char *unit)
{
    if (c->rank == 0) {
        printf("# oxbench %s np=%d: %s (%s)\n", c->name, c->np, quantity, unit);
        fflush(stdout);
    }
}

static void row(const struct ctx *c, size_t size, double value)
{
    if (c->rank == 0) {
        printf("%-10zu %.3f\n", size, value);
        fflush(stdout);
    }
}

static void require_np(const struct ctx *c, int exactly, int even)
{
    if ((exactly > 0 && c->np != exactly) || (even && (c->np < 2 || c->np % 2 != 0))) {
        if (c->rank == 0) {
            if (exactly > 0)
                fprintf(stderr, "oxbench: %s needs exactly %d ranks, got %d\n", c->name, exactly,
                        c->np);
            else
                fprintf(stderr, "oxbench: %s needs an even number of ranks, got %d\n", c->name,
                        c->np);
        }
        MPI_Finalize();
        exit(2);
    }
}

/* ------------------------------------------------------------------------------------------ */
/* Point-to-point                                                                             */

/* Ping-pong between `me` and `peer`; the lower rank starts. Returns the one-way latency (us).
 * With `src`, each rank copies its message from `src` into `sbuf` before every send, as a
 * program sending newly computed data writes it first (the copy is timed too). */
static double pingpong(const struct ctx *c, int peer, size_t size, uint8_t *sbuf, uint8_t *rbuf,
                       uint8_t *src)
{
    long iters = iters_for(c, ITERS_LAT, size), warmup = warmup_for(c, ITERS_LAT, size);
    int n = mpi_count(c, size);
    int first = c->rank < peer;
    uint64_t out_seed = seed_of(size, c->rank, peer), in_seed = seed_of(size, peer, c->rank);
    double t0 = 0.0;

    fill(src ? src : sbuf, size, out_seed);
    poison(rbuf, size, in_seed);
    MPI_Barrier(MPI_COMM_WORLD);
    for (long i = 0; i < warmup + iters; i++) {
        if (i == warmup)
            t0 = MPI_Wtime();
        if (first) {
            if (src)
                memcpy(sbuf, src, size);
            MPI_Send(sbuf, n, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD);
            MPI_Recv(rbuf, n, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(rbuf, n, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            if (src)
                memcpy(sbuf, src, size);
            MPI_Send(sbuf, n, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD);
        }
    }
    double t = MPI_Wtime() - t0;
    check(c, rbuf, size, in_seed, size, peer);
    return t * 1e6 / (2.0 * (double)iters);
}

static void bench_latency(const struct ctx *c, int multi, int fresh)
{
    if (multi)
        require_np(c, 0, 1);
    else
        require_np(c, 2, 0);
    int pairs = c->np / 2;
    int peer = c->rank < pairs ? c->rank + pairs : c->rank - pairs;
    uint8_t *sbuf = xalloc(c, c->opt.max), *rbuf = xalloc(c, c->opt.max);
    uint8_t *src = fresh ? xalloc(c, c->opt.max) : NULL;

    header(c,
           multi   ? "one-way latency, mean over pairs"
           : fresh ? "one-way latency, each send of newly written data (its copy timed too)"
                   : "one-way latency",
           "us");
    for (size_t size = c->opt.min; size <= c->opt.max; size = next_size(size)) {
        double lat = pingpong(c, peer, size, sbuf, rbuf, src);
        double mine = c->rank < pairs ? lat : 0.0, sum = 0.0;
        MPI_Reduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        row(c, size, sum / pairs);
    }
    free(sbuf);
    free(rbuf);
    free(src);
}

/* One window-streaming run from the lower half to the upper half (and back if `bidir`).
 * Returns this rank's elapsed time in seconds for the timed iterations. */
static double stream(const struct ctx *c, size_t size, int bidir, uint8_t *sbuf, uint8_t *rbuf,
                     MPI_Request *reqs)
{
    long iters = iters_for(c, ITERS_BW, size), warmup = warmup_for(c, ITERS_BW, size);
    int n = mpi_count(c, size), w = c->opt.window;
    int pairs = c->np / 2, sender = c->rank < pairs;
    int peer = sender ? c->rank + pairs : c->rank - pairs;
    uint64_t out_seed = seed_of(size, c->rank, peer), in_seed = seed_of(size, peer, c->rank);
    int ack = 0;
    double t0 = 0.0;

    fill(sbuf, size, out_seed);
    poison(rbuf, size, in_seed);
    MPI_Barrier(MPI_COMM_WORLD);
    for (long i = 0; i < warmup + iters; i++) {
        if (i == warmup)
            t0 = MPI_Wtime();
        if (bidir) {
            /* As in OSU bibw: every message of a window lands in the same receive buffer;
             * all of them carry identical bytes. */
            for (int j = 0; j < w; j++)
                MPI_Irecv(rbuf, n, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD, &reqs[j]);
            for (int j = 0; j < w; j++)
                MPI_Isend(sbuf, n, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD, &reqs[w + j]);
            MPI_Waitall(2 * w, reqs, MPI_STATUSES_IGNORE);
        } else if (sender) {
            for (int j = 0; j < w; j++)
                MPI_Isend(sbuf, n, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD, &reqs[j]);
            MPI_Waitall(w, reqs, MPI_STATUSES_IGNORE);
            MPI_Recv(&ack, 1, MPI_INT, peer, TAG_ACK, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            for (int j = 0; j < w; j++)
                MPI_Irecv(rbuf, n, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD, &reqs[j]);
            MPI_Waitall(w, reqs, MPI_STATUSES_IGNORE);
            ack = (int)i;
            MPI_Send(&ack, 1, MPI_INT, peer, TAG_ACK, MPI_COMM_WORLD);
        }
    }
    double t = MPI_Wtime() - t0;
    if (bidir || !sender)
        check(c, rbuf, size, in_seed, size, peer);
    return t;
}

enum bw_kind { BW_UNI, BW_BI, BW_RATE, BW_MULTI };

static void bench_bw(const struct ctx *c, enum bw_kind kind)
{
    if (kind == BW_UNI || kind == BW_BI)
        require_np(c, 2, 0);
    else
        require_np(c, 0, 1);
    int pairs = c->np / 2, w = c->opt.window;
    uint8_t *sbuf = xalloc(c, c->opt.max), *rbuf = xalloc(c, c->opt.max);
    MPI_Request *reqs = xalloc(c, sizeof(MPI_Request) * 2 * (size_t)w);

    switch (kind) {
    case BW_UNI: header(c, "bandwidth", "MB/s"); break;
    case BW_BI: header(c, "bidirectional bandwidth", "MB/s"); break;
    case BW_RATE: header(c, "aggregate message rate of np/2 pairs", "messages/s"); break;
    case BW_MULTI: header(c, "aggregate bandwidth of np/2 pairs", "MB/s"); break;
    }
    for (size_t size = c->opt.min; size <= c->opt.max; size = next_size(size)) {
        double t = stream(c, size, kind == BW_BI, sbuf, rbuf, reqs);
        double iters = (double)iters_for(c, ITERS_BW, size);
        double mine = c->rank < pairs ? t : 0.0, sum = 0.0;
        MPI_Reduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        double mean_t = sum / pairs; /* mean sender time, as OSU mbw_mr */
        double msgs = (double)pairs * iters * w * (kind == BW_BI ? 2.0 : 1.0);
        double value = kind == BW_RATE ? msgs / mean_t : msgs * (double)size / 1e6 / mean_t;
        row(c, size, value);
    }
    free(sbuf);
    free(rbuf);
    free(reqs);
}

/* ------------------------------------------------------------------------------------------ */
/* Collectives                                                                                */

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* Checks the barrier's one promise, no rank leaves before every rank has entered (see the
 * header comment). Ranks on other hosts than rank 0 cannot see its file and skip the check. */
static void verify_barrier(const struct ctx *c)
{
    char path[128] = {0}, host[MPI_MAX_PROCESSOR_NAME + 1] = {0},
         root_host[MPI_MAX_PROCESSOR_NAME + 1] = {0};
    int len = 0;
    MPI_Get_processor_name(host, &len);
    if (c->rank == 0) {
        memcpy(root_host, host, sizeof root_host);
        /* A name no other run uses (pid and clock); creating it below with O_EXCL proves it. */
        struct timespec now;
        clock_gettime(CLOCK_REALTIME, &now);
        snprintf(path, sizeof path, "/tmp/oxbench-barrier-%ld-%lld-%ld", (long)getpid(),
                 (long long)now.tv_sec, now.tv_nsec);
    }
    MPI_Bcast(path, (int)sizeof path, MPI_CHAR, 0, MPI_COMM_WORLD);
    MPI_Bcast(root_host, (int)sizeof root_host, MPI_CHAR, 0, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    if (c->rank == 0) {
        sleep_ms(20); /* let a barrier that does not wait show itself */
        int fd = open(path, O_CREAT | O_EXCL | O_WRONLY, 0600);
        if (fd < 0)
            fail(c, "cannot create marker file %s: %s", path, strerror(errno));
        close(fd);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (c->rank != 0 && strcmp(host, root_host) == 0 && access(path, F_OK) != 0)
        fail(c, "verification failed: left MPI_Barrier before rank 0 entered it");
    MPI_Barrier(MPI_COMM_WORLD);
    if (c->rank == 0)
        unlink(path);
}

/* Mean over ranks of each rank's mean time per call, in us. */
static double mean_over_ranks(double seconds_total, long iters)
{
    double mine = seconds_total * 1e6 / (double)iters, sum = 0.0;
    int np = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    MPI_Reduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    return sum / np;
}

static void bench_barrier(const struct ctx *c)
{
    long iters = iters_for(c, ITERS_COLL, 0), warmup = warmup_for(c, ITERS_COLL, 0);
    double t0 = 0.0;
    header(c, "barrier latency, mean over ranks", "us");
    verify_barrier(c);
    MPI_Barrier(MPI_COMM_WORLD);
    for (long i = 0; i < warmup + iters; i++) {
        if (i == warmup)
            t0 = MPI_Wtime();
        MPI_Barrier(MPI_COMM_WORLD);
    }
    row(c, 0, mean_over_ranks(MPI_Wtime() - t0, iters));
}

/* C_ALLREDUCE_INIT: the allreduce as a persistent request (MPI-4 MPI_Allreduce_init), made
 * once per size; each timed call is one MPI_Start and MPI_Wait. */
enum coll {
    C_BCAST,
    C_REDUCE,
    C_ALLREDUCE,
    C_GATHER,
    C_SCATTER,
    C_ALLGATHER,
    C_ALLTOALL,
    C_ALLREDUCE_INIT
};

static int is_reduction(enum coll k)
{
    return k == C_REDUCE || k == C_ALLREDUCE || k == C_ALLREDUCE_INIT;
}

struct coll_bufs {
    uint8_t *s, *r;
};

/* Prepares the send data and poisons what each rank is to receive. */
static void coll_prepare(const struct ctx *c, enum coll k, size_t size, struct coll_bufs *b)
{
    int me = c->rank, np = c->np;
    size_t ints = size / sizeof(int32_t);
    switch (k) {
    case C_BCAST:
        if (me == 0)
            fill(b->s, size, seed_of(size, 0, -1));
        else
            poison(b->s, size, seed_of(size, 0, -1));
        break;
    case C_REDUCE:
    case C_ALLREDUCE:
    case C_ALLREDUCE_INIT: {
        int32_t *s = (int32_t *)(void *)b->s, *r = (int32_t *)(void *)b->r;
        for (size_t i = 0; i < ints; i++) {
            s[i] = reduce_value(size, i, me);
            r[i] = -1;
        }
        break;
    }
    case C_GATHER:
    case C_ALLGATHER:
        fill(b->s, size, seed_of(size, me, -1));
        if (me == 0 || k == C_ALLGATHER)
            for (int j = 0; j < np; j++)
                poison(b->r + (size_t)j * size, size, seed_of(size, j, -1));
        break;
    case C_SCATTER:
        if (me == 0)
            for (int j = 0; j < np; j++)
                fill(b->s + (size_t)j * size, size, seed_of(size, 0, j));
        poison(b->r, size, seed_of(size, 0, me));
        break;
    case C_ALLTOALL:
        for (int j = 0; j < np; j++) {
            fill(b->s + (size_t)j * size, size, seed_of(size, me, j));
            poison(b->r + (size_t)j * size, size, seed_of(size, j, me));
        }
        break;
    }
}

static void coll_check(const struct ctx *c, enum coll k, size_t size, const struct coll_bufs *b)
{
    int me = c->rank, np = c->np;
    size_t ints = size / sizeof(int32_t);
    switch (k) {
    case C_BCAST:
        check(c, b->s, size, seed_of(size, 0, -1), size, 0);
        break;
    case C_REDUCE:
    case C_ALLREDUCE:
    case C_ALLREDUCE_INIT:
        if (me == 0 || k != C_REDUCE) {
            const int32_t *r = (const int32_t *)(const void *)b->r;
            for (size_t i = 0; i < ints; i++)
                if (r[i] != reduce_expected(size, i, np))
                    fail(c,
                         "verification failed: size %zu, element %zu: expected %" PRId32
                         ", got %" PRId32,
                         size, i, reduce_expected(size, i, np), r[i]);
        }
        break;
    case C_GATHER:
    case C_ALLGATHER:
        if (me == 0 || k == C_ALLGATHER)
            for (int j = 0; j < np; j++)
                check(c, b->r + (size_t)j * size, size, seed_of(size, j, -1), size, j);
        break;
    case C_SCATTER:
        check(c, b->r, size, seed_of(size, 0, me), size, 0);
        break;
    case C_ALLTOALL:
        for (int j = 0; j < np; j++)
            check(c, b->r + (size_t)j * size, size, seed_of(size, j, me), size, j);
        break;
    }
}

static void coll_call(const struct ctx *c, enum coll k, size_t size, struct coll_bufs *b,
                      MPI_Request *persistent)
{
    int n = mpi_count(c, size);
    MPI_Comm w = MPI_COMM_WORLD;
    switch (k) {
    case C_ALLREDUCE_INIT:
        MPI_Start(persistent);
        MPI_Wait(persistent, MPI_STATUS_IGNORE);
        break;
    case C_BCAST: MPI_Bcast(b->s, n, MPI_BYTE, 0, w); break;
    case C_REDUCE:
        MPI_Reduce(b->s, b->r, n / 4, MPI_INT32_T, MPI_SUM, 0, w);
        break;
    case C_ALLREDUCE: MPI_Allreduce(b->s, b->r, n / 4, MPI_INT32_T, MPI_SUM, w); break;
    case C_GATHER: MPI_Gather(b->s, n, MPI_BYTE, b->r, n, MPI_BYTE, 0, w); break;
    case C_SCATTER: MPI_Scatter(b->s, n, MPI_BYTE, b->r, n, MPI_BYTE, 0, w); break;
    case C_ALLGATHER: MPI_Allgather(b->s, n, MPI_BYTE, b->r, n, MPI_BYTE, w); break;
    case C_ALLTOALL: MPI_Alltoall(b->s, n, MPI_BYTE, b->r, n, MPI_BYTE, w); break;
    }
}

static void bench_coll(const struct ctx *c, enum coll k)
{
    static const char *const what[] = {
        "bcast latency", "reduce latency (int32 sum)", "allreduce latency (int32 sum)",
        "gather latency", "scatter latency", "allgather latency", "alltoall latency",
        "persistent allreduce latency (int32 sum; MPI_Start + MPI_Wait)"};
    size_t min = c->opt.min;
    if (is_reduction(k) && min < sizeof(int32_t))
        min = sizeof(int32_t); /* at least one int */
    /* Rooted and all-to-all collectives use np blocks on some side. */
    size_t blocks = (k == C_BCAST || is_reduction(k)) ? 1 : (size_t)c->np;
    if (c->opt.max > SIZE_MAX / blocks)
        fail(c, "--max %zu is too large for %d ranks", c->opt.max, c->np);
    struct coll_bufs b = {xalloc(c, c->opt.max * blocks), xalloc(c, c->opt.max * blocks)};

    header(c, what[k], "us");
    for (size_t size = min; size <= c->opt.max; size = next_size(size)) {
        long iters = iters_for(c, ITERS_COLL, size), warmup = warmup_for(c, ITERS_COLL, size);
        double total = 0.0;
        MPI_Request persistent = MPI_REQUEST_NULL;
        coll_prepare(c, k, size, &b);
        if (k == C_ALLREDUCE_INIT) {
#if MPI_VERSION >= 4 || (defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION >= 5)
            /* Open MPI 5 has the MPI-4 persistent collectives while reporting MPI 3.1. */
            MPI_Allreduce_init(b.s, b.r, mpi_count(c, size) / 4, MPI_INT32_T, MPI_SUM,
                               MPI_COMM_WORLD, MPI_INFO_NULL, &persistent);
#else
            fail(c, "allreduce-init needs MPI_Allreduce_init (MPI 4), this MPI is %d.%d",
                 MPI_VERSION, MPI_SUBVERSION);
#endif
        }
        MPI_Barrier(MPI_COMM_WORLD);
        for (long i = 0; i < warmup + iters; i++) {
            double t0 = MPI_Wtime();
            coll_call(c, k, size, &b, &persistent);
            double t = MPI_Wtime() - t0;
            if (i >= warmup)
                total += t;
            MPI_Barrier(MPI_COMM_WORLD);
        }
        if (persistent != MPI_REQUEST_NULL)
            MPI_Request_free(&persistent);
        coll_check(c, k, size, &b);
        row(c, size, mean_over_ranks(total, iters));
    }
    free(b.s);
    free(b.r);
}

/* ------------------------------------------------------------------------------------------ */
/* Start-up and memory                                                                        */

/* Reads a "Key:   N kB" line of /proc/self/status; -1 if absent. */
static long status_kb(const char *key)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long v = -1;
    size_t klen = strlen(key);
    if (f == NULL)
        return -1;
    while (fgets(line, sizeof line, f) != NULL)
        if (strncmp(line, key, klen) == 0 && line[klen] == ':') {
            v = strtol(line + klen + 1, NULL, 10);
            break;
        }
    fclose(f);
    return v;
}

#define MAX_SEGMENTS 4096

/* One shared mapping: device, inode and the largest file extent mapped. */
struct segment {
    unsigned long long dev, inode, extent;
};

static int cmp_segment(const void *a, const void *b)
{
    const struct segment *x = a, *y = b;
    if (x->dev != y->dev)
        return x->dev < y->dev ? -1 : 1;
    if (x->inode != y->inode)
        return x->inode < y->inode ? -1 : 1;
    return 0;
}

/* Lists this process's shared (MAP_SHARED) mappings from /proc/self/maps. */
static int shared_segments(struct segment *out, int cap)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[4096];
    int n = 0;
    if (f == NULL)
        return 0;
    while (fgets(line, sizeof line, f) != NULL && n < cap) {
        unsigned long long start, end, offset, inode;
        unsigned major, minor;
        char perms[8];
        if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu", &start, &end, perms, &offset, &major,
                   &minor, &inode) != 7)
            continue;
        if (perms[3] != 's')
            continue;
        out[n].dev = ((unsigned long long)major << 32) | minor;
        out[n].inode = inode;
        out[n].extent = offset + (end - start);
        n++;
    }
    fclose(f);
    return n;
}

static void report_mem(const struct ctx *c)
{
    /* Connect every pair, so that lazily created per-pair resources exist. */
    int *s = xalloc(c, sizeof(int) * (size_t)c->np), *r = xalloc(c, sizeof(int) * (size_t)c->np);
    for (int j = 0; j < c->np; j++)
        s[j] = c->rank * c->np + j;
    MPI_Alltoall(s, 1, MPI_INT, r, 1, MPI_INT, MPI_COMM_WORLD);
    for (int j = 0; j < c->np; j++)
        if (r[j] != j * c->np + c->rank)
            fail(c, "verification failed: alltoall from rank %d delivered %d", j, r[j]);
    MPI_Barrier(MPI_COMM_WORLD);

    double mine[2] = {(double)status_kb("VmHWM"), (double)status_kb("RssShmem")};
    double sum[2] = {0, 0}, max_hwm = 0;
    MPI_Reduce(mine, sum, 2, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&mine[0], &max_hwm, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);

    struct segment *seg = xalloc(c, sizeof(struct segment) * MAX_SEGMENTS);
    int nseg = shared_segments(seg, MAX_SEGMENTS);
    int *counts = NULL, *displs = NULL, total = 0;
    struct segment *all = NULL;
    if (c->rank == 0) {
        counts = xalloc(c, sizeof(int) * (size_t)c->np);
        displs = xalloc(c, sizeof(int) * (size_t)c->np);
    }
    int nwords = nseg * 3;
    MPI_Gather(&nwords, 1, MPI_INT, counts, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (c->rank == 0) {
        for (int j = 0; j < c->np; j++) {
            displs[j] = total;
            total += counts[j];
        }
        all = xalloc(c, sizeof(unsigned long long) * (size_t)total);
    }
    MPI_Gatherv(seg, nwords, MPI_UNSIGNED_LONG_LONG, all, counts, displs,
                MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);
    if (c->rank == 0) {
        int n = total / 3;
        unsigned long long bytes = 0;
        qsort(all, (size_t)n, sizeof *all, cmp_segment);
        for (int i = 0; i < n;) {
            unsigned long long extent = all[i].extent;
            int j = i + 1;
            for (; j < n && cmp_segment(&all[i], &all[j]) == 0; j++)
                if (all[j].extent > extent)
                    extent = all[j].extent;
            bytes += extent;
            i = j;
        }
        printf("# oxbench init np=%d: memory per rank (kB)\n", c->np);
        printf("vmhwm-max-kB %.0f\n", max_hwm);
        printf("vmhwm-mean-kB %.1f\n", sum[0] / c->np);
        printf("shm-mapped-per-rank-kB %.1f\n", (double)bytes / 1024.0 / c->np);
        printf("rss-shmem-mean-kB %.1f\n", sum[1] / c->np);
        fflush(stdout);
        free(all);
        free(counts);
        free(displs);
    }
    free(seg);
    free(s);
    free(r);
}

/* ------------------------------------------------------------------------------------------ */
/* One-sided                                                                                  */

enum rma_kind { RMA_PUT, RMA_GET, RMA_ACC };

/* Rank 0 puts to, gets from or accumulates into rank 1's window inside one lock_all epoch,
 * flushing after every operation (latency) or every window of `w` operations (bandwidth). */
static void bench_rma(const struct ctx *c, enum rma_kind kind, int bw)
{
    require_np(c, 2, 0);
    size_t cap = c->opt.max < 8 ? 8 : c->opt.max;
    uint8_t *local = xalloc(c, cap), *base = NULL;
    int32_t *ones = xalloc(c, cap);
    MPI_Win win;
    MPI_Win_allocate((MPI_Aint)cap, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
    for (size_t i = 0; i < cap / 4; i++)
        ones[i] = 1;
    int w = bw ? c->opt.window : 1;
    enum iter_class k = bw ? ITERS_BW : ITERS_LAT;

    header(c,
           kind == RMA_PUT ? (bw ? "put bandwidth" : "put latency")
           : kind == RMA_GET ? (bw ? "get bandwidth" : "get latency")
                             : "accumulate latency (int32 sum)",
           bw ? "MB/s" : "us");
    size_t min = c->opt.min;
    if (kind == RMA_ACC && min < sizeof(int32_t))
        min = sizeof(int32_t); /* at least one int */
    for (size_t size = min; size <= c->opt.max; size = next_size(size)) {
        long iters = iters_for(c, k, size), warmup = warmup_for(c, k, size);
        int n = mpi_count(c, size);
        uint64_t seed = seed_of(size, 0, 1);
        if (c->rank == 0) {
            if (kind == RMA_GET)
                poison(local, size, seed);
            else
                fill(local, size, seed);
        } else if (kind == RMA_GET) {
            fill(base, size, seed);
        } else {
            memset(base, 0, size);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        double t = 0.0;
        if (c->rank == 0) {
            double t0 = 0.0;
            MPI_Win_lock_all(0, win);
            for (long i = 0; i < warmup + iters; i++) {
                if (i == warmup)
                    t0 = MPI_Wtime();
                for (int j = 0; j < w; j++) {
                    if (kind == RMA_PUT)
                        MPI_Put(local, n, MPI_BYTE, 1, 0, n, MPI_BYTE, win);
                    else if (kind == RMA_GET)
                        MPI_Get(local, n, MPI_BYTE, 1, 0, n, MPI_BYTE, win);
                    else
                        MPI_Accumulate(ones, n / 4, MPI_INT32_T, 1, 0, n / 4, MPI_INT32_T, MPI_SUM,
                                       win);
                }
                MPI_Win_flush(1, win);
            }
            t = MPI_Wtime() - t0;
            MPI_Win_unlock_all(win);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        if (c->rank == 0 && kind == RMA_GET)
            check(c, local, size, seed, size, 1);
        if (c->rank == 1 && kind == RMA_PUT)
            check(c, base, size, seed, size, 0);
        if (c->rank == 1 && kind == RMA_ACC) {
            for (size_t i = 0; i < size / 4; i++) {
                int32_t v;
                memcpy(&v, base + 4 * i, 4);
                if (v != (int32_t)(warmup + iters))
                    fail(c, "verification failed: size %zu: accumulated element %zu is %d, not %ld",
                         size, i, (int)v, warmup + iters);
            }
        }
        row(c, size, bw ? (double)size * w * (double)iters / 1e6 / t : t * 1e6 / (double)iters);
    }
    MPI_Win_free(&win);
    free(local);
    free(ones);
}

/* Every rank increments one int64 counter on rank 0 with MPI_Fetch_and_op; the figure is the
 * time per increment, mean over ranks. */
static void bench_fop_counter(const struct ctx *c)
{
    int64_t *base = NULL;
    MPI_Win win;
    MPI_Win_allocate(sizeof(int64_t), sizeof(int64_t), MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
    *base = 0;
    long iters = iters_for(c, ITERS_LAT, 8), warmup = warmup_for(c, ITERS_LAT, 8);
    header(c, "contended counter: MPI_Fetch_and_op on rank 0 from every rank, time per increment",
           "us");
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock_all(0, win);
    double t0 = 0.0;
    int64_t last = -1, one = 1, old = 0;
    for (long i = 0; i < warmup + iters; i++) {
        if (i == warmup)
            t0 = MPI_Wtime();
        MPI_Fetch_and_op(&one, &old, MPI_INT64_T, 0, 0, MPI_SUM, win);
        MPI_Win_flush(0, win);
        if (old <= last)
            fail(c, "verification failed: the counter went from %lld back to %lld",
                 (long long)last, (long long)old);
        last = old;
    }
    double t = MPI_Wtime() - t0;
    MPI_Win_unlock_all(win);
    MPI_Barrier(MPI_COMM_WORLD);
    if (c->rank == 0) {
        int64_t total = 0;
        MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
        MPI_Get(&total, 1, MPI_INT64_T, 0, 0, 1, MPI_INT64_T, win);
        MPI_Win_unlock(0, win);
        if (total != (int64_t)c->np * (warmup + iters))
            fail(c, "verification failed: the counter is %lld, not %lld", (long long)total,
                 (long long)c->np * (warmup + iters));
    }
    double mine = t * 1e6 / (double)iters, sum = 0.0;
    MPI_Reduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    row(c, 0, sum / c->np);
    MPI_Win_free(&win);
}

/* ------------------------------------------------------------------------------------------ */
/* Derived datatypes                                                                          */

/* The ddt-* benchmarks move SIZE data bytes (n = SIZE/8 doubles, or SIZE/16 structs) through
 * one element of a derived type, the same type on both sides:
 *   contig     n MPI_DOUBLE (the baseline)
 *   vector     MPI_Type_vector(n, 1, 2, MPI_DOUBLE)
 *   vector64k  MPI_Type_vector(n/b, b, 2b, MPI_DOUBLE), b = gcd(n, 8192) (64 KiB blocks)
 *   indexed    MPI_Type_indexed: block k holds (k%4)+1 doubles and starts one double after the
 *              end of block k-1; the last block is cut so the blocks hold n doubles
 *   struct     SIZE/16 elements of {int32 @0, double @8, int32 @16} resized to extent 24
 * Transfer benchmarks ping-pong between ranks 0 and 1 and report SIZE / one-way time. Pack
 * benchmarks time MPI_Pack of the whole message into a SIZE-byte buffer plus MPI_Unpack of it
 * back into a second buffer (every rank at once; rank 0's figure), SIZE / (pack + unpack).
 * Receive buffers are poisoned: data bytes are checked against the pattern and gap bytes
 * must still hold the poison. */
enum ddt_kind { DDT_CONTIG, DDT_VECTOR, DDT_VECTOR64K, DDT_INDEXED, DDT_STRUCT };

/* Builds the committed type of `kind` for `size` data bytes; returns the bytes its element
 * spans from the buffer start, and marks the data bytes of `mask` (if not NULL) with 1. */
static size_t ddt_type(const struct ctx *c, enum ddt_kind kind, size_t size, MPI_Datatype *out,
                       uint8_t *mask)
{
    size_t n = size / 8, span = 0;
    switch (kind) {
    case DDT_CONTIG:
        MPI_Type_contiguous(mpi_count(c, n), MPI_DOUBLE, out);
        span = size;
        if (mask)
            memset(mask, 1, size);
        break;
    case DDT_VECTOR:
    case DDT_VECTOR64K: {
        /* 64 KiB blocks, or the largest block dividing n when SIZE is not a multiple. */
        size_t b = 1;
        if (kind == DDT_VECTOR64K)
            for (size_t x = n, y = 8192; y != 0;) {
                size_t r = x % y;
                x = y;
                y = r;
                b = x;
            }
        size_t blocks = n / b;
        MPI_Type_vector(mpi_count(c, blocks), mpi_count(c, b), mpi_count(c, 2 * b), MPI_DOUBLE,
                        out);
        span = ((2 * blocks - 1) * b) * 8;
        if (mask)
            for (size_t k = 0; k < blocks; k++)
                memset(mask + 2 * k * b * 8, 1, b * 8);
        break;
    }
    case DDT_INDEXED: {
        size_t cap = n / 1 + 1, nb = 0, done = 0, at = 0;
        int *lens = xalloc(c, cap * sizeof(int)), *displs = xalloc(c, cap * sizeof(int));
        while (done < n) {
            size_t len = nb % 4 + 1;
            if (len > n - done)
                len = n - done;
            lens[nb] = (int)len;
            displs[nb] = mpi_count(c, at);
            if (mask)
                memset(mask + at * 8, 1, len * 8);
            done += len;
            at += len + 1;
            nb++;
        }
        MPI_Type_indexed(mpi_count(c, nb), lens, displs, MPI_DOUBLE, out);
        span = (at - 1) * 8;
        free(lens);
        free(displs);
        break;
    }
    case DDT_STRUCT: {
        int lens[3] = {1, 1, 1};
        MPI_Aint displs[3] = {0, 8, 16};
        MPI_Datatype types[3] = {MPI_INT32_T, MPI_DOUBLE, MPI_INT32_T}, s;
        size_t count = size / 16;
        MPI_Type_create_struct(3, lens, displs, types, &s);
        MPI_Datatype r;
        MPI_Type_create_resized(s, 0, 24, &r);
        MPI_Type_free(&s);
        MPI_Type_contiguous(mpi_count(c, count), r, out);
        MPI_Type_free(&r);
        span = count * 24 - 4;
        if (mask)
            for (size_t k = 0; k < count; k++) {
                memset(mask + 24 * k, 1, 4);
                memset(mask + 24 * k + 8, 1, 12);
            }
        break;
    }
    }
    MPI_Type_commit(out);
    return span;
}

/* Checks `buf` (span bytes) after data named by `seed` landed through a type with `mask`. */
static void ddt_check(const struct ctx *c, const uint8_t *buf, const uint8_t *mask, size_t span,
                      uint64_t seed, size_t size, int from)
{
    for (size_t i = 0; i < span; i++) {
        uint8_t want = mask[i] ? pattern_byte(seed, i) : (uint8_t)~pattern_byte(seed, i);
        if (buf[i] != want)
            fail(c,
                 "verification failed: size %zu, data from rank %d, %s byte %zu: expected "
                 "0x%02x, got 0x%02x",
                 size, from, mask[i] ? "data" : "gap", i, want, buf[i]);
    }
}

static void bench_ddt(const struct ctx *c, enum ddt_kind kind, int pack)
{
    require_np(c, 2, 0);
    int peer = 1 - c->rank;
    size_t cap = 2 * c->opt.max + 64;
    uint8_t *sbuf = xalloc(c, cap), *rbuf = xalloc(c, cap), *mask = xalloc(c, cap);
    uint8_t *packed = pack ? xalloc(c, c->opt.max + 64) : NULL;

    header(c, pack ? "pack + unpack throughput" : "ping-pong bandwidth", "MB/s");
    for (size_t size = c->opt.min; size <= c->opt.max; size = next_size(size)) {
        if (size < 16 || size % 16 != 0) {
            if (c->rank == 0)
                fprintf(stderr, "oxbench: %s: sizes must be multiples of 16 bytes, got %zu\n",
                        c->name, size);
            MPI_Finalize();
            exit(2);
        }
        MPI_Datatype t;
        memset(mask, 0, cap);
        size_t span = ddt_type(c, kind, size, &t, mask);
        long iters = iters_for(c, ITERS_BW, size), warmup = warmup_for(c, ITERS_BW, size);
        uint64_t out_seed = seed_of(size, c->rank, pack ? c->rank : peer);
        uint64_t in_seed = pack ? out_seed : seed_of(size, peer, c->rank);
        fill(sbuf, span, out_seed);
        poison(rbuf, span, in_seed);
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = 0.0;
        for (long i = 0; i < warmup + iters; i++) {
            if (i == warmup)
                t0 = MPI_Wtime();
            if (pack) {
                int pos = 0;
                MPI_Pack(sbuf, 1, t, packed, mpi_count(c, size), &pos, MPI_COMM_WORLD);
                pos = 0;
                MPI_Unpack(packed, mpi_count(c, size), &pos, rbuf, 1, t, MPI_COMM_WORLD);
            } else if (c->rank == 0) {
                MPI_Send(sbuf, 1, t, peer, TAG_DATA, MPI_COMM_WORLD);
                MPI_Recv(rbuf, 1, t, peer, TAG_DATA, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else {
                MPI_Recv(rbuf, 1, t, peer, TAG_DATA, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(sbuf, 1, t, peer, TAG_DATA, MPI_COMM_WORLD);
            }
        }
        double t1 = MPI_Wtime() - t0;
        ddt_check(c, rbuf, mask, span, in_seed, size, pack ? c->rank : peer);
        MPI_Type_free(&t);
        /* ping-pong: one-way time is half a round trip; pack: one pack + one unpack. */
        double per = pack ? t1 / (double)iters : t1 / (2.0 * (double)iters);
        row(c, size, (double)size / per / 1e6);
    }
    free(sbuf);
    free(rbuf);
    free(mask);
    free(packed);
}

/* ------------------------------------------------------------------------------------------ */

struct bench_def {
    const char *name;
    size_t min, max;
};

static const struct bench_def benches[] = {
    {"latency", 0, 4u << 20},   {"latency-fresh", 0, 4u << 20},
    {"bw", 1, 4u << 20},        {"bibw", 1, 4u << 20},
    {"msgrate", 1, 4u << 20},   {"multi-bw", 1, 4u << 20},  {"multi-lat", 0, 4u << 20},
    {"barrier", 0, 0},          {"bcast", 4, 1u << 20},     {"reduce", 4, 1u << 20},
    {"allreduce", 4, 1u << 20}, {"gather", 4, 1u << 20},    {"scatter", 4, 1u << 20},
    {"allgather", 4, 1u << 20}, {"alltoall", 4, 1u << 20},  {"allreduce-init", 4, 1u << 20},
    {"put_latency", 1, 4u << 20}, {"get_latency", 1, 4u << 20}, {"put_bw", 1, 4u << 20},
    {"get_bw", 1, 4u << 20},    {"acc_latency", 4, 1u << 20}, {"fop_counter", 0, 0},
    {"ddt-contig", 1u << 10, 16u << 20}, {"ddt-vector", 1u << 10, 16u << 20},
    {"ddt-vector64k", 1u << 10, 16u << 20}, {"ddt-indexed", 1u << 10, 16u << 20},
    {"ddt-struct", 1u << 10, 16u << 20}, {"ddt-pack-vector", 1u << 10, 16u << 20},
    {"ddt-pack-indexed", 1u << 10, 16u << 20}, {"ddt-pack-struct", 1u << 10, 16u << 20},
    {"init", 0, 0},
};

int main(int argc, char **argv)
{
    struct ctx c = {0};
    const struct bench_def *def = NULL;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &c.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &c.np);

    for (size_t i = 0; argc > 1 && i < sizeof benches / sizeof benches[0]; i++)
        if (strcmp(argv[1], benches[i].name) == 0)
            def = &benches[i];
    if (def == NULL) {
        if (c.rank == 0) {
            if (argc > 1)
                fprintf(stderr, "oxbench: unknown benchmark '%s'\n", argv[1]);
            fputs(usage, stderr);
        }
        MPI_Finalize();
        return 2;
    }
    c.name = def->name;
    c.opt = (struct options){def->min, def->max, -1, -1, DEFAULT_WINDOW, 0};
    const char *err = parse_options(argc, argv, &c.opt);
    if (err == NULL && c.opt.report_mem && strcmp(c.name, "init") != 0)
        err = "--report-mem belongs to the init benchmark";
    if (err != NULL) {
        if (c.rank == 0)
            fprintf(stderr, "oxbench: %s: %s\n%s", c.name, err, usage);
        MPI_Finalize();
        return 2;
    }

    if (strcmp(c.name, "init") == 0) {
        if (c.opt.report_mem)
            report_mem(&c);
    } else if (strcmp(c.name, "latency-fresh") == 0) {
        bench_latency(&c, 0, 1);
    } else if (strcmp(c.name, "latency") == 0) {
        bench_latency(&c, 0, 0);
    } else if (strcmp(c.name, "multi-lat") == 0) {
        bench_latency(&c, 1, 0);
    } else if (strcmp(c.name, "bw") == 0) {
        bench_bw(&c, BW_UNI);
    } else if (strcmp(c.name, "bibw") == 0) {
        bench_bw(&c, BW_BI);
    } else if (strcmp(c.name, "msgrate") == 0) {
        bench_bw(&c, BW_RATE);
    } else if (strcmp(c.name, "multi-bw") == 0) {
        bench_bw(&c, BW_MULTI);
    } else if (strcmp(c.name, "barrier") == 0) {
        bench_barrier(&c);
    } else if (strcmp(c.name, "put_latency") == 0) {
        bench_rma(&c, RMA_PUT, 0);
    } else if (strcmp(c.name, "get_latency") == 0) {
        bench_rma(&c, RMA_GET, 0);
    } else if (strcmp(c.name, "put_bw") == 0) {
        bench_rma(&c, RMA_PUT, 1);
    } else if (strcmp(c.name, "get_bw") == 0) {
        bench_rma(&c, RMA_GET, 1);
    } else if (strcmp(c.name, "acc_latency") == 0) {
        bench_rma(&c, RMA_ACC, 0);
    } else if (strcmp(c.name, "fop_counter") == 0) {
        bench_fop_counter(&c);
    } else if (strncmp(c.name, "ddt-", 4) == 0) {
        static const char *const kinds[] = {"contig", "vector", "vector64k", "indexed", "struct"};
        int pack = strncmp(c.name, "ddt-pack-", 9) == 0;
        const char *kind = c.name + (pack ? 9 : 4);
        for (int k = 0; k < 5; k++)
            if (strcmp(kind, kinds[k]) == 0)
                bench_ddt(&c, (enum ddt_kind)k, pack);
    } else {
        static const char *const names[] = {"bcast",     "reduce",    "allreduce",
                                            "gather",    "scatter",   "allgather",
                                            "alltoall",  "allreduce-init"};
        for (int k = 0; k < 8; k++)
            if (strcmp(c.name, names[k]) == 0)
                bench_coll(&c, (enum coll)k);
    }

    MPI_Finalize();
    return 0;
}
