! Modern Fortran with `use mpi_f08`: derived-type handles and statuses, optional ierror,
! assumed-rank choice buffers of any type and rank in the same program unit (no
! -fallow-argument-mismatch), nonblocking with waitall, collectives with MPI_IN_PLACE,
! reductions on INTEGER, REAL and DOUBLE PRECISION, a user operation, comm split/dup,
! a derived type, LOGICAL flags, strings, the deprecated keyval and attribute calls,
! MPI_Buffer_detach, large-count procedures by their _c names, Cartesian topologies with
! LOGICAL arrays, window attributes, error returns, the Fortran ABI queries, and a
! session.
module f08_checks
    use mpi_f08
    implicit none
    integer :: last_error = 0
contains
    subroutine check(ok, what)
        logical, intent(in) :: ok
        character(len=*), intent(in) :: what
        if (.not. ok) then
            print *, 'FAILED: ', what
            stop 1
        end if
    end subroutine check

    subroutine maxabs(invec, inoutvec, len, datatype)
        use, intrinsic :: iso_c_binding, only: c_ptr, c_f_pointer
        type(c_ptr), value :: invec, inoutvec
        integer :: len
        type(MPI_Datatype) :: datatype
        double precision, pointer :: a(:), b(:)
        integer :: i
        call c_f_pointer(invec, a, [len])
        call c_f_pointer(inoutvec, b, [len])
        if (datatype /= MPI_DOUBLE_PRECISION) stop 3
        do i = 1, len
            b(i) = max(abs(a(i)), abs(b(i)))
        end do
    end subroutine maxabs

    subroutine on_session_error(session, error_code)
        type(MPI_Session) :: session
        integer :: error_code
        if (session /= MPI_SESSION_NULL) last_error = error_code
    end subroutine on_session_error

    subroutine on_error(comm, error_code)
        type(MPI_Comm) :: comm
        integer :: error_code
        if (comm == MPI_COMM_WORLD) last_error = error_code
    end subroutine on_error

    subroutine copy_twice(oldcomm, comm_keyval, extra_state, attribute_val_in, &
            attribute_val_out, flag, ierror)
        type(MPI_Comm) :: oldcomm
        integer :: comm_keyval, ierror
        integer(kind=MPI_ADDRESS_KIND) :: extra_state, attribute_val_in, attribute_val_out
        logical :: flag
        if (oldcomm == MPI_COMM_NULL .or. comm_keyval == MPI_KEYVAL_INVALID) stop 5
        attribute_val_out = attribute_val_in * extra_state
        flag = .true.
        ierror = MPI_SUCCESS
    end subroutine copy_twice

    ! A copy function of the deprecated MPI_Keyval_create: INTEGER arguments.
    subroutine copy_plus(oldcomm, keyval, extra_state, attribute_val_in, attribute_val_out, &
            flag, ierr)
        integer :: oldcomm, keyval, extra_state, attribute_val_in, attribute_val_out, ierr
        logical :: flag
        if (oldcomm /= MPI_COMM_WORLD%MPI_VAL .or. keyval == MPI_KEYVAL_INVALID) stop 6
        attribute_val_out = attribute_val_in + extra_state
        flag = .true.
        ierr = MPI_SUCCESS
    end subroutine copy_plus
end module f08_checks

