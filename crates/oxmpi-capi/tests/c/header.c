/* Compiled in every C and C++ mode with -Wall -Wextra -Werror -pedantic: the header must
 * raise no warning, and its handles must be constant expressions (file-scope constants, as
 * rsmpi's shim declares them). */
#include <mpi.h>

static const MPI_Comm world = MPI_COMM_WORLD;
static const MPI_Datatype ints[] = {MPI_INT, MPI_DOUBLE, MPI_INT64_T, MPI_BYTE};
static const MPI_Op ops[] = {MPI_SUM, MPI_MAXLOC, MPI_NO_OP};
static MPI_Comm_copy_attr_function *const dup_fn = MPI_COMM_DUP_FN;
static MPI_Comm_delete_attr_function *const del_fn = MPI_COMM_NULL_DELETE_FN;
static const int abi[] = {MPI_ABI_VERSION, MPI_ABI_SUBVERSION, MPI_VERSION};

int main(void) {
    MPI_Status st;
    MPI_Fint f = MPI_Comm_c2f(world);
    st.MPI_SOURCE = MPI_ANY_SOURCE;
    st.MPI_TAG = MPI_ANY_TAG;
    st.MPI_ERROR = MPI_SUCCESS;
    (void)f;
    return (int)(sizeof(MPI_Status) != 8 * sizeof(int)) + (ints[0] == MPI_DATATYPE_NULL) +
           (ops[0] == MPI_OP_NULL) + (dup_fn == 0) + (del_fn != 0) + (abi[0] != 1) +
           (st.MPI_SOURCE != -1);
}
