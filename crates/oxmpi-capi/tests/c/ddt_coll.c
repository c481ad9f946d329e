/* Derived datatypes in the nonblocking (MPI_I*), persistent (MPI_*_init) and vector/w
 * collectives, and in reductions and reduce_scatter in every form. Data movement is checked
 * byte for byte: each rank's send buffer is a known byte pattern; the expected receive
 * buffer is a sentinel-filled buffer into which the senders' data is unpacked (MPI_Pack of
 * the sender's pattern, MPI_Unpack through the receive type), so the gap bytes a datatype
 * skips must keep the sentinel. Reductions are checked by value. */
#include <stdint.h>
#include <string.h>
#include "check.h"

#define SENTINEL 0xEE
#define ROUNDS 3

static int rank, size;

/* A datatype under test and its extent (lb is 0 for every type here). */
typedef struct {
    MPI_Datatype t;
    MPI_Aint extent;
    const char *name;
} Ty;

static Ty make(MPI_Datatype t, const char *name) {
    Ty ty = {t, 0, name};
    MPI_Aint lb;
    MUST(MPI_Type_commit(&ty.t));
    MUST(MPI_Type_get_extent(ty.t, &lb, &ty.extent));
    CHECK(lb == 0, "%s: lb %ld", name, (long)lb);
    return ty;
}

/* The bytes rank `r` sends in collective `tag`, round `round` (the whole memory span). */
static void pattern(unsigned char *p, size_t n, int r, int tag, int round) {
    for (size_t i = 0; i < n; i++) p[i] = (unsigned char)(r * 37 + tag * 11 + round * 5 + i * 3 + 1);
}

static unsigned char *alloc(size_t n) {
    unsigned char *p = malloc(n ? n : 1);
    CHECK(p != NULL, "malloc");
    memset(p, SENTINEL, n);
    return p;
}

/* Expected: `n` elements of `rt` at `at` hold what rank `from` sent as `sn` elements of
 * `st` at byte `soff` of its pattern. */
static void expect(unsigned char *at, Ty rt, int n, int from, int tag, int round, Ty st, int sn,
                   MPI_Aint soff) {
    size_t span = (size_t)(soff + sn * st.extent);
    unsigned char *src = alloc(span), *packed = alloc((size_t)sn * st.extent + 64);
    pattern(src, span, from, tag, round);
    int pos = 0;
    MUST(MPI_Pack(src + soff, sn, st.t, packed, sn * (int)st.extent + 64, &pos, MPI_COMM_WORLD));
    int in = 0;
    MUST(MPI_Unpack(packed, pos, &in, at, n, rt.t, MPI_COMM_WORLD));
    free(src);
    free(packed);
}

static void same(const unsigned char *got, const unsigned char *want, size_t n, const char *what,
                 const char *ty, int round) {
    for (size_t i = 0; i < n; i++)
        CHECK(got[i] == want[i], "%s (%s) round %d: byte %zu is %#x, want %#x", what, ty, round, i,
              got[i], want[i]);
}

static void wait_all(int n, MPI_Request *r) { MUST(MPI_Waitall(n, r, MPI_STATUSES_IGNORE)); }

/* Nonblocking and persistent regular collectives: send through `st`, receive through `rt`
 * (both of the same signature per element). `init`: persistent, started ROUNDS times. */
