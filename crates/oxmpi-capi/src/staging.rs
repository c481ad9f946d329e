//! Operations through a non-contiguous datatype at the C boundary: the core's staging
//! ([`oxmpi::handle::typed`]) for every request of the process. Sends are packed into a
//! buffer the operation owns before they start; receives land in one and are unpacked when
//! the request completes (every wait/test call, every completion of a persistent request,
//! `MPI_Request_get_status`), on whichever thread completes it.
//!
//! Nonblocking and persistent collectives keep their buffers here too ([`keep`]): copies
//! taken when the call is made (the caller's own block of an in-place v-collective),
//! dropped when the request completes, and buffers seen through derived datatypes
//! ([`Through`]), packed from the caller's memory at each start and unpacked into it at
//! each completion.
//!
//! Contiguous datatypes never come here: while nothing is staged each hook returns after
//! one relaxed atomic load, so the byte path takes no lock.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

use oxmpi::datatype::pack::{pack_raw, unpack_raw};
use oxmpi::datatype::Type;
use oxmpi::handle::request::RequestId;
pub use oxmpi::handle::typed::Staged;
use oxmpi::handle::typed::StagedOps;
use oxmpi::Status;

/// The staged operations (`None` until the first).
static OPS: Mutex<Option<StagedOps>> = Mutex::new(None);
/// The buffers of collectives by request id, and those of collectives freed while active
/// (kept for good: the operation may still use them).
static COLL: Mutex<Option<CollTable>> = Mutex::new(None);

/// Live collectives' buffers by request id, and orphans.
type CollTable = (HashMap<u64, Kept>, Vec<Kept>);
/// How many operations are staged: the lock-free fast-path check.
static LIVE: AtomicUsize = AtomicUsize::new(0);

/// Buffers a collective request owns.
#[derive(Default)]
pub struct Kept {
    /// Copies the operation reads (dropped with it).
    pub sends: Vec<Vec<u8>>,
    /// Buffers through derived datatypes, packed at each start, unpacked at each completion.
    pub staged: Vec<Through>,
    /// A persistent request keeps its buffers over completions, until freed.
    pub persistent: bool,
}

impl Kept {
    fn is_empty(&self) -> bool {
        self.sends.is_empty() && self.staged.is_empty()
    }
}

/// `count` elements of `ty` at `at` bytes from a buffer's address, packed at `off` (`len`
/// bytes) of the staged bytes.
pub struct Piece {
    /// The committed datatype (held: freeing its handle while the request lives is safe).
    pub ty: Type,
    /// Byte offset from the buffer's address.
    pub at: isize,
    /// Elements of `ty`.
    pub count: u64,
    /// Where the piece starts in the packed bytes.
    pub off: usize,
    /// Its packed length (`count × size`).
    pub len: usize,
}

/// Where a MINLOC/MAXLOC pair's value and index lie: packed (value then index) and in its
/// C struct (index at `at`, `extent` bytes each), which the reduction kernels read.
#[derive(Clone, Copy, Debug)]
pub struct PairLayout {
    /// Bytes of the value.
    pub value: usize,
    /// Bytes of the index.
    pub index: usize,
    /// Offset of the index in the struct.
    pub at: usize,
    /// Bytes of the struct.
    pub extent: usize,
}

impl PairLayout {
    /// Packed pairs to C structs (padding zeroed); other data unchanged.
    pub fn widen(p: Option<PairLayout>, packed: Vec<u8>) -> Vec<u8> {
        let Some(p) = p else { return packed };
        let mut out = vec![0u8; packed.len() / (p.value + p.index) * p.extent];
        p.widen_into(&packed, &mut out);
        out
    }

    fn widen_into(&self, packed: &[u8], out: &mut [u8]) {
        let step = self.value + self.index;
        for (src, dst) in packed
            .chunks_exact(step)
            .zip(out.chunks_exact_mut(self.extent))
        {
            dst[..self.value].copy_from_slice(&src[..self.value]);
            dst[self.at..self.at + self.index].copy_from_slice(&src[self.value..]);
        }
    }

