//! Point-to-point benchmarks: ping-pong latency (one pair or all pairs at once) and windowed
//! streaming (bandwidth, bidirectional bandwidth, message rate, multi-pair bandwidth).

use oxmpi::op::Op;
use oxmpi::{Source, Tag};

use super::pattern::{fill, mismatch, poison, seed_of};
use super::{require_np, Ctx};
use crate::suite::{Benchmark, IterClass};

const TAG_DATA: i32 = 1;
const TAG_ACK: i32 = 2;

fn check(ctx: &Ctx<'_>, buf: &[u8], seed: u64, size: usize, from: i32) {
    if let Some((i, want, got)) = mismatch(buf, seed) {
        ctx.verification_failed(format!(
            "size {size}, data from rank {from}, byte {i}: expected {want:#04x}, got {got:#04x}"
        ));
    }
}

/// Rank `r`'s partner: ranks pair up across the two halves.
fn peer_of(ctx: &Ctx<'_>) -> i32 {
    let pairs = ctx.np / 2;
    if ctx.rank < pairs {
        ctx.rank + pairs
    } else {
        ctx.rank - pairs
    }
}

/// Mean over the lower-half ranks of `mine`, at rank 0.
fn mean_over_pairs(ctx: &Ctx<'_>, mine: f64) -> oxmpi::Result<f64> {
    let pairs = ctx.np / 2;
    let v = [if ctx.rank < pairs { mine } else { 0.0 }];
    let mut sum = [0.0f64];
    ctx.world.reduce_into(0, &v, &mut sum, Op::Sum)?;
    Ok(sum[0] / pairs as f64)
}

/// One-way latency by ping-pong (`multi`: every pair at once, mean over pairs).
pub fn latency(ctx: &Ctx<'_>, multi: bool, fresh: bool) -> oxmpi::Result<()> {
    if multi {
        require_np(ctx, None, true)?;
    } else {
        require_np(ctx, Some(2), false)?;
    }
    let peer = peer_of(ctx);
    let sizes = ctx.sizes();
    let max = sizes.iter().copied().max().unwrap_or(0);
    let mut sbuf = ctx.buffer(max)?;
    let mut rbuf = ctx.buffer(max)?;
    // With `fresh`, each send's data is copied in from here first, as a program writes newly
    // computed data before sending it.
    let mut src = if fresh { vec![0u8; max] } else { Vec::new() };
    ctx.header();
    for size in sizes {
        let (iters, warmup) = (
            ctx.iters(IterClass::Latency, size),
            ctx.warmup(IterClass::Latency, size),
        );
        let (out_seed, in_seed) = (seed_of(size, ctx.rank, peer), seed_of(size, peer, ctx.rank));
        if fresh {
            fill(&mut src[..size], out_seed);
        } else {
            fill(&mut sbuf[..size], out_seed);
        }
        poison(&mut rbuf[..size], in_seed);
        let first = ctx.rank < peer;
        ctx.world.barrier()?;
        let mut t0 = 0.0;
        for i in 0..warmup + iters {
            if i == warmup {
                t0 = oxmpi::time();
            }
            if first {
                if fresh {
                    sbuf[..size].copy_from_slice(&src[..size]);
                }
                ctx.world.send(&sbuf[..size], peer, TAG_DATA)?;
                ctx.world.receive_into(&mut rbuf[..size], peer, TAG_DATA)?;
            } else {
                ctx.world.receive_into(&mut rbuf[..size], peer, TAG_DATA)?;
                if fresh {
                    sbuf[..size].copy_from_slice(&src[..size]);
                }
                ctx.world.send(&sbuf[..size], peer, TAG_DATA)?;
            }
        }
        let t = oxmpi::time() - t0;
        check(ctx, &rbuf[..size], in_seed, size, peer);
        let lat = t * 1e6 / (2.0 * iters as f64);
        let value = mean_over_pairs(ctx, lat)?;
        ctx.row(size, value);
    }
    Ok(())
}