static void regular(Ty st, Ty rt, int init) {
    const int n = 2;
    size_t sb = (size_t)n * st.extent, rb = (size_t)n * rt.extent;
    unsigned char *bc = alloc(rb), *s = alloc(sb * size), *g = alloc(rb * size), *sc = alloc(rb);
    unsigned char *ag = alloc(rb * size), *a2a = alloc(rb * size);
    unsigned char *want = alloc(rb * size);
    MPI_Request q[6];
    if (init) {
        MUST(MPI_Bcast_init(bc, n, rt.t, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &q[0]));
        MUST(MPI_Gather_init(s, n, st.t, g, n, rt.t, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &q[1]));
        MUST(MPI_Scatter_init(s, n, st.t, sc, n, rt.t, size - 1, MPI_COMM_WORLD, MPI_INFO_NULL, &q[2]));
        MUST(MPI_Allgather_init(s, n, st.t, ag, n, rt.t, MPI_COMM_WORLD, MPI_INFO_NULL, &q[3]));
        MUST(MPI_Alltoall_init(s, n, st.t, a2a, n, rt.t, MPI_COMM_WORLD, MPI_INFO_NULL, &q[4]));
    }
    for (int round = 0; round < ROUNDS; round++) {
        memset(g, SENTINEL, rb * size);
        memset(sc, SENTINEL, rb);
        memset(ag, SENTINEL, rb * size);
        memset(a2a, SENTINEL, rb * size);
        /* The broadcast buffer of the root is read through `rt`. */
        memset(bc, SENTINEL, rb);
        if (rank == 0) pattern(bc, rb, 0, 1, round);
        pattern(s, sb * size, rank, 2, round);
        if (init) {
            MUST(MPI_Startall(5, q));
        } else {
            MUST(MPI_Ibcast(bc, n, rt.t, 0, MPI_COMM_WORLD, &q[0]));
            MUST(MPI_Igather(s, n, st.t, g, n, rt.t, 0, MPI_COMM_WORLD, &q[1]));
            MUST(MPI_Iscatter(s, n, st.t, sc, n, rt.t, size - 1, MPI_COMM_WORLD, &q[2]));
            MUST(MPI_Iallgather(s, n, st.t, ag, n, rt.t, MPI_COMM_WORLD, &q[3]));
            MUST(MPI_Ialltoall(s, n, st.t, a2a, n, rt.t, MPI_COMM_WORLD, &q[4]));
        }
        wait_all(5, q);
        if (rank != 0) {
            memset(want, SENTINEL, rb);
            expect(want, rt, n, 0, 1, round, rt, n, 0);
            same(bc, want, rb, "bcast", rt.name, round);
        }
        if (rank == 0) {
            memset(want, SENTINEL, rb * size);
            for (int i = 0; i < size; i++) expect(want + i * rb, rt, n, i, 2, round, st, n, 0);
            same(g, want, rb * size, "gather", rt.name, round);
        }
        memset(want, SENTINEL, rb);
        expect(want, rt, n, size - 1, 2, round, st, n, (MPI_Aint)(rank * sb));
        same(sc, want, rb, "scatter", rt.name, round);
        memset(want, SENTINEL, rb * size);
        for (int i = 0; i < size; i++) expect(want + i * rb, rt, n, i, 2, round, st, n, 0);
        same(ag, want, rb * size, "allgather", rt.name, round);
        memset(want, SENTINEL, rb * size);
        for (int i = 0; i < size; i++)
            expect(want + i * rb, rt, n, i, 2, round, st, n, (MPI_Aint)(rank * sb));
        same(a2a, want, rb * size, "alltoall", rt.name, round);
    }
    if (init)
        for (int i = 0; i < 5; i++) MUST(MPI_Request_free(&q[i]));
    free(bc), free(s), free(g), free(sc), free(ag), free(a2a), free(want);
}

/* The v- and w-forms: rank i's block holds (i % 3) + 1 elements, laid out in reverse order
 * with one element of space between blocks. */
