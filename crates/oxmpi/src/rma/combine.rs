//! Combine loops for accumulates of more than a few elements: `target = origin ∘ target` in
//! place, the same element functions as the datatype engine's kernels
//! ([`crate::datatype::ops::kernel`]), but compiled again for AVX2 and for AVX-512 and chosen
//! at run time where the CPU has them. The project builds for baseline x86-64 (SSE2, 16-byte
//! vectors); a 16 KiB `int` sum then spent most of its time in the combine loop, twice as long
//! as a loop over 32-byte vectors, and on a Xeon with AVX-512 the 32-byte loop still took
//! about 1.8x Open MPI's time for 16 KiB (its accumulates use 64-byte vectors there).
//!
//! Each kernel checks the CPU itself (through `multiversion`, a cached choice); pairs this
//! module does not cover (pair types, logical, complex, half and long double types) use the
//! datatype engine's kernel unchanged.

use std::sync::OnceLock;

use crate::datatype::ops;
use crate::datatype::predefined::{Predefined, Repr, ALL};
use crate::error::Result;
use crate::op::{KernelFn, Op};

/// `inout[i] = f(input[i], inout[i])` over whole, aligned elements of `T`; built for baseline
/// x86-64, again for AVX2 (the compiler vectorises it over 32-byte registers) and for AVX-512
/// (64-byte registers), the build chosen once at run time by what the CPU has (`multiversion`
/// does the detection and the dispatch, so no call here needs `unsafe`; it takes the AVX-512
/// build only on CPUs with Ice Lake's extensions, where 64-byte vectors no longer lower the
/// clock).
#[multiversion::multiversion(targets("x86_64+avx512f+avx512bw+avx512vl", "x86_64+avx2"))]
fn run<T: bytemuck::Pod, F: Fn(T, T) -> T>(input: &[u8], inout: &mut [u8], f: F) {
    let a: &[T] = bytemuck::cast_slice(input);
    let b: &mut [T] = bytemuck::cast_slice_mut(inout);
    for (y, &x) in b.iter_mut().zip(a) {
        *y = f(x, *y);
    }
}

macro_rules! int_kernels {
    ($op:expr, $t:ty) => {{
        let k: KernelFn = match $op {
            Op::Sum => |a, b| run::<$t, _>(a, b, |x, y| x.wrapping_add(y)),
            Op::Prod => |a, b| run::<$t, _>(a, b, |x, y| x.wrapping_mul(y)),
            Op::Min => |a, b| run::<$t, _>(a, b, |x, y| x.min(y)),
            Op::Max => |a, b| run::<$t, _>(a, b, |x, y| x.max(y)),
            Op::BitwiseAnd => |a, b| run::<$t, _>(a, b, |x, y| x & y),
            Op::BitwiseOr => |a, b| run::<$t, _>(a, b, |x, y| x | y),
            Op::BitwiseXor => |a, b| run::<$t, _>(a, b, |x, y| x ^ y),
            _ => return None,
        };
        Some(k)
    }};
}

macro_rules! float_kernels {
    ($op:expr, $t:ty) => {{
        let k: KernelFn = match $op {
            Op::Sum => |a, b| run::<$t, _>(a, b, |x, y| x + y),
            Op::Prod => |a, b| run::<$t, _>(a, b, |x, y| x * y),
            Op::Min => |a, b| run::<$t, _>(a, b, |x, y| x.min(y)),
            Op::Max => |a, b| run::<$t, _>(a, b, |x, y| x.max(y)),
            _ => return None,
        };
        Some(k)
    }};
}

/// This module's kernel for `op` on plain (non-pair) elements of `repr`, if it has one.
fn fast(op: &Op, repr: Repr) -> Option<KernelFn> {
    use Repr::*;
    match repr {
        I8 => int_kernels!(op, i8),
        I16 => int_kernels!(op, i16),
        I32 => int_kernels!(op, i32),
        I64 | Long => int_kernels!(op, i64),
        U8 | Byte => int_kernels!(op, u8),
        U16 => int_kernels!(op, u16),
        U32 => int_kernels!(op, u32),
        U64 | ULong => int_kernels!(op, u64),
        F32 => float_kernels!(op, f32),
        F64 => float_kernels!(op, f64),
        _ => None,
    }
}

/// Datatype handles per row: the predefined ones lie in 256 values from the null handle.
const SLOTS: usize = 256;

/// [`lookup`] of every (predefined operation, predefined datatype) pair it accepts, by
/// [`row`] and handle: built on first use, then one indexed load per accumulate (the two
/// lookups through `match`es were a tenth of a 4-byte accumulate's time when profiled).
static TABLE: OnceLock<Box<[Option<KernelFn>]>> = OnceLock::new();

fn build() -> Box<[Option<KernelFn>]> {
    let mut t = vec![None; Op::PREDEFINED.len() * SLOTS];
    for (r, op) in Op::PREDEFINED.iter().enumerate() {
        for info in ALL {
            let slot = usize::from(info.handle - Predefined::NULL_HANDLE);
            t[r * SLOTS + slot] =
                Predefined::from_handle(u32::from(info.handle)).and_then(|p| lookup(op, p).ok());
        }
    }
    t.into_boxed_slice()
}

/// The kernel an accumulate of `op` on `base` combines with (`inout = in ∘ inout`, whole
/// aligned elements): this module's where it has one, the datatype engine's otherwise. Fails
/// as [`ops::kernel`] does on pairs MPI does not define.
#[inline]
pub(crate) fn kernel(op: &Op, base: Predefined) -> Result<KernelFn> {
    if let Some(r) = op.predefined_index() {
        let slot = usize::from(base.handle().wrapping_sub(Predefined::NULL_HANDLE));
        if let Some(&Some(k)) = TABLE.get_or_init(build).get(r * SLOTS + slot) {
            return Ok(k);
        }
    }
    lookup(op, base)
}

