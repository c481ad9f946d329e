/* Environment: init state, versions, names, time, memory, thread queries. */
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include "check.h"

/* At MPI_THREAD_FUNNELED only the main thread may call MPI: another thread's one-sided calls
 * on a window the main thread just used are refused, not run. */
static MPI_Win funneled_win;
static int funneled_rank, funneled_rc[2];

static void *other_thread(void *arg) {
    (void)arg;
    int64_t v = 7;
    funneled_rc[0] = MPI_Put(&v, 1, MPI_INT64_T, funneled_rank, 0, 1, MPI_INT64_T, funneled_win);
    funneled_rc[1] = MPI_Win_flush(funneled_rank, funneled_win);
    return NULL;
}

static void funneled_window(void) {
    int64_t *base = NULL, v = 1;
    MUST(MPI_Comm_rank(MPI_COMM_WORLD, &funneled_rank));
    MUST(MPI_Win_allocate(sizeof(int64_t), sizeof(int64_t), MPI_INFO_NULL, MPI_COMM_WORLD, &base,
                          &funneled_win));
    MUST(MPI_Win_set_errhandler(funneled_win, MPI_ERRORS_RETURN));
    MUST(MPI_Win_lock_all(0, funneled_win));
    MUST(MPI_Put(&v, 1, MPI_INT64_T, funneled_rank, 0, 1, MPI_INT64_T, funneled_win));
    MUST(MPI_Win_flush(funneled_rank, funneled_win));
    pthread_t t;
    CHECK(pthread_create(&t, NULL, other_thread, NULL) == 0, "pthread_create");
    CHECK(pthread_join(t, NULL) == 0, "pthread_join");
    for (int i = 0; i < 2; i++) {
        int cls = -1;
        MUST(MPI_Error_class(funneled_rc[i], &cls));
        CHECK(cls == MPI_ERR_OTHER, "call %d from another thread at FUNNELED: class %d", i, cls);
    }
    MUST(MPI_Win_flush(funneled_rank, funneled_win));
    CHECK(*base == 1, "the refused put wrote %ld", (long)*base);
    MUST(MPI_Win_unlock_all(funneled_win));
    MUST(MPI_Win_free(&funneled_win));
}

int main(int argc, char **argv) {
    int flag = -1, v = 0, sv = -1, len = 0, provided = -1;
    char name[MPI_MAX_PROCESSOR_NAME], lib[MPI_MAX_LIBRARY_VERSION_STRING];

    MUST(MPI_Initialized(&flag));
    CHECK(flag == 0, "initialized before init");
    MUST(MPI_Get_version(&v, &sv));
    CHECK(v == 5 && sv == 0, "version %d.%d", v, sv);
    MUST(MPI_Abi_get_version(&v, &sv));
    CHECK(v == 1 && sv == 0, "abi version %d.%d", v, sv);

    MUST(MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided));
    CHECK(provided == MPI_THREAD_FUNNELED, "provided %d", provided);
    MUST(MPI_Query_thread(&provided));
    CHECK(provided == MPI_THREAD_FUNNELED, "query %d", provided);
    MUST(MPI_Is_thread_main(&flag));
    CHECK(flag == 1, "is_thread_main");
    MUST(MPI_Initialized(&flag));
    CHECK(flag == 1, "initialized after init");
    MUST(MPI_Finalized(&flag));
    CHECK(flag == 0, "finalized before finalize");

    MUST(MPI_Get_processor_name(name, &len));
    CHECK(len > 0 && (int)strlen(name) == len, "processor name %s/%d", name, len);
    MUST(MPI_Get_library_version(lib, &len));
    CHECK(strstr(lib, "oxmpi") != NULL && (int)strlen(lib) == len, "library %s", lib);

    double t0 = MPI_Wtime(), tick = MPI_Wtick();
    CHECK(tick > 0 && tick < 1, "tick %g", tick);
    CHECK(MPI_Wtime() >= t0, "time goes back");

    int *mem = NULL;
    MUST(MPI_Alloc_mem(64 * sizeof(int), MPI_INFO_NULL, &mem));
    CHECK(mem != NULL, "alloc_mem");
    for (int i = 0; i < 64; i++) mem[i] = i;
    MUST(MPI_Free_mem(mem));

    MPI_Info info;
    char val[16];
    MUST(MPI_Abi_get_info(&info));
    len = sizeof val;
    MUST(MPI_Info_get_string(info, "mpi_aint_size", &len, val, &flag));
    CHECK(flag && strcmp(val, "8") == 0, "mpi_aint_size %s", val);
    MUST(MPI_Info_free(&info));
    CHECK(info == MPI_INFO_NULL, "info freed");

    /* The Fortran ABI: what the built-in bindings fixed; setting it again is refused. */
    MUST(MPI_Abi_get_fortran_info(&info));
    len = sizeof val;
    MUST(MPI_Info_get_string(info, "mpi_integer_size", &len, val, &flag));
    CHECK(flag && strcmp(val, "4") == 0, "mpi_integer_size %s", val);
    len = sizeof val;
    MUST(MPI_Info_get_string(info, "mpi_double_precision_size", &len, val, &flag));
    CHECK(flag && strcmp(val, "8") == 0, "mpi_double_precision_size %s", val);
    {
        const char *opt[3] = {"mpi_logical16_supported", "mpi_real2_supported",
                              "mpi_double_complex_supported"};
        const MPI_Datatype ty[3] = {MPI_LOGICAL16, MPI_REAL2, MPI_DOUBLE_COMPLEX};
        for (int i = 0; i < 3; i++) {
            int size;
            len = sizeof val;
            MUST(MPI_Info_get_string(info, opt[i], &len, val, &flag));
            MUST(MPI_Type_size(ty[i], &size));
            CHECK(flag && strcmp(val, size > 0 ? "true" : "false") == 0, "%s %s", opt[i], val);
        }
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    {
        int cls, is_set = 0;
        long long t = -1, f = -1;
        MUST(MPI_Abi_get_fortran_booleans(4, &t, &f, &is_set));
        CHECK(is_set == 1 && (int)t == 1 && (int)f == 0 && (t >> 32) == -1 && (f >> 32) == -1,
              "LOGICAL*4 booleans %llx %llx set %d", t, f, is_set);
        MPI_Error_class(MPI_Abi_set_fortran_info(info), &cls);
        CHECK(cls == MPI_ERR_ABI, "set_fortran_info: class %d", cls);
        MPI_Error_class(MPI_Abi_set_fortran_booleans(4, &t, &f), &cls);
        CHECK(cls == MPI_ERR_ABI, "set_fortran_booleans: class %d", cls);
        MPI_Error_class(MPI_Abi_get_fortran_booleans(3, &t, &f, &is_set), &cls);
        CHECK(cls == MPI_ERR_ARG, "booleans of 3 bytes: class %d", cls);
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    MUST(MPI_Info_free(&info));

    CHECK(MPI_Pcontrol(1) == MPI_SUCCESS, "pcontrol");
    funneled_window();
    MUST(MPI_Finalize());
    MUST(MPI_Finalized(&flag));
    CHECK(flag == 1, "finalized");
    return 0;
}
