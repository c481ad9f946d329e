//! MPI matching: posted receives and unexpected messages, per communicator context.
//!
//! Both queues keep MPI's order: a message matches the earliest posted receive it fits, and a
//! receive matches the earliest arrived message it fits. Messages from one sender arrive in the
//! order they were sent (every transport is FIFO per pair), so non-overtaking holds, wildcards
//! included. Queues are plain lists indexed by context id (no hashing on the message path).

use std::collections::VecDeque;

pub use super::stored::Stored;
use super::wire::Envelope;

/// Wildcard source (`MPI_ANY_SOURCE`, ABI value).
pub const ANY_SOURCE: i32 = -1;
/// Wildcard tag (`MPI_ANY_TAG`, ABI value).
pub const ANY_TAG: i32 = -2;
/// The null process (`MPI_PROC_NULL`, ABI value).
pub const PROC_NULL: i32 = -3;

/// A posted receive waiting for a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Posted {
    /// Source rank or [`ANY_SOURCE`].
    pub src: i32,
    /// Tag or [`ANY_TAG`].
    pub tag: i32,
    /// Request to complete.
    pub req: u32,
}

/// What an unexpected message holds until a receive matches it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Body {
    /// Eager data, copied out of the transport.
    Eager(Stored),
    /// Eager data of a synchronous send; the sender waits for an `ACK` naming `sreq`.
    EagerSync {
        /// The data.
        data: Stored,
        /// Sender's request.
        sreq: u32,
    },
    /// A rendezvous request; the data is still in the sender.
    Rts {
        /// Sender's request.
        sreq: u32,
        /// Message length.
        len: u64,
        /// Address in the sender.
        addr: u64,
        /// Sender's process id.
        pid: u32,
        /// `RTS` flags (data in the sender's arena), or the piece count of an `RTS_IOV`.
        flags: u32,
        /// Whether the sender had no receive posted when it sent it (`MatchHdr::idle`).
        idle: bool,
        /// Which rendezvous request it came as (`RTS`, `RTS_IOV`, `RTS_PACKED`).
        kind: u8,
    },
}

impl Body {
    /// Length of the message in bytes.
    pub fn len(&self) -> u64 {
        match self {
            Body::Eager(d) | Body::EagerSync { data: d, .. } => d.as_slice().len() as u64,
            Body::Rts { len, .. } => *len,
        }
    }
}

/// A message that arrived before its receive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unexpected {
    /// Its envelope.
    pub env: Envelope,
    /// World rank of the sender.
    pub from: u32,
    /// Its content.
    pub body: Body,
}

#[derive(Debug, Default)]
struct Queues {
    posted: VecDeque<Posted>,
    unexpected: VecDeque<Unexpected>,
}

/// All matching state of a process.
#[derive(Debug, Default)]
pub struct Matcher {
    ctx: Vec<Queues>,
}

/// Whether a receive for (`src`, `tag`) accepts a message with envelope `env`.
#[inline]
pub fn accepts(src: i32, tag: i32, env: &Envelope) -> bool {
    (src == ANY_SOURCE || src as u32 == env.src) && (tag == ANY_TAG || tag == env.tag)
}

impl Matcher {
    /// Empty queues.
    pub fn new() -> Self {
        Matcher::default()
    }

    #[inline]
    fn queues(&mut self, ctx: u32) -> &mut Queues {
        let i = ctx as usize;
        if i >= self.ctx.len() {
            self.ctx.resize_with(i + 1, Queues::default);
        }
        &mut self.ctx[i]
    }

    /// Matches an arriving message against posted receives, removing the receive it matched.
    #[inline]
    pub fn match_arrival(&mut self, env: &Envelope) -> Option<Posted> {
        let q = self.ctx.get_mut(env.ctx as usize)?;
        // Most arrivals match the oldest receive (streams, windows): take it without the
        // general search and the shifting `remove` does (measured ~60 instructions/message).
        if q.posted.front().is_some_and(|p| accepts(p.src, p.tag, env)) {
            return q.posted.pop_front();
        }
        let i = q.posted.iter().position(|p| accepts(p.src, p.tag, env))?;
        q.posted.remove(i)
    }

    /// Queues a receive that found no unexpected message.
    #[inline]
    pub fn post(&mut self, ctx: u32, p: Posted) {
        self.queues(ctx).posted.push_back(p);
    }