static void vector_forms(Ty st, Ty rt, int init) {
    int counts[16], displs[16], sdispls[16], total = 0;
    for (int i = 0; i < size; i++) counts[i] = i % 3 + 1;
    for (int i = size - 1; i >= 0; i--) {
        displs[i] = total;
        total += counts[i] + 1;
    }
    for (int i = 0, at = 0; i < size; i++) {
        sdispls[i] = at;
        at += counts[i];
    }
    int mine = counts[rank];
    size_t rspan = (size_t)total * rt.extent, sspan = (size_t)(total + 3) * st.extent;
    unsigned char *s = alloc(sspan), *gv = alloc(rspan), *agv = alloc(rspan), *sv = alloc(3 * rt.extent);
    size_t wspan = rspan > 3 * (size_t)rt.extent ? rspan : 3 * (size_t)rt.extent;
    unsigned char *a2av = alloc(rspan), *a2aw = alloc(rspan), *want = alloc(wspan);
    /* The w-form: the same layout in bytes, the datatypes per block. */
    int wc[16], wsd[16], wrd[16];
    MPI_Datatype wst[16], wrt[16];
    for (int i = 0; i < size; i++) {
        wc[i] = mine;
        wsd[i] = (int)(i * mine * st.extent);
        wrd[i] = (int)(displs[i] * rt.extent);
        wst[i] = st.t;
        wrt[i] = rt.t;
    }
    /* alltoallv: rank i sends `mine` elements to everyone; rank j receives counts[i] from i. */
    int a2sc[16], a2sd[16];
    for (int i = 0; i < size; i++) {
        a2sc[i] = mine;
        a2sd[i] = i * mine;
    }
    int wrc[16];
    for (int i = 0; i < size; i++) wrc[i] = counts[i];
    MPI_Request q[5];
    int root = size / 2;
    if (init) {
        MUST(MPI_Gatherv_init(s, mine, st.t, gv, counts, displs, rt.t, root, MPI_COMM_WORLD,
                              MPI_INFO_NULL, &q[0]));
        MUST(MPI_Scatterv_init(s, counts, sdispls, st.t, sv, mine, rt.t, root, MPI_COMM_WORLD,
                               MPI_INFO_NULL, &q[1]));
        MUST(MPI_Allgatherv_init(s, mine, st.t, agv, counts, displs, rt.t, MPI_COMM_WORLD,
                                 MPI_INFO_NULL, &q[2]));
        MUST(MPI_Alltoallv_init(s, a2sc, a2sd, st.t, a2av, wrc, displs, rt.t, MPI_COMM_WORLD,
                                MPI_INFO_NULL, &q[3]));
    }
    for (int i = 0; i < size; i++) wc[i] = mine;
    int wrcount[16];
    for (int i = 0; i < size; i++) wrcount[i] = counts[i];
    if (init)
        MUST(MPI_Alltoallw_init(s, wc, wsd, wst, a2aw, wrcount, wrd, wrt, MPI_COMM_WORLD,
                                MPI_INFO_NULL, &q[4]));
    for (int round = 0; round < ROUNDS; round++) {
        pattern(s, sspan, rank, 3, round);
        memset(gv, SENTINEL, rspan);
        memset(sv, SENTINEL, 3 * rt.extent);
        memset(agv, SENTINEL, rspan);
        memset(a2av, SENTINEL, rspan);
        memset(a2aw, SENTINEL, rspan);
        if (init) {
            MUST(MPI_Startall(5, q));
        } else {
            MUST(MPI_Igatherv(s, mine, st.t, gv, counts, displs, rt.t, root, MPI_COMM_WORLD, &q[0]));
            MUST(MPI_Iscatterv(s, counts, sdispls, st.t, sv, mine, rt.t, root, MPI_COMM_WORLD, &q[1]));
            MUST(MPI_Iallgatherv(s, mine, st.t, agv, counts, displs, rt.t, MPI_COMM_WORLD, &q[2]));
            MUST(MPI_Ialltoallv(s, a2sc, a2sd, st.t, a2av, wrc, displs, rt.t, MPI_COMM_WORLD, &q[3]));
            if (round == 1) {
                /* The blocking w-form in one round. */
                MUST(MPI_Alltoallw(s, wc, wsd, wst, a2aw, wrcount, wrd, wrt, MPI_COMM_WORLD));
                q[4] = MPI_REQUEST_NULL;
            } else {
                MUST(MPI_Ialltoallw(s, wc, wsd, wst, a2aw, wrcount, wrd, wrt, MPI_COMM_WORLD, &q[4]));
            }
        }
        wait_all(5, q);
        if (rank == root) {
            memset(want, SENTINEL, rspan);
            for (int i = 0; i < size; i++)
                expect(want + displs[i] * rt.extent, rt, counts[i], i, 3, round, st, counts[i], 0);
            same(gv, want, rspan, "gatherv", rt.name, round);
        }
        memset(want, SENTINEL, 3 * rt.extent);
        expect(want, rt, mine, root, 3, round, st, mine, sdispls[rank] * st.extent);
        same(sv, want, 3 * rt.extent, "scatterv", rt.name, round);
        memset(want, SENTINEL, rspan);
        for (int i = 0; i < size; i++)
            expect(want + displs[i] * rt.extent, rt, counts[i], i, 3, round, st, counts[i], 0);
        same(agv, want, rspan, "allgatherv", rt.name, round);
        memset(want, SENTINEL, rspan);
        for (int i = 0; i < size; i++)
            expect(want + displs[i] * rt.extent, rt, counts[i], i, 3, round, st, counts[i],
                   (MPI_Aint)(rank * counts[i]) * st.extent);
        same(a2av, want, rspan, "alltoallv", rt.name, round);
        same(a2aw, want, rspan, "alltoallw", rt.name, round);
    }
    if (init)
        for (int i = 0; i < 5; i++) MUST(MPI_Request_free(&q[i]));
    free(s), free(gv), free(agv), free(sv), free(a2av), free(a2aw), free(want);
}

/* Reductions through a vector of doubles (every other double) and an indexed type of ints:
 * SUM and MAX, nonblocking and persistent, with the gaps untouched. */
