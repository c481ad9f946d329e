/*
 * The handwritten part of libmpifort: the sentinels' storage, request conversions, strings,
 * and the Fortran bindings that need more than a table-driven translation (MPI_Init without
 * argc/argv, Fortran callbacks for operations, error handlers and attribute keyvals,
 * attribute values as integers, MPI_Alloc_mem, MPI_Buffer_detach, MPI_Pcontrol) and the
 * length of alltoallw's datatype arrays.
 * gen.py writes the rest (mpifort_gen.c) from the installed mpi.h.
 */
#include "runtime.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* ---- Sentinels: one definition; a program's common blocks of the same name bind here. */
OXF_EXPORT MPI_Fint mpi_fortran_bottom_;
OXF_EXPORT MPI_Fint mpi_fortran_in_place_;
OXF_EXPORT MPI_Fint mpi_fortran_buffer_automatic_;
OXF_EXPORT MPI_Fint mpi_fortran_status_ignore_[MPI_F_STATUS_SIZE];
OXF_EXPORT MPI_Fint mpi_fortran_statuses_ignore_[MPI_F_STATUS_SIZE];
OXF_EXPORT MPI_Fint mpi_fortran_errcodes_ignore_[1];
OXF_EXPORT MPI_Fint mpi_fortran_unweighted_[1];
OXF_EXPORT MPI_Fint mpi_fortran_weights_empty_[1];

/* ---- Requests ----------------------------------------------------------------------------
 * A Fortran request is the value of MPI_Request_c2f: the C ABI numbers requests in one table
 * (its engine slots need no lock), so C code given the integer gets the same request back
 * from MPI_Request_f2c. The PMPI_ names keep these internal conversions out of profilers. */

MPI_Request oxf_req_get(MPI_Fint f) { return PMPI_Request_f2c(f); }

MPI_Fint oxf_req_new(MPI_Request c) { return PMPI_Request_c2f(c); }

void oxf_req_update(MPI_Fint *f, MPI_Request old, MPI_Request now) {
    /* A persistent request that completed keeps its integer; a freed one gets NULL's. */
    if (now != old)
        *f = PMPI_Request_c2f(now);
}

int oxf_types_len(MPI_Comm comm, int neighbor, int send) {
    int n = 0;
    if (comm == MPI_COMM_NULL)
        return 0;
    if (!neighbor) {
        int inter = 0;
        PMPI_Comm_test_inter(comm, &inter);
        if (inter)
            PMPI_Comm_remote_size(comm, &n);
        else
            PMPI_Comm_size(comm, &n);
        return n;
    }
    int topo = MPI_UNDEFINED;
    PMPI_Topo_test(comm, &topo);
    if (topo == MPI_CART) {
        PMPI_Cartdim_get(comm, &n);
        n *= 2;
    } else if (topo == MPI_GRAPH) {
        int rank = 0;
        PMPI_Comm_rank(comm, &rank);
        PMPI_Graph_neighbors_count(comm, rank, &n);
    } else if (topo == MPI_DIST_GRAPH) {
        int in = 0, out = 0, weighted = 0;
        PMPI_Dist_graph_neighbors_count(comm, &in, &out, &weighted);
        n = send ? out : in;
    }
    return n;
}

/* ---- Strings ----------------------------------------------------------------------------- */

char *oxf_str_in(const char *s, size_t len) {
    while (len > 0 && s[len - 1] == ' ')
        len--;
    char *c = malloc(len + 1);
    if (c) {
        memcpy(c, s, len);
        c[len] = 0;
    }
    return c;
}

void oxf_str_out(char *dst, size_t len, const char *src) {
    size_t n = strlen(src);
    if (n > len)
        n = len;
    memcpy(dst, src, n);
    memset(dst + n, ' ', len - n);
}

/* ---- Environment ------------------------------------------------------------------------- */

OXF_EXPORT void pmpi_init_(MPI_Fint *ierr) { *ierr = MPI_Init(NULL, NULL); }

OXF_EXPORT void pmpi_init_thread_(MPI_Fint *required, MPI_Fint *provided, MPI_Fint *ierr) {
    *ierr = MPI_Init_thread(NULL, NULL, *required, provided);
}

OXF_EXPORT void pmpi_pcontrol_(MPI_Fint *level, MPI_Fint *ierr) { *ierr = MPI_Pcontrol(*level); }