    /// Removes and returns the earliest unexpected message a receive (`src`, `tag`) accepts.
    #[inline]
    pub fn take_unexpected(&mut self, ctx: u32, src: i32, tag: i32) -> Option<Unexpected> {
        let q = self.ctx.get_mut(ctx as usize)?;
        if q.unexpected
            .front()
            .is_some_and(|u| accepts(src, tag, &u.env))
        {
            return q.unexpected.pop_front();
        }
        let i = q
            .unexpected
            .iter()
            .position(|u| accepts(src, tag, &u.env))?;
        q.unexpected.remove(i)
    }

    /// The earliest unexpected message a receive (`src`, `tag`) would accept (probe).
    pub fn peek_unexpected(&self, ctx: u32, src: i32, tag: i32) -> Option<&Unexpected> {
        self.ctx
            .get(ctx as usize)?
            .unexpected
            .iter()
            .find(|u| accepts(src, tag, &u.env))
    }

    /// Stores a message no posted receive accepted.
    pub fn push_unexpected(&mut self, u: Unexpected) {
        self.queues(u.env.ctx).unexpected.push_back(u);
    }

    /// Removes a posted receive (cancel); false if it already matched.
    pub fn cancel(&mut self, ctx: u32, req: u32) -> bool {
        let Some(q) = self.ctx.get_mut(ctx as usize) else {
            return false;
        };
        match q.posted.iter().position(|p| p.req == req) {
            Some(i) => {
                q.posted.remove(i);
                true
            }
            None => false,
        }
    }

    /// Whether a posted receive other than `req` on `ctx` could take a message from `src`.
    pub fn other_posted_from(&self, ctx: u32, src: i32, req: u32) -> bool {
        self.ctx.get(ctx as usize).is_some_and(|q| {
            q.posted
                .iter()
                .any(|p| p.req != req && (p.src == src || p.src == ANY_SOURCE))
        })
    }

    /// Number of receives posted on `ctx`.
    #[inline]
    pub fn posted_on(&self, ctx: u32) -> usize {
        self.ctx.get(ctx as usize).map_or(0, |q| q.posted.len())
    }

    /// Whether any receive is posted, on any context.
    pub fn any_posted(&self) -> bool {
        self.ctx.iter().any(|q| !q.posted.is_empty())
    }

    /// Number of unexpected messages stored on `ctx`.
    #[inline]
    pub fn unexpected_on(&self, ctx: u32) -> usize {
        self.ctx.get(ctx as usize).map_or(0, |q| q.unexpected.len())
    }

