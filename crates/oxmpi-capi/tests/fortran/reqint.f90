! Requests crossing between Fortran and C in one program (reqint.c is the C half): a
! Fortran request INTEGER is the value of MPI_Request_c2f, so C completes Fortran's requests
! through MPI_Request_f2c and Fortran completes C's, single and in MPI_WAITALL, nonblocking
! and persistent.
program reqint
    use mpi
    implicit none
    integer :: ierr, rank, size, next, prev, i, ok, x, y(3), z
    integer :: req, reqs(2), preq, pval
    integer :: status(MPI_STATUS_SIZE), statuses(MPI_STATUS_SIZE, 2)
    call MPI_INIT(ierr)
    call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
    call MPI_COMM_SIZE(MPI_COMM_WORLD, size, ierr)
    next = mod(rank + 1, size)
    prev = mod(rank + size - 1, size)

    do i = 1, 100
        ! Made in Fortran, completed in C.
        x = -1
        call MPI_IRECV(x, 1, MPI_INTEGER, prev, 1, MPI_COMM_WORLD, req, ierr)
        call MPI_SEND(rank + i, 1, MPI_INTEGER, next, 1, MPI_COMM_WORLD, ierr)
        call c_wait(req, prev, ok)
        if (ok /= 0) call fail('C wait on a Fortran request, reqint.c line', ok)
        if (req /= MPI_REQUEST_NULL .or. x /= prev + i) call fail('C wait result', x)

        ! Made in C, completed in Fortran, alone and with a Fortran request in MPI_WAITALL.
        y = -1
        call c_irecv(y, 3, prev, 2, req, ok)
        if (ok /= 0) call fail('C irecv, reqint.c line', ok)
        call MPI_SEND([rank, i, 7], 3, MPI_INTEGER, next, 2, MPI_COMM_WORLD, ierr)
        call MPI_WAIT(req, status, ierr)
        if (ierr /= MPI_SUCCESS .or. req /= MPI_REQUEST_NULL) call fail('Fortran wait', ierr)
        if (any(y /= [prev, i, 7]) .or. status(MPI_SOURCE) /= prev) call fail('C irecv data', y(1))
        call c_irecv(y, 3, prev, 3, reqs(1), ok)
        if (ok /= 0) call fail('C irecv, reqint.c line', ok)
        call MPI_IRECV(z, 1, MPI_INTEGER, prev, 4, MPI_COMM_WORLD, reqs(2), ierr)
        if (reqs(1) == reqs(2)) call fail('two live requests share an integer', reqs(1))
        call MPI_SEND([i, i, i], 3, MPI_INTEGER, next, 3, MPI_COMM_WORLD, ierr)
        call MPI_SEND(-i, 1, MPI_INTEGER, next, 4, MPI_COMM_WORLD, ierr)
        call MPI_WAITALL(2, reqs, statuses, ierr)
        if (any(reqs /= MPI_REQUEST_NULL)) call fail('waitall frees', reqs(1))
        if (any(y /= i) .or. z /= -i) call fail('waitall data', z)
    end do

    ! Persistent, made in Fortran, started and completed in C, then freed in Fortran.
    call MPI_RECV_INIT(pval, 1, MPI_INTEGER, prev, 5, MPI_COMM_WORLD, preq, ierr)
    do i = 1, 3
        call MPI_SEND(rank * 10 + i, 1, MPI_INTEGER, next, 5, MPI_COMM_WORLD, ierr)
        call c_start_wait(preq, ok)
        if (ok /= 0) call fail('C start/wait of a persistent request, reqint.c line', ok)
        if (pval /= prev * 10 + i) call fail('persistent data', pval)
    end do
    call MPI_REQUEST_FREE(preq, ierr)
    if (ierr /= MPI_SUCCESS .or. preq /= MPI_REQUEST_NULL) call fail('request free', ierr)

    call MPI_FINALIZE(ierr)
contains
    subroutine fail(what, v)
        character(len=*), intent(in) :: what
        integer, intent(in) :: v
        print *, 'FAILED: ', what, v
        stop 1
    end subroutine fail
end program reqint
