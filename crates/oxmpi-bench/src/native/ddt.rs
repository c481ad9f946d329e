//! Derived-datatype benchmarks (`ddt-*`): ping-pong bandwidth and pack + unpack throughput of
//! the same types as `bench/c/oxbench.c` ("Derived datatypes" there), through oxmpi's views
//! and datatype engine. Sizes count data bytes.

use oxmpi::datatype::{pack, Type};
use oxmpi::point_to_point::{View, ViewMut};

use super::pattern::{pattern_byte, poison, seed_of};
use super::{require_np, Ctx};
use crate::suite::{Benchmark, IterClass};

const TAG_DATA: i32 = 1;

/// The type families of the `ddt-*` benchmarks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Contig,
    Vector,
    Vector64k,
    Indexed,
    Struct,
}

/// A benchmark type for `size` data bytes: the type, the bytes one element spans from the
/// buffer start, and the data bytes as `(offset, len)` runs.
pub(crate) struct DdtType {
    pub ty: Type,
    pub span: usize,
    pub runs: Vec<(usize, usize)>,
}

/// Builds the type of `kind` carrying `size` data bytes (a multiple of 16).
pub(crate) fn build(kind: Kind, size: usize) -> oxmpi::Result<DdtType> {
    let n = size / 8;
    let dbl = Type::of::<f64>();
    Ok(match kind {
        Kind::Contig => DdtType {
            ty: Type::contiguous(n as i64, &dbl)?,
            span: size,
            runs: vec![(0, size)],
        },
        Kind::Vector | Kind::Vector64k => {
            // 64 KiB blocks (or `OXBENCH_DDT_BLOCK` bytes, for measuring the iovec crossover
            // `OXMPI_DDT_IOV_MIN_BLOCK`), or the largest block dividing n when SIZE is not a
            // multiple.
            let b = if kind == Kind::Vector {
                1
            } else {
                gcd(n, block_doubles())
            };
            let blocks = n / b;
            DdtType {
                ty: Type::vector(blocks as i64, b as i64, 2 * b as i64, &dbl)?,
                span: (2 * blocks - 1) * b * 8,
                runs: (0..blocks).map(|k| (2 * k * b * 8, b * 8)).collect(),
            }
        }
        Kind::Indexed => {
            let (mut lens, mut displs, mut runs) = (Vec::new(), Vec::new(), Vec::new());
            let (mut done, mut at) = (0usize, 0usize);
            while done < n {
                let len = (lens.len() % 4 + 1).min(n - done);
                lens.push(len as i64);
                displs.push(at as i64);
                runs.push((at * 8, len * 8));
                done += len;
                at += len + 1;
            }
            DdtType {
                ty: Type::indexed(&lens, &displs, &dbl)?,
                span: (at - 1) * 8,
                runs,
            }
        }
        Kind::Struct => {
            let i32t = Type::of::<i32>();
            let s = Type::structure(&[1, 1, 1], &[0, 8, 16], &[i32t.clone(), dbl, i32t])?;
            let r = Type::resized(&s, 0, 24)?;
            let count = size / 16;
            DdtType {
                ty: Type::contiguous(count as i64, &r)?,
                span: count * 24 - 4,
                runs: (0..count)
                    .flat_map(|k| [(24 * k, 4), (24 * k + 8, 12)])
                    .collect(),
            }
        }
    })
}

/// Doubles per block of `ddt-vector64k`: 8192 (64 KiB) unless `OXBENCH_DDT_BLOCK` names a
/// block size in bytes (at least one double).
fn block_doubles() -> usize {
    std::env::var("OXBENCH_DDT_BLOCK")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .map_or(8192, |b| (b / 8).max(1))
}

