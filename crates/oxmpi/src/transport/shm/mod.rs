//! The shared-memory transport: ranks on one host.
//!
//! Each rank creates one segment holding (1) its receive queue, a ring of 32-byte cells that
//! every peer writes into ([`fifo`]), and (2) its send pool, blocks only it allocates from
//! ([`pool`]). Peers map the segment on their first message to or from it. Small fragments
//! travel inline in cells; larger ones in a pool block announced by a cell. Large messages are
//! left to the protocol layer, which uses [`cma`] single copies or chunks through the pool.
//!
//! A fragment is a record of consecutive cells whose bodies (after each 4-byte sequence word)
//! form one byte stream:
//! `am u8 | kind u8 | len u16 | from u32 | (block u32 | len u32 if POOL) | hdr | inline payload...`
//! where `kind` is the `POOL` bit (7) and the header length (bits 0-6), and `len` the inline
//! payload's length (0 for a pool fragment, whose length follows the block). The header and the
//! payload run on across cells; the record's cell count follows from the lengths, so it is not
//! sent. An eager message of up to 8 bytes (12-byte header) fills one cell: two per cache line.

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
use fifo::{Claim, Consumer, FifoRef, Producer, CELL_BODY};
use pool::{PoolOwner, PoolRef, PoolView};
use segment::Segment;

const MAGIC: u64 = 0x6f78_6d70_695f_7368; // "oxmpi_sh"
const HEADER_BYTES: usize = 4096;
const CTL_OFFSET: usize = 256;
/// The world collectives' arrival counter: a cache line of the header page that only its owner
/// writes and peers read.
const BARRIER_OFFSET: usize = 512;
/// Two data slots (used alternately by arrival number) for small world allreduces.
const COLL_SLOT_OFFSET: usize = 1024;
/// Bytes per data slot: the largest vector a shared-memory allreduce carries.
pub const COLL_SLOT_BYTES: usize = 1024;
/// `kind` bit of a fragment whose payload is in a pool block.
const FLAG_POOL: u8 = 0x80;
/// Stream bytes before the fragment header of an inline fragment.
const INLINE_META: usize = 8;
/// Stream bytes before the fragment header of a pool fragment.
const POOL_META: usize = 16;
/// Largest fragment header (it runs on into the record's following cells when it must).
pub const MAX_HDR: usize = 44;

/// Cells of a record whose stream holds `meta` bytes of metadata and `rest` more.
#[inline(always)]
const fn record_cells(meta: usize, rest: usize) -> usize {
    (meta + rest).div_ceil(CELL_BODY)
}

/// Copies `src` into a claimed record's stream at byte `off`.
///
/// # Safety
/// The claim is unpublished and covers the cells of stream bytes `..off + src.len()`.
#[inline(always)]
unsafe fn scatter(tx: &Producer, claim: &Claim, off: usize, src: &[u8]) {
    let mut done = 0;
    while done < src.len() {
        let at = off + done;
        let within = at % CELL_BODY;
        let n = (src.len() - done).min(CELL_BODY - within);
        // SAFETY: cell `at / CELL_BODY` is claimed (caller contract) and `within + n` stays
        // inside its body.
        unsafe {
            let body = tx.body(claim, (at / CELL_BODY) as u32).cast::<u8>();
            std::ptr::copy_nonoverlapping(src.as_ptr().add(done), body.add(within), n);
        }
        done += n;
    }
}

/// Copies stream bytes `off..off + dst.len()` of the record at the head of `rx` into `dst`.
///
/// # Safety
/// The record at the head is published (its first cell's acquire seen) and its cells cover
/// those bytes.
#[inline(always)]
unsafe fn gather(rx: &Consumer, off: usize, dst: &mut [u8]) {
    let mut done = 0;
    while done < dst.len() {
        let at = off + done;
        let within = at % CELL_BODY;
        let n = (dst.len() - done).min(CELL_BODY - within);
        // SAFETY: cell `at / CELL_BODY` belongs to the published record (caller contract) and
        // `within + n` stays inside its body.
        unsafe {
            let body = rx.body((at / CELL_BODY) as u32).cast::<u8>();
            std::ptr::copy_nonoverlapping(body.add(within), dst.as_mut_ptr().add(done), n);
        }
        done += n;
    }
}

