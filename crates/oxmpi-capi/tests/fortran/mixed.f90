! The Fortran side of a mixed job (tests/fortran/mixed.c is the C side).
program mixed
    use mpi
    implicit none
    integer :: ierr, rank, size, mine(2), all(2 * 64), i, nc, back(3)
    integer :: status(MPI_STATUS_SIZE)
    double precision :: d(3), x, total
    call MPI_INIT(ierr)
    call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
    call MPI_COMM_SIZE(MPI_COMM_WORLD, size, ierr)
    if (size > 64) stop 1
    mine = [rank, 2]
    call MPI_ALLGATHER(mine, 2, MPI_INTEGER, all, 2, MPI_INTEGER, MPI_COMM_WORLD, ierr)
    nc = 0
    do i = 0, size - 1
        if (all(2 * i + 1) /= i) stop 2
        if (all(2 * i + 2) == 1) nc = nc + 1
    end do
    if (nc < 1 .or. nc >= size .or. rank < nc) stop 3
    if (rank == nc) then
        call MPI_RECV(d, 3, MPI_DOUBLE_PRECISION, 0, 5, MPI_COMM_WORLD, status, ierr)
        if (status(MPI_SOURCE) /= 0 .or. any(d /= [1.5d0, 2.5d0, 3.5d0])) stop 4
        back = nint(d * 10)
        call MPI_SEND(back, 3, MPI_INTEGER, 0, 6, MPI_COMM_WORLD, ierr)
    end if
    x = rank
    call MPI_ALLREDUCE(x, total, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
    if (total /= size * (size - 1) / 2.0d0) stop 5
    call MPI_FINALIZE(ierr)
end program mixed
