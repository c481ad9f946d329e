//! Collective benchmarks: each call timed alone, a barrier between calls, the mean over ranks
//! of each rank's mean time per call (as `bench/c/oxbench.c` does).

use oxmpi::op::Op;

use super::pattern::{fill, mismatch, mix, poison, seed_of};
use super::Ctx;
use crate::suite::{Benchmark, IterClass};

/// Values summed by reduce/allreduce (the C program's `reduce_value`).
fn reduce_value(size: usize, i: usize, rank: i32) -> i32 {
    (mix(((size as u64) << 32) ^ i as u64) & 0xffff) as i32 + 7 * rank
}

fn reduce_expected(size: usize, i: usize, np: i32) -> i32 {
    (mix(((size as u64) << 32) ^ i as u64) & 0xffff) as i32 * np + 7 * (np * (np - 1) / 2)
}

/// Mean over ranks of each rank's mean time per call, in µs, at rank 0.
fn mean_over_ranks(ctx: &Ctx<'_>, total: f64, iters: u64) -> oxmpi::Result<f64> {
    let mine = [total * 1e6 / iters as f64];
    let mut sum = [0.0f64];
    ctx.world.reduce_into(0, &mine, &mut sum, Op::Sum)?;
    Ok(sum[0] / ctx.np as f64)
}

fn check(ctx: &Ctx<'_>, buf: &[u8], seed: u64, size: usize, from: i32) {
    if let Some((i, want, got)) = mismatch(buf, seed) {
        ctx.verification_failed(format!(
            "size {size}, data from rank {from}, byte {i}: expected {want:#04x}, got {got:#04x}"
        ));
    }
}

/// Runs the collective benchmark `ctx.benchmark`.
pub fn run(ctx: &Ctx<'_>) -> oxmpi::Result<()> {
    if ctx.benchmark == Benchmark::Barrier {
        return barrier(ctx);
    }
    let b = ctx.benchmark;
    let (me, np) = (ctx.rank, ctx.np);
    let sizes = ctx.sizes();
    let max = sizes.iter().copied().max().unwrap_or(0);
    let reduction = matches!(
        b,
        Benchmark::Reduce | Benchmark::Allreduce | Benchmark::AllreduceInit
    );
    let blocks = if b == Benchmark::Bcast || reduction {
        1
    } else {
        np as usize
    };
    let mut s = ctx.buffer(max * blocks)?;
    let mut r = ctx.buffer(max * blocks)?;
    let mut si = vec![0i32; max / 4];
    let mut ri = vec![0i32; max / 4];
    ctx.header();
    for size in sizes {
        let (iters, warmup) = (
            ctx.iters(IterClass::Collective, size),
            ctx.warmup(IterClass::Collective, size),
        );
        let ints = size / 4;
        // Prepare the data each rank sends and poison what it will receive.
        match b {
            Benchmark::Bcast => {
                if me == 0 {
                    fill(&mut s[..size], seed_of(size, 0, -1));
                } else {
                    poison(&mut s[..size], seed_of(size, 0, -1));
                }
            }
            Benchmark::Reduce | Benchmark::Allreduce | Benchmark::AllreduceInit => {
                for i in 0..ints {
                    si[i] = reduce_value(size, i, me);
                    ri[i] = -1;
                }
            }
            Benchmark::Gather | Benchmark::Allgather => {
                fill(&mut s[..size], seed_of(size, me, -1));
                if me == 0 || b == Benchmark::Allgather {
                    for j in 0..np {
                        poison(&mut r[j as usize * size..][..size], seed_of(size, j, -1));
                    }
                }
            }
            Benchmark::Scatter => {
                if me == 0 {
                    for j in 0..np {
                        fill(&mut s[j as usize * size..][..size], seed_of(size, 0, j));
                    }
                }
                poison(&mut r[..size], seed_of(size, 0, me));
            }
            _ => {
                for j in 0..np {
                    fill(&mut s[j as usize * size..][..size], seed_of(size, me, j));
                    poison(&mut r[j as usize * size..][..size], seed_of(size, j, me));
                }
            }
        }
        let n = size * np as usize;
        if b == Benchmark::AllreduceInit {
            let total = persistent_allreduce(ctx, &si[..ints], &mut ri[..ints], warmup, iters)?;
            check_reduction(ctx, &ri[..ints], size, np);
            let value = mean_over_ranks(ctx, total, iters)?;
            ctx.row(size, value);
            continue;
        }
        ctx.world.barrier()?;
        let mut total = 0.0;
        for i in 0..warmup + iters {
            let t0 = oxmpi::time();
            match b {
                Benchmark::Bcast => ctx.world.broadcast_into(0, &mut s[..size])?,
                Benchmark::Reduce => {
                    ctx.world
                        .reduce_into(0, &si[..ints], &mut ri[..ints], Op::Sum)?
                }
                Benchmark::Allreduce => {
                    ctx.world
                        .all_reduce_into(&si[..ints], &mut ri[..ints], Op::Sum)?
                }
                Benchmark::Gather => ctx.world.gather_into(0, &s[..size], &mut r[..n])?,
                Benchmark::Scatter => ctx.world.scatter_into(0, &s[..n], &mut r[..size])?,
                Benchmark::Allgather => ctx.world.all_gather_into(&s[..size], &mut r[..n])?,
                _ => ctx.world.all_to_all_into(&s[..n], &mut r[..n])?,
            }
            let t = oxmpi::time() - t0;
            if i >= warmup {
                total += t;
            }
            ctx.world.barrier()?;
        }
        // Check what arrived.
        match b {
            Benchmark::Bcast => check(ctx, &s[..size], seed_of(size, 0, -1), size, 0),
            Benchmark::Reduce | Benchmark::Allreduce => {
                if me == 0 || b == Benchmark::Allreduce {
                    check_reduction(ctx, &ri[..ints], size, np);
                }
            }
            Benchmark::Gather | Benchmark::Allgather => {
                if me == 0 || b == Benchmark::Allgather {
                    for j in 0..np {
                        check(
                            ctx,
                            &r[j as usize * size..][..size],
                            seed_of(size, j, -1),
                            size,
                            j,
                        );
                    }
                }
            }
            Benchmark::Scatter => check(ctx, &r[..size], seed_of(size, 0, me), size, 0),
            _ => {
                for j in 0..np {
                    check(
                        ctx,
                        &r[j as usize * size..][..size],
                        seed_of(size, j, me),
                        size,
                        j,
                    );
                }
            }
        }
        let value = mean_over_ranks(ctx, total, iters)?;
        ctx.row(size, value);
    }
    Ok(())
}

