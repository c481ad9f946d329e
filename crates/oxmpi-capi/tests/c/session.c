/* MPI-4 sessions without MPI_Init: a session's error handler made before MPI starts; two
 * sessions (thread levels from the info hint); the process sets, their names (the length
 * query, a truncated copy), info and groups; communicators from the sets' groups (size,
 * rank, allreduce, sendrecv around the ring); session error handlers (predefined and user:
 * set, get, call, and an error raised on them); session buffers (buffered sends on the
 * session's communicators and one derived from them, flushes, detach, automatic
 * buffering, one left attached at finalize); the errors of bad arguments; finalize of
 * both, the last one ending MPI, with MPI_Initialized and MPI_Finalized false throughout. */
#include <string.h>
#include "check.h"

static int calls;
static char *stale_region;
static int last_code;
static MPI_Session last_session;

static void on_error(MPI_Session *s, int *code, ...) {
    calls++;
    last_code = *code;
    last_session = *s;
}

static int class_of(int rc) {
    int cls = -1;
    MUST(MPI_Error_class(rc, &cls));
    return cls;
}

/* The value of `key` in `info`, which must be there. */
static void value(MPI_Info info, const char *key, char *out, int cap) {
    int flag = 0, len = cap;
    MUST(MPI_Info_get_string(info, key, &len, out, &flag));
    CHECK(flag, "info key %s missing", key);
}

/* A communicator of process set `pset` of session `s`, tagged `tag`. */
static MPI_Comm comm_of(MPI_Session s, const char *pset, const char *tag) {
    MPI_Group g;
    MPI_Comm c;
    MUST(MPI_Group_from_session_pset(s, pset, &g));
    MUST(MPI_Comm_create_from_group(g, tag, MPI_INFO_NULL, MPI_ERRORS_RETURN, &c));
    MUST(MPI_Group_free(&g));
    CHECK(c != MPI_COMM_NULL, "no communicator for %s", pset);
    return c;
}

