//! Entering and leaving MPI, and facts about the process: the [`Universe`], clocks, host name.
//!
//! # Standard sections
//! MPI-5.0 §11.2 (initialization), §11.6 (timers), §9.1 (processor name).

use std::sync::{Arc, OnceLock};
use std::time::Instant;

use crate::comm::Communicator;
use crate::error::{Error, ErrorClass, Result};
use crate::runtime::Runtime;
use crate::threading::{Single, ThreadLevel, Threading};

/// MPI, initialized. Dropping it finalizes MPI (a collective over all ranks).
#[derive(Debug)]
pub struct Universe<L: ThreadLevel = Single> {
    rt: Arc<Runtime>,
    finalized: bool,
    _level: L::Marker,
}

/// Initializes MPI at [`Threading::Single`]. Errors if MPI was initialized before in this
/// process or the launcher cannot be reached.
pub fn init() -> Result<Universe<Single>> {
    init_with::<Single>()
}

/// Initializes MPI at the thread level `L` ([`Single`],
/// [`Funneled`](crate::Funneled), [`Serialized`](crate::Serialized),
/// [`Multiple`](crate::Multiple)); the handles it returns are `Send`/`Sync` accordingly.
pub fn init_with<L: ThreadLevel>() -> Result<Universe<L>> {
    let rt = Arc::new(Runtime::init(L::LEVEL)?);
    crate::handle::env::adopt(&rt);
    crate::spawn::connect_parent(&rt)?;
    Ok(Universe {
        rt,
        finalized: false,
        _level: L::Marker::default(),
    })
}

impl<L: ThreadLevel> Universe<L> {
    /// All ranks of the job (`MPI_COMM_WORLD`).
    pub fn world(&self) -> Communicator<L> {
        Communicator::world(self.rt.clone())
    }

    /// Only this rank (`MPI_COMM_SELF`).
    pub fn self_comm(&self) -> Communicator<L> {
        Communicator::self_comm(self.rt.clone())
    }

    /// The communicator of `group`'s processes (`MPI_Comm_create_from_group`), collective over
    /// them alone: every member calls it with the same group and `stringtag`, which tells
    /// concurrent constructions over groups sharing processes apart. `None` for an empty
    /// group (a local call). The group comes from a communicator of this job (there are no
    /// sessions): a process of another job (spawned, or a parent) or a caller outside the
    /// group is [`ErrorClass::Group`]. Members giving different string tags (erroneous) do
    /// not meet: each string gives its own message tag.
    pub fn create_from_group(
        &self,
        group: &crate::Group,
        stringtag: &str,
    ) -> Result<Option<Communicator<L>>> {
        Ok(crate::comm::Comm::from_group(&self.rt, group, stringtag)?.map(Communicator::from_comm))
    }

    /// The intercommunicator between `local`, this process's group, and the disjoint group
    /// `remote` (`MPI_Intercomm_create_from_groups`), collective over both: every process
    /// gives the same `stringtag`, `local_leader` is a rank of `local` and `remote_leader` of
    /// `remote` (each side names the other's leader as that side does). Errors as
    /// [`create_from_group`](Self::create_from_group), and also: an empty group or a process
    /// in both groups is [`ErrorClass::Group`], a leader outside its group
    /// [`ErrorClass::Rank`].
    pub fn create_from_groups(
        &self,
        local: &crate::Group,
        local_leader: i32,
        remote: &crate::Group,
        remote_leader: i32,
        stringtag: &str,
    ) -> Result<crate::InterCommunicator<L>> {
        let c = crate::comm::Comm::intercomm_from_groups(
            &self.rt,
            local,
            local_leader,
            remote,
            remote_leader,
            stringtag,
        )?;
        Ok(crate::InterCommunicator::from_arc(c.rt, c.state))
    }

    /// The thread level in force.
    pub fn threading(&self) -> Threading {
        self.rt.level
    }

    /// MPMD application index of this rank (0 for the first program given to the launcher).
    pub fn appnum(&self) -> i32 {
        self.rt.appnum
    }

    /// Ends every rank of the job with `code` (`MPI_Abort`). Does not return.
    pub fn abort(&self, code: i32) -> ! {
        self.rt.abort(code, "")
    }

