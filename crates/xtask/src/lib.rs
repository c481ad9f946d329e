//! Project tasks for oxmpi, and the network-namespace test hosts that integration tests share.
//!
//! `cargo xtask netns-test` (an alias in `.cargo/config.toml`) runs the cross-host suites on
//! three namespace-hosts; [`netns`] is the reusable part: [`netns::TestHosts`] creates and
//! removes the hosts. `cargo xtask slurm-test` runs the Slurm suite on a single-machine Slurm
//! cluster; [`slurm::TestCluster`] starts and stops one.
#![deny(missing_docs)]

pub mod netns;
pub mod slurm;