static void reductions(int init) {
    MPI_Datatype dv, ii;
    MUST(MPI_Type_vector(3, 1, 2, MPI_DOUBLE, &dv));
    MUST(MPI_Type_commit(&dv));
    int bl[2] = {2, 1}, dp[2] = {0, 4};
    MUST(MPI_Type_indexed(2, bl, dp, MPI_INT, &ii));
    MUST(MPI_Type_commit(&ii));
    /* Two vector elements: doubles at 0, 2, 4 and 5, 7, 9 (extent 5). */
    double x[10], sum[10], scan[10], ex[10];
    /* Two indexed elements: ints at 0, 1, 4 and 5, 6, 9 (extent 5). */
    int a[10], mx[10];
    const int dpos[6] = {0, 2, 4, 5, 7, 9}, ipos[6] = {0, 1, 4, 5, 6, 9};
    MPI_Request q[4];
    if (init) {
        MUST(MPI_Allreduce_init(x, sum, 2, dv, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &q[0]));
        MUST(MPI_Reduce_init(a, mx, 2, ii, MPI_MAX, size - 1, MPI_COMM_WORLD, MPI_INFO_NULL, &q[1]));
        MUST(MPI_Scan_init(x, scan, 2, dv, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &q[2]));
        MUST(MPI_Exscan_init(x, ex, 2, dv, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &q[3]));
    }
    for (int round = 0; round < ROUNDS; round++) {
        for (int k = 0; k < 10; k++) {
            x[k] = -1000.0 - k; /* gaps: never read */
            sum[k] = scan[k] = ex[k] = -7.0;
            a[k] = -1000 - k;
            mx[k] = -7;
        }
        for (int j = 0; j < 6; j++) {
            x[dpos[j]] = rank + 10 * j + round;
            a[ipos[j]] = (rank * 7 + j * 3 + round) % 11;
        }
        if (init) {
            MUST(MPI_Startall(4, q));
        } else {
            MUST(MPI_Iallreduce(x, sum, 2, dv, MPI_SUM, MPI_COMM_WORLD, &q[0]));
            MUST(MPI_Ireduce(a, mx, 2, ii, MPI_MAX, size - 1, MPI_COMM_WORLD, &q[1]));
            MUST(MPI_Iscan(x, scan, 2, dv, MPI_SUM, MPI_COMM_WORLD, &q[2]));
            MUST(MPI_Iexscan(x, ex, 2, dv, MPI_SUM, MPI_COMM_WORLD, &q[3]));
        }
        wait_all(4, q);
        int tri = size * (size - 1) / 2;
        for (int k = 0, j = 0; k < 10; k++) {
            if (j < 6 && k == dpos[j]) {
                CHECK(sum[k] == tri + size * (10.0 * j + round), "allreduce %d: %g", k, sum[k]);
                CHECK(scan[k] == rank * (rank + 1) / 2 + (rank + 1) * (10.0 * j + round),
                      "scan %d: %g", k, scan[k]);
                if (rank > 0)
                    CHECK(ex[k] == rank * (rank - 1) / 2 + rank * (10.0 * j + round), "exscan %d: %g",
                          k, ex[k]);
                j++;
            } else {
                CHECK(sum[k] == -7.0 && scan[k] == -7.0, "reduction gap %d written", k);
            }
        }
        if (rank == size - 1) {
            for (int k = 0, j = 0; k < 10; k++) {
                if (j < 6 && k == ipos[j]) {
                    int m = -1;
                    for (int r = 0; r < size; r++) {
                        int v = (r * 7 + j * 3 + round) % 11;
                        if (v > m) m = v;
                    }
                    CHECK(mx[k] == m, "reduce max %d: %d, want %d", k, mx[k], m);
                    j++;
                } else {
                    CHECK(mx[k] == -7, "reduce gap %d written", k);
                }
            }
        }
    }
    if (init)
        for (int i = 0; i < 4; i++) MUST(MPI_Request_free(&q[i]));
    /* In place, nonblocking: the input is read through the type from the receive buffer. */
    for (int k = 0; k < 10; k++) sum[k] = -1000.0 - k;
    for (int j = 0; j < 6; j++) sum[dpos[j]] = rank + j;
    MUST(MPI_Iallreduce(MPI_IN_PLACE, sum, 2, dv, MPI_SUM, MPI_COMM_WORLD, &q[0]));
    wait_all(1, q);
    for (int k = 0, j = 0; k < 10; k++) {
        if (j < 6 && k == dpos[j]) {
            CHECK(sum[k] == size * (size - 1) / 2 + size * j, "allreduce in place %d: %g", k, sum[k]);
            j++;
        } else {
            CHECK(sum[k] == -1000.0 - k, "allreduce in place gap %d written", k);
        }
    }
    MUST(MPI_Type_free(&dv));
    MUST(MPI_Type_free(&ii));
}