    /// Attaches `buffer` for [`buffered_send`](crate::Communicator::buffered_send)
    /// (`MPI_Buffer_attach`): buffered messages are copied into it, each taking its size plus
    /// [`BSEND_OVERHEAD`](crate::p2p::bsend::BSEND_OVERHEAD) bytes. Fails
    /// ([`ErrorClass::Buffer`]) if a buffer is already attached.
    pub fn buffer_attach(&self, buffer: Box<[u8]>) -> Result<()> {
        attach_boxed(&self.rt, buffer)
    }

    /// Waits until every buffered send has gone out, then detaches the buffer and gives it
    /// back (`MPI_Buffer_detach`).
    pub fn buffer_detach(&self) -> Result<Box<[u8]>> {
        detach_boxed(&self.rt)
    }

    /// Peers whose shared memory this rank has mapped so far (connections are deferred until a
    /// pair's first message).
    pub fn mapped_peers(&self) -> usize {
        self.rt
            .engine
            .with(|e| e.shm().map_or(0, |s| s.connected_peers()))
    }

    /// Allocates `len` zeroed values in message memory (`MPI_Alloc_mem`): large sends from
    /// such a buffer to ranks on this host are a single plain copy by the receiver.
    pub fn alloc_mem<T: crate::Equivalence>(
        &self,
        len: usize,
    ) -> Result<crate::memory::SharedBuffer<T>> {
        crate::memory::SharedBuffer::new(self.rt.clone(), len)
    }

    /// How often each point-to-point protocol path ran in this process so far.
    pub fn protocol_stats(&self) -> crate::ProtocolStats {
        self.rt.engine.with(|e| e.stats())
    }

    /// What a fault that breaks communication with a peer does (default
    /// [`FaultMode::Abort`](crate::FaultMode::Abort): the job ends with a message naming the
    /// rank, the call and the cause). With [`FaultMode::Return`](crate::FaultMode::Return),
    /// every operation with that peer completes with the error and the rest goes on.
    pub fn set_fault_mode(&self, mode: crate::FaultMode) {
        self.rt.engine.with(|e| e.set_fault_mode(mode));
    }

    /// Finalizes MPI, reporting errors that dropping would have to ignore.
    pub fn finalize(mut self) -> Result<()> {
        self.finalized = true;
        self.rt.finalize()
    }
}

impl<L: ThreadLevel> Drop for Universe<L> {
    fn drop(&mut self) {
        if !self.finalized && std::thread::panicking() {
            // Finalizing is collective: peers may wait forever for a rank that panicked. End
            // the job instead, as MPI_Abort would.
            self.rt.abort(101, "rank panicked");
        }
        if !self.finalized {
            if let Err(e) = self.rt.finalize() {
                eprintln!("oxmpi: rank {}: finalize failed: {e}", self.rt.rank);
            }
        }
    }
}

/// Attaches a Rust-owned buffer for buffered sends; the engine owns it until detach.
pub(crate) fn attach_boxed(rt: &Runtime, buffer: Box<[u8]>) -> Result<()> {
    let len = buffer.len();
    let ptr = Box::into_raw(buffer).cast::<u8>();
    let region = crate::p2p::bsend::Region {
        ptr,
        len,
        boxed: true,
    };
    // SAFETY: the region is the allocation just released by `Box::into_raw`: valid for
    // writes of `len` bytes and reachable by nobody else until `detach_boxed` rebuilds the box.
    let r = rt.engine.with(|e| unsafe {
        e.buffer_attach(
            &crate::p2p::bsend::BufferScope::Process,
            crate::p2p::bsend::Space::Region(region),
        )
    });
    if r.is_err() {
        // SAFETY: the engine refused the region, so this is still the only pointer to the
        // allocation `Box::into_raw` gave.
        drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(ptr, len)) });
    }
    r
}

/// Waits until every buffered send from the buffer `scope` names has drained, then detaches
/// that buffer.
pub(crate) fn detach_space(
    rt: &Runtime,
    scope: &crate::p2p::bsend::BufferScope,
) -> Result<crate::p2p::bsend::Space> {
    crate::request::block_on(rt, || {
        rt.engine.with(|e| {
            e.progress();
            Ok((!e.bsend_busy_in(scope)).then_some(()))
        })
    })?;
    rt.engine.with(|e| e.buffer_detach(scope))
}