OXF_EXPORT void pmpi_alloc_mem_(MPI_Aint *size, MPI_Fint *info, void **baseptr, MPI_Fint *ierr) {
    /* BASEPTR is INTEGER(KIND=MPI_ADDRESS_KIND) or TYPE(C_PTR): 8 bytes either way. */
    *ierr = MPI_Alloc_mem(*size, OXF_F2C(MPI_Info, *info), baseptr);
}

OXF_EXPORT void pmpi_buffer_detach_(void *buffer_addr, MPI_Fint *size, MPI_Fint *ierr) {
    (void)buffer_addr; /* Fortran cannot use the address it would get back. */
    void *addr = NULL;
    *ierr = MPI_Buffer_detach(&addr, size);
}

/* The other detaches likewise: the address stays out of the caller's BUFFER_ADDR, which is
 * the buffer itself or an INTEGER, not room for a C pointer. */
OXF_EXPORT void pmpi_buffer_detach_c_(void *buffer_addr, MPI_Count *size, MPI_Fint *ierr) {
    (void)buffer_addr;
    void *addr = NULL;
    *ierr = MPI_Buffer_detach_c(&addr, size);
}

/* A communicator's and a session's buffer: pmpi_<kind>_detach_buffer_ and its _c_ form. */
#define OXF_OBJECT_DETACH(kind, T, C)                                                         \
    OXF_EXPORT void pmpi_##kind##_detach_buffer_(MPI_Fint *h, void *buffer_addr,               \
                                                 MPI_Fint *size, MPI_Fint *ierr) {             \
        (void)buffer_addr;                                                                     \
        void *addr = NULL;                                                                     \
        *ierr = MPI_##C##_detach_buffer(OXF_F2C(T, *h), &addr, size);                          \
    }                                                                                          \
    OXF_EXPORT void pmpi_##kind##_detach_buffer_c_(MPI_Fint *h, void *buffer_addr,             \
                                                   MPI_Count *size, MPI_Fint *ierr) {          \
        (void)buffer_addr;                                                                     \
        void *addr = NULL;                                                                     \
        *ierr = MPI_##C##_detach_buffer_c(OXF_F2C(T, *h), &addr, size);                        \
    }
OXF_OBJECT_DETACH(comm, MPI_Comm, Comm)
OXF_OBJECT_DETACH(session, MPI_Session, Session)

/* ---- Fortran callbacks ------------------------------------------------------------------
 * The C ABI calls back without user context, so each Fortran function gets a slot with a C
 * trampoline of its own; the trampoline converts the handles to integers. */

typedef void (*oxf_user_fn)(void *, void *, MPI_Fint *, MPI_Fint *);
typedef void (*oxf_errh_fn)(MPI_Fint *, MPI_Fint *);

#define OXF_SLOTS 64
static pthread_mutex_t cb_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    oxf_user_fn fn;
    MPI_Op op;
} op_slots[OXF_SLOTS];
static oxf_errh_fn errh_slots[OXF_SLOTS];

#define OXF_REPEAT8(M, b) M(b##0) M(b##1) M(b##2) M(b##3) M(b##4) M(b##5) M(b##6) M(b##7)
#define OXF_REPEAT64(M)                                                                       \
    OXF_REPEAT8(M, 0) OXF_REPEAT8(M, 1) OXF_REPEAT8(M, 2) OXF_REPEAT8(M, 3)                   \
    OXF_REPEAT8(M, 4) OXF_REPEAT8(M, 5) OXF_REPEAT8(M, 6) OXF_REPEAT8(M, 7)

/* Slot numbers are written in octal digits by OXF_REPEAT64: 00..77. */
#define OXF_OP_TRAMP(k)                                                                       \
    static void op_tramp_##k(void *in, void *inout, int *len, MPI_Datatype *dt) {              \
        MPI_Fint fdt = OXF_C2F(*dt);                                                           \
        op_slots[0##k].fn(in, inout, len, &fdt);                                               \
    }
OXF_REPEAT64(OXF_OP_TRAMP)
#define OXF_OP_ENTRY(k) op_tramp_##k,
static MPI_User_function *const op_tramps[OXF_SLOTS] = {OXF_REPEAT64(OXF_OP_ENTRY)};

/* Error handlers of every kind share the slots (a slot holds only the Fortran function);
 * slot k's trampoline of handle type T passes the handle as an integer. */