    /// Number of posted receives and unexpected messages on `ctx`.
    #[cfg(test)]
    pub fn depth(&self, ctx: u32) -> (usize, usize) {
        self.ctx
            .get(ctx as usize)
            .map_or((0, 0), |q| (q.posted.len(), q.unexpected.len()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(ctx: u32, src: u32, tag: i32) -> Envelope {
        Envelope { ctx, src, tag }
    }

    fn msg(ctx: u32, src: u32, tag: i32, byte: u8) -> Unexpected {
        Unexpected {
            env: env(ctx, src, tag),
            from: src,
            body: Body::Eager(Stored::with_len(1, |b| b[0] = byte)),
        }
    }

    #[test]
    fn arrivals_match_the_earliest_fitting_receive() {
        let mut m = Matcher::new();
        m.post(
            0,
            Posted {
                src: 1,
                tag: 5,
                req: 10,
            },
        );
        m.post(
            0,
            Posted {
                src: ANY_SOURCE,
                tag: 5,
                req: 11,
            },
        );
        m.post(
            0,
            Posted {
                src: 2,
                tag: ANY_TAG,
                req: 12,
            },
        );
        assert_eq!(m.match_arrival(&env(0, 2, 5)).map(|p| p.req), Some(11));
        assert_eq!(m.match_arrival(&env(0, 2, 5)).map(|p| p.req), Some(12));
        assert_eq!(m.match_arrival(&env(0, 2, 5)), None);
        assert_eq!(m.match_arrival(&env(0, 1, 5)).map(|p| p.req), Some(10));
        assert_eq!(m.depth(0), (0, 0));
    }

    #[test]
    fn receives_take_unexpected_messages_in_arrival_order() {
        let mut m = Matcher::new();
        m.push_unexpected(msg(0, 1, 7, b'a'));
        m.push_unexpected(msg(0, 2, 7, b'b'));
        m.push_unexpected(msg(0, 1, 8, b'c'));
        m.push_unexpected(msg(0, 1, 7, b'd'));
        let take = |m: &mut Matcher, s, t| match m.take_unexpected(0, s, t).map(|u| u.body) {
            Some(Body::Eager(d)) => d.as_slice()[0],
            other => panic!("{other:?}"),
        };
        assert_eq!(m.peek_unexpected(0, 1, ANY_TAG).map(|u| u.env.tag), Some(7));
        assert_eq!(take(&mut m, 1, ANY_TAG), b'a');
        assert_eq!(take(&mut m, ANY_SOURCE, 7), b'b');
        assert_eq!(take(&mut m, 1, 7), b'd');
        assert_eq!(take(&mut m, ANY_SOURCE, ANY_TAG), b'c');
        assert!(m.take_unexpected(0, ANY_SOURCE, ANY_TAG).is_none());
    }

    #[test]
    fn contexts_never_mix() {
        let mut m = Matcher::new();
        m.push_unexpected(msg(3, 0, 1, 0));
        assert!(m.take_unexpected(0, ANY_SOURCE, ANY_TAG).is_none());
        m.post(
            2,
            Posted {
                src: ANY_SOURCE,
                tag: ANY_TAG,
                req: 1,
            },
        );
        assert!(m.match_arrival(&env(3, 0, 1)).is_none());
        assert!(m.take_unexpected(3, 0, 1).is_some());
    }

    #[test]
    fn cancel_removes_only_pending_receives() {
        let mut m = Matcher::new();
        m.post(
            0,
            Posted {
                src: 0,
                tag: 0,
                req: 4,
            },
        );
        assert!(m.cancel(0, 4));
        assert!(!m.cancel(0, 4));
        assert!(!m.cancel(9, 4));
        assert!(m.match_arrival(&env(0, 0, 0)).is_none());
    }

    proptest::proptest! {
        // Miri runs this module's tests: a few cases there, without failure files (isolation).
        #![proptest_config(proptest::test_runner::Config {
            cases: if cfg!(miri) { 4 } else { 256 },
            failure_persistence: None,
            ..proptest::test_runner::Config::default()
        })]
        /// Posted and unexpected queues agree with a naive model (a list searched from the
        /// front) on any sequence of receives and arrivals, wildcards included.
        #[test]
        fn queues_agree_with_a_naive_model(
            ops in proptest::collection::vec((proptest::bool::ANY, -1i32..3, -1i32..3), 1..120)
        ) {
            let mut m = Matcher::new();
            let mut posted: Vec<(i32, i32, u32)> = Vec::new();
            let mut unexpected: Vec<(u32, i32, u8)> = Vec::new();
            for (k, &(is_recv, a, b)) in ops.iter().enumerate() {
                let k = k as u32;
                if is_recv {
                    let (src, tag) = (if a < 0 { ANY_SOURCE } else { a }, if b < 0 { ANY_TAG } else { b });
                    let want = unexpected
                        .iter()
                        .position(|&(s, t, _)| accepts(src, tag, &env(0, s, t)))
                        .map(|i| unexpected.remove(i).2);
                    let got = m.take_unexpected(0, src, tag).map(|u| u.body);
                    match want {
                        Some(byte) => proptest::prop_assert_eq!(
                            got,
                            Some(Body::Eager(Stored::with_len(1, |d| d[0] = byte)))
                        ),
                        None => {
                            proptest::prop_assert!(got.is_none());
                            posted.push((src, tag, k));
                            m.post(0, Posted { src, tag, req: k });
                        }
                    }
                } else {
                    let (s, t) = (a.max(0) as u32, b.max(0));
                    let e = env(0, s, t);
                    let want = posted
                        .iter()
                        .position(|&(src, tag, _)| accepts(src, tag, &e))
                        .map(|i| posted.remove(i).2);
                    let got = m.match_arrival(&e).map(|p| p.req);
                    proptest::prop_assert_eq!(got, want);
                    if want.is_none() {
                        unexpected.push((s, t, k as u8));
                        m.push_unexpected(msg(0, s, t, k as u8));
                    }
                }
            }
            proptest::prop_assert_eq!(m.depth(0), (posted.len(), unexpected.len()));
        }
    }
}
