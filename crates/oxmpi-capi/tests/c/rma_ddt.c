/* One-sided operations with derived datatypes on both sides, at any number of ranks: strided
   puts and gets, indexed accumulates, get_accumulate into a strided result, a struct origin
   into a contiguous target, over allocated, created and dynamic windows. Every data byte is
   checked and every gap byte of the target and the origin must be left untouched. Then the
   window as an object: names, user error handlers, keyvals and attributes, info; and the
   large-count forms. */
#include <stdint.h>
#include <string.h>
#include "check.h"

#define N 64
#define GAP (-7)

static int rank, size;

static int class_of(int rc) {
    int c = -1;
    MUST(MPI_Error_class(rc, &c));
    return c;
}

/* Window of N int32 per rank (flavor 0 allocate, 1 create, 2 dynamic), filled with GAP. The
   displacement of element 0 of each rank's memory is returned in disp[] (0 for static
   windows, the attached address for dynamic ones). */
static MPI_Win make(int flavor, int32_t **mem, MPI_Aint *disp) {
    MPI_Win win;
    if (flavor == 0) {
        MUST(MPI_Win_allocate(N * 4, 4, MPI_INFO_NULL, MPI_COMM_WORLD, mem, &win));
    } else if (flavor == 1) {
        *mem = malloc(N * 4);
        MUST(MPI_Win_create(*mem, N * 4, 4, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    } else {
        *mem = malloc(N * 4);
        MUST(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win));
        MUST(MPI_Win_attach(win, *mem, N * 4));
    }
    for (int i = 0; i < N; i++) (*mem)[i] = GAP;
    MPI_Aint mine = 0;
    if (flavor == 2) MUST(MPI_Get_address(*mem, &mine));
    MUST(MPI_Allgather(&mine, 1, MPI_AINT, disp, 1, MPI_AINT, MPI_COMM_WORLD));
    return win;
}

static void unmake(int flavor, MPI_Win *win, int32_t *mem) {
    if (flavor == 2) MUST(MPI_Win_detach(*win, mem));
    MUST(MPI_Win_free(win));
    if (flavor != 0) free(mem);
}

/* The displacement of element `elem` of rank t's memory. */
static MPI_Aint at(int flavor, const MPI_Aint *disp, int t, int elem) {
    return flavor == 2 ? disp[t] + elem * 4 : elem;
}

static void run(int flavor) {
    int32_t *mem;
    MPI_Aint *disp = malloc(sizeof(MPI_Aint) * size);
    MPI_Win win = make(flavor, &mem, disp);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;

    /* Target: every other int of the first 16 (8 ints); origin: 8 contiguous ints. */
    MPI_Datatype every_other;
    MUST(MPI_Type_vector(8, 1, 2, MPI_INT32_T, &every_other));
    MUST(MPI_Type_commit(&every_other));
    /* Target: blocks {2 at 20, 3 at 26, 1 at 31}; origin strided: 6 ints with stride 3. */
    int lens[3] = {2, 3, 1}, offs[3] = {20, 26, 31};
    MPI_Datatype idx;
    MUST(MPI_Type_indexed(3, lens, offs, MPI_INT32_T, &idx));
    MUST(MPI_Type_commit(&idx));
    MPI_Datatype stride3;
    MUST(MPI_Type_vector(6, 1, 3, MPI_INT32_T, &stride3));
    MUST(MPI_Type_commit(&stride3));

    int32_t src[8], src3[18];
    for (int i = 0; i < 8; i++) src[i] = rank * 100 + i;
    for (int i = 0; i < 18; i++) src3[i] = (i % 3 == 0) ? rank * 1000 + i / 3 : GAP;

    MUST(MPI_Win_fence(0, win));
    MUST(MPI_Put(src, 8, MPI_INT32_T, right, at(flavor, disp, right, 0), 1, every_other, win));
    for (int t = 0; t < size; t++) {
        MUST(MPI_Accumulate(src3, 1, stride3, t, at(flavor, disp, t, 0), 1, idx, MPI_SUM, win));
    }
    MUST(MPI_Win_fence(0, win));

    for (int i = 0; i < 16; i++) {
        int32_t want = (i % 2 == 0) ? left * 100 + i / 2 : GAP;
        CHECK(mem[i] == want, "flavor %d put: mem[%d] = %d, want %d", flavor, i, mem[i], want);
    }
    int32_t sum_ranks = size * (size - 1) / 2;
    int k = 0;
    for (int b = 0; b < 3; b++) {
        for (int j = 0; j < lens[b]; j++, k++) {
            int32_t want = GAP + 1000 * sum_ranks + size * k;
            int32_t got = mem[offs[b] + j];
            CHECK(got == want, "flavor %d acc: mem[%d] = %d, want %d", flavor, offs[b] + j, got,
                  want);
        }
    }
    for (int i = 16; i < N; i++) {
        int in_idx = (i >= 20 && i < 22) || (i >= 26 && i < 29) || i == 31;
        if (!in_idx) CHECK(mem[i] == GAP, "flavor %d gap mem[%d] = %d", flavor, i, mem[i]);
    }

    /* Get the strided target back into a strided origin: gaps of the origin untouched. */
    int32_t back[18];
    for (int i = 0; i < 18; i++) back[i] = -1;
    MPI_Datatype stride2;
    MUST(MPI_Type_vector(8, 1, 2, MPI_INT32_T, &stride2));
    MUST(MPI_Type_commit(&stride2));
    MUST(MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win));
    MUST(MPI_Get(back, 1, stride2, right, at(flavor, disp, right, 0), 1, every_other, win));
    MUST(MPI_Win_unlock(right, win));
    for (int i = 0; i < 16; i++) {
        int32_t want = (i % 2 == 0) ? rank * 100 + i / 2 : -1;
        CHECK(back[i] == want, "flavor %d get: back[%d] = %d, want %d", flavor, i, back[i], want);
    }

    /* Get_accumulate with a strided result: old values out, replaced by ours. */
    MUST(MPI_Barrier(MPI_COMM_WORLD));
    int32_t res[16], mine[8];
    for (int i = 0; i < 16; i++) res[i] = -2;
    for (int i = 0; i < 8; i++) mine[i] = -rank - 1;
    MUST(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win));
    MUST(MPI_Get_accumulate(mine, 8, MPI_INT32_T, res, 1, stride2, right,
                            at(flavor, disp, right, 0), 1, every_other, MPI_REPLACE, win));
    MUST(MPI_Win_unlock(right, win));
    for (int i = 0; i < 16; i++) {
        int32_t want = (i % 2 == 0) ? rank * 100 + i / 2 : -2;
        CHECK(res[i] == want, "flavor %d get_acc: res[%d] = %d, want %d", flavor, i, res[i], want);
    }
    MUST(MPI_Barrier(MPI_COMM_WORLD));
    for (int i = 0; i < 16; i++) {
        int32_t want = (i % 2 == 0) ? -left - 1 : GAP;
        CHECK(mem[i] == want, "flavor %d after get_acc: mem[%d] = %d", flavor, i, mem[i]);
    }

    /* A struct origin {int32 a; pad; int32 b at 8} into two contiguous target ints at 40. */
    struct { int32_t a; int32_t pad; int32_t b; } st = {rank + 5, 12345, rank + 6};
    int sl[2] = {1, 1};
    MPI_Aint sd[2] = {0, 8};
    MPI_Datatype st_types[2] = {MPI_INT32_T, MPI_INT32_T}, st_ty;
    MUST(MPI_Type_create_struct(2, sl, sd, st_types, &st_ty));
    MUST(MPI_Type_commit(&st_ty));
    MUST(MPI_Win_fence(0, win));
    MUST(MPI_Put(&st, 1, st_ty, right, at(flavor, disp, right, 40), 2, MPI_INT32_T, win));
    MUST(MPI_Win_fence(0, win));
    CHECK(mem[40] == left + 5 && mem[41] == left + 6 && mem[42] == GAP,
          "flavor %d struct put: %d %d %d", flavor, mem[40], mem[41], mem[42]);

    /* Errors: a target type reaching past the window; origin and target of different sizes;
       accumulate mixing predefined types. */
    MUST(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    MPI_Datatype far;
    MUST(MPI_Type_vector(2, 1, N, MPI_INT32_T, &far));
    MUST(MPI_Type_commit(&far));
    MUST(MPI_Win_fence(0, win));
    if (flavor != 2) {
        int rc = MPI_Put(src, 2, MPI_INT32_T, right, 0, 1, far, win);
        CHECK(class_of(rc) == MPI_ERR_RMA_RANGE, "far put gave class %d", class_of(rc));
    }
    int rc = MPI_Put(src, 3, MPI_INT32_T, right, 0, 1, every_other, win);
    CHECK(class_of(rc) == MPI_ERR_COUNT, "size mismatch gave class %d", class_of(rc));
    /* As many bytes, different type signatures. */
    rc = MPI_Put(src, 2, MPI_INT16_T, right, 0, 1, MPI_INT32_T, win);
    CHECK(class_of(rc) == MPI_ERR_TYPE, "signature mismatch gave class %d", class_of(rc));
    float f[8] = {0};
    rc = MPI_Accumulate(f, 8, MPI_FLOAT, right, 0, 1, every_other, MPI_SUM, win);
    CHECK(class_of(rc) == MPI_ERR_TYPE, "mixed accumulate gave class %d", class_of(rc));
    MUST(MPI_Win_fence(0, win));

    MPI_Type_free(&far);
    MPI_Type_free(&st_ty);
    MPI_Type_free(&stride2);
    MPI_Type_free(&stride3);
    MPI_Type_free(&idx);
    MPI_Type_free(&every_other);
    unmake(flavor, &win, mem);
    free(disp);
}