program f08
    use mpi_f08
    use f08_checks
    use, intrinsic :: iso_c_binding, only: c_ptr, c_loc, c_associated, c_intptr_t
    implicit none
    type(MPI_Comm) :: half, dup
    type(MPI_Request) :: reqs(4)
    type(MPI_Status) :: st, sts(4)
    type(MPI_Datatype) :: pair
    type(MPI_Op) :: op
    integer :: rank, size, next, prev, ierr, n, i, res
    integer :: iv(10), grid(3, 4), gall(64)
    real :: rv(3), rgrid(2, 2)
    double precision :: dv(5)
    logical :: flag
    character(len=MPI_MAX_OBJECT_NAME) :: name
    integer(kind=MPI_ADDRESS_KIND) :: tagub
    integer(kind=MPI_COUNT_KIND) :: big
    integer :: kv1, kv2
    type(MPI_Errhandler) :: eh
    integer, target :: bsbuf(256)
    type(c_ptr) :: addr
    integer(kind=MPI_ADDRESS_KIND) :: lba, exta
    integer(kind=MPI_COUNT_KIND) :: lbc, extc
    type(MPI_Comm) :: ring, sub
    type(MPI_Win) :: win
    integer :: dims1(1), coords(1)
    logical :: periods(1)
    integer, target :: wbuf(10)
    integer(kind=MPI_ADDRESS_KIND) :: wval
    type(MPI_Info) :: abi
    type(MPI_Session) :: sess
    type(MPI_Errhandler) :: seh
    type(MPI_Group) :: sgroup
    type(MPI_Comm) :: scomm
    character(len=MPI_MAX_PSET_NAME_LEN) :: pset
    character(len=16) :: val
    logical :: ftrue, ffalse, is_set

    call MPI_Init()
    call MPI_Comm_rank(MPI_COMM_WORLD, rank)
    call MPI_Comm_size(MPI_COMM_WORLD, size, ierr)
    call check(ierr == MPI_SUCCESS, 'ierror present')
    next = mod(rank + 1, size)
    prev = mod(rank + size - 1, size)

    ! Buffers of several types and ranks through the same routines.
    iv = [(rank * 10 + i, i = 1, 10)]
    grid = rank
    rgrid = real(rank) + 0.5
    call MPI_Irecv(dv, 5, MPI_DOUBLE_PRECISION, prev, 1, MPI_COMM_WORLD, reqs(1))
    call MPI_Irecv(gall, 10, MPI_INTEGER, prev, 2, MPI_COMM_WORLD, reqs(2))
    call MPI_Isend([(dble(rank) / 2, i = 1, 5)], 5, MPI_DOUBLE_PRECISION, next, 1, MPI_COMM_WORLD, reqs(3))
    call MPI_Isend(iv, 10, MPI_INTEGER, next, 2, MPI_COMM_WORLD, reqs(4))
    call MPI_Waitall(4, reqs, sts)
    call check(all(reqs == MPI_REQUEST_NULL), 'waitall frees')
    call check(sts(1)%MPI_SOURCE == prev .and. sts(2)%MPI_TAG == 2, 'statuses')
    call check(all(dv == dble(prev) / 2), 'double data')
    call check(all(gall(1:10) == [(prev * 10 + i, i = 1, 10)]), 'integer data')
    call MPI_Get_count(sts(2), MPI_INTEGER, n)
    call check(n == 10, 'get_count')
    call MPI_Sendrecv(grid, 12, MPI_INTEGER, next, 3, gall, 12, MPI_INTEGER, prev, 3, &
                      MPI_COMM_WORLD, MPI_STATUS_IGNORE)
    call check(all(gall(1:12) == prev), '2-d send')
    call MPI_Send(rank, 1, MPI_INTEGER, next, 5, MPI_COMM_WORLD)
    call MPI_Recv(n, 1, MPI_INTEGER, prev, 5, MPI_COMM_WORLD, st)
    call check(n == prev .and. st%MPI_SOURCE == prev, 'scalar buffers')
    ! Large counts: an INTEGER(KIND=MPI_COUNT_KIND) count selects MPI_Send_c.
    big = 10
    call MPI_Send(iv, big, MPI_INTEGER, next, 9, MPI_COMM_WORLD)
    call MPI_Recv(gall, 10, MPI_INTEGER, prev, 9, MPI_COMM_WORLD, st)
    call MPI_Get_count(st, MPI_INTEGER, big)
    call check(big == 10 .and. all(gall(1:10) == [(prev * 10 + i, i = 1, 10)]), 'large-count send')

    ! Iprobe with a LOGICAL flag.
    call MPI_Send(iv, 1, MPI_INTEGER, next, 6, MPI_COMM_WORLD)
    flag = .false.
    do while (.not. flag)
        call MPI_Iprobe(prev, 6, MPI_COMM_WORLD, flag, st)
    end do
    call MPI_Recv(n, 1, MPI_INTEGER, prev, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE)

    ! Collectives.
    call MPI_Allreduce(rank, n, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
    call check(n == size * (size - 1) / 2, 'allreduce sum')
    rv = [real(rank), -real(rank), 2.0]
    call MPI_Allreduce(MPI_IN_PLACE, rv, 3, MPI_REAL, MPI_MIN, MPI_COMM_WORLD)
    call check(all(rv == [0.0, -real(size - 1), 2.0]), 'allreduce in place min')
    dv = rank
    call MPI_Reduce(dv, dv(3:5), 3, MPI_DOUBLE_PRECISION, MPI_MAX, 0, MPI_COMM_WORLD)
    if (rank == 0) call check(all(dv(3:5) == size - 1), 'reduce max into a section')
    call MPI_Allgather(rank, 1, MPI_INTEGER, gall, 1, MPI_INTEGER, MPI_COMM_WORLD)
    call check(all(gall(1:size) == [(i, i = 0, size - 1)]), 'allgather')
    iv = -1
    if (rank == size - 1) iv = 7
    call MPI_Bcast(iv, 10, MPI_INTEGER, size - 1, MPI_COMM_WORLD)
    call check(all(iv == 7), 'bcast')
    call MPI_Barrier(MPI_COMM_WORLD)

    ! A user operation on DOUBLE PRECISION.
    call MPI_Op_create(maxabs, .true., op)
    dv = -dble(rank)
    call MPI_Allreduce(MPI_IN_PLACE, dv, 5, MPI_DOUBLE_PRECISION, op, MPI_COMM_WORLD)
    call check(all(dv == dble(size - 1)), 'user op')
    call MPI_Op_free(op)
    call check(op == MPI_OP_NULL, 'op free')

    ! Communicators: split, dup, names.
    call MPI_Comm_split(MPI_COMM_WORLD, mod(rank, 2), rank, half)
    call MPI_Comm_dup(half, dup)
    call MPI_Comm_compare(half, dup, res)
    call check(res == MPI_CONGRUENT, 'dup congruent')
    call MPI_Comm_set_name(dup, 'f08 dup')
    call MPI_Comm_get_name(dup, name, n)
    call check(name == 'f08 dup' .and. n == 7, 'comm name')
    call MPI_Comm_size(dup, n)
    call check(n == (size + 1 - mod(rank, 2)) / 2, 'split size')
    call MPI_Comm_free(dup)
    call MPI_Comm_free(half)
    call check(half == MPI_COMM_NULL, 'comm free')
    call MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, tagub, flag)
    call check(flag .and. tagub >= 32767, 'tag ub')

    ! Keyvals: a Fortran copy function (value times the extra state) and MPI_COMM_DUP_FN.
    call MPI_Comm_create_keyval(copy_twice, MPI_COMM_NULL_DELETE_FN, kv1, 2_MPI_ADDRESS_KIND)
    call MPI_Comm_create_keyval(MPI_COMM_DUP_FN, MPI_COMM_NULL_DELETE_FN, kv2, 0_MPI_ADDRESS_KIND)
    call MPI_Comm_set_attr(MPI_COMM_WORLD, kv1, 21_MPI_ADDRESS_KIND)
    call MPI_Comm_set_attr(MPI_COMM_WORLD, kv2, 99_MPI_ADDRESS_KIND)
    call MPI_Comm_dup(MPI_COMM_WORLD, dup)
    call MPI_Comm_get_attr(dup, kv1, tagub, flag)
    call check(flag .and. tagub == 42, 'Fortran copy function')
    call MPI_Comm_get_attr(dup, kv2, tagub, flag)
    call check(flag .and. tagub == 99, 'MPI_COMM_DUP_FN')
    call MPI_Comm_free(dup)
    call MPI_Comm_delete_attr(MPI_COMM_WORLD, kv1)
    call MPI_Comm_delete_attr(MPI_COMM_WORLD, kv2)
    call MPI_Comm_free_keyval(kv1)
    call MPI_Comm_free_keyval(kv2)

    ! The deprecated keyvals: INTEGER attribute values, a Fortran copy function and
    ! MPI_DUP_FN, predefined attributes as values.
    call MPI_Keyval_create(copy_plus, MPI_NULL_DELETE_FN, kv1, 5)
    call MPI_Keyval_create(MPI_DUP_FN, MPI_NULL_DELETE_FN, kv2, 0)
    call MPI_Attr_put(MPI_COMM_WORLD, kv1, 100)
    call MPI_Attr_put(MPI_COMM_WORLD, kv2, 200)
    call MPI_Attr_get(MPI_COMM_WORLD, kv1, n, flag)
    call check(flag .and. n == 100, 'MPI_Attr_get')
    call MPI_Comm_dup(MPI_COMM_WORLD, dup)
    call MPI_Attr_get(dup, kv1, n, flag)
    call check(flag .and. n == 105, 'deprecated Fortran copy function')
    call MPI_Attr_get(dup, kv2, n, flag)
    call check(flag .and. n == 200, 'MPI_DUP_FN')
    call MPI_Comm_free(dup)
    call MPI_Attr_get(MPI_COMM_WORLD, MPI_TAG_UB, n, flag)
    call check(flag .and. n >= 32767, 'MPI_Attr_get of MPI_TAG_UB')
    call MPI_Attr_delete(MPI_COMM_WORLD, kv1)
    call MPI_Attr_get(MPI_COMM_WORLD, kv1, n, flag)
    call check(.not. flag, 'MPI_Attr_delete')
    call MPI_Attr_delete(MPI_COMM_WORLD, kv2)
    call MPI_Keyval_free(kv1)
    call MPI_Keyval_free(kv2)
    call check(kv1 == MPI_KEYVAL_INVALID .and. kv2 == MPI_KEYVAL_INVALID, 'MPI_Keyval_free')

    ! Buffered sends; MPI_Buffer_detach gives the buffer back as a TYPE(C_PTR).
    call MPI_Buffer_attach(bsbuf, 1024)
    call MPI_Bsend(rank, 1, MPI_INTEGER, next, 10, MPI_COMM_WORLD)
    call MPI_Recv(n, 1, MPI_INTEGER, prev, 10, MPI_COMM_WORLD, MPI_STATUS_IGNORE)
    call check(n == prev, 'bsend')
    call MPI_Buffer_detach(addr, n)
    call check(c_associated(addr, c_loc(bsbuf)) .and. n == 1024, 'buffer detach')
    ! Automatic buffering (MPI-4.1): no space to give, nothing to run out of.
    call MPI_Buffer_attach(MPI_BUFFER_AUTOMATIC, 0)
    do i = 1, 3
        n = rank + i
        call MPI_Bsend(n, 1, MPI_INTEGER, next, 10 + i, MPI_COMM_WORLD)
    end do
    do i = 1, 3
        call MPI_Recv(n, 1, MPI_INTEGER, prev, 10 + i, MPI_COMM_WORLD, MPI_STATUS_IGNORE)
        call check(n == prev + i, 'bsend through automatic buffering')
    end do
    call MPI_Buffer_detach(addr, n)
    call check(n == 0 .and. c_associated(addr), 'detach of automatic buffering')
    ! A communicator's own buffer, and the large-count detaches.
    call MPI_Comm_attach_buffer(MPI_COMM_WORLD, bsbuf, 1024)
    call MPI_Bsend(rank, 1, MPI_INTEGER, next, 14, MPI_COMM_WORLD)
    call MPI_Recv(n, 1, MPI_INTEGER, prev, 14, MPI_COMM_WORLD, MPI_STATUS_IGNORE)
    call check(n == prev, 'bsend through the communicator buffer')
    call MPI_Comm_detach_buffer(MPI_COMM_WORLD, addr, n)
    call check(c_associated(addr, c_loc(bsbuf)) .and. n == 1024, 'MPI_Comm_detach_buffer')
    call MPI_Comm_attach_buffer(MPI_COMM_WORLD, MPI_BUFFER_AUTOMATIC, 0)
    call MPI_Comm_detach_buffer(MPI_COMM_WORLD, addr, big)
    call check(c_associated(addr) .and. big == 0, 'MPI_Comm_detach_buffer_c, automatic')
    call MPI_Buffer_attach(bsbuf, 1000)
    call MPI_Buffer_detach(addr, big)
    call check(c_associated(addr, c_loc(bsbuf)) .and. big == 1000, 'MPI_Buffer_detach_c')

    ! Large-count procedures the generic cannot tell from the default ones (every integer
    ! kind is 8 bytes): called by their _c names.
    call MPI_Type_get_extent(MPI_DOUBLE_PRECISION, lba, exta)
    call MPI_Type_get_extent_c(MPI_DOUBLE_PRECISION, lbc, extc)
    call check(lbc == lba .and. extc == exta, 'MPI_Type_get_extent_c')
    call MPI_Type_create_resized_c(MPI_INTEGER, 0_MPI_COUNT_KIND, 3 * extc, pair)
    call MPI_Type_get_extent_c(pair, lbc, extc)
    call check(lbc == 0 .and. extc == 3 * exta, 'MPI_Type_create_resized_c')
    call MPI_Type_get_true_extent_c(pair, lbc, extc)
    call MPI_Type_get_true_extent(MPI_INTEGER, lba, exta)
    call check(lbc == lba .and. extc == exta, 'MPI_Type_get_true_extent_c')
    call MPI_Type_free(pair)

    ! A periodic ring: LOGICAL arrays in and out.
    call MPI_Cart_create(MPI_COMM_WORLD, 1, [size], [.true.], .false., ring)
    periods = .false.
    call MPI_Cart_get(ring, 1, dims1, periods, coords)
    call check(dims1(1) == size .and. periods(1) .and. coords(1) == rank, 'cart_get')
    call MPI_Cart_sub(ring, [.false.], sub)
    call MPI_Comm_size(sub, n)
    call check(n == 1, 'cart_sub drops the dimension')
    call MPI_Comm_free(sub)
    call MPI_Comm_free(ring)

    ! Window attributes as INTEGER(KIND=MPI_ADDRESS_KIND) values.
    call MPI_Win_create(wbuf, int(storage_size(wbuf) / 8 * 10, MPI_ADDRESS_KIND), 4, &
                        MPI_INFO_NULL, MPI_COMM_WORLD, win)
    call MPI_Win_get_attr(win, MPI_WIN_SIZE, wval, flag)
    call check(flag .and. wval == storage_size(wbuf) / 8 * 10, 'MPI_WIN_SIZE')
    call MPI_Win_get_attr(win, MPI_WIN_DISP_UNIT, wval, flag)
    call check(flag .and. wval == 4, 'MPI_WIN_DISP_UNIT')
    call MPI_Win_get_attr(win, MPI_WIN_BASE, wval, flag)
    call check(flag .and. wval == transfer(c_loc(wbuf), 0_c_intptr_t), 'MPI_WIN_BASE')
    call MPI_Win_free(win)

    ! A derived type: two INTEGERs with a stride.
    call MPI_Type_vector(2, 1, 3, MPI_INTEGER, pair)
    call MPI_Type_commit(pair)
    grid = reshape([(i, i = 1, 12)], [3, 4])
    call MPI_Sendrecv(grid(1, 2), 1, pair, next, 7, iv, 2, MPI_INTEGER, prev, 7, MPI_COMM_WORLD, st)
    call check(iv(1) == 4 .and. iv(2) == 7, 'vector type')
    call MPI_Type_free(pair)

    ! Error returns, first through a Fortran error handler.
    call MPI_Comm_create_errhandler(on_error, eh)
    call MPI_Comm_set_errhandler(MPI_COMM_WORLD, eh)
    call MPI_Send(rank, 1, MPI_INTEGER, size, 0, MPI_COMM_WORLD, ierr)
    call check(ierr /= MPI_SUCCESS .and. last_error == ierr, 'Fortran error handler')
    call MPI_Errhandler_free(eh)
    call MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN)
    call MPI_Send(rank, 1, MPI_INTEGER, size, 0, MPI_COMM_WORLD, ierr)
    call check(ierr /= MPI_SUCCESS, 'bad rank')
    call MPI_Error_class(ierr, n)
    call check(n == MPI_ERR_RANK, 'error class')
    call MPI_Attr_get(MPI_COMM_WORLD, kv1, n, flag, ierr)
    call check(ierr /= MPI_SUCCESS, 'MPI_Attr_get of a freed keyval')
    call MPI_Buffer_detach(addr, n, ierr)
    call check(ierr /= MPI_SUCCESS, 'MPI_Buffer_detach with no buffer attached')
    call MPI_Sendrecv(rgrid, 4, MPI_REAL, next, 4, rv, 3, MPI_REAL, prev, 4, MPI_COMM_WORLD, st, ierr)
    call MPI_Error_class(ierr, n)
    call check(n == MPI_ERR_TRUNCATE, 'truncation is an error')
    ! A strided section is not contiguous: refused rather than sent wrongly.
    call MPI_Send(grid(1, :), 4, MPI_INTEGER, next, 8, MPI_COMM_WORLD, ierr)
    call check(ierr == MPI_ERR_BUFFER, 'non-contiguous buffer')
    call check(MPI_Wtime() > 0d0 .and. MPI_Wtick() > 0d0, 'wtime')
    call MPI_Get_address(iv(1), lba)
    call MPI_Get_address(iv(3), exta)
    call check(MPI_Aint_diff(exta, lba) == 2 * (storage_size(iv) / 8), 'MPI_Aint_diff')
    call check(MPI_Aint_add(lba, MPI_Aint_diff(exta, lba)) == exta, 'MPI_Aint_add')
    call MPI_Pcontrol(1)

    ! The Fortran ABI as the library reports it, and the pair type of MINLOC/MAXLOC.
    call MPI_Abi_get_fortran_info(abi)
    call MPI_Info_get_string(abi, 'mpi_integer_size', n, val, flag)
    call check(flag .and. val == '4' .and. storage_size(n) == 32, 'mpi_integer_size')
    call MPI_Info_get_string(abi, 'mpi_logical_size', n, val, flag)
    call check(flag .and. val == '4' .and. storage_size(flag) == 32, 'mpi_logical_size')
    call MPI_Abi_get_fortran_booleans(4, ftrue, ffalse, is_set)
    call check(ftrue .and. .not. ffalse .and. is_set, 'Fortran booleans')
    call MPI_Abi_set_fortran_info(abi, ierr)
    call MPI_Error_class(ierr, n)
    call check(n == MPI_ERR_ABI, 'the Fortran ABI cannot be set again')
    call MPI_Info_free(abi)
    call MPI_Type_get_value_index(MPI_DOUBLE_PRECISION, MPI_DOUBLE_PRECISION, pair)
    call check(pair == MPI_2DOUBLE_PRECISION, 'MPI_Type_get_value_index')
    call MPI_Type_get_value_index(MPI_REAL, MPI_INTEGER, pair)
    call check(pair == MPI_DATATYPE_NULL, 'no pair of REAL and INTEGER')

    ! A session beside the world model: its process sets (lengths without the C NUL), the
    ! world set's group and a communicator of it.
    call MPI_Session_create_errhandler(on_session_error, seh)
    call MPI_Session_init(MPI_INFO_NULL, seh, sess)
    last_error = 0
    call MPI_Session_call_errhandler(sess, MPI_ERR_OTHER)
    call check(last_error == MPI_ERR_OTHER, 'a Fortran session error handler')
    call MPI_Errhandler_free(seh)
    call MPI_Session_set_errhandler(sess, MPI_ERRORS_RETURN)
    call MPI_Session_get_num_psets(sess, MPI_INFO_NULL, n)
    call check(n == 2, 'two process sets')
    res = 0
    call MPI_Session_get_nth_pset(sess, MPI_INFO_NULL, 0, res, pset)
    call check(res == len('mpi://WORLD'), 'the length of the first process set''s name')
    res = len(pset)
    call MPI_Session_get_nth_pset(sess, MPI_INFO_NULL, 0, res, pset)
    call check(pset == 'mpi://WORLD' .and. res == 11, 'the first process set')
    call MPI_Group_from_session_pset(sess, pset, sgroup)
    call MPI_Comm_create_from_group(sgroup, 'org.oxmpi.test.f08', MPI_INFO_NULL, &
        MPI_ERRORS_RETURN, scomm)
    i = 1
    call MPI_Allreduce(i, n, 1, MPI_INTEGER, MPI_SUM, scomm)
    call check(n == size, 'a sum over the session''s world')
    ! The session's buffer serves its communicator's buffered sends.
    call MPI_Session_attach_buffer(sess, bsbuf, 1024)
    call MPI_Bsend(rank, 1, MPI_INTEGER, next, 15, scomm)
    call MPI_Recv(n, 1, MPI_INTEGER, prev, 15, scomm, MPI_STATUS_IGNORE)
    call check(n == prev, 'bsend through the session buffer')
    call MPI_Session_detach_buffer(sess, addr, n)
    call check(c_associated(addr, c_loc(bsbuf)) .and. n == 1024, 'MPI_Session_detach_buffer')
    call MPI_Session_attach_buffer(sess, MPI_BUFFER_AUTOMATIC, 0)
    call MPI_Session_detach_buffer(sess, addr, big)
    call check(c_associated(addr) .and. big == 0, 'MPI_Session_detach_buffer_c, automatic')
    call MPI_Comm_free(scomm)
    call MPI_Group_free(sgroup)
    call MPI_Session_finalize(sess)
    call check(sess == MPI_SESSION_NULL, 'the session is reset')

    call MPI_Finalize(ierr)
    call check(ierr == MPI_SUCCESS, 'finalize')
end program f08