    /// C structs back to packed pairs in `packed`; other data copied as it is.
    pub fn narrow(p: Option<PairLayout>, wide: &[u8], packed: &mut [u8]) {
        let Some(p) = p else {
            let n = wide.len().min(packed.len());
            packed[..n].copy_from_slice(&wide[..n]);
            return;
        };
        let step = p.value + p.index;
        for (src, dst) in wide
            .chunks_exact(p.extent)
            .zip(packed.chunks_exact_mut(step))
        {
            dst[..p.value].copy_from_slice(&src[..p.value]);
            dst[p.value..].copy_from_slice(&src[p.at..p.at + p.index]);
        }
    }
}

/// A caller's buffer seen through datatypes, staged in bytes a collective request owns
/// (16-byte aligned, so a reduction reads its elements in place). With `pair`, the staged
/// bytes hold MINLOC/MAXLOC pairs as their C structs.
pub struct Through {
    /// The caller's buffer address (an integer keeps [`Kept`] sendable between threads).
    user: usize,
    pieces: Vec<Piece>,
    pair: Option<PairLayout>,
    /// The staged bytes are `buf[start..start + len]`, `start` aligning them to 16.
    buf: Vec<u8>,
    start: usize,
    len: usize,
    /// Packed bytes (narrow, for pairs).
    packed: usize,
    read: bool,
    write: bool,
}

impl Through {
    /// The `pieces` of the buffer at `user`, packed `packed` bytes in all; `read`: packed
    /// from the caller's memory at each start; `write`: unpacked into it at each completion.
    pub fn new(
        user: *const std::ffi::c_void,
        pieces: Vec<Piece>,
        packed: usize,
        pair: Option<PairLayout>,
        read: bool,
        write: bool,
    ) -> Through {
        let len = pair.map_or(packed, |p| packed / (p.value + p.index) * p.extent);
        let buf = vec![0u8; len + 15];
        let start = buf.as_ptr().align_offset(16).min(15);
        Through {
            user: user as usize,
            pieces,
            pair,
            buf,
            start,
            len,
            packed,
            read,
            write,
        }
    }

    /// The staged bytes' address (stable: the buffer never grows).
    pub fn ptr(&mut self) -> *mut u8 {
        self.buf[self.start..].as_mut_ptr()
    }

    /// Staged bytes.
    pub fn staged_len(&self) -> usize {
        self.len
    }

    /// Packs the caller's data into the staged bytes.
    ///
    /// # Safety
    /// Every data byte of the pieces must be readable.
    pub unsafe fn pack(&mut self) {
        let user = self.user as *const u8;
        let mut narrow = vec![0u8; if self.pair.is_some() { self.packed } else { 0 }];
        let staged = &mut self.buf[self.start..self.start + self.len];
        let out: &mut [u8] = if self.pair.is_some() {
            &mut narrow
        } else {
            staged
        };
        for p in &self.pieces {
            // SAFETY: forwarded; `out` is ours, distinct from the caller's memory.
            unsafe {
                pack_raw(
                    &p.ty,
                    user.wrapping_offset(p.at),
                    p.count,
                    0,
                    &mut out[p.off..p.off + p.len],
                )
            };
        }
        if let Some(p) = self.pair {
            p.widen_into(&narrow, &mut self.buf[self.start..self.start + self.len]);
        }
    }

    /// Unpacks the staged bytes into the caller's memory; bytes outside the type maps are
    /// left untouched.
    ///
    /// # Safety
    /// Every data byte of the pieces must be writable, none inside the staged bytes.
    pub unsafe fn unpack(&mut self) {
        let user = self.user as *mut u8;
        let staged = &self.buf[self.start..self.start + self.len];
        let mut narrow = Vec::new();
        let src: &[u8] = if self.pair.is_some() {
            narrow.resize(self.packed, 0);
            PairLayout::narrow(self.pair, staged, &mut narrow);
            &narrow
        } else {
            staged
        };
        for p in &self.pieces {
            // SAFETY: forwarded; `src` is ours, distinct from the caller's memory.
            unsafe {
                unpack_raw(
                    &p.ty,
                    user.wrapping_offset(p.at),
                    p.count,
                    0,
                    &src[p.off..p.off + p.len],
                )
            };
        }
    }
}