fn gcd(a: usize, b: usize) -> usize {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// The family and mode (`true`: pack + unpack) of a `ddt-*` benchmark.
fn kind_of(b: Benchmark) -> (Kind, bool) {
    match b {
        Benchmark::DdtContig => (Kind::Contig, false),
        Benchmark::DdtVector => (Kind::Vector, false),
        Benchmark::DdtVector64k => (Kind::Vector64k, false),
        Benchmark::DdtIndexed => (Kind::Indexed, false),
        Benchmark::DdtStruct => (Kind::Struct, false),
        Benchmark::DdtPackVector => (Kind::Vector, true),
        Benchmark::DdtPackIndexed => (Kind::Indexed, true),
        _ => (Kind::Struct, true),
    }
}

/// Fills the whole span with the pattern (gaps too: they must never travel).
fn fill_span(buf: &mut [u8], seed: u64) {
    super::pattern::fill(buf, seed);
}

/// Data bytes must hold the pattern, gap bytes the poison.
fn verify(ctx: &Ctx<'_>, t: &DdtType, buf: &[u8], seed: u64, size: usize, from: i32) {
    let mut next = 0;
    let bad = |i: usize, data: bool| {
        let p = pattern_byte(seed, i);
        let want = if data { p } else { !p };
        if buf[i] != want {
            ctx.verification_failed(format!(
                "size {size}, data from rank {from}, {} byte {i}: expected {want:#04x}, got {:#04x}",
                if data { "data" } else { "gap" },
                buf[i]
            ));
        }
    };
    for &(off, len) in &t.runs {
        (next..off).for_each(|i| bad(i, false));
        (off..off + len).for_each(|i| bad(i, true));
        next = off + len;
    }
    (next..t.span).for_each(|i| bad(i, false));
}

/// Runs one `ddt-*` benchmark at np 2.
pub fn run(ctx: &Ctx<'_>) -> oxmpi::Result<()> {
    require_np(ctx, Some(2), false)?;
    let (kind, packing) = kind_of(ctx.benchmark);
    let peer = 1 - ctx.rank;
    let sizes = ctx.sizes();
    let max = sizes.iter().copied().max().unwrap_or(0);
    let mut sbuf = ctx.buffer(2 * max + 64)?;
    let mut rbuf = ctx.buffer(2 * max + 64)?;
    let mut packed = vec![0u8; if packing { max } else { 0 }];
    ctx.header();
    for size in sizes {
        if size < 16 || size % 16 != 0 {
            return Err(oxmpi::Error::new(
                oxmpi::ErrorClass::Arg,
                format!("sizes must be multiples of 16 bytes, got {size}"),
            ));
        }
        let t = build(kind, size)?;
        let (iters, warmup) = (
            ctx.iters(IterClass::Bandwidth, size),
            ctx.warmup(IterClass::Bandwidth, size),
        );
        let from = if packing { ctx.rank } else { peer };
        let (out_seed, in_seed) = (seed_of(size, ctx.rank, from), seed_of(size, from, ctx.rank));
        let in_seed = if packing { out_seed } else { in_seed };
        fill_span(&mut sbuf[..t.span], out_seed);
        poison(&mut rbuf[..t.span], in_seed);
        ctx.world.barrier()?;
        let mut t0 = 0.0;
        for i in 0..warmup + iters {
            if i == warmup {
                t0 = oxmpi::time();
            }
            if packing {
                pack::pack(&t.ty, &sbuf[..t.span], 0, 1, 0, &mut packed[..size])?;
                pack::unpack(&t.ty, &mut rbuf[..t.span], 0, 1, 0, &packed[..size])?;
            } else {
                let view = View::new(&sbuf[..t.span], &t.ty, 1)?;
                let mut rview = ViewMut::new(&mut rbuf[..t.span], &t.ty, 1)?;
                if ctx.rank == 0 {
                    ctx.world.send_view(&view, peer, TAG_DATA)?;
                    ctx.world.receive_view(&mut rview, peer, TAG_DATA)?;
                } else {
                    ctx.world.receive_view(&mut rview, peer, TAG_DATA)?;
                    ctx.world.send_view(&view, peer, TAG_DATA)?;
                }
            }
        }
        let elapsed = oxmpi::time() - t0;
        verify(ctx, &t, &rbuf[..t.span], in_seed, size, from);
        let per = if packing {
            elapsed / iters as f64
        } else {
            elapsed / (2.0 * iters as f64)
        };
        ctx.row(size, size as f64 / per / 1e6);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_carry_the_size_and_runs_match_the_type_map() {
        for kind in [
            Kind::Contig,
            Kind::Vector,
            Kind::Vector64k,
            Kind::Indexed,
            Kind::Struct,
        ] {
            for size in [16usize, 1 << 10, 96 << 10, 1 << 20] {
                let t = build(kind, size).unwrap();
                assert_eq!(t.ty.size() as usize, size, "{kind:?} {size}");
                let total: usize = t.runs.iter().map(|r| r.1).sum();
                assert_eq!(total, size, "{kind:?} {size}");
                // Packing a buffer whose bytes are their own offsets (mod 251) must yield the
                // run bytes in order: the runs describe the engine's type map.
                let src: Vec<u8> = (0..t.span).map(|i| (i % 251) as u8).collect();
                let mut out = vec![0u8; size];
                pack::pack(&t.ty, &src, 0, 1, 0, &mut out).unwrap();
                let want: Vec<u8> = t
                    .runs
                    .iter()
                    .flat_map(|&(o, l)| (o..o + l).map(|i| (i % 251) as u8))
                    .collect();
                assert_eq!(out, want, "{kind:?} {size}");
                let last = t.runs.last().unwrap();
                assert_eq!(last.0 + last.1, t.span, "{kind:?} {size}");
            }
        }
    }
}
