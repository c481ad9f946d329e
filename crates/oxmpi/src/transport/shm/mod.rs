//! The shared-memory transport: ranks on one host.
//!
//! Each rank creates one segment holding (1) its receive queue, a ring of 64-byte cells that
//! every peer writes into ([`fifo`]), and (2) its send pool, blocks only it allocates from
//! ([`pool`]). Peers map the segment on their first message to or from it. Small fragments
//! travel inline in cells; larger ones in a pool block announced by a cell. Large messages are
//! left to the protocol layer, which uses [`cma`] single copies or chunks through the pool.
//!
//! Cell body layout (after the 4-byte sequence word):
//! `am u8 | flags u8 | hdr_len u8 | ncells u8 | from u32 | len u32 | (block u32 if POOL) | hdr | inline payload...`

pub mod arena;
pub mod cma;
pub mod fifo;
pub mod node;
pub mod pool;
pub mod segment;
mod sync;

use std::marker::PhantomData;
use std::sync::atomic::AtomicU64;

use super::{Frag, Handler, Limits, Link, Remote, Seg, SendError, Transport};
use crate::error::{Error, ErrorClass, Result};
use fifo::{Consumer, FifoRef, Producer, CELL_BODY};
use pool::{PoolOwner, PoolRef, PoolView};
use segment::Segment;

const MAGIC: u64 = 0x6f78_6d70_695f_7368; // "oxmpi_sh"
const HEADER_BYTES: usize = 4096;
const CTL_OFFSET: usize = 256;
/// The world collectives' arrival counter: a cache line of the header page that only its owner
/// writes and peers read.
const BARRIER_OFFSET: usize = 512;
/// Bytes per data slot of a shared-memory collective: the most one rank publishes with an
/// arrival (the slots of the world and of each channel follow the header page).
pub const COLL_SLOT_BYTES: usize = 8192;
const FLAG_POOL: u8 = 1;
/// Cell-body bytes before the fragment header of an inline fragment.
const INLINE_META: usize = 12;
/// Most cells of an inline fragment whose lines the receiver asks for at once (the rest
/// follow as the copy streams through them).
const MAX_PREFETCH: u32 = 16;
/// Cell-body bytes before the fragment header of a pool fragment.
const POOL_META: usize = 16;
/// Largest fragment header a cell can carry.
pub const MAX_HDR: usize = CELL_BODY - POOL_META;
// HDR_COPY_FITS: `poll` copies a whole MAX_HDR bytes after either metadata; both copies
// stay inside the cell body.
const _: () = assert!(INLINE_META + MAX_HDR <= CELL_BODY && POOL_META + MAX_HDR <= CELL_BODY);
// A first cell's payload is one short copy (`Payload::copy_to`).
const _: () = assert!(CELL_BODY - INLINE_META <= crate::bytecopy::SHORT_MAX);

/// Sizes of a rank's segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShmLayout {
    /// Cells in the receive ring (power of two, ≥ 256).
    pub fifo_cells: usize,
    /// Blocks in the send pool.
    pub pool_blocks: u32,
    /// Bytes per pool block.
    pub block_size: u32,
}

impl ShmLayout {
    fn cells_offset(&self) -> usize {
        HEADER_BYTES + node::CHAN_REGION
    }
    fn flags_offset(&self) -> usize {
        self.cells_offset() + FifoRef::cells_bytes(self.fifo_cells)
    }
    fn data_offset(&self) -> usize {
        (self.flags_offset() + pool::flags_bytes(self.pool_blocks as usize)).next_multiple_of(4096)
    }
    /// Total bytes of the segment.
    pub fn bytes(&self) -> usize {
        self.data_offset() + self.pool_blocks as usize * self.block_size as usize
    }
    fn validate(&self) -> Result<()> {
        if !self.fifo_cells.is_power_of_two()
            || self.fifo_cells < 256
            || self.pool_blocks == 0
            || self.block_size < 64
        {
            return Err(Error::new(
                ErrorClass::Arg,
                format!("invalid shared-memory layout {self:?}"),
            ));
        }
        Ok(())
    }
}

/// Fixed fields at the start of a segment, so a peer can find everything else.
#[repr(C)]
struct SegHeader {
    magic: u64,
    pid: u32,
    fifo_cells: u32,
    pool_blocks: u32,
    block_size: u32,
}

/// [`Remote::flags`] bit: the exposed bytes lie in the owner's `alloc_mem` arena at offset
/// `addr`, which a peer maps and copies from (no system call), instead of at address `addr`
/// of process `key`, read with `process_vm_readv`.
pub const REMOTE_ARENA: u32 = 1;

/// Finds a peer's segment path (from its business card); called on first contact.
pub type Resolver = Box<dyn FnMut(u32) -> Result<String> + Send>;

struct Peer {
    tx: Producer,
    pool: PoolView,
    pid: i32,
    /// Path of the peer's segment (its arena is `<path>.mem`).
    path: String,
    /// The peer's arena, mapped on the first rendezvous that points into it.
    arena: Option<Segment>,
    /// The peer's world-barrier counter.
    barrier: *const AtomicU64,
    // Keeps the peer's mapping alive while `tx` and `pool` point into it.
    _seg: Segment,
}