#define OXF_ERRH_TRAMP_OF(T, kind, k)                                                         \
    static void kind##_errh_tramp_##k(T *h, int *code, ...) {                                  \
        MPI_Fint fh = OXF_C2F(*h);                                                             \
        errh_slots[0##k](&fh, code);                                                           \
    }
#define OXF_COMM_ERRH_TRAMP(k) OXF_ERRH_TRAMP_OF(MPI_Comm, comm, k)
#define OXF_WIN_ERRH_TRAMP(k) OXF_ERRH_TRAMP_OF(MPI_Win, win, k)
#define OXF_SESSION_ERRH_TRAMP(k) OXF_ERRH_TRAMP_OF(MPI_Session, session, k)
OXF_REPEAT64(OXF_COMM_ERRH_TRAMP)
OXF_REPEAT64(OXF_WIN_ERRH_TRAMP)
OXF_REPEAT64(OXF_SESSION_ERRH_TRAMP)
#define OXF_COMM_ERRH_ENTRY(k) comm_errh_tramp_##k,
#define OXF_WIN_ERRH_ENTRY(k) win_errh_tramp_##k,
#define OXF_SESSION_ERRH_ENTRY(k) session_errh_tramp_##k,
static MPI_Comm_errhandler_function *const comm_errh_tramps[OXF_SLOTS] = {
    OXF_REPEAT64(OXF_COMM_ERRH_ENTRY)};
static MPI_Win_errhandler_function *const win_errh_tramps[OXF_SLOTS] = {
    OXF_REPEAT64(OXF_WIN_ERRH_ENTRY)};
static MPI_Session_errhandler_function *const session_errh_tramps[OXF_SLOTS] = {
    OXF_REPEAT64(OXF_SESSION_ERRH_ENTRY)};

OXF_EXPORT void pmpi_op_create_(oxf_user_fn fn, MPI_Fint *commute, MPI_Fint *op, MPI_Fint *ierr) {
    pthread_mutex_lock(&cb_lock);
    int k = 0;
    while (k < OXF_SLOTS && op_slots[k].fn)
        k++;
    if (k == OXF_SLOTS) {
        pthread_mutex_unlock(&cb_lock);
        /* Every slot holds a live Fortran operation. */
        *ierr = MPI_ERR_NO_MEM;
        return;
    }
    op_slots[k].fn = fn;
    pthread_mutex_unlock(&cb_lock);
    MPI_Op c = MPI_OP_NULL;
    *ierr = MPI_Op_create(op_tramps[k], *commute != 0, &c);
    pthread_mutex_lock(&cb_lock);
    if (*ierr == MPI_SUCCESS)
        op_slots[k].op = c;
    else
        op_slots[k].fn = NULL;
    pthread_mutex_unlock(&cb_lock);
    *op = OXF_C2F(c);
}

OXF_EXPORT void pmpi_op_free_(MPI_Fint *op, MPI_Fint *ierr) {
    MPI_Op c = OXF_F2C(MPI_Op, *op), was = c;
    *ierr = MPI_Op_free(&c);
    if (*ierr == MPI_SUCCESS) {
        pthread_mutex_lock(&cb_lock);
        for (int k = 0; k < OXF_SLOTS; k++)
            if (op_slots[k].fn && op_slots[k].op == was)
                op_slots[k].fn = NULL;
        pthread_mutex_unlock(&cb_lock);
    }
    *op = OXF_C2F(c);
}

/* The slot of Fortran handler `fn`, or -1 when every slot holds another one. */
static int errh_slot(oxf_errh_fn fn) {
    pthread_mutex_lock(&cb_lock);
    int k = 0;
    /* The same Fortran function shares its slot; handlers are rarely freed. */
    while (k < OXF_SLOTS && errh_slots[k] && errh_slots[k] != fn)
        k++;
    if (k < OXF_SLOTS)
        errh_slots[k] = fn;
    pthread_mutex_unlock(&cb_lock);
    return k < OXF_SLOTS ? k : -1;
}

/* pmpi_<kind>_create_errhandler_: the Fortran handler goes in a slot, and the C library
 * gets the slot's trampoline of the kind's handler type. */
