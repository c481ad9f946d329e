! Window error handlers, keyvals, attributes and names through
! mpif.h: the handler gets the window and the code, a keyval's
! delete function runs at MPI_WIN_DELETE_ATTR and at MPI_WIN_FREE
! with the value set, user attribute values come back as set (above
! 2**32 too), and the predefined attributes still give their values.
      program win77
      implicit none
      include 'mpif.h'
      integer ierr, rank, size, win, w0, eh, kv, kv2, kvdup, n
      integer buf(10)
      integer(kind=MPI_ADDRESS_KIND) val, got, extra, wsize
      logical flag
      character*(MPI_MAX_OBJECT_NAME) name
      integer(kind=MPI_ADDRESS_KIND) delval, delextra
      integer lastwin, lastcode, ndel, delwin, delkv
      common /wstate/ delval, delextra, lastwin, lastcode, ndel,
     &     delwin, delkv
      external winerr, windel

      call MPI_INIT(ierr)
      call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
      call MPI_COMM_SIZE(MPI_COMM_WORLD, size, ierr)
      lastwin = -1
      lastcode = -1
      ndel = 0
      wsize = 40
      call MPI_WIN_CREATE(buf, wsize, 4, MPI_INFO_NULL,
     &     MPI_COMM_WORLD, win, ierr)
      call check(ierr .eq. MPI_SUCCESS, 'win create')
      w0 = win

!     An error handler: MPI_WIN_CALL_ERRHANDLER and an error of the
!     window's own.
      call MPI_WIN_CREATE_ERRHANDLER(winerr, eh, ierr)
      call check(ierr .eq. MPI_SUCCESS, 'win create errhandler')
      call MPI_WIN_SET_ERRHANDLER(win, eh, ierr)
      call check(ierr .eq. MPI_SUCCESS, 'win set errhandler')
      call MPI_WIN_CALL_ERRHANDLER(win, MPI_ERR_OTHER, ierr)
      call check(lastwin .eq. win, 'handler gets the window')
      call check(lastcode .eq. MPI_ERR_OTHER, 'handler gets the code')
      lastwin = -1
      val = 0
      call MPI_WIN_SET_ATTR(win, MPI_KEYVAL_INVALID, val, ierr)
      call check(ierr .ne. MPI_SUCCESS, 'bad keyval is an error')
      call check(lastwin .eq. win .and. lastcode .eq. ierr,
     &     'handler sees the error of the window')

!     A keyval with a delete function and extra state.
      extra = 7
      call MPI_WIN_CREATE_KEYVAL(MPI_WIN_NULL_COPY_FN, windel, kv,
     &     extra, ierr)
      call check(ierr .eq. MPI_SUCCESS, 'win create keyval')
      call MPI_WIN_GET_ATTR(win, kv, got, flag, ierr)
      call check(ierr .eq. MPI_SUCCESS .and. .not. flag, 'unset')
      val = 2_8 ** 40 + rank
      call MPI_WIN_SET_ATTR(win, kv, val, ierr)
      call check(ierr .eq. MPI_SUCCESS, 'win set attr')
      call MPI_WIN_GET_ATTR(win, kv, got, flag, ierr)
      call check(flag .and. got .eq. val, 'user attribute value')
      call MPI_WIN_DELETE_ATTR(win, kv, ierr)
      call check(ierr .eq. MPI_SUCCESS, 'win delete attr')
      call check(ndel .eq. 1 .and. delval .eq. val, 'delete fn runs')
      call check(delwin .eq. w0 .and. delkv .eq. kv
     &     .and. delextra .eq. 7, 'delete fn arguments')
      call MPI_WIN_GET_ATTR(win, kv, got, flag, ierr)
      call check(.not. flag, 'deleted')
      val = 1000 + rank
      call MPI_WIN_SET_ATTR(win, kv, val, ierr)

!     The predefined callbacks.
      call MPI_WIN_CREATE_KEYVAL(MPI_WIN_DUP_FN,
     &     MPI_WIN_NULL_DELETE_FN, kvdup, extra, ierr)
      call check(ierr .eq. MPI_SUCCESS, 'keyval of predefined fns')
      call MPI_WIN_CREATE_KEYVAL(MPI_WIN_NULL_COPY_FN,
     &     MPI_WIN_NULL_DELETE_FN, kv2, extra, ierr)
      val = -5
      call MPI_WIN_SET_ATTR(win, kvdup, val, ierr)
      call MPI_WIN_GET_ATTR(win, kvdup, got, flag, ierr)
      call check(flag .and. got .eq. -5, 'negative value')
      call check(ndel .eq. 1, 'another keyval leaves windel alone')

!     The predefined attributes.
      call MPI_WIN_GET_ATTR(win, MPI_WIN_SIZE, got, flag, ierr)
      call check(flag .and. got .eq. 40, 'MPI_WIN_SIZE')
      call MPI_WIN_GET_ATTR(win, MPI_WIN_DISP_UNIT, got, flag, ierr)
      call check(flag .and. got .eq. 4, 'MPI_WIN_DISP_UNIT')

!     Names.
      call MPI_WIN_GET_NAME(win, name, n, ierr)
      call check(ierr .eq. MPI_SUCCESS .and. n .eq. 0, 'no name')
      call MPI_WIN_SET_NAME(win, 'f77 window  ', ierr)
      call check(ierr .eq. MPI_SUCCESS, 'win set name')
      call MPI_WIN_GET_NAME(win, name, n, ierr)
      call check(name .eq. 'f77 window' .and. n .eq. 10, 'win name')

!     MPI_WIN_FREE runs the delete function with the value set last.
      call MPI_WIN_FREE(win, ierr)
      call check(ierr .eq. MPI_SUCCESS, 'win free')
      call check(win .eq. MPI_WIN_NULL, 'freed')
      call check(ndel .eq. 2 .and. delval .eq. 1000 + rank,
     &     'delete fn at free')
      call check(delwin .eq. w0 .and. delkv .eq. kv,
     &     'delete fn arguments at free')
      call MPI_WIN_FREE_KEYVAL(kv, ierr)
      call check(kv .eq. MPI_KEYVAL_INVALID, 'free keyval')
      call MPI_WIN_FREE_KEYVAL(kv2, ierr)
      call MPI_WIN_FREE_KEYVAL(kvdup, ierr)
      call MPI_ERRHANDLER_FREE(eh, ierr)
      call check(eh .eq. MPI_ERRHANDLER_NULL, 'errhandler free')
      call MPI_FINALIZE(ierr)
      end

      subroutine winerr(win, code)
      integer win, code
      integer(kind=8) delval, delextra
      integer lastwin, lastcode, ndel, delwin, delkv
      common /wstate/ delval, delextra, lastwin, lastcode, ndel,
     &     delwin, delkv
      lastwin = win
      lastcode = code
      end

      subroutine windel(win, kv, val, extra, ierr)
      include 'mpif.h'
      integer win, kv, ierr
      integer(kind=MPI_ADDRESS_KIND) val, extra
      integer(kind=MPI_ADDRESS_KIND) delval, delextra
      integer lastwin, lastcode, ndel, delwin, delkv
      common /wstate/ delval, delextra, lastwin, lastcode, ndel,
     &     delwin, delkv
      ndel = ndel + 1
      delval = val
      delextra = extra
      delwin = win
      delkv = kv
      ierr = MPI_SUCCESS
      end

      subroutine check(ok, what)
      logical ok
      character*(*) what
      if (.not. ok) then
         print *, 'FAILED: ', what
         stop 1
      end if
      end