/// Sizes and switches of the shared-memory transport, from the tunables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShmConfig {
    /// The segment's layout.
    pub layout: ShmLayout,
    /// Largest payload sent inline in cells (capped at 4096 and at the block size).
    pub inline_max: usize,
    /// Largest message sent eagerly.
    pub eager_limit: usize,
    /// Largest message sent eagerly of a collective's schedule and of data packed as it is
    /// sent (see [`Limits::coll_eager_limit`]).
    pub coll_eager_limit: usize,
    /// Whether rendezvous pulls with one copy (`process_vm_readv`, or the arena).
    pub single_copy: bool,
    /// Whether large posted receives may be written by the sender (`process_vm_writev`).
    pub recv_write: bool,
    /// Smallest rendezvous message pushed when it is the only one arriving (see
    /// [`Limits::push_min`]).
    pub push_min: usize,
    /// Adjacent pool blocks one pushed fragment takes (see [`Limits::push_frag`]).
    pub push_blocks: u32,
    /// Smallest rendezvous message copied once again when it is the only one arriving (see
    /// [`Limits::single_copy_min`]).
    pub single_copy_min: usize,
    /// Size of the `alloc_mem` arena file (sparse).
    pub arena_bytes: usize,
}

impl ShmConfig {
    /// The configuration the tunables set.
    pub fn from_config(c: &crate::config::Config) -> Self {
        ShmConfig {
            layout: ShmLayout {
                fifo_cells: c.shm_fifo_cells,
                pool_blocks: c.shm_pool_blocks,
                block_size: c.shm_block_size,
            },
            inline_max: c.shm_inline_max,
            eager_limit: c.eager_limit,
            coll_eager_limit: c.coll_eager_limit,
            single_copy: c.single_copy,
            recv_write: c.recv_write,
            push_min: c.push_min,
            push_blocks: c.shm_push_blocks,
            single_copy_min: c.single_copy_min,
            arena_bytes: c.alloc_mem_bytes,
        }
    }

    /// The limits this configuration gives the protocol layer. `get` is always on: data in a
    /// peer's `alloc_mem` arena is a plain copy even when `process_vm_readv` is off or
    /// refused (then `get` fails for other memory and the protocol falls back to chunks).
    pub fn limits(&self) -> Limits {
        let block = self.layout.block_size as usize;
        Limits {
            inline_max: self.inline_max.min(block).min(MAX_INLINE),
            max_frag: block,
            push_frag: block * pool::run_blocks(self.layout.pool_blocks, self.push_blocks) as usize,
            eager_limit: self.eager_limit,
            coll_eager_limit: self.coll_eager_limit.max(self.eager_limit),
            get: true,
            put: self.single_copy && self.recv_write,
            push_min: self.push_min,
            single_copy_min: self.single_copy_min,
            iov_max: if self.single_copy { cma::IOV_MAX } else { 0 },
        }
    }
}

/// Keeps every inline fragment within the 255 cells a u8 count can name.
const MAX_INLINE: usize = 4096;

/// A rank's endpoint of the shared-memory transport: its receive ring, polled, and the
/// [`ShmLink`] that sends.
pub struct ShmTransport {
    rx: Consumer,
    link: ShmLink,
}

/// The sending side of the shared-memory transport: this rank's pool and segment, and the
/// peers' segments mapped on first contact.
pub struct ShmLink {
    me: u32,
    pid: u32,
    pool: PoolOwner,
    peers: Vec<Option<Box<Peer>>>,
    limits: Limits,
    /// Whether `process_vm_readv` may be tried (off by configuration or once refused).
    cma: bool,
    resolve: Resolver,
    /// Other ranks on this host (world collectives through the segment header wait for them).
    local: Vec<u32>,
    /// Ranks in the job.
    size: u32,
    /// World barriers this rank has entered.
    barrier_epoch: u64,
    /// World arrival every other local rank was last seen at or past (counters only grow), so
    /// the next world collective's check of the previous arrival loads no peer's line.
    barrier_seen: u64,
    /// This rank's per-communicator collective channels (see [`node`]).
    chans: node::Channels,
    /// This rank's arena for `alloc_mem`, created on first use.
    arena: Option<arena::Arena>,
    /// Size of the arena file (sparse: only used pages cost memory).
    arena_bytes: usize,
    /// Rendezvous reads served from a peer's arena.
    arena_reads: u64,
    seg: Segment,
}

impl std::fmt::Debug for ShmTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.link.fmt(f)
    }
}

impl std::fmt::Debug for ShmLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShmLink")
            .field("me", &self.me)
            .field("segment", &self.seg.path())
            .field("limits", &self.limits)
            .finish()
    }
}

/// Payload bytes of a fragment, still in shared memory.
pub struct Payload<'a> {
    kind: PayloadKind,
    len: usize,
    _life: PhantomData<&'a ()>,
}

enum PayloadKind {
    /// `first` points at the payload's start in the first cell (`first_len` bytes there); the
    /// rest follows in continuation cells `1..`.
    Cells {
        first: *const u8,
        first_len: usize,
        rx: *const Consumer,
    },
    Block(*const u8),
}

