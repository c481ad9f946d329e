//! Receiver-initiated write (seed 002, MPI/MBCF's "write protocol").
//!
//! When a large receive is posted before its message arrives and names its source, the
//! receiver sends that source an `ADVERT`: where the buffer is, how big, for which context and
//! tag, and how many messages from that source on that context it had seen. If the sender's
//! next message on that context is exactly that one (its count agrees, so nothing is in flight
//! that MPI's ordering would match first), fits, and carries an accepted tag, the sender copies
//! it straight into the receiver's buffer with one `process_vm_writev` and sends `WRITTEN`;
//! the receive completes without a rendezvous round trip. Any doubt (counts differ, tag or size
//! mismatch, the kernel refuses) leaves the ordinary rendezvous in charge, so the advert is
//! only ever an optimisation.
//!
//! The receiver advertises only when no earlier posted receive on the context could take a
//! message from that source, and an advertised receive cannot be cancelled.

use super::matching::ANY_TAG;

/// An advertised receive, as the sender stores it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Advert {
    /// Receiver's world rank.
    pub from: u32,
    /// Context id.
    pub ctx: u32,
    /// Accepted tag or `ANY_TAG`.
    pub tag: i32,
    /// Receiver's request slot.
    pub rreq: u32,
    /// Messages from us on `ctx` the receiver had seen (low 32 bits).
    pub seq: u32,
    /// Buffer address in the receiver.
    pub addr: u64,
    /// Buffer capacity.
    pub cap: u64,
    /// Receiver's process id.
    pub pid: u32,
}

/// Encoded length of an advert header.
pub const ADVERT_LEN: usize = 36;

impl Advert {
    /// Encodes the header (without `from`, which the transport supplies) into the first
    /// [`ADVERT_LEN`] bytes.
    pub fn encode(&self) -> [u8; super::wire::HDR_MAX] {
        let mut b = [0u8; super::wire::HDR_MAX];
        b[0..4].copy_from_slice(&self.ctx.to_le_bytes());
        b[4..8].copy_from_slice(&self.tag.to_le_bytes());
        b[8..12].copy_from_slice(&self.rreq.to_le_bytes());
        b[12..16].copy_from_slice(&self.seq.to_le_bytes());
        b[16..24].copy_from_slice(&self.addr.to_le_bytes());
        b[24..32].copy_from_slice(&self.cap.to_le_bytes());
        b[32..36].copy_from_slice(&self.pid.to_le_bytes());
        b
    }

    /// Decodes a header received from `from`.
    pub fn decode(from: u32, b: &[u8]) -> Option<Advert> {
        if b.len() < ADVERT_LEN {
            return None;
        }
        let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().expect("4 bytes"));
        let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"));
        Some(Advert {
            from,
            ctx: u32_at(0),
            tag: u32_at(4) as i32,
            rreq: u32_at(8),
            seq: u32_at(12),
            addr: u64_at(16),
            cap: u64_at(24),
            pid: u32_at(32),
        })
    }

    /// Whether a message of `len` bytes with `tag`, the sender's message number `seq` to this
    /// receiver on `ctx`, may be written into this buffer.
    pub fn accepts(&self, ctx: u32, seq: u64, tag: i32, len: usize) -> bool {
        self.ctx == ctx
            && self.seq == seq as u32
            && (self.tag == ANY_TAG || self.tag == tag)
            && len as u64 <= self.cap
    }
}

/// Message counts per (peer world rank, context id).
#[derive(Debug, Default)]
pub struct SeqCounters {
    counts: Vec<Vec<u64>>,
}

impl SeqCounters {
    /// The count for (`peer`, `ctx`), then increments it.
    #[inline]
    pub fn bump(&mut self, peer: u32, ctx: u32) -> u64 {
        let p = peer as usize;
        if p >= self.counts.len() {
            self.counts.resize_with(p + 1, Vec::new);
        }
        let row = &mut self.counts[p];
        let c = ctx as usize;
        if c >= row.len() {
            row.resize(c + 1, 0);
        }
        let v = row[c];
        row[c] = v + 1;
        v
    }

    /// The count for (`peer`, `ctx`).
    pub fn get(&self, peer: u32, ctx: u32) -> u64 {
        self.counts
            .get(peer as usize)
            .and_then(|r| r.get(ctx as usize))
            .copied()
            .unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adverts_round_trip_and_accept_only_the_next_fitting_message() {
        let a = Advert {
            from: 3,
            ctx: 4,
            tag: 7,
            rreq: 9,
            seq: 2,
            addr: 0x1000,
            cap: 1 << 20,
            pid: 42,
        };
        assert_eq!(Advert::decode(3, &a.encode()), Some(a));
        assert!(Advert::decode(3, &a.encode()[..35]).is_none());
        assert!(a.accepts(4, 2, 7, 1 << 20));
        assert!(!a.accepts(4, 3, 7, 10), "a message in flight before it");
        assert!(!a.accepts(4, 2, 8, 10), "tag");
        assert!(!a.accepts(6, 2, 7, 10), "context");
        assert!(!a.accepts(4, 2, 7, (1 << 20) + 1), "too big");
        let any = Advert { tag: ANY_TAG, ..a };
        assert!(any.accepts(4, 2, 123, 5));
    }

    #[test]
    fn counters_start_at_zero_per_peer_and_context() {
        let mut c = SeqCounters::default();
        assert_eq!(c.bump(2, 5), 0);
        assert_eq!(c.bump(2, 5), 1);
        assert_eq!(c.bump(2, 4), 0);
        assert_eq!(c.get(2, 5), 2);
        assert_eq!(c.get(9, 9), 0);
    }
}
