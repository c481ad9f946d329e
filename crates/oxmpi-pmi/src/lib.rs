//! PMI-1, the process-management wire protocol that starts MPI jobs.
//!
//! Layering: this crate knows nothing of MPI. [`wire`] is the line codec, [`server`] the job's
//! key-value state as the launcher (`oxrun`) serves it, [`client`] what a rank uses to publish
//! and read business cards, [`spawn`] the request that starts a job from a running one.
//! The client works against any PMI-1 server on `PMI_FD`: oxrun,
//! MPICH's Hydra, or Slurm's `srun --mpi=pmi2`. [`topology`] reads the machine's packages,
//! NUMA nodes, cores, caches and NICs from sysfs, for the launcher's binding and
//! `oxmpi-info --topology`.
#![deny(missing_docs, unsafe_op_in_unsafe_fn)]

pub mod client;
pub mod launch;
pub mod server;
pub mod spawn;
pub mod topology;
pub mod wire;

pub use client::{Client, PmiError, SECRET_ENV};
pub use server::{Action, Job, JobInfo};
pub use spawn::{SpawnCommand, SpawnRequest};