/* MINLOC through a vector of MPI_DOUBLE_INT pairs (every other pair). */
static void minloc(void) {
    MPI_Datatype pv;
    MUST(MPI_Type_vector(2, 1, 2, MPI_DOUBLE_INT, &pv));
    MUST(MPI_Type_commit(&pv));
    struct { double v; int i; } in[3], out[3];
    for (int k = 0; k < 3; k++) {
        in[k].v = (k == 1) ? -5.0 : (double)((rank + k) % size);
        in[k].i = rank;
        out[k].v = 99.0;
        out[k].i = -3;
    }
    MPI_Request r;
    MUST(MPI_Iallreduce(in, out, 1, pv, MPI_MINLOC, MPI_COMM_WORLD, &r));
    wait_all(1, &r);
    CHECK(out[0].v == 0.0 && out[0].i == 0, "minloc[0] %g %d", out[0].v, out[0].i);
    CHECK(out[1].v == 99.0 && out[1].i == -3, "minloc gap written");
    int at = (size - 2 + size) % size; /* (r + 2) % size == 0 */
    if (size == 1) at = 0;
    CHECK(out[2].v == 0.0 && out[2].i == at, "minloc[2] %g %d want %d", out[2].v, out[2].i, at);
    MUST(MPI_Type_free(&pv));
}

/* Reduce_scatter and Reduce_scatter_block through a vector of doubles, in the blocking,
 * nonblocking and persistent forms. Rank i's share is i % 2 + 1 elements. */
static void reduce_scatter(void) {
    MPI_Datatype dv;
    MUST(MPI_Type_vector(2, 1, 3, MPI_DOUBLE, &dv)); /* doubles at 0 and 3, extent 4 */
    MUST(MPI_Type_commit(&dv));
    int counts[16], total = 0, before = 0;
    for (int i = 0; i < size; i++) {
        counts[i] = i % 2 + 1;
        if (i < rank) before += counts[i];
        total += counts[i];
    }
    double *in = malloc(sizeof(double) * 4 * (total + size)), out[8], blk[8];
    for (int form = 0; form < 3; form++) {
        MPI_Request q[2];
        if (form == 2) {
            MUST(MPI_Reduce_scatter_init(in, out, counts, dv, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &q[0]));
            MUST(MPI_Reduce_scatter_block_init(in, blk, 1, dv, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &q[1]));
        }
        for (int round = 0; round < (form == 2 ? ROUNDS : 1); round++) {
            for (int k = 0; k < 4 * (total + size); k++) in[k] = (k % 4 == 0 || k % 4 == 3) ? rank + k + round : -1e9;
            for (int k = 0; k < 8; k++) out[k] = blk[k] = -7.0;
            if (form == 0) {
                MUST(MPI_Reduce_scatter(in, out, counts, dv, MPI_SUM, MPI_COMM_WORLD));
                MUST(MPI_Reduce_scatter_block(in, blk, 1, dv, MPI_SUM, MPI_COMM_WORLD));
            } else {
                if (form == 1) {
                    MUST(MPI_Ireduce_scatter(in, out, counts, dv, MPI_SUM, MPI_COMM_WORLD, &q[0]));
                    MUST(MPI_Ireduce_scatter_block(in, blk, 1, dv, MPI_SUM, MPI_COMM_WORLD, &q[1]));
                } else {
                    MUST(MPI_Startall(2, q));
                }
                wait_all(2, q);
            }
            int tri = size * (size - 1) / 2;
            for (int k = 0; k < 4 * counts[rank]; k++) {
                int src = 4 * before + k;
                double want = (k % 4 == 0 || k % 4 == 3) ? tri + size * (double)(src + round) : -7.0;
                CHECK(out[k] == want, "reduce_scatter form %d %d: %g want %g", form, k, out[k], want);
            }
            for (int k = 4 * counts[rank]; k < 8; k++) CHECK(out[k] == -7.0, "reduce_scatter tail %d", k);
            for (int k = 0; k < 4; k++) {
                double want = (k == 0 || k == 3) ? tri + size * (double)(4 * rank + k + round) : -7.0;
                CHECK(blk[k] == want, "reduce_scatter_block form %d %d: %g want %g", form, k, blk[k], want);
            }
        }
        if (form == 2) {
            MUST(MPI_Request_free(&q[0]));
            MUST(MPI_Request_free(&q[1]));
        }
    }
    free(in);
    MUST(MPI_Type_free(&dv));
}

