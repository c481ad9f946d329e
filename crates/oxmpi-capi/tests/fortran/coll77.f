C     Collectives in fixed-form Fortran 77 through mpif.h: bcast, reduce and allreduce with
C     MPI_SUM/MAX/MIN on INTEGER, REAL and DOUBLE PRECISION, MPI_SUM/PROD on COMPLEX and
C     DOUBLE COMPLEX (MPI_MAX there is an error), MPI_IN_PLACE, gather,
C     scatter, allgather, alltoall, gatherv, scan, MAXLOC on MPI_2INTEGER, a Fortran user
C     operation, and MPI_BOTTOM with absolute addresses. Built with -fallow-argument-mismatch
C     (buffers of several types go to the same routines).
      program coll77
      implicit none
      include 'mpif.h'
      integer ierr, rank, size, i, j, root
      integer ia(4), ib(4), ig(64), counts(16), displs(16)
      real ra(4), rb(4)
      double precision da(4), db(4)
      complex ca(2), cb(2)
      double complex za(2), zb(2)
      integer pair(2), pout(2), myop
      integer(kind=MPI_ADDRESS_KIND) addr
      external addmod, csum
      call MPI_INIT(ierr)
      call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
      call MPI_COMM_SIZE(MPI_COMM_WORLD, size, ierr)
C     Bcast from each root.
      do root = 0, size - 1
         do i = 1, 4
            ia(i) = -1
            if (rank .eq. root) ia(i) = root * 10 + i
         end do
         call MPI_BCAST(ia, 4, MPI_INTEGER, root, MPI_COMM_WORLD, ierr)
         do i = 1, 4
            call check(ia(i) .eq. root * 10 + i, 'bcast')
         end do
      end do
C     Reductions: INTEGER, REAL, DOUBLE PRECISION; SUM, MAX, MIN.
      do i = 1, 4
         ia(i) = rank + i
         ra(i) = real(rank) * 0.5 + i
         da(i) = dble(rank) * 0.25d0 + i
      end do
      call MPI_ALLREDUCE(ia, ib, 4, MPI_INTEGER, MPI_SUM,
     &                   MPI_COMM_WORLD, ierr)
      do i = 1, 4
         call check(ib(i) .eq. size * i + size * (size - 1) / 2,
     &              'sum integer')
      end do
      call MPI_ALLREDUCE(ra, rb, 4, MPI_REAL, MPI_MAX,
     &                   MPI_COMM_WORLD, ierr)
      do i = 1, 4
         call check(rb(i) .eq. real(size - 1) * 0.5 + i, 'max real')
      end do
      call MPI_ALLREDUCE(da, db, 4, MPI_DOUBLE_PRECISION, MPI_MIN,
     &                   MPI_COMM_WORLD, ierr)
      do i = 1, 4
         call check(db(i) .eq. dble(i), 'min double')
      end do
      call MPI_REDUCE(da, db, 4, MPI_DOUBLE_PRECISION, MPI_SUM, 0,
     &                MPI_COMM_WORLD, ierr)
      if (rank .eq. 0) then
         do i = 1, 4
            call check(abs(db(i) - (size * i + 0.25d0 * size *
     &           (size - 1) / 2)) .lt. 1d-12, 'reduce double')
         end do
      end if
      call MPI_REDUCE(ia, ib, 4, MPI_INTEGER, MPI_MIN, size - 1,
     &                MPI_COMM_WORLD, ierr)
      if (rank .eq. size - 1) call check(ib(1) .eq. 1, 'reduce min')
