/* Partitioned communication: MPI_Psend_init/MPI_Precv_init round a ring, partitions marked
 * ready one by one, by range and by list, data written after MPI_Start (the message carries
 * what the partitions hold when marked), a derived datatype, sender and receiver with
 * different partition counts across an intercommunicator, MPI_PROC_NULL, isolation from
 * ordinary receives, and the argument errors. */
#include <string.h>
#include "check.h"

#define PER 5 /* elements per partition */
#define MAXP 4

static int rank, size, next, prev;

/* The value element i of the message from rank `from` holds in round `round`. */
static double value(int from, int round, int i) { return from * 1000.0 + round * 100.0 + i; }

/* One ring exchange of `parts` partitions, `how` marks them: 0 one by one (last first),
 * 1 by ranges, 2 by lists. Each partition is written after MPI_Start, just before it is
 * marked ready. */
static void ring(int parts, int how, int rounds)
{
    double out[MAXP * PER], in[MAXP * PER];
    MPI_Request s, r;
    MUST(MPI_Psend_init(out, parts, PER, MPI_DOUBLE, next, 7, MPI_COMM_WORLD, MPI_INFO_NULL, &s));
    MUST(MPI_Precv_init(in, parts, PER, MPI_DOUBLE, prev, 7, MPI_COMM_WORLD, MPI_INFO_NULL, &r));
    for (int round = 0; round < rounds; round++) {
        memset(in, 0, sizeof in);
        memset(out, 0, sizeof out);
        MUST(MPI_Start(&r));
        int flag = 1;
        for (int p = 0; p < parts; p++) {
            MUST(MPI_Parrived(r, p, &flag));
            CHECK(!flag, "partition %d arrived before its sender started", p);
        }
        MUST(MPI_Barrier(MPI_COMM_WORLD));
        MUST(MPI_Start(&s));
        for (int k = 0; k < parts; k++) {
            int p = parts - 1 - k;
            for (int i = 0; i < PER; i++) out[p * PER + i] = value(rank, round, p * PER + i);
            if (how == 0) {
                MUST(MPI_Pready(p, s));
            } else if (how == 1 && k == parts - 1) {
                MUST(MPI_Pready_range(0, parts / 2, s));
                if (parts / 2 + 1 <= parts - 1) MUST(MPI_Pready_range(parts / 2 + 1, parts - 1, s));
            } else if (how == 2 && k == parts - 1) {
                int odd[MAXP], even[MAXP], no = 0, ne = 0;
                for (int q = 0; q < parts; q++) {
                    if (q % 2) odd[no++] = q; else even[ne++] = q;
                }
                MUST(MPI_Pready_list(no, odd, s));
                MUST(MPI_Pready_list(ne, even, s));
            }
        }
        for (int p = 0; p < parts; p++) {
            do {
                MUST(MPI_Parrived(r, p, &flag));
            } while (!flag);
            for (int i = 0; i < PER; i++)
                CHECK(in[p * PER + i] == value(prev, round, p * PER + i),
                      "round %d partition %d element %d: %g", round, p, i, in[p * PER + i]);
        }
        MPI_Status st;
        MUST(MPI_Wait(&r, &st));
        CHECK(st.MPI_SOURCE == prev && st.MPI_TAG == 7, "status %d/%d", st.MPI_SOURCE, st.MPI_TAG);
        int n;
        MUST(MPI_Get_count(&st, MPI_DOUBLE, &n));
        CHECK(n == parts * PER, "count %d", n);
        MUST(MPI_Wait(&s, MPI_STATUS_IGNORE));
        CHECK(s != MPI_REQUEST_NULL && r != MPI_REQUEST_NULL, "persistent requests stay");
    }
    MUST(MPI_Request_free(&s));
    MUST(MPI_Request_free(&r));
}

/* A vector type (every other double): the data written after MPI_Start, before the last
 * MPI_Pready, is what arrives. */
