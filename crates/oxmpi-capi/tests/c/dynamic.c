/* MPI_Comm_disconnect (intra- and intercommunicators, traffic in flight, delete callbacks,
 * the predefined and null handles), MPI_Comm_get_parent, and MPI_Comm_spawn /
 * MPI_Comm_spawn_multiple: the job spawns copies of this program ("child N"), which find
 * their parents with MPI_Comm_get_parent; both sides merge the intercommunicator, reduce
 * over it and exchange messages checked byte by byte, then disconnect; the children's group
 * forms no communicator from groups (MPI_ERR_GROUP: another job's processes). A missing program
 * and bad arguments are refused at every rank (error codes filled, MPI_COMM_NULL, the
 * communicator's error handler). */
#define _XOPEN_SOURCE 700 /* readlink */
#include <string.h>
#include <unistd.h>
#include "check.h"

#define BIG (1 << 20)

static int deleted;

static int count_delete(MPI_Comm c, int key, void *val, void *extra) {
    (void)c; (void)key; (void)extra;
    deleted += *(int *)val;
    return MPI_SUCCESS;
}

static int handled;

static void count_errors(MPI_Comm *c, int *code, ...) {
    int cls;
    (void)c;
    MPI_Error_class(*code, &cls);
    if (cls == MPI_ERR_SPAWN) handled++;
}

static int class_of(int rc) {
    int cls;
    MUST(MPI_Error_class(rc, &cls));
    return cls;
}

static char pattern(int from, int to, int i) { return (char)(i * 31 + from * 7 + to * 13); }

/* Over the merged communicator of parents (first) and children: an allreduce of the ranks,
 * then merged rank 0 and every child exchange LEN bytes both ways. */
#define LEN 100000
static void over_merged(MPI_Comm merged, int parents) {
    int mrank, msize, sum = 0;
    MUST(MPI_Comm_rank(merged, &mrank));
    MUST(MPI_Comm_size(merged, &msize));
    MUST(MPI_Allreduce(&mrank, &sum, 1, MPI_INT, MPI_SUM, merged));
    CHECK(sum == msize * (msize - 1) / 2, "merged allreduce %d", sum);
    char *buf = malloc(LEN);
    CHECK(buf != NULL, "malloc");
    if (mrank == 0) {
        for (int c = parents; c < msize; c++) {
            MUST(MPI_Recv(buf, LEN, MPI_CHAR, c, 3, merged, MPI_STATUS_IGNORE));
            for (int i = 0; i < LEN; i++)
                CHECK(buf[i] == pattern(c, 0, i), "byte %d from merged rank %d", i, c);
            for (int i = 0; i < LEN; i++) buf[i] = pattern(0, c, i);
            MUST(MPI_Send(buf, LEN, MPI_CHAR, c, 4, merged));
        }
    } else if (mrank >= parents) {
        for (int i = 0; i < LEN; i++) buf[i] = pattern(mrank, 0, i);
        MUST(MPI_Send(buf, LEN, MPI_CHAR, 0, 3, merged));
        MUST(MPI_Recv(buf, LEN, MPI_CHAR, 0, 4, merged, MPI_STATUS_IGNORE));
        for (int i = 0; i < LEN; i++)
            CHECK(buf[i] == pattern(0, mrank, i), "byte %d from merged rank 0", i);
    }
    free(buf);
}

