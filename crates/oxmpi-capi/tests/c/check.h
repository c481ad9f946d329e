/* Shared by the C test programs: fail the rank with a message naming the line. */
#ifndef OXMPI_TEST_CHECK_H
#define OXMPI_TEST_CHECK_H
#include <stdio.h>
#include <stdlib.h>
#include <mpi.h>

#define CHECK(cond, ...)                                                            \
    do {                                                                            \
        if (!(cond)) {                                                              \
            fprintf(stderr, "MISMATCH %s:%d: ", __FILE__, __LINE__);                \
            fprintf(stderr, __VA_ARGS__);                                           \
            fprintf(stderr, "\n");                                                  \
            exit(1);                                                                \
        }                                                                           \
    } while (0)

#define MUST(call)                                                                  \
    do {                                                                            \
        int rc_ = (call);                                                           \
        if (rc_ != MPI_SUCCESS) {                                                   \
            fprintf(stderr, "ERROR %s:%d: %s returned %d\n", __FILE__, __LINE__,    \
                    #call, rc_);                                                    \
            exit(1);                                                                \
        }                                                                           \
    } while (0)

#endif
