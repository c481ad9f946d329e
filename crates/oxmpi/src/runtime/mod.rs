//! Process start-up and shutdown: the layer under everything else.
//!
//! `init` connects to the launcher ([`bootstrap`]), learns placement ([`locality`]), publishes
//! this rank's business card ([`card`]) and fences once, so every card is readable afterwards.
//! Peers' cards are fetched lazily, when a transport first connects to them.

pub mod abort;
pub mod bootstrap;
pub mod card;
pub mod dynamic;
pub mod locality;

use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};

use crate::config::Config;
use crate::error::{Error, ErrorClass, Result};
use crate::p2p::engine::Engine;
use crate::p2p::progress::{Backoff, EngineCell};
use crate::threading::Threading;
use crate::transport::shm::{ShmConfig, ShmTransport};
use crate::transport::tcp::{Endpoint, Resolver, TcpConfig, TcpTransport};
use bootstrap::Bootstrap;
use card::Card;
use locality::Locality;

const NEVER: u8 = 0;
const ACTIVE: u8 = 1;
const FINALIZED: u8 = 2;

/// MPI allows one initialization per process, and none after finalize.
static STATE: AtomicU8 = AtomicU8::new(NEVER);

/// Whether this host runs more of the job's ranks than it has cores (set at init).
static OVERSUBSCRIBED: AtomicBool = AtomicBool::new(false);

/// Whether this host runs more of the job's ranks than it has cores: waits then yield almost
/// at once, and the shared-memory collectives that need every member scheduled at the same
/// time start at larger sizes. Every rank of a host gives the same answer.
pub(crate) fn oversubscribed() -> bool {
    OVERSUBSCRIBED.load(Ordering::Relaxed)
}

/// Whether MPI is initialized and not yet finalized in this process.
pub fn is_initialized() -> bool {
    STATE.load(Ordering::Acquire) == ACTIVE
}

/// Whether MPI has been finalized in this process.
// Inlined: the C ABI checks it on every call, from another crate.
#[inline]
pub fn is_finalized() -> bool {
    STATE.load(Ordering::Acquire) == FINALIZED
}

/// Process-wide MPI state, shared by every handle.
#[derive(Debug)]
pub struct Runtime {
    /// Rank in the job (`MPI_COMM_WORLD`).
    pub rank: u32,
    /// Ranks in the job.
    pub size: u32,
    /// MPMD application index.
    pub appnum: i32,
    /// The launcher's MPMD index if it gave one (`MPI_APPNUM` is undefined otherwise).
    pub appnum_attr: Option<i32>,
    /// Granted thread level.
    pub level: Threading,
    /// Tunables.
    /// How blocking calls wait.
    pub wait: crate::p2p::progress::WaitPolicy,
    /// Which ranks share a host.
    pub locality: Locality,
    /// Host grouping collectives plan with: `locality`, unless `OXMPI_HOST_OVERRIDE` pretends
    /// ranks sit on other hosts (tests of node-aware algorithms on one machine). Transports
    /// always follow the real placement.
    pub coll_locality: Locality,
    /// Whether `coll_locality` puts every rank on one host (computed once: collectives ask
    /// on every call).
    pub coll_single_host: bool,
    /// The point-to-point engine.
    pub engine: EngineCell,
    bootstrap: Arc<Mutex<Bootstrap>>,
}

impl Runtime {
    /// Initializes MPI for this process. Fails if it was initialized before.
    pub fn init(level: Threading) -> Result<Runtime> {
        if STATE
            .compare_exchange(NEVER, ACTIVE, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return Err(Error::new(
                ErrorClass::Other,
                "init: MPI was already initialized in this process (MPI allows it once)",
            ));
        }
        Runtime::start(level).inspect_err(|_| STATE.store(FINALIZED, Ordering::Release))
    }