C     COMPLEX sum through a Fortran operation on MPI_COMPLEX, then MPI_SUM and MPI_PROD
C     on COMPLEX and DOUBLE COMPLEX; MPI_MAX is not defined on complex numbers.
      call MPI_OP_CREATE(csum, .true., myop, ierr)
      ca(1) = cmplx(real(rank), 1.0)
      ca(2) = cmplx(1.0, real(-rank))
      call MPI_ALLREDUCE(ca, cb, 2, MPI_COMPLEX, myop,
     &                   MPI_COMM_WORLD, ierr)
      call MPI_OP_FREE(myop, ierr)
      call check(cb(1) .eq. cmplx(real(size * (size - 1) / 2),
     &           real(size)), 'complex sum 1')
      call check(cb(2) .eq. cmplx(real(size),
     &           real(-size * (size - 1) / 2)), 'complex sum 2')
      ca(1) = cmplx(real(rank), 1.0)
      ca(2) = cmplx(1.0, real(-rank))
      call MPI_ALLREDUCE(ca, cb, 2, MPI_COMPLEX, MPI_SUM,
     &                   MPI_COMM_WORLD, ierr)
      call check(cb(1) .eq. cmplx(real(size * (size - 1) / 2),
     &           real(size)), 'MPI_SUM on COMPLEX')
      call check(cb(2) .eq. cmplx(real(size),
     &           real(-size * (size - 1) / 2)), 'MPI_SUM on COMPLEX 2')
      za(1) = (0d0, 1d0)
      za(2) = dcmplx(dble(rank + 1), 0d0)
      call MPI_REDUCE(za, zb, 2, MPI_DOUBLE_COMPLEX, MPI_PROD, 0,
     &                MPI_COMM_WORLD, ierr)
      if (rank .eq. 0) then
         call check(zb(1) .eq. (0d0, 1d0) ** size, 'MPI_PROD i**n')
         j = 1
         do i = 2, size
            j = j * i
         end do
         call check(zb(2) .eq. dcmplx(dble(j), 0d0), 'MPI_PROD n!')
      end if
      call MPI_COMM_SET_ERRHANDLER(MPI_COMM_WORLD, MPI_ERRORS_RETURN,
     &                             ierr)
      call MPI_ALLREDUCE(ca, cb, 2, MPI_COMPLEX, MPI_MAX,
     &                   MPI_COMM_WORLD, ierr)
      call MPI_ERROR_CLASS(ierr, i, ierr)
      call check(i .eq. MPI_ERR_OP, 'MPI_MAX on COMPLEX is an error')
      call MPI_COMM_SET_ERRHANDLER(MPI_COMM_WORLD,
     &                             MPI_ERRORS_ARE_FATAL, ierr)
C     MPI_IN_PLACE.
      do i = 1, 4
         ib(i) = rank * i
      end do
      call MPI_ALLREDUCE(MPI_IN_PLACE, ib, 4, MPI_INTEGER, MPI_MAX,
     &                   MPI_COMM_WORLD, ierr)
      do i = 1, 4
         call check(ib(i) .eq. (size - 1) * i, 'in place')
      end do
