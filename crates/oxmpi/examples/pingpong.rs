//! Ping-pong between ranks 0 and 1 at a few sizes, printing one-way latency in microseconds.
//!
//! `oxrun -n 2 target/release/examples/pingpong [MAX_SIZE [shared]]`

fn main() -> Result<(), oxmpi::Error> {
    let universe = oxmpi::init()?;
    let world = universe.world();
    let rank = world.rank();
    if world.size() < 2 {
        eprintln!("pingpong needs 2 ranks");
        universe.abort(2);
    }
    let max: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(4 << 20);
    let sizes = [
        0usize,
        8,
        64,
        512,
        4096,
        16384,
        65536,
        131072,
        262144,
        1 << 20,
        4 << 20,
    ];
    for size in sizes.into_iter().filter(|&s| s <= max) {
        let iters = if size >= 1 << 20 { 200 } else { 20000 };
        // `pingpong MAX shared` sends from alloc_mem buffers (message memory in shared memory).
        let mut shared;
        let mut heap;
        let buf: &mut [u8] = if std::env::args().nth(2).as_deref() == Some("shared") {
            shared = universe.alloc_mem::<u8>(size)?;
            &mut shared[..]
        } else {
            heap = vec![rank as u8; size];
            &mut heap[..]
        };
        let mut elapsed = 0.0;
        for round in 0..2 {
            let t0 = oxmpi::time();
            for _ in 0..iters {
                if rank == 0 {
                    world.send(&buf[..], 1, 1)?;
                    world.receive_into(&mut buf[..], 1, 1)?;
                } else if rank == 1 {
                    world.receive_into(&mut buf[..], 0, 1)?;
                    world.send(&buf[..], 0, 1)?;
                }
            }
            if round == 1 {
                elapsed = oxmpi::time() - t0;
            }
        }
        if rank == 0 {
            println!("{size:>8} {:>10.3}", elapsed * 1e6 / iters as f64 / 2.0);
        }
    }
    universe.finalize()
}