impl Payload<'_> {
    /// Payload length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// The payload in place when it is one pool block (`None` for cells).
    #[inline]
    pub fn contiguous(&self) -> Option<&[u8]> {
        match self.kind {
            // SAFETY: as in `copy_to`: `len` announced bytes in a block nobody writes until
            // we release it, which happens after the handler call this payload lives for.
            PayloadKind::Block(p) => Some(unsafe { std::slice::from_raw_parts(p, self.len) }),
            PayloadKind::Cells { .. } => None,
        }
    }

    /// Copies the first `dst.len()` payload bytes (at most [`len`](Self::len)) into `dst`.
    // Inlined into the handler: a small message is one short copy out of its first cell.
    #[inline(always)]
    pub fn copy_to(&self, dst: &mut [u8]) {
        let want = dst.len().min(self.len);
        match self.kind {
            // SAFETY: the block holds `len` announced bytes (checked against the pool bounds
            // when the fragment was decoded) and stays untouched until we release it.
            PayloadKind::Block(p) => unsafe {
                crate::bytecopy::copy_handoff(dst.as_mut_ptr(), p, want)
            },
            PayloadKind::Cells {
                first,
                first_len,
                rx,
            } => {
                let n = want.min(first_len);
                // SAFETY: `first` points at `first_len` payload bytes inside the first cell
                // (fewer than a cell body, so at most SHORT_MAX), `dst` has room for `want` ≥ n.
                unsafe { crate::bytecopy::copy_short(dst.as_mut_ptr(), first, n) };
                if n < want {
                    Self::copy_continuation(rx, &mut dst[..want], n);
                }
            }
        }
    }

    /// Copies the payload bytes after the first cell's, `dst[done..]`, out of the
    /// continuation cells of the fragment at the head of `rx`.
    #[cold]
    #[inline(never)]
    fn copy_continuation(rx: *const Consumer, dst: &mut [u8], mut done: usize) {
        let want = dst.len();
        let mut cell = 1;
        while done < want {
            let n = (want - done).min(CELL_BODY);
            // SAFETY: the consumer outlives this payload (it is borrowed by `poll` for the
            // handler call); continuation cells belong to this published fragment, and
            // done + n ≤ want = dst.len().
            unsafe {
                let body = (*rx).body(cell);
                std::ptr::copy_nonoverlapping(body.cast::<u8>(), dst.as_mut_ptr().add(done), n);
            }
            done += n;
            cell += 1;
        }
    }
}

impl ShmTransport {
    /// Creates this rank's segment at `path`. `local` lists the other ranks on this host (of
    /// `size` in the job); `resolve` finds a peer's segment on first contact.
    pub fn create(
        me: u32,
        size: u32,
        path: &str,
        config: ShmConfig,
        local: Vec<u32>,
        resolve: Resolver,
    ) -> Result<Self> {
        let layout = config.layout;
        layout.validate()?;
        let seg = Segment::create(path, layout.bytes()).map_err(|e| {
            Error::new(
                ErrorClass::NoMem,
                format!("cannot create shared memory {path}: {e}"),
            )
        })?;
        seg.prefault();
        let base = seg.base().as_ptr();
        let pid = std::process::id();
        // SAFETY: the fresh mapping is zeroed, page-aligned and large enough for the header.
        unsafe {
            base.cast::<SegHeader>().write(SegHeader {
                magic: MAGIC,
                pid,
                fifo_cells: layout.fifo_cells as u32,
                pool_blocks: layout.pool_blocks,
                block_size: layout.block_size,
            });
        }
        // SAFETY: offsets come from `layout`, which sized the segment; all are 64-byte aligned.
        let (fifo, pool) = unsafe { views(base, &layout) };
        Ok(ShmTransport {
            rx: Consumer::new(fifo),
            link: ShmLink {
                me,
                pid,
                pool: PoolOwner::new(pool),
                peers: (0..size).map(|_| None).collect(),
                limits: config.limits(),
                cma: config.single_copy,
                resolve,
                local,
                size,
                barrier_epoch: 0,
                barrier_seen: 0,
                chans: node::Channels::default(),
                arena: None,
                arena_bytes: config.arena_bytes,
                arena_reads: 0,
                seg,
            },
        })
    }

    /// Path of this rank's segment (its shm business-card entry).
    pub fn address(&self) -> &str {
        self.link.seg.path()
    }

    /// Removes the segment's files; peers that mapped them keep their mappings.
    pub fn unlink(&mut self) {
        if let Some(a) = &mut self.link.arena {
            a.unlink();
        }
        self.link.seg.unlink();
    }

    /// Number of peers mapped so far (deferred connections).
    pub fn connected_peers(&self) -> usize {
        self.link.peers.iter().filter(|p| p.is_some()).count()
    }

    /// Rendezvous reads served from a peer's `alloc_mem` arena so far.
    pub fn arena_reads(&self) -> u64 {
        self.link.arena_reads
    }

    /// The intra-host collective helpers of this transport.
    pub fn node(&mut self) -> &mut dyn node::Node {
        &mut self.link
    }
}

impl Transport for ShmTransport {
    type Link = ShmLink;

    #[inline]
    fn link(&mut self) -> &mut ShmLink {
        &mut self.link
    }

    /// Whether a fragment is waiting in the receive ring (one load of one cache line).
    #[inline]
    fn has_arrival(&self) -> bool {
        self.rx.peek().is_some()
    }

