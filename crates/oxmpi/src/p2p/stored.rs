//! Bytes of unexpected messages, and the cache that gives their buffers back.
//!
//! An eager message that arrives before its receive is copied out of the transport, so that
//! the transport's cell or pool block is free again at once. A small one lives inline in its
//! queue entry; a larger one in a heap buffer, which the receive that takes the message hands
//! back to a [`StoreCache`]. Once warm, a stream of early messages (a receiver behind its
//! sender, a collective's peer ahead of this rank) then allocates nothing per message, and
//! neither does a restarted persistent collective whose messages arrive early.

/// Largest message kept inside its unexpected-queue entry (no allocation).
pub const STORED_INLINE: usize = 64;

/// Bytes of an unexpected message: small ones inline, so that an early message costs no
/// allocation.
#[derive(Clone, PartialEq, Eq)]
pub enum Stored {
    /// Up to [`STORED_INLINE`] bytes.
    Inline {
        /// Bytes used.
        len: u8,
        /// The bytes.
        bytes: [u8; STORED_INLINE],
    },
    /// Anything larger.
    Heap(Vec<u8>),
}

impl Stored {
    /// `len` ≤ [`STORED_INLINE`] bytes written by `fill`.
    #[inline]
    fn inline(len: usize, fill: impl FnOnce(&mut [u8])) -> Stored {
        let mut bytes = [0u8; STORED_INLINE];
        fill(&mut bytes[..len]);
        Stored::Inline {
            len: len as u8,
            bytes,
        }
    }

    /// `len` bytes written by `fill`, in a buffer of their own when not inline.
    #[cfg(test)]
    pub fn with_len(len: usize, fill: impl FnOnce(&mut [u8])) -> Stored {
        if len <= STORED_INLINE {
            return Stored::inline(len, fill);
        }
        let mut v = vec![0u8; len];
        fill(&mut v);
        Stored::Heap(v)
    }

    /// The bytes.
    #[inline]
    pub fn as_slice(&self) -> &[u8] {
        match self {
            Stored::Inline { len, bytes } => &bytes[..*len as usize],
            Stored::Heap(v) => v,
        }
    }
}

impl From<Vec<u8>> for Stored {
    fn from(v: Vec<u8>) -> Self {
        Stored::Heap(v)
    }
}

impl std::fmt::Debug for Stored {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Stored({} bytes)", self.as_slice().len())
    }
}

/// Smallest buffer class: 2^7 = 128 bytes, the first above [`STORED_INLINE`].
const MIN_CLASS: u32 = 7;
/// Classes kept: 128 B to 256 KiB (beyond the largest eager message of any transport or
/// collective).
const CLASSES: usize = 12;
/// Buffers kept per class.
const MAX_PER_CLASS: usize = 64;
/// Bytes kept in all classes together.
const MAX_BYTES: usize = 4 << 20;

/// Free buffers of unexpected messages by capacity class: class `c` holds buffers of at
/// least `2^(c + MIN_CLASS)` bytes.
#[derive(Debug)]
pub struct StoreCache {
    free: [Vec<Vec<u8>>; CLASSES],
    bytes: usize,
}

impl StoreCache {
    /// An empty cache, with room for every buffer it may keep (so that keeping one never
    /// allocates).
    pub fn new() -> StoreCache {
        StoreCache {
            free: std::array::from_fn(|_| Vec::with_capacity(MAX_PER_CLASS)),
            bytes: 0,
        }
    }

    /// `len` bytes written by `fill`, in a cached buffer when one is free.
    #[inline]
    pub fn store(&mut self, len: usize, fill: impl FnOnce(&mut [u8])) -> Stored {
        if len <= STORED_INLINE {
            return Stored::inline(len, fill);
        }
        // The class whose every buffer holds `len`: ceil(log2(len)).
        let class = (usize::BITS - (len - 1).leading_zeros()).saturating_sub(MIN_CLASS) as usize;
        let mut v = match self.free.get_mut(class) {
            Some(list) => match list.pop() {
                Some(v) => {
                    self.bytes -= v.capacity();
                    v
                }
                None => Vec::with_capacity(1 << (class as u32 + MIN_CLASS)),
            },
            None => Vec::with_capacity(len),
        };
        // A recycled buffer keeps its last message's length: only bytes beyond it are
        // zeroed before `fill` writes all `len`.
        if v.len() >= len {
            v.truncate(len);
        } else {
            v.resize(len, 0);
        }
        fill(&mut v);
        Stored::Heap(v)
    }

    /// Keeps the buffer of `s`, taken by its receive, for a later message; drops it when its
    /// class or the cache is full.
    #[inline]
    pub fn recycle(&mut self, s: Stored) {
        let Stored::Heap(v) = s else { return };
        let cap = v.capacity();
        if cap < 1 << MIN_CLASS {
            return;
        }
        // The class whose minimum `cap` reaches: floor(log2(cap)).
        let class = (usize::BITS - 1 - cap.leading_zeros() - MIN_CLASS) as usize;
        let Some(list) = self.free.get_mut(class) else {
            return;
        };
        if list.len() >= MAX_PER_CLASS || self.bytes + cap > MAX_BYTES {
            return;
        }
        self.bytes += cap;
        list.push(v);
    }
}

impl Default for StoreCache {
    fn default() -> Self {
        StoreCache::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_come_back_in_a_class_that_holds_the_next_message() {
        let mut c = StoreCache::new();
        let s = c.store(200, |b| b.fill(7));
        assert_eq!(s.as_slice(), &[7u8; 200][..]);
        let p = s.as_slice().as_ptr();
        c.recycle(s);
        // 129-256 bytes share the 256-byte class: the same buffer again, right length.
        let t = c.store(256, |b| b.fill(9));
        assert_eq!(t.as_slice().as_ptr(), p);
        assert_eq!(t.as_slice(), &[9u8; 256][..]);
        // A shorter one after it: the same buffer, cut to its length.
        c.recycle(t);
        let t = c.store(130, |b| b.fill(4));
        assert_eq!(t.as_slice().as_ptr(), p);
        assert_eq!(t.as_slice(), &[4u8; 130][..]);
        // A longer message does not take a shorter buffer.
        c.recycle(t);
        let u = c.store(257, |b| b.fill(1));
        assert_ne!(u.as_slice().as_ptr(), p);
        assert_eq!(u.as_slice().len(), 257);
    }

    #[test]
    fn small_messages_stay_inline_and_the_cache_is_bounded() {
        let mut c = StoreCache::new();
        assert!(matches!(
            c.store(STORED_INLINE, |_| {}),
            Stored::Inline { .. }
        ));
        let all: Vec<Stored> = (0..MAX_PER_CLASS + 5)
            .map(|_| c.store(1000, |_| {}))
            .collect();
        for s in all {
            c.recycle(s);
        }
        assert_eq!(c.free[3].len(), MAX_PER_CLASS);
        assert_eq!(c.bytes, MAX_PER_CLASS * 1024);
        // Beyond the largest class: allocated to size, never kept.
        let big = c.store(1 << 20, |_| {});
        assert_eq!(big.as_slice().len(), 1 << 20);
        c.recycle(big);
        assert_eq!(c.bytes, MAX_PER_CLASS * 1024);
        // The byte bound holds across classes.
        let large: Vec<Stored> = (0..MAX_PER_CLASS)
            .map(|_| c.store(200_000, |_| {}))
            .collect();
        for s in large {
            c.recycle(s);
        }
        assert!(c.bytes <= MAX_BYTES, "{} bytes kept", c.bytes);
    }
}
