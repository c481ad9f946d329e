! The Fortran profiling interface: this program defines MPI_SEND,
! MPI_ISEND, MPI_WAIT and MPI_WTIME itself (symbols mpi_send_ ...),
! counts the calls and forwards them to PMPI_SEND ... (pmpi_send_ ...):
! the library's own mpi_x_ must give way to them.
      program pmpi77
      implicit none
      include 'mpif.h'
      integer nsend, nisend, nwait, nwtime
      common /counts/ nsend, nisend, nwait, nwtime
      integer ierr, rank, size, next, prev, i, x, req
      integer status(MPI_STATUS_SIZE)
      double precision t
      nsend = 0
      nisend = 0
      nwait = 0
      nwtime = 0
      call MPI_INIT(ierr)
      call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
      call MPI_COMM_SIZE(MPI_COMM_WORLD, size, ierr)
      next = mod(rank + 1, size)
      prev = mod(rank + size - 1, size)
      t = MPI_WTIME()
      do i = 1, 5
         call MPI_SEND(rank, 1, MPI_INTEGER, next, i, MPI_COMM_WORLD,
     &                 ierr)
         call MPI_RECV(x, 1, MPI_INTEGER, prev, i, MPI_COMM_WORLD,
     &                 status, ierr)
         if (x .ne. prev .or. ierr .ne. MPI_SUCCESS) stop 2
      end do
      call MPI_ISEND(rank, 1, MPI_INTEGER, next, 9, MPI_COMM_WORLD,
     &               req, ierr)
      call MPI_RECV(x, 1, MPI_INTEGER, prev, 9, MPI_COMM_WORLD,
     &              status, ierr)
      call MPI_WAIT(req, status, ierr)
      if (req .ne. MPI_REQUEST_NULL) stop 3
      if (MPI_WTIME() .lt. t) stop 4
      if (nsend .ne. 5 .or. nisend .ne. 1 .or. nwait .ne. 1
     &    .or. nwtime .ne. 2) then
         print *, 'FAILED: intercepted', nsend, nisend, nwait, nwtime
         stop 1
      end if
      call MPI_FINALIZE(ierr)
      end

      subroutine MPI_SEND(buf, count, datatype, dest, tag, comm, ierr)
      integer buf(*), count, datatype, dest, tag, comm, ierr
      integer nsend, nisend, nwait, nwtime
      common /counts/ nsend, nisend, nwait, nwtime
      nsend = nsend + 1
      call PMPI_SEND(buf, count, datatype, dest, tag, comm, ierr)
      end

      subroutine MPI_ISEND(buf, count, datatype, dest, tag, comm, req,
     &                     ierr)
      integer buf(*), count, datatype, dest, tag, comm, req, ierr
      integer nsend, nisend, nwait, nwtime
      common /counts/ nsend, nisend, nwait, nwtime
      nisend = nisend + 1
      call PMPI_ISEND(buf, count, datatype, dest, tag, comm, req, ierr)
      end

      subroutine MPI_WAIT(req, status, ierr)
      integer req, status(*), ierr
      integer nsend, nisend, nwait, nwtime
      common /counts/ nsend, nisend, nwait, nwtime
      nwait = nwait + 1
      call PMPI_WAIT(req, status, ierr)
      end

      double precision function MPI_WTIME()
      integer nsend, nisend, nwait, nwtime
      common /counts/ nsend, nisend, nwait, nwtime
      double precision PMPI_WTIME
      external PMPI_WTIME
      nwtime = nwtime + 1
      MPI_WTIME = PMPI_WTIME()
      end
