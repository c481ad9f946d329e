//! Which protocol a message of a given size takes, from the limits of the transport that
//! reaches its destination (seed 001: the crossovers differ by locality):
//! - up to `inline_max` bytes: inline with its header (64-byte cells for `shm`);
//! - up to `max_frag`: eager, the payload in one fragment (one pool block for `shm`);
//! - up to `eager_limit`: eager in fragment-size chunks, drained while later ones are filled;
//! - above: rendezvous: the receiver pulls with one copy (or, if that is refused, the sender
//!   pushes fragment-size chunks after a clear-to-send).

use crate::transport::Limits;

/// The protocol of one message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// Inline with the header.
    Inline,
    /// Eager in one fragment.
    PoolBlock,
    /// Eager in several fragments.
    ChunkedEager,
    /// Rendezvous (single copy, or pushed chunks when single copy is off or refused).
    Rendezvous,
}

impl Protocol {
    /// The protocol for a message of `len` bytes over a transport with `limits`.
    #[inline]
    pub fn choose(limits: &Limits, len: usize) -> Protocol {
        if len > limits.eager_limit {
            Protocol::Rendezvous
        } else if len <= limits.inline_max {
            Protocol::Inline
        } else if len <= limits.max_frag {
            Protocol::PoolBlock
        } else {
            Protocol::ChunkedEager
        }
    }

    /// Human-readable ranges, smallest first, for `oxmpi-info`; `single_copy` says whether
    /// rendezvous may pull with one copy.
    pub fn describe(limits: &Limits, single_copy: bool) -> Vec<String> {
        let mut out = Vec::new();
        let mut lo = 0usize;
        let steps = [
            (
                Protocol::Inline,
                limits.inline_max,
                "inline in 64-byte ring cells (one copy in, one out)",
            ),
            (
                Protocol::PoolBlock,
                limits.max_frag,
                "eager, payload in one block of the sender's pool",
            ),
            (
                Protocol::ChunkedEager,
                limits.eager_limit,
                "eager in pool-block chunks, receiver drains while sender fills",
            ),
        ];
        for (p, hi, what) in steps {
            if hi >= lo && Protocol::choose(limits, hi) == p {
                out.push(format!("{lo:>10} ..= {hi:<10} {what}"));
                lo = hi + 1;
            }
        }
        let rndv = if single_copy {
            "rendezvous: receiver pulls with one process_vm_readv (pushed chunks if the kernel refuses)"
        } else {
            "rendezvous: sender pushes pool-block chunks after clear-to-send (single copy off)"
        };
        out.push(format!("{lo:>10} ..= {:<10} {rndv}", "max"));
        out.push(format!(
            "{:>10}     {:<10} {}",
            "any", "to self", "eager through the self transport, whatever the size"
        ));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use crate::transport::shm::ShmConfig;

    fn limits(c: &Config) -> Limits {
        ShmConfig::from_config(c).limits()
    }

    #[test]
    fn defaults_cover_every_size_in_order() {
        let t = limits(&Config::default());
        let p = |n| Protocol::choose(&t, n);
        assert_eq!(p(0), Protocol::Inline);
        assert_eq!(p(t.inline_max), Protocol::Inline);
        assert_eq!(p(t.inline_max + 1), Protocol::PoolBlock);
        assert_eq!(p(t.max_frag), Protocol::PoolBlock);
        assert_eq!(p(t.max_frag + 1), Protocol::ChunkedEager);
        assert_eq!(p(t.eager_limit), Protocol::ChunkedEager);
        assert_eq!(p(t.eager_limit + 1), Protocol::Rendezvous);
        let lines = Protocol::describe(&t, true);
        assert_eq!(lines.len(), 5, "{lines:?}");
        assert!(lines[3].contains("process_vm_readv"));
    }

    #[test]
    fn small_eager_limit_skips_eager_ranges() {
        let c = Config {
            eager_limit: 100,
            shm_inline_max: 1024,
            single_copy: false,
            ..Config::default()
        };
        let t = limits(&c);
        assert_eq!(Protocol::choose(&t, 100), Protocol::Inline);
        assert_eq!(Protocol::choose(&t, 101), Protocol::Rendezvous);
        let lines = Protocol::describe(&t, false);
        assert!(lines.iter().any(|l| l.contains("pushes")), "{lines:?}");
        assert!(
            !lines.iter().any(|l| l.contains("chunks, receiver drains")),
            "{lines:?}"
        );
    }

    #[test]
    fn the_self_transport_is_always_eager() {
        let t = crate::transport::selfloop::SelfLoop::new(0);
        let l = crate::transport::Link::limits(&t);
        assert_eq!(Protocol::choose(&l, usize::MAX - 1), Protocol::Inline);
    }
}
