//! Buffered sends (`MPI_Bsend`): the message is copied into the byte region the user attached,
//! so the call returns at once; the copy is sent from there like any other message and its
//! space is reclaimed when that send completes.
//!
//! Each message takes its length plus [`BSEND_OVERHEAD`] bytes of the region, exactly what MPI
//! tells users to reserve, so a buffer sized by the standard's formula always fits the
//! messages it was sized for. The bookkeeping itself lives outside the region; the overhead
//! only keeps that promise. [`Arena`] is the allocator (first fit over a sorted free list,
//! neighbours merged on release), pure logic with no engine in it.

use std::any::Any;
use std::sync::Weak;

use super::engine::{Advance, Engine, Schedule, SendMode};
use super::request::ReqId;
use super::wire::Envelope;
use crate::error::{Error, ErrorClass, Result};

/// Bookkeeping overhead charged per buffered message (`MPI_BSEND_OVERHEAD`, ABI value).
pub const BSEND_OVERHEAD: usize = 512;

/// First-fit allocator of byte ranges in `[0, capacity)`.
#[derive(Debug, Default, Clone)]
pub struct Arena {
    capacity: usize,
    /// Free ranges `(offset, len)`, sorted by offset, never adjacent (merged on release).
    free: Vec<(usize, usize)>,
}

impl Arena {
    /// An arena over `capacity` bytes, all free.
    pub fn new(capacity: usize) -> Arena {
        let free = if capacity > 0 {
            vec![(0, capacity)]
        } else {
            Vec::new()
        };
        Arena { capacity, free }
    }

    /// Bytes currently allocated.
    pub fn used(&self) -> usize {
        self.capacity - self.free.iter().map(|&(_, l)| l).sum::<usize>()
    }

    /// The largest range that [`alloc`](Self::alloc) could give now.
    pub fn largest_free(&self) -> usize {
        self.free.iter().map(|&(_, l)| l).max().unwrap_or(0)
    }

    /// The offset of `len` fresh bytes (the lowest range that fits), or `None` if no free
    /// range is that long. `len` must be non-zero.
    pub fn alloc(&mut self, len: usize) -> Option<usize> {
        debug_assert!(
            len > 0,
            "zero-length allocations have no offset of their own"
        );
        let i = self.free.iter().position(|&(_, l)| l >= len)?;
        let (off, l) = self.free[i];
        if l == len {
            self.free.remove(i);
        } else {
            self.free[i] = (off + len, l - len);
        }
        Some(off)
    }

    /// Returns `[off, off + len)`, which [`alloc`](Self::alloc) gave, merging it with free
    /// neighbours.
    pub fn release(&mut self, off: usize, len: usize) {
        debug_assert!(off + len <= self.capacity);
        let i = self.free.partition_point(|&(o, _)| o < off);
        debug_assert!(
            i == 0 || self.free[i - 1].0 + self.free[i - 1].1 <= off,
            "double free"
        );
        debug_assert!(
            i == self.free.len() || off + len <= self.free[i].0,
            "double free"
        );
        let joins_prev = i > 0 && self.free[i - 1].0 + self.free[i - 1].1 == off;
        let joins_next = i < self.free.len() && off + len == self.free[i].0;
        match (joins_prev, joins_next) {
            (true, true) => {
                self.free[i - 1].1 += len + self.free[i].1;
                self.free.remove(i);
            }
            (true, false) => self.free[i - 1].1 += len,
            (false, true) => self.free[i] = (off, len + self.free[i].1),
            (false, false) => self.free.insert(i, (off, len)),
        }
    }
}

/// The attached region: where it is and who gets it back at detach.
#[derive(Debug, Clone, Copy)]
pub struct Region {
    /// First byte of the region.
    pub ptr: *mut u8,
    /// Its length in bytes.
    pub len: usize,
    /// Whether it came from `Box::<[u8]>::into_raw` (the Rust API) rather than from a caller
    /// that keeps ownership (the C ABI).
    pub boxed: bool,
}

