//! Message memory in shared memory (`MPI_Alloc_mem`): buffers that peers on the host can read
//! directly, so a large send from such a buffer is one `memcpy` by the receiver instead of a
//! `process_vm_readv` (which pins pages and runs below memcpy speed).
//!
//! Each rank's arena is a sparse file next to its segment (`<segment>.mem`), created on the
//! first allocation and mapped by a peer on the first rendezvous that points into it. Tmpfs
//! backs only the pages actually used.

use std::collections::BTreeMap;

use super::segment::Segment;

/// First-fit allocator over `[0, len)` with coalescing of freed neighbours.
#[derive(Debug)]
pub struct FreeList {
    /// Free ranges: offset → length, never adjacent.
    free: BTreeMap<usize, usize>,
}

/// Alignment of every allocation (a cache line, so buffers never share one).
pub const ALIGN: usize = 64;

impl FreeList {
    /// Everything free.
    pub fn new(len: usize) -> Self {
        let mut free = BTreeMap::new();
        if len > 0 {
            free.insert(0, len);
        }
        FreeList { free }
    }

    /// Rounds a request up to the allocation granule.
    pub fn granule(len: usize) -> usize {
        len.max(1).div_ceil(ALIGN) * ALIGN
    }

    /// Takes `len` bytes (rounded up to [`ALIGN`]); returns the offset.
    pub fn alloc(&mut self, len: usize) -> Option<usize> {
        let len = Self::granule(len);
        let (&off, &size) = self.free.iter().find(|(_, &size)| size >= len)?;
        self.free.remove(&off);
        if size > len {
            self.free.insert(off + len, size - len);
        }
        Some(off)
    }

    /// Returns `len` bytes at `off` (as passed to and returned by [`alloc`](Self::alloc)).
    pub fn free(&mut self, off: usize, len: usize) {
        let mut off = off;
        let mut len = Self::granule(len);
        if let Some((&next_off, &next_len)) = self.free.range(off + len..).next() {
            if next_off == off + len {
                self.free.remove(&next_off);
                len += next_len;
            }
        }
        if let Some((&prev_off, &prev_len)) = self.free.range(..off).next_back() {
            if prev_off + prev_len == off {
                self.free.remove(&prev_off);
                off = prev_off;
                len += prev_len;
            }
        }
        self.free.insert(off, len);
    }

    /// Total free bytes.
    #[cfg(test)]
    pub fn free_bytes(&self) -> usize {
        self.free.values().sum()
    }
}

/// This rank's arena: the mapping and its allocator.
#[derive(Debug)]
pub struct Arena {
    seg: Segment,
    list: FreeList,
}

impl Arena {
    /// Creates the arena file at `path` with room for `len` bytes.
    pub fn create(path: &str, len: usize) -> std::io::Result<Arena> {
        Ok(Arena {
            seg: Segment::create(path, len)?,
            list: FreeList::new(len),
        })
    }

    /// Allocates `len` bytes; returns their address in this process.
    pub fn alloc(&mut self, len: usize) -> Option<*mut u8> {
        let off = self.list.alloc(len)?;
        // SAFETY: the free list only hands out offsets inside the mapping.
        Some(unsafe { self.seg.base().as_ptr().add(off) })
    }

    /// Frees an allocation made by [`alloc`](Self::alloc) with the same `len`.
    pub fn free(&mut self, ptr: *mut u8, len: usize) {
        if let Some(off) = self.offset_of(ptr as u64, len) {
            self.list.free(off, len);
        }
    }

    /// The offset of `[addr, addr + len)` in the arena, if it lies wholly inside.
    pub fn offset_of(&self, addr: u64, len: usize) -> Option<usize> {
        let base = self.seg.base().as_ptr() as u64;
        let end = base + self.seg.len() as u64;
        (addr >= base && addr.checked_add(len as u64)? <= end).then(|| (addr - base) as usize)
    }

    /// Removes the file; mappings stay valid.
    pub fn unlink(&mut self) {
        self.seg.unlink();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_fit_with_coalescing() {
        let mut f = FreeList::new(1024);
        let a = f.alloc(100).unwrap();
        let b = f.alloc(64).unwrap();
        let c = f.alloc(1).unwrap();
        assert_eq!((a, b, c), (0, 128, 192));
        assert_eq!(f.free_bytes(), 1024 - 256);
        assert!(f.alloc(1024).is_none());
        f.free(b, 64);
        assert_eq!(f.alloc(50), Some(128), "reuses the hole");
        f.free(128, 50);
        f.free(a, 100);
        f.free(c, 1);
        assert_eq!(f.free_bytes(), 1024);
        assert_eq!(f.alloc(1024), Some(0), "all coalesced back into one range");
    }

    #[test]
    fn arena_addresses_are_inside_the_mapping() {
        let path = format!("/dev/shm/oxmpi.test{}.arena", std::process::id());
        let mut a = Arena::create(&path, 1 << 20).unwrap();
        let p = a.alloc(4096).unwrap();
        assert_eq!(a.offset_of(p as u64, 4096), Some(0));
        assert_eq!(a.offset_of(p as u64, (1 << 20) + 1), None);
        assert_eq!(a.offset_of(8, 1), None);
        a.free(p, 4096);
        assert_eq!(a.alloc(1 << 20), Some(p));
    }
}