fn check_reduction(ctx: &Ctx<'_>, got: &[i32], size: usize, np: i32) {
    if let Some(i) = (0..got.len()).find(|&i| got[i] != reduce_expected(size, i, np)) {
        ctx.verification_failed(format!(
            "size {size}, element {i}: expected {}, got {}",
            reduce_expected(size, i, np),
            got[i]
        ));
    }
}

/// The persistent allreduce of one size: planned once, then each call one start and wait.
/// Returns the time of the timed calls.
fn persistent_allreduce(
    ctx: &Ctx<'_>,
    send: &[i32],
    recv: &mut [i32],
    warmup: u64,
    iters: u64,
) -> oxmpi::Result<f64> {
    oxmpi::scope(|s| {
        let mut req = ctx.world.all_reduce_init(s, send, recv, Op::Sum)?;
        ctx.world.barrier()?;
        let mut total = 0.0;
        for i in 0..warmup + iters {
            let t0 = oxmpi::time();
            req.start()?;
            req.wait()?;
            let t = oxmpi::time() - t0;
            if i >= warmup {
                total += t;
            }
            ctx.world.barrier()?;
        }
        Ok(total)
    })
}

/// Checks the barrier's promise (no rank leaves before all entered), then times it.
fn barrier(ctx: &Ctx<'_>) -> oxmpi::Result<()> {
    ctx.header();
    verify_barrier(ctx)?;
    let (iters, warmup) = (
        ctx.iters(IterClass::Collective, 0),
        ctx.warmup(IterClass::Collective, 0),
    );
    ctx.world.barrier()?;
    let mut t0 = 0.0;
    for i in 0..warmup + iters {
        if i == warmup {
            t0 = oxmpi::time();
        }
        ctx.world.barrier()?;
    }
    let value = mean_over_ranks(ctx, oxmpi::time() - t0, iters)?;
    ctx.row(0, value);
    Ok(())
}

/// Rank 0 enters late and stamps a clock value when it does; nobody may leave before that.
fn verify_barrier(ctx: &Ctx<'_>) -> oxmpi::Result<()> {
    ctx.world.barrier()?;
    let mut entered = [0u64];
    if ctx.rank == 0 {
        std::thread::sleep(std::time::Duration::from_millis(20));
        entered[0] = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
    }
    ctx.world.barrier()?;
    let left = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    ctx.world.broadcast_into(0, &mut entered)?;
    if left < entered[0] {
        ctx.verification_failed("left the barrier before rank 0 entered it".into());
    }
    Ok(())
}