// SAFETY: a `Region` is an address and a length; the engine writes through it only while the
// region is attached, and whoever attached it promised it stays valid and untouched until
// detach returns it (see `Engine::buffer_attach`).
unsafe impl Send for Region {}

/// The space buffered copies go into: a region the user attached, or memory the library
/// allocates per message (`MPI_BUFFER_AUTOMATIC`, MPI-4.1), so that no buffered send fails
/// for want of space.
#[derive(Debug, Clone, Copy)]
pub enum Space {
    /// A region the user attached.
    Region(Region),
    /// Allocated per message and freed when its send completes.
    Automatic,
}

/// Which attached buffer an operation means: the process's (`MPI_Buffer_attach`) or one
/// communicator's (`MPI_Comm_attach_buffer`, MPI-4.1), which that communicator's buffered
/// sends use instead.
#[derive(Debug, Clone)]
pub enum BufferScope {
    /// The process's buffer.
    Process,
    /// The buffer of the communicator whose point-to-point context is `ctx`. `owner` is that
    /// communicator's shared state: once it is gone the context may name another
    /// communicator, so the buffer is the old one's no more.
    Comm {
        /// Point-to-point context id.
        ctx: u32,
        /// The communicator's shared state.
        owner: Weak<dyn Any + Send + Sync>,
    },
    /// The buffer of session `id` (MPI-4.1 `MPI_Session_attach_buffer`), which the
    /// communicators derived from it use when they have none of their own.
    Session {
        /// The session's id.
        id: u32,
    },
}

/// Where one copy in flight lies.
#[derive(Debug)]
enum Hold {
    /// `len` bytes at `off` of the attached region.
    Range { off: usize, len: usize },
    /// Its own allocation (automatic buffering), dropped when the send completes. Held, not
    /// read: the send reads it through the pointer it was given. A `Vec`, not a `Box`, whose
    /// move would assert unique access and void that pointer.
    Owned(#[allow(dead_code)] Vec<u8>),
}

/// One copy in flight: its request and where its bytes lie.
#[derive(Debug)]
struct Inflight {
    id: ReqId,
    hold: Hold,
}

/// The attached space, its allocator, and the copies in flight.
#[derive(Debug, Default)]
pub struct BsendBuffer {
    space: Option<Space>,
    arena: Arena,
    inflight: Vec<Inflight>,
}

impl BsendBuffer {
    /// Attaches `space`. Fails ([`ErrorClass::Buffer`]) if one is already attached.
    pub fn attach(&mut self, space: Space) -> Result<()> {
        if self.space.is_some() {
            return Err(Error::new(
                ErrorClass::Buffer,
                "buffer_attach: a buffer is already attached",
            ));
        }
        self.arena = match space {
            Space::Region(r) => Arena::new(r.len),
            Space::Automatic => Arena::default(),
        };
        self.space = Some(space);
        Ok(())
    }

    /// Whether copies are still being sent.
    pub fn busy(&self) -> bool {
        !self.inflight.is_empty()
    }

    /// Bytes of the attached region (0 for automatic buffering), if one is attached.
    pub fn attached_len(&self) -> Option<usize> {
        self.space.as_ref().map(|s| match s {
            Space::Region(r) => r.len,
            Space::Automatic => 0,
        })
    }

    /// Detaches the space once nothing is in flight and returns it.
    pub fn detach(&mut self) -> Result<Space> {
        if self.busy() {
            return Err(Error::new(
                ErrorClass::Intern,
                "buffer_detach: buffered sends are still in flight",
            ));
        }
        let s = self.space.take().ok_or_else(|| {
            Error::new(ErrorClass::Buffer, "buffer_detach: no buffer is attached")
        })?;
        self.arena = Arena::default();
        Ok(s)
    }

