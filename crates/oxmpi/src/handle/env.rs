//! Entering and leaving MPI through the handle layer: the thread level chosen at run time
//! (`MPI_Init_thread`), finalize, and buffered-send buffers given as raw regions.
//!
//! The world model (`MPI_Init`, `MPI_Finalize`) and sessions ([`super::session`]) share one
//! runtime: whichever comes first starts it, and it shuts down (collectively) when the world
//! model is finalized, or never initialized, and the last session is finalized. So
//! `MPI_Finalize` with sessions open leaves the runtime to the last `MPI_Session_finalize`,
//! and a session can be started before `MPI_Init`, which then takes the running runtime.
//!
//! The typed API keeps thread levels as types ([`init_with`](crate::init_with)); here the
//! level is a value, so what the types rule out is checked per call instead: at
//! [`Threading::Single`] and [`Threading::Funneled`] the engine runs without a lock, and only
//! the thread that called [`init_thread`] may drive it ([`ErrorClass::Other`] otherwise).
//!
//! # Standard sections
//! MPI-5.0 §11.2 (initialization), §11.6 (thread support), §3.6 (buffer allocation).

use std::cell::Cell;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use crate::error::{Error, ErrorClass, Result};
use crate::p2p::bsend::{BufferScope, Space};
use crate::runtime::Runtime;
use crate::threading::Threading;

/// The runtime the handle layer started (MPI is initialized once per process).
static RT: OnceLock<Arc<Runtime>> = OnceLock::new();

thread_local! {
    /// Whether this thread started the runtime (`init_thread`, or the first session).
    static MAIN: Cell<bool> = const { Cell::new(false) };
}

/// The world model's state: [`WORLD_NONE`], [`WORLD_ACTIVE`] or [`WORLD_DONE`].
static WORLD: AtomicU8 = AtomicU8::new(WORLD_NONE);
const WORLD_NONE: u8 = 0;
const WORLD_ACTIVE: u8 = 1;
const WORLD_DONE: u8 = 2;

/// Sessions initialized and not finalized.
static SESSIONS: AtomicUsize = AtomicUsize::new(0);

/// Serializes starting the runtime and the world model's and sessions' ends, so that exactly
/// one of them starts it and exactly one shuts it down.
static LIFE: Mutex<()> = Mutex::new(());

fn life() -> std::sync::MutexGuard<'static, ()> {
    // Holds no data: a poisoned lock is usable.
    LIFE.lock().unwrap_or_else(|p| p.into_inner())
}

/// Starts the runtime at level `level` on this thread (the lock held).
fn start(level: Threading) -> Result<&'static Arc<Runtime>> {
    let rt = Arc::new(Runtime::init(level)?);
    MAIN.with(|m| m.set(true));
    super::comm::install_predefined(&rt);
    crate::spawn::connect_parent(&rt)?;
    // `Runtime::init` succeeds once per process, so the cell was empty.
    let _ = RT.set(rt);
    RT.get()
        .ok_or_else(|| Error::new(ErrorClass::Intern, "the runtime did not start"))
}

/// Initializes MPI with thread level `required` and returns the level provided
/// (`MPI_Init_thread`). oxmpi provides every level, so that is `required`, unless a session
/// started the runtime first at a lower one: then that level. Creates
/// [`CommHandle::WORLD`](super::comm::CommHandle::WORLD) and
/// [`CommHandle::SELF`](super::comm::CommHandle::SELF). Errors as [`crate::init`].
pub fn init_thread(required: Threading) -> Result<Threading> {
    let _l = life();
    if WORLD.load(Ordering::Acquire) != WORLD_NONE {
        return Err(Error::new(
            ErrorClass::Other,
            "init_thread: MPI was initialized already in this process (MPI_Init may be called once)",
        ));
    }
    let level = match RT.get() {
        Some(_) if crate::runtime::is_finalized() => {
            return Err(Error::new(
                ErrorClass::Other,
                "init_thread: MPI has shut down in this process and cannot start again",
            ))
        }
        Some(rt) => rt.level.min(required),
        None => start(required)?.level,
    };
    WORLD.store(WORLD_ACTIVE, Ordering::Release);
    Ok(level)
}