    /// Delivers up to `budget` arrived fragments to `h`, then returns their cells and blocks
    /// to the senders.
    #[inline]
    fn poll<H: Handler>(&mut self, budget: usize, h: &mut H) -> Result<usize> {
        /// A cell whose contents make no sense, naming the rank it claims to come from.
        #[cold]
        fn corrupt(from: u32, what: &str) -> Error {
            Error::new(
                ErrorClass::Intern,
                format!("corrupt shared-memory {what} from rank {from}"),
            )
        }
        let mut n = 0;
        while n < budget {
            let Some(first) = self.rx.peek() else { break };
            let first = first.cast::<u8>();
            // SAFETY: a published cell: its 60-byte body is readable and stable until advanced.
            let (am, flags, hdr_len, ncells, from, len) = unsafe { read_meta(first) };
            // Every field below came through memory the sender can write: check each before
            // it indexes anything (`from` a peer table, `hdr_len` a cell, `ncells` the ring,
            // `block` and `len` the sender's pool).
            if from as usize >= self.link.peers.len()
                || hdr_len as usize > MAX_HDR
                || flags & !FLAG_POOL != 0
                || ncells == 0
            {
                return Err(corrupt(from, "cell"));
            }
            if flags & FLAG_POOL != 0 {
                if ncells != 1 {
                    return Err(corrupt(from, "pool fragment (cell count)"));
                }
                // SAFETY: body bytes POOL_META.. hold the header (hdr_len ≤ MAX_HDR checked);
                // a whole MAX_HDR from there ends at the body's end (see HDR_COPY_FITS).
                let (hdr_buf, block) = unsafe {
                    (
                        first
                            .add(POOL_META)
                            .cast::<[u8; MAX_HDR]>()
                            .read_unaligned(),
                        u32::from_le_bytes(
                            first.add(INLINE_META).cast::<[u8; 4]>().read_unaligned(),
                        ),
                    )
                };
                let view = self.link.peer(from)?.pool;
                let data = view
                    .block(block, len as usize)
                    .ok_or_else(|| corrupt(from, "pool fragment (block or length)"))?;
                h.frag(
                    &mut self.link,
                    Frag {
                        from,
                        am,
                        hdr: &hdr_buf[..hdr_len as usize],
                        payload: super::Payload::Shm(Payload {
                            kind: PayloadKind::Block(data),
                            len: len as usize,
                            _life: PhantomData,
                        }),
                    },
                );
                view.release(block, len as usize);
            } else {
                // Before the count is checked: a prefetch reads nothing, and cell positions
                // wrap inside the ring.
                self.rx.prefetch_rest(u32::from(ncells).min(MAX_PREFETCH));
                let first_room = CELL_BODY - INLINE_META - hdr_len as usize;
                let needed = if len as usize <= first_room {
                    1
                } else {
                    1 + (len as usize - first_room).div_ceil(CELL_BODY)
                };
                if needed != ncells as usize {
                    return Err(corrupt(from, "inline fragment (cell count)"));
                }
                // An honest sender publishes continuation cells before the first; a count that
                // runs into cells nobody published would read another sender's unfinished data.
                if !self.rx.continuation_published(ncells as u32) {
                    return Err(corrupt(from, "inline fragment (unpublished cells)"));
                }
                // The header is copied as a whole MAX_HDR bytes, a fixed-size copy (a call to
                // memcpy for `hdr_len` bytes cost ~20 instructions per message); the bytes
                // after the header are ignored.
                // SAFETY: MAX_HDR bytes from INLINE_META lie inside the first cell's body (see
                // HDR_COPY_FITS).
                let hdr_buf = unsafe {
                    first
                        .add(INLINE_META)
                        .cast::<[u8; MAX_HDR]>()
                        .read_unaligned()
                };
                let payload = Payload {
                    kind: PayloadKind::Cells {
                        // SAFETY: still inside the first cell's body (hdr_len ≤ MAX_HDR).
                        first: unsafe { first.add(INLINE_META + hdr_len as usize) },
                        first_len: first_room.min(len as usize),
                        rx: &self.rx,
                    },
                    len: len as usize,
                    _life: PhantomData,
                };
                h.frag(
                    &mut self.link,
                    Frag {
                        from,
                        am,
                        hdr: &hdr_buf[..hdr_len as usize],
                        payload: super::Payload::Shm(payload),
                    },
                );
            }
            self.rx.advance(ncells as u32);
            n += 1;
        }
        self.rx.release();
        Ok(n)
    }
}

impl ShmLink {
    #[cold]
    fn connect(&mut self, rank: u32) -> Result<()> {
        let path = (self.resolve)(rank)?;
        let seg = Segment::open(&path).map_err(|e| {
            Error::new(
                ErrorClass::Other,
                format!("cannot map rank {rank}'s shared memory {path}: {e}"),
            )
        })?;
        seg.prefault();
        let base = seg.base().as_ptr();
        if seg.len() < HEADER_BYTES {
            return Err(Error::new(
                ErrorClass::Other,
                format!("rank {rank}'s segment is truncated"),
            ));
        }
        // SAFETY: the segment is at least HEADER_BYTES long and page aligned.
        let h = unsafe { base.cast::<SegHeader>().read() };
        let layout = ShmLayout {
            fifo_cells: h.fifo_cells as usize,
            pool_blocks: h.pool_blocks,
            block_size: h.block_size,
        };
        if h.magic != MAGIC || layout.validate().is_err() || layout.bytes() > seg.len() {
            return Err(Error::new(
                ErrorClass::Other,
                format!("rank {rank}'s segment {path} is not an oxmpi segment"),
            ));
        }
        // SAFETY: layout validated against the mapping's length above.
        let (fifo, pool) = unsafe { views(base, &layout) };
        self.peers[rank as usize] = Some(Box::new(Peer {
            tx: Producer::new(fifo),
            pool: PoolView::new(pool),
            pid: h.pid as i32,
            path,
            arena: None,
            // SAFETY: BARRIER_OFFSET lies in the header page, which the length check covered.
            barrier: unsafe { base.add(BARRIER_OFFSET) }.cast::<AtomicU64>(),
            _seg: seg,
        }));
        Ok(())
    }

