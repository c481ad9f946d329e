//! Data in pieces: a derived datatype's message as a list of contiguous pieces of the user's
//! memory, so a transport with iovec copies ([`Limits::iov_max`]) moves it in one copy
//! between ranks on one host instead of packing and unpacking it.
//!
//! The layer above (datatype staging) keeps the operation's packed bytes as usual and
//! registers an [`IovDesc`] naming them ([`crate::p2p::engine::Engine::register_iov`]); the
//! protocol finds it by the packed bytes' address when a rendezvous starts. A send then
//! exposes the piece list (`RTS_IOV`: the receiver reads the list out of line from the
//! sender's memory, never in the header) and a receive scatters straight into its pieces;
//! every other path (eager sizes, TCP, self, a pushed fallback) gathers the pieces into the
//! packed bytes first, or leaves the receive's packed bytes to be unpacked, as before.
//!
//! Fine-grained types (small blocks, where iovecs lose) register a [`Chunked`] packer
//! instead: the sender sends `RTS_PACKED` and packs each pushed chunk as it goes, and the
//! receiver unpacks each chunk as it arrives, so packing and unpacking run at once on the two
//! ranks' cores instead of one after the other around the copy.
//!
//! [`Limits::iov_max`]: crate::transport::Limits::iov_max

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

pub use crate::transport::Seg;

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

/// One operation's data as pieces, standing in for its packed bytes at `base`.
pub struct IovDesc {
    base: usize,
    len: usize,
    segs: Box<[Seg]>,
    /// Packs and unpacks chunks, for data not moved as pieces (then `segs` is empty).
    chunks: Option<Box<dyn Chunked>>,
    /// A send's packed bytes hold the data (gathered for a path that needs them).
    gathered: AtomicBool,
    /// A receive's data went straight into the pieces: nothing to unpack.
    direct: AtomicBool,
}

impl IovDesc {
    /// Pieces `segs` (covering `len` bytes in order) standing in for the `len` packed bytes
    /// at `base`.
    pub fn new(base: *const u8, len: usize, segs: Vec<Seg>) -> Arc<IovDesc> {
        debug_assert_eq!(segs.iter().map(|s| s.len).sum::<u64>(), len as u64);
        Arc::new(IovDesc {
            base: base as usize,
            len,
            segs: segs.into_boxed_slice(),
            chunks: None,
            gathered: AtomicBool::new(false),
            direct: AtomicBool::new(false),
        })
    }

    /// Data packed and unpacked in chunks by `chunks`, standing in for the `len` packed bytes
    /// at `base`.
    pub fn chunked(base: *const u8, len: usize, chunks: Box<dyn Chunked>) -> Arc<IovDesc> {
        Arc::new(IovDesc {
            base: base as usize,
            len,
            segs: Box::new([]),
            chunks: Some(chunks),
            gathered: AtomicBool::new(false),
            direct: AtomicBool::new(false),
        })
    }

    /// The chunk packer, when the data is not moved as pieces.
    pub(crate) fn chunks(&self) -> Option<&dyn Chunked> {
        self.chunks.as_deref()
    }

    /// The pieces.
    pub fn segs(&self) -> &[Seg] {
        &self.segs
    }

    /// Whether these pieces stand in for the `len` bytes at `base`.
    pub fn stands_for(&self, base: *const u8, len: usize) -> bool {
        self.base == base as usize && self.len == len
    }

    /// Whether a receive's data went straight into the pieces (its packed bytes are unused).
    pub fn direct(&self) -> bool {
        self.direct.load(Ordering::Acquire)
    }

    pub(crate) fn set_direct(&self) {
        self.direct.store(true, Ordering::Release);
    }

    /// Copies the pieces into the packed bytes, once.
    ///
    /// # Safety
    /// The pieces are readable and the packed bytes writable (the operation is pending, so
    /// the layer above keeps both), and they do not overlap.
    pub(crate) unsafe fn gather(&self) {
        if self.gathered.swap(true, Ordering::AcqRel) {
            return;
        }
        if let Some(c) = &self.chunks {
            // SAFETY: the packed bytes are ours, `len` long, and writable (caller contract);
            // the operation's data is readable.
            unsafe {
                c.pack(
                    0,
                    std::slice::from_raw_parts_mut(self.base as *mut u8, self.len),
                )
            };
            return;
        }
        let mut at = 0usize;
        for s in self.segs.iter() {
            let n = s.len as usize;
            // SAFETY: the caller vouches for both sides; `at + n ≤ len` as the pieces cover
            // exactly `len` bytes.
            unsafe {
                crate::bytecopy::copy(
                    (self.base as *mut u8).add(at),
                    std::ptr::with_exposed_provenance(s.addr as usize),
                    n,
                )
            };
            at += n;
        }
    }
}

impl std::fmt::Debug for IovDesc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IovDesc")
            .field("base", &self.base)
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
    fn gather_copies_the_pieces_in_order_once() {
        let src: Vec<u8> = (0..32).collect();
        let mut packed = vec![0u8; 8];
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
        let d = IovDesc::new(packed.as_mut_ptr(), 8, segs);
        assert!(d.stands_for(packed.as_ptr(), 8) && !d.stands_for(packed.as_ptr(), 7));
        // SAFETY: `src` and `packed` live and are distinct.
        unsafe { d.gather() };
        assert_eq!(packed, [3, 4, 5, 6, 7, 20, 21, 22]);
        packed[0] = 99;
        // SAFETY: as above.
        unsafe { d.gather() };
        assert_eq!(packed[0], 99, "a second gather copies nothing");
        assert!(!d.direct());
        d.set_direct();
        assert!(d.direct());
    }
}