#define OXF_CREATE_ERRHANDLER(kind, create, tramps)                                           \
    OXF_EXPORT void pmpi_##kind##_create_errhandler_(oxf_errh_fn fn, MPI_Fint *errhandler,     \
                                                     MPI_Fint *ierr) {                         \
        int k = errh_slot(fn);                                                                 \
        if (k < 0) {                                                                           \
            *ierr = MPI_ERR_NO_MEM;                                                            \
            return;                                                                            \
        }                                                                                      \
        MPI_Errhandler c = MPI_ERRHANDLER_NULL;                                                \
        *ierr = create(tramps[k], &c);                                                         \
        *errhandler = OXF_C2F(c);                                                              \
    }
OXF_CREATE_ERRHANDLER(comm, MPI_Comm_create_errhandler, comm_errh_tramps)
OXF_CREATE_ERRHANDLER(win, MPI_Win_create_errhandler, win_errh_tramps)
OXF_CREATE_ERRHANDLER(session, MPI_Session_create_errhandler, session_errh_tramps)

/* ---- Attribute keyvals: the Fortran functions and extra state travel as the C extra state. */

typedef void (*oxf_copy_fn)(MPI_Fint *, MPI_Fint *, MPI_Aint *, MPI_Aint *, MPI_Aint *,
                            MPI_Fint *, MPI_Fint *);
typedef void (*oxf_delete_fn)(MPI_Fint *, MPI_Fint *, MPI_Aint *, MPI_Aint *, MPI_Fint *);

struct oxf_keyval {
    oxf_copy_fn copy;
    oxf_delete_fn del;
    MPI_Aint extra;
    int old_style; /* MPI_KEYVAL_CREATE: INTEGER attribute values */
};

/* The predefined Fortran callbacks (MPI_COMM_NULL_COPY_FN and the others of mpif.h). */
OXF_EXPORT void mpi_comm_null_copy_fn_(MPI_Fint *old, MPI_Fint *kv, MPI_Aint *extra,
                                       MPI_Aint *in, MPI_Aint *out, MPI_Fint *flag,
                                       MPI_Fint *ierr) {
    (void)old, (void)kv, (void)extra, (void)in, (void)out;
    *flag = 0;
    *ierr = MPI_SUCCESS;
}
OXF_EXPORT void mpi_comm_dup_fn_(MPI_Fint *old, MPI_Fint *kv, MPI_Aint *extra, MPI_Aint *in,
                                 MPI_Aint *out, MPI_Fint *flag, MPI_Fint *ierr) {
    (void)old, (void)kv, (void)extra;
    *out = *in;
    *flag = 1;
    *ierr = MPI_SUCCESS;
}
OXF_EXPORT void mpi_comm_null_delete_fn_(MPI_Fint *comm, MPI_Fint *kv, MPI_Aint *val,
                                         MPI_Aint *extra, MPI_Fint *ierr) {
    (void)comm, (void)kv, (void)val, (void)extra;
    *ierr = MPI_SUCCESS;
}
OXF_EXPORT void mpi_win_null_copy_fn_(MPI_Fint *old, MPI_Fint *kv, MPI_Aint *extra,
                                      MPI_Aint *in, MPI_Aint *out, MPI_Fint *flag,
                                      MPI_Fint *ierr) {
    mpi_comm_null_copy_fn_(old, kv, extra, in, out, flag, ierr);
}
OXF_EXPORT void mpi_win_dup_fn_(MPI_Fint *old, MPI_Fint *kv, MPI_Aint *extra, MPI_Aint *in,
                                MPI_Aint *out, MPI_Fint *flag, MPI_Fint *ierr) {
    mpi_comm_dup_fn_(old, kv, extra, in, out, flag, ierr);
}
OXF_EXPORT void mpi_win_null_delete_fn_(MPI_Fint *win, MPI_Fint *kv, MPI_Aint *val,
                                        MPI_Aint *extra, MPI_Fint *ierr) {
    mpi_comm_null_delete_fn_(win, kv, val, extra, ierr);
}
/* MPI_NULL_COPY_FN, MPI_DUP_FN, MPI_NULL_DELETE_FN (INTEGER attribute values). */
OXF_EXPORT void mpi_null_copy_fn_(MPI_Fint *old, MPI_Fint *kv, MPI_Fint *extra, MPI_Fint *in,
                                  MPI_Fint *out, MPI_Fint *flag, MPI_Fint *ierr) {
    (void)old, (void)kv, (void)extra, (void)in, (void)out;
    *flag = 0;
    *ierr = MPI_SUCCESS;
}
OXF_EXPORT void mpi_dup_fn_(MPI_Fint *old, MPI_Fint *kv, MPI_Fint *extra, MPI_Fint *in,
                            MPI_Fint *out, MPI_Fint *flag, MPI_Fint *ierr) {
    (void)old, (void)kv, (void)extra;
    *out = *in;
    *flag = 1;
    *ierr = MPI_SUCCESS;
}
OXF_EXPORT void mpi_null_delete_fn_(MPI_Fint *comm, MPI_Fint *kv, MPI_Fint *val,
                                    MPI_Fint *extra, MPI_Fint *ierr) {
    (void)comm, (void)kv, (void)val, (void)extra;
    *ierr = MPI_SUCCESS;
}
OXF_EXPORT void mpi_type_null_copy_fn_(MPI_Fint *old, MPI_Fint *kv, MPI_Aint *extra,
                                       MPI_Aint *in, MPI_Aint *out, MPI_Fint *flag,
                                       MPI_Fint *ierr) {
    mpi_comm_null_copy_fn_(old, kv, extra, in, out, flag, ierr);
}
OXF_EXPORT void mpi_type_dup_fn_(MPI_Fint *old, MPI_Fint *kv, MPI_Aint *extra, MPI_Aint *in,
                                 MPI_Aint *out, MPI_Fint *flag, MPI_Fint *ierr) {
    mpi_comm_dup_fn_(old, kv, extra, in, out, flag, ierr);
}
OXF_EXPORT void mpi_type_null_delete_fn_(MPI_Fint *t, MPI_Fint *kv, MPI_Aint *val,
                                         MPI_Aint *extra, MPI_Fint *ierr) {
    mpi_comm_null_delete_fn_(t, kv, val, extra, ierr);
}

