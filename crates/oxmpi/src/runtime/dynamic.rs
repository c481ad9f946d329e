//! Processes of other jobs (`MPI_Comm_spawn`): how a process names itself to another job,
//! what a spawned process learns from its parents at start-up, and the engine indices other
//! jobs' processes get.
//!
//! Every process has an identity, (job id, rank in its job). A job's id is the one its
//! spawner chose (a random 64-bit number, passed in the `oxmpi-spawn` preput key), or, for a
//! job started by the launcher, a hash of its PMI key-value space's name, which every rank of
//! the job sees alike. Processes of another job are reached over TCP (loopback on one host)
//! and get engine indices after the world's ranks, in the order they became known; the
//! handshake names both sides by identity ([`crate::transport::tcp`]).
//!
//! A spawn passes, in preput keys of the new job: `oxmpi-spawn` (the new job's id, the
//! context pair of the intercommunicator, the parents' count and root) and one
//! `oxmpi-parent-I` per parent (its [`ProcCard`]). A spawned process reads them in `init`,
//! registers its parents before the job's first fence, and its rank 0 sends every child's
//! card to the parents' root (see `crate::spawn`).

use super::card::Card;
use crate::error::{Error, ErrorClass, Result};
use crate::transport::tcp::Endpoint;

/// Preput key with the spawn's parameters.
pub const SPAWN_KEY: &str = "oxmpi-spawn";

/// Preput key of parent `i`'s card.
pub fn parent_key(i: usize) -> String {
    format!("oxmpi-parent-{i}")
}

/// Who a process is and where it listens, as another job needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcCard {
    /// Its job's id.
    pub job: u64,
    /// Its rank in that job.
    pub rank: u32,
    /// Where it accepts TCP connections.
    pub ep: Endpoint,
}

impl ProcCard {
    /// The card as one PMI value (fields `job`, `rank`, then the TCP endpoint's).
    pub fn encode(&self) -> String {
        let mut c = Card::new()
            .with("job", format!("{:x}", self.job))
            .with("rank", self.rank);
        for (k, v) in self.ep.fields() {
            c = c.with(k, v);
        }
        c.encode()
    }

    /// Parses [`encode`](Self::encode)'s text.
    pub fn decode(text: &str) -> Option<ProcCard> {
        let c = Card::decode(text);
        Some(ProcCard {
            job: u64::from_str_radix(c.get("job")?, 16).ok()?,
            rank: c.get("rank")?.parse().ok()?,
            ep: Endpoint::parse(c.get("tcp")?, c.get("tcptok")?)?,
        })
    }
}

/// The parameters of a spawn, as the `oxmpi-spawn` key carries them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpawnParams {
    /// The new job's id.
    pub job: u64,
    /// The intercommunicator's context pair (free in every parent; a fresh job has it free).
    pub pair: u32,
    /// Parents (the spawning communicator's size).
    pub parents: u32,
    /// The parents' root (rank in the spawning communicator).
    pub root: u32,
}

impl SpawnParams {
    /// The value of [`SPAWN_KEY`].
    pub fn encode(&self) -> String {
        Card::new()
            .with("job", format!("{:x}", self.job))
            .with("pair", self.pair)
            .with("parents", self.parents)
            .with("root", self.root)
            .encode()
    }

    /// Parses [`encode`](Self::encode)'s text.
    pub fn decode(text: &str) -> Option<SpawnParams> {
        let c = Card::decode(text);
        let p = SpawnParams {
            job: u64::from_str_radix(c.get("job")?, 16).ok()?,
            pair: c.get("pair")?.parse().ok()?,
            parents: c.get("parents")?.parse().ok()?,
            root: c.get("root")?.parse().ok()?,
        };
        (p.root < p.parents).then_some(p)
    }
}

/// What a spawned process knows of its parents once `init` registered them.
#[derive(Debug, Clone)]
pub struct Parent {
    /// The spawn's parameters.
    pub params: SpawnParams,
    /// Engine index of each parent, in the spawning communicator's rank order.
    pub indices: Vec<u32>,
}

/// What this process knows of jobs (kept out of [`Runtime`](super::Runtime), whose layout
/// holds the engine; one per process, like the runtime).
#[derive(Debug)]
pub struct JobState {
    /// This job's id.
    pub job: u64,
    /// The parents, if an oxmpi job spawned this one.
    pub parent: Option<Parent>,
    /// Identity (job id, rank) of each process of another job, by engine index minus the
    /// world's size.
    pub foreign: std::sync::Mutex<Vec<(u64, u32)>>,
}

