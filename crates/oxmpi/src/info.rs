//! What `oxmpi-info` prints about the point-to-point layer: the protocol each message size
//! takes per transport, and the shared memory each rank creates.

use crate::config::Config;
use crate::p2p::protocol::Protocol;
use crate::transport::shm::ShmConfig;

/// The protocol per message size between two ranks of one host, one line per size range.
pub fn shm_protocols(config: &Config) -> Vec<String> {
    Protocol::describe(&ShmConfig::from_config(config).limits(), config.single_copy)
}

/// Bytes of shared memory each rank creates, with the parts: (bytes, ring cells, pool blocks,
/// block size).
pub fn shm_bytes_per_rank(config: &Config) -> (usize, usize, u32, u32) {
    let l = ShmConfig::from_config(config).layout;
    (l.bytes(), l.fifo_cells, l.pool_blocks, l.block_size)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_describe_every_range_and_a_fixed_segment() {
        let c = Config::default();
        let lines = shm_protocols(&c);
        assert!(lines.first().unwrap().contains("inline"), "{lines:?}");
        assert!(lines.iter().any(|l| l.contains("rendezvous")), "{lines:?}");
        let (bytes, cells, blocks, block) = shm_bytes_per_rank(&c);
        assert!(bytes >= cells * 64 + blocks as usize * block as usize);
    }
}