/* Bad inputs: a reduction over a type of two predefined types, an uncommitted type. */
static void errors(Ty mixed) {
    MUST(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    double buf[64];
    int counts[16];
    for (int i = 0; i < size; i++) counts[i] = 1;
    MPI_Request r = MPI_REQUEST_NULL;
    int cls = MPI_Iallreduce(buf, buf + 32, 1, mixed.t, MPI_SUM, MPI_COMM_WORLD, &r);
    MUST(MPI_Error_class(cls, &cls));
    CHECK(cls == MPI_ERR_TYPE, "iallreduce over a struct: class %d", cls);
    cls = MPI_Reduce_scatter_init(buf, buf + 32, counts, mixed.t, MPI_SUM, MPI_COMM_WORLD,
                                  MPI_INFO_NULL, &r);
    MUST(MPI_Error_class(cls, &cls));
    CHECK(cls == MPI_ERR_TYPE, "reduce_scatter_init over a struct: class %d", cls);
    cls = MPI_Reduce_scatter_block(buf, buf + 32, 1, mixed.t, MPI_SUM, MPI_COMM_WORLD);
    MUST(MPI_Error_class(cls, &cls));
    CHECK(cls == MPI_ERR_TYPE, "reduce_scatter_block over a struct: class %d", cls);
    MPI_Datatype raw;
    MUST(MPI_Type_vector(2, 1, 2, MPI_INT, &raw));
    int sc[16], sd[16];
    MPI_Datatype ts[16];
    for (int i = 0; i < size; i++) sc[i] = 1, sd[i] = 0, ts[i] = raw;
    cls = MPI_Ialltoallw(buf, sc, sd, ts, buf + 32, sc, sd, ts, MPI_COMM_WORLD, &r);
    MUST(MPI_Error_class(cls, &cls));
    CHECK(cls == MPI_ERR_TYPE, "ialltoallw uncommitted: class %d", cls);
    cls = MPI_Gatherv_init(buf, 1, raw, buf + 32, counts, sd, raw, 0, MPI_COMM_WORLD,
                           MPI_INFO_NULL, &r);
    MUST(MPI_Error_class(cls, &cls));
    CHECK(cls == MPI_ERR_TYPE, "gatherv_init uncommitted: class %d", cls);
    CHECK(r == MPI_REQUEST_NULL, "a failed call made a request");
    MUST(MPI_Type_free(&raw));
    MUST(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
}

int main(int argc, char **argv) {
    MUST(MPI_Init(&argc, &argv));
    MUST(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    MUST(MPI_Comm_size(MPI_COMM_WORLD, &size));
    CHECK(size <= 16, "at most 16 ranks");
    MPI_Datatype t;
    MUST(MPI_Type_vector(3, 1, 2, MPI_INT, &t));
    Ty vec = make(t, "vector");
    int bl[2] = {2, 1}, dp[2] = {0, 4};
    MUST(MPI_Type_indexed(2, bl, dp, MPI_INT, &t));
    Ty idx = make(t, "indexed");
    /* struct { int; double } with padding after the int; three ints in a row match it in
     * signature only after conversion, so it is received as itself. */
    int sbl[2] = {1, 1};
    MPI_Aint sdp[2] = {0, 8};
    MPI_Datatype sty[2] = {MPI_INT, MPI_DOUBLE};
    MUST(MPI_Type_create_struct(2, sbl, sdp, sty, &t));
    Ty st = make(t, "struct");
    MUST(MPI_Type_contiguous(3, MPI_INT, &t));
    Ty three = make(t, "3 ints");
    for (int init = 0; init < 2; init++) {
        regular(vec, vec, init);
        regular(vec, idx, init);
        regular(three, vec, init);
        regular(st, st, init);
        vector_forms(vec, idx, init);
        vector_forms(st, st, init);
        reductions(init);
    }
    minloc();
    reduce_scatter();
    errors(st);
    MUST(MPI_Type_free(&vec.t));
    MUST(MPI_Type_free(&idx.t));
    MUST(MPI_Type_free(&st.t));
    MUST(MPI_Type_free(&three.t));
    MUST(MPI_Finalize());
    return 0;
}
