/* One-sided communication through the C ABI at any number of ranks: every window flavor,
   put/get/accumulate/get_accumulate/fetch_and_op/compare_and_swap, the request forms,
   fence, post/start/complete/wait, locks and lock_all, window attributes, shared_query
   pointers, dynamic windows, and the error classes a window's MPI_ERRORS_RETURN handler
   returns. */
#include <stdint.h>
#include <string.h>
#include "check.h"

static int rank, size;

static int class_of(int rc) {
    int c = -1;
    MUST(MPI_Error_class(rc, &c));
    return c;
}

static void allocate_fence_and_attributes(void) {
    int64_t *base = NULL;
    MPI_Win win;
    MUST(MPI_Win_allocate(8 * sizeof(int64_t), sizeof(int64_t), MPI_INFO_NULL, MPI_COMM_WORLD,
                          &base, &win));
    CHECK(base != NULL, "allocate gave no memory");
    void *attr = NULL;
    int flag = 0;
    MUST(MPI_Win_get_attr(win, MPI_WIN_BASE, &attr, &flag));
    CHECK(flag && attr == (void *)base, "MPI_WIN_BASE %p, base %p", attr, (void *)base);
    MPI_Aint *sz = NULL;
    MUST(MPI_Win_get_attr(win, MPI_WIN_SIZE, &sz, &flag));
    CHECK(flag && *sz == 64, "MPI_WIN_SIZE");
    int *du = NULL;
    MUST(MPI_Win_get_attr(win, MPI_WIN_DISP_UNIT, &du, &flag));
    CHECK(flag && *du == 8, "MPI_WIN_DISP_UNIT");
    int *fl = NULL;
    MUST(MPI_Win_get_attr(win, MPI_WIN_CREATE_FLAVOR, &fl, &flag));
    CHECK(flag && *fl == MPI_WIN_FLAVOR_ALLOCATE, "flavor %d", *fl);
    int *model = NULL;
    MUST(MPI_Win_get_attr(win, MPI_WIN_MODEL, &model, &flag));
    CHECK(flag && *model == MPI_WIN_UNIFIED, "model");
    MPI_Group g;
    int gs = 0;
    MUST(MPI_Win_get_group(win, &g));
    MUST(MPI_Group_size(g, &gs));
    CHECK(gs == size, "group size %d", gs);
    MUST(MPI_Group_free(&g));

    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    int64_t v[2] = {rank * 10, rank * 10 + 1};
    MUST(MPI_Win_fence(0, win));
    MUST(MPI_Put(v, 2, MPI_INT64_T, right, 0, 2, MPI_INT64_T, win));
    for (int t = 0; t < size; t++) {
        int64_t one = rank + 1;
        MUST(MPI_Accumulate(&one, 1, MPI_INT64_T, t, 2, 1, MPI_INT64_T, MPI_SUM, win));
    }
    MUST(MPI_Win_fence(0, win));
    CHECK(base[0] == left * 10 && base[1] == left * 10 + 1, "put gave %lld %lld",
          (long long)base[0], (long long)base[1]);
    CHECK(base[2] == (int64_t)size * (size + 1) / 2, "accumulate gave %lld", (long long)base[2]);
    int64_t got[2];
    MPI_Request req;
    MUST(MPI_Rget(got, 2, MPI_INT64_T, left, 0, 2, MPI_INT64_T, win, &req));
    MUST(MPI_Wait(&req, MPI_STATUS_IGNORE));
    MUST(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));
    int ll = (left + size - 1) % size;
    CHECK(got[0] == ll * 10 && got[1] == ll * 10 + 1, "rget gave %lld", (long long)got[0]);
    MUST(MPI_Win_free(&win));
    CHECK(win == MPI_WIN_NULL, "free sets MPI_WIN_NULL");
}

static void counters_under_lock_all(void) {
    int64_t *base;
    MPI_Win win;
    MUST(MPI_Win_allocate(2 * sizeof(int64_t), sizeof(int64_t), MPI_INFO_NULL, MPI_COMM_WORLD,
                          &base, &win));
    base[0] = base[1] = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    MUST(MPI_Win_lock_all(0, win));
    const int k = 300;
    for (int i = 0; i < k; i++) {
        int64_t one = 1, old = -1;
        MUST(MPI_Fetch_and_op(&one, &old, MPI_INT64_T, 0, 0, MPI_SUM, win));
        CHECK(old >= 0 && old < (int64_t)k * size, "fetched %lld", (long long)old);
        int64_t cur = 0, seen;
        for (;;) {
            int64_t next = cur + 1;
            MUST(MPI_Compare_and_swap(&next, &cur, &seen, MPI_INT64_T, 0, 1, win));
            if (seen == cur) break;
            cur = seen;
        }
    }
    MUST(MPI_Win_flush_all(win));
    MUST(MPI_Win_unlock_all(win));
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        CHECK(base[0] == (int64_t)k * size, "fetch_and_op counter %lld", (long long)base[0]);
        CHECK(base[1] == (int64_t)k * size, "CAS counter %lld", (long long)base[1]);
    }
    MUST(MPI_Win_free(&win));
}

