/* Intercommunicators. Point-to-point: ranks name the remote group, statuses report remote
 * ranks, every mode, nonblocking, persistent, probes, matched probes, sendrecv, a
 * rendezvous-sized message with every byte checked, PROC_NULL and the errors of a rank
 * outside the remote group. Blocking collectives (barrier, bcast, reduce, allreduce,
 * gather(v), scatter(v), allgather(v), alltoall(v)) with MPI_ROOT/MPI_PROC_NULL roots, and
 * their errors; MPI_Comm_dup and MPI_Comm_split of an intercommunicator. The world is split into its even and odd ranks (np >= 2). */
#include <stdint.h>
#include <string.h>
#include "check.h"

#define BIG (1 << 20)

/* The value of byte i of the big message from remote rank `from` to local rank `to`. */
static unsigned char big_byte(int from, int to, size_t i) {
    return (unsigned char)(i * 31u + (unsigned)from * 7u + (unsigned)to * 13u);
}

int main(int argc, char **argv) {
    int wrank, wsize;
    MUST(MPI_Init(&argc, &argv));
    MUST(MPI_Comm_rank(MPI_COMM_WORLD, &wrank));
    MUST(MPI_Comm_size(MPI_COMM_WORLD, &wsize));
    if (wsize < 2) {
        MUST(MPI_Finalize());
        return 0;
    }
    int color = wrank % 2;
    MPI_Comm half, inter;
    MUST(MPI_Comm_split(MPI_COMM_WORLD, color, wrank, &half));
    MUST(MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, color == 0 ? 1 : 0, 5, &inter));
    int me, lsize, rsize;
    MUST(MPI_Comm_rank(inter, &me));
    MUST(MPI_Comm_size(inter, &lsize));
    MUST(MPI_Comm_remote_size(inter, &rsize));
    CHECK(me == wrank / 2, "local rank %d", me);
    /* The world rank of remote rank j. */
