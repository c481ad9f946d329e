//! Data in pieces: a derived datatype's message as a list of contiguous pieces of the user's
//! memory, so a transport with iovec copies ([`Limits::iov_max`]) moves it in one copy
//! between ranks on one host instead of packing and unpacking it.
//!
//! The layer above (datatype staging) registers an [`IovDesc`]
//! ([`crate::p2p::engine::Engine::register_iov`]) and passes its [`IovDesc::key`] where a
//! buffer goes; the protocol finds the descriptor by that key. A send then exposes the piece
//! list (`RTS_IOV`: the receiver reads the list out of line from the sender's memory, never
//! in the header) and a receive scatters straight into its pieces; every other path (eager
//! sizes, TCP, self, a pushed fallback) swaps in packed bytes, allocated only then: a send
//! gathers its pieces into them, a receive lands in them and is unpacked at completion.
//!
//! Fine-grained types (small blocks, where iovecs lose) register a [`Chunked`] packer
//! instead: the sender sends `RTS_PACKED` and packs each pushed chunk as it goes, and the
//! receiver unpacks each chunk as it arrives, so packing and unpacking run at once on the two
//! ranks' cores instead of one after the other around the copy. Eager-size messages register
//! one too: each eager fragment is packed straight into the transport's block and unpacked
//! straight out of the arriving fragment (or the stored unexpected bytes).
//!
//! [`Limits::iov_max`]: crate::transport::Limits::iov_max

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

pub use crate::transport::Seg;

/// Which derived-datatype operations the layer above registers with the protocol.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IovPolicy {
    /// Smallest message registered at all (packed chunk by chunk, or as pieces).
    pub min_len: usize,
    /// The band of sends packed chunk by chunk as they are pushed, both cores copying
    /// (`push_min..single_copy_min`, a lone contiguous message's pushed band); a send outside
    /// it is offered as pieces (one gathering copy by the receiver), like a lone contiguous
    /// message copied once.
    pub packed_sends: std::ops::Range<usize>,
    /// Smallest average piece worth moving as pieces.
    pub min_block: u64,
}

/// Packs and unpacks any byte range of one operation's packed stream (the datatype engine's
/// resumable pack, which this layer cannot name).
pub trait Chunked: Send + Sync {
    /// Packs stream bytes `start..start + out.len()` into `out`.
    ///
    /// # Safety
    /// The operation is pending: its data bytes are readable.
    unsafe fn pack(&self, start: u64, out: &mut [u8]);

    /// Unpacks `data` as stream bytes `start..` into the operation's memory.
    ///
    /// # Safety
    /// The operation is pending: its data bytes are writable and not otherwise accessed.
    unsafe fn unpack(&self, start: u64, data: &[u8]);
}

/// Packed bytes allocated the first time a path needs them (zeroed: every later read of
/// them is of bytes a path wrote, but a zeroed block keeps that from mattering).
struct Packed {
    ptr: std::ptr::NonNull<u8>,
    len: usize,
}

// SAFETY: the block is plain bytes owned by this value; who writes or reads it when is the
// protocol's business (the operation's request orders them), as for the user's buffers.
unsafe impl Send for Packed {}
// SAFETY: as for `Send`; `Packed` itself only hands out the address.
unsafe impl Sync for Packed {}

impl Packed {
    fn new(len: usize) -> Packed {
        if len == 0 {
            return Packed {
                ptr: std::ptr::NonNull::dangling(),
                len,
            };
        }
        let layout = std::alloc::Layout::array::<u8>(len).expect("a message's length fits");
        // SAFETY: `layout` has a non-zero size.
        let p = unsafe { std::alloc::alloc_zeroed(layout) };
        let ptr =
            std::ptr::NonNull::new(p).unwrap_or_else(|| std::alloc::handle_alloc_error(layout));
        Packed { ptr, len }
    }
}

impl Drop for Packed {
    fn drop(&mut self) {
        if self.len > 0 {
            // SAFETY: allocated in `new` with this very layout, freed once.
            unsafe {
                std::alloc::dealloc(
                    self.ptr.as_ptr(),
                    std::alloc::Layout::array::<u8>(self.len).expect("as allocated"),
                )
            };
        }
    }
}

/// One operation's data as pieces (or packed chunk by chunk), standing in for packed bytes
/// that exist only if a path needs them.
///
/// The layer above hands the protocol [`key`](Self::key) and [`len`](Self::len) in place of
/// a buffer: the key is this descriptor's own address, unique while the operation holds it,
/// and never a readable buffer. Every path that needs packed bytes (a fragment waiting for
/// room, TCP, self, a refused copy) asks for them ([`gather`](Self::gather) for a send,
/// [`packed_ptr`](Self::packed_ptr) for a receive); the one-copy and chunked paths never
/// allocate them.
pub struct IovDesc {
    len: usize,
    segs: Box<[Seg]>,
    /// Packs and unpacks chunks, for data not moved as pieces (a send's `segs` is then
    /// empty; a receive may have both).
    chunks: Option<Box<dyn Chunked>>,
    /// The packed bytes, once a path needed them.
    packed: OnceLock<Packed>,
    /// A send's packed bytes hold the data (gathered for a path that needs them).
    gathered: AtomicBool,
    /// A receive's data went straight into the pieces: nothing to unpack.
    direct: AtomicBool,
}

