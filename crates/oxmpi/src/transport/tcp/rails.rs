//! Striping over several rails and failing over between them (seed 000), as pure state.
//!
//! Every fragment to a peer takes the next per-peer sequence number. With more than one rail
//! the sender keeps a copy of each fragment until the peer acknowledges it ([`SendWindow`]),
//! and the receiver delivers in sequence order whatever rail brought a fragment
//! ([`Reorder`]). When a rail dies, its unacknowledged fragments go again over the rails that
//! remain; the receiver drops the copies it already has. Nothing is lost, duplicated or
//! reordered.

use std::collections::{BTreeMap, VecDeque};

/// A sent fragment not yet acknowledged.
#[derive(Debug)]
pub struct Unacked {
    /// Its sequence number.
    pub seq: u64,
    /// The rail it was last sent on.
    pub rail: usize,
    /// The whole frame.
    pub frame: Vec<u8>,
}

/// Fragments sent to one peer and not yet acknowledged, oldest first.
#[derive(Debug, Default)]
pub struct SendWindow {
    q: VecDeque<Unacked>,
    bytes: usize,
    /// Frame buffers of acknowledged fragments, reused.
    spare: Vec<Vec<u8>>,
}

impl SendWindow {
    /// Bytes kept for retransmission.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// A buffer for the next frame (reused when one is free).
    pub fn buffer(&mut self) -> Vec<u8> {
        let mut b = self.spare.pop().unwrap_or_default();
        b.clear();
        b
    }

    /// Keeps fragment `seq`, sent on `rail`.
    pub fn push(&mut self, seq: u64, rail: usize, frame: Vec<u8>) {
        debug_assert!(self.q.back().is_none_or(|u| u.seq < seq));
        self.bytes += frame.len();
        self.q.push_back(Unacked { seq, rail, frame });
    }

    /// Forgets every fragment below `delivered` (the peer's count of delivered fragments).
    pub fn ack(&mut self, delivered: u64) {
        while self.q.front().is_some_and(|u| u.seq < delivered) {
            let u = self.q.pop_front().expect("checked");
            self.bytes -= u.frame.len();
            if self.spare.len() < 8 {
                self.spare.push(u.frame);
            }
        }
    }

    /// The fragments last sent on `dead`, in sequence order, each moved to a rail `choose`
    /// picks; returns `(rail, frame)` pairs for the caller to send.
    pub fn reroute(
        &mut self,
        dead: usize,
        mut choose: impl FnMut() -> usize,
    ) -> Vec<(usize, &[u8])> {
        let mut out = Vec::new();
        for u in self.q.iter_mut().filter(|u| u.rail == dead) {
            u.rail = choose();
            out.push((u.rail, &u.frame[..]));
        }
        out
    }
}

/// What to do with an arriving fragment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Offer {
    /// The next in order: deliver it now.
    Deliver,
    /// Ahead of a gap: keep it until the gap fills.
    Hold,
    /// Already delivered or held (a failover copy): drop it.
    Duplicate,
}

/// The receiving side of one peer's sequence.
#[derive(Debug)]
pub struct Reorder<T> {
    expected: u64,
    held: BTreeMap<u64, T>,
}

impl<T> Default for Reorder<T> {
    fn default() -> Self {
        Reorder {
            expected: 0,
            held: BTreeMap::new(),
        }
    }
}

impl<T> Reorder<T> {
    /// Fragments delivered so far (the cumulative acknowledgement).
    pub fn delivered(&self) -> u64 {
        self.expected
    }

    /// Classifies fragment `seq`; [`Offer::Deliver`] counts it as delivered.
    pub fn offer(&mut self, seq: u64) -> Offer {
        if seq < self.expected || self.held.contains_key(&seq) {
            Offer::Duplicate
        } else if seq == self.expected {
            self.expected += 1;
            Offer::Deliver
        } else {
            Offer::Hold
        }
    }

    /// Whether fragment `seq` is neither delivered nor held: [`offer`](Self::offer) would not
    /// call it a duplicate. Changes nothing.
    #[inline]
    pub fn is_new(&self, seq: u64) -> bool {
        seq >= self.expected && (self.held.is_empty() || !self.held.contains_key(&seq))
    }

