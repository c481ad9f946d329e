/*
 * What the generated Fortran wrappers (mpifort_gen.c, written by gen.py at install time)
 * share with the handwritten ones (runtime.c): handle and sentinel conversions.
 *
 * Fortran handles are MPI_Fint. For communicators, groups, datatypes, operations, error
 * handlers, info objects, messages, windows, files and sessions the integer is the handle's
 * value (what MPI_X_c2f returns: the standard ABI's handles are small integers), so the
 * conversion is a cast. Requests are 64-bit ids in this library: their integers are those of
 * MPI_Request_c2f, from the C ABI's request table (see runtime.c).
 */
#ifndef OXMPI_FORTRAN_RUNTIME_H
#define OXMPI_FORTRAN_RUNTIME_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#define OXF_EXPORT __attribute__((visibility("default")))

/* The Fortran profiling interface: each binding's body is pmpi_x_ and mpi_x_ is a weak alias
 * of it, so a tool (or program) that defines mpi_x_ gets the calls and forwards them to
 * pmpi_x_. The bodies call the C MPI_X, so a C profiling library sees Fortran calls too. */
#define OXF_PROFILED(name)                                                                    \
    extern __typeof__(p##name) name __attribute__((weak, alias("p" #name)))                  \
        __attribute__((visibility("default")));

/* Handles other than requests: the value itself (identical to MPI_X_c2f / MPI_X_f2c). */
#define OXF_F2C(T, f) ((T)(intptr_t)(f))
#define OXF_C2F(h) ((MPI_Fint)(intptr_t)(h))

/* The Fortran sentinels: common blocks of mpif.h (gfortran appends one underscore). Their
 * addresses, not their values, mean MPI_BOTTOM and the others. */
extern MPI_Fint mpi_fortran_bottom_;
extern MPI_Fint mpi_fortran_in_place_;
extern MPI_Fint mpi_fortran_buffer_automatic_;
extern MPI_Fint mpi_fortran_status_ignore_[MPI_F_STATUS_SIZE];
extern MPI_Fint mpi_fortran_statuses_ignore_[MPI_F_STATUS_SIZE];
extern MPI_Fint mpi_fortran_errcodes_ignore_[1];
extern MPI_Fint mpi_fortran_unweighted_[1];
extern MPI_Fint mpi_fortran_weights_empty_[1];

/* A choice buffer: MPI_BOTTOM, MPI_IN_PLACE and MPI_BUFFER_AUTOMATIC by address. */
static inline void *oxf_buf(const void *p) {
    if (p == (const void *)&mpi_fortran_bottom_)
        return MPI_BOTTOM;
    if (p == (const void *)&mpi_fortran_in_place_)
        return MPI_IN_PLACE;
    if (p == (const void *)&mpi_fortran_buffer_automatic_)
        return MPI_BUFFER_AUTOMATIC;
    return (void *)p;
}

static inline MPI_Status *oxf_status(MPI_Fint *s) {
    /* The C and Fortran statuses are the same 8 integers in the standard ABI. */
    return s == mpi_fortran_status_ignore_ ? MPI_STATUS_IGNORE : (MPI_Status *)s;
}

static inline MPI_Status *oxf_statuses(MPI_Fint *s) {
    return s == mpi_fortran_statuses_ignore_ ? MPI_STATUSES_IGNORE : (MPI_Status *)s;
}

static inline int *oxf_weights(MPI_Fint *w) {
    if (w == mpi_fortran_unweighted_)
        return MPI_UNWEIGHTED;
    if (w == mpi_fortran_weights_empty_)
        return MPI_WEIGHTS_EMPTY;
    return w;
}

static inline int *oxf_errcodes(MPI_Fint *e) {
    return e == mpi_fortran_errcodes_ignore_ ? NULL : e;
}

/* Requests: MPI_Request_f2c / MPI_Request_c2f. */
MPI_Request oxf_req_get(MPI_Fint f);
/* A request the C call created (the Fortran integer was output only). */
MPI_Fint oxf_req_new(MPI_Request c);
/* After a call that may have completed or replaced request *f (which stood for `old`). */
void oxf_req_update(MPI_Fint *f, MPI_Request old, MPI_Request now);

/* How many datatypes an alltoallw's send (or receive) types array holds: one per process of
 * the (remote) group, or per out (in) neighbour for the neighbourhood forms; 0 for
 * MPI_COMM_NULL (the call itself reports it). */
int oxf_types_len(MPI_Comm comm, int neighbor, int send);

/* Strings: a Fortran CHARACTER(len) in, trailing blanks dropped (malloc'd, NULL if out of
 * memory); out, blank-padded to len. */
char *oxf_str_in(const char *s, size_t len);
void oxf_str_out(char *dst, size_t len, const char *src);
/* Room for any string the C layer writes (MPI_MAX_LIBRARY_VERSION_STRING is the largest). */
#define OXF_STR_MAX (MPI_MAX_LIBRARY_VERSION_STRING + 1)

/* Temporary arrays of C handles for arrays of Fortran handles: on the stack for short ones. */
#define OXF_SMALL 16

#endif