static void create_with_locks_and_pscw(void) {
    int mem[4] = {0, 0, 0, 0};
    MPI_Win win;
    MUST(MPI_Win_create(mem, sizeof mem, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    int v = 100 + rank;
    MUST(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win));
    MUST(MPI_Put(&v, 1, MPI_INT, right, 0, 1, MPI_INT, win));
    MUST(MPI_Win_flush(right, win));
    MUST(MPI_Win_unlock(right, win));
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(mem[0] == 100 + left, "locked put gave %d", mem[0]);

    /* PSCW: everyone exposes to and accesses its right neighbour. */
    MPI_Group world, to, from;
    MUST(MPI_Comm_group(MPI_COMM_WORLD, &world));
    MUST(MPI_Group_incl(world, 1, &right, &to));
    MUST(MPI_Group_incl(world, 1, &left, &from));
    MUST(MPI_Win_post(from, 0, win));
    MUST(MPI_Win_start(to, 0, win));
    int two[2] = {rank, -rank}, res = -1;
    MUST(MPI_Put(two, 2, MPI_INT, right, 1, 2, MPI_INT, win));
    MUST(MPI_Get_accumulate(&v, 1, MPI_INT, &res, 1, MPI_INT, right, 3, 1, MPI_INT, MPI_MAX,
                            win));
    MUST(MPI_Win_complete(win));
    int flag = 0;
    while (!flag) MUST(MPI_Win_test(win, &flag));
    CHECK(res == 0, "get_accumulate old value %d", res);
    CHECK(mem[1] == left && mem[2] == -left && mem[3] == 100 + left, "PSCW gave %d %d %d",
          mem[1], mem[2], mem[3]);
    MUST(MPI_Group_free(&to));
    MUST(MPI_Group_free(&from));
    MUST(MPI_Group_free(&world));
    MPI_Barrier(MPI_COMM_WORLD);
    MUST(MPI_Win_free(&win));
}

static void shared_and_dynamic(void) {
    double *mine;
    MPI_Win win;
    MUST(MPI_Win_allocate_shared(4 * sizeof(double), sizeof(double), MPI_INFO_NULL,
                                 MPI_COMM_WORLD, &mine, &win));
    MPI_Aint qs;
    int qd;
    double *right_mem;
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    MUST(MPI_Win_shared_query(win, right, &qs, &qd, &right_mem));
    CHECK(qs == 4 * (MPI_Aint)sizeof(double) && qd == (int)sizeof(double), "shared_query");
    MUST(MPI_Win_fence(0, win));
    right_mem[1] = rank + 0.25;
    MUST(MPI_Win_fence(0, win));
    CHECK(mine[1] == left + 0.25, "direct store gave %f", mine[1]);
    MUST(MPI_Win_free(&win));

    int64_t buf[3] = {0, 0, 0};
    MUST(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    MUST(MPI_Win_attach(win, buf, sizeof buf));
    MPI_Aint addr, *all = malloc(sizeof(MPI_Aint) * size);
    MUST(MPI_Get_address(buf, &addr));
    MUST(MPI_Allgather(&addr, 1, MPI_AINT, all, 1, MPI_AINT, MPI_COMM_WORLD));
    MUST(MPI_Win_fence(0, win));
    int64_t v = 7 + rank;
    MUST(MPI_Put(&v, 1, MPI_INT64_T, right, all[right] + 8, 1, MPI_INT64_T, win));
    MUST(MPI_Win_fence(0, win));
    CHECK(buf[1] == 7 + left, "dynamic put gave %lld", (long long)buf[1]);
    MUST(MPI_Win_detach(win, buf));
    MUST(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));
    MUST(MPI_Win_free(&win));
    free(all);
}

static void error_classes(void) {
    int64_t *base;
    MPI_Win win;
    MUST(MPI_Win_allocate(sizeof(int64_t), sizeof(int64_t), MPI_INFO_NULL, MPI_COMM_WORLD, &base,
                          &win));
    MUST(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    MPI_Errhandler eh;
    MUST(MPI_Win_get_errhandler(win, &eh));
    CHECK(eh == MPI_ERRORS_RETURN, "get_errhandler");
    int64_t v = 1;
    CHECK(class_of(MPI_Put(&v, 1, MPI_INT64_T, 0, 0, 1, MPI_INT64_T, win)) == MPI_ERR_RMA_SYNC,
          "put outside an epoch");
    CHECK(class_of(MPI_Win_unlock(0, win)) == MPI_ERR_RMA_SYNC, "unlock without lock");
    CHECK(class_of(MPI_Win_lock(77, 0, 0, win)) == MPI_ERR_LOCKTYPE, "bad lock type");
    CHECK(class_of(MPI_Win_fence(1, win)) == MPI_ERR_ASSERT, "bad assert");
    MUST(MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win));
    CHECK(class_of(MPI_Put(&v, 1, MPI_INT64_T, rank, 1, 1, MPI_INT64_T, win)) ==
              MPI_ERR_RMA_RANGE,
          "put past the end");
    CHECK(class_of(MPI_Put(&v, 2, MPI_INT32_T, rank, 0, 1, MPI_INT32_T, win)) == MPI_ERR_COUNT,
          "origin and target sizes differ");
    /* The same type and count on both sides (the short path) still checks everything. */
    int64_t r = 0;
    CHECK(class_of(MPI_Put(NULL, 1, MPI_INT64_T, rank, 0, 1, MPI_INT64_T, win)) == MPI_ERR_BUFFER,
          "put from NULL");
    CHECK(class_of(MPI_Get(NULL, 1, MPI_INT64_T, rank, 0, 1, MPI_INT64_T, win)) == MPI_ERR_BUFFER,
          "get into NULL");
    CHECK(class_of(MPI_Put(&v, -1, MPI_INT64_T, rank, 0, -1, MPI_INT64_T, win)) == MPI_ERR_COUNT,
          "negative counts");
    CHECK(class_of(MPI_Get(&r, 1, MPI_INT64_T, rank, 1, 1, MPI_INT64_T, win)) ==
              MPI_ERR_RMA_RANGE,
          "get past the end");
    CHECK(class_of(MPI_Get(&r, 1, MPI_INT64_T, 99, 0, 1, MPI_INT64_T, win)) == MPI_ERR_RANK,
          "get from a rank outside the window");
    CHECK(class_of(MPI_Accumulate(&v, 1, MPI_INT64_T, rank, 1, 1, MPI_INT64_T, MPI_SUM, win)) ==
              MPI_ERR_RMA_RANGE,
          "accumulate past the end");
    CHECK(class_of(MPI_Accumulate(NULL, 1, MPI_INT64_T, rank, 0, 1, MPI_INT64_T, MPI_SUM, win)) ==
              MPI_ERR_BUFFER,
          "accumulate from NULL");
    CHECK(class_of(MPI_Fetch_and_op(&v, NULL, MPI_INT64_T, rank, 0, MPI_SUM, win)) ==
              MPI_ERR_BUFFER,
          "fetch_and_op into NULL");
    CHECK(class_of(MPI_Fetch_and_op(&v, &r, MPI_INT64_T, rank, 0, MPI_OP_NULL, win)) ==
              MPI_ERR_OP,
          "fetch_and_op with MPI_OP_NULL");
    MUST(MPI_Put(&v, 1, MPI_INT64_T, rank, 0, 1, MPI_INT64_T, win));
    MUST(MPI_Win_flush(rank, win));
    MUST(MPI_Fetch_and_op(NULL, &r, MPI_INT64_T, rank, 0, MPI_NO_OP, win));
    CHECK(r == v, "fetch_and_op with MPI_NO_OP reads %ld without an origin", (long)r);
    CHECK(class_of(MPI_Win_shared_query(win, 0, NULL, NULL, NULL)) == MPI_ERR_ARG,
          "NULL outputs");
    MUST(MPI_Win_unlock(rank, win));
    MUST(MPI_Win_free(&win));
    int mem;
    MUST(MPI_Win_create(&mem, sizeof mem, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    MUST(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    MPI_Aint qs;
    int qd;
    void *p;
    /* MPI-4.1: memory MPI did not allocate is not reachable by loads and stores here. */
    p = &mem;
    MUST(MPI_Win_shared_query(win, 0, &qs, &qd, &p));
    CHECK(qs == 0 && p == NULL && qd == 1, "shared_query on a created window: %ld %p %d",
          (long)qs, p, qd);
    CHECK(class_of(MPI_Win_attach(win, &mem, 4)) == MPI_ERR_RMA_FLAVOR, "attach to created");
    MUST(MPI_Win_free(&win));
    MPI_Win bad = MPI_WIN_NULL;
    MUST(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    CHECK(class_of(MPI_Win_fence(0, bad)) == MPI_ERR_WIN, "MPI_WIN_NULL");
    char wname[MPI_MAX_OBJECT_NAME];
    int wlen = 0;
    MUST(MPI_Win_get_name(MPI_WIN_NULL, wname, &wlen));
    CHECK(strcmp(wname, "MPI_WIN_NULL") == 0 && wlen == 12, "name of MPI_WIN_NULL: %s", wname);
    CHECK(class_of(MPI_Win_create(&mem, 4, 0, MPI_INFO_NULL, MPI_COMM_WORLD, &win)) ==
              MPI_ERR_DISP,
          "zero disp_unit");
    MUST(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
}

int main(int argc, char **argv) {
    MUST(MPI_Init(&argc, &argv));
    MUST(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    MUST(MPI_Comm_size(MPI_COMM_WORLD, &size));
    allocate_fence_and_attributes();
    counters_under_lock_all();
    create_with_locks_and_pscw();
    shared_and_dynamic();
    error_classes();
    MUST(MPI_Finalize());
    if (rank == 0) printf("rma passed\n");
    return 0;
}