int main(void) {
    int flag = -1;
    MPI_Errhandler user;
    MPI_Session s1 = MPI_SESSION_NULL, s2 = MPI_SESSION_NULL;
    MPI_Info hints, info;
    char val[MPI_MAX_INFO_VAL];

    MUST(MPI_Session_create_errhandler(on_error, &user));
    MUST(MPI_Info_create(&hints));
    MUST(MPI_Info_set(hints, "thread_level", "MPI_THREAD_MULTIPLE"));
    MUST(MPI_Session_init(hints, MPI_ERRORS_RETURN, &s1));
    MUST(MPI_Info_free(&hints));
    CHECK(s1 != MPI_SESSION_NULL, "session 1 is null");
    MUST(MPI_Session_init(MPI_INFO_NULL, user, &s2));
    CHECK(s2 != MPI_SESSION_NULL && s2 != s1, "session 2");
    MUST(MPI_Initialized(&flag));
    CHECK(flag == 0, "a session counted as MPI_Init");

    /* Thread levels: asked for, and the runtime's without a hint. */
    MUST(MPI_Session_get_info(s1, &info));
    value(info, "thread_level", val, sizeof val);
    CHECK(strcmp(val, "MPI_THREAD_MULTIPLE") == 0, "s1 thread_level %s", val);
    MUST(MPI_Info_free(&info));
    MUST(MPI_Session_get_info(s2, &info));
    value(info, "thread_level", val, sizeof val);
    CHECK(strcmp(val, "MPI_THREAD_MULTIPLE") == 0, "s2 thread_level %s", val);
    MUST(MPI_Info_free(&info));

    /* Process sets: names through the length query, then in full. */
    int n = 0, seen_world = 0, seen_self = 0;
    MUST(MPI_Session_get_num_psets(s1, MPI_INFO_NULL, &n));
    CHECK(n >= 2, "%d process sets", n);
    for (int i = 0; i < n; i++) {
        char name[MPI_MAX_PSET_NAME_LEN];
        int len = 0;
        MUST(MPI_Session_get_nth_pset(s1, MPI_INFO_NULL, i, &len, NULL));
        CHECK(len > 1 && len <= MPI_MAX_PSET_NAME_LEN, "pset %d needs %d", i, len);
        int cap = len;
        MUST(MPI_Session_get_nth_pset(s1, MPI_INFO_NULL, i, &len, name));
        CHECK(len == cap && (int)strlen(name) == len - 1, "pset %d: %s/%d", i, name, len);
        seen_world += strcmp(name, "mpi://WORLD") == 0;
        seen_self += strcmp(name, "mpi://SELF") == 0;
    }
    CHECK(seen_world == 1 && seen_self == 1, "world %d self %d", seen_world, seen_self);
    {
        char small[5];
        int len = sizeof small;
        MUST(MPI_Session_get_nth_pset(s1, MPI_INFO_NULL, 0, &len, small));
        CHECK(strlen(small) == 4 && strncmp(small, "mpi:", 4) == 0, "truncated %s", small);
        CHECK(len > (int)sizeof small, "needed %d", len);
    }

    /* The world set: its size from the info and the group agree, and it communicates. */
    MPI_Group g;
    int gsize = -1, grank = -1;
    MUST(MPI_Group_from_session_pset(s1, "mpi://WORLD", &g));
    MUST(MPI_Group_size(g, &gsize));
    MUST(MPI_Group_rank(g, &grank));
    MUST(MPI_Group_free(&g));
    MUST(MPI_Session_get_pset_info(s1, "mpi://WORLD", &info));
    value(info, "mpi_size", val, sizeof val);
    CHECK(atoi(val) == gsize && gsize >= 1, "mpi_size %s, group %d", val, gsize);
    MUST(MPI_Info_free(&info));
    MUST(MPI_Session_get_pset_info(s1, "mpi://SELF", &info));
    value(info, "mpi_size", val, sizeof val);
    CHECK(strcmp(val, "1") == 0, "self mpi_size %s", val);
    MUST(MPI_Info_free(&info));

    MPI_Comm world = comm_of(s1, "mpi://WORLD", "org.oxmpi.test.session.world");
    int size = -1, rank = -1, sum = -1;
    MUST(MPI_Comm_size(world, &size));
    MUST(MPI_Comm_rank(world, &rank));
    CHECK(size == gsize && rank == grank, "comm %d/%d, group %d/%d", rank, size, grank, gsize);
    MUST(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, world));
    CHECK(sum == size * (size - 1) / 2, "rank sum %d", sum);
    int from = -1, right = (rank + 1) % size, left = (rank + size - 1) % size;
    MUST(MPI_Sendrecv(&rank, 1, MPI_INT, right, 7, &from, 1, MPI_INT, left, 7, world,
                      MPI_STATUS_IGNORE));
    CHECK(from == left, "from %d, want %d", from, left);
    /* The second session's sets make a communicator of their own beside the first's. */
    MPI_Comm world2 = comm_of(s2, "mpi://WORLD", "org.oxmpi.test.session.world2");
    int sum2 = -1, one = 1;
    MUST(MPI_Allreduce(&one, &sum2, 1, MPI_INT, MPI_SUM, world2));
    CHECK(sum2 == size, "count %d", sum2);
    MPI_Comm self = comm_of(s2, "mpi://SELF", "org.oxmpi.test.session.self");
    MUST(MPI_Comm_size(self, &size));
    MUST(MPI_Comm_rank(self, &rank));
    CHECK(size == 1 && rank == 0, "self %d/%d", rank, size);
    MUST(MPI_Comm_free(&self));
    MUST(MPI_Comm_free(&world2));

    /* Session buffers (MPI-4.1): buffered sends on the session's communicators, and on one
     * derived from them, copy into it; flushes; detach gives back what was attached. */
    {
        enum { N = 4 };
        int cap = 2 * (N * (int)sizeof(int) + MPI_BSEND_OVERHEAD);
        char *region = malloc((size_t)cap);
        int out[N], in[N], msize = -1;
        void *addr = NULL;
        MPI_Comm dup;
        MPI_Request r;
        MUST(MPI_Comm_size(world, &size));
        MUST(MPI_Comm_rank(world, &rank));
        right = (rank + 1) % size;
        left = (rank + size - 1) % size;
        MUST(MPI_Session_attach_buffer(s1, region, cap));
        MUST(MPI_Comm_dup(world, &dup));
        for (int round = 0; round < 3; round++) {
            MPI_Comm c = round == 1 ? dup : world;
            for (int i = 0; i < N; i++) out[i] = rank * 100 + round * 10 + i;
            MUST(MPI_Bsend(out, N, MPI_INT, right, 9, c));
            MUST(MPI_Recv(in, N, MPI_INT, left, 9, c, MPI_STATUS_IGNORE));
            for (int i = 0; i < N; i++)
                CHECK(in[i] == left * 100 + round * 10 + i, "bsend round %d [%d] = %d", round,
                      i, in[i]);
            if (round == 0) {
                MUST(MPI_Session_flush_buffer(s1));
            } else {
                MUST(MPI_Session_iflush_buffer(s1, &r));
                MUST(MPI_Wait(&r, MPI_STATUS_IGNORE));
            }
        }
        MUST(MPI_Comm_free(&dup));
        MUST(MPI_Session_detach_buffer(s1, &addr, &msize));
        CHECK(addr == region && msize == cap, "detached %p/%d, attached %p/%d", addr, msize,
              (void *)region, cap);
        free(region);
        MUST(MPI_Session_attach_buffer(s1, MPI_BUFFER_AUTOMATIC, 0));
        MUST(MPI_Bsend(out, N, MPI_INT, right, 9, world));
        MUST(MPI_Recv(in, N, MPI_INT, left, 9, world, MPI_STATUS_IGNORE));
        MPI_Count csize = -1;
        MUST(MPI_Session_detach_buffer_c(s1, &addr, &csize));
        CHECK(addr == MPI_BUFFER_AUTOMATIC && csize == 0, "automatic detached %p/%lld", addr,
              (long long)csize);
        /* Without a buffer, a buffered send has nowhere to go. */
        int rc = MPI_Bsend(out, N, MPI_INT, right, 9, world);
        CHECK(class_of(rc) == MPI_ERR_BUFFER, "bsend without a buffer: %d", rc);
        rc = MPI_Session_detach_buffer(s1, &addr, &msize);
        CHECK(class_of(rc) == MPI_ERR_BUFFER, "detach without a buffer: %d", rc);
        /* Left attached at finalize, a buffer is let go there. */
        region = malloc((size_t)cap);
        MUST(MPI_Session_attach_buffer(s2, region, cap));
        stale_region = region;
    }
    MUST(MPI_Comm_free(&world));

    /* Errors on a session that returns them. */
    int rc = MPI_Session_get_pset_info(s1, "mpi://NOWHERE", &info);
    CHECK(class_of(rc) == MPI_ERR_ARG, "unknown pset: %d", rc);
    rc = MPI_Group_from_session_pset(s1, "mpi://NOWHERE", &g);
    CHECK(class_of(rc) == MPI_ERR_ARG, "unknown pset group: %d", rc);
    int len = 0;
    rc = MPI_Session_get_nth_pset(s1, MPI_INFO_NULL, n, &len, NULL);
    CHECK(class_of(rc) == MPI_ERR_ARG, "pset %d: %d", n, rc);
    len = -1;
    rc = MPI_Session_get_nth_pset(s1, MPI_INFO_NULL, 0, &len, val);
    CHECK(class_of(rc) == MPI_ERR_ARG, "negative pset_len: %d", rc);
    rc = MPI_Session_get_num_psets(s1, MPI_INFO_NULL, NULL);
    CHECK(class_of(rc) == MPI_ERR_ARG, "null count: %d", rc);
    MPI_Session s3 = MPI_SESSION_NULL;
    MUST(MPI_Info_create(&hints));
    MUST(MPI_Info_set(hints, "thread_level", "MPI_THREAD_SOMETIMES"));
    rc = MPI_Session_init(hints, MPI_ERRORS_RETURN, &s3);
    CHECK(class_of(rc) == MPI_ERR_INFO_VALUE && s3 == MPI_SESSION_NULL, "bad level: %d", rc);
    MUST(MPI_Info_free(&hints));

    /* The user handler: called with the session and the code, by a failing call and by
     * MPI_Session_call_errhandler; set and got like a communicator's. */
    MPI_Errhandler got;
    MUST(MPI_Session_get_errhandler(s2, &got));
    CHECK(got == user, "s2 errhandler");
    MUST(MPI_Errhandler_free(&got));
    rc = MPI_Session_get_pset_info(s2, "mpi://NOWHERE", &info);
    CHECK(class_of(rc) == MPI_ERR_ARG && calls == 1, "raised: rc %d, calls %d", rc, calls);
    CHECK(last_session == s2 && class_of(last_code) == MPI_ERR_ARG, "handler saw %d",
          last_code);
    MUST(MPI_Session_call_errhandler(s2, MPI_ERR_OTHER));
    CHECK(calls == 2 && last_code == MPI_ERR_OTHER && last_session == s2, "call_errhandler");
    MUST(MPI_Session_set_errhandler(s1, user));
    MUST(MPI_Session_get_errhandler(s1, &got));
    CHECK(got == user, "s1 errhandler");
    MUST(MPI_Errhandler_free(&got));
    MUST(MPI_Session_call_errhandler(s1, MPI_ERR_COUNT));
    CHECK(calls == 3 && last_code == MPI_ERR_COUNT && last_session == s1, "s1 call");
    MUST(MPI_Session_set_errhandler(s1, MPI_ERRORS_RETURN));
    MUST(MPI_Session_get_errhandler(s1, &got));
    CHECK(got == MPI_ERRORS_RETURN, "s1 errhandler back");
    MUST(MPI_Errhandler_free(&user));

    MUST(MPI_Session_finalize(&s2));
    CHECK(s2 == MPI_SESSION_NULL, "s2 not reset");
    free(stale_region);
    MUST(MPI_Session_finalize(&s1));
    CHECK(s1 == MPI_SESSION_NULL, "s1 not reset");
    MUST(MPI_Initialized(&flag));
    CHECK(flag == 0, "initialized after the sessions");
    MUST(MPI_Finalized(&flag));
    CHECK(flag == 0, "finalized after the sessions");
    return 0;
}