#define REMOTE_WORLD(j) (2 * (j) + 1 - color)

    /* Blocking: every rank sends its world rank to every remote rank (even group first,
     * then odd, so blocking standard sends of one int cannot deadlock), receiving by
     * explicit source. */
    for (int phase = 0; phase < 2; phase++) {
        if (phase == color) {
            for (int j = 0; j < rsize; j++) {
                int v[2] = {wrank, j};
                MUST(MPI_Send(v, 2, MPI_INT, j, 1, inter));
            }
        } else {
            for (int j = 0; j < rsize; j++) {
                int v[2] = {-1, -1};
                MPI_Status st;
                MUST(MPI_Recv(v, 2, MPI_INT, j, 1, inter, &st));
                CHECK(v[0] == REMOTE_WORLD(j) && v[1] == me, "recv from %d: %d %d", j, v[0], v[1]);
                CHECK(st.MPI_SOURCE == j && st.MPI_TAG == 1, "status %d %d", st.MPI_SOURCE, st.MPI_TAG);
                int n;
                MUST(MPI_Get_count(&st, MPI_INT, &n));
                CHECK(n == 2, "count %d", n);
            }
        }
    }

    /* Nonblocking, any source: every rank sends to every remote rank in each mode; the
     * status names the sender's rank in the remote group. */
    for (int mode = 0; mode < 3; mode++) {
        MPI_Request reqs[64];
        int vals[32][2], got[32][2];
        CHECK(rsize <= 32, "too many ranks");
        for (int j = 0; j < rsize; j++) {
            MUST(MPI_Irecv(got[j], 2, MPI_INT, MPI_ANY_SOURCE, 2 + mode, inter, &reqs[j]));
        }
        for (int j = 0; j < rsize; j++) {
            vals[j][0] = wrank;
            vals[j][1] = mode;
            MPI_Request *r = &reqs[rsize + j];
            if (mode == 0) {
                MUST(MPI_Isend(vals[j], 2, MPI_INT, j, 2 + mode, inter, r));
            } else if (mode == 1) {
                MUST(MPI_Issend(vals[j], 2, MPI_INT, j, 2 + mode, inter, r));
            } else {
                MUST(MPI_Send_init(vals[j], 2, MPI_INT, j, 2 + mode, inter, r));
                MUST(MPI_Start(r));
            }
        }
        MPI_Status sts[64];
        MUST(MPI_Waitall(2 * rsize, reqs, sts));
        int seen = 0;
        for (int j = 0; j < rsize; j++) {
            int src = sts[j].MPI_SOURCE;
            CHECK(src >= 0 && src < rsize, "any-source status %d", src);
            CHECK(got[j][0] == REMOTE_WORLD(src) && got[j][1] == mode, "mode %d from %d: %d %d",
                  mode, src, got[j][0], got[j][1]);
            seen |= 1 << src;
        }
        CHECK(seen == (1 << rsize) - 1, "senders seen %#x", seen);
        if (mode == 2) {
            for (int j = 0; j < rsize; j++) MUST(MPI_Request_free(&reqs[rsize + j]));
        }
    }

    /* Sendrecv and a rendezvous-sized message between partners: local rank me talks to
     * remote rank me % rsize; the ranks of the larger group beyond the other's size wait
     * for their turn on the same partner. */
    unsigned char *out = malloc(BIG), *in = malloc(BIG);
    CHECK(out && in, "malloc");
    for (int j = 0; j < rsize; j++) {
        /* Pairs (local i, remote j) with i % rsize == j, or j % lsize == i. */
        int talk = (me % rsize == j) || (j % lsize == me);
        if (!talk) continue;
        for (size_t i = 0; i < BIG; i++) out[i] = big_byte(me, j, i);
        memset(in, 0, BIG);
        MPI_Status st;
        MUST(MPI_Sendrecv(out, BIG, MPI_BYTE, j, 7, in, BIG, MPI_BYTE, j, 7, inter, &st));
        CHECK(st.MPI_SOURCE == j, "sendrecv source %d", st.MPI_SOURCE);
        for (size_t i = 0; i < BIG; i++) {
            CHECK(in[i] == big_byte(j, me, i), "byte %zu from %d", i, j);
        }
        /* Probe, then matched probe, of messages from that partner. */
        int v = me * 100 + j, w = -1, flag = 0, n = 0;
        MPI_Request r;
        MUST(MPI_Isend(&v, 1, MPI_INT, j, 8, inter, &r));
        MUST(MPI_Probe(j, 8, inter, &st));
        CHECK(st.MPI_SOURCE == j && st.MPI_TAG == 8, "probe %d %d", st.MPI_SOURCE, st.MPI_TAG);
        MUST(MPI_Get_count(&st, MPI_INT, &n));
        CHECK(n == 1, "probe count %d", n);
        while (!flag) MUST(MPI_Iprobe(MPI_ANY_SOURCE, 8, inter, &flag, &st));
        CHECK(st.MPI_SOURCE == j, "iprobe source %d", st.MPI_SOURCE);
        MPI_Message m;
        MUST(MPI_Mprobe(j, 8, inter, &m, &st));
        CHECK(st.MPI_SOURCE == j, "mprobe source %d", st.MPI_SOURCE);
        MUST(MPI_Mrecv(&w, 1, MPI_INT, &m, &st));
        CHECK(w == j * 100 + me, "mrecv got %d", w);
        MUST(MPI_Wait(&r, MPI_STATUS_IGNORE));
    }
    free(out);
    free(in);

    /* Collectives: each group's data goes to the other group. */
    MUST(MPI_Barrier(inter));
    int lsum = 0, rsum = 0;
    for (int j = 0; j < lsize; j++) lsum += 2 * j + color + 1;
    for (int j = 0; j < rsize; j++) rsum += REMOTE_WORLD(j) + 1;
    for (int rootgroup = 0; rootgroup < 2; rootgroup++) {
        int root = color == rootgroup ? (me == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
        /* Bcast of 1000 ints from local rank 0 of the root group. */
        int b[1000];
        for (int i = 0; i < 1000; i++) b[i] = root == MPI_ROOT ? i * 3 + rootgroup : -1;
        MUST(MPI_Bcast(b, 1000, MPI_INT, root, inter));
        if (color != rootgroup) {
            for (int i = 0; i < 1000; i++) CHECK(b[i] == i * 3 + rootgroup, "bcast b[%d]=%d", i, b[i]);
        } else if (root == MPI_PROC_NULL) {
            CHECK(b[0] == -1, "bcast touched a PROC_NULL buffer");
        }
        /* Reduce: the root gets the sum over the other group. */
        int v = wrank + 1, sum = -1;
        MUST(MPI_Reduce(&v, &sum, 1, MPI_INT, MPI_SUM, root, inter));
        if (root == MPI_ROOT) CHECK(sum == rsum, "reduce %d, want %d", sum, rsum);
        /* Gather: the root gets the other group's world ranks in its rank order. */
        int all[32];
        MUST(MPI_Gather(&wrank, 1, MPI_INT, all, 1, MPI_INT, root, inter));
        if (root == MPI_ROOT) {
            for (int j = 0; j < rsize; j++) CHECK(all[j] == REMOTE_WORLD(j), "gather[%d]=%d", j, all[j]);
        }
        /* Scatter: block j to remote rank j. */
        int blocks[32], mine = -1;
        for (int j = 0; j < 32; j++) blocks[j] = 100 * rootgroup + j;
        MUST(MPI_Scatter(blocks, 1, MPI_INT, &mine, 1, MPI_INT, root, inter));
        if (color != rootgroup) CHECK(mine == 100 * rootgroup + me, "scatter got %d", mine);
    }
    {
        int v = wrank + 1, sum = -1;
        MUST(MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, inter));
        CHECK(sum == rsum, "allreduce %d, want %d (own group %d)", sum, rsum, lsum);
        double dv = 0.5 * wrank, dmax = -1;
        MUST(MPI_Allreduce(&dv, &dmax, 1, MPI_DOUBLE, MPI_MAX, inter));
        CHECK(dmax == 0.5 * REMOTE_WORLD(rsize - 1), "allreduce max %g", dmax);
        int all[32];
        MUST(MPI_Allgather(&wrank, 1, MPI_INT, all, 1, MPI_INT, inter));
        for (int j = 0; j < rsize; j++) CHECK(all[j] == REMOTE_WORLD(j), "allgather[%d]=%d", j, all[j]);
        int out2[32], in2[32];
        for (int j = 0; j < rsize; j++) out2[j] = wrank * 100 + j;
        MUST(MPI_Alltoall(out2, 1, MPI_INT, in2, 1, MPI_INT, inter));
        for (int j = 0; j < rsize; j++) {
            CHECK(in2[j] == REMOTE_WORLD(j) * 100 + me, "alltoall[%d]=%d", j, in2[j]);
        }
        /* Blocks of different sizes each way: the even group sends two ints per remote
         * rank, the odd group one. */
        int sb = color == 0 ? 2 : 1, rb = 3 - sb, out3[64], in3[64];
        for (int j = 0; j < rsize; j++)
            for (int k = 0; k < sb; k++) out3[j * sb + k] = wrank * 1000 + j * 10 + k;
        MUST(MPI_Alltoall(out3, sb, MPI_INT, in3, rb, MPI_INT, inter));
        for (int j = 0; j < rsize; j++)
            for (int k = 0; k < rb; k++)
                CHECK(in3[j * rb + k] == REMOTE_WORLD(j) * 1000 + me * 10 + k, "alltoall %d.%d=%d",
                      j, k, in3[j * rb + k]);
    }

    /* Varying counts: remote rank j contributes j + 1 ints (its world rank, repeated), laid
     * out back to back from displacement 1. */
    {
        int counts[32], displs[32], total = 1;
        for (int j = 0; j < rsize; j++) {
            counts[j] = j + 1;
            displs[j] = total;
            total += j + 1;
        }
        int mine[33], got[600];
        for (int k = 0; k <= me; k++) mine[k] = wrank;
        for (int rootgroup = 0; rootgroup < 2; rootgroup++) {
            int root = color == rootgroup ? (me == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
            for (int k = 0; k < total; k++) got[k] = -1;
            MUST(MPI_Gatherv(mine, me + 1, MPI_INT, got, counts, displs, MPI_INT, root, inter));
            if (root == MPI_ROOT) {
                CHECK(got[0] == -1, "gatherv wrote before the first displacement");
                for (int j = 0; j < rsize; j++)
                    for (int k = 0; k <= j; k++)
                        CHECK(got[displs[j] + k] == REMOTE_WORLD(j), "gatherv %d.%d=%d", j, k,
                              got[displs[j] + k]);
            }
            /* Scatterv: the root sends remote rank j the values 10 j .. 10 j + j. */
            int src[600], one[33];
            for (int j = 0; j < rsize; j++)
                for (int k = 0; k <= j; k++) src[displs[j] + k] = 10 * j + k;
            for (int k = 0; k < 33; k++) one[k] = -1;
            MUST(MPI_Scatterv(src, counts, displs, MPI_INT, one, me + 1, MPI_INT, root, inter));
            if (color != rootgroup) {
                for (int k = 0; k <= me; k++) CHECK(one[k] == 10 * me + k, "scatterv %d=%d", k, one[k]);
            }
        }
        for (int k = 0; k < total; k++) got[k] = -1;
        MUST(MPI_Allgatherv(mine, me + 1, MPI_INT, got, counts, displs, MPI_INT, inter));
        for (int j = 0; j < rsize; j++)
            for (int k = 0; k <= j; k++)
                CHECK(got[displs[j] + k] == REMOTE_WORLD(j), "allgatherv %d.%d=%d", j, k,
                      got[displs[j] + k]);
        /* Alltoallv: me + 1 ints to each remote rank j, j + 1 from it. */
        int sc[32], sd[32], out4[600], in4[600];
        for (int j = 0; j < rsize; j++) {
            sc[j] = me + 1;
            sd[j] = j * (me + 1);
            for (int k = 0; k <= me; k++) out4[sd[j] + k] = wrank * 100 + j;
        }
        MUST(MPI_Alltoallv(out4, sc, sd, MPI_INT, in4, counts, displs, MPI_INT, inter));
        for (int j = 0; j < rsize; j++)
            for (int k = 0; k <= j; k++)
                CHECK(in4[displs[j] + k] == REMOTE_WORLD(j) * 100 + me, "alltoallv %d.%d=%d", j,
                      k, in4[displs[j] + k]);
    }

    /* PROC_NULL completes at once with the null status. */
    MPI_Status st;
    int x = 0, flag_inter = 0;
    MUST(MPI_Send(&x, 1, MPI_INT, MPI_PROC_NULL, 0, inter));
    MUST(MPI_Recv(&x, 1, MPI_INT, MPI_PROC_NULL, 0, inter, &st));
    CHECK(st.MPI_SOURCE == MPI_PROC_NULL, "proc_null status %d", st.MPI_SOURCE);

    /* A rank outside the remote group is MPI_ERR_RANK, even where it would be a valid
     * local rank. */
    MUST(MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN));
    int rc = MPI_Send(&x, 1, MPI_INT, rsize, 0, inter), cls;
    MUST(MPI_Error_class(rc, &cls));
    CHECK(cls == MPI_ERR_RANK, "send to %d: class %d", rsize, cls);
    MPI_Request r;
    rc = MPI_Irecv(&x, 1, MPI_INT, rsize, 0, inter, &r);
    MUST(MPI_Error_class(rc, &cls));
    CHECK(cls == MPI_ERR_RANK, "irecv from %d: class %d", rsize, cls);
    /* A root that is no remote rank, and MPI_IN_PLACE, are errors on every process (found
     * before anything is sent). */
    rc = MPI_Bcast(&x, 1, MPI_INT, rsize, inter);
    MUST(MPI_Error_class(rc, &cls));
    CHECK(cls == MPI_ERR_ROOT, "bcast root %d: class %d", rsize, cls);
    rc = MPI_Allreduce(MPI_IN_PLACE, &x, 1, MPI_INT, MPI_SUM, inter);
    MUST(MPI_Error_class(rc, &cls));
    CHECK(cls == MPI_ERR_ARG, "in-place allreduce: class %d", cls);

    /* A duplicate has contexts of its own: a message sent on it is not received on the
     * original even with the same source and tag. */
    MPI_Comm dup;
    MUST(MPI_Comm_dup(inter, &dup));
    MUST(MPI_Comm_test_inter(dup, &flag_inter));
    MUST(MPI_Comm_remote_size(dup, &x));
    CHECK(flag_inter && x == rsize, "dup: inter %d, remote size %d", flag_inter, x);
    if (me < rsize) {
        int a = 1000 + wrank, b = 2000 + wrank, ga = -1, gb = -1;
        MPI_Request rr[4];
        MUST(MPI_Irecv(&ga, 1, MPI_INT, me, 9, inter, &rr[0]));
        MUST(MPI_Irecv(&gb, 1, MPI_INT, me, 9, dup, &rr[1]));
        MUST(MPI_Isend(&b, 1, MPI_INT, me, 9, dup, &rr[2]));
        MUST(MPI_Isend(&a, 1, MPI_INT, me, 9, inter, &rr[3]));
        MUST(MPI_Waitall(4, rr, MPI_STATUSES_IGNORE));
        CHECK(ga == 1000 + REMOTE_WORLD(me) && gb == 2000 + REMOTE_WORLD(me), "dup got %d %d", ga, gb);
    }
    MUST(MPI_Barrier(dup));
    MUST(MPI_Comm_free(&dup));

    /* Split by local rank parity, keys reversing the order: the processes of one parity in
     * both groups form an intercommunicator; a parity the other group lacks gets
     * MPI_COMM_NULL. */
    MPI_Comm sp;
    int par = me % 2;
    MUST(MPI_Comm_split(inter, par, -me, &sp));
    int lsame = par ? lsize / 2 : (lsize + 1) / 2, rsame = par ? rsize / 2 : (rsize + 1) / 2;
    if (rsame == 0) {
        CHECK(sp == MPI_COMM_NULL, "split without a remote match is not MPI_COMM_NULL");
    } else {
        int spr, sps, sprs, wr[32];
        MUST(MPI_Comm_test_inter(sp, &flag_inter));
        MUST(MPI_Comm_rank(sp, &spr));
        MUST(MPI_Comm_size(sp, &sps));
        MUST(MPI_Comm_remote_size(sp, &sprs));
        CHECK(flag_inter && sps == lsame && sprs == rsame && spr == lsame - 1 - me / 2,
              "split: inter %d rank %d size %d remote %d", flag_inter, spr, sps, sprs);
        MUST(MPI_Allgather(&wrank, 1, MPI_INT, wr, 1, MPI_INT, sp));
        for (int j = 0; j < rsame; j++) {
            int orig = par + 2 * (rsame - 1 - j);
            CHECK(wr[j] == REMOTE_WORLD(orig), "split allgather[%d]=%d", j, wr[j]);
        }
        MUST(MPI_Comm_free(&sp));
    }
    MUST(MPI_Comm_free(&inter));
    MUST(MPI_Comm_free(&half));
    MUST(MPI_Finalize());
    return 0;
}
