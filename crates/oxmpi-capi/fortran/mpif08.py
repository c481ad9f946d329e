def write(funcs, out):
    open(f"{out}/mpi_f08.f90", "w").write("module mpi_f08\nend module mpi_f08\n")
    open(f"{out}/mpif08_gen.c", "w").write('#include "runtime.h"\n')
    return []