    /// Whether any of `ids` is still in flight from this buffer.
    fn holds_any(&self, ids: &[ReqId]) -> bool {
        self.inflight.iter().any(|f| ids.contains(&f.id))
    }
}

/// A communicator's buffer, found by the context its sends carry.
#[derive(Debug)]
struct CommBuffer {
    ctx: u32,
    owner: Weak<dyn Any + Send + Sync>,
    buf: BsendBuffer,
}

/// A communicator derived from a session, found by the context its sends carry.
#[derive(Debug)]
struct SessionLink {
    ctx: u32,
    owner: Weak<dyn Any + Send + Sync>,
    session: u32,
}

/// Every buffer of this process: its own, its communicators', its sessions', and those of
/// communicators freed while copies were still in flight (drained, then dropped).
#[derive(Debug, Default)]
pub struct Buffers {
    process: BsendBuffer,
    comms: Vec<CommBuffer>,
    sessions: Vec<(u32, BsendBuffer)>,
    links: Vec<SessionLink>,
    orphans: Vec<BsendBuffer>,
}

/// Which buffer a buffered send copies into.
#[derive(Debug, Clone, Copy)]
enum Which {
    Process,
    /// Index in `comms`.
    Comm(usize),
    /// Index in `sessions`.
    Session(usize),
}

impl Buffers {
    /// Moves the buffers of communicators that are gone to the orphans (or drops them if
    /// nothing is in flight): their context may be reused by a new communicator.
    fn prune(&mut self) {
        if !self.links.is_empty() {
            self.links.retain(|l| l.owner.strong_count() > 0);
        }
        if self.comms.iter().all(|c| c.owner.strong_count() > 0) {
            return;
        }
        let mut i = 0;
        while i < self.comms.len() {
            if self.comms[i].owner.strong_count() > 0 {
                i += 1;
                continue;
            }
            let c = self.comms.swap_remove(i);
            if c.buf.busy() {
                self.orphans.push(c.buf);
            }
        }
    }

    /// The buffer `scope` names, if it exists (a communicator's only once attached).
    fn get(&mut self, scope: &BufferScope) -> Option<&mut BsendBuffer> {
        match scope {
            BufferScope::Process => Some(&mut self.process),
            BufferScope::Comm { ctx, owner } => self
                .comms
                .iter_mut()
                .find(|c| c.ctx == *ctx && Weak::ptr_eq(&c.owner, owner))
                .map(|c| &mut c.buf),
            BufferScope::Session { id } => self
                .sessions
                .iter_mut()
                .find(|(s, _)| s == id)
                .map(|(_, b)| b),
        }
    }

    /// Which buffer a buffered send on context `ctx` copies into: its communicator's, else
    /// the buffer of the session the communicator derives from, else the process's. An
    /// index stays valid until the next [`prune`](Self::prune): a communicator dropped
    /// meanwhile (another thread may drop its last handle) does not move its entry.
    fn for_send(&mut self, ctx: u32) -> Which {
        self.prune();
        if let Some(i) = self.comms.iter().position(|c| c.ctx == ctx) {
            return Which::Comm(i);
        }
        if self.sessions.is_empty() {
            return Which::Process;
        }
        self.links
            .iter()
            .find(|l| l.ctx == ctx)
            .and_then(|l| {
                self.sessions
                    .iter()
                    .position(|(s, b)| *s == l.session && b.space.is_some())
            })
            .map_or(Which::Process, Which::Session)
    }

    /// The buffer [`for_send`](Self::for_send) chose.
    fn chosen(&mut self, w: Which) -> &mut BsendBuffer {
        match w {
            Which::Comm(i) => &mut self.comms[i].buf,
            Which::Session(i) => &mut self.sessions[i].1,
            Which::Process => &mut self.process,
        }
    }