/// Sizes of a rank's segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShmLayout {
    /// 32-byte cells in the receive ring (power of two, ≥ 256).
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
    /// Whether rendezvous pulls with one copy (`process_vm_readv`, or the arena).
    pub single_copy: bool,
    /// Whether large posted receives may be written by the sender (`process_vm_writev`).
    pub recv_write: bool,
    /// Smallest rendezvous message pulled with one copy when it is the only one arriving.
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
            single_copy: c.single_copy,
            recv_write: c.recv_write,
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
            eager_limit: self.eager_limit,
            get: true,
            put: self.single_copy && self.recv_write,
            single_copy_min: self.single_copy_min,
            iov_max: if self.single_copy { cma::IOV_MAX } else { 0 },
        }
    }
}

/// Bounds an inline record (149 cells at most: less than any ring) and fits its u16 length.
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
    /// This rank's per-communicator collective channels (see [`node`]).
    chans: node::Channels,
    /// This rank's arena for `alloc_mem`, created on first use.
    arena: Option<arena::Arena>,
    /// Size of the arena file (sparse: only used pages cost memory).
    arena_bytes: usize,
    /// Rendezvous reads served from a peer's arena.
    arena_reads: u64,
    /// Fragments sent since the last poll that delivered one: from the second on, this rank is
    /// streaming, and each send asks for a ring line ahead ([`Producer::prefetch_ahead`]).
    sent_since_arrival: u32,
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
    /// The payload starts at byte `off` of the stream of the record at the head of `rx`.
    Cells {
        off: usize,
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
    #[inline]
    pub fn copy_to(&self, dst: &mut [u8]) {
        let want = dst.len().min(self.len);
        match self.kind {
            // SAFETY: the block holds `len` announced bytes (checked against the pool bounds
            // when the fragment was decoded) and stays untouched until we release it.
            PayloadKind::Block(p) => unsafe { crate::bytecopy::copy(dst.as_mut_ptr(), p, want) },
            // SAFETY: the consumer outlives this payload (it is borrowed by `poll` for the
            // handler call) and has not advanced; `poll` checked that the record's published
            // cells cover `off + len` stream bytes, and `want ≤ len`.
            PayloadKind::Cells { off, rx } => unsafe { gather(&*rx, off, &mut dst[..want]) },
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
                chans: node::Channels::default(),
                arena: None,
                arena_bytes: config.arena_bytes,
                arena_reads: 0,
                sent_since_arrival: 0,
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
            // SAFETY: a published cell: its body is readable and stable until advanced.
            let (am, kind, len16, from) = unsafe { read_meta(first) };
            // Every field below came through memory the sender can write: check each before
            // it indexes anything (`from` a peer table, the lengths the ring, `block` and `len`
            // the sender's pool).
            let hdr_len = (kind & !FLAG_POOL) as usize;
            if from as usize >= self.link.peers.len() || hdr_len > MAX_HDR {
                return Err(corrupt(from, "cell"));
            }
            let pool = kind & FLAG_POOL != 0;
            let (meta, len) = if pool {
                if len16 != 0 {
                    return Err(corrupt(from, "cell"));
                }
                // SAFETY: the pool metadata lies inside the first cell's body.
                let len = unsafe { first.add(12).cast::<[u8; 4]>().read_unaligned() };
                (POOL_META, u32::from_le_bytes(len) as usize)
            } else {
                if len16 as usize > MAX_INLINE {
                    return Err(corrupt(from, "inline fragment (length)"));
                }
                (INLINE_META, len16 as usize)
            };
            let ncells = record_cells(meta, hdr_len + if pool { 0 } else { len });
            // An honest sender publishes continuation cells before the first; a record that
            // runs into cells nobody published would read another sender's unfinished data.
            // (At most 149 cells: less than any ring.)
            if ncells > 1 && !self.rx.continuation_published(ncells as u32) {
                return Err(corrupt(from, "fragment (unpublished cells)"));
            }
            let mut hdr_buf = [0u8; MAX_HDR];
            // SAFETY: the record's cells are published and cover its header.
            unsafe { gather(&self.rx, meta, &mut hdr_buf[..hdr_len]) };
            if pool {
                // SAFETY: the block index lies inside the first cell's body.
                let block = u32::from_le_bytes(unsafe {
                    first.add(INLINE_META).cast::<[u8; 4]>().read_unaligned()
                });
                let view = self.link.peer(from)?.pool;
                let data = view
                    .block(block, len)
                    .ok_or_else(|| corrupt(from, "pool fragment (block or length)"))?;
                h.frag(
                    &mut self.link,
                    Frag {
                        from,
                        am,
                        hdr: &hdr_buf[..hdr_len],
                        payload: super::Payload::Shm(Payload {
                            kind: PayloadKind::Block(data),
                            len,
                            _life: PhantomData,
                        }),
                    },
                );
                view.release(block);
            } else {
                let payload = Payload {
                    kind: PayloadKind::Cells {
                        off: INLINE_META + hdr_len,
                        rx: &self.rx,
                    },
                    len,
                    _life: PhantomData,
                };
                h.frag(
                    &mut self.link,
                    Frag {
                        from,
                        am,
                        hdr: &hdr_buf[..hdr_len],
                        payload: super::Payload::Shm(payload),
                    },
                );
            }
            self.rx.advance(ncells as u32);
            n += 1;
        }
        if n > 0 {
            self.link.sent_since_arrival = 0;
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
    /// Counts a send and says whether another one went before it since the last arrival.
    #[inline]
    fn streaming(&mut self) -> bool {
        let s = self.sent_since_arrival;
        self.sent_since_arrival = s.saturating_add(1);
        s > 0
    }

    /// Sends a fragment of `len` (≤ `max_frag`) payload bytes that `fill` writes into a
    /// fresh pool block (its address, `len` writable bytes), and `hdr` (≤ `MAX_HDR`).
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
        let streaming = self.streaming();
        let block = self.pool.alloc().ok_or(SendError::Busy)?;
        // SAFETY: the block is ours and unannounced, `max_frag` ≥ `len` bytes long.
        fill(unsafe { self.pool.block_mut(block) });
        let peer = match self.peer(to) {
            Ok(p) => p,
            Err(e) => {
                self.pool.unalloc(block);
                return Err(SendError::Fatal(e));
            }
        };
        let ncells = record_cells(POOL_META, hdr.len());
        let Some(claim) = peer.tx.claim(ncells as u32) else {
            self.pool.unalloc(block);
            return Err(SendError::Busy);
        };
        // SAFETY: claimed, unpublished cells covering the metadata and the header (hdr ≤
        // MAX_HDR, checked by the callers).
        unsafe {
            let b = peer.tx.body(&claim, 0).cast::<u8>();
            write_meta(b, am, FLAG_POOL | hdr.len() as u8, 0, me);
            b.add(INLINE_META)
                .cast::<[u8; 4]>()
                .write_unaligned(block.to_le_bytes());
            b.add(12)
                .cast::<[u8; 4]>()
                .write_unaligned((len as u32).to_le_bytes());
            scatter(&peer.tx, &claim, POOL_META, hdr);
        }
        peer.tx.publish(claim);
        if streaming {
            peer.tx.prefetch_ahead();
        }
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
        if hdr.len() > MAX_HDR || payload.len() > self.limits.max_frag {
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
            let ncells = record_cells(INLINE_META, hdr.len() + payload.len());
            let streaming = self.streaming();
            let peer = self.peer(to).map_err(SendError::Fatal)?;
            let claim = peer.tx.claim(ncells as u32).ok_or(SendError::Busy)?;
            // SAFETY: the claimed, unpublished cells cover the record's stream (sized above);
            // inline_max ≤ MAX_INLINE fits the u16 length.
            unsafe {
                let b = peer.tx.body(&claim, 0).cast::<u8>();
                write_meta(b, am, hdr.len() as u8, payload.len() as u16, me);
                scatter(&peer.tx, &claim, INLINE_META, hdr);
                scatter(&peer.tx, &claim, INLINE_META + hdr.len(), payload);
            }
            peer.tx.publish(claim);
            if streaming {
                peer.tx.prefetch_ahead();
            }
            return Ok(());
        }
        self.send_block(to, am, hdr, payload.len(), |b| {
            // SAFETY: the block is ours and unannounced; the payload fits (checked above).
            unsafe { crate::bytecopy::copy(b, payload.as_ptr(), payload.len()) }
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
        if len <= self.limits.inline_max || len > self.limits.max_frag || hdr.len() > MAX_HDR {
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
unsafe fn write_meta(b: *mut u8, am: u8, kind: u8, len: u16, from: u32) {
    // SAFETY: the first 8 bytes of the body are the metadata (caller contract).
    unsafe {
        let [l0, l1] = len.to_le_bytes();
        b.cast::<[u8; 4]>().write([am, kind, l0, l1]);
        b.add(4)
            .cast::<[u8; 4]>()
            .write_unaligned(from.to_le_bytes());
    }
}

/// # Safety
/// `b` points at a readable, published cell body.
#[inline]
unsafe fn read_meta(b: *const u8) -> (u8, u8, u16, u32) {
    // SAFETY: the first 8 bytes of the body are the metadata (caller contract).
    unsafe {
        let [am, kind, l0, l1] = b.cast::<[u8; 4]>().read();
        let from = u32::from_le_bytes(b.add(4).cast::<[u8; 4]>().read_unaligned());
        (am, kind, u16::from_le_bytes([l0, l1]), from)
    }
}

/// # Safety
/// `base` is a live mapping laid out as `layout` describes.
unsafe fn views(base: *mut u8, layout: &ShmLayout) -> (FifoRef, PoolRef) {
    // SAFETY: offsets are inside the mapping and 64-byte aligned (HEADER_BYTES, CTL_OFFSET and
    // the cell/flag sizes are multiples of 64: at least 256 cells of 32 bytes; the data offset
    // is page aligned).
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
        single_copy: true,
        recv_write: true,
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
        // With a 12-byte header the first cell holds 8 payload bytes, each further one 28.
        let sizes = [0usize, 1, 7, 8, 9, 36, 37, 500, 1024, 1025, 4096];
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

    /// Every header length with payloads around the cell boundaries, inline and in a pool
    /// block: headers and payloads run on across cells and arrive intact.
    #[test]
    fn inline_and_pool_records_of_every_header_length_arrive_intact() {
        let (mut a, mut b) = pair("hdrs");
        let step = if cfg!(miri) { 7 } else { 1 };
        for h in (0..=MAX_HDR).step_by(step) {
            for n in [0usize, 1, 19, 20, 21, 48, 49, 1024, 1025, 3000] {
                let hdr: Vec<u8> = (0..h).map(|k| (k * 7 + n) as u8).collect();
                let payload: Vec<u8> = (0..n).map(|k| (k * 13 + h) as u8).collect();
                a.link().send(1, h as u8, &hdr, &payload).unwrap();
                assert_eq!(
                    drain(&mut b),
                    vec![(0, h as u8, hdr, payload)],
                    "header {h}, payload {n}"
                );
            }
        }
    }

    /// Records of 2 to 6 cells over several laps of a 256-cell ring: many straddle its end
    /// (their cells wrap to the ring's start) and arrive intact and in order.
    #[test]
    fn inline_records_straddling_the_rings_end_arrive_intact() {
        let (mut a, mut b) = pair("wrap");
        let mut sent = Vec::new();
        let mut got = Vec::new();
        let rounds = if cfg!(miri) { 4 } else { 40 };
        for r in 0..rounds {
            // 8 records of up to 6 cells: at most 48 of the ring's 256 cells between drains.
            for k in 0..8usize {
                let n = 9 + (r * 8 + k) * 17 % 140;
                let payload: Vec<u8> = (0..n).map(|i| (i + r * 31 + k) as u8).collect();
                a.link().send(1, k as u8, &[r as u8; 12], &payload).unwrap();
                sent.push((0, k as u8, vec![r as u8; 12], payload));
            }
            got.extend(drain(&mut b));
        }
        assert!(got == sent, "records arrive intact and in order");
    }

    /// A send counts as streaming (and prefetches a ring line ahead) only after another send
    /// with no arrival in between: a reply to a message just received (ping-pong) does not.
    #[test]
    fn inline_sends_stream_only_until_something_arrives() {
        let (mut a, mut b) = pair("stream");
        a.link().send(1, 0, &[0; 12], &[1; 8]).unwrap();
        assert_eq!(
            a.link.sent_since_arrival, 1,
            "a first send is not streaming"
        );
        a.link().send(1, 0, &[0; 12], &[2; 2000]).unwrap();
        a.link().send(1, 0, &[0; 12], &[3; 8]).unwrap();
        assert_eq!(a.link.sent_since_arrival, 3);
        assert_eq!(drain(&mut b).len(), 3, "prefetching changed no data");
        b.link().send(0, 0, &[0; 12], &[4; 8]).unwrap();
        assert!(drain(&mut a).len() == 1 && a.link.sent_since_arrival == 0);
        assert!(!a.link.streaming(), "the reply after an arrival");
        assert!(a.link.streaming(), "the send after that reply");
    }

    /// Metadata of a hand-written cell: am, kind, inline length, from.
    type Meta = (u8, u8, u16, u32);

    /// Publishes, from `a` to rank 1, `claim` cells of which only the first is written, with
    /// `meta` and the pool words `block` and `len`: what a buggy or hostile peer can put in the
    /// ring.
    fn forge(a: &mut ShmTransport, claim: u32, meta: Meta, block: u32, len: u32) {
        let peer = a.link.peer(1).unwrap();
        let c = peer.tx.claim(claim).unwrap();
        let (am, kind, len16, from) = meta;
        // SAFETY: the first claimed cell, unpublished; metadata and pool words fit its body.
        unsafe {
            let b = peer.tx.body(&c, 0).cast::<u8>();
            write_meta(b, am, kind, len16, from);
            b.add(INLINE_META)
                .cast::<[u8; 4]>()
                .write_unaligned(block.to_le_bytes());
            b.add(12)
                .cast::<[u8; 4]>()
                .write_unaligned(len.to_le_bytes());
        }
        peer.tx.publish(c);
    }

    /// Issue 8 §3: every field a sender controls is checked before it indexes anything:
    /// unknown senders, header and inline lengths, pool blocks and lengths, and records whose
    /// lengths run into cells nobody published.
    #[test]
    fn corrupt_cells_are_refused_naming_the_sender() {
        // Stream bytes after the metadata in one cell.
        let room = (CELL_BODY - INLINE_META) as u16;
        let pool = FLAG_POOL;
        let cases: [(&str, u32, Meta, u32, u32, &str); 9] = [
            ("fr", 1, (0, 0, 0, 2), 0, 0, "cell from rank 2"),
            (
                "hl",
                1,
                (0, MAX_HDR as u8 + 1, 0, 0),
                0,
                0,
                "cell from rank 0",
            ),
            (
                "il",
                1,
                (0, 0, MAX_INLINE as u16 + 1, 0),
                0,
                0,
                "inline fragment (length) from rank 0",
            ),
            (
                "iu",
                1,
                (0, 0, room + 1, 0),
                0,
                0,
                "fragment (unpublished cells) from rank 0",
            ),
            (
                "hu",
                1,
                (0, room as u8 + 1, 0, 0),
                0,
                0,
                "fragment (unpublished cells) from rank 0",
            ),
            (
                "pu",
                1,
                (0, pool | ((CELL_BODY - POOL_META) as u8 + 1), 0, 0),
                0,
                8,
                "fragment (unpublished cells) from rank 0",
            ),
            ("pi", 1, (0, pool, 1, 0), 0, 8, "cell from rank 0"),
            (
                "pb",
                1,
                (0, pool, 0, 0),
                LAYOUT.pool_blocks,
                8,
                "pool fragment (block or length) from rank 0",
            ),
            (
                "pl",
                1,
                (0, pool, 0, 0),
                0,
                LAYOUT.block_size + 1,
                "pool fragment (block or length) from rank 0",
            ),
        ];
        for (tag, claim, meta, block, len, want) in cases {
            let (mut a, mut b) = pair(tag);
            forge(&mut a, claim, meta, block, len);
            let mut c = Collect(Vec::new());
            let err = b.poll(usize::MAX, &mut c).unwrap_err();
            assert!(c.0.is_empty(), "{tag}: nothing reaches the protocol layer");
            assert!(err.to_string().contains(want), "{tag}: {err}");
        }
        // The same cells, well formed, are delivered.
        let (mut a, mut b) = pair("ok");
        forge(&mut a, 1, (3, pool, 0, 0), 0, 8);
        forge(&mut a, 2, (4, 0, room + 1, 0), 0, 0);
        forge(&mut a, 2, (5, room as u8 + 1, 0, 0), 0, 0);
        let got: Vec<u8> = drain(&mut b).into_iter().map(|f| f.1).collect();
        assert_eq!(got, [3, 4, 5]);
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
