/* Collectives on intercommunicators in all three forms: blocking, nonblocking (MPI_I...)
 * and persistent (..._init, started twice with new data before each start). Every
 * collective the standard defines on intercommunicators: barrier, bcast, gather(v),
 * scatter(v), allgather(v), alltoall(v/w), reduce, allreduce, reduce_scatter(_block), with
 * MPI_ROOT/MPI_PROC_NULL roots from either group, a derived datatype in a reduction and
 * in an alltoallw, several nonblocking collectives outstanding at once, and the errors:
 * MPI_IN_PLACE (MPI_ERR_ARG) and scans (not defined on intercommunicators: MPI_ERR_COMM).
 * The world is split into its even and odd ranks (np >= 2). */
#include <string.h>
#include "check.h"

/* Runs one collective in each form: BLOCK (blocking; 0 where the call has no blocking
 * form to test here), NB (nonblocking, request rq_), INIT (persistent, request rq_). RESET
 * runs before, the checks (the rest) after each run; `rep` (0 or 1; 1 only for the second
 * start of a persistent request) should change the data. */
#define FORMS(RESET, BLOCK, NB, INIT, ...)                                          \
    for (int form = 0; form < 3; form++) {                                          \
        MPI_Request rq_ = MPI_REQUEST_NULL;                                         \
        if (form == 2) MUST(INIT);                                                  \
        for (int rep = 0; rep < (form == 2 ? 2 : 1); rep++) {                       \
            RESET;                                                                  \
            if (form == 0) MUST(BLOCK);                                             \
            else if (form == 1) MUST(NB);                                           \
            else MUST(MPI_Start(&rq_));                                             \
            if (form != 0) MUST(MPI_Wait(&rq_, MPI_STATUS_IGNORE));                 \
            CHECK(rq_ == (form == 2 ? rq_ : MPI_REQUEST_NULL), "request not freed"); \
            __VA_ARGS__;                                                            \
        }                                                                           \
        if (form == 2) MUST(MPI_Request_free(&rq_));                                \
    }

#define N 600

static int color, me, lsize, rsize, wrank;

/* The world rank of remote rank j. */
static int remote_world(int j) { return 2 * j + 1 - color; }

/* The root argument of a rooted call whose root is rank 0 of group `g`. */
static int root_in(int g) {
    if (color == g) return me == 0 ? MPI_ROOT : MPI_PROC_NULL;
    return 0;
}

static void fill(int *a, int n, int v) {
    for (int k = 0; k < n; k++) a[k] = v;
}

