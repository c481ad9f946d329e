C     Point-to-point in fixed-form Fortran 77 through mpif.h: blocking ring, statuses,
C     nonblocking with MPI_WAIT and MPI_WAITALL, MPI_STATUS_IGNORE, MPI_SENDRECV, probe,
C     MPI_PROC_NULL, strings with hidden lengths, MPI_WTIME and error returns.
C     Like classic codes it passes INTEGER and DOUBLE PRECISION arrays and scalars to the
C     same routines, so gfortran builds it with -fallow-argument-mismatch.
      program p2p77
      implicit none
      include 'mpif.h'
      integer ierr, rank, size, next, prev, i, n, cls, slen
      integer status(MPI_STATUS_SIZE), stats(MPI_STATUS_SIZE, 4)
      integer reqs(4), ibuf(100), jbuf(100), flag, first
      double precision dbuf(50), t0, t1
      logical done
      character*(MPI_MAX_PROCESSOR_NAME) pname
      character*(MPI_MAX_ERROR_STRING) estr
      call MPI_INIT(ierr)
      call check(ierr .eq. MPI_SUCCESS, 'init')
      call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
      call MPI_COMM_SIZE(MPI_COMM_WORLD, size, ierr)
      next = mod(rank + 1, size)
      prev = mod(rank + size - 1, size)
      t0 = MPI_WTIME()
C     Blocking ring: even ranks send first.
      do i = 1, 100
         ibuf(i) = rank * 1000 + i
      end do
      if (mod(rank, 2) .eq. 0) then
         call MPI_SEND(ibuf, 100, MPI_INTEGER, next, 7,
     &                 MPI_COMM_WORLD, ierr)
         call MPI_RECV(jbuf, 100, MPI_INTEGER, prev, 7,
     &                 MPI_COMM_WORLD, status, ierr)
      else
         call MPI_RECV(jbuf, 100, MPI_INTEGER, prev, 7,
     &                 MPI_COMM_WORLD, status, ierr)
         call MPI_SEND(ibuf, 100, MPI_INTEGER, next, 7,
     &                 MPI_COMM_WORLD, ierr)
      end if
      call check(ierr .eq. MPI_SUCCESS, 'ring')
      call check(status(MPI_SOURCE) .eq. prev, 'source')
      call check(status(MPI_TAG) .eq. 7, 'tag')
      call MPI_GET_COUNT(status, MPI_INTEGER, n, ierr)
      call check(n .eq. 100, 'count')
      do i = 1, 100
         call check(jbuf(i) .eq. prev * 1000 + i, 'ring data')
      end do
C     Nonblocking: two receives and two sends, waitall with statuses.
      do i = 1, 50
         dbuf(i) = rank + i * 0.5d0
      end do
      call MPI_IRECV(jbuf, 100, MPI_INTEGER, MPI_ANY_SOURCE, 11,
     &               MPI_COMM_WORLD, reqs(1), ierr)
      call MPI_IRECV(dbuf, 50, MPI_DOUBLE_PRECISION, prev, 12,
     &               MPI_COMM_WORLD, reqs(2), ierr)
      call MPI_ISEND(ibuf, 100, MPI_INTEGER, next, 11,
     &               MPI_COMM_WORLD, reqs(3), ierr)
      call check(reqs(3) .ne. MPI_REQUEST_NULL, 'isend request')
      first = reqs(3)
      call MPI_WAIT(reqs(3), MPI_STATUS_IGNORE, ierr)
      call check(reqs(3) .eq. MPI_REQUEST_NULL, 'wait frees')
      call MPI_ISEND(dbuf, 0, MPI_DOUBLE_PRECISION, next, 12,
     &               MPI_COMM_WORLD, reqs(4), ierr)
      call MPI_WAITALL(4, reqs, stats, ierr)
      call check(ierr .eq. MPI_SUCCESS, 'waitall')
      do i = 1, 4
         call check(reqs(i) .eq. MPI_REQUEST_NULL, 'waitall frees')
      end do
      call check(stats(MPI_SOURCE, 1) .eq. prev, 'any source')
      call MPI_GET_COUNT(stats(1, 2), MPI_DOUBLE_PRECISION, n, ierr)
      call check(n .eq. 0, 'empty message')
      do i = 1, 100
         call check(jbuf(i) .eq. prev * 1000 + i, 'nonblocking data')
      end do
