/* Nonblocking (MPI_I*) and persistent (MPI_*_init) collectives: every one checked against
 * its definition, MPI_IN_PLACE forms, several outstanding at once completed by one
 * MPI_Waitall, persistent requests restarted with new data, a derived datatype through a
 * nonblocking broadcast and gather, a user operation, and argument errors. */
#include <string.h>
#include "check.h"

/* Element-wise max over ints, as a user operation. */
static void imax(void *in, void *inout, int *len, MPI_Datatype *dt) {
    (void)dt;
    for (int i = 0; i < *len; i++)
        if (((int *)in)[i] > ((int *)inout)[i]) ((int *)inout)[i] = ((int *)in)[i];
}

/* 0, 1, ..., n-1: the displacements of one element per rank. */
static int *displs0(int n) {
    static int d[64];
    for (int i = 0; i < n; i++) d[i] = i;
    return d;
}

static void wait1(MPI_Request *r) {
    MPI_Status st;
    MUST(MPI_Wait(r, &st));
    CHECK(*r == MPI_REQUEST_NULL, "request not freed by wait");
}

static void nonblocking(int rank, int size) {
    MPI_Request r;
    int all[16], counts[16], displs[16], v[64], w[64];

    MUST(MPI_Ibarrier(MPI_COMM_WORLD, &r));
    wait1(&r);

    int b = rank == size - 1 ? 77 : -1;
    MUST(MPI_Ibcast(&b, 1, MPI_INT, size - 1, MPI_COMM_WORLD, &r));
    wait1(&r);
    CHECK(b == 77, "ibcast %d", b);

    for (int i = 0; i < 16; i++) all[i] = -1;
    MUST(MPI_Igather(&rank, 1, MPI_INT, all, 1, MPI_INT, 0, MPI_COMM_WORLD, &r));
    wait1(&r);
    if (rank == 0)
        for (int i = 0; i < size; i++) CHECK(all[i] == i, "igather %d: %d", i, all[i]);
    if (rank == 0) {
        for (int i = 1; i < 16; i++) all[i] = -1;
        all[0] = 0;
        MUST(MPI_Igather(MPI_IN_PLACE, 1, MPI_INT, all, 1, MPI_INT, 0, MPI_COMM_WORLD, &r));
    } else {
        MUST(MPI_Igather(&rank, 1, MPI_INT, NULL, 0, MPI_INT, 0, MPI_COMM_WORLD, &r));
    }
    wait1(&r);
    if (rank == 0)
        for (int i = 0; i < size; i++) CHECK(all[i] == i, "igather in place %d", i);

    /* v-forms: rank i contributes i+1 copies of 100+i. */
    int mine[16];
    for (int i = 0; i <= rank; i++) mine[i] = 100 + rank;
    int off = 0;
    for (int i = 0; i < size; i++) { counts[i] = i + 1; displs[i] = off; off += i + 1; }
    memset(v, 0, sizeof v);
    MUST(MPI_Igatherv(mine, rank + 1, MPI_INT, v, counts, displs, MPI_INT, 0, MPI_COMM_WORLD, &r));
    wait1(&r);
    if (rank == 0)
        for (int i = 0; i < size; i++)
            for (int k = 0; k <= i; k++) CHECK(v[displs[i] + k] == 100 + i, "igatherv %d/%d", i, k);
    memset(v, 0, sizeof v);
    MUST(MPI_Iallgatherv(mine, rank + 1, MPI_INT, v, counts, displs, MPI_INT, MPI_COMM_WORLD, &r));
    wait1(&r);
    for (int i = 0; i < size; i++) CHECK(v[displs[i] + i] == 100 + i, "iallgatherv %d", i);
    /* In place: each rank's block already sits in the receive buffer. */
    memset(v, 0, sizeof v);
    for (int k = 0; k <= rank; k++) v[displs[rank] + k] = 100 + rank;
    MUST(MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, v, counts, displs, MPI_INT,
                         MPI_COMM_WORLD, &r));
    wait1(&r);
    for (int i = 0; i < size; i++)
        for (int k = 0; k <= i; k++) CHECK(v[displs[i] + k] == 100 + i, "iallgatherv in place %d", i);
    if (rank == 0) {
        memset(w, 0, sizeof w);
        for (int k = 0; k < 1; k++) w[k] = 100;
        MUST(MPI_Igatherv(MPI_IN_PLACE, 0, MPI_INT, w, counts, displs, MPI_INT, 0,
                          MPI_COMM_WORLD, &r));
        wait1(&r);
        for (int i = 0; i < size; i++)
            for (int k = 0; k <= i; k++) CHECK(w[displs[i] + k] == 100 + i, "igatherv in place %d", i);
    } else {
        MUST(MPI_Igatherv(mine, rank + 1, MPI_INT, NULL, NULL, NULL, MPI_INT, 0, MPI_COMM_WORLD, &r));
        wait1(&r);
    }

    /* Scatter and scatterv, the latter in place at the root. */
    int piece = -1;
    for (int i = 0; i < size; i++) all[i] = 10 * i;
    MUST(MPI_Iscatter(all, 1, MPI_INT, &piece, 1, MPI_INT, 0, MPI_COMM_WORLD, &r));
    wait1(&r);
    CHECK(piece == 10 * rank, "iscatter %d", piece);
    int vpiece[16] = {0};
    if (rank == 0) {
        MUST(MPI_Iscatterv(v, counts, displs, MPI_INT, MPI_IN_PLACE, 1, MPI_INT, 0,
                           MPI_COMM_WORLD, &r));
    } else {
        MUST(MPI_Iscatterv(NULL, NULL, NULL, MPI_INT, vpiece, rank + 1, MPI_INT, 0,
                           MPI_COMM_WORLD, &r));
    }
    wait1(&r);
    if (rank != 0)
        for (int k = 0; k <= rank; k++) CHECK(vpiece[k] == 100 + rank, "iscatterv %d", k);

    /* Allgather (also in place) and alltoall(v). */
    MUST(MPI_Iallgather(&rank, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD, &r));
    wait1(&r);
    for (int i = 0; i < size; i++) CHECK(all[i] == i, "iallgather %d", i);
    for (int i = 0; i < size; i++) all[i] = i == rank ? 5 * rank : -1;
    MUST(MPI_Iallgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, all, 1, MPI_INT, MPI_COMM_WORLD, &r));
    wait1(&r);
    for (int i = 0; i < size; i++) CHECK(all[i] == 5 * i, "iallgather in place %d", i);
    int sendv[16], recvv[16];
    for (int i = 0; i < size; i++) sendv[i] = 100 * rank + i;
    MUST(MPI_Ialltoall(sendv, 1, MPI_INT, recvv, 1, MPI_INT, MPI_COMM_WORLD, &r));
    wait1(&r);
    for (int i = 0; i < size; i++) CHECK(recvv[i] == 100 * i + rank, "ialltoall %d", i);
    for (int i = 0; i < size; i++) recvv[i] = 100 * rank + i;
    MUST(MPI_Ialltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, recvv, 1, MPI_INT, MPI_COMM_WORLD, &r));
    wait1(&r);
    for (int i = 0; i < size; i++) CHECK(recvv[i] == 100 * i + rank, "ialltoall in place %d", i);
    /* Alltoallv: one element to each rank, at reversed displacements. */
    int ones[16], rd[16];
    for (int i = 0; i < size; i++) { ones[i] = 1; rd[i] = size - 1 - i; sendv[i] = 100 * rank + i; }
    MUST(MPI_Ialltoallv(sendv, ones, displs0(size), MPI_INT, recvv, ones, rd, MPI_INT,
                        MPI_COMM_WORLD, &r));
    wait1(&r);
    for (int i = 0; i < size; i++) CHECK(recvv[size - 1 - i] == 100 * i + rank, "ialltoallv %d", i);
    for (int i = 0; i < size; i++) recvv[rd[i]] = 100 * rank + i;
    MUST(MPI_Ialltoallv(MPI_IN_PLACE, NULL, NULL, MPI_DATATYPE_NULL, recvv, ones, rd, MPI_INT,
                        MPI_COMM_WORLD, &r));
    wait1(&r);
    for (int i = 0; i < size; i++)
        CHECK(recvv[size - 1 - i] == 100 * i + rank, "ialltoallv in place %d", i);

    /* Alltoallw: to rank i an int (100*rank+i) and a double (rank+i/2), byte displacements. */
    {
        struct { int i; double d; } wout[16], win[16];
        int wc[16], wsd[16];
        MPI_Datatype wt[16];
        for (int i = 0; i < size; i++) {
            wout[i].i = 100 * rank + i;
            wc[i] = 1;
            wsd[i] = (int)(i * sizeof wout[0]);
            wt[i] = MPI_INT;
        }
        for (int form = 0; form < 3; form++) {
            memset(win, 0, sizeof win);
            if (form == 0) {
                MUST(MPI_Alltoallw(wout, wc, wsd, wt, win, wc, wsd, wt, MPI_COMM_WORLD));
            } else if (form == 1) {
                MUST(MPI_Ialltoallw(wout, wc, wsd, wt, win, wc, wsd, wt, MPI_COMM_WORLD, &r));
                wait1(&r);
            } else {
                MUST(MPI_Alltoallw_init(wout, wc, wsd, wt, win, wc, wsd, wt, MPI_COMM_WORLD,
                                        MPI_INFO_NULL, &r));
                MUST(MPI_Start(&r));
                MUST(MPI_Wait(&r, MPI_STATUS_IGNORE));
                MUST(MPI_Request_free(&r));
            }
            for (int i = 0; i < size; i++)
                CHECK(win[i].i == 100 * i + rank, "alltoallw form %d from %d: %d", form, i, win[i].i);
        }
        for (int i = 0; i < size; i++) { wout[i].d = rank + i / 2.0; wt[i] = MPI_DOUBLE; wsd[i] += (int)sizeof(double); }
        MUST(MPI_Alltoallw(wout, wc, wsd, wt, win, wc, wsd, wt, MPI_COMM_WORLD));
        for (int i = 0; i < size; i++) CHECK(win[i].d == i + rank / 2.0, "alltoallw double %d", i);

        /* MPI_BOTTOM and absolute addresses (the _c form's MPI_Aint displacements), the send
         * blocks in falling order. */
        MPI_Count cc[16];
        MPI_Aint sa[16], ra[16];
        for (int i = 0; i < size; i++) {
            cc[i] = 1;
            wt[i] = MPI_INT;
            wout[i].i = 1000 * rank + i;
            MUST(MPI_Get_address(&wout[size - 1 - i].i, &sa[i]));
            MUST(MPI_Get_address(&win[i].i, &ra[i]));
        }
        memset(win, 0, sizeof win);
        MUST(MPI_Alltoallw_c(MPI_BOTTOM, cc, sa, wt, MPI_BOTTOM, cc, ra, wt, MPI_COMM_WORLD));
        for (int i = 0; i < size; i++)
            CHECK(win[i].i == 1000 * i + (size - 1 - rank), "alltoallw at MPI_BOTTOM from %d: %d",
                  i, win[i].i);
    }

    /* Reductions, several outstanding at once. */
    int x[3] = {rank, 2 * rank, 1}, red[3] = {0}, ar[3], sc[3], ex[3] = {-7, -7, -7};
    double dx = rank + 0.5, dsum = 0;
    MPI_Request rs[5];
    MUST(MPI_Ireduce(x, red, 3, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD, &rs[0]));
    MUST(MPI_Iallreduce(x, ar, 3, MPI_INT, MPI_MAX, MPI_COMM_WORLD, &rs[1]));
    MUST(MPI_Iscan(x, sc, 3, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &rs[2]));
    MUST(MPI_Iexscan(x, ex, 3, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &rs[3]));
    MUST(MPI_Iallreduce(&dx, &dsum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &rs[4]));
    MUST(MPI_Waitall(5, rs, MPI_STATUSES_IGNORE));
    int tri = size * (size - 1) / 2, pre = rank * (rank - 1) / 2;
    if (rank == 0) CHECK(red[0] == tri && red[1] == 2 * tri && red[2] == size, "ireduce");
    CHECK(ar[0] == size - 1 && ar[1] == 2 * (size - 1) && ar[2] == 1, "iallreduce max");
    CHECK(sc[0] == pre + rank && sc[2] == rank + 1, "iscan %d %d", sc[0], sc[2]);
    if (rank > 0) CHECK(ex[0] == pre && ex[1] == 2 * pre && ex[2] == rank, "iexscan %d", ex[0]);
    CHECK(dsum == tri + 0.5 * size, "iallreduce double %f", dsum);
    int ip = rank;
    MUST(MPI_Iallreduce(MPI_IN_PLACE, &ip, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r));
    wait1(&r);
    CHECK(ip == tri, "iallreduce in place %d", ip);
    MPI_Op mx;
    MUST(MPI_Op_create(imax, 1, &mx));
    int um = 3 * rank, umax = -1;
    MUST(MPI_Iallreduce(&um, &umax, 1, MPI_INT, mx, MPI_COMM_WORLD, &r));
    wait1(&r);
    CHECK(umax == 3 * (size - 1), "iallreduce user op %d", umax);
    MUST(MPI_Op_free(&mx));

    /* Reduce_scatter(_block): element j of rank i's input is i + j. */
    int rin[64], rout[16];
    for (int j = 0; j < 2 * size; j++) rin[j] = rank + j;
    MUST(MPI_Ireduce_scatter_block(rin, rout, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r));
    wait1(&r);
    for (int k = 0; k < 2; k++) CHECK(rout[k] == tri + size * (2 * rank + k), "ireduce_scatter_block");
    for (int j = 0; j < 2 * size; j++) rin[j] = rank + j;
    MUST(MPI_Ireduce_scatter_block(MPI_IN_PLACE, rin, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r));
    wait1(&r);
    for (int k = 0; k < 2; k++) CHECK(rin[k] == tri + size * (2 * rank + k), "ireduce_scatter_block in place");
    int total = 0;
    for (int i = 0; i < size; i++) { counts[i] = i + 1; total += i + 1; }
    for (int j = 0; j < total; j++) rin[j] = rank + j;
    MUST(MPI_Ireduce_scatter(rin, rout, counts, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r));
    wait1(&r);
    for (int k = 0; k <= rank; k++)
        CHECK(rout[k] == tri + size * (rank * (rank + 1) / 2 + k), "ireduce_scatter %d", k);
    for (int j = 0; j < total; j++) rin[j] = rank + j;
    MUST(MPI_Ireduce_scatter(MPI_IN_PLACE, rin, counts, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r));
    wait1(&r);
    for (int k = 0; k <= rank; k++)
        CHECK(rin[k] == tri + size * (rank * (rank + 1) / 2 + k), "ireduce_scatter in place %d", k);

    /* A derived (strided) datatype: every other int. */
    MPI_Datatype every2;
    MUST(MPI_Type_vector(3, 1, 2, MPI_INT, &every2));
    MUST(MPI_Type_commit(&every2));
    int sv[6];
    for (int k = 0; k < 6; k++) sv[k] = rank == 0 ? (k % 2 ? -5 : 40 + k) : -1;
    MUST(MPI_Ibcast(sv, 1, every2, 0, MPI_COMM_WORLD, &r));
    wait1(&r);
    for (int k = 0; k < 6; k += 2) CHECK(sv[k] == 40 + k, "ibcast vector %d: %d", k, sv[k]);
    if (rank != 0) for (int k = 1; k < 6; k += 2) CHECK(sv[k] == -1, "ibcast vector gap %d", k);
    int gv[6 * 16];
    for (int k = 0; k < 6; k++) sv[k] = k % 2 ? -9 : rank * 10 + k;
    MUST(MPI_Iallgather(sv, 1, every2, gv, 3, MPI_INT, MPI_COMM_WORLD, &r));
    wait1(&r);
    for (int i = 0; i < size; i++)
        for (int k = 0; k < 3; k++) CHECK(gv[3 * i + k] == i * 10 + 2 * k, "iallgather vector %d/%d", i, k);
    MUST(MPI_Type_free(&every2));
}