    #[inline]
    fn peer(&mut self, rank: u32) -> Result<&mut Peer> {
        let Some(slot) = self.peers.get(rank as usize) else {
            return Err(Error::new(
                ErrorClass::Rank,
                format!("rank {rank} is not in this job of {} ranks", self.size),
            ));
        };
        if slot.is_none() {
            self.connect(rank)?;
        }
        Ok(self.peers[rank as usize]
            .as_deref_mut()
            .expect("connected above"))
    }

    /// Copies `dst.len()` bytes at offset `off` of `rank`'s arena into `dst`.
    fn read_peer_arena(&mut self, rank: u32, off: u64, dst: &mut [u8]) -> Result<()> {
        let peer = self.peer(rank)?;
        if peer.arena.is_none() {
            let path = format!("{}.mem", peer.path);
            let seg = Segment::open(&path).map_err(|e| {
                Error::new(
                    ErrorClass::Other,
                    format!("cannot map rank {rank}'s message memory {path}: {e}"),
                )
            })?;
            peer.arena = Some(seg);
        }
        let seg = peer.arena.as_ref().expect("mapped above");
        let end = off.checked_add(dst.len() as u64);
        if end.is_none_or(|e| e > seg.len() as u64) {
            return Err(Error::new(
                ErrorClass::Intern,
                format!("rank {rank} announced data outside its message memory"),
            ));
        }
        // SAFETY: the range was checked against the mapping; the sender keeps the buffer
        // unchanged until our FIN (its send is incomplete until then).
        unsafe {
            crate::bytecopy::copy(
                dst.as_mut_ptr(),
                seg.base().as_ptr().add(off as usize),
                dst.len(),
            )
        };
        self.arena_reads += 1;
        Ok(())
    }
}

impl ShmLink {
    /// Sends a fragment of `len` (≤ `push_frag`) payload bytes that `fill` writes into a
    /// fresh pool block, or a run of adjacent blocks above `max_frag` (its address, `len`
    /// writable bytes), and `hdr` (≤ `MAX_HDR`). `Busy` also when no run is free.
    #[inline]
    fn send_block(
        &mut self,
        to: u32,
        am: u8,
        hdr: &[u8],
        len: usize,
        fill: impl FnOnce(*mut u8),
    ) -> std::result::Result<(), SendError> {
        let me = self.me;
        // A compare, not a division, on an eager fragment's path.
        let run = if len > self.limits.max_frag {
            len.div_ceil(self.limits.max_frag) as u32
        } else {
            1
        };
        let block = if run > 1 {
            self.pool.alloc_run(run)
        } else {
            self.pool.alloc(len)
        }
        .ok_or(SendError::Busy)?;
        // SAFETY: the block (or run) is ours and unannounced, `len` bytes long at least.
        let dst = unsafe { self.pool.block_mut(block) };
        // A block's payload is copied after the cell is claimed: the claim's locked
        // instruction waits for every store before it to leave the store buffer, and after
        // the copy those are the block's lines, each fetched from the core that read them
        // last. A run's copy is long enough that a cell claimed meanwhile would hold up the
        // receiver's ring for every sender behind it: copied first.
        let fill = if run > 1 {
            fill(dst);
            None
        } else {
            Some(fill)
        };
        let peer = match self.peer(to) {
            Ok(p) => p,
            Err(e) => {
                self.pool.unalloc_run(block, run);
                return Err(SendError::Fatal(e));
            }
        };
        let Some(claim) = peer.tx.claim(1) else {
            self.pool.unalloc_run(block, run);
            return Err(SendError::Busy);
        };
        if let Some(fill) = fill {
            fill(dst);
        }
        // SAFETY: claimed, unpublished cell; header fits (hdr ≤ MAX_HDR).
        unsafe {
            let b = peer.tx.body(&claim, 0).cast::<u8>();
            write_meta(b, am, FLAG_POOL, hdr.len() as u8, 1, me, len as u32);
            b.add(INLINE_META)
                .cast::<[u8; 4]>()
                .write_unaligned(block.to_le_bytes());
            std::ptr::copy_nonoverlapping(hdr.as_ptr(), b.add(POOL_META), hdr.len());
        }
        peer.tx.publish(claim);
        Ok(())
    }
}

impl Link for ShmLink {
    #[inline]
    fn limits(&self) -> Limits {
        self.limits
    }