static int copy_any(intptr_t old, int kv, void *extra, void *in, void *out, int *flag) {
    struct oxf_keyval *k = extra;
    MPI_Fint fold = (MPI_Fint)old, fkv = kv, fflag = 0, ierr = MPI_SUCCESS;
    if (k->old_style) {
        MPI_Fint fextra = (MPI_Fint)k->extra, fin = (MPI_Fint)(intptr_t)in, fout = 0;
        ((void (*)(MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *,
                   MPI_Fint *))k->copy)(&fold, &fkv, &fextra, &fin, &fout, &fflag, &ierr);
        *(void **)out = (void *)(intptr_t)fout;
    } else {
        MPI_Aint fin = (MPI_Aint)(intptr_t)in, fout = 0;
        k->copy(&fold, &fkv, &k->extra, &fin, &fout, &fflag, &ierr);
        *(void **)out = (void *)(intptr_t)fout;
    }
    *flag = fflag != 0;
    return ierr;
}

static int delete_any(intptr_t h, int kv, void *val, void *extra) {
    struct oxf_keyval *k = extra;
    MPI_Fint fh = (MPI_Fint)h, fkv = kv, ierr = MPI_SUCCESS;
    if (k->old_style) {
        MPI_Fint fextra = (MPI_Fint)k->extra, fval = (MPI_Fint)(intptr_t)val;
        ((void (*)(MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *))k->del)(
            &fh, &fkv, &fval, &fextra, &ierr);
    } else {
        MPI_Aint fval = (MPI_Aint)(intptr_t)val;
        k->del(&fh, &fkv, &fval, &k->extra, &ierr);
    }
    return ierr;
}

static int comm_copy(MPI_Comm old, int kv, void *extra, void *in, void *out, int *flag) {
    return copy_any((intptr_t)old, kv, extra, in, out, flag);
}
static int comm_delete(MPI_Comm c, int kv, void *val, void *extra) {
    return delete_any((intptr_t)c, kv, val, extra);
}
static int type_copy(MPI_Datatype old, int kv, void *extra, void *in, void *out, int *flag) {
    return copy_any((intptr_t)old, kv, extra, in, out, flag);
}
static int type_delete(MPI_Datatype t, int kv, void *val, void *extra) {
    return delete_any((intptr_t)t, kv, val, extra);
}

/* Windows are never duplicated, so win_copy is not called; it keeps the keyval complete. */
static int win_copy(MPI_Win old, int kv, void *extra, void *in, void *out, int *flag) {
    return copy_any((intptr_t)old, kv, extra, in, out, flag);
}
static int win_delete(MPI_Win w, int kv, void *val, void *extra) {
    return delete_any((intptr_t)w, kv, val, extra);
}

