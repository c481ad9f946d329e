//! Starting processes (`MPI_Comm_spawn`, `MPI_Comm_spawn_multiple`) and the parents of a
//! spawned process (`MPI_Comm_get_parent`).
//!
//! A spawn is collective over the spawning communicator. Its members first learn the new
//! job's id and size from the root, give the new processes engine indices (reached over TCP,
//! created now if the job had none) and gather their cards at the root, agree on two
//! context pairs (the intercommunicator's and their local group's), and only then does the
//! root ask the launcher (PMI `spawn`) for the processes, with the cards and the context pair
//! in preput keys: so every parent already knows every child by the time one can connect.
//! A spawned process reads those keys in `init` ([`crate::runtime::dynamic`]), registers its
//! parents before its job's first fence, and its rank 0 sends every child's card (read from
//! its job's key-value space) to the parents' root, who passes them on to the others before
//! the spawn returns. The intercommunicator's context pair is free in a fresh job; the
//! children pick their local pair among themselves.
//!
//! # Standard sections
//! MPI-5.0 §11.8.2 (starting processes), §11.8.3 (the parent).

use std::sync::{Arc, OnceLock};

use crate::comm::{claim, release, Comm, CommState, InterCommunicator};
use crate::error::{Error, ErrorClass, Result};
use crate::runtime::dynamic::{self, ProcCard, SpawnParams};
use crate::runtime::Runtime;
use crate::threading::{Multiple, ThreadLevel};
use crate::Communicator;

pub use oxmpi_pmi::spawn::SpawnCommand;

/// Tag of the children's cards on the new intercommunicator: the first message from the
/// children's rank 0, sent before any of theirs can be.
const CARDS_TAG: i32 = 0x5a4e_c0de;
/// Bytes per card in the gathered and broadcast lists (a 2-byte length, then the text).
const SLOT: usize = 512;

/// The parent intercommunicator of this process, made at `init`.
static PARENT: OnceLock<Option<Comm>> = OnceLock::new();

fn spawn_error(message: impl Into<String>) -> Error {
    Error::new(ErrorClass::Spawn, message)
}

/// `card` in a slot (empty when this process has none).
fn to_slot(card: Option<&ProcCard>) -> Result<[u8; SLOT]> {
    let mut s = [0u8; SLOT];
    if let Some(c) = card {
        let text = c.encode();
        if text.len() > SLOT - 2 {
            return Err(Error::new(
                ErrorClass::Intern,
                format!("spawn: a card of {} bytes exceeds {SLOT}", text.len()),
            ));
        }
        s[..2].copy_from_slice(&(text.len() as u16).to_le_bytes());
        s[2..2 + text.len()].copy_from_slice(text.as_bytes());
    }
    Ok(s)
}

fn from_slot(s: &[u8]) -> Option<ProcCard> {
    let n = u16::from_le_bytes([s[0], s[1]]) as usize;
    ProcCard::decode(std::str::from_utf8(s.get(2..2 + n)?).ok()?)
}

/// Checks a spawn's commands (the root's arguments): at least one, each with a program and
/// at least one process; the total.
fn check_commands(commands: &[SpawnCommand]) -> Result<u32> {
    if commands.is_empty() {
        return Err(Error::new(ErrorClass::Arg, "spawn: no command"));
    }
    let mut total = 0u32;
    for c in commands {
        if c.execname.is_empty() {
            return Err(Error::new(ErrorClass::Arg, "spawn: a command is empty"));
        }
        if c.nprocs == 0 {
            return Err(Error::new(
                ErrorClass::Arg,
                format!(
                    "spawn: {:?} asks for no process (maxprocs must be positive)",
                    c.execname
                ),
            ));
        }
        total = total
            .checked_add(c.nprocs)
            .filter(|&t| t <= oxmpi_pmi::spawn::MAX_SPAWN_PROCS)
            .ok_or_else(|| {
                Error::new(
                    ErrorClass::Arg,
                    format!(
                        "spawn: more than {} processes",
                        oxmpi_pmi::spawn::MAX_SPAWN_PROCS
                    ),
                )
            })?;
    }
    Ok(total)
}