static int handler_calls, handler_code;
static MPI_Win handler_win;

static void on_error(MPI_Win *win, int *code, ...) {
    handler_calls++;
    handler_code = *code;
    handler_win = *win;
}

static int deletes;
static void *deleted_value;
static MPI_Win deleted_win;

static int on_delete(MPI_Win win, int keyval, void *value, void *extra) {
    (void)keyval;
    CHECK(extra == (void *)&deletes, "extra state %p", extra);
    deletes++;
    deleted_value = value;
    deleted_win = win;
    return MPI_SUCCESS;
}

static void objects(void) {
    int32_t *mem;
    MPI_Win win;
    MUST(MPI_Win_allocate(64, 4, MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win));

    char name[MPI_MAX_OBJECT_NAME];
    int len = -1;
    MUST(MPI_Win_get_name(win, name, &len));
    CHECK(len == 0 && name[0] == 0, "unnamed window is called '%s'", name);
    MUST(MPI_Win_set_name(win, "halo window"));
    MUST(MPI_Win_get_name(win, name, &len));
    CHECK(len == 11 && strcmp(name, "halo window") == 0, "name '%s' (%d)", name, len);

    MPI_Errhandler eh;
    MUST(MPI_Win_create_errhandler(on_error, &eh));
    MUST(MPI_Win_set_errhandler(win, eh));
    MUST(MPI_Errhandler_free(&eh));
    int rc = MPI_Put(mem, 1, MPI_INT32_T, size, 0, 1, MPI_INT32_T, win);
    CHECK(rc != MPI_SUCCESS && class_of(rc) == MPI_ERR_RANK, "bad rank gave %d", rc);
    CHECK(handler_calls == 1 && handler_win == win && handler_code == rc,
          "handler calls %d, code %d vs %d", handler_calls, handler_code, rc);
    MUST(MPI_Win_call_errhandler(win, MPI_ERR_OTHER));
    CHECK(handler_calls == 2 && handler_code == MPI_ERR_OTHER, "call_errhandler");

    int key = MPI_KEYVAL_INVALID, key2 = MPI_KEYVAL_INVALID;
    MUST(MPI_Win_create_keyval(MPI_WIN_NULL_COPY_FN, on_delete, &key, &deletes));
    MUST(MPI_Win_create_keyval(MPI_WIN_DUP_FN, MPI_WIN_NULL_DELETE_FN, &key2, NULL));
    void *got = NULL;
    int flag = 1;
    MUST(MPI_Win_get_attr(win, key, &got, &flag));
    CHECK(flag == 0, "unset attribute found");
    MUST(MPI_Win_set_attr(win, key, (void *)(intptr_t)(rank + 11)));
    MUST(MPI_Win_set_attr(win, key2, (void *)(intptr_t)7));
    MUST(MPI_Win_get_attr(win, key, &got, &flag));
    CHECK(flag == 1 && got == (void *)(intptr_t)(rank + 11), "attribute %p", got);
    MUST(MPI_Win_delete_attr(win, key2));
    MUST(MPI_Win_get_attr(win, key2, &got, &flag));
    CHECK(flag == 0, "deleted attribute found");
    /* The predefined attributes still answer. */
    MPI_Aint *wsize = NULL;
    MUST(MPI_Win_get_attr(win, MPI_WIN_SIZE, &wsize, &flag));
    CHECK(flag && *wsize == 64, "MPI_WIN_SIZE");
    /* A communicator's predefined key is not a window attribute. */
    MUST(MPI_Win_get_attr(win, MPI_TAG_UB, &got, &flag));
    CHECK(flag == 0, "MPI_TAG_UB on a window");

    MPI_Info info, used;
    MUST(MPI_Info_create(&info));
    MUST(MPI_Info_set(info, "no_locks", "false"));
    MUST(MPI_Win_set_info(win, info));
    MUST(MPI_Win_get_info(win, &used));
    CHECK(used != MPI_INFO_NULL, "get_info gave MPI_INFO_NULL");
    MUST(MPI_Info_free(&used));
    MUST(MPI_Info_free(&info));

    /* A flush keeps the window for this thread's next call: freeing it must forget that. */
    MUST(MPI_Win_lock_all(0, win));
    MUST(MPI_Win_flush(0, win));
    MUST(MPI_Win_unlock_all(win));

    MPI_Win freed = win;
    MUST(MPI_Win_free(&win));
    CHECK(win == MPI_WIN_NULL, "free did not null the handle");
    CHECK(deletes == 1 && deleted_value == (void *)(intptr_t)(rank + 11) && deleted_win == freed,
          "delete callback: %d calls, value %p", deletes, deleted_value);
    MUST(MPI_Win_free_keyval(&key));
    MUST(MPI_Win_free_keyval(&key2));
    CHECK(key == MPI_KEYVAL_INVALID, "free_keyval did not reset the key");

    /* Bad input: a freed window, a NULL name, a NULL function. */
    MUST(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    CHECK(class_of(MPI_Win_set_name(freed, "x")) == MPI_ERR_WIN, "freed window named");
    CHECK(class_of(MPI_Win_flush(0, freed)) == MPI_ERR_WIN, "freed window flushed");
    int one = 1;
    CHECK(class_of(MPI_Put(&one, 1, MPI_INT, 0, 0, 1, MPI_INT, freed)) == MPI_ERR_WIN,
          "put to a freed window");
    MPI_Win w2;
    MUST(MPI_Win_allocate(0, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &w2));
    MUST(MPI_Win_set_errhandler(w2, MPI_ERRORS_RETURN));
    CHECK(class_of(MPI_Win_set_name(w2, NULL)) == MPI_ERR_ARG, "NULL name");
    CHECK(class_of(MPI_Win_create_errhandler(NULL, &eh)) == MPI_ERR_ARG, "NULL handler");
    MUST(MPI_Win_free(&w2));
}

/* The large-count (`_c`) forms: the same operations with MPI_Count counts and MPI_Aint
   displacement units. */
static void large_count_forms(void) {
    int64_t *mem;
    MPI_Win win;
    MUST(MPI_Win_allocate_c(8 * sizeof(int64_t), (MPI_Aint)sizeof(int64_t), MPI_INFO_NULL,
                            MPI_COMM_WORLD, &mem, &win));
    for (int i = 0; i < 8; i++) mem[i] = 0;
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    int64_t v[2] = {rank + 100, rank + 200}, one = 1, old = -1, got[2] = {0, 0};
    MPI_Request req;
    MUST(MPI_Win_fence(0, win));
    MUST(MPI_Put_c(v, (MPI_Count)2, MPI_INT64_T, right, 0, (MPI_Count)2, MPI_INT64_T, win));
    MUST(MPI_Accumulate_c(&one, 1, MPI_INT64_T, 0, 4, 1, MPI_INT64_T, MPI_SUM, win));
    MUST(MPI_Rput_c(v, 1, MPI_INT64_T, right, 5, 1, MPI_INT64_T, win, &req));
    MUST(MPI_Wait(&req, MPI_STATUS_IGNORE));
    MUST(MPI_Win_fence(0, win));
    CHECK(mem[0] == left + 100 && mem[1] == left + 200 && mem[5] == left + 100,
          "put_c gave %lld %lld %lld", (long long)mem[0], (long long)mem[1], (long long)mem[5]);
    if (rank == 0) CHECK(mem[4] == size, "accumulate_c gave %lld", (long long)mem[4]);
    MUST(MPI_Get_c(got, 2, MPI_INT64_T, right, 0, 2, MPI_INT64_T, win));
    MUST(MPI_Rget_c(&old, 1, MPI_INT64_T, right, 5, 1, MPI_INT64_T, win, &req));
    MUST(MPI_Wait(&req, MPI_STATUS_IGNORE));
    MUST(MPI_Win_fence(0, win));
    CHECK(got[0] == rank + 100 && got[1] == rank + 200 && old == rank + 100, "get_c");
    MUST(MPI_Get_accumulate_c(&one, 1, MPI_INT64_T, &old, 1, MPI_INT64_T, 0, 6, 1, MPI_INT64_T,
                              MPI_SUM, win));
    MUST(MPI_Raccumulate_c(&one, 1, MPI_INT64_T, 0, 7, 1, MPI_INT64_T, MPI_SUM, win, &req));
    MUST(MPI_Wait(&req, MPI_STATUS_IGNORE));
    MUST(MPI_Rget_accumulate_c(NULL, 0, MPI_INT64_T, &old, 1, MPI_INT64_T, 0, 7, 1,
                               MPI_INT64_T, MPI_NO_OP, win, &req));
    MUST(MPI_Wait(&req, MPI_STATUS_IGNORE));
    MUST(MPI_Win_fence(0, win));
    if (rank == 0) CHECK(mem[6] == size && mem[7] == size, "get_accumulate_c/raccumulate_c");
    MUST(MPI_Win_free(&win));

    MPI_Win shared;
    int64_t *mine;
    MUST(MPI_Win_allocate_shared_c(16, 8, MPI_INFO_NULL, MPI_COMM_WORLD, &mine, &shared));
    MPI_Aint qsize = 0, qunit = 0;
    int64_t *theirs = NULL;
    MUST(MPI_Win_shared_query_c(shared, right, &qsize, &qunit, &theirs));
    CHECK(qsize == 16 && qunit == 8 && theirs != NULL, "shared_query_c %ld %ld", (long)qsize,
          (long)qunit);
    MUST(MPI_Win_free(&shared));

    int64_t buf[2];
    MUST(MPI_Win_create_c(buf, 16, 8, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    MUST(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    int rc = MPI_Put_c(v, (MPI_Count)-1, MPI_INT64_T, right, 0, 1, MPI_INT64_T, win);
    CHECK(class_of(rc) == MPI_ERR_COUNT, "negative count gave class %d", class_of(rc));
    MUST(MPI_Win_free(&win));
    MUST(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    rc = MPI_Win_create_c(buf, 16, (MPI_Aint)1 << 40, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    CHECK(class_of(rc) == MPI_ERR_DISP, "huge displacement unit gave class %d", class_of(rc));
    MUST(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
}

int main(int argc, char **argv) {
    MUST(MPI_Init(&argc, &argv));
    MUST(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    MUST(MPI_Comm_size(MPI_COMM_WORLD, &size));
    for (int flavor = 0; flavor < 3; flavor++) run(flavor);
    objects();
    large_count_forms();
    MUST(MPI_Finalize());
    if (rank == 0) printf("rma_ddt: %d ranks passed\n", size);
    return 0;
}