    /// Sends one fragment: inline in cells when it fits `inline_max`, else in one pool block.
    #[inline]
    fn send(
        &mut self,
        to: u32,
        am: u8,
        hdr: &[u8],
        payload: &[u8],
    ) -> std::result::Result<(), SendError> {
        if hdr.len() > MAX_HDR || payload.len() > self.limits.push_frag {
            return Err(SendError::Fatal(Error::new(
                ErrorClass::Intern,
                format!(
                    "shm fragment too large: {}-byte header, {}-byte payload",
                    hdr.len(),
                    payload.len()
                ),
            )));
        }
        let me = self.me;
        if payload.len() <= self.limits.inline_max {
            let first_room = CELL_BODY - INLINE_META - hdr.len();
            let ncells = if payload.len() <= first_room {
                1
            } else {
                1 + (payload.len() - first_room).div_ceil(CELL_BODY)
            };
            let peer = self.peer(to).map_err(SendError::Fatal)?;
            let claim = peer.tx.claim(ncells as u32).ok_or(SendError::Busy)?;
            // SAFETY: cell 0 and continuation cells are claimed and unpublished; all writes stay
            // inside their 60-byte bodies (sizes computed above).
            unsafe {
                let b = peer.tx.body(&claim, 0).cast::<u8>();
                write_meta(
                    b,
                    am,
                    0,
                    hdr.len() as u8,
                    ncells as u8,
                    me,
                    payload.len() as u32,
                );
                std::ptr::copy_nonoverlapping(hdr.as_ptr(), b.add(INLINE_META), hdr.len());
                let n = payload.len().min(first_room);
                std::ptr::copy_nonoverlapping(payload.as_ptr(), b.add(INLINE_META + hdr.len()), n);
                let mut done = n;
                let mut i = 1;
                while done < payload.len() {
                    let n = (payload.len() - done).min(CELL_BODY);
                    let c = peer.tx.body(&claim, i).cast::<u8>();
                    std::ptr::copy_nonoverlapping(payload.as_ptr().add(done), c, n);
                    done += n;
                    i += 1;
                }
            }
            peer.tx.publish(claim);
            return Ok(());
        }
        self.send_block(to, am, hdr, payload.len(), |b| {
            // SAFETY: the block is ours and unannounced; the payload fits (checked above).
            unsafe { crate::bytecopy::copy_handoff(b, payload.as_ptr(), payload.len()) }
        })
    }

    /// A payload above `inline_max` packed straight into a pool block; smaller ones are left
    /// to `send` (cells).
    fn send_fill(
        &mut self,
        to: u32,
        am: u8,
        hdr: &[u8],
        len: usize,
        fill: &mut dyn FnMut(&mut [u8]),
    ) -> std::result::Result<bool, SendError> {
        if len <= self.limits.inline_max || len > self.limits.push_frag || hdr.len() > MAX_HDR {
            return Ok(false);
        }
        self.send_block(to, am, hdr, len, |b| {
            // SAFETY: `send_block` hands over `len` bytes of a block that is ours and
            // unannounced, so nothing else reads or writes them during the call.
            fill(unsafe { std::slice::from_raw_parts_mut(b, len) })
        })?;
        Ok(true)
    }

    /// Data in our arena is a plain copy for the receiver, better than any system call.
    #[inline]
    fn expose(&self, buf: *const u8, len: usize) -> Remote {
        match self
            .arena
            .as_ref()
            .and_then(|a| a.offset_of(buf as u64, len))
        {
            Some(off) => Remote {
                addr: off as u64,
                key: self.pid,
                flags: REMOTE_ARENA,
            },
            None => Remote {
                addr: buf as u64,
                key: self.pid,
                flags: 0,
            },
        }
    }

    fn get(&mut self, from: u32, src: Remote, dst: &mut [u8]) -> Result<()> {
        if src.flags & REMOTE_ARENA != 0 {
            return self.read_peer_arena(from, src.addr, dst);
        }
        if !self.cma {
            return Err(Error::new(ErrorClass::Other, "single copy is off"));
        }
        // The peer's pid from its own segment, not from the header it sent.
        let pid = self.peer(from)?.pid;
        cma::read_from(pid, src.addr, dst).map_err(|e| {
            // The kernel refuses cross-process copies here (ptrace policy, namespaces): the
            // protocol falls back to pushed chunks from now on.
            self.cma = false;
            self.limits.put = false;
            self.limits.iov_max = 0;
            Error::new(
                ErrorClass::Other,
                format!("process_vm_readv from rank {from} refused: {e}"),
            )
        })
    }

    unsafe fn get_iov(&mut self, from: u32, src: &[Seg], dst: &[Seg]) -> Result<()> {
        if !self.cma {
            return Err(Error::new(ErrorClass::Other, "single copy is off"));
        }
        let pid = self.peer(from)?.pid;
        // SAFETY: forwarded from our caller (every piece of `dst` writable and ours).
        unsafe { cma::read_list(pid, dst, src) }.map_err(|e| {
            self.cma = false;
            self.limits.put = false;
            self.limits.iov_max = 0;
            Error::new(
                ErrorClass::Other,
                format!("process_vm_readv (iovec) from rank {from} refused: {e}"),
            )
        })
    }

    fn put(&mut self, to: u32, dst: Remote, src: &[u8]) -> Result<()> {
        let pid = self.peer(to)?.pid;
        cma::write_to(pid, dst.addr, src).map_err(|e| {
            self.limits.put = false;
            Error::new(
                ErrorClass::Other,
                format!("process_vm_writev to rank {to} refused: {e}"),
            )
        })
    }
}

/// # Safety
/// `b` points at a writable cell body.
#[inline]
unsafe fn write_meta(b: *mut u8, am: u8, flags: u8, hdr_len: u8, ncells: u8, from: u32, len: u32) {
    // SAFETY: the first 12 bytes of the body are the metadata (caller contract).
    unsafe {
        b.cast::<[u8; 4]>().write([am, flags, hdr_len, ncells]);
        b.add(4)
            .cast::<[u8; 4]>()
            .write_unaligned(from.to_le_bytes());
        b.add(8)
            .cast::<[u8; 4]>()
            .write_unaligned(len.to_le_bytes());
    }
}

/// # Safety
/// `b` points at a readable, published cell body.
#[inline]
unsafe fn read_meta(b: *const u8) -> (u8, u8, u8, u8, u32, u32) {
    // SAFETY: the first 12 bytes of the body are the metadata (caller contract).
    unsafe {
        let [am, flags, hdr_len, ncells] = b.cast::<[u8; 4]>().read();
        let from = u32::from_le_bytes(b.add(4).cast::<[u8; 4]>().read_unaligned());
        let len = u32::from_le_bytes(b.add(8).cast::<[u8; 4]>().read_unaligned());
        (am, flags, hdr_len, ncells, from, len)
    }
}

