//! Awaited against blocking small-message latency: rank 0 and rank 1 bounce an 8-byte
//! message, once with `send`/`receive_into` and once by awaiting `immediate_send` and
//! `immediate_receive_into` inside one tokio (current-thread) `block_on`, both at
//! `Multiple`. The rounds alternate; rank 0 prints the median one-way latency of each and
//! their ratio (awaited / blocking).
//!
//! `oxrun -n 2 target/release/examples/async_latency [ITERS] [ROUNDS]`

use oxmpi::{Communicator, Multiple};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let iters: usize = args.next().map_or(Ok(20_000), |a| a.parse())?;
    let rounds: usize = args.next().map_or(Ok(5), |a| a.parse())?;
    let universe = oxmpi::init_with::<Multiple>()?;
    let world = universe.world();
    if world.size() < 2 {
        return Err("needs two ranks".into());
    }
    let tokio = tokio::runtime::Builder::new_current_thread().build()?;
    let (mut blocking, mut awaited) = (Vec::new(), Vec::new());
    for round in 0..=rounds {
        let b = ping_blocking(&world, iters)?;
        let a = ping_awaited(&world, &tokio, iters)?;
        // Round 0 warms both paths up.
        if round > 0 {
            blocking.push(b);
            awaited.push(a);
        }
    }
    if world.rank() == 0 {
        let (b, a) = (median(&mut blocking), median(&mut awaited));
        println!("8 B one-way latency over {rounds} rounds of {iters}: blocking {b:.3} us, awaited {a:.3} us, ratio {:.3}", a / b);
    }
    universe.finalize()?;
    Ok(())
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// One-way latency in microseconds (half the round trip), blocking calls.
fn ping_blocking(world: &Communicator<Multiple>, iters: usize) -> oxmpi::Result<f64> {
    let me = world.rank();
    let (out, mut inp) = ([1u8; 8], [0u8; 8]);
    world.barrier()?;
    let t = oxmpi::time();
    for _ in 0..iters {
        match me {
            0 => {
                world.send(&out[..], 1, 0)?;
                world.receive_into(&mut inp[..], 1, 0)?;
            }
            1 => {
                world.receive_into(&mut inp[..], 0, 0)?;
                world.send(&out[..], 0, 0)?;
            }
            _ => {}
        }
    }
    Ok((oxmpi::time() - t) * 1e6 / (2 * iters) as f64)
}

/// The same through awaited requests. Each receive borrows a buffer of its own for the
/// scope, as scoped requests require.
fn ping_awaited(
    world: &Communicator<Multiple>,
    tokio: &tokio::runtime::Runtime,
    iters: usize,
) -> oxmpi::Result<f64> {
    let me = world.rank();
    let out = [1u8; 8];
    let mut inp = vec![[0u8; 8]; iters];
    world.barrier()?;
    let t = oxmpi::time();
    oxmpi::scope(|s| {
        tokio.block_on(async {
            for b in inp.iter_mut() {
                match me {
                    0 => {
                        world.immediate_send(s, &out[..], 1, 0)?.await?;
                        world.immediate_receive_into(s, &mut b[..], 1, 0)?.await?;
                    }
                    1 => {
                        world.immediate_receive_into(s, &mut b[..], 0, 0)?.await?;
                        world.immediate_send(s, &out[..], 0, 0)?.await?;
                    }
                    _ => {}
                }
            }
            Ok::<(), oxmpi::Error>(())
        })
    })?;
    Ok((oxmpi::time() - t) * 1e6 / (2 * iters) as f64)
}