static void persistent(int rank, int size) {
    int tri = size * (size - 1) / 2;
    int b = 0, x = 0, sum = 0, all[16], sc = 0;
    MPI_Request rs[5];
    MUST(MPI_Barrier_init(MPI_COMM_WORLD, MPI_INFO_NULL, &rs[0]));
    MUST(MPI_Bcast_init(&b, 1, MPI_INT, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &rs[1]));
    MUST(MPI_Allreduce_init(&x, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &rs[2]));
    MUST(MPI_Allgather_init(&x, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD, MPI_INFO_NULL, &rs[3]));
    MUST(MPI_Scan_init(&x, &sc, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &rs[4]));
    for (int round = 0; round < 3; round++) {
        b = rank == 0 ? 1000 + round : -1;
        x = rank + round;
        MUST(MPI_Startall(5, rs));
        MUST(MPI_Waitall(5, rs, MPI_STATUSES_IGNORE));
        for (int i = 0; i < 5; i++) CHECK(rs[i] != MPI_REQUEST_NULL, "persistent request freed");
        CHECK(b == 1000 + round, "bcast_init round %d: %d", round, b);
        CHECK(sum == tri + size * round, "allreduce_init round %d: %d", round, sum);
        for (int i = 0; i < size; i++) CHECK(all[i] == i + round, "allgather_init %d", i);
        CHECK(sc == rank * (rank + 1) / 2 + (rank + 1) * round, "scan_init %d", sc);
    }
    for (int i = 0; i < 5; i++) MUST(MPI_Request_free(&rs[i]));

    /* The other persistent collectives, once each, restarted twice. */
    int g[16], s = 0, red = 0, ex = -1, counts[16], displs[16], v[64], piece[16], rsb[2];
    int st[16], rt[16], rin[64], rout[16];
    for (int i = 0; i < size; i++) { counts[i] = 1; displs[i] = size - 1 - i; }
    MPI_Request q[11];
    MUST(MPI_Gather_init(&x, 1, MPI_INT, g, 1, MPI_INT, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &q[0]));
    MUST(MPI_Scatter_init(g, 1, MPI_INT, &s, 1, MPI_INT, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &q[1]));
    MUST(MPI_Reduce_init(&x, &red, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &q[2]));
    MUST(MPI_Exscan_init(&x, &ex, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &q[3]));
    MUST(MPI_Gatherv_init(&x, 1, MPI_INT, v, counts, displs, MPI_INT, 0, MPI_COMM_WORLD,
                          MPI_INFO_NULL, &q[4]));
    MUST(MPI_Scatterv_init(st, counts, displs, MPI_INT, piece, 1, MPI_INT, 0, MPI_COMM_WORLD,
                           MPI_INFO_NULL, &q[5]));
    MUST(MPI_Allgatherv_init(&x, 1, MPI_INT, v + 32, counts, displs, MPI_INT, MPI_COMM_WORLD,
                             MPI_INFO_NULL, &q[6]));
    MUST(MPI_Alltoall_init(st, 1, MPI_INT, rt, 1, MPI_INT, MPI_COMM_WORLD, MPI_INFO_NULL, &q[7]));
    MUST(MPI_Alltoallv_init(st, counts, displs0(size), MPI_INT, rin, counts, displs, MPI_INT,
                            MPI_COMM_WORLD, MPI_INFO_NULL, &q[8]));
    MUST(MPI_Reduce_scatter_block_init(st, rsb, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD,
                                       MPI_INFO_NULL, &q[9]));
    MUST(MPI_Reduce_scatter_init(st, rout, counts, MPI_INT, MPI_SUM, MPI_COMM_WORLD,
                                 MPI_INFO_NULL, &q[10]));
    for (int round = 0; round < 2; round++) {
        x = 7 * rank + round;
        for (int i = 0; i < size; i++) { g[i] = rank == 0 ? 3 * i + round : -1; st[i] = 100 * rank + i + round; }
        /* Gather writes g at the root while scatter reads it: run them one after the other. */
        MUST(MPI_Start(&q[0]));
        MUST(MPI_Wait(&q[0], MPI_STATUS_IGNORE));
        if (rank == 0)
            for (int i = 0; i < size; i++) CHECK(g[i] == 7 * i + round, "gather_init %d", i);
        MUST(MPI_Start(&q[1]));
        MUST(MPI_Wait(&q[1], MPI_STATUS_IGNORE));
        CHECK(s == 7 * rank + round, "scatter_init %d", s);
        MUST(MPI_Startall(9, q + 2));
        MUST(MPI_Waitall(9, q + 2, MPI_STATUSES_IGNORE));
        if (rank == 0) CHECK(red == 7 * tri + size * round, "reduce_init %d", red);
        if (rank > 0) CHECK(ex == 7 * rank * (rank - 1) / 2 + rank * round, "exscan_init %d", ex);
        if (rank == 0)
            for (int i = 0; i < size; i++) CHECK(v[size - 1 - i] == 7 * i + round, "gatherv_init %d", i);
        CHECK(piece[0] == 100 * 0 + (size - 1 - rank) + round, "scatterv_init %d", piece[0]);
        for (int i = 0; i < size; i++) CHECK(v[32 + size - 1 - i] == 7 * i + round, "allgatherv_init %d", i);
        for (int i = 0; i < size; i++) CHECK(rt[i] == 100 * i + rank + round, "alltoall_init %d", i);
        for (int i = 0; i < size; i++) CHECK(rin[size - 1 - i] == 100 * i + rank + round, "alltoallv_init %d", i);
        CHECK(rsb[0] == 100 * tri + size * (rank + round), "reduce_scatter_block_init %d", rsb[0]);
        CHECK(rout[0] == 100 * tri + size * (rank + round), "reduce_scatter_init %d", rout[0]);
    }
    for (int i = 0; i < 11; i++) MUST(MPI_Request_free(&q[i]));

    /* In place, persistent: each start reads the buffer as it is then, not as it was at init. */
    int agv[16], a2v[16], rsi[32], ones[16], od[16];
    for (int i = 0; i < size; i++) { ones[i] = 1; od[i] = i; }
    MPI_Request ip[3];
    MUST(MPI_Allgatherv_init(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, agv, ones, od, MPI_INT,
                             MPI_COMM_WORLD, MPI_INFO_NULL, &ip[0]));
    MUST(MPI_Alltoallv_init(MPI_IN_PLACE, NULL, NULL, MPI_DATATYPE_NULL, a2v, ones, od, MPI_INT,
                            MPI_COMM_WORLD, MPI_INFO_NULL, &ip[1]));
    MUST(MPI_Reduce_scatter_block_init(MPI_IN_PLACE, rsi, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD,
                                       MPI_INFO_NULL, &ip[2]));
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < size; i++) {
            agv[i] = i == rank ? 50 * rank + round : -1;
            a2v[i] = 1000 * rank + 10 * i + round;
            rsi[2 * i] = rank + i + round;
            rsi[2 * i + 1] = round;
        }
        MUST(MPI_Startall(3, ip));
        MUST(MPI_Waitall(3, ip, MPI_STATUSES_IGNORE));
        for (int i = 0; i < size; i++) {
            CHECK(agv[i] == 50 * i + round, "allgatherv_init in place round %d: [%d] %d", round, i, agv[i]);
            CHECK(a2v[i] == 1000 * i + 10 * rank + round, "alltoallv_init in place round %d: [%d] %d", round, i, a2v[i]);
        }
        CHECK(rsi[0] == tri + size * (rank + round) && rsi[1] == size * round,
              "reduce_scatter_block_init in place round %d: %d %d", round, rsi[0], rsi[1]);
    }
    for (int i = 0; i < 3; i++) MUST(MPI_Request_free(&ip[i]));
}