/// Makes the runtime the typed API started (`oxmpi::init_with`) the handle layer's too, so
/// that a typed communicator's raw handle (`Communicator::as_raw`) works in C code and the
/// handle layer's calls.
pub(crate) fn adopt(rt: &Arc<Runtime>) {
    let _l = life();
    MAIN.with(|m| m.set(true));
    super::comm::install_predefined(rt);
    // `Runtime::init` succeeds once per process, so the cell is empty.
    let _ = RT.set(rt.clone());
    WORLD.store(WORLD_ACTIVE, Ordering::Release);
}

/// Whether the world model was initialized (`MPI_Initialized`), finalized or not.
pub fn world_initialized() -> bool {
    WORLD.load(Ordering::Acquire) != WORLD_NONE
}

/// Whether the world model was finalized (`MPI_Finalized`).
pub fn world_finalized() -> bool {
    WORLD.load(Ordering::Acquire) == WORLD_DONE
}

/// Counts a new session in, starting the runtime at `level` if nothing has; returns the
/// runtime. The runtime cannot start again once shut down ([`ErrorClass::Other`]).
pub(crate) fn session_enter(call: &str, level: Threading) -> Result<&'static Arc<Runtime>> {
    let _l = life();
    let rt = match RT.get() {
        Some(_) if crate::runtime::is_finalized() => {
            return Err(Error::new(
                ErrorClass::Other,
                format!("{call}: MPI has shut down in this process and cannot start again"),
            ))
        }
        Some(rt) => rt,
        None => start(level)?,
    };
    SESSIONS.fetch_add(1, Ordering::AcqRel);
    Ok(rt)
}

/// Counts a finalized session out; the last one shuts the runtime down (collectively) if
/// the world model is not in use.
pub(crate) fn session_leave(call: &str) -> Result<()> {
    let _l = life();
    let left = SESSIONS.fetch_sub(1, Ordering::AcqRel) - 1;
    if left == 0 && WORLD.load(Ordering::Acquire) != WORLD_ACTIVE {
        return shut_down(call);
    }
    Ok(())
}

/// Shuts the runtime down: first deletes the attributes of `MPI_COMM_SELF` (their delete
/// callbacks run, MPI-5.0 §11.2.4), then finalizes collectively.
fn shut_down(call: &str) -> Result<()> {
    let rt = runtime(call)?;
    super::win::forget_kept();
    let attrs = super::comm::free_predefined();
    rt.finalize().and(attrs)
}

/// The thread level in force (`MPI_Query_thread`).
pub fn query_thread() -> Result<Threading> {
    Ok(runtime("query_thread")?.level)
}

/// What a fault that breaks communication with a peer does: end the job (the default), or
/// complete the affected operations with the error (`MPI_ERRORS_RETURN`).
pub fn set_fault_mode(mode: crate::FaultMode) -> Result<()> {
    runtime("set_fault_mode")?
        .engine
        .with(|e| e.set_fault_mode(mode));
    Ok(())
}

/// Whether the calling thread is the one that initialized MPI (`MPI_Is_thread_main`).
pub fn is_thread_main() -> bool {
    MAIN.with(|m| m.get())
}

/// The runtime, if MPI is initialized through the handle layer and not finalized, and the
/// calling thread may drive the engine at the level in force.
// Inlined, its errors made out of line: called by every C call, it returned its answer
// through memory, reloaded wider than it was stored (a failed store forward).
#[inline(always)]
pub(crate) fn runtime(call: &str) -> Result<&'static Arc<Runtime>> {
    match RT.get() {
        Some(rt)
            if !crate::runtime::is_finalized() && (rt.level.needs_lock() || is_thread_main()) =>
        {
            Ok(rt)
        }
        _ => Err(unavailable(call)),
    }
}