int main(int argc, char **argv) {
    int wsize;
    MUST(MPI_Init(&argc, &argv));
    MUST(MPI_Comm_rank(MPI_COMM_WORLD, &wrank));
    MUST(MPI_Comm_size(MPI_COMM_WORLD, &wsize));
    if (wsize < 2) {
        MUST(MPI_Finalize());
        return 0;
    }
    color = wrank % 2;
    MPI_Comm half, inter;
    MUST(MPI_Comm_split(MPI_COMM_WORLD, color, wrank, &half));
    MUST(MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, color == 0 ? 1 : 0, 5, &inter));
    MUST(MPI_Comm_rank(inter, &me));
    MUST(MPI_Comm_size(inter, &lsize));
    MUST(MPI_Comm_remote_size(inter, &rsize));
    CHECK(rsize <= 32, "too many ranks");
    static int sbuf[N], rbuf[N];

    FORMS((void)0, MPI_Barrier(inter), MPI_Ibarrier(inter, &rq_),
          MPI_Barrier_init(inter, MPI_INFO_NULL, &rq_), (void)0);

    for (int g = 0; g < 2; g++) {
        int root = root_in(g);
        /* Bcast: 4 ints from the root; its group's other processes are not touched. */
        FORMS(fill(rbuf, 4, root == MPI_ROOT ? 100 * rep : -1),
              MPI_Bcast(rbuf, 4, MPI_INT, root, inter),
              MPI_Ibcast(rbuf, 4, MPI_INT, root, inter, &rq_),
              MPI_Bcast_init(rbuf, 4, MPI_INT, root, inter, MPI_INFO_NULL, &rq_),
              for (int k = 0; k < 4; k++) CHECK(rbuf[k] == (root >= 0 ? 100 * rep : root == MPI_ROOT ? 100 * rep : -1), "bcast[%d]=%d root %d", k, rbuf[k], root));

        /* Gather: each remote process sends two ints. */
        FORMS((sbuf[0] = wrank + rep, sbuf[1] = -wrank, fill(rbuf, 2 * rsize, -1)),
              MPI_Gather(sbuf, 2, MPI_INT, rbuf, 2, MPI_INT, root, inter),
              MPI_Igather(sbuf, 2, MPI_INT, rbuf, 2, MPI_INT, root, inter, &rq_),
              MPI_Gather_init(sbuf, 2, MPI_INT, rbuf, 2, MPI_INT, root, inter, MPI_INFO_NULL, &rq_),
              for (int j = 0; j < rsize && root == MPI_ROOT; j++)
                  CHECK(rbuf[2 * j] == remote_world(j) + rep && rbuf[2 * j + 1] == -remote_world(j),
                        "gather[%d]=%d,%d", j, rbuf[2 * j], rbuf[2 * j + 1]);
              CHECK(root == MPI_ROOT || rbuf[0] == -1, "gather wrote a non-root's buffer"));

        /* Scatter: the root sends remote rank j the ints 10 j + rep, j. */
        FORMS({ fill(rbuf, 2, -1); for (int j = 0; j < rsize; j++) { sbuf[2 * j] = 10 * j + rep; sbuf[2 * j + 1] = j; } },
              MPI_Scatter(sbuf, 2, MPI_INT, rbuf, 2, MPI_INT, root, inter),
              MPI_Iscatter(sbuf, 2, MPI_INT, rbuf, 2, MPI_INT, root, inter, &rq_),
              MPI_Scatter_init(sbuf, 2, MPI_INT, rbuf, 2, MPI_INT, root, inter, MPI_INFO_NULL, &rq_),
              CHECK(root < 0 ? rbuf[0] == -1 : rbuf[0] == 10 * me + rep && rbuf[1] == me,
                    "scatter %d,%d root %d", rbuf[0], rbuf[1], root));

        /* Reduce: the remote group's {wrank + rep, 1} summed at the root. */
        int want = 0;
        for (int j = 0; j < rsize; j++) want += remote_world(j);
        FORMS((sbuf[0] = wrank + rep, sbuf[1] = 1, fill(rbuf, 2, -1)),
              MPI_Reduce(sbuf, rbuf, 2, MPI_INT, MPI_SUM, root, inter),
              MPI_Ireduce(sbuf, rbuf, 2, MPI_INT, MPI_SUM, root, inter, &rq_),
              MPI_Reduce_init(sbuf, rbuf, 2, MPI_INT, MPI_SUM, root, inter, MPI_INFO_NULL, &rq_),
              CHECK(root != MPI_ROOT ? rbuf[0] == -1 : rbuf[0] == want + rsize * rep && rbuf[1] == rsize,
                    "reduce %d,%d root %d", rbuf[0], rbuf[1], root));

        /* Gatherv / scatterv: remote rank j's block holds j + 1 ints from displacement 1. */
        int counts[32], displs[32], total = 1;
        for (int j = 0; j < rsize; j++) {
            counts[j] = j + 1;
            displs[j] = total;
            total += j + 1;
        }
        FORMS((fill(sbuf, me + 1, wrank + rep), fill(rbuf, total, -1)),
              MPI_Gatherv(sbuf, me + 1, MPI_INT, rbuf, counts, displs, MPI_INT, root, inter),
              MPI_Igatherv(sbuf, me + 1, MPI_INT, rbuf, counts, displs, MPI_INT, root, inter, &rq_),
              MPI_Gatherv_init(sbuf, me + 1, MPI_INT, rbuf, counts, displs, MPI_INT, root, inter,
                               MPI_INFO_NULL, &rq_),
              CHECK(rbuf[0] == -1, "gatherv wrote before the first block");
              for (int j = 0; j < rsize && root == MPI_ROOT; j++)
                  for (int k = 0; k <= j; k++)
                      CHECK(rbuf[displs[j] + k] == remote_world(j) + rep, "gatherv %d.%d=%d", j, k,
                            rbuf[displs[j] + k]));
        FORMS({ for (int j = 0; j < rsize; j++) fill(sbuf + displs[j], j + 1, 10 * j + rep); fill(rbuf, 33, -1); },
              MPI_Scatterv(sbuf, counts, displs, MPI_INT, rbuf, me + 1, MPI_INT, root, inter),
              MPI_Iscatterv(sbuf, counts, displs, MPI_INT, rbuf, me + 1, MPI_INT, root, inter, &rq_),
              MPI_Scatterv_init(sbuf, counts, displs, MPI_INT, rbuf, me + 1, MPI_INT, root, inter,
                                MPI_INFO_NULL, &rq_),
              for (int k = 0; k <= me; k++)
                  CHECK(rbuf[k] == (root >= 0 ? 10 * me + rep : -1), "scatterv %d=%d root %d", k, rbuf[k], root);
              CHECK(rbuf[me + 1] == -1, "scatterv wrote past the block"));
    }

    /* Allgather / allreduce: every process gets the remote group's data. */
    {
        int sum = 0;
        for (int j = 0; j < rsize; j++) sum += remote_world(j);
        FORMS((sbuf[0] = wrank + rep, fill(rbuf, rsize, -1)),
              MPI_Allgather(sbuf, 1, MPI_INT, rbuf, 1, MPI_INT, inter),
              MPI_Iallgather(sbuf, 1, MPI_INT, rbuf, 1, MPI_INT, inter, &rq_),
              MPI_Allgather_init(sbuf, 1, MPI_INT, rbuf, 1, MPI_INT, inter, MPI_INFO_NULL, &rq_),
              for (int j = 0; j < rsize; j++)
                  CHECK(rbuf[j] == remote_world(j) + rep, "allgather[%d]=%d", j, rbuf[j]));
        FORMS((sbuf[0] = wrank + rep, sbuf[1] = 1, fill(rbuf, 2, -1)),
              MPI_Allreduce(sbuf, rbuf, 2, MPI_INT, MPI_SUM, inter),
              MPI_Iallreduce(sbuf, rbuf, 2, MPI_INT, MPI_SUM, inter, &rq_),
              MPI_Allreduce_init(sbuf, rbuf, 2, MPI_INT, MPI_SUM, inter, MPI_INFO_NULL, &rq_),
              CHECK(rbuf[0] == sum + rsize * rep && rbuf[1] == rsize, "allreduce %d,%d", rbuf[0], rbuf[1]));
    }

    /* Alltoall with blocks of different sizes each way: the even group sends two ints per
     * remote rank, the odd group one. */
    {
        int sb = color == 0 ? 2 : 1, rb = 3 - sb;
        FORMS({ for (int j = 0; j < rsize; j++) for (int k = 0; k < sb; k++) sbuf[j * sb + k] = wrank * 1000 + j * 10 + k + rep; fill(rbuf, rb * rsize, -1); },
              MPI_Alltoall(sbuf, sb, MPI_INT, rbuf, rb, MPI_INT, inter),
              MPI_Ialltoall(sbuf, sb, MPI_INT, rbuf, rb, MPI_INT, inter, &rq_),
              MPI_Alltoall_init(sbuf, sb, MPI_INT, rbuf, rb, MPI_INT, inter, MPI_INFO_NULL, &rq_),
              for (int j = 0; j < rsize; j++)
                  for (int k = 0; k < rb; k++)
                      CHECK(rbuf[j * rb + k] == remote_world(j) * 1000 + me * 10 + k + rep,
                            "alltoall %d.%d=%d", j, k, rbuf[j * rb + k]));
    }

    /* Allgatherv, alltoallv, alltoallw: me + 1 ints to each remote rank j, j + 1 from it. */
    {
        int counts[32], displs[32], sc[32], sd[32], total = 1;
        int wsc[32], wsd[32], wrc[32], wrd[32];
        MPI_Datatype wst[32], wrt[32], blk[32];
        for (int j = 0; j < rsize; j++) {
            counts[j] = j + 1;
            displs[j] = total;
            total += j + 1;
            sc[j] = me + 1;
            sd[j] = j * (me + 1);
            /* alltoallw: sent as me + 1 MPI_INTs, received as one contiguous type of j + 1
             * ints; displacements in bytes. */
            wsc[j] = me + 1;
            wsd[j] = sd[j] * (int)sizeof(int);
            wst[j] = MPI_INT;
            MUST(MPI_Type_contiguous(j + 1, MPI_INT, &blk[j]));
            MUST(MPI_Type_commit(&blk[j]));
            wrc[j] = 1;
            wrd[j] = displs[j] * (int)sizeof(int);
            wrt[j] = blk[j];
        }
        FORMS((fill(sbuf, me + 1, wrank + rep), fill(rbuf, total, -1)),
              MPI_Allgatherv(sbuf, me + 1, MPI_INT, rbuf, counts, displs, MPI_INT, inter),
              MPI_Iallgatherv(sbuf, me + 1, MPI_INT, rbuf, counts, displs, MPI_INT, inter, &rq_),
              MPI_Allgatherv_init(sbuf, me + 1, MPI_INT, rbuf, counts, displs, MPI_INT, inter,
                                  MPI_INFO_NULL, &rq_),
              for (int j = 0; j < rsize; j++)
                  for (int k = 0; k <= j; k++)
                      CHECK(rbuf[displs[j] + k] == remote_world(j) + rep, "allgatherv %d.%d=%d", j, k,
                            rbuf[displs[j] + k]));
        FORMS({ for (int j = 0; j < rsize; j++) fill(sbuf + sd[j], me + 1, wrank * 100 + j + rep); fill(rbuf, total, -1); },
              MPI_Alltoallv(sbuf, sc, sd, MPI_INT, rbuf, counts, displs, MPI_INT, inter),
              MPI_Ialltoallv(sbuf, sc, sd, MPI_INT, rbuf, counts, displs, MPI_INT, inter, &rq_),
              MPI_Alltoallv_init(sbuf, sc, sd, MPI_INT, rbuf, counts, displs, MPI_INT, inter,
                                 MPI_INFO_NULL, &rq_),
              for (int j = 0; j < rsize; j++)
                  for (int k = 0; k <= j; k++)
                      CHECK(rbuf[displs[j] + k] == remote_world(j) * 100 + me + rep,
                            "alltoallv %d.%d=%d", j, k, rbuf[displs[j] + k]));
        FORMS({ for (int j = 0; j < rsize; j++) fill(sbuf + sd[j], me + 1, wrank * 100 + j + rep); fill(rbuf, total, -1); },
              MPI_Alltoallw(sbuf, wsc, wsd, wst, rbuf, wrc, wrd, wrt, inter),
              MPI_Ialltoallw(sbuf, wsc, wsd, wst, rbuf, wrc, wrd, wrt, inter, &rq_),
              MPI_Alltoallw_init(sbuf, wsc, wsd, wst, rbuf, wrc, wrd, wrt, inter, MPI_INFO_NULL, &rq_),
              CHECK(rbuf[0] == -1, "alltoallw wrote before the first block");
              for (int j = 0; j < rsize; j++)
                  for (int k = 0; k <= j; k++)
                      CHECK(rbuf[displs[j] + k] == remote_world(j) * 100 + me + rep,
                            "alltoallw %d.%d=%d", j, k, rbuf[displs[j] + k]));
        for (int j = 0; j < rsize; j++) MUST(MPI_Type_free(&blk[j]));
    }

    /* Reduce-scatter: both groups reduce T ints; local rank i gets counts[i] of the other
     * group's sums. Element e of a process's input is 1000 wrank + e + rep. */
    {
        enum { T = 12 };
        int counts[32], off[33];
        off[0] = 0;
        for (int i = 0; i < lsize; i++) {
            counts[i] = T / lsize + (i < T % lsize);
            off[i + 1] = off[i] + counts[i];
        }
        int s = 0;
        for (int j = 0; j < rsize; j++) s += 1000 * remote_world(j);
        FORMS({ for (int e = 0; e < T; e++) sbuf[e] = 1000 * wrank + e + rep; fill(rbuf, T, -1); },
              MPI_Reduce_scatter(sbuf, rbuf, counts, MPI_INT, MPI_SUM, inter),
              MPI_Ireduce_scatter(sbuf, rbuf, counts, MPI_INT, MPI_SUM, inter, &rq_),
              MPI_Reduce_scatter_init(sbuf, rbuf, counts, MPI_INT, MPI_SUM, inter, MPI_INFO_NULL, &rq_),
              for (int k = 0; k < counts[me]; k++)
                  CHECK(rbuf[k] == s + rsize * (off[me] + k + rep), "reduce_scatter %d=%d", k, rbuf[k]);
              CHECK(rbuf[counts[me]] == -1, "reduce_scatter wrote past the block"));
        /* The block form needs groups of one size (both reduce recvcount x group size). */
        if (lsize == rsize) {
            FORMS({ for (int e = 0; e < 2 * lsize; e++) sbuf[e] = 1000 * wrank + e + rep; fill(rbuf, 3, -1); },
                  MPI_Reduce_scatter_block(sbuf, rbuf, 2, MPI_INT, MPI_SUM, inter),
                  MPI_Ireduce_scatter_block(sbuf, rbuf, 2, MPI_INT, MPI_SUM, inter, &rq_),
                  MPI_Reduce_scatter_block_init(sbuf, rbuf, 2, MPI_INT, MPI_SUM, inter, MPI_INFO_NULL, &rq_),
                  for (int k = 0; k < 2; k++)
                      CHECK(rbuf[k] == s + rsize * (2 * me + k + rep), "reduce_scatter_block %d=%d", k, rbuf[k]);
                  CHECK(rbuf[2] == -1, "reduce_scatter_block wrote past the block"));
        }
    }

    /* A derived datatype in reductions: every other int of four (a vector), MPI_MAX. */
    {
        MPI_Datatype every2;
        MUST(MPI_Type_vector(2, 1, 2, MPI_INT, &every2));
        MUST(MPI_Type_commit(&every2));
        int top = 0;
        for (int j = 0; j < rsize; j++) top = remote_world(j) > top ? remote_world(j) : top;
        FORMS((sbuf[0] = wrank + rep, sbuf[1] = -7, sbuf[2] = -wrank, sbuf[3] = -7, fill(rbuf, 4, -1)),
              MPI_Allreduce(sbuf, rbuf, 1, every2, MPI_MAX, inter),
              MPI_Iallreduce(sbuf, rbuf, 1, every2, MPI_MAX, inter, &rq_),
              MPI_Allreduce_init(sbuf, rbuf, 1, every2, MPI_MAX, inter, MPI_INFO_NULL, &rq_),
              CHECK(rbuf[0] == top + rep && rbuf[2] == -remote_world(0) && rbuf[1] == -1 && rbuf[3] == -1,
                    "derived allreduce %d %d %d %d", rbuf[0], rbuf[1], rbuf[2], rbuf[3]));
        for (int g = 0; g < 2; g++) {
            int root = root_in(g);
            FORMS((sbuf[0] = wrank + rep, sbuf[1] = -7, sbuf[2] = -wrank, sbuf[3] = -7, fill(rbuf, 4, -1)),
                  MPI_Reduce(sbuf, rbuf, 1, every2, MPI_MAX, root, inter),
                  MPI_Ireduce(sbuf, rbuf, 1, every2, MPI_MAX, root, inter, &rq_),
                  MPI_Reduce_init(sbuf, rbuf, 1, every2, MPI_MAX, root, inter, MPI_INFO_NULL, &rq_),
                  if (root == MPI_ROOT)
                      CHECK(rbuf[0] == top + rep && rbuf[2] == -remote_world(0) && rbuf[1] == -1,
                            "derived reduce %d %d %d", rbuf[0], rbuf[1], rbuf[2]);
                  else CHECK(rbuf[0] == -1 && rbuf[2] == -1, "derived reduce wrote a non-root"));
        }
        MUST(MPI_Type_free(&every2));
    }

    /* Several nonblocking collectives outstanding at once, completed in one waitall. */
    {
        int b[4] = {-1, -1, -1, -1}, x = wrank, ar = -1, ag[32];
        int root = root_in(0);
        if (root == MPI_ROOT) fill(b, 4, 77);
        MPI_Request rq[3];
        MUST(MPI_Ibcast(b, 4, MPI_INT, root, inter, &rq[0]));
        MUST(MPI_Iallreduce(&x, &ar, 1, MPI_INT, MPI_MAX, inter, &rq[1]));
        MUST(MPI_Iallgather(&x, 1, MPI_INT, ag, 1, MPI_INT, inter, &rq[2]));
        MUST(MPI_Waitall(3, rq, MPI_STATUSES_IGNORE));
        CHECK(root == MPI_PROC_NULL ? b[0] == -1 : b[3] == 77, "overlapped bcast %d", b[3]);
        CHECK(ar == remote_world(rsize - 1), "overlapped allreduce %d", ar);
        for (int j = 0; j < rsize; j++) CHECK(ag[j] == remote_world(j), "overlapped allgather %d", ag[j]);
    }

    /* Errors: MPI_IN_PLACE is not defined on intercommunicators, nor are scans. */
    {
        MUST(MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN));
        MPI_Request r = MPI_REQUEST_NULL;
        int x = 1, cls, rc = MPI_Iallreduce(MPI_IN_PLACE, &x, 1, MPI_INT, MPI_SUM, inter, &r);
        MUST(MPI_Error_class(rc, &cls));
        CHECK(cls == MPI_ERR_ARG && r == MPI_REQUEST_NULL, "in-place iallreduce: class %d", cls);
        rc = MPI_Ialltoall(MPI_IN_PLACE, 1, MPI_INT, &x, 1, MPI_INT, inter, &r);
        MUST(MPI_Error_class(rc, &cls));
        CHECK(cls == MPI_ERR_ARG, "in-place ialltoall: class %d", cls);
        rc = MPI_Ibcast(&x, 1, MPI_INT, rsize, inter, &r);
        MUST(MPI_Error_class(rc, &cls));
        CHECK(cls == MPI_ERR_ROOT, "ibcast root %d: class %d", rsize, cls);
        rc = MPI_Iscan(&x, &x, 1, MPI_INT, MPI_SUM, inter, &r);
        MUST(MPI_Error_class(rc, &cls));
        CHECK(cls == MPI_ERR_COMM, "iscan: class %d", cls);
        rc = MPI_Exscan_init(&x, &x, 1, MPI_INT, MPI_SUM, inter, MPI_INFO_NULL, &r);
        MUST(MPI_Error_class(rc, &cls));
        CHECK(cls == MPI_ERR_COMM, "exscan_init: class %d", cls);
        rc = MPI_Scan(&x, &x, 1, MPI_INT, MPI_SUM, inter);
        MUST(MPI_Error_class(rc, &cls));
        CHECK(cls == MPI_ERR_COMM, "scan: class %d", cls);
        /* Still in step: a collective after the errors works. */
        int v = wrank, m = -1;
        MUST(MPI_Allreduce(&v, &m, 1, MPI_INT, MPI_MAX, inter));
        CHECK(m == remote_world(rsize - 1), "allreduce after errors %d", m);
    }

    MUST(MPI_Comm_free(&inter));
    MUST(MPI_Comm_free(&half));
    MUST(MPI_Finalize());
    return 0;
}
