//! Which ranks share a host.
//!
//! The launcher's `PMI_process_mapping` is the source of truth; `OXMPI_HOST_OVERRIDE` replaces
//! it in tests that need several "hosts" on one machine.

use crate::error::{Error, ErrorClass, Result};

/// The host index [`Locality::host_of`] gives a process of another job.
pub const FOREIGN_HOST: u32 = u32::MAX;

/// Host placement of every rank of the job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Locality {
    node_of: Vec<u32>,
}

impl Locality {
    /// Placement from a host index per rank.
    pub fn new(node_of: Vec<u32>) -> Self {
        Locality { node_of }
    }

    /// Every rank on one host.
    pub fn single_host(size: u32) -> Self {
        Locality::new(vec![0; size as usize])
    }

    /// Parses `OXMPI_HOST_OVERRIDE` (one host index per rank, comma-separated).
    pub fn parse_override(text: &str, size: u32) -> Result<Self> {
        let node_of: Vec<u32> = text
            .split(',')
            .map(|t| t.trim().parse().ok())
            .collect::<Option<_>>()
            .ok_or_else(|| {
                Error::new(
                    ErrorClass::Arg,
                    format!("OXMPI_HOST_OVERRIDE={text:?} is not a list of host numbers"),
                )
            })?;
        if node_of.len() != size as usize {
            return Err(Error::new(
                ErrorClass::Arg,
                format!(
                    "OXMPI_HOST_OVERRIDE names {} ranks but the job has {size}",
                    node_of.len()
                ),
            ));
        }
        Ok(Locality::new(node_of))
    }

    /// Host index of `rank`; [`FOREIGN_HOST`] for a process of another job (an engine index
    /// beyond the world), whose placement this job does not know.
    pub fn host_of(&self, rank: u32) -> u32 {
        self.node_of
            .get(rank as usize)
            .copied()
            .unwrap_or(FOREIGN_HOST)
    }

    /// Whether every one of `ranks` is a rank of this job (none of another job).
    pub fn all_in_job(&self, ranks: &[u32]) -> bool {
        ranks.iter().all(|&r| (r as usize) < self.node_of.len())
    }

    /// Whether two ranks share a host.
    #[cfg(test)]
    pub fn same_host(&self, a: u32, b: u32) -> bool {
        self.host_of(a) == self.host_of(b)
    }

    /// Ranks on `rank`'s host, in rank order.
    pub fn local_ranks(&self, rank: u32) -> Vec<u32> {
        let h = self.host_of(rank);
        (0..self.node_of.len() as u32)
            .filter(|&r| self.node_of[r as usize] == h)
            .collect()
    }

    /// Number of distinct hosts.
    pub fn host_count(&self) -> usize {
        let mut hosts = self.node_of.clone();
        hosts.sort_unstable();
        hosts.dedup();
        hosts.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_ranks_by_host() {
        let l = Locality::new(vec![0, 1, 0, 1, 2]);
        assert_eq!(l.local_ranks(2), vec![0, 2]);
        assert!(l.same_host(1, 3));
        assert!(!l.same_host(0, 4));
        assert_eq!(l.host_count(), 3);
        assert_eq!(Locality::single_host(3).local_ranks(1), vec![0, 1, 2]);
    }

    #[test]
    fn override_is_validated() {
        assert_eq!(
            Locality::parse_override("0, 0,1", 3).unwrap(),
            Locality::new(vec![0, 0, 1])
        );
        assert_eq!(
            Locality::parse_override("0,0", 3).unwrap_err().class(),
            ErrorClass::Arg
        );
        assert!(Locality::parse_override("0,x,1", 3).is_err());
    }
}
