//! The `self` transport: fragments a rank sends to itself.
//!
//! A send copies the fragment into a queue the transport owns (its buffers: reused, so a steady
//! stream allocates nothing); [`poll`](Transport::poll) hands them back in order. Every message
//! to oneself is eager, whatever its size: a blocking standard send to oneself before the
//! receive is posted must still complete, as MPI programs expect.

use std::collections::VecDeque;

use super::{Frag, Handler, Limits, Link, Payload, Remote, SendError, Transport, MAX_HDR};
use crate::error::{Error, ErrorClass};

/// One queued fragment.
#[derive(Debug)]
struct Queued {
    am: u8,
    hdr: [u8; MAX_HDR],
    hdr_len: u8,
    data: Vec<u8>,
}

/// The loopback transport of one rank.
#[derive(Debug)]
pub struct SelfLoop {
    me: u32,
    queue: VecDeque<Queued>,
    /// Payload buffers of delivered fragments, reused by later sends.
    spare: Vec<Vec<u8>>,
}

impl SelfLoop {
    /// The loopback transport of world rank `me`.
    pub fn new(me: u32) -> Self {
        SelfLoop {
            me,
            queue: VecDeque::new(),
            spare: Vec::new(),
        }
    }
}

impl SelfLoop {
    /// Queues fragment `am` with header `hdr` (at most [`MAX_HDR`] bytes) and the payload
    /// `put` writes into an empty reused buffer.
    fn enqueue(&mut self, am: u8, hdr: &[u8], put: impl FnOnce(&mut Vec<u8>)) {
        let mut data = self.spare.pop().unwrap_or_default();
        data.clear();
        put(&mut data);
        let mut h = [0u8; MAX_HDR];
        h[..hdr.len()].copy_from_slice(hdr);
        self.queue.push_back(Queued {
            am,
            hdr: h,
            hdr_len: hdr.len() as u8,
            data,
        });
    }
}

impl Link for SelfLoop {
    fn limits(&self) -> Limits {
        Limits {
            inline_max: usize::MAX,
            max_frag: usize::MAX,
            push_frag: usize::MAX,
            eager_limit: usize::MAX,
            coll_eager_limit: usize::MAX,
            get: false,
            put: false,
            push_min: 0,
            single_copy_min: usize::MAX,
            iov_max: 0,
        }
    }

    #[inline]
    fn send(&mut self, to: u32, am: u8, hdr: &[u8], payload: &[u8]) -> Result<(), SendError> {
        if to != self.me || hdr.len() > MAX_HDR {
            return Err(SendError::Fatal(Error::new(
                ErrorClass::Intern,
                format!(
                    "self transport of rank {} asked to send to rank {to} ({}-byte header)",
                    self.me,
                    hdr.len()
                ),
            )));
        }
        self.enqueue(am, hdr, |data| data.extend_from_slice(payload));
        Ok(())
    }

    /// Packs the payload straight into the queued fragment's (reused) buffer.
    fn send_fill(
        &mut self,
        to: u32,
        am: u8,
        hdr: &[u8],
        len: usize,
        fill: &mut dyn FnMut(&mut [u8]),
    ) -> Result<bool, SendError> {
        if to != self.me || hdr.len() > MAX_HDR {
            // `send` reports the error.
            return Ok(false);
        }
        self.enqueue(am, hdr, |data| {
            data.resize(len, 0);
            fill(data);
        });
        Ok(true)
    }

    fn expose(&self, buf: *const u8, _len: usize) -> Remote {
        Remote {
            addr: buf as u64,
            ..Remote::default()
        }
    }

    fn get(&mut self, _from: u32, _src: Remote, _dst: &mut [u8]) -> Result<(), Error> {
        Err(Error::new(
            ErrorClass::Intern,
            "the self transport has no one-copy get (every self message is eager)",
        ))
    }

    fn put(&mut self, _to: u32, _dst: Remote, _src: &[u8]) -> Result<(), Error> {
        Err(Error::new(
            ErrorClass::Intern,
            "the self transport has no one-copy put",
        ))
    }
}

