! Free-form Fortran 90 with `use mpi`: communicator split and dup, derived datatypes
! (vector, contiguous, struct from MPI_GET_ADDRESS), names through hidden character lengths,
! the MPI_TAG_UB attribute, waitany/waitsome with 1-based indices, a Fortran error handler,
! reductions on REAL and DOUBLE PRECISION with MPI_IN_PLACE at the root, alltoallw, a
! Cartesian ring with LOGICAL periods and a neighbourhood alltoallw on it, and mpif.h
! included from free-form source.
module checks
    implicit none
contains
    subroutine check(ok, what)
        logical, intent(in) :: ok
        character(len=*), intent(in) :: what
        if (.not. ok) then
            print *, 'FAILED: ', what
            stop 1
        end if
    end subroutine check
end module checks

subroutine via_mpif_h(rank)
    ! mpif.h in free form.
    implicit none
    include 'mpif.h'
    integer, intent(in) :: rank
    integer :: r, ierr
    call MPI_COMM_RANK(MPI_COMM_WORLD, r, ierr)
    if (r /= rank .or. ierr /= MPI_SUCCESS) stop 2
end subroutine via_mpif_h

subroutine copy_plus_one(oldcomm, keyval, extra, valin, valout, flag, ierr)
    use mpi
    implicit none
    integer :: oldcomm, keyval, ierr
    integer(kind=MPI_ADDRESS_KIND) :: extra, valin, valout
    logical :: flag
    if (oldcomm == MPI_COMM_NULL .or. keyval == MPI_KEYVAL_INVALID) stop 4
    valout = valin + extra
    flag = .true.
    ierr = MPI_SUCCESS
end subroutine copy_plus_one

subroutine on_error(comm, code)
    use mpi
    implicit none
    integer :: comm, code
    integer :: seen
    common /handler/ seen
    if (comm /= MPI_COMM_NULL) seen = code
end subroutine on_error