impl JobState {
    /// The identities of other jobs' processes.
    pub fn foreign(&self) -> std::sync::MutexGuard<'_, Vec<(u64, u32)>> {
        self.foreign.lock().unwrap_or_else(|p| p.into_inner())
    }
}

static STATE: std::sync::OnceLock<JobState> = std::sync::OnceLock::new();

/// Records this process's job state (once, at init).
pub fn set_state(s: JobState) {
    let _ = STATE.set(s);
}

/// This process's job state; before init, a job of its own with no other.
pub fn state() -> &'static JobState {
    STATE.get_or_init(|| JobState {
        job: random_job_id(),
        parent: None,
        foreign: std::sync::Mutex::new(Vec::new()),
    })
}

/// A job's id from its key-value space's name (FNV-1a): the same in every rank of the job.
pub fn job_id_of(kvsname: &str) -> u64 {
    kvsname.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// A new job's id.
pub fn random_job_id() -> u64 {
    let mut b = [0u8; 8];
    if getrandom::getrandom(&mut b).is_err() {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        b = (t ^ u64::from(std::process::id()).rotate_left(32)).to_le_bytes();
    }
    u64::from_le_bytes(b)
}

/// Reads a spawned process's preput keys through `get`: `None` if its spawner was not
/// oxmpi (no `oxmpi-spawn` key), else the parameters and every parent's card.
pub fn read_parent(
    mut get: impl FnMut(&str) -> Result<Option<String>>,
) -> Result<Option<(SpawnParams, Vec<ProcCard>)>> {
    let Some(text) = get(SPAWN_KEY)? else {
        return Ok(None);
    };
    let bad = |what: String| {
        Error::new(
            ErrorClass::Spawn,
            format!("spawned process: the parents' {what} is malformed"),
        )
    };
    let params = SpawnParams::decode(&text).ok_or_else(|| bad(format!("{SPAWN_KEY} {text:?}")))?;
    let cards = (0..params.parents as usize)
        .map(|i| {
            let key = parent_key(i);
            get(&key)?
                .as_deref()
                .and_then(ProcCard::decode)
                .ok_or_else(|| bad(key))
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Some((params, cards)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    fn card(job: u64, rank: u32) -> ProcCard {
        ProcCard {
            job,
            rank,
            ep: Endpoint {
                addrs: vec![Ipv4Addr::LOCALHOST, Ipv4Addr::new(10, 0, 0, 7)],
                port: 40123,
                token: [0xa5; 16],
            },
        }
    }

    #[test]
    fn cards_and_params_round_trip_and_bad_ones_are_refused() {
        let c = card(u64::MAX - 3, 17);
        assert_eq!(ProcCard::decode(&c.encode()), Some(c));
        assert_eq!(
            ProcCard::decode("job=zz;rank=1;tcp=1,127.0.0.1;tcptok=00"),
            None
        );
        assert_eq!(ProcCard::decode("rank=1"), None);
        let p = SpawnParams {
            job: 0x1234,
            pair: 5,
            parents: 3,
            root: 2,
        };
        assert_eq!(SpawnParams::decode(&p.encode()), Some(p));
        assert_eq!(
            SpawnParams::decode(&SpawnParams { root: 3, ..p }.encode()),
            None
        );
        assert_eq!(SpawnParams::decode("job=1"), None);
    }

    #[test]
    fn a_spawned_process_reads_its_parents_or_knows_it_has_none() {
        let p = SpawnParams {
            job: 9,
            pair: 4,
            parents: 2,
            root: 1,
        };
        let mut keys = std::collections::HashMap::new();
        assert!(read_parent(|k| Ok(keys.get(k).cloned())).unwrap().is_none());
        keys.insert(SPAWN_KEY.to_string(), p.encode());
        keys.insert(parent_key(0), card(1, 0).encode());
        let missing = read_parent(|k| Ok(keys.get(k).cloned())).unwrap_err();
        assert_eq!(missing.class(), ErrorClass::Spawn);
        keys.insert(parent_key(1), card(1, 1).encode());
        let (got, cards) = read_parent(|k| Ok(keys.get(k).cloned())).unwrap().unwrap();
        assert_eq!(got, p);
        assert_eq!(cards, vec![card(1, 0), card(1, 1)]);
    }

    #[test]
    fn job_ids_follow_the_name() {
        assert_eq!(job_id_of("kvs_1_0"), job_id_of("kvs_1_0"));
        assert_ne!(job_id_of("kvs_1_0"), job_id_of("kvs_1_1"));
        assert_ne!(random_job_id(), random_job_id());
    }
}