static struct oxf_keyval *keyval_state(void *copy, void *del, MPI_Aint extra, int old_style) {
    /* Lives as long as the keyval; keyvals are few and the C layer keeps no destructor for
     * extra state, so it is not freed. */
    struct oxf_keyval *k = malloc(sizeof *k);
    if (k) {
        k->copy = (oxf_copy_fn)copy;
        k->del = (oxf_delete_fn)del;
        k->extra = extra;
        k->old_style = old_style;
    }
    return k;
}

OXF_EXPORT void pmpi_comm_create_keyval_(void *copy, void *del, MPI_Fint *keyval,
                                        MPI_Aint *extra, MPI_Fint *ierr) {
    struct oxf_keyval *k = keyval_state(copy, del, *extra, 0);
    *ierr = k ? MPI_Comm_create_keyval(comm_copy, comm_delete, keyval, k) : MPI_ERR_NO_MEM;
}

OXF_EXPORT void pmpi_keyval_create_(void *copy, void *del, MPI_Fint *keyval, MPI_Fint *extra,
                                   MPI_Fint *ierr) {
    struct oxf_keyval *k = keyval_state(copy, del, *extra, 1);
    *ierr = k ? MPI_Comm_create_keyval(comm_copy, comm_delete, keyval, k) : MPI_ERR_NO_MEM;
}

OXF_EXPORT void pmpi_type_create_keyval_(void *copy, void *del, MPI_Fint *keyval,
                                        MPI_Aint *extra, MPI_Fint *ierr) {
    struct oxf_keyval *k = keyval_state(copy, del, *extra, 0);
    *ierr = k ? MPI_Type_create_keyval(type_copy, type_delete, keyval, k) : MPI_ERR_NO_MEM;
}

OXF_EXPORT void pmpi_win_create_keyval_(void *copy, void *del, MPI_Fint *keyval,
                                       MPI_Aint *extra, MPI_Fint *ierr) {
    struct oxf_keyval *k = keyval_state(copy, del, *extra, 0);
    *ierr = k ? MPI_Win_create_keyval(win_copy, win_delete, keyval, k) : MPI_ERR_NO_MEM;
}

/* ---- Attribute values: Fortran stores integers, not pointers. The predefined attributes
 * (MPI_TAG_UB .. MPI_UNIVERSE_SIZE) are pointers to int in C and their value in Fortran. */

static int predefined_keyval(int kv) { return kv >= MPI_TAG_UB && kv <= MPI_UNIVERSE_SIZE; }

OXF_EXPORT void pmpi_comm_set_attr_(MPI_Fint *comm, MPI_Fint *kv, MPI_Aint *val, MPI_Fint *ierr) {
    *ierr = MPI_Comm_set_attr(OXF_F2C(MPI_Comm, *comm), *kv, (void *)(intptr_t)*val);
}

OXF_EXPORT void pmpi_attr_put_(MPI_Fint *comm, MPI_Fint *kv, MPI_Fint *val, MPI_Fint *ierr) {
    *ierr = MPI_Comm_set_attr(OXF_F2C(MPI_Comm, *comm), *kv, (void *)(intptr_t)*val);
}

OXF_EXPORT void pmpi_type_set_attr_(MPI_Fint *t, MPI_Fint *kv, MPI_Aint *val, MPI_Fint *ierr) {
    *ierr = MPI_Type_set_attr(OXF_F2C(MPI_Datatype, *t), *kv, (void *)(intptr_t)*val);
}

OXF_EXPORT void pmpi_win_set_attr_(MPI_Fint *win, MPI_Fint *kv, MPI_Aint *val, MPI_Fint *ierr) {
    *ierr = MPI_Win_set_attr(OXF_F2C(MPI_Win, *win), *kv, (void *)(intptr_t)*val);
}

static MPI_Aint attr_value(int kv, void *p) {
    return predefined_keyval(kv) ? (MPI_Aint) * (int *)p : (MPI_Aint)(intptr_t)p;
}

OXF_EXPORT void pmpi_comm_get_attr_(MPI_Fint *comm, MPI_Fint *kv, MPI_Aint *val, MPI_Fint *flag,
                                   MPI_Fint *ierr) {
    void *p = NULL;
    int f = 0;
    *ierr = MPI_Comm_get_attr(OXF_F2C(MPI_Comm, *comm), *kv, &p, &f);
    *flag = f;
    if (*ierr == MPI_SUCCESS && f)
        *val = attr_value(*kv, p);
}