impl Comm {
    /// `MPI_Comm_spawn_multiple` over this communicator: `commands` are significant at
    /// `root` only. Returns the intercommunicator to the new processes, or the same error
    /// class at every member (the root's own error there).
    pub(crate) fn spawn(&self, root: i32, commands: &[SpawnCommand]) -> Result<Comm> {
        self.intra_only("spawn")?;
        let size = self.state.members.len() as i32;
        if root < 0 || root >= size {
            return Err(Error::new(
                ErrorClass::Root,
                format!("spawn: root {root} is not a rank (size {size})"),
            ));
        }
        let v = self.view();
        let at_root = self.state.rank as i32 == root;
        // The root's verdict on its arguments, the new job's id and size.
        let mut local = Ok(0);
        let mut head = [0u64; 3];
        if at_root {
            local = check_commands(commands);
            head = match &local {
                Ok(total) => [1, dynamic::random_job_id(), u64::from(*total)],
                Err(_) => [0, 0, 0],
            };
        }
        v.broadcast_into(root, &mut head[..])?;
        if head[0] == 0 {
            local?;
            return Err(spawn_error("spawn: the root's arguments are invalid"));
        }
        let (job, total) = (head[1], head[2] as u32);
        // Every member knows the children before any exists.
        let card = self.rt.proc_card();
        let indices = match &card {
            Ok(_) => self
                .rt
                .add_foreign(&(0..total).map(|r| (job, r, None)).collect::<Vec<_>>()),
            Err(_) => Vec::new(),
        };
        let mine = to_slot(card.as_ref().ok())?;
        let mut all = vec![0u8; SLOT * size as usize];
        v.all_gather_into(&mine[..], &mut all[..])?;
        let cards: Vec<Option<ProcCard>> = all.chunks(SLOT).map(from_slot).collect();
        if cards.iter().any(Option::is_none) {
            card?;
            return Err(spawn_error(
                "spawn: a member could not listen for the new processes (TCP)",
            ));
        }
        let pairs = self.agree_pairs("spawn", 2)?;
        let give_back = || pairs.iter().for_each(|&k| release(k));
        let mut started = [0u8];
        let mut outcome = Ok(());
        if at_root {
            let params = SpawnParams {
                job,
                pair: pairs[0],
                parents: size as u32,
                root: root as u32,
            };
            let mut preput = vec![(dynamic::SPAWN_KEY.to_string(), params.encode())];
            for (i, c) in cards.iter().enumerate() {
                preput.push((
                    dynamic::parent_key(i),
                    c.as_ref().expect("checked").encode(),
                ));
            }
            let req = oxmpi_pmi::spawn::SpawnRequest {
                commands: commands.to_vec(),
                preput,
            };
            outcome = self.rt.spawn_job(&req);
            started[0] = outcome.is_ok() as u8;
        }
        v.broadcast_into(root, &mut started[..])?;
        if started[0] == 0 {
            give_back();
            outcome?;
            return Err(spawn_error(
                "spawn: the launcher did not start the processes",
            ));
        }
        let inter = CommState::inter(
            pairs[0],
            pairs[1],
            self.state.rank,
            self.state.members.clone(),
            indices.clone(),
        );
        let inter = InterCommunicator::<Multiple>::from_state(self.rt.clone(), inter);
        // The children's cards, from their rank 0 to our root, then to every member.
        let mut theirs = vec![0u8; SLOT * total as usize];
        if at_root {
            inter.receive_into(&mut theirs[..], 0, CARDS_TAG)?;
        }
        v.broadcast_into(root, &mut theirs[..])?;
        let eps = theirs
            .chunks(SLOT)
            .enumerate()
            .map(|(r, s)| match from_slot(s) {
                Some(c) if c.job == job && c.rank == r as u32 => Ok(c.ep),
                _ => Err(spawn_error(format!(
                    "spawn: new process {r} sent no valid card"
                ))),
            })
            .collect::<Result<Vec<_>>>()?;
        self.rt.set_endpoints(&indices, eps);
        Ok(Comm {
            rt: inter.rt,
            state: inter.state,
        })
    }
}