/// Detaches a buffer attached with [`attach_boxed`] and gives it back.
pub(crate) fn detach_boxed(rt: &Runtime) -> Result<Box<[u8]>> {
    use crate::p2p::bsend::{BufferScope, Space};
    let region = match detach_space(rt, &BufferScope::Process)? {
        Space::Region(r) if r.boxed => r,
        _ => {
            return Err(Error::new(
                ErrorClass::Buffer,
                "buffer_detach: the attached buffer was not attached through this API",
            ))
        }
    };
    // SAFETY: `boxed` regions come only from `Box::into_raw` in `attach_boxed`; detach
    // returned this one, so nothing references it any more.
    Ok(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(region.ptr, region.len)) })
}

/// Seconds since an arbitrary fixed point in this process (`MPI_Wtime`); monotonic.
pub fn time() -> f64 {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    EPOCH.get_or_init(Instant::now).elapsed().as_secs_f64()
}

/// Resolution of [`time`] in seconds (`MPI_Wtick`).
pub fn time_resolution() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_getres writes one timespec into the valid, exclusively borrowed `ts`.
    let rc = unsafe { libc::clock_getres(libc::CLOCK_MONOTONIC, &mut ts) };
    if rc != 0 {
        return 1e-9;
    }
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// This host's name (`MPI_Get_processor_name`).
pub fn processor_name() -> String {
    crate::runtime::processor_name()
}

/// What this process runs on at the moment of the call (`MPI_Get_hw_resource_info`), as
/// (key, value) pairs: `oxmpi_host` (the processor name), `oxmpi_cpus` (the CPUs it may run
/// on, as a kernel CPU list such as `0-3,8`), and how many hardware threads
/// (`oxmpi_hw_threads`), cores (`oxmpi_cores`), packages (`oxmpi_packages`) and NUMA nodes
/// (`oxmpi_numa_nodes`) those CPUs span, from the kernel's topology (sysfs).
pub fn hw_resources() -> Vec<(String, String)> {
    let topo = oxmpi_pmi::topology::Topology::host();
    let mut cpus: Vec<usize> = crate::transport::tcp::affinity::own_cpus()
        .into_iter()
        .map(|c| c as usize)
        .collect();
    cpus.sort_unstable();
    let known: Vec<_> = cpus.iter().filter_map(|&c| topo.cpu(c)).collect();
    let distinct = |key: &dyn Fn(&oxmpi_pmi::topology::Cpu) -> usize| {
        let mut v: Vec<usize> = known.iter().map(|c| key(c)).collect();
        v.sort_unstable();
        v.dedup();
        v.len()
    };
    vec![
        ("oxmpi_host".into(), processor_name()),
        (
            "oxmpi_cpus".into(),
            oxmpi_pmi::topology::format_cpu_list(&cpus),
        ),
        ("oxmpi_hw_threads".into(), cpus.len().to_string()),
        (
            "oxmpi_cores".into(),
            distinct(&|c| c.core_cpus.first().copied().unwrap_or(c.id)).to_string(),
        ),
        (
            "oxmpi_packages".into(),
            distinct(&|c| c.package as usize).to_string(),
        ),
        (
            "oxmpi_numa_nodes".into(),
            distinct(&|c| c.numa as usize).to_string(),
        ),
    ]
}

/// The MPI standard version implemented (`MPI_Get_version`): `(5, 0)`.
pub fn version() -> (i32, i32) {
    (5, 0)
}

/// The library's version string (`MPI_Get_library_version`).
pub fn library_version() -> String {
    concat!(
        "oxmpi ",
        env!("CARGO_PKG_VERSION"),
        " (MPI-5.0 standard ABI 1.0)"
    )
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clock_is_monotonic_with_fine_resolution() {
        let a = time();
        let b = time();
        assert!(b >= a);
        let tick = time_resolution();
        assert!(tick > 0.0 && tick <= 1e-3, "{tick}");
    }

    #[test]
    fn processor_name_is_not_empty() {
        assert!(!processor_name().is_empty());
    }
}