program use_mpi_test
    use mpi
    use checks
    implicit none
    integer :: ierr, rank, size, half, hrank, hsize, dup, res, i, n, vec, cont, st
    integer :: reqs(3), idx, outcount, indices(3), eh, seen
    integer :: status(MPI_STATUS_SIZE), statuses(MPI_STATUS_SIZE, 3)
    integer :: grid(4, 3), col(4), blk(3), types(3)
    integer(kind=MPI_ADDRESS_KIND) :: base, disp(3), tagub, lb, extent
    character(len=MPI_MAX_OBJECT_NAME) :: name
    logical :: flag
    real :: r(3)
    double precision :: d(2)
    type rec
        sequence
        integer :: id
        double precision :: val
        real :: w
    end type rec
    type(rec) :: rin, rout
    common /handler/ seen
    integer :: keyval, many(40), many_in(20), many_out(20)
    integer(kind=MPI_ADDRESS_KIND) :: val, extra
    external on_error, copy_plus_one
    integer :: wsend(64), wrecv(64), wcounts(64), wdispls(64), wtypes(64), ring, sub, coords(1)
    integer :: nsend(2), nrecv(2), ncounts(2), ntypes(2), dims1(1)
    integer(kind=MPI_ADDRESS_KIND) :: ndispls(2)
    logical :: periods(1)

    call MPI_INIT(ierr)
    call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
    call MPI_COMM_SIZE(MPI_COMM_WORLD, size, ierr)
    call via_mpif_h(rank)

    ! Split into even and odd ranks; dup; compare.
    call MPI_COMM_SPLIT(MPI_COMM_WORLD, mod(rank, 2), -rank, half, ierr)
    call MPI_COMM_RANK(half, hrank, ierr)
    call MPI_COMM_SIZE(half, hsize, ierr)
    call check(hsize == (size + 1 - mod(rank, 2)) / 2, 'split size')
    call check(hrank == hsize - 1 - rank / 2, 'split key orders ranks')
    call MPI_COMM_DUP(half, dup, ierr)
    call MPI_COMM_COMPARE(half, dup, res, ierr)
    call check(res == MPI_CONGRUENT, 'dup is congruent')
    call MPI_ALLREDUCE(1, n, 1, MPI_INTEGER, MPI_SUM, dup, ierr)
    call check(n == hsize, 'allreduce on the dup')
    call MPI_COMM_SET_NAME(dup, 'halves   ', ierr)
    call MPI_COMM_GET_NAME(dup, name, n, ierr)
    call check(n == 6 .and. name == 'halves', 'comm name')
    call MPI_COMM_FREE(dup, ierr)
    call check(dup == MPI_COMM_NULL, 'comm free')
    call MPI_COMM_FREE(half, ierr)

    ! Attribute MPI_TAG_UB, as an integer.
    call MPI_COMM_GET_ATTR(MPI_COMM_WORLD, MPI_TAG_UB, tagub, flag, ierr)
    call check(flag .and. tagub >= 32767, 'tag ub')

    ! A keyval with a Fortran copy function: the dup gets the value plus the extra state.
    extra = 5
    call MPI_COMM_CREATE_KEYVAL(copy_plus_one, MPI_COMM_NULL_DELETE_FN, keyval, extra, ierr)
    call check(ierr == MPI_SUCCESS, 'create keyval')
    val = 37
    call MPI_COMM_SET_ATTR(MPI_COMM_WORLD, keyval, val, ierr)
    call MPI_COMM_DUP(MPI_COMM_WORLD, dup, ierr)
    val = 0
    call MPI_COMM_GET_ATTR(dup, keyval, val, flag, ierr)
    call check(flag .and. val == 42, 'attribute copied by the Fortran function')
    call MPI_COMM_FREE(dup, ierr)
    call MPI_COMM_DELETE_ATTR(MPI_COMM_WORLD, keyval, ierr)
    call MPI_COMM_FREE_KEYVAL(keyval, ierr)
    call check(keyval == MPI_KEYVAL_INVALID, 'free keyval')

    ! A column of a 4x3 INTEGER grid as a vector type, to the next rank.
    grid = reshape([(i, i = 1, 12)], [4, 3]) + 100 * rank
    call MPI_TYPE_VECTOR(3, 1, 4, MPI_INTEGER, vec, ierr)
    call MPI_TYPE_COMMIT(vec, ierr)
    call MPI_TYPE_SIZE(vec, n, ierr)
    call check(n == 12, 'vector size')
    call MPI_TYPE_GET_EXTENT(vec, lb, extent, ierr)
    call check(lb == 0 .and. extent == 36, 'vector extent')
    call MPI_SENDRECV(grid(2, 1), 1, vec, mod(rank + 1, size), 1, col, 3, MPI_INTEGER, &
                      mod(rank + size - 1, size), 1, MPI_COMM_WORLD, status, ierr)
    call check(all(col(1:3) == [2, 6, 10] + 100 * mod(rank + size - 1, size)), 'vector data')
    call MPI_TYPE_FREE(vec, ierr)
    call MPI_TYPE_CONTIGUOUS(2, MPI_DOUBLE_PRECISION, cont, ierr)
    call MPI_TYPE_COMMIT(cont, ierr)
    d = [rank * 1.5d0, -rank * 1.0d0]
    call MPI_BCAST(d, 1, cont, 0, MPI_COMM_WORLD, ierr)
    call check(d(1) == 0d0 .and. d(2) == 0d0, 'contiguous bcast')
    call MPI_TYPE_FREE(cont, ierr)

    ! A struct from addresses.
    call MPI_GET_ADDRESS(rin, base, ierr)
    call MPI_GET_ADDRESS(rin%id, disp(1), ierr)
    call MPI_GET_ADDRESS(rin%val, disp(2), ierr)
    call MPI_GET_ADDRESS(rin%w, disp(3), ierr)
    disp = disp - base
    blk = 1
    types = [MPI_INTEGER, MPI_DOUBLE_PRECISION, MPI_REAL]
    call MPI_TYPE_CREATE_STRUCT(3, blk, disp, types, st, ierr)
    call MPI_TYPE_COMMIT(st, ierr)
    rin = rec(rank, rank * 2.5d0, real(rank) + 0.5)
    call MPI_SENDRECV(rin, 1, st, mod(rank + 1, size), 2, rout, 1, st, &
                      mod(rank + size - 1, size), 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
    n = mod(rank + size - 1, size)
    call check(rout%id == n .and. rout%val == n * 2.5d0 .and. rout%w == real(n) + 0.5, 'struct')
    call MPI_TYPE_FREE(st, ierr)

    ! Waitany and waitsome give 1-based indices.
    call MPI_IRECV(col(1), 1, MPI_INTEGER, MPI_PROC_NULL, 3, MPI_COMM_WORLD, reqs(1), ierr)
    reqs(2) = MPI_REQUEST_NULL
    call MPI_IRECV(col(2), 1, MPI_INTEGER, mod(rank + size - 1, size), 3, MPI_COMM_WORLD, reqs(3), ierr)
    call MPI_SEND(rank, 1, MPI_INTEGER, mod(rank + 1, size), 3, MPI_COMM_WORLD, ierr)
    call MPI_WAITANY(3, reqs, idx, status, ierr)
    call check(idx == 1 .or. idx == 3, 'waitany index')
    call check(reqs(idx) == MPI_REQUEST_NULL, 'waitany frees')
    call MPI_WAITSOME(3, reqs, outcount, indices, statuses, ierr)
    call check(outcount == 1 .and. indices(1) == 4 - idx, 'waitsome index')
    call MPI_WAITSOME(3, reqs, outcount, indices, statuses, ierr)
    call check(outcount == MPI_UNDEFINED, 'waitsome on nulls')
    call check(col(2) == mod(rank + size - 1, size), 'waitany data')

    ! More requests than the wrappers keep on the stack (16): waitall and testall.
    do i = 1, 20
        call MPI_IRECV(many_in(i), 1, MPI_INTEGER, mod(rank + size - 1, size), 100 + i, &
                       MPI_COMM_WORLD, many(i), ierr)
    end do
    many_out = [(rank * 100 + i, i = 1, 20)]
    do i = 1, 20
        call MPI_ISEND(many_out(i), 1, MPI_INTEGER, mod(rank + 1, size), 100 + i, &
                       MPI_COMM_WORLD, many(20 + i), ierr)
    end do
    flag = .false.
    do while (.not. flag)
        call MPI_TESTALL(40, many, flag, MPI_STATUSES_IGNORE, ierr)
    end do
    call check(all(many == MPI_REQUEST_NULL), 'testall frees')
    call check(all(many_in == [(mod(rank + size - 1, size) * 100 + i, i = 1, 20)]), 'many requests')

    ! Reductions on REAL, MPI_IN_PLACE at the root.
    r = [real(rank), 1.0, -real(rank)]
    if (rank == 0) then
        call MPI_REDUCE(MPI_IN_PLACE, r, 3, MPI_REAL, MPI_MAX, 0, MPI_COMM_WORLD, ierr)
        call check(all(r == [real(size - 1), 1.0, 0.0]), 'reduce in place')
    else
        call MPI_REDUCE(r, r, 3, MPI_REAL, MPI_MAX, 0, MPI_COMM_WORLD, ierr)
    end if

    ! Alltoallw: a datatype per peer (the bindings count them from the communicator).
    call MPI_TYPE_GET_EXTENT(MPI_INTEGER, lb, extent, ierr)
    do i = 1, size
        wsend(i) = rank * 100 + i - 1
        wcounts(i) = 1
        wdispls(i) = (i - 1) * int(extent)
        wtypes(i) = MPI_INTEGER
    end do
    wrecv = -1
    call MPI_ALLTOALLW(wsend, wcounts, wdispls, wtypes, wrecv, wcounts, wdispls, wtypes, &
                       MPI_COMM_WORLD, ierr)
    call check(ierr == MPI_SUCCESS, 'alltoallw')
    call check(all(wrecv(1:size) == [((i - 1) * 100 + rank, i = 1, size)]), 'alltoallw data')

    ! A periodic ring with LOGICAL periods, its coordinates, a sub-grid, and a neighbourhood
    ! alltoallw over its two neighbours (left, then right).
    periods = .true.
    call MPI_CART_CREATE(MPI_COMM_WORLD, 1, [size], periods, .false., ring, ierr)
    periods = .false.
    call MPI_CART_GET(ring, 1, dims1, periods, coords, ierr)
    call check(dims1(1) == size .and. periods(1) .and. coords(1) == rank, 'cart_get')
    call MPI_CART_SUB(ring, [.true.], sub, ierr)
    call MPI_COMM_SIZE(sub, n, ierr)
    call check(n == size, 'cart_sub keeps the dimension')
    call MPI_COMM_FREE(sub, ierr)
    nsend = rank
    ncounts = 1
    ntypes = MPI_INTEGER
    ndispls = [0_MPI_ADDRESS_KIND, extent]
    nrecv = -1
    call MPI_NEIGHBOR_ALLTOALLW(nsend, ncounts, ndispls, ntypes, nrecv, ncounts, ndispls, &
                                ntypes, ring, ierr)
    call check(all(nrecv == [mod(rank + size - 1, size), mod(rank + 1, size)]), &
               'neighbor_alltoallw')
    call MPI_COMM_FREE(ring, ierr)

    ! A Fortran error handler sees the error code.
    seen = 0
    call MPI_COMM_CREATE_ERRHANDLER(on_error, eh, ierr)
    call MPI_COMM_SET_ERRHANDLER(MPI_COMM_WORLD, eh, ierr)
    call MPI_SEND(rank, 1, MPI_INTEGER, size, 0, MPI_COMM_WORLD, ierr)
    call check(ierr /= MPI_SUCCESS, 'error returned')
    call check(seen == ierr, 'handler called with the code')
    call MPI_ERRHANDLER_FREE(eh, ierr)
    call MPI_COMM_SET_ERRHANDLER(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL, ierr)

    call MPI_FINALIZE(ierr)
end program use_mpi_test
