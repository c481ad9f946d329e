! Window error handlers, keyvals, attributes and names through mpi_f08: the handler gets
! the window and the code, a keyval's delete function runs at MPI_Win_delete_attr and at
! MPI_Win_free with the value set, user attribute values come back as set, and the
! predefined callbacks and attributes work.
module win08_checks
    use mpi_f08
    implicit none
    type(MPI_Win) :: last_win
    integer :: last_code = -1, ndel = 0, del_kv = -1
    type(MPI_Win) :: del_win
    integer(kind=MPI_ADDRESS_KIND) :: del_val = -1, del_extra = -1
contains
    subroutine check(ok, what)
        logical, intent(in) :: ok
        character(len=*), intent(in) :: what
        if (.not. ok) then
            print *, 'FAILED: ', what
            stop 1
        end if
    end subroutine check

    subroutine on_win_error(win, error_code)
        type(MPI_Win) :: win
        integer :: error_code
        last_win = win
        last_code = error_code
    end subroutine on_win_error

    subroutine on_delete(win, win_keyval, attribute_val, extra_state, ierror)
        type(MPI_Win) :: win
        integer :: win_keyval, ierror
        integer(kind=MPI_ADDRESS_KIND) :: attribute_val, extra_state
        ndel = ndel + 1
        del_win = win
        del_kv = win_keyval
        del_val = attribute_val
        del_extra = extra_state
        ierror = MPI_SUCCESS
    end subroutine on_delete
end module win08_checks

program win08
    use mpi_f08
    use win08_checks
    implicit none
    type(MPI_Win) :: win, w0
    type(MPI_Errhandler) :: eh
    integer :: rank, ierr, kv, kvdup, n
    integer, target :: buf(10)
    integer(kind=MPI_ADDRESS_KIND) :: val, got
    logical :: flag
    character(len=MPI_MAX_OBJECT_NAME) :: name

    call MPI_Init()
    call MPI_Comm_rank(MPI_COMM_WORLD, rank)
    call MPI_Win_create(buf, 40_MPI_ADDRESS_KIND, 4, MPI_INFO_NULL, MPI_COMM_WORLD, win)
    w0 = win

    call MPI_Win_create_errhandler(on_win_error, eh, ierr)
    call check(ierr == MPI_SUCCESS, 'win create errhandler')
    call MPI_Win_set_errhandler(win, eh)
    call MPI_Win_call_errhandler(win, MPI_ERR_OTHER)
    call check(last_win == win .and. last_code == MPI_ERR_OTHER, 'handler arguments')
    last_code = -1
    call MPI_Win_set_attr(win, MPI_KEYVAL_INVALID, 0_MPI_ADDRESS_KIND, ierr)
    call check(ierr /= MPI_SUCCESS, 'bad keyval is an error')
    call check(last_win == win .and. last_code == ierr, 'handler sees the error')

    call MPI_Win_create_keyval(MPI_WIN_NULL_COPY_FN, on_delete, kv, 11_MPI_ADDRESS_KIND, ierr)
    call check(ierr == MPI_SUCCESS, 'win create keyval')
    call MPI_Win_get_attr(win, kv, got, flag)
    call check(.not. flag, 'unset')
    val = 2_MPI_ADDRESS_KIND ** 40 + rank
    call MPI_Win_set_attr(win, kv, val, ierr)
    call check(ierr == MPI_SUCCESS, 'win set attr')
    call MPI_Win_get_attr(win, kv, got, flag)
    call check(flag .and. got == val, 'user attribute value')
    call MPI_Win_delete_attr(win, kv)
    call check(ndel == 1 .and. del_val == val .and. del_kv == kv, 'delete fn runs')
    call check(del_win == w0 .and. del_extra == 11, 'delete fn arguments')
    call MPI_Win_set_attr(win, kv, 500_MPI_ADDRESS_KIND + rank)

    call MPI_Win_create_keyval(MPI_WIN_DUP_FN, MPI_WIN_NULL_DELETE_FN, kvdup, &
                               0_MPI_ADDRESS_KIND, ierr)
    call check(ierr == MPI_SUCCESS, 'keyval of predefined fns')
    call MPI_Win_set_attr(win, kvdup, -3_MPI_ADDRESS_KIND)
    call MPI_Win_get_attr(win, kvdup, got, flag)
    call check(flag .and. got == -3, 'negative value')

    call MPI_Win_get_attr(win, MPI_WIN_SIZE, got, flag)
    call check(flag .and. got == 40, 'MPI_WIN_SIZE')
    call MPI_Win_get_attr(win, MPI_WIN_DISP_UNIT, got, flag)
    call check(flag .and. got == 4, 'MPI_WIN_DISP_UNIT')

    call MPI_Win_set_name(win, 'f08 window')
    call MPI_Win_get_name(win, name, n)
    call check(name == 'f08 window' .and. n == 10, 'win name')

    call MPI_Win_free(win)
    call check(win == MPI_WIN_NULL, 'freed')
    call check(ndel == 2 .and. del_val == 500 + rank, 'delete fn at free')
    call check(del_win == w0 .and. del_kv == kv, 'delete fn arguments at free')
    call MPI_Win_free_keyval(kv)
    call check(kv == MPI_KEYVAL_INVALID, 'free keyval')
    call MPI_Win_free_keyval(kvdup)
    call MPI_Errhandler_free(eh)
    call check(eh == MPI_ERRHANDLER_NULL, 'errhandler free')
    call MPI_Finalize()
end program win08