/// At `init` of a process an oxmpi job spawned: builds the intercommunicator to the parents
/// and, at rank 0, sends the parents' root every child's card. Collective over the new job.
/// Does nothing in other processes.
pub(crate) fn connect_parent(rt: &Arc<Runtime>) -> Result<()> {
    let Some(p) = rt.parent().cloned() else {
        let _ = PARENT.set(None);
        return Ok(());
    };
    if !claim(p.params.pair) {
        return Err(Error::new(
            ErrorClass::Intern,
            format!(
                "spawned process: the parents' context pair {} is taken",
                p.params.pair
            ),
        ));
    }
    let world = Comm::world(rt.clone());
    let local = match world.agree_pairs("spawn", 1) {
        Ok(k) => k,
        Err(e) => {
            release(p.params.pair);
            return Err(e);
        }
    };
    let st = CommState::inter(
        p.params.pair,
        local[0],
        rt.rank,
        (0..rt.size).collect(),
        p.indices.clone(),
    );
    let inter = InterCommunicator::<Multiple>::from_state(rt.clone(), st);
    if rt.rank == 0 {
        let mut all = Vec::with_capacity(SLOT * rt.size as usize);
        for c in rt.job_cards()? {
            all.extend_from_slice(&to_slot(Some(&c))?);
        }
        inter.send(&all[..], p.params.root as i32, CARDS_TAG)?;
    }
    let _ = PARENT.set(Some(Comm {
        rt: inter.rt,
        state: inter.state,
    }));
    Ok(())
}

/// The parent intercommunicator (`MPI_Comm_get_parent`), if an oxmpi job spawned this
/// process.
pub(crate) fn parent() -> Option<Comm> {
    PARENT.get().cloned().flatten()
}

impl<L: ThreadLevel> Communicator<L> {
    /// Starts the processes `commands` name as a new job (`MPI_Comm_spawn_multiple`; one
    /// command is `MPI_Comm_spawn`) and returns an intercommunicator whose remote group is
    /// the new job's `MPI_COMM_WORLD`, in command order. Collective; `commands` are
    /// significant at `root` only. Info keys the launcher honours: `wdir`, `host` (oxrun:
    /// this host only). Fails with [`ErrorClass::Spawn`] when the launcher starts nothing
    /// (a program that does not exist, no launcher), [`ErrorClass::Arg`] for no command or
    /// a command asking for no process.
    pub fn spawn(&self, root: i32, commands: &[SpawnCommand]) -> Result<InterCommunicator<L>> {
        let c = Comm {
            rt: self.rt.clone(),
            state: self.state.clone(),
        };
        let inter = c.spawn(root, commands)?;
        Ok(InterCommunicator::from_arc(inter.rt, inter.state))
    }
}

impl<L: ThreadLevel> crate::Universe<L> {
    /// The intercommunicator to the processes that spawned this one
    /// (`MPI_Comm_get_parent`), or `None` if it was not spawned by an oxmpi job.
    pub fn parent(&self) -> Option<InterCommunicator<L>> {
        parent().map(|c| InterCommunicator::from_arc(c.rt, c.state))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cmd(name: &str, n: u32) -> SpawnCommand {
        SpawnCommand {
            execname: name.into(),
            nprocs: n,
            args: vec![],
            info: vec![],
        }
    }

    #[test]
    fn commands_are_checked_at_the_root() {
        assert_eq!(check_commands(&[cmd("a", 2), cmd("b", 3)]).unwrap(), 5);
        for bad in [
            vec![],
            vec![cmd("a", 0)],
            vec![cmd("", 1)],
            vec![cmd("a", u32::MAX)],
        ] {
            assert_eq!(check_commands(&bad).unwrap_err().class(), ErrorClass::Arg);
        }
    }

    #[test]
    fn cards_fit_slots_and_empty_slots_read_as_none() {
        let c = ProcCard {
            job: 77,
            rank: 3,
            ep: crate::transport::tcp::Endpoint {
                addrs: vec![std::net::Ipv4Addr::LOCALHOST],
                port: 5000,
                token: [1; 16],
            },
        };
        assert_eq!(from_slot(&to_slot(Some(&c)).unwrap()), Some(c));
        assert_eq!(from_slot(&to_slot(None).unwrap()), None);
    }
}