    fn all(&mut self) -> impl Iterator<Item = &mut BsendBuffer> {
        std::iter::once(&mut self.process)
            .chain(self.comms.iter_mut().map(|c| &mut c.buf))
            .chain(self.sessions.iter_mut().map(|(_, b)| b))
            .chain(self.orphans.iter_mut())
    }
}

/// `MPI_Buffer_iflush` and its communicator form: done once every copy that was in flight
/// when it started has been sent.
#[derive(Debug)]
struct Flush {
    ids: Vec<ReqId>,
}

impl Schedule for Flush {
    fn advance(&mut self, e: &mut Engine) -> Result<Advance> {
        e.reclaim_bsend();
        Ok(if e.bsend_holds_any(&self.ids) {
            Advance::Running
        } else {
            Advance::Done
        })
    }

    fn run_unlocked(&mut self) -> std::thread::Result<()> {
        Ok(())
    }
}

impl Engine {
    /// Frees the space of buffered sends that have completed.
    pub fn reclaim_bsend(&mut self) {
        let mut b = std::mem::take(&mut self.bsend);
        for buf in b.all() {
            buf.inflight.retain(|f| {
                if self.test(f.id).is_none() {
                    return true;
                }
                if let Hold::Range { off, len } = f.hold {
                    buf.arena.release(off, len);
                }
                false
            });
        }
        b.orphans.retain(BsendBuffer::busy);
        self.bsend = b;
    }

    /// Attaches `space` as the buffer `scope` names ([`ErrorClass::Buffer`] if that one is
    /// attached already).
    ///
    /// # Safety
    /// A region's `ptr` must be valid for writes of its `len` bytes, and nothing else may
    /// read or write the region until [`buffer_detach`](Self::buffer_detach) has returned it.
    pub unsafe fn buffer_attach(&mut self, scope: &BufferScope, space: Space) -> Result<()> {
        self.bsend.prune();
        match scope {
            BufferScope::Process => self.bsend.process.attach(space),
            BufferScope::Comm { ctx, owner } => {
                if let Some(b) = self.bsend.get(scope) {
                    return b.attach(space);
                }
                let mut buf = BsendBuffer::default();
                buf.attach(space)?;
                self.bsend.comms.push(CommBuffer {
                    ctx: *ctx,
                    owner: owner.clone(),
                    buf,
                });
                Ok(())
            }
            BufferScope::Session { id } => {
                if let Some(b) = self.bsend.get(scope) {
                    return b.attach(space);
                }
                let mut buf = BsendBuffer::default();
                buf.attach(space)?;
                self.bsend.sessions.push((*id, buf));
                Ok(())
            }
        }
    }

    /// Records that the communicator of point-to-point context `ctx` (shared state `owner`)
    /// derives from session `session`, whose buffer its buffered sends then use when it has
    /// none of its own.
    pub fn bsend_link_session(
        &mut self,
        ctx: u32,
        owner: Weak<dyn Any + Send + Sync>,
        session: u32,
    ) {
        self.bsend.prune();
        self.bsend.links.push(SessionLink {
            ctx,
            owner,
            session,
        });
    }

    /// Whether buffered sends are still in flight from any buffer (finalize waits for them).
    pub fn bsend_busy(&mut self) -> bool {
        self.reclaim_bsend();
        self.bsend.all().any(|b| b.busy())
    }

    /// Whether buffered sends are still in flight from the buffer `scope` names (detach
    /// waits for them).
    pub fn bsend_busy_in(&mut self, scope: &BufferScope) -> bool {
        self.reclaim_bsend();
        self.bsend.get(scope).is_some_and(|b| b.busy())
    }

    /// Bytes of the buffer `scope` names (0 for automatic buffering), if one is attached.
    pub fn buffer_attached_len(&mut self, scope: &BufferScope) -> Option<usize> {
        self.bsend.get(scope).and_then(|b| b.attached_len())
    }