C     Many requests in a row reuse request numbers (MPI_STATUSES_IGNORE).
      do i = 1, 1000
         call MPI_IRECV(n, 1, MPI_INTEGER, prev, 13, MPI_COMM_WORLD,
     &                  reqs(1), ierr)
         call MPI_ISEND(i, 1, MPI_INTEGER, next, 13, MPI_COMM_WORLD,
     &                  reqs(2), ierr)
         call MPI_WAITALL(2, reqs, MPI_STATUSES_IGNORE, ierr)
         call check(n .eq. i, 'loop data')
      end do
C     Completed requests gave their numbers back: the next one is among the first few.
      call MPI_IRECV(n, 1, MPI_INTEGER, prev, 13, MPI_COMM_WORLD,
     &               reqs(1), ierr)
      call check(reqs(1) .ne. MPI_REQUEST_NULL .and.
     &           reqs(1) .lt. first + 64, 'request numbers reused')
      call MPI_SEND(i, 1, MPI_INTEGER, next, 13, MPI_COMM_WORLD, ierr)
      call MPI_WAIT(reqs(1), status, ierr)
C     Test until done, with a LOGICAL flag.
      call MPI_IRECV(n, 1, MPI_INTEGER, prev, 14, MPI_COMM_WORLD,
     &               reqs(1), ierr)
      call MPI_SEND(rank, 1, MPI_INTEGER, next, 14, MPI_COMM_WORLD,
     &              ierr)
      done = .false.
      do while (.not. done)
         call MPI_TEST(reqs(1), done, status, ierr)
      end do
      call check(n .eq. prev, 'test data')
C     Sendrecv, probe, MPI_PROC_NULL.
      call MPI_SENDRECV(rank, 1, MPI_INTEGER, next, 15, n, 1,
     &     MPI_INTEGER, prev, 15, MPI_COMM_WORLD, status, ierr)
      call check(n .eq. prev, 'sendrecv')
      call MPI_SEND(ibuf, 3, MPI_INTEGER, next, 16, MPI_COMM_WORLD,
     &              ierr)
      call MPI_PROBE(prev, 16, MPI_COMM_WORLD, status, ierr)
      call MPI_GET_COUNT(status, MPI_INTEGER, n, ierr)
      call check(n .eq. 3, 'probe count')
      call MPI_RECV(jbuf, 3, MPI_INTEGER, prev, 16, MPI_COMM_WORLD,
     &              MPI_STATUS_IGNORE, ierr)
      call MPI_RECV(jbuf, 3, MPI_INTEGER, MPI_PROC_NULL, 16,
     &              MPI_COMM_WORLD, status, ierr)
      call check(status(MPI_SOURCE) .eq. MPI_PROC_NULL, 'proc null')
C     Strings with hidden lengths.
      call MPI_GET_PROCESSOR_NAME(pname, slen, ierr)
      call check(slen .gt. 0 .and. slen .le. MPI_MAX_PROCESSOR_NAME,
     &           'processor name length')
      call check(pname(slen+1:slen+1) .eq. ' ', 'blank padded')
C     Error returns: a bad rank with MPI_ERRORS_RETURN.
      call MPI_COMM_SET_ERRHANDLER(MPI_COMM_WORLD, MPI_ERRORS_RETURN,
     &                             ierr)
      call MPI_SEND(ibuf, 1, MPI_INTEGER, size + 5, 0, MPI_COMM_WORLD,
     &              ierr)
      call check(ierr .ne. MPI_SUCCESS, 'bad rank fails')
      call MPI_ERROR_CLASS(ierr, cls, ierr)
      call check(cls .eq. MPI_ERR_RANK, 'error class')
      call MPI_ERROR_STRING(MPI_ERR_RANK, estr, slen, ierr)
      call check(slen .gt. 0, 'error string')
      call MPI_SEND(ibuf, 1, MPI_INTEGER, 0, 0, 12345, ierr)
      call check(ierr .ne. MPI_SUCCESS, 'bad comm fails')
      call MPI_WAIT(flag, MPI_STATUS_IGNORE, ierr)
      t1 = MPI_WTIME()
      call check(t1 .ge. t0, 'wtime')
      call check(MPI_WTICK() .gt. 0d0, 'wtick')
      call MPI_BARRIER(MPI_COMM_WORLD, ierr)
      call MPI_FINALIZE(ierr)
      call check(ierr .eq. MPI_SUCCESS, 'finalize')
      end

      subroutine check(ok, what)
      logical ok
      character*(*) what
      if (.not. ok) then
         print *, 'FAILED: ', what
         stop 1
      end if
      end