C     Gather, scatter, allgather, alltoall, gatherv.
      ia(1) = rank + 100
      call MPI_GATHER(ia, 1, MPI_INTEGER, ig, 1, MPI_INTEGER, 0,
     &                MPI_COMM_WORLD, ierr)
      if (rank .eq. 0) then
         do i = 1, size
            call check(ig(i) .eq. i + 99, 'gather')
         end do
      end if
      do i = 1, size
         ig(i) = i * 7
      end do
      call MPI_SCATTER(ig, 1, MPI_INTEGER, ib, 1, MPI_INTEGER, 0,
     &                 MPI_COMM_WORLD, ierr)
      call check(ib(1) .eq. (rank + 1) * 7, 'scatter')
      call MPI_ALLGATHER(rank, 1, MPI_INTEGER, ig, 1, MPI_INTEGER,
     &                   MPI_COMM_WORLD, ierr)
      do i = 1, size
         call check(ig(i) .eq. i - 1, 'allgather')
      end do
      do i = 1, size
         ig(i) = rank * 100 + i - 1
      end do
      call MPI_ALLTOALL(ig, 1, MPI_INTEGER, ig(size + 1), 1,
     &                  MPI_INTEGER, MPI_COMM_WORLD, ierr)
      do i = 1, size
         call check(ig(size + i) .eq. (i - 1) * 100 + rank,
     &              'alltoall')
      end do
      do i = 1, size
         counts(i) = i
         displs(i) = (i - 1) * i / 2
      end do
      do i = 1, rank + 1
         ia(i) = rank
      end do
      call MPI_GATHERV(ia, rank + 1, MPI_INTEGER, ig, counts, displs,
     &                 MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
      if (rank .eq. 0) then
         do i = 1, size
            do j = 1, i
               call check(ig(displs(i) + j) .eq. i - 1, 'gatherv')
            end do
         end do
      end if
      call MPI_SCAN(rank, i, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD,
     &              ierr)
      call check(i .eq. rank * (rank + 1) / 2, 'scan')
C     MAXLOC on MPI_2INTEGER: (value, index).
      pair(1) = mod(rank * 3, 5)
      pair(2) = rank
      call MPI_ALLREDUCE(pair, pout, 1, MPI_2INTEGER, MPI_MAXLOC,
     &                   MPI_COMM_WORLD, ierr)
      j = -1
      do i = 0, size - 1
         if (j .lt. 0) j = i
         if (mod(i * 3, 5) .gt. mod(j * 3, 5)) j = i
      end do
      call check(pout(1) .eq. mod(j * 3, 5) .and. pout(2) .eq. j,
     &           'maxloc')
C     A Fortran user operation: sum modulo 7.
      call MPI_OP_CREATE(addmod, .true., myop, ierr)
      call check(ierr .eq. MPI_SUCCESS, 'op create')
      ia(1) = rank + 3
      ia(2) = 2 * rank
      call MPI_ALLREDUCE(ia, ib, 2, MPI_INTEGER, myop,
     &                   MPI_COMM_WORLD, ierr)
      call check(ib(1) .eq. mod(3 * size + size * (size - 1) / 2, 7),
     &           'user op 1')
      call check(ib(2) .eq. mod(size * (size - 1), 7), 'user op 2')
      call MPI_OP_FREE(myop, ierr)
      call check(myop .eq. MPI_OP_NULL, 'op free')
C     MPI_BOTTOM with an absolute address.
      call MPI_GET_ADDRESS(ia, addr, ierr)
      ia(1) = rank
      if (rank .eq. 0) ia(1) = 4242
      call MPI_TYPE_CREATE_HINDEXED(1, 1, addr, MPI_INTEGER, j, ierr)
      call MPI_TYPE_COMMIT(j, ierr)
      call MPI_BCAST(MPI_BOTTOM, 1, j, 0, MPI_COMM_WORLD, ierr)
      call check(ierr .eq. MPI_SUCCESS, 'bcast from MPI_BOTTOM')
C     The compiler does not see MPI_BCAST write ia: MPI_F_SYNC_REG makes it reload ia.
      call MPI_F_SYNC_REG(ia)
      call check(ia(1) .eq. 4242, 'MPI_BOTTOM data')
      call MPI_TYPE_FREE(j, ierr)
      call MPI_BARRIER(MPI_COMM_WORLD, ierr)
      call MPI_FINALIZE(ierr)
      end

      subroutine addmod(invec, inoutvec, len, datatype)
      implicit none
      include 'mpif.h'
      integer len, datatype, invec(len), inoutvec(len), i
      if (datatype .ne. MPI_INTEGER) stop 3
      do i = 1, len
         inoutvec(i) = mod(invec(i) + inoutvec(i), 7)
      end do
      end

      subroutine csum(invec, inoutvec, len, datatype)
      implicit none
      include 'mpif.h'
      integer len, datatype, i
      complex invec(len), inoutvec(len)
      if (datatype .ne. MPI_COMPLEX) stop 3
      do i = 1, len
         inoutvec(i) = invec(i) + inoutvec(i)
      end do
      end

      subroutine check(ok, what)
      logical ok
      character*(*) what
      if (.not. ok) then
         print *, 'FAILED: ', what
         stop 1
      end if
      end