    fn start(level: Threading) -> Result<Runtime> {
        let config = Config::from_env()?;
        let mut bootstrap = Bootstrap::from_env()?;
        let (rank, size) = (bootstrap.rank(), bootstrap.size());
        let jobkey = oxmpi_pmi::launch::jobkey_from_env().unwrap_or_else(random_key);

        let locality = match bootstrap.process_mapping()? {
            Some(nodes) => Locality::new(nodes),
            None => Locality::single_host(size),
        };
        // A process spawned by an oxmpi job learns its job id and its parents from preput keys.
        let spawn = match &mut bootstrap {
            Bootstrap::Pmi(c) if oxmpi_pmi::Client::spawned() => {
                dynamic::read_parent(|k| Ok(c.get(k)?))?
            }
            _ => None,
        };
        let job = match (&spawn, &bootstrap) {
            (Some((p, _)), _) => p.job,
            (None, Bootstrap::Pmi(c)) => dynamic::job_id_of(c.kvsname()),
            (None, Bootstrap::Singleton(_)) => dynamic::random_job_id(),
        };
        let coll_locality = if config.host_override.is_empty() {
            locality.clone()
        } else {
            Locality::parse_override(&config.host_override, size)?
        };
        let bootstrap = Arc::new(Mutex::new(bootstrap));

        let force_tcp = match config.transport.as_str() {
            "auto" | "" => false,
            "tcp" => true,
            other => {
                return Err(Error::new(
                    ErrorClass::Arg,
                    format!("OXMPI_TRANSPORT={other:?} is not auto or tcp"),
                ))
            }
        };
        let local = locality.local_ranks(rank);
        let shm_peers: Vec<u32> = if force_tcp {
            Vec::new()
        } else {
            local.iter().copied().filter(|&r| r != rank).collect()
        };
        // Every other rank that shared memory does not reach: other hosts, or all when forced.
        let tcp_peers: Vec<u32> = (0..size)
            .filter(|&r| r != rank && !shm_peers.contains(&r))
            .collect();
        // Spawned processes reach their parents over TCP, whatever their own job needs.
        let tcp = if tcp_peers.is_empty() && spawn.is_none() {
            None
        } else {
            let cards = bootstrap.clone();
            let resolve: Resolver = Box::new(move |peer: u32| -> Result<Endpoint> {
                let text = lock(&cards).get(&card::key(peer))?.unwrap_or_default();
                let card = Card::decode(&text);
                card.get("tcp")
                    .zip(card.get("tcptok"))
                    .and_then(|(addrs, token)| Endpoint::parse(addrs, token))
                    .ok_or_else(|| {
                        Error::new(
                            ErrorClass::Intern,
                            format!("rank {peer} published no TCP endpoint"),
                        )
                    })
            });
            let all_local = tcp_peers
                .iter()
                .all(|&p| locality.host_of(p) == locality.host_of(rank))
                && spawn.as_ref().is_none_or(|(_, cards)| {
                    cards
                        .iter()
                        .all(|c| c.ep.addrs.iter().all(|a| a.is_loopback()))
                });
            let mut t = TcpTransport::create(
                rank,
                size,
                TcpConfig::from_config(&config)?,
                &tcp_peers,
                resolve,
                !shm_peers.is_empty(),
                all_local,
            )?;
            t.set_job(job);
            Some(t)
        };
        let shm = if !shm_peers.is_empty() {
            let path = format!(
                "{}/{}{rank}.{}",
                oxmpi_pmi::launch::SHM_DIR,
                oxmpi_pmi::launch::shm_prefix(&jobkey),
                &random_key()[..8]
            );
            let cards = bootstrap.clone();
            let resolve = Box::new(move |peer: u32| -> Result<String> {
                let text = lock(&cards).get(&card::key(peer))?.unwrap_or_default();
                Card::decode(&text)
                    .get("shm")
                    .map(str::to_owned)
                    .ok_or_else(|| {
                        Error::new(
                            ErrorClass::Intern,
                            format!("rank {peer} published no shared-memory segment"),
                        )
                    })
            });
            Some(ShmTransport::create(
                rank,
                size,
                &path,
                ShmConfig::from_config(&config),
                shm_peers.clone(),
                resolve,
            )?)
        } else {
            None
        };

        let mut card = Card::new()
            .with("host", processor_name())
            .with("pid", std::process::id());
        if let Some(s) = &shm {
            card = card.with("shm", s.address());
        }
        if let Some(t) = &tcp {
            for (k, v) in t.endpoint().fields() {
                card = card.with(k, v);
            }
        }
        // Under Slurm an abort's code reaches srun only if every rank exits with it.
        let slurm_task = matches!(&*lock(&bootstrap), Bootstrap::Pmi(c) if !c.under_oxrun())
            && abort::in_slurm_step();
        if slurm_task {
            if let Ok(l) = abort::Listener::start() {
                card = l.publish(card);
            }
        }
        {
            let mut b = lock(&bootstrap);
            b.put(&card::key(rank), &card.encode())?;
            b.fence()?;
        }

        // Cores of the host, not of our affinity mask: a rank bound to one core is not
        // oversubscribed when every other rank has a core of its own.
        // SAFETY: sysconf reads a system constant.
        let online = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
        let cores = usize::try_from(online).unwrap_or(1).max(1);
        OVERSUBSCRIBED.store(local.len() > cores, Ordering::Relaxed);
        let wait = crate::p2p::progress::WaitPolicy::new(
            config.spin_count,
            config.yield_count,
            config.yield_sleep_us,
            local.len(),
            cores,
        );
        let iov_policy =
            (shm.is_some() && config.single_copy).then_some(crate::p2p::iov::IovPolicy {
                min_len: config.eager_limit + 1,
                packed_sends: config.push_min..config.single_copy_min,
                min_block: config.ddt_iov_min_block as u64,
            });
        let mut engine = Engine::new(rank, size, shm, &shm_peers);
        engine.set_iov_policy(iov_policy);
        engine.set_ddt_direct(
            config.ddt_direct_min,
            config.eager_limit.max(config.tcp_eager_limit),
        );
        let mut wakeup = None;
        if let Some(t) = tcp {
            wakeup = crate::transport::Transport::wakeup(&t);
            engine.add_tcp(t, &tcp_peers);
        }
        let mut foreign = Vec::new();
        let parent = spawn.map(|(params, cards)| {
            let ids: Vec<_> = cards
                .into_iter()
                .map(|c| (c.job, c.rank, Some(c.ep)))
                .collect();
            let indices = register(&mut engine, &ids);
            foreign.extend(ids.iter().map(|&(j, r, _)| (j, r)));
            dynamic::Parent { params, indices }
        });
        dynamic::set_state(dynamic::JobState {
            job,
            parent,
            foreign: Mutex::new(foreign),
        });
        // Waiting blocks on the sockets (data wakes it) rather than sleeping blind.
        let wait = wait.with_wakeup(wakeup, shm_peers.is_empty(), config.tcp_spin_count);
        let on_fault = bootstrap.clone();
        engine.set_abort_hook(Box::new(move |msg| lock(&on_fault).abort(1, msg)));
        let engine = EngineCell::new(engine, level.needs_lock());
        let appnum = lock(&bootstrap).appnum();
        let appnum_attr = match &*lock(&bootstrap) {
            Bootstrap::Pmi(c) => Some(c.appnum()).filter(|&a| a >= 0),
            Bootstrap::Singleton(_) => None,
        };

        Ok(Runtime {
            rank,
            size,
            appnum,
            appnum_attr,
            level,
            wait,
            locality,
            coll_single_host: coll_locality.host_count() == 1,
            coll_locality,
            engine,
            bootstrap,
        })
    }

