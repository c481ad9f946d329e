/* A PMPI interposer for the oxmpi-bench tests: flips one bit of every non-empty byte message
 * received by MPI_Recv and MPI_Bcast, and byte 8 of the first single element of a type of 16
 * bytes or more received by MPI_Recv (a gap byte of the ddt-vector type), so that the tests
 * can check that oxbench notices wrong data and fails. Uses only the standard MPI profiling
 * interface. */
#include <mpi.h>

static void flip(void *buf, int count, MPI_Datatype type)
{
    if (count > 0 && type == MPI_BYTE)
        ((unsigned char *)buf)[count - 1] ^= 0x01;
}

int MPI_Recv(void *buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
             MPI_Status *status)
{
    int rc = PMPI_Recv(buf, count, type, source, tag, comm, status);
    static int gap_flipped;
    int size = 0;
    flip(buf, count, type);
    /* Once: receives never write gap bytes, so a second flip would undo the first. */
    if (!gap_flipped && count == 1 && type != MPI_BYTE &&
        PMPI_Type_size(type, &size) == MPI_SUCCESS && size >= 16) {
        ((unsigned char *)buf)[8] ^= 0x01;
        gap_flipped = 1;
    }
    return rc;
}

int MPI_Bcast(void *buf, int count, MPI_Datatype type, int root, MPI_Comm comm)
{
    int rank = 0;
    int rc = PMPI_Bcast(buf, count, type, root, comm);
    PMPI_Comm_rank(comm, &rank);
    if (rank != root)
        flip(buf, count, type);
    return rc;
}