/// Windowed streaming from the lower half to the upper half (both ways for `bibw`); returns
/// this rank's time for the timed iterations.
fn stream(
    ctx: &Ctx<'_>,
    size: usize,
    bidir: bool,
    sbuf: &mut [u8],
    rbuf: &mut [u8],
) -> oxmpi::Result<f64> {
    let (iters, warmup) = (
        ctx.iters(IterClass::Bandwidth, size),
        ctx.warmup(IterClass::Bandwidth, size),
    );
    let w = ctx.opts.window.unwrap_or(64) as usize;
    let pairs = ctx.np / 2;
    let sender = ctx.rank < pairs;
    let peer = peer_of(ctx);
    let (out_seed, in_seed) = (seed_of(size, ctx.rank, peer), seed_of(size, peer, ctx.rank));
    fill(&mut sbuf[..size], out_seed);
    poison(&mut rbuf[..size], in_seed);
    ctx.world.barrier()?;
    let mut t0 = 0.0;
    let mut ack = 0u64;
    for i in 0..warmup + iters {
        if i == warmup {
            t0 = oxmpi::time();
        }
        if bidir || !sender {
            oxmpi::scope(|s| -> oxmpi::Result<()> {
                let mut reqs = Vec::with_capacity(2 * w);
                let dst = rbuf.as_mut_ptr();
                for _ in 0..w {
                    // SAFETY: as in OSU, every receive of the window lands in `rbuf`, which
                    // outlives the scope; the engine writes the W messages one after another
                    // on this thread, and all of them carry identical bytes.
                    reqs.push(unsafe {
                        ctx.world.immediate_receive_raw(
                            s,
                            dst,
                            size,
                            Source::Rank(peer),
                            Tag::Is(TAG_DATA),
                        )?
                    });
                }
                if bidir {
                    for _ in 0..w {
                        reqs.push(ctx.world.immediate_send(s, &sbuf[..size], peer, TAG_DATA)?);
                    }
                }
                oxmpi::request::wait_all(reqs)?;
                Ok(())
            })?;
            if !bidir {
                ack = i;
                ctx.world.send(&ack, peer, TAG_ACK)?;
            }
        } else {
            oxmpi::scope(|s| -> oxmpi::Result<()> {
                let mut reqs = Vec::with_capacity(w);
                for _ in 0..w {
                    reqs.push(ctx.world.immediate_send(s, &sbuf[..size], peer, TAG_DATA)?);
                }
                oxmpi::request::wait_all(reqs)?;
                Ok(())
            })?;
            ctx.world.receive_into(&mut ack, peer, TAG_ACK)?;
        }
    }
    let t = oxmpi::time() - t0;
    if bidir || !sender {
        check(ctx, &rbuf[..size], in_seed, size, peer);
    }
    Ok(t)
}

/// Bandwidth, bidirectional bandwidth, message rate and multi-pair bandwidth.
pub fn bandwidth(ctx: &Ctx<'_>) -> oxmpi::Result<()> {
    let b = ctx.benchmark;
    if matches!(b, Benchmark::Bw | Benchmark::Bibw) {
        require_np(ctx, Some(2), false)?;
    } else {
        require_np(ctx, None, true)?;
    }
    let sizes = ctx.sizes();
    let max = sizes.iter().copied().max().unwrap_or(0);
    let mut sbuf = ctx.buffer(max)?;
    let mut rbuf = ctx.buffer(max)?;
    let w = ctx.opts.window.unwrap_or(64) as f64;
    let pairs = (ctx.np / 2) as f64;
    ctx.header();
    for size in sizes {
        let t = stream(ctx, size, b == Benchmark::Bibw, &mut sbuf, &mut rbuf)?;
        let mean_t = mean_over_pairs(ctx, t)?;
        let iters = ctx.iters(IterClass::Bandwidth, size) as f64;
        let msgs = pairs * iters * w * if b == Benchmark::Bibw { 2.0 } else { 1.0 };
        let value = if b == Benchmark::Msgrate {
            msgs / mean_t
        } else {
            msgs * size as f64 / 1e6 / mean_t
        };
        ctx.row(size, value);
    }
    Ok(())
}