    /// Detaches the buffer `scope` names and returns it; fails while
    /// [`bsend_busy_in`](Self::bsend_busy_in) is true, and with [`ErrorClass::Buffer`] when
    /// none is attached.
    pub fn buffer_detach(&mut self, scope: &BufferScope) -> Result<Space> {
        self.reclaim_bsend();
        let b = self.bsend.get(scope).ok_or_else(|| {
            Error::new(ErrorClass::Buffer, "buffer_detach: no buffer is attached")
        })?;
        let s = b.detach()?;
        match scope {
            BufferScope::Process => {}
            BufferScope::Comm { .. } => self
                .bsend
                .comms
                .retain(|c| c.buf.space.is_some() || c.buf.busy()),
            BufferScope::Session { .. } => self
                .bsend
                .sessions
                .retain(|(_, b)| b.space.is_some() || b.busy()),
        }
        Ok(s)
    }

    /// The copies in flight from the buffer `scope` names: a flush waits for these.
    pub fn bsend_inflight(&mut self, scope: &BufferScope) -> Vec<ReqId> {
        self.reclaim_bsend();
        self.bsend
            .get(scope)
            .map(|b| b.inflight.iter().map(|f| f.id).collect())
            .unwrap_or_default()
    }

    /// Whether any of `ids` is still in flight from any buffer.
    pub fn bsend_holds_any(&mut self, ids: &[ReqId]) -> bool {
        !ids.is_empty() && self.bsend.all().any(|b| b.holds_any(ids))
    }

    /// Starts a flush of the buffer `scope` names (`MPI_Buffer_iflush`): the request
    /// completes once every copy in flight from it now has been sent.
    pub fn start_bsend_flush(&mut self, scope: &BufferScope) -> Result<ReqId> {
        let ids = self.bsend_inflight(scope);
        self.start_schedule(Box::new(Flush { ids }))
    }