OXF_EXPORT void pmpi_attr_get_(MPI_Fint *comm, MPI_Fint *kv, MPI_Fint *val, MPI_Fint *flag,
                              MPI_Fint *ierr) {
    void *p = NULL;
    int f = 0;
    *ierr = MPI_Comm_get_attr(OXF_F2C(MPI_Comm, *comm), *kv, &p, &f);
    *flag = f;
    if (*ierr == MPI_SUCCESS && f)
        *val = (MPI_Fint)attr_value(*kv, p);
}

OXF_EXPORT void pmpi_type_get_attr_(MPI_Fint *t, MPI_Fint *kv, MPI_Aint *val, MPI_Fint *flag,
                                   MPI_Fint *ierr) {
    void *p = NULL;
    int f = 0;
    *ierr = MPI_Type_get_attr(OXF_F2C(MPI_Datatype, *t), *kv, &p, &f);
    *flag = f;
    if (*ierr == MPI_SUCCESS && f)
        *val = (MPI_Aint)(intptr_t)p;
}

/* MPI_WIN_BASE is the address itself; the other predefined window attributes point to their
 * value (an MPI_Aint for MPI_WIN_SIZE, an int for the rest). A user key's value is the
 * stored pointer, which MPI_WIN_SET_ATTR made from the Fortran integer. */
OXF_EXPORT void pmpi_win_get_attr_(MPI_Fint *win, MPI_Fint *kv, MPI_Aint *val, MPI_Fint *flag,
                                   MPI_Fint *ierr) {
    void *p = NULL;
    int f = 0;
    *ierr = MPI_Win_get_attr(OXF_F2C(MPI_Win, *win), *kv, &p, &f);
    *flag = f;
    if (*ierr != MPI_SUCCESS || !f)
        return;
    int predefined = *kv >= MPI_WIN_BASE && *kv <= MPI_WIN_MODEL;
    if (!predefined || *kv == MPI_WIN_BASE)
        *val = (MPI_Aint)(intptr_t)p;
    else if (*kv == MPI_WIN_SIZE)
        *val = *(MPI_Aint *)p;
    else
        *val = *(int *)p;
}

/* MPI_F_SYNC_REG(buf): does nothing, but the compiler cannot know that, so a variable the
 * program reaches through MPI_BOTTOM or a pending request is reloaded from memory after it. */
OXF_EXPORT void pmpi_f_sync_reg_(void *buf) { (void)buf; }


/* The F77 names of the bindings above (see OXF_PROFILED in runtime.h). */
OXF_PROFILED(mpi_init_)
OXF_PROFILED(mpi_init_thread_)
OXF_PROFILED(mpi_pcontrol_)
OXF_PROFILED(mpi_alloc_mem_)
OXF_PROFILED(mpi_buffer_detach_)
OXF_PROFILED(mpi_buffer_detach_c_)
OXF_PROFILED(mpi_comm_detach_buffer_)
OXF_PROFILED(mpi_comm_detach_buffer_c_)
OXF_PROFILED(mpi_session_detach_buffer_)
OXF_PROFILED(mpi_session_detach_buffer_c_)
OXF_PROFILED(mpi_op_create_)
OXF_PROFILED(mpi_op_free_)
OXF_PROFILED(mpi_comm_create_errhandler_)
OXF_PROFILED(mpi_comm_create_keyval_)
OXF_PROFILED(mpi_keyval_create_)
OXF_PROFILED(mpi_type_create_keyval_)
OXF_PROFILED(mpi_comm_set_attr_)
OXF_PROFILED(mpi_attr_put_)
OXF_PROFILED(mpi_type_set_attr_)
OXF_PROFILED(mpi_comm_get_attr_)
OXF_PROFILED(mpi_attr_get_)
OXF_PROFILED(mpi_type_get_attr_)
OXF_PROFILED(mpi_f_sync_reg_)
OXF_PROFILED(mpi_win_get_attr_)
OXF_PROFILED(mpi_win_create_errhandler_)
OXF_PROFILED(mpi_session_create_errhandler_)
OXF_PROFILED(mpi_win_create_keyval_)
OXF_PROFILED(mpi_win_set_attr_)