impl IovDesc {
    /// Pieces `segs` (covering `len` bytes in order) standing in for `len` packed bytes.
    pub fn new(len: usize, segs: Vec<Seg>) -> Arc<IovDesc> {
        debug_assert_eq!(segs.iter().map(|s| s.len).sum::<u64>(), len as u64);
        Arc::new(IovDesc {
            len,
            segs: segs.into_boxed_slice(),
            chunks: None,
            packed: OnceLock::new(),
            gathered: AtomicBool::new(false),
            direct: AtomicBool::new(false),
        })
    }

    /// Data packed and unpacked in chunks by `chunks`, standing in for `len` packed bytes.
    pub fn chunked(len: usize, chunks: Box<dyn Chunked>) -> Arc<IovDesc> {
        Self::pieces_and_chunks(len, Vec::new(), chunks)
    }

    /// A receive both ways: pieces `segs` for a sender's data gathered in one copy, and
    /// `chunks` to unpack a sender's packed chunks as they arrive.
    pub fn pieces_and_chunks(len: usize, segs: Vec<Seg>, chunks: Box<dyn Chunked>) -> Arc<IovDesc> {
        Arc::new(IovDesc {
            len,
            segs: segs.into_boxed_slice(),
            chunks: Some(chunks),
            packed: OnceLock::new(),
            gathered: AtomicBool::new(false),
            direct: AtomicBool::new(false),
        })
    }

    /// The address the operation passes for its packed bytes: never dereferenced as such
    /// (the protocol swaps in [`packed_ptr`](Self::packed_ptr) where it needs bytes).
    pub fn key(&self) -> *mut u8 {
        (self as *const IovDesc).cast::<u8>().cast_mut()
    }

    /// Packed bytes of the operation.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the operation has no bytes.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The chunk packer, when the data may move packed chunk by chunk.
    pub(crate) fn chunks(&self) -> Option<&dyn Chunked> {
        self.chunks.as_deref()
    }

    /// The pieces.
    pub fn segs(&self) -> &[Seg] {
        &self.segs
    }

    /// Whether this stands for the `len` bytes at `buf` (`buf` is its [`key`](Self::key)).
    pub fn stands_for(&self, buf: *const u8, len: usize) -> bool {
        std::ptr::eq(buf, self.key()) && self.len == len
    }

    /// Whether a receive's data went straight into the pieces (its packed bytes are unused).
    pub fn direct(&self) -> bool {
        self.direct.load(Ordering::Acquire)
    }

    pub(crate) fn set_direct(&self) {
        self.direct.store(true, Ordering::Release);
    }

    /// The packed bytes' address, allocating them (zeroed) on the first call; valid for
    /// [`len`](Self::len) bytes while this descriptor lives.
    pub(crate) fn packed_ptr(&self) -> *mut u8 {
        self.packed
            .get_or_init(|| Packed::new(self.len))
            .ptr
            .as_ptr()
    }

    /// The first `n` packed bytes (at most [`len`](Self::len)), if a path allocated them.
    ///
    /// # Safety
    /// Nothing writes the packed bytes meanwhile (the operation has completed).
    pub unsafe fn packed(&self, n: usize) -> Option<&[u8]> {
        let p = self.packed.get()?;
        // SAFETY: the block holds `len` initialised (zeroed, then written) bytes, alive as
        // long as `self`; no writer by the caller's contract.
        Some(unsafe { std::slice::from_raw_parts(p.ptr.as_ptr(), n.min(self.len)) })
    }

    /// Copies the pieces into the packed bytes, once, and returns their address.
    ///
    /// # Safety
    /// The pieces are readable (the send is pending, so the layer above keeps them).
    pub(crate) unsafe fn gather(&self) -> *const u8 {
        let base = self.packed_ptr();
        if self.gathered.swap(true, Ordering::AcqRel) {
            return base;
        }
        // SAFETY: the packed bytes are ours, `len` long, and not read or written elsewhere
        // until the send goes out.
        let out = unsafe { std::slice::from_raw_parts_mut(base, self.len) };
        if let Some(c) = &self.chunks {
            // SAFETY: the operation's data is readable (caller contract).
            unsafe { c.pack(0, out) };
            return base;
        }
        let mut at = 0usize;
        for s in self.segs.iter() {
            let n = s.len as usize;
            // SAFETY: the caller vouches for the pieces; `at + n ≤ len` as the pieces cover
            // exactly `len` bytes, and they never lie in our own block.
            unsafe {
                crate::bytecopy::copy(
                    out.as_mut_ptr().add(at),
                    std::ptr::with_exposed_provenance(s.addr as usize),
                    n,
                )
            };
            at += n;
        }
        base
    }
}

