//! The job's key-value store as a rank sees it: PMI-1 under a launcher, or a local map for a
//! singleton started without one.

use std::collections::HashMap;

use oxmpi_pmi::Client;

use crate::error::Result;

/// Where this process learns about its peers.
#[derive(Debug)]
pub enum Bootstrap {
    /// Started by oxrun, Hydra or Slurm.
    Pmi(Client),
    /// Started directly: size 1, rank 0; puts are visible to ourselves.
    Singleton(HashMap<String, String>),
}

impl Bootstrap {
    /// Connects to the launcher named by the environment, or becomes a singleton.
    pub fn from_env() -> Result<Bootstrap> {
        Ok(match Client::from_env()? {
            Some(c) => Bootstrap::Pmi(c),
            None => Bootstrap::Singleton(HashMap::new()),
        })
    }

    /// This process's rank in the job.
    pub fn rank(&self) -> u32 {
        match self {
            Bootstrap::Pmi(c) => c.rank(),
            Bootstrap::Singleton(_) => 0,
        }
    }

    /// Number of ranks in the job.
    pub fn size(&self) -> u32 {
        match self {
            Bootstrap::Pmi(c) => c.size(),
            Bootstrap::Singleton(_) => 1,
        }
    }

    /// MPMD application index.
    pub fn appnum(&self) -> i32 {
        match self {
            Bootstrap::Pmi(c) => c.appnum().max(0),
            Bootstrap::Singleton(_) => 0,
        }
    }

    /// Publishes a value, visible to all ranks after the next fence.
    pub fn put(&mut self, key: &str, value: &str) -> Result<()> {
        match self {
            Bootstrap::Pmi(c) => Ok(c.put(key, value)?),
            Bootstrap::Singleton(m) => {
                m.insert(key.to_owned(), value.to_owned());
                Ok(())
            }
        }
    }

    /// Waits for every rank; earlier puts become visible.
    pub fn fence(&mut self) -> Result<()> {
        match self {
            Bootstrap::Pmi(c) => Ok(c.fence()?),
            Bootstrap::Singleton(_) => Ok(()),
        }
    }

    /// Reads a value published before the last fence.
    pub fn get(&mut self, key: &str) -> Result<Option<String>> {
        match self {
            Bootstrap::Pmi(c) => Ok(c.get(key)?),
            Bootstrap::Singleton(m) => Ok(m.get(key).cloned()),
        }
    }

    /// Host index of each rank, if the launcher publishes its placement.
    pub fn process_mapping(&mut self) -> Result<Option<Vec<u32>>> {
        match self {
            Bootstrap::Pmi(c) => Ok(c.process_mapping()?),
            Bootstrap::Singleton(_) => Ok(Some(vec![0])),
        }
    }

    /// Ends the job with `code`; a singleton just exits. Under Slurm, where a PMI abort can
    /// only give srun's status 137, every peer is first told to exit with `code` (see
    /// [`abort`](super::abort)); the launcher's abort remains the fallback.
    pub fn abort(&mut self, code: i32, message: &str) -> ! {
        match self {
            Bootstrap::Pmi(c) => {
                if super::abort::listening() {
                    c.announce_abort(code, message);
                    let failed = tell_peers(c, code);
                    if failed.is_empty() {
                        std::process::exit(code);
                    }
                    eprintln!(
                        "oxmpi: rank {} could not tell ranks {failed:?} to exit with code {code} \
                         within {:?}; ending the job through the launcher",
                        c.rank(),
                        super::abort::DEADLINE
                    );
                }
                if c.abort(code, message).is_ok() {
                    // The launcher prints the message and kills every rank, us included; give
                    // it time to do so.
                    std::thread::sleep(std::time::Duration::from_secs(10));
                }
            }
            Bootstrap::Singleton(_) if !message.is_empty() => eprintln!("oxmpi: {message}"),
            Bootstrap::Singleton(_) => {}
        }
        std::process::exit(code)
    }

    /// Leaves the job's key-value store. Idempotent.
    pub fn finalize(&mut self) -> Result<()> {
        match self {
            Bootstrap::Pmi(c) => Ok(c.finalize()?),
            Bootstrap::Singleton(_) => Ok(()),
        }
    }
}

/// Tells every other rank's abort listener to exit with `code`; returns the ranks that could
/// not be told (no card, no listener, no answer before the deadline).
fn tell_peers(c: &mut Client, code: i32) -> Vec<u32> {
    use super::abort;
    use super::card::{self, Card};
    let deadline = std::time::Instant::now() + abort::DEADLINE;
    let me = c.rank();
    let host = match c.get(&card::key(me)) {
        Ok(Some(text)) => Card::decode(&text).get("host").map(str::to_owned),
        _ => None,
    }
    .unwrap_or_else(super::processor_name);
    let mut targets = Vec::new();
    let mut failed = Vec::new();
    for peer in (0..c.size()).filter(|&p| p != me) {
        let found = match c.get(&card::key(peer)) {
            Ok(Some(text)) => abort::target(peer, &Card::decode(&text), &host),
            _ => None,
        };
        match found {
            Some(t) => targets.push(t),
            None => failed.push(peer),
        }
    }
    failed.extend(abort::notify(&targets, code, deadline));
    failed.sort_unstable();
    failed
}