impl Transport for SelfLoop {
    type Link = SelfLoop;

    #[inline]
    fn link(&mut self) -> &mut SelfLoop {
        self
    }

    #[inline]
    fn has_arrival(&self) -> bool {
        !self.queue.is_empty()
    }

    fn poll<H: Handler>(&mut self, budget: usize, h: &mut H) -> Result<usize, Error> {
        let mut n = 0;
        while n < budget {
            // Taken out first: the handler may send to us again (an ACK to our own
            // synchronous send), which pushes onto the queue.
            let Some(q) = self.queue.pop_front() else {
                break;
            };
            let me = self.me;
            h.frag(
                self,
                Frag {
                    from: me,
                    am: q.am,
                    hdr: &q.hdr[..q.hdr_len as usize],
                    payload: Payload::Bytes(&q.data),
                },
            );
            self.spare.push(q.data);
            n += 1;
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Collect(Vec<(u32, u8, Vec<u8>, Vec<u8>)>);

    impl Handler for Collect {
        fn frag<L: Link>(&mut self, link: &mut L, f: Frag<'_>) {
            let mut data = vec![0; f.payload.len()];
            f.payload.copy_to(&mut data);
            if f.am == 1 {
                // Replies sent from inside the handler arrive after what is already queued.
                link.send(f.from, 9, &[], &[]).unwrap();
            }
            self.0.push((f.from, f.am, f.hdr.to_vec(), data));
        }
    }

    #[test]
    fn fragments_come_back_in_order_with_replies_after_them() {
        let mut t = SelfLoop::new(3);
        t.send(3, 1, &[1, 2], b"hello").unwrap();
        t.send(3, 2, &[], &vec![7u8; 100_000]).unwrap();
        assert!(t.has_arrival());
        let mut c = Collect(Vec::new());
        assert_eq!(t.poll(usize::MAX, &mut c).unwrap(), 3);
        assert!(!t.has_arrival());
        assert_eq!(c.0[0], (3, 1, vec![1, 2], b"hello".to_vec()));
        assert_eq!(c.0[1], (3, 2, vec![], vec![7u8; 100_000]));
        assert_eq!(c.0[2], (3, 9, vec![], vec![]));
    }

    #[test]
    fn a_filled_fragment_carries_what_the_fill_wrote_in_order_with_sends() {
        let mut t = SelfLoop::new(2);
        t.send(2, 1, &[5], &[9u8; 300]).unwrap();
        let mut c = Collect(Vec::new());
        // A reused (longer) buffer must not leak its old bytes into a filled payload.
        t.poll(usize::MAX, &mut c).unwrap();
        let mut fill = |out: &mut [u8]| {
            assert_eq!(out.len(), 70);
            out.iter_mut().enumerate().for_each(|(i, b)| *b = i as u8);
        };
        assert!(t.send_fill(2, 4, &[6, 7], 70, &mut fill).unwrap());
        t.send(2, 5, &[], b"after").unwrap();
        let mut never = |_: &mut [u8]| panic!("no fill for another rank");
        assert!(!t.send_fill(3, 4, &[], 8, &mut never).unwrap());
        t.poll(usize::MAX, &mut c).unwrap();
        let want: Vec<u8> = (0..70).collect();
        assert_eq!(c.0[2], (2, 4, vec![6, 7], want));
        assert_eq!(c.0[3], (2, 5, vec![], b"after".to_vec()));
    }

    #[test]
    fn sending_to_another_rank_or_a_long_header_is_refused() {
        let mut t = SelfLoop::new(0);
        assert!(matches!(t.send(1, 1, &[], &[]), Err(SendError::Fatal(_))));
        assert!(matches!(
            t.send(0, 1, &[0; MAX_HDR + 1], &[]),
            Err(SendError::Fatal(_))
        ));
        assert!(t.get(0, Remote::default(), &mut []).is_err());
    }
}