/// Why [`runtime`] refused `call`.
#[cold]
#[inline(never)]
fn unavailable(call: &str) -> Error {
    let Some(rt) = RT.get() else {
        return Error::new(
            ErrorClass::Other,
            format!("{call}: MPI is not initialized through the handle layer (init_thread)"),
        );
    };
    if crate::runtime::is_finalized() {
        return Error::new(ErrorClass::Other, format!("{call}: MPI is finalized"));
    }
    Error::new(
        ErrorClass::Other,
        format!(
            "{call}: at thread level {:?} only the thread that initialized MPI may call it",
            rt.level
        ),
    )
}

/// Finalizes the world model (`MPI_Finalize`): first deletes the attributes of
/// `MPI_COMM_SELF` (their delete callbacks run, MPI-5.0 §11.2.4), then shuts down
/// collectively, unless sessions are open: then the last session's finalize does. Returns
/// the first error, after shutting down either way.
pub fn finalize() -> Result<()> {
    let _l = life();
    runtime("finalize")?;
    if WORLD.load(Ordering::Acquire) != WORLD_ACTIVE {
        return Err(Error::new(
            ErrorClass::Other,
            "finalize: MPI_Init was not called, or MPI_Finalize was called already",
        ));
    }
    WORLD.store(WORLD_DONE, Ordering::Release);
    if SESSIONS.load(Ordering::Acquire) > 0 {
        return Ok(());
    }
    shut_down("finalize")
}

/// A buffered-send buffer as the C calls pass it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SendBuffer {
    /// `len` bytes at `ptr`, owned by the caller.
    Region(*mut u8, usize),
    /// `MPI_BUFFER_AUTOMATIC` (MPI-4.1): the library allocates each copy itself.
    Automatic,
}

/// Whose buffered-send buffer a call names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BufferOf {
    /// The process's (`MPI_Buffer_attach`): sends on communicators without one of their own
    /// or of their session use it.
    Process,
    /// A communicator's (`MPI_Comm_attach_buffer`).
    Comm(super::comm::CommHandle),
    /// A session's (`MPI_Session_attach_buffer`): sends on the communicators derived from
    /// the session without one of their own use it.
    Session(super::session::SessionHandle),
}

/// The engine's name for the buffer `of` names.
fn scope(call: &str, of: BufferOf) -> Result<BufferScope> {
    Ok(match of {
        BufferOf::Process => BufferScope::Process,
        BufferOf::Comm(h) => {
            let c = super::comm::get(call, h)?;
            let core: Arc<dyn std::any::Any + Send + Sync> = c.state.core.clone();
            BufferScope::Comm {
                ctx: c.state.context,
                owner: Arc::downgrade(&core),
            }
        }
        BufferOf::Session(s) => {
            super::session::check(call, s)?;
            BufferScope::Session {
                id: s.to_int() as u32,
            }
        }
    })
}

/// Attaches `b` as the buffer `of` names (`MPI_Buffer_attach`, `MPI_Comm_attach_buffer`,
/// `MPI_Session_attach_buffer`); each message takes its size plus [`BSEND_OVERHEAD`](crate::p2p::bsend::BSEND_OVERHEAD)
/// of a region. Errors: [`ErrorClass::Buffer`] if that buffer is attached already.
///
/// # Safety
/// A region's `ptr` must be valid for writes of its `len` bytes, and nothing may read or
/// write them until [`buffer_detach`] (or finalize) has returned them.
pub unsafe fn buffer_attach(of: BufferOf, b: SendBuffer) -> Result<()> {
    let rt = runtime("buffer_attach")?;
    let scope = scope("buffer_attach", of)?;
    let space = match b {
        SendBuffer::Region(ptr, len) => Space::Region(crate::p2p::bsend::Region {
            ptr,
            len,
            boxed: false,
        }),
        SendBuffer::Automatic => Space::Automatic,
    };
    // SAFETY: the caller guarantees a region valid and unshared until detach returns it.
    rt.engine
        .with(|e| unsafe { e.buffer_attach(&scope, space) })
}