static void strided(void)
{
    MPI_Datatype vec;
    MUST(MPI_Type_vector(3, 1, 2, MPI_DOUBLE, &vec));
    MUST(MPI_Type_commit(&vec));
    double out[2 * 6], in[2 * 6];
    MPI_Request s, r;
    MUST(MPI_Psend_init(out, 2, 1, vec, next, 8, MPI_COMM_WORLD, MPI_INFO_NULL, &s));
    MUST(MPI_Precv_init(in, 2, 1, vec, prev, 8, MPI_COMM_WORLD, MPI_INFO_NULL, &r));
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < 12; i++) { out[i] = -1; in[i] = -2; }
        MUST(MPI_Start(&r));
        MUST(MPI_Start(&s));
        for (int i = 0; i < 12; i++) out[i] = value(rank, round, i);
        MUST(MPI_Pready(1, s));
        MUST(MPI_Pready(0, s));
        int flag = 0;
        do {
            MUST(MPI_Parrived(r, 1, &flag));
        } while (!flag);
        /* Each partition is one vector of 3 doubles 2 apart, its extent 5 doubles: elements
         * 0, 2, 4 and 5, 7, 9. */
        for (int i = 0; i < 12; i++) {
            int j = i < 5 ? i : i - 5;
            double want = i < 10 && j % 2 == 0 ? value(prev, round, i) : -2;
            CHECK(in[i] == want, "strided round %d element %d: %g, not %g", round, i, in[i], want);
        }
        MUST(MPI_Wait(&r, MPI_STATUS_IGNORE));
        MUST(MPI_Wait(&s, MPI_STATUS_IGNORE));
    }
    MUST(MPI_Request_free(&s));
    MUST(MPI_Request_free(&r));
    MUST(MPI_Type_free(&vec));
}

/* Across an intercommunicator: the lower half sends to the upper half, rank for rank. */
static void across(void)
{
    if (size < 2) return;
    int half = size / 2, low = rank < half;
    MPI_Comm inter;
    MPI_Comm local;
    MUST(MPI_Comm_split(MPI_COMM_WORLD, low, rank, &local));
    MUST(MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, low ? half : 0, 11, &inter));
    int me, remote;
    MUST(MPI_Comm_rank(inter, &me));
    MUST(MPI_Comm_remote_size(inter, &remote));
    double buf[3 * 2];
    MPI_Request r;
    if (me < remote && (low || me < half)) {
        if (low) {
            MUST(MPI_Psend_init(buf, 3, 2, MPI_DOUBLE, me, 4, inter, MPI_INFO_NULL, &r));
            MUST(MPI_Start(&r));
            for (int i = 0; i < 6; i++) buf[i] = value(rank, 9, i);
            MUST(MPI_Pready_range(0, 2, r));
        } else {
            for (int i = 0; i < 6; i++) buf[i] = -1;
            MUST(MPI_Precv_init(buf, 2, 3, MPI_DOUBLE, me, 4, inter, MPI_INFO_NULL, &r));
            MUST(MPI_Start(&r));
        }
        MUST(MPI_Wait(&r, MPI_STATUS_IGNORE));
        if (!low)
            for (int i = 0; i < 6; i++)
                CHECK(buf[i] == value(me, 9, i), "across element %d: %g", i, buf[i]);
        MUST(MPI_Request_free(&r));
    }
    MUST(MPI_Comm_free(&inter));
    MUST(MPI_Comm_free(&local));
}

