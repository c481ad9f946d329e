//! Awaited MPI operations on tasks of tokio's multi-thread runtime (`tokio::spawn`): each
//! rank spawns one task per tag that sends a block to its right neighbour and awaits the
//! block from its left, plus tasks that await nonblocking barriers. A spawned task must be
//! `Send + 'static`: requests become `Send` with `into_send` (the thread level is
//! `Multiple`) and live in the `static_scope`, sends borrow `'static` data, and
//! `immediate_receive_owned` receives into a vector the future owns and gives back. Every
//! element received is checked; each rank prints `async_spawn OK`.
//!
//! `oxrun -n 3 target/release/examples/async_spawn`

use std::sync::Arc;

use oxmpi::{Communicator, Multiple};

const TASKS: u64 = 4;
const LEN: usize = 257;

fn value(from: i32, tag: u64, i: usize) -> u64 {
    (from as u64) << 40 | tag << 20 | i as u64
}

async fn exchange(world: Arc<Communicator<Multiple>>, tag: u64) -> oxmpi::Result<usize> {
    let (rank, size) = (world.rank(), world.size());
    let (next, prev) = ((rank + 1) % size, (rank + size - 1) % size);
    // Sent data must outlive any leaked request: `'static` (leaked here, a few KiB).
    let out: &'static [u64] = Box::leak((0..LEN).map(|i| value(rank, tag, i)).collect());
    let recv = world.immediate_receive_owned(vec![0u64; LEN], prev, tag as i32)?;
    let send = world
        .immediate_send(oxmpi::static_scope(), out, next, tag as i32)?
        .into_send()?;
    // Give the worker threads a chance to move this task between awaits.
    tokio::task::yield_now().await;
    send.await?;
    let (got, st) = recv.await?;
    let mut bad = (0..LEN).filter(|&i| got[i] != value(prev, tag, i)).count();
    if st.source() != prev || st.tag() != tag as i32 || st.count() != Some(LEN as u64) {
        bad += 1;
    }
    Ok(bad)
}

async fn barrier(world: Arc<Communicator<Multiple>>) -> oxmpi::Result<()> {
    // A statement of its own: a temporary of `?` on a pinned request would live across the
    // await and make the task's future not `Send`.
    let r = world
        .immediate_barrier(oxmpi::static_scope())?
        .into_send()?;
    r.await.map(drop)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let universe = oxmpi::init_with::<Multiple>()?;
    let world = Arc::new(universe.world());
    let rank = world.rank();
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()?;
    let bad = tokio.block_on(async {
        let tasks: Vec<_> = (0..TASKS)
            .map(|tag| tokio::spawn(exchange(world.clone(), tag)))
            .collect();
        // Collectives start in the same order on every rank: one task after the other.
        for _ in 0..3 {
            tokio::spawn(barrier(world.clone()))
                .await
                .expect("task panicked")?;
        }
        let mut bad = 0;
        for t in tasks {
            bad += t.await.expect("task panicked")?;
        }
        Ok::<_, oxmpi::Error>(bad)
    })?;
    let ok = bad == 0;
    println!(
        "rank {rank}: {TASKS} spawned exchanges of {LEN} elements ({bad} wrong), 3 spawned \
         barriers: async_spawn {}",
        if ok { "OK" } else { "WRONG" }
    );
    if !ok {
        universe.abort(1);
    }
    drop(tokio);
    universe.finalize()?;
    Ok(())
}