    /// This job's id: how processes of other jobs name ours ([`dynamic`]).
    pub fn job(&self) -> u64 {
        dynamic::state().job
    }

    /// The parents, if an oxmpi job spawned this one (`MPI_Comm_get_parent`).
    pub fn parent(&self) -> Option<&'static dynamic::Parent> {
        dynamic::state().parent.as_ref()
    }

    /// Creates the TCP transport if this process has none yet (an all-shared-memory job that
    /// spawns), and returns this process's card for another job.
    pub fn proc_card(&self) -> Result<dynamic::ProcCard> {
        let ep = self.engine.with(|e| -> Result<_> {
            if let Some(t) = e.tcp_mut() {
                return Ok(t.endpoint());
            }
            let config = Config::from_env()?;
            // Only processes of other jobs are added to it, with their endpoints.
            let resolve: Resolver = Box::new(|p| {
                Err(Error::new(
                    ErrorClass::Intern,
                    format!("rank {p} of the job is not reached over TCP"),
                ))
            });
            // The launcher spawns on its own host when the job is on one.
            let loopback = self.locality.host_count() == 1
                && matches!(&*self.bootstrap(), Bootstrap::Pmi(c) if c.under_oxrun());
            let mut t = TcpTransport::create(
                self.rank,
                self.size,
                TcpConfig::from_config(&config)?,
                &[],
                resolve,
                e.shm().is_some(),
                loopback,
            )?;
            t.set_job(self.job());
            let ep = t.endpoint();
            e.add_tcp(t, &[]);
            Ok(ep)
        })?;
        Ok(dynamic::ProcCard {
            job: self.job(),
            rank: self.rank,
            ep,
        })
    }

    /// Gives engine indices (after every process known so far) to processes of other jobs,
    /// named by (job id, rank) and reached at their endpoints if known (else
    /// [`set_endpoints`](Self::set_endpoints) later). Needs the TCP transport
    /// ([`proc_card`](Self::proc_card) creates it).
    pub fn add_foreign(&self, ids: &[(u64, u32, Option<Endpoint>)]) -> Vec<u32> {
        let mut known = dynamic::state().foreign();
        let indices = self.engine.with(|e| register(e, ids));
        known.extend(ids.iter().map(|&(j, r, _)| (j, r)));
        indices
    }

    /// The endpoints of processes [`add_foreign`](Self::add_foreign) added without one.
    pub fn set_endpoints(&self, indices: &[u32], eps: Vec<Endpoint>) {
        self.engine.with(|e| {
            if let Some(t) = e.tcp_mut() {
                for (&i, ep) in indices.iter().zip(eps) {
                    t.set_endpoint(i, ep);
                }
            }
        });
    }

    /// The identity (job id, rank in its job) of the process at engine index `index`.
    pub fn identity(&self, index: u32) -> (u64, u32) {
        if index < self.size {
            return (self.job(), index);
        }
        let known = dynamic::state().foreign();
        known
            .get((index - self.size) as usize)
            .copied()
            .unwrap_or((u64::MAX, index))
    }

    /// Asks the launcher to start `req` as a new job (PMI `spawn`).
    pub fn spawn_job(&self, req: &oxmpi_pmi::spawn::SpawnRequest) -> Result<()> {
        match &mut *self.bootstrap() {
            Bootstrap::Pmi(c) => c.spawn(req).map_err(|e| {
                Error::new(
                    ErrorClass::Spawn,
                    format!("the launcher did not start the processes: {e}"),
                )
            }),
            Bootstrap::Singleton(_) => Err(Error::new(
                ErrorClass::Spawn,
                "this process was started without a launcher, which alone can start processes",
            )),
        }
    }

    /// The cards of every rank of this job (after init's fence), for another job.
    pub fn job_cards(&self) -> Result<Vec<dynamic::ProcCard>> {
        let mut b = self.bootstrap();
        (0..self.size)
            .map(|r| {
                let text = b.get(&card::key(r))?.unwrap_or_default();
                let c = Card::decode(&text);
                let ep = c
                    .get("tcp")
                    .zip(c.get("tcptok"))
                    .and_then(|(a, t)| Endpoint::parse(a, t))
                    .ok_or_else(|| {
                        Error::new(
                            ErrorClass::Intern,
                            format!("rank {r} published no TCP endpoint"),
                        )
                    })?;
                Ok(dynamic::ProcCard {
                    job: self.job(),
                    rank: r,
                    ep,
                })
            })
            .collect()
    }

    fn bootstrap(&self) -> std::sync::MutexGuard<'_, Bootstrap> {
        lock(&self.bootstrap)
    }

    /// Ends the whole job with `code`; does not return.
    pub fn abort(&self, code: i32, message: &str) -> ! {
        self.bootstrap().abort(code, message)
    }

    /// Collective shutdown: waits for every rank, then leaves the launcher's store.
    pub fn finalize(&self) -> Result<()> {
        if STATE
            .compare_exchange(ACTIVE, FINALIZED, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return Err(Error::new(
                ErrorClass::Other,
                "finalize: MPI is not initialized",
            ));
        }
        // Control fragments (FIN, ACK, CTS) still queued must reach their peers, who may be
        // waiting on them, before we stop progressing.
        let mut backoff = Backoff::new(self.wait);
        while self.engine.with(|e| {
            e.enter("finalize");
            e.progress();
            e.has_outgoing() || e.bsend_busy()
        }) {
            backoff.snooze();
        }
        // Finalize detaches the buffered-send buffer (MPI-5.0 §3.6.1); one the Rust API
        // attached is ours to free.
        let process = crate::p2p::bsend::BufferScope::Process;
        if let Ok(crate::p2p::bsend::Space::Region(region)) =
            self.engine.with(|e| e.buffer_detach(&process))
        {
            if region.boxed {
                // SAFETY: `boxed` regions come only from `Box::into_raw` in
                // `environment::attach_boxed`; detach returned it, so it is unreferenced.
                drop(unsafe {
                    Box::from_raw(std::ptr::slice_from_raw_parts_mut(region.ptr, region.len))
                });
            }
        }
        let mut b = self.bootstrap();
        b.fence()?;
        self.engine.with(|e| {
            e.unlink_shm();
            e.close_transports();
        });
        b.finalize()
    }
}

