/* MPI-4 sessions beside the world model: a session started before MPI_Init starts MPI at
 * its thread level, which MPI_Init_thread then provides (MPI_Initialized false until
 * then); a session started after MPI_Init sees the world's thread level and ranks; a bad session handle is MPI_ERR_SESSION (raised on the world's
 * handler, set to return); MPI_Finalize while a session is open leaves MPI running for it
 * (MPI_Finalized true, the session's communicators still work), and the session's finalize
 * ends MPI. */
#include <string.h>
#include "check.h"

static int class_of(int rc) {
    int cls = -1;
    MUST(MPI_Error_class(rc, &cls));
    return cls;
}

int main(int argc, char **argv) {
    int provided = -1, wrank = -1, wsize = -1, flag = -1;
    MPI_Session first = MPI_SESSION_NULL;
    MPI_Info hint;
    MUST(MPI_Info_create(&hint));
    MUST(MPI_Info_set(hint, "thread_level", "MPI_THREAD_SERIALIZED"));
    MUST(MPI_Session_init(hint, MPI_ERRORS_RETURN, &first));
    MUST(MPI_Info_free(&hint));
    MUST(MPI_Initialized(&flag));
    CHECK(flag == 0, "a session counted as MPI_Init");
    MUST(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided));
    CHECK(provided == MPI_THREAD_SERIALIZED, "provided %d", provided);
    MUST(MPI_Initialized(&flag));
    CHECK(flag == 1, "MPI_Init not counted");
    /* The world model holds MPI up: this finalize ends only the session. */
    MUST(MPI_Session_finalize(&first));
    MUST(MPI_Comm_rank(MPI_COMM_WORLD, &wrank));
    MUST(MPI_Comm_size(MPI_COMM_WORLD, &wsize));
    MUST(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));

    MPI_Session s = MPI_SESSION_NULL;
    MPI_Info info;
    char val[MPI_MAX_INFO_VAL];
    int len = sizeof val;
    MUST(MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &s));
    MUST(MPI_Session_get_info(s, &info));
    MUST(MPI_Info_get_string(info, "thread_level", &len, val, &flag));
    CHECK(flag && strcmp(val, "MPI_THREAD_SERIALIZED") == 0, "thread_level %s", val);
    MUST(MPI_Info_free(&info));

    /* A higher level than the runtime's is not given. */
    MPI_Session hi = MPI_SESSION_NULL;
    MUST(MPI_Info_create(&info));
    MUST(MPI_Info_set(info, "thread_level", "MPI_THREAD_MULTIPLE"));
    MUST(MPI_Session_init(info, MPI_ERRORS_RETURN, &hi));
    MUST(MPI_Info_free(&info));
    MUST(MPI_Session_get_info(hi, &info));
    len = sizeof val;
    MUST(MPI_Info_get_string(info, "thread_level", &len, val, &flag));
    CHECK(flag && strcmp(val, "MPI_THREAD_SERIALIZED") == 0, "capped thread_level %s", val);
    MUST(MPI_Info_free(&info));
    MUST(MPI_Session_finalize(&hi));

    /* The session's world is MPI_COMM_WORLD's group. */
    MPI_Group sg, wg;
    int cmp = -1;
    MUST(MPI_Group_from_session_pset(s, "mpi://world", &sg));
    MUST(MPI_Comm_group(MPI_COMM_WORLD, &wg));
    MUST(MPI_Group_compare(sg, wg, &cmp));
    CHECK(cmp == MPI_IDENT, "session world against MPI_COMM_WORLD: %d", cmp);
    MUST(MPI_Group_free(&wg));
    MPI_Comm c;
    MUST(MPI_Comm_create_from_group(sg, "org.oxmpi.test.session-world", MPI_INFO_NULL,
                                    MPI_ERRORS_RETURN, &c));
    MUST(MPI_Group_free(&sg));

    /* Not a session: the error is raised on MPI_COMM_WORLD's handler. */
    int n = -1;
    int rc = MPI_Session_get_num_psets(MPI_SESSION_NULL, MPI_INFO_NULL, &n);
    CHECK(class_of(rc) == MPI_ERR_SESSION, "null session: %d", rc);
    rc = MPI_Session_get_num_psets(MPI_Session_fromint(0x5000), MPI_INFO_NULL, &n);
    CHECK(class_of(rc) == MPI_ERR_SESSION, "never-made session: %d", rc);
    MPI_Session gone = MPI_SESSION_NULL;
    MUST(MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &gone));
    MPI_Session stale = gone;
    MUST(MPI_Session_finalize(&gone));
    rc = MPI_Session_finalize(&stale);
    CHECK(class_of(rc) == MPI_ERR_SESSION, "finalized twice: %d", rc);

    /* A session's buffer serves its own communicators only: MPI_COMM_WORLD's buffered
     * sends still need the process's buffer. */
    {
        int cap = 64 + MPI_BSEND_OVERHEAD, x = wrank, y = -1, right = (wrank + 1) % wsize;
        int left = (wrank + wsize - 1) % wsize;
        char *region = malloc((size_t)cap);
        void *addr;
        MUST(MPI_Session_attach_buffer(s, region, cap));
        rc = MPI_Bsend(&x, 1, MPI_INT, right, 3, MPI_COMM_WORLD);
        CHECK(class_of(rc) == MPI_ERR_BUFFER, "world bsend took the session's buffer: %d", rc);
        MUST(MPI_Bsend(&x, 1, MPI_INT, right, 3, c));
        MUST(MPI_Recv(&y, 1, MPI_INT, left, 3, c, MPI_STATUS_IGNORE));
        CHECK(y == left, "bsend on the session's communicator: %d", y);
        MUST(MPI_Session_detach_buffer(s, &addr, &cap));
        free(region);
    }

    MUST(MPI_Finalize());
    MUST(MPI_Finalized(&flag));
    CHECK(flag == 1, "MPI_Finalized after MPI_Finalize");

    /* MPI still runs for the open session. */
    int sum = -1;
    MUST(MPI_Allreduce(&wrank, &sum, 1, MPI_INT, MPI_SUM, c));
    CHECK(sum == wsize * (wsize - 1) / 2, "sum after MPI_Finalize: %d", sum);
    MUST(MPI_Comm_free(&c));
    MUST(MPI_Session_finalize(&s));
    CHECK(s == MPI_SESSION_NULL, "session not reset");
    MUST(MPI_Finalized(&flag));
    CHECK(flag == 1, "MPI_Finalized at the end");
    return 0;
}
