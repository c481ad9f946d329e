/* MPI-4.0's communicators from groups alone (np >= 2): MPI_Comm_create_from_group over the
 * even and the odd world ranks with different string tags (size, rank, allreduce, congruent
 * with the split, error handler and info hints), twice back to back; the empty group;
 * MPI_Intercomm_create_from_groups between the two groups, twice back to back with
 * different tags and leaders (remote size and group, sendrecv across, intercommunicator
 * allreduce); and the errors, raised on the error handler argument. */
#include <string.h>
#include "check.h"

static int user_calls;
static int user_last;
static MPI_Comm user_comm;

static void user_handler(MPI_Comm *c, int *code, ...) {
    user_calls++;
    user_last = *code;
    user_comm = *c;
}

/* The error class of return code rc. */
static int class_of(int rc) {
    int cls = -1;
    MUST(MPI_Error_class(rc, &cls));
    return cls;
}

/* Sum of the world ranks of parity `color` below wsize. */
static int parity_sum(int color, int wsize) {
    int s = 0;
    for (int r = color; r < wsize; r += 2) s += r;
    return s;
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
    MPI_Group world_group, parity[2];
    MUST(MPI_Comm_group(MPI_COMM_WORLD, &world_group));
    int ranges[2][1][3] = {{{0, wsize - 1 - (wsize - 1) % 2, 2}},
                           {{1, wsize - 1 - wsize % 2, 2}}};
    MUST(MPI_Group_range_incl(world_group, 1, ranges[0], &parity[0]));
    MUST(MPI_Group_range_incl(world_group, 1, ranges[1], &parity[1]));
    MPI_Group mine = parity[color], other = parity[1 - color];
    int msize = (wsize + 1 - color) / 2, osize = (wsize + color) / 2;

    MPI_Comm split;
    MUST(MPI_Comm_split(MPI_COMM_WORLD, color, wrank, &split));

    /* Intracommunicators, twice back to back with different tags; the two groups use
     * different tags too. */
    const char *tags[2][2] = {{"org.oxmpi.test.even.a", "org.oxmpi.test.even.b"},
                              {"org.oxmpi.test.odd.a", "org.oxmpi.test.odd.b"}};
    for (int k = 0; k < 2; k++) {
        MPI_Info info;
        MUST(MPI_Info_create(&info));
        MUST(MPI_Info_set(info, "oxmpi_test_hint", k == 0 ? "first" : "second"));
        MPI_Comm c = MPI_COMM_NULL;
        MUST(MPI_Comm_create_from_group(mine, tags[color][k], info, MPI_ERRORS_RETURN, &c));
        MUST(MPI_Info_free(&info));
        CHECK(c != MPI_COMM_NULL, "no communicator");
        int rank, size, flag, cmp;
        MUST(MPI_Comm_rank(c, &rank));
        MUST(MPI_Comm_size(c, &size));
        CHECK(rank == wrank / 2 && size == msize, "rank %d size %d", rank, size);
        MUST(MPI_Comm_test_inter(c, &flag));
        CHECK(!flag, "an intercommunicator");
        MUST(MPI_Comm_compare(c, split, &cmp));
        CHECK(cmp == MPI_CONGRUENT, "compare with the split: %d", cmp);
        int sum = -1;
        MUST(MPI_Allreduce(&wrank, &sum, 1, MPI_INT, MPI_SUM, c));
        CHECK(sum == parity_sum(color, wsize), "allreduce %d", sum);
        /* Point-to-point on it: a ring. */
        int got = -1;
        MUST(MPI_Sendrecv(&wrank, 1, MPI_INT, (rank + 1) % size, 3, &got, 1, MPI_INT,
                          (rank + size - 1) % size, 3, c, MPI_STATUS_IGNORE));
        CHECK(got == 2 * ((rank + size - 1) % size) + color, "ring got %d", got);
        MPI_Errhandler eh;
        MUST(MPI_Comm_get_errhandler(c, &eh));
        CHECK(eh == MPI_ERRORS_RETURN, "the error handler given is not set");
        MUST(MPI_Errhandler_free(&eh));
        MPI_Info used;
        char val[MPI_MAX_INFO_VAL];
        MUST(MPI_Comm_get_info(c, &used));
        MUST(MPI_Info_get(used, "oxmpi_test_hint", MPI_MAX_INFO_VAL - 1, val, &flag));
        CHECK(flag && strcmp(val, k == 0 ? "first" : "second") == 0, "hint %d %s", flag, val);
        MUST(MPI_Info_free(&used));
        /* Errors on it go to its handler: MPI_ERRORS_RETURN. */
        int rc = MPI_Send(&wrank, 1, MPI_INT, size, 0, c);
        CHECK(class_of(rc) == MPI_ERR_RANK, "send to rank %d: %d", size, rc);
        MUST(MPI_Comm_free(&c));
    }

    /* The whole world, and this process alone (every process at once, one tag). */
    {
        MPI_Comm c, s;
        int cmp;
        MUST(MPI_Comm_create_from_group(world_group, "org.oxmpi.test.world", MPI_INFO_NULL,
                                        MPI_ERRORS_ARE_FATAL, &c));
        MUST(MPI_Comm_compare(c, MPI_COMM_WORLD, &cmp));
        CHECK(cmp == MPI_CONGRUENT, "world compare %d", cmp);
        MPI_Group self_group;
        MUST(MPI_Comm_group(MPI_COMM_SELF, &self_group));
        MUST(MPI_Comm_create_from_group(self_group, "org.oxmpi.test.self", MPI_INFO_NULL,
                                        MPI_ERRORS_ARE_FATAL, &s));
        MUST(MPI_Comm_compare(s, MPI_COMM_SELF, &cmp));
        CHECK(cmp == MPI_CONGRUENT, "self compare %d", cmp);
        int all = 0;
        MUST(MPI_Allreduce(&wrank, &all, 1, MPI_INT, MPI_MAX, c));
        CHECK(all == wsize - 1, "world max %d", all);
        MUST(MPI_Group_free(&self_group));
        MUST(MPI_Comm_free(&s));
        MUST(MPI_Comm_free(&c));
    }

    /* The empty group: a local call giving MPI_COMM_NULL. */
    {
        MPI_Comm c = MPI_COMM_WORLD;
        MUST(MPI_Comm_create_from_group(MPI_GROUP_EMPTY, "org.oxmpi.test.empty", MPI_INFO_NULL,
                                        MPI_ERRORS_RETURN, &c));
        CHECK(c == MPI_COMM_NULL, "the empty group gave a communicator");
    }

    /* Intercommunicators between the even and the odd ranks, twice back to back with
     * different tags and leaders. */
    for (int k = 0; k < 2; k++) {
        const char *tag = k == 0 ? "org.oxmpi.test.inter.a" : "org.oxmpi.test.inter.b";
        /* Leaders: rank 0 of each group the first time, the last rank the second. */
        int lleader = k == 0 ? 0 : msize - 1, rleader = k == 0 ? 0 : osize - 1;
        MPI_Comm ic = MPI_COMM_NULL;
        MUST(MPI_Intercomm_create_from_groups(mine, lleader, other, rleader, tag, MPI_INFO_NULL,
                                              MPI_ERRORS_RETURN, &ic));
        int flag, me, lsize, rsize, cmp;
        MUST(MPI_Comm_test_inter(ic, &flag));
        CHECK(flag, "not an intercommunicator");
        MUST(MPI_Comm_rank(ic, &me));
        MUST(MPI_Comm_size(ic, &lsize));
        MUST(MPI_Comm_remote_size(ic, &rsize));
        CHECK(me == wrank / 2 && lsize == msize && rsize == osize, "rank %d size %d remote %d",
              me, lsize, rsize);
        MPI_Group rg;
        MUST(MPI_Comm_remote_group(ic, &rg));
        MUST(MPI_Group_compare(rg, other, &cmp));
        CHECK(cmp == MPI_IDENT, "remote group %d", cmp);
        MUST(MPI_Group_free(&rg));
        /* Sendrecv with the remote rank of the same number, where there is one. */
        if (me < rsize) {
            int got = -1;
            MPI_Status st;
            MUST(MPI_Sendrecv(&wrank, 1, MPI_INT, me, 9, &got, 1, MPI_INT, me, 9, ic, &st));
            CHECK(got == 2 * me + 1 - color, "sendrecv got %d", got);
            CHECK(st.MPI_SOURCE == me, "status source %d", st.MPI_SOURCE);
        }
        /* An intercommunicator allreduce gives the remote group's sum. */
        int sum = -1;
        MUST(MPI_Allreduce(&wrank, &sum, 1, MPI_INT, MPI_SUM, ic));
        CHECK(sum == parity_sum(1 - color, wsize), "inter allreduce %d", sum);
        MPI_Errhandler eh;
        MUST(MPI_Comm_get_errhandler(ic, &eh));
        CHECK(eh == MPI_ERRORS_RETURN, "the intercommunicator's error handler");
        MUST(MPI_Errhandler_free(&eh));
        int rc = MPI_Send(&wrank, 1, MPI_INT, rsize, 0, ic);
        CHECK(class_of(rc) == MPI_ERR_RANK, "send to remote rank %d: %d", rsize, rc);
        /* Merged, the even group first. */
        MPI_Comm merged;
        int mrank;
        MUST(MPI_Intercomm_merge(ic, color, &merged));
        MUST(MPI_Comm_rank(merged, &mrank));
        CHECK(mrank == (color == 0 ? wrank / 2 : osize + wrank / 2), "merged rank %d", mrank);
        MUST(MPI_Comm_free(&merged));
        MUST(MPI_Comm_free(&ic));
    }

    /* Errors: every one found before any communication, raised on the handler given. */
    {
        MPI_Comm c = MPI_COMM_NULL;
        int rc;
        rc = MPI_Comm_create_from_group(mine, NULL, MPI_INFO_NULL, MPI_ERRORS_RETURN, &c);
        CHECK(class_of(rc) == MPI_ERR_ARG, "NULL stringtag: %d", rc);
        rc = MPI_Comm_create_from_group(mine, "t", MPI_INFO_NULL, MPI_ERRORS_RETURN, NULL);
        CHECK(class_of(rc) == MPI_ERR_ARG, "NULL newcomm: %d", rc);
        rc = MPI_Comm_create_from_group(MPI_GROUP_NULL, "t", MPI_INFO_NULL, MPI_ERRORS_RETURN, &c);
        CHECK(class_of(rc) == MPI_ERR_GROUP, "MPI_GROUP_NULL: %d", rc);
        rc = MPI_Comm_create_from_group(other, "t", MPI_INFO_NULL, MPI_ERRORS_RETURN, &c);
        CHECK(class_of(rc) == MPI_ERR_GROUP, "not a member: %d", rc);
        CHECK(c == MPI_COMM_NULL, "newcomm changed by a failed call");

        rc = MPI_Intercomm_create_from_groups(mine, 0, other, 0, NULL, MPI_INFO_NULL,
                                              MPI_ERRORS_RETURN, &c);
        CHECK(class_of(rc) == MPI_ERR_ARG, "inter NULL stringtag: %d", rc);
        rc = MPI_Intercomm_create_from_groups(mine, 0, other, 0, "t", MPI_INFO_NULL,
                                              MPI_ERRORS_RETURN, NULL);
        CHECK(class_of(rc) == MPI_ERR_ARG, "inter NULL newintercomm: %d", rc);
        rc = MPI_Intercomm_create_from_groups(MPI_GROUP_NULL, 0, other, 0, "t", MPI_INFO_NULL,
                                              MPI_ERRORS_RETURN, &c);
        CHECK(class_of(rc) == MPI_ERR_GROUP, "inter MPI_GROUP_NULL local: %d", rc);
        rc = MPI_Intercomm_create_from_groups(mine, 0, MPI_GROUP_NULL, 0, "t", MPI_INFO_NULL,
                                              MPI_ERRORS_RETURN, &c);
        CHECK(class_of(rc) == MPI_ERR_GROUP, "inter MPI_GROUP_NULL remote: %d", rc);
        rc = MPI_Intercomm_create_from_groups(mine, 0, MPI_GROUP_EMPTY, 0, "t", MPI_INFO_NULL,
                                              MPI_ERRORS_RETURN, &c);
        CHECK(class_of(rc) == MPI_ERR_GROUP, "inter empty remote: %d", rc);
        rc = MPI_Intercomm_create_from_groups(other, 0, mine, 0, "t", MPI_INFO_NULL,
                                              MPI_ERRORS_RETURN, &c);
        CHECK(class_of(rc) == MPI_ERR_GROUP, "inter not in the local group: %d", rc);
        rc = MPI_Intercomm_create_from_groups(mine, 0, world_group, 0, "t", MPI_INFO_NULL,
                                              MPI_ERRORS_RETURN, &c);
        CHECK(class_of(rc) == MPI_ERR_GROUP, "inter overlapping groups: %d", rc);
        rc = MPI_Intercomm_create_from_groups(mine, msize, other, 0, "t", MPI_INFO_NULL,
                                              MPI_ERRORS_RETURN, &c);
        CHECK(class_of(rc) == MPI_ERR_RANK, "local leader %d: %d", msize, rc);
        rc = MPI_Intercomm_create_from_groups(mine, -1, other, 0, "t", MPI_INFO_NULL,
                                              MPI_ERRORS_RETURN, &c);
        CHECK(class_of(rc) == MPI_ERR_RANK, "local leader -1: %d", rc);
        rc = MPI_Intercomm_create_from_groups(mine, 0, other, osize, "t", MPI_INFO_NULL,
                                              MPI_ERRORS_RETURN, &c);
        CHECK(class_of(rc) == MPI_ERR_RANK, "remote leader %d: %d", osize, rc);
        CHECK(c == MPI_COMM_NULL, "newintercomm changed by a failed call");

        /* A user handler is called (with MPI_COMM_NULL) and the code returned. */
        MPI_Errhandler uh;
        MUST(MPI_Comm_create_errhandler(user_handler, &uh));
        rc = MPI_Comm_create_from_group(MPI_GROUP_NULL, "t", MPI_INFO_NULL, uh, &c);
        CHECK(class_of(rc) == MPI_ERR_GROUP && user_calls == 1 && user_last == rc,
              "user handler: rc %d calls %d last %d", rc, user_calls, user_last);
        CHECK(user_comm == MPI_COMM_NULL, "a constructor's error names no communicator");
        rc = MPI_Intercomm_create_from_groups(mine, msize, other, 0, "t", MPI_INFO_NULL, uh, &c);
        CHECK(class_of(rc) == MPI_ERR_RANK && user_calls == 2, "user handler: rc %d calls %d",
              rc, user_calls);
        /* A user handler on the new communicator. */
        MUST(MPI_Comm_create_from_group(mine, "org.oxmpi.test.user", MPI_INFO_NULL, uh, &c));
        rc = MPI_Send(&wrank, 1, MPI_INT, msize, 0, c);
        CHECK(class_of(rc) == MPI_ERR_RANK && user_calls == 3 && user_comm == c,
              "the new communicator's handler: calls %d", user_calls);
        MUST(MPI_Comm_free(&c));
        MUST(MPI_Errhandler_free(&uh));

        /* No live error handler: MPI_ERR_ERRHANDLER, raised on MPI_COMM_WORLD's. An invalid
         * info object: MPI_ERR_INFO. */
        MUST(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
        rc = MPI_Comm_create_from_group(mine, "t", MPI_INFO_NULL, MPI_ERRHANDLER_NULL, &c);
        CHECK(class_of(rc) == MPI_ERR_ERRHANDLER, "MPI_ERRHANDLER_NULL: %d", rc);
        rc = MPI_Comm_create_from_group(mine, "t", (MPI_Info)MPI_COMM_WORLD, MPI_ERRORS_RETURN,
                                        &c);
        CHECK(class_of(rc) == MPI_ERR_INFO, "invalid info: %d", rc);
        MUST(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
    }

    MUST(MPI_Comm_free(&split));
    MUST(MPI_Group_free(&parity[0]));
    MUST(MPI_Group_free(&parity[1]));
    MUST(MPI_Group_free(&world_group));
    MUST(MPI_Finalize());
    return 0;
}