    /// Copies `data` into the buffer of the communicator of `env.ctx`, or else the process's,
    /// and starts sending the copy to world rank `to`. Fails with [`ErrorClass::Buffer`] when
    /// no buffer is attached or no free range of the region holds `data.len() +
    /// BSEND_OVERHEAD` bytes.
    pub fn bsend(&mut self, data: &[u8], to: u32, env: Envelope) -> Result<()> {
        self.reclaim_bsend();
        let which = self.bsend.for_send(env.ctx);
        let buf = self.bsend.chosen(which);
        let (copy, hold) = match buf.space {
            None => {
                return Err(Error::new(
                    ErrorClass::Buffer,
                    "buffered_send: no buffer is attached (use buffer_attach)",
                ))
            }
            Some(Space::Automatic) => {
                let owned = data.to_vec();
                (owned.as_ptr(), Hold::Owned(owned))
            }
            Some(Space::Region(region)) => {
                let need = data.len() + BSEND_OVERHEAD;
                let Some(off) = buf.arena.alloc(need) else {
                    return Err(Error::new(
                        ErrorClass::Buffer,
                        format!(
                            "buffered_send: {} bytes do not fit: {} of {} attached bytes in use, largest free range {} (each message also takes {BSEND_OVERHEAD})",
                            data.len(),
                            buf.arena.used(),
                            region.len,
                            buf.arena.largest_free(),
                        ),
                    ));
                };
                // SAFETY: `[off, off + need)` lies inside the attached region (the arena
                // covers exactly `region.len` bytes), no other copy in flight owns any of it,
                // and whoever attached the region guaranteed it valid and unused by anyone
                // else until detach, which waits for every copy to drain. `data` is a
                // separate borrow of the caller's memory, so the ranges do not overlap.
                let copy = unsafe {
                    let dst = region.ptr.add(off);
                    crate::bytecopy::copy(dst, data.as_ptr(), data.len());
                    dst as *const u8
                };
                (copy, Hold::Range { off, len: need })
            }
        };
        // SAFETY: the copy stays valid and unchanged until the send completes: a range is
        // released, and an owned copy dropped, only by `reclaim_bsend` once the request is
        // done (or below, when the send did not start or finished at once); a region is
        // detached only when nothing is in flight, and the buffer of a freed communicator
        // is kept among the orphans until its copies have drained.
        let started = unsafe { self.isend(SendMode::Standard, copy, data.len(), to, env) };
        // The same buffer: `isend` does not touch the buffers, and nothing pruned them since.
        let buf = self.bsend.chosen(which);
        let release = |buf: &mut BsendBuffer, hold: Hold| {
            if let Hold::Range { off, len } = hold {
                buf.arena.release(off, len);
            }
        };
        match started {
            Ok(Some(id)) => {
                buf.inflight.push(Inflight { id, hold });
                Ok(())
            }
            Ok(None) => {
                release(buf, hold);
                Ok(())
            }
            Err(e) => {
                release(buf, hold);
                Err(e)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::sync::Arc;

    fn region(len: usize) -> Region {
        Region {
            ptr: std::ptr::null_mut(),
            len,
            boxed: false,
        }
    }

    #[test]
    fn attach_twice_and_detach_without_attach_are_errors() {
        let mut b = BsendBuffer::default();
        assert_eq!(b.detach().unwrap_err().class(), ErrorClass::Buffer);
        b.attach(Space::Region(region(100))).unwrap();
        assert_eq!(
            b.attach(Space::Automatic).unwrap_err().class(),
            ErrorClass::Buffer
        );
        assert!(!b.busy());
        assert_eq!(b.attached_len(), Some(100));
        assert!(matches!(b.detach().unwrap(), Space::Region(r) if r.len == 100));
        assert_eq!(b.detach().unwrap_err().class(), ErrorClass::Buffer);
        b.attach(Space::Automatic).unwrap();
        assert_eq!(b.attached_len(), Some(0), "automatic buffering has no size");
        assert!(matches!(b.detach().unwrap(), Space::Automatic));
    }

    /// A communicator's buffer is found by its context only while the communicator lives;
    /// afterwards the context (which a new communicator may reuse) leads to the process's.
    #[test]
    fn a_freed_communicators_buffer_is_no_longer_its_contexts() {
        let mut all = Buffers::default();
        all.process.attach(Space::Region(region(10))).unwrap();
        let owner: Arc<dyn Any + Send + Sync> = Arc::new(0u8);
        let scope = BufferScope::Comm {
            ctx: 4,
            owner: Arc::downgrade(&owner),
        };
        all.comms.push(CommBuffer {
            ctx: 4,
            owner: Arc::downgrade(&owner),
            buf: BsendBuffer::default(),
        });
        all.get(&scope).unwrap().attach(Space::Automatic).unwrap();
        let mut space_for = |ctx| {
            let i = all.for_send(ctx);
            all.chosen(i).space
        };
        assert!(matches!(space_for(4), Some(Space::Automatic)));
        assert!(matches!(space_for(6), Some(Space::Region(_))));
        // Another communicator on the same context is not the owner.
        let other: Arc<dyn Any + Send + Sync> = Arc::new(1u8);
        let stranger = BufferScope::Comm {
            ctx: 4,
            owner: Arc::downgrade(&other),
        };
        assert!(all.get(&stranger).is_none());
        drop(owner);
        let i = all.for_send(4);
        assert!(matches!(all.chosen(i).space, Some(Space::Region(_))));
        assert!(
            all.comms.is_empty() && all.orphans.is_empty(),
            "nothing was in flight"
        );
    }

    /// A communicator derived from a session copies into the session's buffer when it has
    /// none of its own, and only while both the buffer is attached and it lives; other
    /// contexts keep the process's.
    #[test]
    fn a_sessions_communicators_use_its_buffer() {
        let mut all = Buffers::default();
        all.process.attach(Space::Region(region(10))).unwrap();
        let owner: Arc<dyn Any + Send + Sync> = Arc::new(0u8);
        all.links.push(SessionLink {
            ctx: 8,
            owner: Arc::downgrade(&owner),
            session: 7,
        });
        let is_session = |w: Which| matches!(w, Which::Session(_));
        assert!(!is_session(all.for_send(8)), "no session buffer yet");
        all.sessions.push((7, BsendBuffer::default()));
        all.get(&BufferScope::Session { id: 7 })
            .unwrap()
            .attach(Space::Automatic)
            .unwrap();
        assert!(is_session(all.for_send(8)));
        assert!(
            matches!(all.for_send(10), Which::Process),
            "not the session's"
        );
        // The communicator's own buffer comes first.
        all.comms.push(CommBuffer {
            ctx: 8,
            owner: Arc::downgrade(&owner),
            buf: BsendBuffer::default(),
        });
        assert!(matches!(all.for_send(8), Which::Comm(_)));
        all.comms.clear();
        // Detached: back to the process's.
        all.get(&BufferScope::Session { id: 7 })
            .unwrap()
            .detach()
            .unwrap();
        assert!(matches!(all.for_send(8), Which::Process));
        all.get(&BufferScope::Session { id: 7 })
            .unwrap()
            .attach(Space::Automatic)
            .unwrap();
        // The communicator gone, its context may be another's: the link goes with it.
        drop(owner);
        assert!(matches!(all.for_send(8), Which::Process));
        assert!(all.links.is_empty());
    }

    #[test]
    fn arena_is_first_fit_and_merges_neighbours() {
        let mut a = Arena::new(100);
        assert_eq!(a.alloc(30), Some(0));
        assert_eq!(a.alloc(30), Some(30));
        assert_eq!(a.alloc(30), Some(60));
        assert_eq!(a.alloc(11), None, "10 bytes left");
        assert_eq!(a.used(), 90);
        a.release(30, 30);
        assert_eq!(a.alloc(40), None, "30 + 10 free but not adjacent");
        a.release(0, 30);
        assert_eq!(a.largest_free(), 60, "merged with the next free range");
        a.release(60, 30);
        assert_eq!(a.largest_free(), 100, "all merged");
        assert_eq!(a.used(), 0);
        assert_eq!(a.alloc(100), Some(0));
        assert_eq!(Arena::new(0).alloc(1), None);
    }

    #[test]
    fn a_buffer_sized_by_the_standard_formula_fits_its_messages() {
        let sizes = [0usize, 8, 1000, 4096];
        let mut a = Arena::new(sizes.iter().map(|s| s + BSEND_OVERHEAD).sum());
        for s in sizes {
            assert!(a.alloc(s + BSEND_OVERHEAD).is_some(), "{s}");
        }
        assert_eq!(a.largest_free(), 0);
    }

    proptest! {
        /// Random allocations and releases: ranges never overlap, stay inside the arena,
        /// the accounting adds up, and releasing everything leaves one free range.
        #[test]
        fn arena_ranges_are_disjoint_and_accounted(
            cap in 1usize..4096,
            steps in proptest::collection::vec((any::<bool>(), 1usize..700, any::<prop::sample::Index>()), 1..200),
        ) {
            let mut a = Arena::new(cap);
            let mut live: Vec<(usize, usize)> = Vec::new();
            for (alloc, len, pick) in steps {
                if alloc || live.is_empty() {
                    let fits = a.largest_free() >= len;
                    match a.alloc(len) {
                        Some(off) => {
                            prop_assert!(fits);
                            prop_assert!(off + len <= cap);
                            for &(o, l) in &live {
                                prop_assert!(off + len <= o || o + l <= off, "overlap");
                            }
                            live.push((off, len));
                        }
                        None => prop_assert!(!fits),
                    }
                } else {
                    let (o, l) = live.swap_remove(pick.index(live.len()));
                    a.release(o, l);
                }
                prop_assert_eq!(a.used(), live.iter().map(|&(_, l)| l).sum::<usize>());
            }
            for (o, l) in live.drain(..) {
                a.release(o, l);
            }
            prop_assert_eq!(a.largest_free(), cap);
            prop_assert_eq!(a.used(), 0);
        }
    }
}