int main(int argc, char **argv)
{
    MUST(MPI_Init(&argc, &argv));
    MUST(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    MUST(MPI_Comm_size(MPI_COMM_WORLD, &size));
    next = (rank + 1) % size;
    prev = (rank + size - 1) % size;

    /* An ordinary wildcard receive posted first must not take a partitioned message. */
    int plain = -1, one = 42;
    MPI_Request any;
    MUST(MPI_Irecv(&plain, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &any));
    for (int parts = 1; parts <= MAXP; parts++)
        for (int how = 0; how < 3; how++) ring(parts, how, 3);
    strided();
    int done = 0;
    MUST(MPI_Test(&any, &done, MPI_STATUS_IGNORE));
    CHECK(!done, "a wildcard receive took a partitioned message");
    MUST(MPI_Barrier(MPI_COMM_WORLD)); /* every rank tested before any plain message goes */
    MUST(MPI_Send(&one, 1, MPI_INT, next, 9, MPI_COMM_WORLD));
    MPI_Status st;
    MUST(MPI_Wait(&any, &st));
    CHECK(plain == 42 && st.MPI_TAG == 9 && st.MPI_SOURCE == prev, "the plain message");
    /* After the wildcard receive: MPI_Intercomm_create talks on MPI_COMM_WORLD, where that
     * receive would take its leaders' message. */
    across();

    /* MPI_PROC_NULL: the send completes once ready, the receive at once. */
    double x[2] = {1, 2};
    MPI_Request s, r;
    MUST(MPI_Psend_init(x, 2, 1, MPI_DOUBLE, MPI_PROC_NULL, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &s));
    MUST(MPI_Precv_init(x, 2, 1, MPI_DOUBLE, MPI_PROC_NULL, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &r));
    MUST(MPI_Start(&s));
    MUST(MPI_Start(&r));
    MUST(MPI_Pready_range(0, 1, s));
    MUST(MPI_Wait(&s, MPI_STATUS_IGNORE));
    MUST(MPI_Wait(&r, &st));
    CHECK(st.MPI_SOURCE == MPI_PROC_NULL, "receive from MPI_PROC_NULL");
    CHECK(x[0] == 1 && x[1] == 2, "nothing written");

    /* Errors. */
    MUST(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    int flag;
    CHECK(MPI_Pready(0, s) == MPI_ERR_REQUEST, "Pready of an inactive send");
    CHECK(MPI_Parrived(s, 0, &flag) == MPI_ERR_REQUEST, "Parrived of a send");
    MUST(MPI_Parrived(r, 0, &flag));
    CHECK(flag, "an inactive receive has arrived");
    CHECK(MPI_Parrived(r, 2, &flag) == MPI_ERR_ARG, "partition out of range");
    MUST(MPI_Start(&s));
    MUST(MPI_Pready(0, s));
    CHECK(MPI_Pready(0, s) == MPI_ERR_ARG, "a partition marked twice");
    CHECK(MPI_Pready(5, s) == MPI_ERR_ARG, "a partition out of range");
    CHECK(MPI_Pready(-1, s) == MPI_ERR_ARG, "a negative partition");
    CHECK(MPI_Pready_range(1, 0, s) == MPI_ERR_ARG, "an empty range");
    MUST(MPI_Pready(1, s));
    MUST(MPI_Wait(&s, MPI_STATUS_IGNORE));
    MUST(MPI_Request_free(&s));
    MUST(MPI_Request_free(&r));
    CHECK(MPI_Precv_init(x, 1, 1, MPI_DOUBLE, MPI_ANY_SOURCE, 0, MPI_COMM_WORLD, MPI_INFO_NULL,
                         &r) == MPI_ERR_RANK, "no MPI_ANY_SOURCE");
    CHECK(MPI_Precv_init(x, 1, 1, MPI_DOUBLE, prev, MPI_ANY_TAG, MPI_COMM_WORLD, MPI_INFO_NULL,
                         &r) == MPI_ERR_TAG, "no MPI_ANY_TAG");
    int *ub, found;
    MUST(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &found));
    CHECK(found && *ub >= 32767, "tag_ub");
    CHECK(MPI_Psend_init(x, 1, 1, MPI_DOUBLE, next, *ub + 1, MPI_COMM_WORLD, MPI_INFO_NULL, &s) ==
              MPI_ERR_TAG, "a tag above MPI_TAG_UB");
    CHECK(MPI_Send(x, 1, MPI_DOUBLE, next, *ub + 1, MPI_COMM_WORLD) == MPI_ERR_TAG,
          "a send tag above MPI_TAG_UB");
    CHECK(MPI_Psend_init(x, -1, 1, MPI_DOUBLE, next, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &s) !=
              MPI_SUCCESS, "negative partitions");

    MUST(MPI_Barrier(MPI_COMM_WORLD));
    MUST(MPI_Finalize());
    return 0;
}
