//! The MPI-5.0 standard C ABI over oxmpi: `libmpi_abi.so.1` and its header `include/mpi.h`.
//!
//! Every exported function is a thin translation: argument checks, handle lookup, one call
//! into the core's handle layer (`oxmpi::handle`), and error dispatch to the communicator's
//! error handler. The one wrapper in [`boundary`] catches panics (`MPI_ERR_INTERN`), so none
//! crosses into C. Each function is exported as `PMPI_x` (the body) and `MPI_x` (which calls
//! `PMPI_x`), so a profiling library that defines `MPI_x` intercepts it.
//!
//! Only functions that work are exported and declared in `mpi.h`; what the core does not yet
//! provide stays out, so a program that needs it fails to build instead of failing at run
//! time.
#![deny(unsafe_op_in_unsafe_fn)]
#![allow(non_snake_case)]

mod boundary;
mod datatypes;
mod staging;

pub mod attrs;
pub mod buffers;
pub mod coll;
pub mod comm;
pub mod convert;
pub mod dynamic;
pub mod env;
pub mod errors;
pub mod grequest;
pub mod icoll;
pub mod info;
pub mod longdouble;
pub mod message;
pub mod p2p;
pub mod partitioned;
pub mod rma;
pub mod session;
pub mod topo;
pub mod types;
