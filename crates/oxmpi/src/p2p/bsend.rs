//! Buffered sends (`MPI_Bsend`): the message is copied into the byte region the user attached,
//! so the call returns at once; the copy is sent from there like any other message and its
//! space is reclaimed when that send completes.
//!
//! Each message takes its length plus [`BSEND_OVERHEAD`] bytes of the region, exactly what MPI
//! tells users to reserve, so a buffer sized by the standard's formula always fits the
//! messages it was sized for. The bookkeeping itself lives outside the region; the overhead
//! only keeps that promise. [`Arena`] is the allocator (first fit over a sorted free list,
//! neighbours merged on release), pure logic with no engine in it.

use super::engine::{Engine, SendMode};
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

/// One copy in flight: its request and its bytes in the arena.
#[derive(Debug)]
struct Inflight {
    id: ReqId,
    off: usize,
    len: usize,
}

/// The attached region, its allocator, and the copies in flight.
#[derive(Debug, Default)]
pub struct BsendBuffer {
    region: Option<Region>,
    arena: Arena,
    inflight: Vec<Inflight>,
}

impl BsendBuffer {
    /// Attaches `region`. Fails ([`ErrorClass::Buffer`]) if a region is already attached.
    pub fn attach(&mut self, region: Region) -> Result<()> {
        if self.region.is_some() {
            return Err(Error::new(
                ErrorClass::Buffer,
                "buffer_attach: a buffer is already attached",
            ));
        }
        self.region = Some(region);
        self.arena = Arena::new(region.len);
        Ok(())
    }

    /// Whether copies are still being sent.
    pub fn busy(&self) -> bool {
        !self.inflight.is_empty()
    }

    /// Bytes of the attached region, if one is attached.
    pub fn attached_len(&self) -> Option<usize> {
        self.region.as_ref().map(|r| r.len)
    }

    /// Detaches the region once nothing is in flight and returns it.
    pub fn detach(&mut self) -> Result<Region> {
        if self.busy() {
            return Err(Error::new(
                ErrorClass::Intern,
                "buffer_detach: buffered sends are still in flight",
            ));
        }
        let r = self.region.take().ok_or_else(|| {
            Error::new(ErrorClass::Buffer, "buffer_detach: no buffer is attached")
        })?;
        self.arena = Arena::default();
        Ok(r)
    }
}

impl Engine {
    /// Frees the space of buffered sends that have completed.
    pub fn reclaim_bsend(&mut self) {
        let mut b = std::mem::take(&mut self.bsend);
        b.inflight.retain(|f| {
            if self.test(f.id).is_some() {
                b.arena.release(f.off, f.len);
                false
            } else {
                true
            }
        });
        self.bsend = b;
    }

    /// Copies `data` into the attached region and starts sending the copy to world rank `to`.
    /// Fails with [`ErrorClass::Buffer`] when no region is attached or no free range of the
    /// region holds `data.len() + BSEND_OVERHEAD` bytes.
    pub fn bsend(&mut self, data: &[u8], to: u32, env: Envelope) -> Result<()> {
        self.reclaim_bsend();
        let Some(region) = self.bsend.region else {
            return Err(Error::new(
                ErrorClass::Buffer,
                "buffered_send: no buffer is attached (use buffer_attach)",
            ));
        };
        let need = data.len() + BSEND_OVERHEAD;
        let Some(off) = self.bsend.arena.alloc(need) else {
            return Err(Error::new(
                ErrorClass::Buffer,
                format!(
                    "buffered_send: {} bytes do not fit: {} of {} attached bytes in use, largest free range {} (each message also takes {BSEND_OVERHEAD})",
                    data.len(),
                    self.bsend.arena.used(),
                    region.len,
                    self.bsend.arena.largest_free(),
                ),
            ));
        };
        // SAFETY: `[off, off + need)` lies inside the attached region (the arena covers
        // exactly `region.len` bytes), no other copy in flight owns any of it, and whoever
        // attached the region guaranteed it valid and unused by anyone else until detach,
        // which waits for every copy to drain. `data` is a separate borrow of the caller's
        // memory, so the ranges do not overlap.
        let copy = unsafe {
            let dst = region.ptr.add(off);
            crate::bytecopy::copy(dst, data.as_ptr(), data.len());
            dst as *const u8
        };
        // SAFETY: the copy stays valid and unchanged until the send completes: its range is
        // released only by `reclaim_bsend` once the request is done, and the region is
        // detached only when nothing is in flight.
        let started = unsafe { self.isend(SendMode::Standard, copy, data.len(), to, env) };
        match started {
            Ok(Some(id)) => {
                self.bsend.inflight.push(Inflight { id, off, len: need });
                Ok(())
            }
            Ok(None) => {
                self.bsend.arena.release(off, need);
                Ok(())
            }
            Err(e) => {
                self.bsend.arena.release(off, need);
                Err(e)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

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
        b.attach(region(100)).unwrap();
        assert_eq!(
            b.attach(region(100)).unwrap_err().class(),
            ErrorClass::Buffer
        );
        assert!(!b.busy());
        assert_eq!(b.detach().unwrap().len, 100);
        assert_eq!(b.detach().unwrap_err().class(), ErrorClass::Buffer);
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