/// Whether a buffer is attached as `of` names.
pub(crate) fn buffer_is_attached(of: BufferOf) -> Result<bool> {
    let rt = runtime("buffer_is_attached")?;
    let scope = scope("buffer_is_attached", of)?;
    Ok(rt.engine.with(|e| e.buffer_attached_len(&scope)).is_some())
}

/// Waits until every buffered send from the buffer `of` names has drained, then detaches it
/// and returns it (`MPI_Buffer_detach`, `MPI_Comm_detach_buffer`, `MPI_Session_detach_buffer`).
/// Errors: [`ErrorClass::Buffer`] if none is attached; [`ErrorClass::ValueTooLarge`], with
/// the buffer left attached, if it has more than `max_len` bytes (the `int` form of the call
/// cannot return its size).
pub fn buffer_detach(of: BufferOf, max_len: usize) -> Result<SendBuffer> {
    let rt = runtime("buffer_detach")?;
    let scope = scope("buffer_detach", of)?;
    if let Some(len) = rt.engine.with(|e| e.buffer_attached_len(&scope)) {
        if len > max_len {
            return Err(Error::new(
                ErrorClass::ValueTooLarge,
                format!(
                    "buffer_detach: the attached buffer has {len} bytes, more than the size \
                     argument can hold ({max_len}); detach it with the _c form"
                ),
            ));
        }
    }
    Ok(match crate::environment::detach_space(rt, &scope)? {
        Space::Region(r) => SendBuffer::Region(r.ptr, r.len),
        Space::Automatic => SendBuffer::Automatic,
    })
}

/// Waits until every buffered send now in flight from the buffer `of` names has been sent,
/// leaving the buffer attached (`MPI_Buffer_flush`, `MPI_Comm_flush_buffer`,
/// `MPI_Session_flush_buffer`). A communicator or session without a buffer of its own has
/// nothing to flush.
pub fn buffer_flush(of: BufferOf) -> Result<()> {
    let rt = runtime("buffer_flush")?;
    let scope = scope("buffer_flush", of)?;
    let ids = rt.engine.with(|e| e.bsend_inflight(&scope));
    crate::request::block_on(rt, || {
        rt.engine.with(|e| {
            e.progress();
            e.reclaim_bsend();
            Ok((!e.bsend_holds_any(&ids)).then_some(()))
        })
    })
}

/// Starts [`buffer_flush`] as a request (`MPI_Comm_iflush_buffer`, `MPI_Buffer_iflush`).
pub fn buffer_iflush(of: BufferOf) -> Result<super::request::RequestId> {
    let rt = runtime("buffer_iflush")?;
    let scope = scope("buffer_iflush", of)?;
    let id = rt.engine.with(|e| e.start_bsend_flush(&scope))?;
    Ok(super::request::RequestId::engine(id))
}

/// Ends every rank of the job with exit `code` through the launcher, after printing
/// `message` if it is not empty (`MPI_Abort`, and the `MPI_ERRORS_ARE_FATAL` handler).
/// Before init or after finalize only this process ends.
pub fn abort(code: i32, message: &str) -> ! {
    match RT.get() {
        Some(rt) if !crate::runtime::is_finalized() => rt.abort(code, message),
        _ => {
            if !message.is_empty() {
                eprintln!("{message}");
            }
            std::process::exit(if code == 0 { 1 } else { code })
        }
    }
}

/// Whether MPI was initialized through [`init_thread`] and is not finalized, and the
/// calling thread may call it (the check every handle-layer call makes first).
pub fn check_ready(call: &str) -> Result<()> {
    runtime(call).map(drop)
}

/// This process's rank in `MPI_COMM_WORLD`, if MPI is initialized.
pub fn world_rank() -> Option<i32> {
    RT.get().map(|rt| rt.rank as i32)
}
