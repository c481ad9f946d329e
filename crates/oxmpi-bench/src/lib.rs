//! oxmpi-bench: oxmpi's benchmark suite and its comparison with other MPI implementations.
//!
//! The benchmarks themselves are OSU-style programs with one command-line and output format
//! (see [`suite`]): the C program `bench/c/oxbench.c`, built with any MPI's `mpicc`, and oxmpi's
//! native subcommands of the `oxmpi-bench` binary. `oxmpi-bench compare` ([`compare`]) installs
//! the peers ([`peers`]), runs every implementation ([`impls`]) interleaved with time limits
//! ([`run`]), parses and checks the output ([`parse`]), summarises repeats ([`stats`]) and
//! writes the report and CSV ([`report`]) and plots ([`plot`]).

pub mod cli;
pub mod compare;
pub mod floor;
pub mod impls;
pub mod native;
pub mod parse;
pub mod peers;
pub mod plot;
pub mod rawtcp;
pub mod report;
pub mod run;
pub mod stats;
pub mod suite;
