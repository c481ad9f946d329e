//! Which protocol a message of a given size takes between two ranks of one host.
//!
//! One table, read by the engine on every send and printed by `oxmpi-info`:
//! - up to `inline_max` bytes: inline in 64-byte cells of the receiver's ring;
//! - up to one pool block: eager, the payload in one block of the sender's pool;
//! - up to `eager_limit`: eager in pool-block chunks, drained while later ones are filled;
//! - above: rendezvous: the receiver pulls with one `process_vm_readv` (or, if refused,
//!   the sender pushes pool-block chunks after a clear-to-send).

use crate::config::Config;

/// Size thresholds of the point-to-point protocols.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Thresholds {
    /// Largest payload sent inline in cells.
    pub inline_max: usize,
    /// Pool block size: the largest single fragment.
    pub block_size: usize,
    /// Largest message sent eagerly.
    pub eager_limit: usize,
    /// Whether rendezvous tries single-copy pulls.
    pub single_copy: bool,
    /// Whether large posted receives advertise their buffers (receiver-initiated write).
    pub recv_write: bool,
}

/// The protocol of one message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// Inline in ring cells.
    Inline,
    /// Eager in one pool block.
    PoolBlock,
    /// Eager in several pool-block chunks.
    ChunkedEager,
    /// Rendezvous (single copy, or pushed chunks when single copy is off or refused).
    Rendezvous,
}

impl Thresholds {
    /// The thresholds `config` sets (inline size capped by the block size, eager limit by at
    /// least one block).
    pub fn from_config(c: &Config) -> Self {
        let block_size = c.shm_block_size as usize;
        Thresholds {
            inline_max: c.shm_inline_max.min(block_size).min(4096),
            block_size,
            eager_limit: c.eager_limit,
            single_copy: c.single_copy,
            recv_write: c.recv_write && c.single_copy,
        }
    }

    /// The protocol for a message of `len` bytes to another rank on this host.
    #[inline]
    pub fn choose(&self, len: usize) -> Protocol {
        if len > self.eager_limit {
            Protocol::Rendezvous
        } else if len <= self.inline_max {
            Protocol::Inline
        } else if len <= self.block_size {
            Protocol::PoolBlock
        } else {
            Protocol::ChunkedEager
        }
    }

    /// Human-readable ranges, smallest first, for `oxmpi-info`.
    pub fn describe(&self) -> Vec<String> {
        let mut out = Vec::new();
        let mut lo = 0usize;
        let steps = [
            (
                Protocol::Inline,
                self.inline_max,
                "inline in 64-byte ring cells (one copy in, one out)",
            ),
            (
                Protocol::PoolBlock,
                self.block_size,
                "eager, payload in one block of the sender's pool",
            ),
            (
                Protocol::ChunkedEager,
                self.eager_limit,
                "eager in pool-block chunks, receiver drains while sender fills",
            ),
        ];
        for (p, hi, what) in steps {
            if hi >= lo && self.choose(hi) == p {
                out.push(format!("{lo:>10} ..= {hi:<10} {what}"));
                lo = hi + 1;
            }
        }
        let rndv = if self.single_copy {
            "rendezvous: receiver pulls with one process_vm_readv (pushed chunks if the kernel refuses)"
        } else {
            "rendezvous: sender pushes pool-block chunks after clear-to-send (single copy off)"
        };
        out.push(format!("{lo:>10} ..= {:<10} {rndv}", "max"));
        out.push(format!(
            "{:>10}     {:<10} {}",
            "any", "to self", "copied in place by the self path"
        ));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_cover_every_size_in_order() {
        let t = Thresholds::from_config(&Config::default());
        assert_eq!(t.choose(0), Protocol::Inline);
        assert_eq!(t.choose(t.inline_max), Protocol::Inline);
        assert_eq!(t.choose(t.inline_max + 1), Protocol::PoolBlock);
        assert_eq!(t.choose(t.block_size), Protocol::PoolBlock);
        assert_eq!(t.choose(t.block_size + 1), Protocol::ChunkedEager);
        assert_eq!(t.choose(t.eager_limit), Protocol::ChunkedEager);
        assert_eq!(t.choose(t.eager_limit + 1), Protocol::Rendezvous);
        let lines = t.describe();
        assert_eq!(lines.len(), 5, "{lines:?}");
        assert!(lines[3].contains("process_vm_readv"));
    }

    #[test]
    fn small_eager_limit_skips_eager_ranges() {
        let c = Config {
            eager_limit: 100,
            single_copy: false,
            ..Config::default()
        };
        let t = Thresholds::from_config(&c);
        assert_eq!(t.choose(100), Protocol::Inline);
        assert_eq!(t.choose(101), Protocol::Rendezvous);
        let lines = t.describe();
        assert!(lines.iter().any(|l| l.contains("pushes")), "{lines:?}");
        assert!(
            !lines.iter().any(|l| l.contains("chunks, receiver drains")),
            "{lines:?}"
        );
    }
}