/* A spawned copy: its parents are the job's MPI_COMM_WORLD (argv[2] processes). */
static int child(int parents) {
    MPI_Comm parent, again, merged;
    int flag, remote, rank, mrank;
    MUST(MPI_Comm_get_parent(&parent));
    CHECK(parent != MPI_COMM_NULL, "a spawned process has no parent");
    MUST(MPI_Comm_get_parent(&again));
    CHECK(again == parent, "Comm_get_parent gave another handle");
    MUST(MPI_Comm_test_inter(parent, &flag));
    CHECK(flag, "the parent communicator is not an intercommunicator");
    MUST(MPI_Comm_remote_size(parent, &remote));
    CHECK(remote == parents, "remote size %d, %d parents", remote, parents);
    MUST(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    MUST(MPI_Intercomm_merge(parent, 1, &merged));
    MUST(MPI_Comm_rank(merged, &mrank));
    CHECK(mrank == parents + rank, "merged rank %d", mrank);
    over_merged(merged, parents);
    MUST(MPI_Comm_disconnect(&merged));
    MUST(MPI_Comm_disconnect(&parent));
    CHECK(parent == MPI_COMM_NULL, "disconnect left the parent set");
    MUST(MPI_Comm_get_parent(&again));
    CHECK(again == MPI_COMM_NULL, "Comm_get_parent after disconnect");
    MUST(MPI_Finalize());
    return 0;
}

/* Spawned copies of this program, checked from the parents' side and disconnected. */
static void with_children(MPI_Comm spawned, int size, int rank, int children) {
    int flag, remote, mrank;
    MPI_Comm merged;
    CHECK(spawned != MPI_COMM_NULL, "spawn gave MPI_COMM_NULL");
    MUST(MPI_Comm_test_inter(spawned, &flag));
    CHECK(flag, "spawn gave an intracommunicator");
    MUST(MPI_Comm_remote_size(spawned, &remote));
    CHECK(remote == children, "remote size %d (%d children)", remote, children);
    /* The children's group holds processes of another job: no communicator from it. */
    MPI_Group kids;
    MPI_Comm none = MPI_COMM_NULL;
    MUST(MPI_Comm_remote_group(spawned, &kids));
    int rc = MPI_Comm_create_from_group(kids, "dynamic", MPI_INFO_NULL, MPI_ERRORS_RETURN, &none);
    int cls = -1;
    MUST(MPI_Error_class(rc, &cls));
    CHECK(cls == MPI_ERR_GROUP && none == MPI_COMM_NULL, "from the children's group: %d", rc);
    MUST(MPI_Group_free(&kids));
    MUST(MPI_Intercomm_merge(spawned, 0, &merged));
    MUST(MPI_Comm_rank(merged, &mrank));
    CHECK(mrank == rank, "merged rank %d of a parent %d", mrank, rank);
    over_merged(merged, size);
    MUST(MPI_Comm_disconnect(&merged));
    MUST(MPI_Comm_disconnect(&spawned));
}

int main(int argc, char **argv) {
    int rank, size, key, one = 1, codes[8], rc;
    MPI_Comm dup, half, inter, parent, spawned;
    MPI_Errhandler eh;
    MPI_Request req[2];
    MUST(MPI_Init(&argc, &argv));
    MUST(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    MUST(MPI_Comm_size(MPI_COMM_WORLD, &size));
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;

    if (argc == 3 && strcmp(argv[1], "child") == 0) return child(atoi(argv[2]));

    /* A job started by oxrun has no parent. */
    parent = MPI_COMM_WORLD;
    MUST(MPI_Comm_get_parent(&parent));
    CHECK(parent == MPI_COMM_NULL, "Comm_get_parent gave a communicator");

    /* Disconnect after a ring exchange, a large send freed before it completed and a
     * receive of the neighbour's: the data arrives, the handle becomes MPI_COMM_NULL and
     * the attribute's delete callback runs. */
    char *out = malloc(BIG), *in = malloc(BIG);
    CHECK(out && in, "malloc");
    for (int i = 0; i < BIG; i++) out[i] = (char)(i * 7 + rank);
    MUST(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    MUST(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, count_delete, &key, NULL));
    MUST(MPI_Comm_set_attr(dup, key, &one));
    int token = rank, got = -1;
    MUST(MPI_Irecv(&got, 1, MPI_INT, prev, 1, dup, &req[0]));
    MUST(MPI_Isend(&token, 1, MPI_INT, next, 1, dup, &req[1]));
    MUST(MPI_Waitall(2, req, MPI_STATUSES_IGNORE));
    CHECK(got == prev, "ring got %d", got);
    MUST(MPI_Isend(out, BIG, MPI_CHAR, next, 2, dup, &req[0]));
    MUST(MPI_Request_free(&req[0]));
    MUST(MPI_Recv(in, BIG, MPI_CHAR, prev, 2, dup, MPI_STATUS_IGNORE));
    for (int i = 0; i < BIG; i++)
        CHECK(in[i] == (char)(i * 7 + prev), "byte %d of the large message", i);
    MUST(MPI_Comm_disconnect(&dup));
    CHECK(dup == MPI_COMM_NULL, "disconnect left the handle set");
    CHECK(deleted == 1, "delete callback ran %d times", deleted);
    MUST(MPI_Comm_free_keyval(&key));

    /* Disconnect waits for its own communicator's operations only. Rank 0 starts a
     * synchronous send on b that rank 1 receives only after rank 0 has disconnected a and
     * said so on go (waiting for b here would never end), and a large send on a that it
     * frees and overwrites as soon as disconnect returns (not waiting for it would let
     * rank 1 read the overwritten bytes). */
    if (size >= 2) {
        MPI_Comm a, b, go;
        MPI_Request sync;
        int x = 42, y = -1, flag = 1;
        MUST(MPI_Comm_dup(MPI_COMM_WORLD, &a));
        MUST(MPI_Comm_dup(MPI_COMM_WORLD, &b));
        MUST(MPI_Comm_dup(MPI_COMM_WORLD, &go));
        if (rank == 0) {
            for (int i = 0; i < BIG; i++) out[i] = (char)(i * 5 + 3);
            MUST(MPI_Issend(&x, 1, MPI_INT, 1, 5, b, &sync));
            MUST(MPI_Isend(out, BIG, MPI_CHAR, 1, 6, a, &req[0]));
            MUST(MPI_Request_free(&req[0]));
            MUST(MPI_Comm_disconnect(&a));
            memset(out, 0x5a, BIG);
            MUST(MPI_Test(&sync, &flag, MPI_STATUS_IGNORE));
            CHECK(!flag, "the synchronous send on b completed before rank 1 received it");
            MUST(MPI_Send(&x, 1, MPI_INT, 1, 7, go));
            MUST(MPI_Wait(&sync, MPI_STATUS_IGNORE));
        } else if (rank == 1) {
            MUST(MPI_Recv(in, BIG, MPI_CHAR, 0, 6, a, MPI_STATUS_IGNORE));
            for (int i = 0; i < BIG; i++)
                CHECK(in[i] == (char)(i * 5 + 3), "byte %d of the freed send on a", i);
            MUST(MPI_Comm_disconnect(&a));
            MUST(MPI_Recv(&y, 1, MPI_INT, 0, 7, go, MPI_STATUS_IGNORE));
            MUST(MPI_Recv(&y, 1, MPI_INT, 0, 5, b, MPI_STATUS_IGNORE));
            CHECK(y == 42, "the synchronous send on b carried %d", y);
        } else {
            MUST(MPI_Comm_disconnect(&a));
        }
        CHECK(a == MPI_COMM_NULL, "disconnect left a set");
        MUST(MPI_Comm_free(&b));
        MUST(MPI_Comm_free(&go));
    }

    /* An intercommunicator between the even and odd ranks. */
    if (size >= 2) {
        MUST(MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half));
        MUST(MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, rank % 2 ? 0 : 1, 9, &inter));
        int remote;
        MUST(MPI_Comm_remote_size(inter, &remote));
        CHECK(remote == (rank % 2 ? (size + 1) / 2 : size / 2), "remote size %d", remote);
        MUST(MPI_Comm_disconnect(&inter));
        CHECK(inter == MPI_COMM_NULL, "intercomm handle kept");
        MUST(MPI_Comm_disconnect(&half));
    }

    /* Bad handles: the predefined communicators and MPI_COMM_NULL are MPI_ERR_COMM, a NULL
     * pointer MPI_ERR_ARG; MPI still works after each. */
    MUST(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    MPI_Comm c = MPI_COMM_WORLD;
    rc = MPI_Comm_disconnect(&c);
    CHECK(class_of(rc) == MPI_ERR_COMM && c == MPI_COMM_WORLD, "disconnect WORLD: %d", rc);
    c = MPI_COMM_SELF;
    rc = MPI_Comm_disconnect(&c);
    CHECK(class_of(rc) == MPI_ERR_COMM && c == MPI_COMM_SELF, "disconnect SELF: %d", rc);
    c = MPI_COMM_NULL;
    rc = MPI_Comm_disconnect(&c);
    CHECK(class_of(rc) == MPI_ERR_COMM, "disconnect NULL: %d", rc);
    rc = MPI_Comm_disconnect(NULL);
    CHECK(class_of(rc) == MPI_ERR_ARG, "disconnect(NULL): %d", rc);
    MUST(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    c = dup;
    MUST(MPI_Comm_disconnect(&dup));
    rc = MPI_Comm_disconnect(&c);
    CHECK(class_of(rc) == MPI_ERR_COMM, "disconnect twice: %d", rc);

    /* Spawning copies of this program. maxprocs is significant at the root only: the
     * others pass a nonsense value and still get the root's count of codes. */
    char self[4096], nparents[16];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    CHECK(len > 0, "readlink /proc/self/exe");
    self[len] = 0;
    snprintf(nparents, sizeof nparents, "%d", size);
    char *args[] = {"child", nparents, NULL};
    MPI_Info wdir;
    MUST(MPI_Info_create(&wdir));
    MUST(MPI_Info_set(wdir, "wdir", "/tmp"));
    for (int i = 0; i < 8; i++) codes[i] = -1;
    spawned = MPI_COMM_WORLD;
    MUST(MPI_Comm_spawn(self, args, rank == 0 ? 2 : -5, wdir, 0, MPI_COMM_WORLD, &spawned,
                        codes));
    for (int i = 0; i < 2; i++) CHECK(codes[i] == MPI_SUCCESS, "code %d = %d", i, codes[i]);
    CHECK(codes[2] == -1, "spawn wrote past maxprocs");
    with_children(spawned, size, rank, 2);
    MUST(MPI_Info_free(&wdir));

    char *cmds[] = {self, self};
    char **argvs[] = {args, args};
    int counts[] = {1, 1};
    MPI_Info infos[] = {MPI_INFO_NULL, MPI_INFO_NULL};
    for (int i = 0; i < 8; i++) codes[i] = -1;
    MUST(MPI_Comm_spawn_multiple(2, cmds, argvs, counts, infos, size - 1, MPI_COMM_WORLD,
                                 &spawned, codes));
    for (int i = 0; i < 2; i++) CHECK(codes[i] == MPI_SUCCESS, "code %d = %d", i, codes[i]);
    CHECK(codes[2] == -1, "spawn_multiple wrote past the sum of maxprocs");
    with_children(spawned, size, rank, 2);

    /* A program that does not exist: nothing starts, every rank gets MPI_ERR_SPAWN. */
    for (int i = 0; i < 8; i++) codes[i] = -1;
    rc = MPI_Comm_spawn("/nonexistent/oxmpi-spawn-test", MPI_ARGV_NULL, rank == 0 ? 3 : 0,
                        MPI_INFO_NULL, 0, MPI_COMM_WORLD, &spawned, codes);
    CHECK(class_of(rc) == MPI_ERR_SPAWN, "spawn returned %d", rc);
    CHECK(spawned == MPI_COMM_NULL, "spawn gave a communicator");
    for (int i = 0; i < 3; i++) CHECK(codes[i] == MPI_ERR_SPAWN, "code %d = %d", i, codes[i]);
    CHECK(codes[3] == -1, "spawn wrote past maxprocs");
    rc = MPI_Comm_spawn("/nonexistent/oxmpi-spawn-test", MPI_ARGV_NULL, 1, MPI_INFO_NULL, 0,
                        MPI_COMM_WORLD, &spawned, MPI_ERRCODES_IGNORE);
    CHECK(class_of(rc) == MPI_ERR_SPAWN, "spawn without codes returned %d", rc);
    char *missing[] = {self, "/nonexistent/oxmpi-spawn-test"};
    rc = MPI_Comm_spawn_multiple(2, missing, MPI_ARGVS_NULL, counts, infos, 0, MPI_COMM_WORLD,
                                 &spawned, MPI_ERRCODES_IGNORE);
    CHECK(class_of(rc) == MPI_ERR_SPAWN, "spawn_multiple of a missing program: %d", rc);
    CHECK(spawned == MPI_COMM_NULL, "spawn_multiple gave a communicator");

    /* Bad arguments: a bad root is MPI_ERR_ROOT everywhere; a bad count at the root is its
     * own error there (MPI_ERR_ARG) while the others still see MPI_ERR_SPAWN. */
    rc = MPI_Comm_spawn("/bin/true", MPI_ARGV_NULL, 1, MPI_INFO_NULL, size, MPI_COMM_WORLD,
                        &spawned, MPI_ERRCODES_IGNORE);
    CHECK(class_of(rc) == MPI_ERR_ROOT, "spawn with root %d returned %d", size, rc);
    rc = MPI_Comm_spawn("/bin/true", MPI_ARGV_NULL, 0, MPI_INFO_NULL, 0, MPI_COMM_WORLD,
                        &spawned, codes);
    CHECK(class_of(rc) == (rank == 0 ? MPI_ERR_ARG : MPI_ERR_SPAWN), "maxprocs 0: %d", rc);
    rc = MPI_Comm_spawn(rank == 0 ? NULL : "/bin/true", MPI_ARGV_NULL, 1, MPI_INFO_NULL, 0,
                        MPI_COMM_WORLD, &spawned, codes);
    CHECK(class_of(rc) == (rank == 0 ? MPI_ERR_ARG : MPI_ERR_SPAWN), "NULL command: %d", rc);
    rc = MPI_Comm_spawn("/bin/true", MPI_ARGV_NULL, 1, MPI_INFO_NULL, 0, MPI_COMM_NULL,
                        &spawned, codes);
    CHECK(class_of(rc) == MPI_ERR_COMM, "spawn on MPI_COMM_NULL: %d", rc);
    rc = MPI_Comm_spawn("/bin/true", MPI_ARGV_NULL, 1, MPI_INFO_NULL, 0, MPI_COMM_WORLD, NULL,
                        codes);
    CHECK(class_of(rc) == MPI_ERR_ARG, "spawn with a NULL intercomm: %d", rc);
    int bad[] = {1, -1};
    rc = MPI_Comm_spawn_multiple(2, cmds, argvs, bad, infos, 0, MPI_COMM_WORLD, &spawned,
                                 codes);
    CHECK(class_of(rc) == (rank == 0 ? MPI_ERR_ARG : MPI_ERR_SPAWN), "maxprocs -1: %d", rc);

    /* The error goes through the communicator's own handler. */
    MUST(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    MUST(MPI_Comm_create_errhandler(count_errors, &eh));
    MUST(MPI_Comm_set_errhandler(dup, eh));
    rc = MPI_Comm_spawn("/nonexistent/oxmpi-spawn-test", MPI_ARGV_NULL, 2, MPI_INFO_NULL, 0,
                        dup, &spawned, MPI_ERRCODES_IGNORE);
    CHECK(class_of(rc) == MPI_ERR_SPAWN && handled == 1, "handler called %d times", handled);
    MUST(MPI_Errhandler_free(&eh));
    MUST(MPI_Comm_disconnect(&dup));

    /* Still working. */
    int sum = 0;
    MUST(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    CHECK(sum == size, "allreduce %d", sum);
    free(out);
    free(in);
    MUST(MPI_Finalize());
    return 0;
}
