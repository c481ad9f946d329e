//! The TCP framing: every fragment travels as a 16-byte frame header, the protocol header and
//! the payload. The header carries a per-peer sequence number, which lets the receiver put
//! frames striped over several rails back in order and drop the ones a failover sent twice.
//!
//! Layout: `len u32 | kind u8 | am u8 | hdr_len u8 | CHECK u8 | seq u64`, little-endian.

use super::super::MAX_HDR;

/// Bytes of a frame header.
pub const FRAME_HDR: usize = 16;
/// A protocol fragment (sequenced).
pub const KIND_MSG: u8 = 1;
/// A cumulative acknowledgement: `seq` is the number of fragments delivered so far.
pub const KIND_ACK: u8 = 2;
/// A fixed byte that catches a stream that lost its framing (or was never ours).
const CHECK: u8 = 0xA5;

/// A decoded frame header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameHdr {
    /// [`KIND_MSG`] or [`KIND_ACK`].
    pub kind: u8,
    /// Active-message id of a fragment.
    pub am: u8,
    /// Protocol header bytes after the frame header.
    pub hdr_len: u8,
    /// Payload bytes after the protocol header.
    pub len: u32,
    /// Sequence number (fragments) or delivered count (acknowledgements).
    pub seq: u64,
}

impl FrameHdr {
    /// The header as sent.
    #[inline]
    pub fn encode(&self) -> [u8; FRAME_HDR] {
        let mut b = [0u8; FRAME_HDR];
        b[0..4].copy_from_slice(&self.len.to_le_bytes());
        b[4] = self.kind;
        b[5] = self.am;
        b[6] = self.hdr_len;
        b[7] = CHECK;
        b[8..16].copy_from_slice(&self.seq.to_le_bytes());
        b
    }

    /// Decodes and validates a header; `max_payload` is the largest payload a peer may send.
    /// The error says what is wrong, for the fault message.
    #[inline]
    pub fn decode(b: &[u8], max_payload: usize) -> Result<FrameHdr, String> {
        let b: &[u8; FRAME_HDR] = b
            .get(..FRAME_HDR)
            .and_then(|s| s.try_into().ok())
            .ok_or_else(|| "short frame header".to_owned())?;
        let h = FrameHdr {
            len: u32::from_le_bytes([b[0], b[1], b[2], b[3]]),
            kind: b[4],
            am: b[5],
            hdr_len: b[6],
            seq: u64::from_le_bytes([b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]]),
        };
        if b[7] != CHECK {
            return Err(format!(
                "frame check byte is {:#04x}, not {CHECK:#04x}",
                b[7]
            ));
        }
        match h.kind {
            KIND_MSG => {}
            KIND_ACK if h.len == 0 && h.hdr_len == 0 => {}
            k => return Err(format!("unknown frame kind {k} ({} payload bytes)", h.len)),
        }
        if h.hdr_len as usize > MAX_HDR {
            return Err(format!(
                "{}-byte protocol header (at most {MAX_HDR})",
                h.hdr_len
            ));
        }
        if h.len as usize > max_payload {
            return Err(format!("{}-byte payload (at most {max_payload})", h.len));
        }
        Ok(h)
    }

    /// Bytes of the whole frame.
    #[inline]
    pub fn total(&self) -> usize {
        FRAME_HDR + self.hdr_len as usize + self.len as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn headers_round_trip(am in any::<u8>(), hdr_len in 0u8..=MAX_HDR as u8, len in 0u32..1 << 20, seq in any::<u64>()) {
            let h = FrameHdr { kind: KIND_MSG, am, hdr_len, len, seq };
            prop_assert_eq!(FrameHdr::decode(&h.encode(), 1 << 20), Ok(h));
            prop_assert_eq!(h.total(), FRAME_HDR + hdr_len as usize + len as usize);
        }

        #[test]
        fn garbage_is_refused_not_trusted(bytes in prop::collection::vec(any::<u8>(), FRAME_HDR)) {
            if let Ok(h) = FrameHdr::decode(&bytes, 4096) {
                prop_assert!(h.len <= 4096 && h.hdr_len as usize <= MAX_HDR);
                prop_assert_eq!(bytes[7], CHECK);
            }
        }
    }

    #[test]
    fn each_kind_of_bad_header_says_what_is_wrong() {
        let ok = FrameHdr {
            kind: KIND_MSG,
            am: 3,
            hdr_len: 8,
            len: 100,
            seq: 7,
        };
        let mut b = ok.encode();
        b[7] = 0;
        assert!(FrameHdr::decode(&b, 4096)
            .unwrap_err()
            .contains("check byte"));
        let mut b = ok.encode();
        b[4] = 9;
        assert!(FrameHdr::decode(&b, 4096)
            .unwrap_err()
            .contains("unknown frame kind 9"));
        let big = FrameHdr { len: 5000, ..ok }.encode();
        assert!(FrameHdr::decode(&big, 4096)
            .unwrap_err()
            .contains("5000-byte payload"));
        let long = FrameHdr {
            hdr_len: MAX_HDR as u8 + 1,
            ..ok
        }
        .encode();
        assert!(FrameHdr::decode(&long, 4096)
            .unwrap_err()
            .contains("protocol header"));
        let ack_with_data = FrameHdr {
            kind: KIND_ACK,
            ..ok
        }
        .encode();
        assert!(FrameHdr::decode(&ack_with_data, 4096).is_err());
        assert!(FrameHdr::decode(&b[..3], 4096).is_err());
    }
}