static void errors(int rank, int size) {
    (void)size;
    MUST(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    MPI_Request r = MPI_REQUEST_NULL;
    int x = rank, y, cls;
    cls = MPI_Ibcast(&x, 1, MPI_INT, -1, MPI_COMM_WORLD, &r);
    MUST(MPI_Error_class(cls, &cls));
    CHECK(cls == MPI_ERR_ROOT, "ibcast bad root: class %d", cls);
    cls = MPI_Iallreduce(&x, &y, 1, MPI_INT, MPI_OP_NULL, MPI_COMM_WORLD, &r);
    MUST(MPI_Error_class(cls, &cls));
    CHECK(cls == MPI_ERR_OP, "iallreduce bad op: class %d", cls);
    cls = MPI_Iallreduce(&x, &y, -1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r);
    MUST(MPI_Error_class(cls, &cls));
    CHECK(cls == MPI_ERR_COUNT, "iallreduce bad count: class %d", cls);
    cls = MPI_Ibarrier(MPI_COMM_NULL, &r);
    MUST(MPI_Error_class(cls, &cls));
    CHECK(cls == MPI_ERR_COMM, "ibarrier null comm: class %d", cls);
    cls = MPI_Ibarrier(MPI_COMM_WORLD, NULL);
    MUST(MPI_Error_class(cls, &cls));
    CHECK(cls == MPI_ERR_ARG, "ibarrier null request: class %d", cls);
    cls = MPI_Iallgather(&x, 1, MPI_INT, NULL, 1, MPI_INT, MPI_COMM_WORLD, &r);
    MUST(MPI_Error_class(cls, &cls));
    CHECK(cls == MPI_ERR_BUFFER, "iallgather null buffer: class %d", cls);
    cls = MPI_Iallreduce(&x, &y, 1, MPI_DATATYPE_NULL, MPI_SUM, MPI_COMM_WORLD, &r);
    MUST(MPI_Error_class(cls, &cls));
    CHECK(cls == MPI_ERR_TYPE, "iallreduce null type: class %d", cls);
    CHECK(r == MPI_REQUEST_NULL, "a failed call made a request");
    /* MPI still works. */
    MUST(MPI_Iallreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r));
    wait1(&r);
    MUST(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
}

int main(int argc, char **argv) {
    int rank, size;
    MUST(MPI_Init(&argc, &argv));
    MUST(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    MUST(MPI_Comm_size(MPI_COMM_WORLD, &size));
    nonblocking(rank, size);
    persistent(rank, size);
    errors(rank, size);
    MUST(MPI_Finalize());
    return 0;
}
