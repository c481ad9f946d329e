//! `oxmpi-info`: every tunable with its default and current value, and which protocol each
//! message size takes.

use oxmpi::config::{Config, TUNABLES};
use oxmpi::p2p::protocol::Thresholds;
use oxmpi::transport::shm::ShmLayout;

fn main() {
    let config = match Config::from_env() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("oxmpi-info: {e}");
            std::process::exit(2);
        }
    };
    println!("oxmpi {}", env!("CARGO_PKG_VERSION"));
    println!("transports: self, shm (same host); tcp and ofi are not built yet");
    println!();
    println!("Tunables (environment variables, read once at start-up):");
    let width = TUNABLES.iter().map(|t| t.name.len()).max().unwrap_or(0);
    for t in TUNABLES {
        let current = std::env::var(t.name).ok();
        let value = match &current {
            Some(v) => format!("{v} (default {})", t.default),
            None => t.default.to_owned(),
        };
        println!("  {:width$}  {value}", t.name);
        println!("  {:width$}    {}", "", t.help);
    }
    println!();
    println!("Point-to-point protocol by message size (bytes), same host:");
    for line in Thresholds::from_config(&config).describe() {
        println!("  {line}");
    }
    let layout = ShmLayout {
        fifo_cells: config.shm_fifo_cells,
        pool_blocks: config.shm_pool_blocks,
        block_size: config.shm_block_size,
    };
    println!();
    println!(
        "Shared memory per rank: {} bytes ({} ring cells of 64 B + {} pool blocks of {} B), whatever the number of ranks",
        layout.bytes(),
        layout.fifo_cells,
        layout.pool_blocks,
        layout.block_size
    );
}