    /// Keeps fragment `seq` (classified [`Offer::Hold`]).
    pub fn hold(&mut self, seq: u64, item: T) {
        self.held.insert(seq, item);
    }

    /// The held fragment that is next in order, if it has arrived (counted as delivered).
    pub fn next_held(&mut self) -> Option<T> {
        let item = self.held.remove(&self.expected)?;
        self.expected += 1;
        Some(item)
    }

    /// Fragments held ahead of a gap.
    #[cfg(test)]
    pub fn held(&self) -> usize {
        self.held.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Fragments striped over rails, some rails dying and their unacknowledged fragments
        /// resent, arrive exactly once and in order.
        #[test]
        fn striping_and_failover_lose_duplicate_and_reorder_nothing(
            n in 1u64..200,
            rails in 2usize..5,
            schedule in prop::collection::vec((any::<u8>(), any::<u8>()), 0..400),
            deaths in prop::collection::vec(0u64..200, 0..3),
        ) {
            let mut w = SendWindow::default();
            let mut r: Reorder<u64> = Reorder::default();
            // In-flight frames per rail (a TCP stream each: FIFO).
            let mut wire: Vec<VecDeque<u64>> = vec![VecDeque::new(); rails];
            let mut alive = vec![true; rails];
            let mut out = Vec::new();
            let mut sent = 0u64;
            let mut step = 0usize;
            let first_alive = |alive: &[bool], k: usize| (0..rails).map(|i| (i + k) % rails).find(|&i| alive[i]).unwrap();
            while out.len() < n as usize {
                let (a, b) = schedule.get(step % schedule.len().max(1)).copied().unwrap_or((step as u8, (step / 2) as u8));
                step += 1;
                prop_assert!(step < 100_000, "stuck");
                if sent < n && (a % 2 == 0 || step.is_multiple_of(7)) {
                    let rail = first_alive(&alive, sent as usize);
                    w.push(sent, rail, sent.to_le_bytes().to_vec());
                    wire[rail].push_back(sent);
                    sent += 1;
                    if deaths.contains(&sent) && alive.iter().filter(|&&x| x).count() > 1 {
                        let dead = rail;
                        alive[dead] = false;
                        wire[dead].clear();
                        let mut k = b as usize;
                        let re: Vec<(usize, Vec<u8>)> = w.reroute(dead, || { k += 1; first_alive(&alive, k) }).into_iter().map(|(x, f)| (x, f.to_vec())).collect();
                        for (x, f) in re {
                            wire[x].push_back(u64::from_le_bytes(f.try_into().unwrap()));
                        }
                    }
                } else {
                    // The first rail with something in flight, from a random one on.
                    let from = b as usize % rails;
                    let rail = (0..rails).map(|k| (from + k) % rails).find(|&x| !wire[x].is_empty()).unwrap_or(from);
                    if let Some(seq) = wire[rail].pop_front() {
                        match r.offer(seq) {
                            Offer::Deliver => {
                                out.push(seq);
                                while let Some(s) = r.next_held() {
                                    out.push(s);
                                }
                            }
                            Offer::Hold => r.hold(seq, seq),
                            Offer::Duplicate => {}
                        }
                        if a % 3 == 0 {
                            w.ack(r.delivered());
                        }
                    }
                }
            }
            prop_assert_eq!(out, (0..n).collect::<Vec<_>>());
            w.ack(r.delivered());
            prop_assert_eq!(w.bytes(), 0);
            prop_assert_eq!(r.held(), 0);
        }
    }

    #[test]
    fn duplicates_are_recognised_whether_delivered_or_held() {
        let mut r: Reorder<()> = Reorder::default();
        assert!(r.is_new(1));
        assert_eq!(r.offer(1), Offer::Hold);
        r.hold(1, ());
        assert!(!r.is_new(1) && r.is_new(0) && r.is_new(2));
        assert_eq!(r.offer(1), Offer::Duplicate);
        assert_eq!(r.offer(0), Offer::Deliver);
        assert_eq!(r.offer(0), Offer::Duplicate);
        assert_eq!(r.next_held(), Some(()));
        assert_eq!(r.delivered(), 2);
    }
}
