//! What `oxmpi-info` prints about the point-to-point layer: the protocol each message size
//! takes per transport, and the shared memory each rank creates.

use crate::config::Config;
use crate::p2p::protocol::Protocol;
use crate::transport::shm::ShmConfig;

/// The protocol per message size between two ranks of one host, one line per size range.
pub fn shm_protocols(config: &Config) -> Vec<String> {
    Protocol::describe(&ShmConfig::from_config(config).limits(), config.single_copy)
}

/// Bytes of one cell of a rank's shared-memory receive ring.
pub const SHM_CELL_BYTES: usize = crate::transport::shm::fifo::CELL_SIZE;

/// Bytes of shared memory each rank creates, with the parts: (bytes, ring cells, pool blocks,
/// block size).
pub fn shm_bytes_per_rank(config: &Config) -> (usize, usize, u32, u32) {
    let l = ShmConfig::from_config(config).layout;
    (l.bytes(), l.fifo_cells, l.pool_blocks, l.block_size)
}

/// The TCP transport's limits and the protocol per message size between ranks on different
/// hosts, one line per size range; an error if the `OXMPI_TCP_*` settings are invalid.
pub fn tcp_protocols(config: &Config) -> crate::error::Result<Vec<String>> {
    let t = crate::transport::tcp::TcpConfig::from_config(config)?;
    let l = t.limits();
    Ok(vec![
        format!(
            "{:>10} ..= {:<10} eager: one frame (16-byte frame header + header + data), one send up to {} B, else one writev",
            0,
            l.eager_limit.min(l.max_frag),
            crate::transport::tcp::conn::SMALL_FRAME
        ),
        format!(
            "{:>10} ..= {:<10} rendezvous: the sender pushes {}-byte chunks after clear-to-send, striped over {} rail(s) per peer",
            l.eager_limit.min(l.max_frag) + 1,
            "max",
            l.max_frag,
            t.rails
        ),
        format!(
            "limits: fragment {} B, eager limit {} B, send queue {} B per peer, no one-copy get/put",
            l.max_frag, l.eager_limit, t.send_queue
        ),
        format!(
            "polling: a rank with only TCP peers reads up to {} connections directly (a recv each, epoll every {} polls), more through epoll; it blocks in epoll after OXMPI_TCP_SPIN_COUNT = {} polls",
            crate::transport::tcp::DIRECT_MAX,
            crate::transport::tcp::DIRECT_POLLS,
            config.tcp_spin_count
        ),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tcp_limits_are_described_and_bad_settings_reported() {
        let lines = tcp_protocols(&Config::default()).unwrap();
        assert!(
            lines[0].contains("eager") && lines[1].contains("rendezvous"),
            "{lines:?}"
        );
        assert!(
            lines[3].contains("polling") && lines[3].contains("OXMPI_TCP_SPIN_COUNT = 1000"),
            "{lines:?}"
        );
        let bad = Config {
            tcp_rails: 0,
            ..Config::default()
        };
        assert!(tcp_protocols(&bad).is_err());
    }

    #[test]
    fn defaults_describe_every_range_and_a_fixed_segment() {
        let c = Config::default();
        let lines = shm_protocols(&c);
        assert!(lines.first().unwrap().contains("inline"), "{lines:?}");
        assert!(lines.iter().any(|l| l.contains("rendezvous")), "{lines:?}");
        let (bytes, cells, blocks, block) = shm_bytes_per_rank(&c);
        assert!(bytes >= cells * SHM_CELL_BYTES + blocks as usize * block as usize);
    }
}