/// Registers processes of other jobs with the engine and its TCP transport; their indices.
fn register(e: &mut Engine, ids: &[(u64, u32, Option<Endpoint>)]) -> Vec<u32> {
    let base = e.add_foreign(ids.len() as u32);
    let indices: Vec<u32> = (base..base + ids.len() as u32).collect();
    if let Some(t) = e.tcp_mut() {
        for (&i, (job, rank, ep)) in indices.iter().zip(ids) {
            t.add_foreign(i, (*job, *rank), ep.clone());
        }
    }
    e.route_over_tcp(&indices);
    indices
}

/// This host's name (`MPI_Get_processor_name`).
pub fn processor_name() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: gethostname writes at most `buf.len()` bytes into the valid buffer.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc != 0 {
        return "localhost".into();
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

/// Locks the PMI connection. A panic while holding it leaves it usable: the protocol is
/// request/reply and no request is half sent after `write_all` returned.
fn lock(b: &Mutex<Bootstrap>) -> std::sync::MutexGuard<'_, Bootstrap> {
    b.lock().unwrap_or_else(|p| p.into_inner())
}

/// A random 16-hex-digit key for a job whose launcher did not give one.
fn random_key() -> String {
    let mut bytes = [0u8; 8];
    // Without randomness we still need distinct names; pid and time make collisions unlikely
    // enough for file names that are opened with O_EXCL anyway.
    if getrandom::getrandom(&mut bytes).is_err() {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        bytes = (t ^ ((std::process::id() as u64) << 32)).to_le_bytes();
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_keys_are_valid_jobkeys() {
        let a = random_key();
        assert!(oxmpi_pmi::launch::valid_jobkey(&a), "{a}");
        assert_ne!(a, random_key());
    }
}