fn with<R>(f: impl FnOnce(&mut StagedOps) -> R) -> R {
    let mut g: MutexGuard<'_, Option<StagedOps>> = OPS.lock().unwrap_or_else(|p| p.into_inner());
    let ops = g.get_or_insert_with(StagedOps::new);
    let r = f(ops);
    LIVE.store(ops.len() + coll_len(), Ordering::Relaxed);
    r
}

fn coll_len() -> usize {
    COLL.lock()
        .unwrap_or_else(|p| p.into_inner())
        .as_ref()
        .map_or(0, |c| c.0.len())
}

/// Runs `f` on the collectives' table, then updates the fast-path count.
fn with_coll<R>(f: impl FnOnce(&mut HashMap<u64, Kept>, &mut Vec<Kept>) -> R) -> R {
    let (r, n) = {
        let mut g = COLL.lock().unwrap_or_else(|p| p.into_inner());
        let (live, orphans) = g.get_or_insert_with(Default::default);
        let r = f(live, orphans);
        (r, live.len())
    };
    let ops = OPS
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .as_ref()
        .map_or(0, |o| o.len());
    LIVE.store(ops + n, Ordering::Relaxed);
    r
}

/// Keeps `k` with collective request `id` until it completes (is freed, if persistent).
pub fn keep(id: RequestId, k: Kept) {
    if !id.is_null() && !k.is_empty() {
        with_coll(|live, _| live.insert(id.to_raw(), k));
    }
}

/// Whether no operation is staged.
#[inline]
pub fn is_empty() -> bool {
    LIVE.load(Ordering::Relaxed) == 0
}

/// The ids of a request array before a completion call (empty when nothing is staged).
pub fn snapshot(ids: &[RequestId]) -> Vec<RequestId> {
    if is_empty() {
        Vec::new()
    } else {
        ids.to_vec()
    }
}

/// Keeps `s` with request `id` until it completes (is freed, if persistent). A send that
/// completed as it started ([`RequestId::SENT`], shared by all of them) has no use for its
/// staged bytes any more: they are dropped now.
pub fn hold(id: RequestId, s: Staged) {
    if id != RequestId::SENT {
        with(|o| o.hold(id, s));
    }
}

/// Request `id` completed with `st` (`keep`: the request stays, as in `MPI_Request_get_status`).
pub fn completed(id: RequestId, st: &Status, keep: bool) {
    if !is_empty() {
        with(|o| o.completed(id, st, keep));
        with_coll(|live, _| {
            let raw = id.to_raw();
            if let Some(k) = live.get_mut(&raw) {
                if st.error().is_none() {
                    for t in k.staged.iter_mut().filter(|t| t.write) {
                        // SAFETY: the receive buffer stays valid and writable until the
                        // request completes (the MPI contract); the staged bytes are ours.
                        unsafe { t.unpack() };
                    }
                }
                if !k.persistent && !keep {
                    live.remove(&raw);
                }
            }
        });
    }
}

/// Persistent request `id` is about to start.
pub fn starting(id: RequestId) {
    if !is_empty() {
        with(|o| o.starting(id));
        with_coll(|live, _| {
            if let Some(k) = live.get_mut(&id.to_raw()) {
                for t in k.staged.iter_mut().filter(|t| t.read) {
                    // SAFETY: a persistent request's buffers stay valid from its start to
                    // its completion (the MPI contract); the staged bytes are ours.
                    unsafe { t.pack() };
                }
            }
        });
    }
}

/// Request `id` was freed; `done` if its operation is no longer in flight.
pub fn freed(id: RequestId, done: bool) {
    if !is_empty() {
        with(|o| o.freed(id, done));
        with_coll(|live, orphans| {
            if let (Some(k), false) = (live.remove(&id.to_raw()), done) {
                orphans.push(k);
            }
        });
    }
}
