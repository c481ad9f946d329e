/* Attributes and keyvals: predefined attributes, copy and delete callbacks through dup and
 * free, MPI_COMM_DUP_FN, and the MPI-1 names. */
#include "check.h"

static int copies = 0, deletes = 0;
static int copy_fn(MPI_Comm c, int k, void *extra, void *in, void *out, int *flag) {
    (void)c; (void)k;
    copies++;
    *(void **)out = (char *)in + *(int *)extra;
    *flag = 1;
    return MPI_SUCCESS;
}
static int live_in_delete = 1;
static int delete_fn(MPI_Comm c, int k, void *val, void *extra) {
    (void)k; (void)val; (void)extra;
    deletes++;
    /* The communicator being freed is still live while its attributes are deleted. */
    int inter = -1, size = -1;
    if (MPI_Comm_test_inter(c, &inter) != MPI_SUCCESS || inter != 0 ||
        MPI_Comm_size(c, &size) != MPI_SUCCESS || size < 1)
        live_in_delete = 0;
    return MPI_SUCCESS;
}

int main(int argc, char **argv) {
    int flag, *p, key, key2, step = 1;
    void *v;
    MUST(MPI_Init(&argc, &argv));

    MUST(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &p, &flag));
    CHECK(flag && *p >= 32767, "tag_ub %d", flag ? *p : -1);
    MUST(MPI_Attr_get(MPI_COMM_WORLD, MPI_WTIME_IS_GLOBAL, &p, &flag));
    CHECK(!flag || *p == 0 || *p == 1, "wtime_is_global");

    MUST(MPI_Comm_create_keyval(copy_fn, delete_fn, &key, &step));
    MUST(MPI_Comm_set_attr(MPI_COMM_WORLD, key, (void *)100));
    MUST(MPI_Comm_get_attr(MPI_COMM_WORLD, key, &v, &flag));
    CHECK(flag && v == (void *)100, "get what was set");

    MPI_Comm dup;
    MUST(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    CHECK(copies == 1, "copy callback ran %d", copies);
    MUST(MPI_Comm_get_attr(dup, key, &v, &flag));
    CHECK(flag && v == (void *)101, "copied value %p", v);
    MUST(MPI_Comm_free(&dup));
    CHECK(deletes == 1, "delete callback on free %d", deletes);
    CHECK(live_in_delete && dup == MPI_COMM_NULL, "the communicator was live in its delete callback");
    MUST(MPI_Comm_delete_attr(MPI_COMM_WORLD, key));
    CHECK(deletes == 2, "delete callback on delete %d", deletes);
    MUST(MPI_Comm_get_attr(MPI_COMM_WORLD, key, &v, &flag));
    CHECK(!flag, "deleted");
    MUST(MPI_Comm_free_keyval(&key));
    CHECK(key == MPI_KEYVAL_INVALID, "keyval freed");

    MUST(MPI_Keyval_create(MPI_DUP_FN, MPI_NULL_DELETE_FN, &key2, NULL));
    MUST(MPI_Attr_put(MPI_COMM_WORLD, key2, (void *)7));
    MUST(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    MUST(MPI_Attr_get(dup, key2, &v, &flag));
    CHECK(flag && v == (void *)7, "MPI_DUP_FN copies the value");
    MUST(MPI_Attr_delete(MPI_COMM_WORLD, key2));
    MUST(MPI_Comm_free(&dup));
    MUST(MPI_Keyval_free(&key2));
    MUST(MPI_Finalize());
    return 0;
}
