//! Requests as futures under tokio: every rank passes a value to its right neighbour and
//! receives one from its left, lap after lap, awaiting both operations together while a
//! timer ticks on the same task; rank 0 sleeps (asynchronously) before each lap, so the
//! others' receives are pending while their timers run. Then a nonblocking allreduce is
//! awaited too. Each rank checks what it received and prints `async_ring OK`.
//!
//! `oxrun -n 3 target/release/examples/async_ring`

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use oxmpi::{Multiple, Op};

const LAPS: usize = 8;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The progress thread that wakes awaiting tasks needs an engine other threads may drive.
    let universe = oxmpi::init_with::<Multiple>()?;
    let world = universe.world();
    let (rank, size) = (world.rank(), world.size());
    let (next, prev) = ((rank + 1) % size, (rank + size - 1) % size);
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()?;

    let sent: Vec<u64> = (0..LAPS)
        .map(|lap| (rank as u64) * 1000 + lap as u64)
        .collect();
    let mut got = vec![0u64; LAPS];
    let mine = [rank as u64 + 1];
    let mut sum = [0u64];
    let done = AtomicBool::new(false);

    let ticks = oxmpi::scope(|s| {
        tokio.block_on(async {
            let ring = async {
                for (out, inp) in sent.iter().zip(got.iter_mut()) {
                    if rank == 0 {
                        tokio::time::sleep(Duration::from_millis(2)).await;
                    }
                    let send = world.immediate_send(s, out, next, 1)?;
                    let recv = world.immediate_receive_into(s, inp, prev, 1)?;
                    let (a, b) = tokio::join!(send, recv);
                    a?;
                    b?;
                }
                let r = world.immediate_all_reduce_into(s, &mine[..], &mut sum[..], Op::Sum)?;
                r.await?;
                done.store(true, Ordering::Release);
                Ok::<(), oxmpi::Error>(())
            };
            let timer = async {
                let mut ticks = 0u32;
                while !done.load(Ordering::Acquire) {
                    tokio::time::sleep(Duration::from_micros(500)).await;
                    ticks += 1;
                }
                ticks
            };
            let (r, ticks) = tokio::join!(ring, timer);
            r.map(|()| ticks)
        })
    })?;

    let want: Vec<u64> = (0..LAPS)
        .map(|lap| (prev as u64) * 1000 + lap as u64)
        .collect();
    let total: u64 = (1..=size as u64).sum();
    let ok = got == want && sum[0] == total;
    println!(
        "rank {rank}: {LAPS} laps from rank {prev}, allreduce {} (expected {total}), \
         timer ticked {ticks} times meanwhile: async_ring {}",
        sum[0],
        if ok { "OK" } else { "WRONG" }
    );
    if !ok {
        eprintln!("rank {rank}: got {got:?}, wanted {want:?}");
        universe.abort(1);
    }
    universe.finalize()?;
    Ok(())
}
