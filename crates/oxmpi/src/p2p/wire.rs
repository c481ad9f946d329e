//! The point-to-point protocol's fragment kinds and headers.
//!
//! - `EAGER`: the whole message travels with its envelope.
//! - `EAGER_SYNC`: the same, and the receiver answers `ACK` once it matched (synchronous send).
//! - `EAGER_HEAD` + `EAGER_CONT`...: an eager message cut into pool-block chunks, so the
//!   receiver copies early chunks out while the sender fills later ones.
//! - `RTS`: rendezvous request: envelope, length and where the data lives in the sender; the
//!   receiver pulls it with one copy and answers `FIN`, or answers `CTS` when it cannot
//!   (single copy refused), and the sender then streams `DATA` chunks through its pool.
//! - `RTS_IOV`: the same for data in pieces (see `iov`): the header names the piece list.
//! - `RTS_PACKED`: the same for data packed as it is pushed: always answered by `CTS`.

/// Active-message ids.
pub mod am {
    /// Eager message.
    pub const EAGER: u8 = 1;
    /// Eager message of a synchronous send.
    pub const EAGER_SYNC: u8 = 2;
    /// Rendezvous request.
    pub const RTS: u8 = 3;
    /// Synchronous send matched.
    pub const ACK: u8 = 4;
    /// Rendezvous data pulled; the send is complete.
    pub const FIN: u8 = 5;
    /// Rendezvous: push the data in chunks instead.
    pub const CTS: u8 = 6;
    /// One chunk of pushed rendezvous data.
    pub const DATA: u8 = 7;
    /// First chunk of an eager message larger than one fragment (full 36-byte header; its
    /// `addr` field is 1 for a synchronous send).
    pub const EAGER_HEAD: u8 = 8;
    /// A following chunk of that message (no header: chunks from one sender arrive in order).
    pub const EAGER_CONT: u8 = 9;
    /// Receiver-initiated write: where a posted receive's buffer is (see `recv_write`).
    pub const ADVERT: u8 = 10;
    /// The sender wrote a message into an advertised buffer (36-byte header, `sreq` holds the
    /// receiver's request).
    pub const WRITTEN: u8 = 11;
    /// Rendezvous request whose data is a list of pieces (a derived datatype's layout): the
    /// 40-byte `RTS` header, `addr` naming the sender's piece list and `flags` its length;
    /// the receiver reads the list, then gathers the pieces in one copy, or answers `CTS`.
    pub const RTS_IOV: u8 = 12;
    /// Rendezvous request whose data the sender packs as it pushes (a fine-grained derived
    /// datatype): the receiver answers `CTS` (no single copy: nothing is packed yet).
    pub const RTS_PACKED: u8 = 13;
}

/// The matching envelope: context, source rank in the communicator, tag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Envelope {
    /// Context id of the communicator.
    pub ctx: u32,
    /// Sender's rank in the communicator.
    pub src: u32,
    /// Message tag.
    pub tag: i32,
}

/// Header of `EAGER`/`EAGER_SYNC`/`RTS` fragments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MatchHdr {
    /// Envelope.
    pub env: Envelope,
    /// Sender's request id (`EAGER_SYNC`, `RTS`).
    pub sreq: u32,
    /// Message length (`RTS`; below 2^63, whose bit carries `idle`).
    pub len: u64,
    /// Address of the data in the sender (`RTS`).
    pub addr: u64,
    /// Sender's process id (`RTS`).
    pub pid: u32,
    /// `RTS` flags (the transport's [`Remote::flags`](crate::transport::Remote::flags)).
    pub flags: u32,
    /// `RTS`: the sender had no receive posted, so pushing the data through its pool costs
    /// it no other work (see `Proto`'s choice between pulling and pushing).
    pub idle: bool,
}

/// The bit of an `RTS`'s length word that carries [`MatchHdr::idle`] (no message is 2^63
/// bytes long).
const IDLE_BIT: u64 = 1 << 63;

/// Room for the largest header the protocol sends.
pub const HDR_MAX: usize = 40;

/// Encoded length of a header for `am`.
pub const fn match_hdr_len(am: u8) -> usize {
    match am {
        am::EAGER => 12,
        am::EAGER_SYNC => 16,
        _ => 40,
    }
}

/// Header of `ACK`/`FIN`/`CTS`/`DATA` fragments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CtrlHdr {
    /// Sender-side request id.
    pub sreq: u32,
    /// Receiver-side request id (`CTS`, `DATA`).
    pub rreq: u32,
    /// Byte offset of a `DATA` chunk.
    pub offset: u64,
}

