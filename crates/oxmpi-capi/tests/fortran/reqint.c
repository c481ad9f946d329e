/* The C half of reqint.f90, linked into the same program: routines Fortran calls (F77
 * convention: trailing underscore, arguments by reference) that take a Fortran request
 * INTEGER, convert it with MPI_Request_f2c and complete it in C, or make a request in C and
 * hand Fortran its MPI_Request_c2f integer. Each returns 0 in *ok on success, else the line
 * that failed. */
#include <mpi.h>

#define CHECK(c)                                                                               \
    do {                                                                                       \
        if (!(c)) {                                                                            \
            *ok = __LINE__;                                                                    \
            return;                                                                            \
        }                                                                                      \
    } while (0)

/* Waits on Fortran's request `req`, which receives from rank `from`; `req` then holds what
 * Fortran's own MPI_WAIT would leave there (MPI_REQUEST_NULL's integer). */
void c_wait_(MPI_Fint *req, MPI_Fint *from, MPI_Fint *ok) {
    *ok = 0;
    MPI_Request r = MPI_Request_f2c(*req);
    CHECK(r != MPI_REQUEST_NULL);
    CHECK(MPI_Request_c2f(r) == *req);
    MPI_Status st;
    CHECK(MPI_Wait(&r, &st) == MPI_SUCCESS);
    CHECK(r == MPI_REQUEST_NULL && st.MPI_SOURCE == *from);
    *req = MPI_Request_c2f(r);
}

/* Starts Fortran's persistent request `req` and waits for it: the integer stays. */
void c_start_wait_(MPI_Fint *req, MPI_Fint *ok) {
    *ok = 0;
    MPI_Request r = MPI_Request_f2c(*req);
    CHECK(MPI_Start(&r) == MPI_SUCCESS);
    CHECK(MPI_Wait(&r, MPI_STATUS_IGNORE) == MPI_SUCCESS);
    CHECK(r != MPI_REQUEST_NULL && MPI_Request_c2f(r) == *req);
}

/* Posts a receive of `n` INTEGERs from `from` with `tag` into `buf`; Fortran completes it. */
void c_irecv_(MPI_Fint *buf, MPI_Fint *n, MPI_Fint *from, MPI_Fint *tag, MPI_Fint *req,
              MPI_Fint *ok) {
    *ok = 0;
    MPI_Request r;
    CHECK(MPI_Irecv(buf, *n, MPI_INTEGER, *from, *tag, MPI_COMM_WORLD, &r) == MPI_SUCCESS);
    *req = MPI_Request_c2f(r);
    CHECK(MPI_Request_f2c(*req) == r);
}
