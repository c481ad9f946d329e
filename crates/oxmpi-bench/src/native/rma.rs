//! One-sided benchmarks, OSU-style: rank 0 puts to, gets from or accumulates into rank 1's
//! window inside one `lock_all` epoch, with a flush after every operation (latency) or every
//! window of operations (bandwidth); and a counter on rank 0 that every rank increments with
//! `fetch_and_op` at once (time per increment, seen from each rank, mean over ranks).

use oxmpi::op::Op;
use oxmpi::window::Window;

use super::pattern::{fill, mismatch, poison, seed_of};
use super::{require_np, Ctx};
use crate::suite::{Benchmark, IterClass};

fn check(ctx: &Ctx<'_>, buf: &[u8], seed: u64, size: usize, from: i32) {
    if let Some((i, want, got)) = mismatch(buf, seed) {
        ctx.verification_failed(format!(
            "size {size}, data from rank {from}, byte {i}: expected {want:#04x}, got {got:#04x}"
        ));
    }
}

/// Page size the origin buffers are aligned to.
const PAGE: usize = 4096;

/// Put/get latency and bandwidth, accumulate latency.
pub fn transfer(ctx: &Ctx<'_>) -> oxmpi::Result<()> {
    require_np(ctx, Some(2), false)?;
    let b = ctx.benchmark;
    let class = b.iter_class();
    let sizes = ctx.sizes();
    let max = sizes.iter().copied().max().unwrap_or(0);
    let cap = max.max(8);
    let mut win: Window = ctx.world.window_allocate::<u8>(cap)?;
    // Page-aligned origin buffers, as bench/c/oxbench.c gives the peers (`posix_memalign`
    // 4096): a copy's speed depends on where source and destination lie within a page.
    let mut local_buf = ctx.buffer(cap + PAGE)?;
    let at = local_buf.as_ptr().align_offset(PAGE);
    let local = &mut local_buf[at..at + cap];
    let mut ones_buf = vec![0i32; (cap + PAGE) / 4];
    let at1 = ones_buf.as_ptr().align_offset(PAGE);
    let ones_all = &mut ones_buf[at1..at1 + cap / 4];
    ones_all.fill(1);
    let w = if class == IterClass::Bandwidth {
        ctx.opts.window.unwrap_or(64) as u64
    } else {
        1
    };
    ctx.header();
    for size in sizes {
        let (iters, warmup) = (ctx.iters(class, size), ctx.warmup(class, size));
        let seed = seed_of(size, 0, 1);
        let acc = b == Benchmark::AccLatency;
        // Puts and accumulates carry rank 0's pattern to rank 1; gets carry rank 1's back.
        if ctx.rank == 0 {
            if b == Benchmark::GetLatency || b == Benchmark::GetBw {
                poison(&mut local[..size], seed);
            } else {
                fill(&mut local[..size], seed);
            }
        } else {
            let mine = win.local_mut::<u8>()?;
            if b == Benchmark::GetLatency || b == Benchmark::GetBw {
                fill(&mut mine[..size], seed);
            } else {
                mine[..size].fill(0);
            }
        }
        let n32 = size / 4;
        let ones = &ones_all[..n32];
        ctx.world.barrier()?;
        let mut t = 0.0;
        if ctx.rank == 0 {
            win.lock_all(0)?;
            let mut t0 = 0.0;
            for i in 0..warmup + iters {
                if i == warmup {
                    t0 = oxmpi::time();
                }
                for _ in 0..w {
                    match b {
                        Benchmark::PutLatency | Benchmark::PutBw => {
                            win.put(&local[..size], 1, 0)?
                        }
                        Benchmark::GetLatency | Benchmark::GetBw => {
                            win.get(&mut local[..size], 1, 0)?
                        }
                        _ => win.accumulate(ones, 1, 0, &Op::Sum)?,
                    }
                }
                win.flush(1)?;
            }
            t = oxmpi::time() - t0;
            win.unlock_all()?;
        }
        ctx.world.barrier()?;
        match (ctx.rank, b) {
            (0, Benchmark::GetLatency | Benchmark::GetBw) => {
                check(ctx, &local[..size], seed, size, 1)
            }
            (1, Benchmark::PutLatency | Benchmark::PutBw) => {
                check(ctx, &win.local::<u8>()?[..size], seed, size, 0)
            }
            (1, _) if acc => {
                let want = (warmup + iters) as i32;
                let got: Vec<i32> = win.local::<u8>()?[..n32 * 4]
                    .chunks_exact(4)
                    .map(|c| i32::from_ne_bytes([c[0], c[1], c[2], c[3]]))
                    .collect();
                if let Some(i) = got.iter().position(|&v| v != want) {
                    ctx.verification_failed(format!(
                        "size {size}: accumulated element {i} is {}, not {want}",
                        got[i]
                    ));
                }
            }
            _ => {}
        }
        let value = if class == IterClass::Bandwidth {
            (size as u64 * w * iters) as f64 / 1e6 / t.max(f64::MIN_POSITIVE)
        } else {
            t * 1e6 / iters as f64
        };
        ctx.row(size, value);
    }
    win.free()
}

/// Every rank increments one 8-byte counter on rank 0 with `fetch_and_op`; the figure is the
/// time per increment, mean over ranks.
pub fn counter(ctx: &Ctx<'_>) -> oxmpi::Result<()> {
    let win: Window = ctx.world.window_allocate::<i64>(1)?;
    let (iters, warmup) = (
        ctx.iters(IterClass::Latency, 8),
        ctx.warmup(IterClass::Latency, 8),
    );
    ctx.header();
    ctx.world.barrier()?;
    win.lock_all(0)?;
    let mut t0 = 0.0;
    let mut last = -1i64;
    for i in 0..warmup + iters {
        if i == warmup {
            t0 = oxmpi::time();
        }
        let old = win.fetch_and_op(&1i64, 0, 0, &Op::Sum)?;
        if old <= last {
            ctx.verification_failed(format!("the counter went from {last} back to {old}"));
        }
        last = old;
    }
    let t = oxmpi::time() - t0;
    win.unlock_all()?;
    ctx.world.barrier()?;
    if ctx.rank == 0 {
        let total = win.local::<i64>()?[0];
        let want = (ctx.np as u64 * (warmup + iters)) as i64;
        if total != want {
            ctx.verification_failed(format!("the counter is {total}, not {want}"));
        }
    }
    let mut sum = [0.0f64];
    ctx.world
        .reduce_into(0, &[t * 1e6 / iters as f64], &mut sum, Op::Sum)?;
    ctx.row(0, sum[0] / ctx.np as f64);
    win.free()
}