/// Encoded length of a control header.
pub const CTRL_HDR_LEN: usize = 16;

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

impl MatchHdr {
    /// A header with `env`, `sreq` and `len`, naming no memory of the sender.
    #[inline]
    pub fn new(env: Envelope, sreq: u32, len: u64) -> MatchHdr {
        MatchHdr {
            env,
            sreq,
            len,
            addr: 0,
            pid: 0,
            flags: 0,
            idle: false,
        }
    }

    /// Writes the header for `am` into `out`, returning its length.
    #[inline]
    pub fn encode(&self, am: u8, out: &mut [u8; HDR_MAX]) -> usize {
        out[0..4].copy_from_slice(&self.env.ctx.to_le_bytes());
        out[4..8].copy_from_slice(&self.env.src.to_le_bytes());
        out[8..12].copy_from_slice(&self.env.tag.to_le_bytes());
        let n = match_hdr_len(am);
        if n > 12 {
            out[12..16].copy_from_slice(&self.sreq.to_le_bytes());
        }
        if n > 16 {
            let word = self.len | if self.idle { IDLE_BIT } else { 0 };
            out[16..24].copy_from_slice(&word.to_le_bytes());
            out[24..32].copy_from_slice(&self.addr.to_le_bytes());
            out[32..36].copy_from_slice(&self.pid.to_le_bytes());
            out[36..40].copy_from_slice(&self.flags.to_le_bytes());
        }
        n
    }

    /// Reads a header of kind `am`; `None` if `b` is too short.
    #[inline]
    pub fn decode(am: u8, b: &[u8]) -> Option<MatchHdr> {
        let n = match_hdr_len(am);
        if b.len() < n {
            return None;
        }
        let env = Envelope {
            ctx: u32_at(b, 0),
            src: u32_at(b, 4),
            tag: u32_at(b, 8) as i32,
        };
        let mut h = MatchHdr::new(env, 0, 0);
        if n > 12 {
            h.sreq = u32_at(b, 12);
        }
        if n > 16 {
            let word = u64_at(b, 16);
            h.len = word & !IDLE_BIT;
            h.idle = word & IDLE_BIT != 0;
            h.addr = u64_at(b, 24);
            h.pid = u32_at(b, 32);
            h.flags = u32_at(b, 36);
        }
        Some(h)
    }
}

impl CtrlHdr {
    /// Encodes the header.
    pub fn encode(&self) -> [u8; CTRL_HDR_LEN] {
        let mut out = [0u8; CTRL_HDR_LEN];
        out[0..4].copy_from_slice(&self.sreq.to_le_bytes());
        out[4..8].copy_from_slice(&self.rreq.to_le_bytes());
        out[8..16].copy_from_slice(&self.offset.to_le_bytes());
        out
    }

    /// Decodes a header; `None` if `b` is too short.
    pub fn decode(b: &[u8]) -> Option<CtrlHdr> {
        (b.len() >= CTRL_HDR_LEN).then(|| CtrlHdr {
            sreq: u32_at(b, 0),
            rreq: u32_at(b, 4),
            offset: u64_at(b, 8),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn match_headers_round_trip(ctx: u32, src: u32, tag: i32, sreq: u32, len in 0..1u64 << 63, addr: u64, pid: u32, flags: u32, idle: bool) {
            let env = Envelope { ctx, src, tag };
            let h = MatchHdr { env, sreq, len, addr, pid, flags, idle };
            for kind in [am::EAGER, am::EAGER_SYNC, am::RTS, am::RTS_IOV, am::RTS_PACKED] {
                let mut buf = [0u8; HDR_MAX];
                let n = h.encode(kind, &mut buf);
                let back = MatchHdr::decode(kind, &buf[..n]).unwrap();
                prop_assert_eq!(back.env, env);
                if kind != am::EAGER { prop_assert_eq!(back.sreq, sreq); }
                if kind >= am::RTS_IOV || kind == am::RTS { prop_assert_eq!(back, h); }
                prop_assert!(MatchHdr::decode(kind, &buf[..n - 1]).is_none());
            }
        }

        #[test]
        fn control_headers_round_trip(sreq: u32, rreq: u32, offset: u64) {
            let h = CtrlHdr { sreq, rreq, offset };
            prop_assert_eq!(CtrlHdr::decode(&h.encode()), Some(h));
            prop_assert!(CtrlHdr::decode(&h.encode()[..15]).is_none());
        }
    }
}
