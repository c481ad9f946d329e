! The `mpi` module of oxmpi: the constants, sentinels and function types of mpif.h.
! Built at install time by the Fortran compiler found; module files are compiler-specific.
! Routines have implicit interfaces, as through mpif.h.
module mpi
    implicit none
    include 'mpif.h'
end module mpi
