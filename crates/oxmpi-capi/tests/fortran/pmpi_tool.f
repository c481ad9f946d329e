! A profiling tool in F77: counts MPI_SEND calls and forwards them to
! PMPI_SEND. Linked with pmpi08.f90, it must see that program's
! mpi_f08 MPI_Send calls too.
      subroutine MPI_SEND(buf, count, datatype, dest, tag, comm, ierr)
      integer buf(*), count, datatype, dest, tag, comm, ierr
      integer nsend
      common /tool/ nsend
      nsend = nsend + 1
      call PMPI_SEND(buf, count, datatype, dest, tag, comm, ierr)
      end
