//! oxmpi: MPI for Rust.