/// [`kernel`] without the table: user operations and the pairs that fail (for their error).
fn lookup(op: &Op, base: Predefined) -> Result<KernelFn> {
    let k = ops::kernel(op, base)?;
    let info = base.info();
    if info.pair_index.is_some() {
        return Ok(k);
    }
    Ok(fast(op, info.repr).unwrap_or(k))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Values that exercise wrapping, signs, NaN and signed zeros, as bytes of `elem`-byte
    /// elements: a deterministic mix, not hand-picked results.
    fn bytes(len: usize, seed: u64) -> Vec<u128> {
        let mut v = vec![0u128; len.div_ceil(16)];
        let b: &mut [u8] = bytemuck::cast_slice_mut(&mut v);
        let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        for (i, c) in b[..len].iter_mut().enumerate() {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // Every 7th byte 0x80 or 0x7f or 0: sign bits, NaN exponents, zeros.
            *c = match i % 7 {
                3 => 0x80,
                5 => 0x7f,
                6 => 0,
                _ => x as u8,
            };
        }
        v
    }

    /// Whether two elements agree: bit for bit, except that any NaN equals any NaN (which
    /// operand's payload an addition propagates is up to the instruction the compiler picks).
    fn same(repr: Repr, a: &[u8], b: &[u8]) -> bool {
        let nan = |x: &[u8]| match repr {
            Repr::F32 => f32::from_ne_bytes(x.try_into().expect("4 bytes")).is_nan(),
            Repr::F64 => f64::from_ne_bytes(x.try_into().expect("8 bytes")).is_nan(),
            _ => false,
        };
        a == b || (nan(a) && nan(b))
    }

    /// Every pair this module covers gives the datatype engine's result, at lengths around
    /// the vector widths.
    #[test]
    fn same_results_as_the_datatype_engine() {
        let types = [
            Predefined::INT8_T,
            Predefined::SHORT,
            Predefined::INT,
            Predefined::LONG,
            Predefined::INT64_T,
            Predefined::UINT8_T,
            Predefined::BYTE,
            Predefined::UNSIGNED_SHORT,
            Predefined::UNSIGNED,
            Predefined::UNSIGNED_LONG,
            Predefined::UINT64_T,
            Predefined::FLOAT,
            Predefined::DOUBLE,
        ];
        let ops_all = [
            Op::Sum,
            Op::Prod,
            Op::Min,
            Op::Max,
            Op::BitwiseAnd,
            Op::BitwiseOr,
            Op::BitwiseXor,
        ];
        let mut covered = 0;
        for p in types {
            let elem = p.info().extent;
            for op in &ops_all {
                let Ok(reference) = ops::kernel(op, p) else {
                    continue;
                };
                let k = kernel(op, p).expect("defined where the engine's is");
                covered += usize::from(fast(op, p.info().repr).is_some());
                for n in [1, 3, 7, 8, 9, 31, 32, 33, 100, 1000] {
                    let len = n * elem;
                    let origin = bytes(len, n as u64);
                    let target = bytes(len, 1000 + n as u64);
                    let origin = &bytemuck::cast_slice::<u128, u8>(&origin)[..len];
                    let mut want = target.clone();
                    let mut got = target;
                    reference(origin, &mut bytemuck::cast_slice_mut(&mut want)[..len]);
                    k(origin, &mut bytemuck::cast_slice_mut(&mut got)[..len]);
                    let (got, want) = (
                        &bytemuck::cast_slice::<u128, u8>(&got)[..len],
                        &bytemuck::cast_slice::<u128, u8>(&want)[..len],
                    );
                    for (i, (g, w)) in got.chunks(elem).zip(want.chunks(elem)).enumerate() {
                        assert!(
                            same(p.info().repr, g, w),
                            "{} on {}, {n} elements: element {i} is {g:?}, not {w:?}",
                            op.name(),
                            p.name()
                        );
                    }
                }
            }
        }
        assert!(covered >= 60, "only {covered} pairs have a fast kernel");
    }

    /// The table gives what the lookup gives for every predefined pair, and fails where it
    /// fails.
    #[test]
    fn table_agrees_with_the_lookup_everywhere() {
        let mut hits = 0;
        for op in Op::PREDEFINED {
            for info in ALL {
                let p = Predefined::from_handle(u32::from(info.handle)).expect("predefined");
                match (kernel(&op, p), lookup(&op, p)) {
                    (Ok(a), Ok(b)) => {
                        assert_eq!(a as usize, b as usize, "{} on {}", op.name(), p.name());
                        hits += 1;
                    }
                    (Err(a), Err(b)) => assert_eq!(a.class(), b.class()),
                    (a, b) => panic!(
                        "{} on {}: table {:?}, lookup {:?}",
                        op.name(),
                        p.name(),
                        a.is_ok(),
                        b.is_ok()
                    ),
                }
            }
        }
        assert!(
            hits > Op::PREDEFINED.len(),
            "only {hits} pairs have a kernel"
        );
    }

    #[test]
    fn pairs_and_undefined_ones_keep_the_engine_answer() {
        assert!(kernel(&Op::BitwiseAnd, Predefined::FLOAT).is_err());
        assert!(kernel(&Op::MinLoc, Predefined::INT).is_err());
        assert!(fast(&Op::MinLoc, Predefined::DOUBLE_INT.info().repr).is_none());
        let k = kernel(&Op::MinLoc, Predefined::DOUBLE_INT).expect("defined on pairs");
        let r = ops::kernel(&Op::MinLoc, Predefined::DOUBLE_INT).expect("defined on pairs");
        assert_eq!(k as usize, r as usize, "a pair uses the engine's kernel");
    }
}
