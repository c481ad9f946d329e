/* One bad argument per run (argv[1] names the error class to provoke): with
 * MPI_ERRORS_RETURN the call must return that class and MPI must stay usable. */
#include <string.h>
#include "check.h"

int main(int argc, char **argv) {
    int rank, size, x = 0, rc = -1, want = -1;
    MUST(MPI_Init(&argc, &argv));
    MUST(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    MUST(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    MUST(MPI_Comm_size(MPI_COMM_WORLD, &size));
    const char *which = argc > 1 ? argv[1] : "";

    if (!strcmp(which, "comm")) {
        want = MPI_ERR_COMM;
        rc = MPI_Send(&x, 1, MPI_INT, 0, 0, MPI_COMM_NULL);
        CHECK(rc == want, "COMM_NULL: %d", rc);
        MPI_Comm dup, freed;
        MUST(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
        freed = dup;
        MUST(MPI_Comm_free(&dup));
        rc = MPI_Comm_rank(freed, &x);
        CHECK(rc == want, "freed comm: %d", rc);
        rc = MPI_Comm_size((MPI_Comm)0x12345678, &x);
    } else if (!strcmp(which, "rank")) {
        want = MPI_ERR_RANK;
        rc = MPI_Send(&x, 1, MPI_INT, size, 0, MPI_COMM_WORLD);
        CHECK(rc == want, "dest = size: %d", rc);
        rc = MPI_Recv(&x, 1, MPI_INT, -7, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (!strcmp(which, "tag")) {
        want = MPI_ERR_TAG;
        rc = MPI_Send(&x, 1, MPI_INT, 0, -5, MPI_COMM_WORLD);
        CHECK(rc == want, "send tag -5: %d", rc);
        rc = MPI_Irecv(&x, 1, MPI_INT, 0, -9, MPI_COMM_WORLD, &(MPI_Request){0});
    } else if (!strcmp(which, "count")) {
        want = MPI_ERR_COUNT;
        rc = MPI_Send(&x, -1, MPI_INT, 0, 0, MPI_COMM_WORLD);
        CHECK(rc == want, "send count -1: %d", rc);
        rc = MPI_Bcast(&x, -3, MPI_INT, 0, MPI_COMM_WORLD);
    } else if (!strcmp(which, "type")) {
        want = MPI_ERR_TYPE;
        rc = MPI_Send(&x, 1, MPI_DATATYPE_NULL, 0, 0, MPI_COMM_WORLD);
        CHECK(rc == want, "DATATYPE_NULL: %d", rc);
        rc = MPI_Type_size((MPI_Datatype)0x2ff, &x);
    } else if (!strcmp(which, "buffer")) {
        want = MPI_ERR_BUFFER;
        rc = MPI_Send(NULL, 1, MPI_INT, 0, 0, MPI_COMM_WORLD);
        CHECK(rc == want, "NULL send buffer: %d", rc);
        rc = MPI_Recv(NULL, 4, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (!strcmp(which, "root")) {
        want = MPI_ERR_ROOT;
        rc = MPI_Bcast(&x, 1, MPI_INT, size, MPI_COMM_WORLD);
        CHECK(rc == want, "bcast root = size: %d", rc);
        rc = MPI_Reduce(&x, &x, 1, MPI_INT, MPI_SUM, -1, MPI_COMM_WORLD);
    } else if (!strcmp(which, "group")) {
        want = MPI_ERR_GROUP;
        rc = MPI_Group_size(MPI_GROUP_NULL, &x);
        CHECK(rc == want, "GROUP_NULL: %d", rc);
        MPI_Group g, freed;
        MUST(MPI_Comm_group(MPI_COMM_WORLD, &g));
        freed = g;
        MUST(MPI_Group_free(&g));
        rc = MPI_Group_rank(freed, &x);
    } else if (!strcmp(which, "op")) {
        want = MPI_ERR_OP;
        rc = MPI_Allreduce(&x, &rank, 1, MPI_INT, MPI_OP_NULL, MPI_COMM_WORLD);
        CHECK(rc == want, "OP_NULL: %d", rc);
        double d = 1, e;
        rc = MPI_Allreduce(&d, &e, 1, MPI_DOUBLE, MPI_BXOR, MPI_COMM_WORLD);
    } else if (!strcmp(which, "request")) {
        want = MPI_ERR_REQUEST;
        MPI_Request bogus = (MPI_Request)0x5;
        rc = MPI_Wait(&bogus, MPI_STATUS_IGNORE);
        CHECK(rc == want, "bogus request: %d", rc);
        MPI_Request null = MPI_REQUEST_NULL;
        rc = MPI_Cancel(&null);
        CHECK(rc == want, "cancel of MPI_REQUEST_NULL: %d", rc);
        rc = MPI_Request_free(&null);
    } else if (!strcmp(which, "keyval")) {
        want = MPI_ERR_KEYVAL;
        void *v;
        rc = MPI_Comm_get_attr(MPI_COMM_WORLD, 123456, &v, &x);
        CHECK(rc == want, "unknown keyval: %d", rc);
        int k = 98765;
        rc = MPI_Comm_free_keyval(&k);
    } else if (!strcmp(which, "info")) {
        want = MPI_ERR_INFO;
        rc = MPI_Info_set(MPI_INFO_NULL, "a", "b");
        CHECK(rc == want, "INFO_NULL: %d", rc);
        rc = MPI_Info_set(MPI_INFO_ENV, "a", "b");
    } else if (!strcmp(which, "errhandler")) {
        want = MPI_ERR_ERRHANDLER;
        rc = MPI_Comm_set_errhandler(MPI_COMM_WORLD, (MPI_Errhandler)0x7777);
    } else if (!strcmp(which, "arg")) {
        want = MPI_ERR_ARG;
        rc = MPI_Comm_rank(MPI_COMM_WORLD, NULL);
        CHECK(rc == want, "NULL rank pointer: %d", rc);
        MPI_Comm c;
        rc = MPI_Comm_split_type(MPI_COMM_WORLD, 12345, 0, MPI_INFO_NULL, &c);
    } else if (!strcmp(which, "other")) {
        /* Calls after finalize fail with MPI_ERR_OTHER. */
        MUST(MPI_Finalize());
        rc = MPI_Comm_rank(MPI_COMM_WORLD, &x);
        CHECK(rc == MPI_ERR_OTHER, "after finalize: %d", rc);
        rc = MPI_Init(&argc, &argv);
        CHECK(rc == MPI_ERR_OTHER, "init after finalize: %d", rc);
        return 0;
    } else {
        CHECK(0, "unknown case %s", which);
    }
    CHECK(rc == want, "%s: got %d, want %d", which, rc, want);
    /* MPI still works after the error. */
    int sum = 0, one = 1;
    MUST(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    CHECK(sum == size, "allreduce after the error %d", sum);
    MUST(MPI_Finalize());
    return 0;
}