/// # Safety
/// `base` is a live mapping laid out as `layout` describes.
unsafe fn views(base: *mut u8, layout: &ShmLayout) -> (FifoRef, PoolRef) {
    // SAFETY: offsets are inside the mapping and 64-byte aligned (HEADER_BYTES, CTL_OFFSET and
    // the cell/flag sizes are multiples of 64; the data offset is page aligned).
    unsafe {
        let fifo = FifoRef::new(
            base.add(CTL_OFFSET),
            base.add(layout.cells_offset()),
            layout.fifo_cells,
        );
        let pool = PoolRef::new(
            base.add(layout.flags_offset()),
            base.add(layout.data_offset()),
            layout.pool_blocks,
            layout.block_size,
        );
        (fifo, pool)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LAYOUT: ShmLayout = ShmLayout {
        fifo_cells: 256,
        pool_blocks: 4,
        block_size: 4096,
    };

    const CONFIG: ShmConfig = ShmConfig {
        layout: LAYOUT,
        inline_max: 1024,
        eager_limit: 1 << 16,
        coll_eager_limit: 1 << 16,
        single_copy: true,
        recv_write: true,
        push_min: 0,
        push_blocks: 2,
        single_copy_min: 0,
        arena_bytes: 1 << 20,
    };

    pub(super) fn pair(tag: &str) -> (ShmTransport, ShmTransport) {
        let path = |tag: &str, r: u32| format!("/dev/shm/oxmpi.t{}{tag}.{r}", std::process::id());
        let make = |r: u32| {
            let owned = tag.to_owned();
            let resolve: Resolver = Box::new(move |x| Ok(path(&owned, x)));
            ShmTransport::create(r, 2, &path(tag, r), CONFIG, vec![1 - r], resolve).unwrap()
        };
        (make(0), make(1))
    }

    type Arrived = Vec<(u32, u8, Vec<u8>, Vec<u8>)>;

    struct Collect(Arrived);

    impl Handler for Collect {
        fn frag<L: Link>(&mut self, _link: &mut L, f: Frag<'_>) {
            let mut data = vec![0; f.payload.len()];
            f.payload.copy_to(&mut data);
            self.0.push((f.from, f.am, f.hdr.to_vec(), data));
        }
    }

    fn drain(t: &mut ShmTransport) -> Arrived {
        let mut c = Collect(Vec::new());
        t.poll(usize::MAX, &mut c).unwrap();
        c.0
    }

    #[test]
    fn inline_and_pool_fragments_arrive_intact_and_in_order() {
        let (mut a, mut b) = pair("io");
        assert_eq!(a.connected_peers(), 0, "connections are deferred");
        let sizes = [0usize, 1, 35, 36, 37, 96, 97, 500, 1024, 1025, 4096];
        for (i, &n) in sizes.iter().enumerate() {
            let payload: Vec<u8> = (0..n).map(|k| (k * 31 + i) as u8).collect();
            a.link().send(1, i as u8, &[i as u8; 12], &payload).unwrap();
            let got = drain(&mut b);
            assert_eq!(
                got,
                vec![(0, i as u8, vec![i as u8; 12], payload)],
                "size {n}"
            );
        }
        assert_eq!(a.connected_peers(), 1);
        assert_eq!(
            b.connected_peers(),
            1,
            "receiver mapped the sender for its pool"
        );
    }

    #[test]
    fn one_copy_get_and_put_through_exposed_memory() {
        let (mut a, mut b) = pair("getput");
        let src: Vec<u8> = (0..5000u32).map(|i| (i * 7) as u8).collect();
        let remote = a.link().expose(src.as_ptr(), src.len());
        assert_eq!(remote.flags, 0, "heap memory is read with process_vm_readv");
        let mut dst = vec![0u8; src.len()];
        match b.link().get(0, remote, &mut dst) {
            Ok(()) => assert_eq!(dst, src),
            // Kernels that forbid cross-process copies turn the path off instead.
            Err(_) => assert!(!b.link().cma && !b.link().limits().put),
        }
        let p = a.node().alloc_mem(4096).unwrap();
        // SAFETY: the arena block is ours, 4096 bytes long.
        unsafe { std::ptr::write_bytes(p, 0x5a, 4096) };
        let remote = a.link().expose(p, 4096);
        assert_eq!(remote.flags, REMOTE_ARENA);
        let mut dst = vec![0u8; 4096];
        b.link().get(0, remote, &mut dst).unwrap();
        assert!(dst.iter().all(|&x| x == 0x5a));
        assert_eq!(b.arena_reads(), 1);
        let outside = Remote {
            addr: (1 << 20) - 8,
            ..remote
        };
        assert!(
            b.link().get(0, outside, &mut dst).is_err(),
            "past the arena"
        );
        a.node().free_mem(p, 4096);
    }

    #[test]
    fn fragments_beyond_the_limits_are_refused() {
        let (mut a, _b) = pair("limits");
        let big = vec![0u8; LAYOUT.block_size as usize + 1];
        assert!(matches!(
            a.link().send(1, 0, &[0; 12], &big),
            Err(SendError::Fatal(_))
        ));
        assert!(matches!(
            a.link().send(1, 0, &[0; MAX_HDR + 1], &[]),
            Err(SendError::Fatal(_))
        ));
        assert!(matches!(
            a.link().send(7, 0, &[0; 12], &[]),
            Err(SendError::Fatal(_))
        ));
    }

    #[test]
    fn full_ring_and_empty_pool_report_busy() {
        let (mut a, mut b) = pair("busy");
        let mut sent = 0;
        while a.link().send(1, 0, &[0; 12], &[7; 8]).is_ok() {
            sent += 1;
        }
        assert_eq!(sent, LAYOUT.fifo_cells);
        assert_eq!(drain(&mut b).len(), sent);
        for _ in 0..LAYOUT.pool_blocks {
            a.link().send(1, 0, &[0; 12], &[1; 2000]).unwrap();
        }
        assert!(matches!(
            a.link().send(1, 0, &[0; 12], &[1; 2000]),
            Err(SendError::Busy)
        ));
        assert_eq!(drain(&mut b).len(), LAYOUT.pool_blocks as usize);
        a.link().send(1, 0, &[0; 12], &[1; 2000]).unwrap();
    }

    /// Metadata of a hand-written cell: am, flags, hdr_len, ncells, from, len.
    type Meta = (u8, u8, u8, u8, u32, u32);

    /// Publishes, from `a` to rank 1, `claim` cells of which only the first is written, with
    /// `meta` and `block`: what a buggy or hostile peer can put in the ring.
    fn forge(a: &mut ShmTransport, claim: u32, meta: Meta, block: u32) {
        let peer = a.link.peer(1).unwrap();
        let c = peer.tx.claim(claim).unwrap();
        let (am, flags, hdr_len, ncells, from, len) = meta;
        // SAFETY: the first claimed cell, unpublished; metadata and block index fit its body.
        unsafe {
            let b = peer.tx.body(&c, 0).cast::<u8>();
            write_meta(b, am, flags, hdr_len, ncells, from, len);
            b.add(INLINE_META)
                .cast::<[u8; 4]>()
                .write_unaligned(block.to_le_bytes());
        }
        peer.tx.publish(c);
    }

    /// Issue 8 §3: a pool fragment's cell count was not checked (a count of 2 skipped the next
    /// sender's cell), nor were unknown flags or continuation cells nobody published.
    #[test]
    fn corrupt_cells_are_refused_naming_the_sender() {
        let first_room = (CELL_BODY - INLINE_META) as u32;
        let cases: [(&str, u32, Meta, u32, &str); 9] = [
            (
                "pn",
                2,
                (0, FLAG_POOL, 0, 2, 0, 8),
                0,
                "pool fragment (cell count) from rank 0",
            ),
            ("p0", 1, (0, FLAG_POOL, 0, 0, 0, 8), 0, "cell from rank 0"),
            (
                "pb",
                1,
                (0, FLAG_POOL, 0, 1, 0, 8),
                LAYOUT.pool_blocks,
                "pool fragment (block or length) from rank 0",
            ),
            (
                "pl",
                1,
                // A run may span blocks, but not past the pool's last one.
                (0, FLAG_POOL, 0, 1, 0, LAYOUT.block_size + 1),
                LAYOUT.pool_blocks - 1,
                "pool fragment (block or length) from rank 0",
            ),
            (
                "hl",
                1,
                (0, 0, MAX_HDR as u8 + 1, 1, 0, 0),
                0,
                "cell from rank 0",
            ),
            ("fr", 1, (0, 0, 0, 1, 2, 0), 0, "cell from rank 2"),
            ("fl", 1, (0, 0x80, 0, 1, 0, 0), 0, "cell from rank 0"),
            (
                "in",
                2,
                (0, 0, 0, 2, 0, 8),
                0,
                "inline fragment (cell count) from rank 0",
            ),
            (
                "iu",
                1,
                (0, 0, 0, 2, 0, first_room + 1),
                0,
                "inline fragment (unpublished cells) from rank 0",
            ),
        ];
        for (tag, claim, meta, block, want) in cases {
            let (mut a, mut b) = pair(tag);
            forge(&mut a, claim, meta, block);
            let mut c = Collect(Vec::new());
            let err = b.poll(usize::MAX, &mut c).unwrap_err();
            assert!(c.0.is_empty(), "{tag}: nothing reaches the protocol layer");
            assert!(err.to_string().contains(want), "{tag}: {err}");
        }
        // The same cells, well formed, are delivered.
        let (mut a, mut b) = pair("ok");
        forge(&mut a, 1, (3, FLAG_POOL, 0, 1, 0, 8), 0);
        forge(&mut a, 2, (4, 0, 0, 2, 0, first_room + 1), 0);
        let got: Vec<u8> = drain(&mut b).into_iter().map(|f| f.1).collect();
        assert_eq!(got, [3, 4]);
    }

    #[test]
    fn segment_is_removed_on_drop_and_bad_layouts_are_refused() {
        let (a, _b) = pair("drop");
        let path = a.address().to_owned();
        assert!(std::path::Path::new(&path).exists());
        drop(a);
        assert!(!std::path::Path::new(&path).exists());
        let bad = ShmLayout {
            fifo_cells: 100,
            ..LAYOUT
        };
        let config = ShmConfig {
            layout: bad,
            ..CONFIG
        };
        assert!(ShmTransport::create(
            0,
            1,
            "/dev/shm/oxmpi.bad",
            config,
            vec![],
            Box::new(|_| unreachable!())
        )
        .is_err());
    }
}
