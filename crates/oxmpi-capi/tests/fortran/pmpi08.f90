! mpi_f08 calls reach an F77 profiling tool (pmpi_tool.f) that defines MPI_SEND.
program pmpi08
    use mpi_f08
    implicit none
    integer :: nsend, rank, size, x, i
    common /tool/ nsend
    nsend = 0
    call MPI_Init()
    call MPI_Comm_rank(MPI_COMM_WORLD, rank)
    call MPI_Comm_size(MPI_COMM_WORLD, size)
    do i = 1, 3
        call MPI_Send(rank, 1, MPI_INTEGER, mod(rank + 1, size), i, MPI_COMM_WORLD)
        call MPI_Recv(x, 1, MPI_INTEGER, mod(rank + size - 1, size), i, MPI_COMM_WORLD, &
                      MPI_STATUS_IGNORE)
        if (x /= mod(rank + size - 1, size)) stop 2
    end do
    if (nsend /= 3) then
        print *, 'FAILED: the tool saw', nsend, 'of 3 sends'
        stop 1
    end if
    call MPI_Finalize()
end program pmpi08