impl std::fmt::Debug for IovDesc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IovDesc")
            .field("len", &self.len)
            .field("pieces", &self.segs.len())
            .field("chunked", &self.chunks.is_some())
            .finish()
    }
}

/// The first `n` bytes of `segs`.
pub(crate) fn clip(segs: &[Seg], n: u64) -> Vec<Seg> {
    let mut out = Vec::with_capacity(segs.len());
    let mut left = n;
    for s in segs {
        if left == 0 {
            break;
        }
        let k = s.len.min(left);
        if k > 0 {
            out.push(Seg {
                addr: s.addr,
                len: k,
            });
        }
        left -= k;
    }
    out
}

/// Reads a piece list sent as bytes (native order: both ranks share a host).
pub(crate) fn decode(bytes: &[u8]) -> Vec<Seg> {
    bytes
        .chunks_exact(16)
        .map(|c| Seg {
            addr: u64::from_ne_bytes(c[..8].try_into().expect("8 bytes")),
            len: u64::from_ne_bytes(c[8..].try_into().expect("8 bytes")),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clip_cuts_inside_a_piece_and_drops_the_rest() {
        let s = [
            Seg { addr: 10, len: 4 },
            Seg { addr: 20, len: 4 },
            Seg { addr: 30, len: 4 },
        ];
        assert_eq!(
            clip(&s, 6),
            vec![Seg { addr: 10, len: 4 }, Seg { addr: 20, len: 2 }]
        );
        assert_eq!(clip(&s, 0), vec![]);
        assert_eq!(clip(&s, 100), s.to_vec());
    }

    #[test]
    fn decode_reads_the_in_memory_layout() {
        let s = [
            Seg {
                addr: 0x1234_5678_9abc,
                len: 77,
            },
            Seg { addr: 1, len: 2 },
        ];
        let bytes: Vec<u8> = s
            .iter()
            .flat_map(|x| [x.addr.to_ne_bytes(), x.len.to_ne_bytes()].concat())
            .collect();
        assert_eq!(decode(&bytes), s.to_vec());
        assert_eq!(decode(&bytes[..20]), s[..1].to_vec());
    }

    #[test]
    fn gather_copies_the_pieces_in_order_once_into_lazy_bytes() {
        let src: Vec<u8> = (0..32).collect();
        let segs = vec![
            Seg {
                addr: src.as_ptr().expose_provenance() as u64 + 3,
                len: 5,
            },
            Seg {
                addr: src.as_ptr().expose_provenance() as u64 + 20,
                len: 3,
            },
        ];
        let d = IovDesc::new(8, segs);
        assert!(d.stands_for(d.key(), 8) && !d.stands_for(d.key(), 7));
        assert!(!d.stands_for(src.as_ptr(), 8));
        // SAFETY: nothing writes the packed bytes.
        assert!(
            unsafe { d.packed(8) }.is_none(),
            "nothing allocated up front"
        );
        // SAFETY: `src` lives.
        let p = unsafe { d.gather() };
        assert_eq!(p, d.packed_ptr().cast_const());
        // SAFETY: nothing writes the packed bytes now.
        assert_eq!(unsafe { d.packed(8) }.unwrap(), [3, 4, 5, 6, 7, 20, 21, 22]);
        // SAFETY: the block has 8 bytes and nobody else uses it.
        unsafe { *d.packed_ptr() = 99 };
        // SAFETY: as above.
        assert_eq!(unsafe { d.gather() }, p);
        // SAFETY: as above.
        assert_eq!(
            unsafe { d.packed(1) }.unwrap(),
            [99],
            "a second gather copies nothing"
        );
        assert!(!d.direct());
        d.set_direct();
        assert!(d.direct());
    }

    #[test]
    fn chunked_gather_packs_everything_and_empty_ones_allocate_nothing() {
        struct Count;
        impl Chunked for Count {
            unsafe fn pack(&self, start: u64, out: &mut [u8]) {
                for (i, b) in out.iter_mut().enumerate() {
                    *b = (start as usize + i) as u8;
                }
            }
            unsafe fn unpack(&self, _: u64, _: &[u8]) {}
        }
        let d = IovDesc::chunked(5, Box::new(Count));
        // SAFETY: the packer reads nothing.
        unsafe { d.gather() };
        // SAFETY: nothing writes the packed bytes now.
        assert_eq!(unsafe { d.packed(9) }.unwrap(), [0, 1, 2, 3, 4]);
        let e = IovDesc::new(0, Vec::new());
        assert!(e.is_empty());
        // SAFETY: no pieces.
        unsafe { e.gather() };
        // SAFETY: as above.
        assert_eq!(unsafe { e.packed(3) }.unwrap(), &[] as &[u8]);
    }
}
