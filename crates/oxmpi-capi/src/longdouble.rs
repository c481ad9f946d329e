//! The C `long double` types as reduction elements: `MPI_LONG_DOUBLE`,
//! `MPI_C_LONG_DOUBLE_COMPLEX` (and the C++ twin) with SUM and PROD (and MIN, MAX on the
//! real type), and the `MPI_LONG_DOUBLE_INT` pair with MINLOC and MAXLOC.
//!
//! Rust has no `long double` (x87 80-bit extended on x86-64, kept in 16 bytes), so the
//! arithmetic is C compiled by the build (csrc/longdouble.c): it computes exactly what a C
//! program computes on the same platform, rounding included, with no soft-float to keep
//! right. The element types here are opaque 16-byte-aligned bytes.

use std::ffi::{c_int, c_void};

use bytemuck::{Pod, Zeroable};
use oxmpi::{Equivalence, Op, Reducible};

extern "C" {
    fn oxmpi_long_double_reduce(kind: c_int, op: c_int, a: *const c_void, b: *mut c_void, n: usize);
}

/// `b[i] = a[i] op b[i]` over elements of `size` bytes of `kind` (see csrc/longdouble.c).
fn apply(kind: c_int, op: c_int, size: usize, a: &[u8], b: &mut [u8]) {
    let n = a.len().min(b.len()) / size;
    // SAFETY: a C function reading `n` elements at `a` and writing `n` at `b`, both slices
    // holding at least `n × size` bytes; the element types' alignment (16) is what C's
    // `long double` needs, and the core hands kernels slices of those types. It neither
    // keeps the pointers nor unwinds.
    unsafe { oxmpi_long_double_reduce(kind, op, a.as_ptr().cast(), b.as_mut_ptr().cast(), n) }
}

/// A C `long double` (`MPI_LONG_DOUBLE`).
#[repr(C, align(16))]
#[derive(Debug, Clone, Copy, PartialEq, Default, Pod, Zeroable)]
pub struct LongDouble(pub [u8; 16]);

/// A C `long double _Complex` (`MPI_C_LONG_DOUBLE_COMPLEX`).
#[repr(C, align(16))]
#[derive(Debug, Clone, Copy, PartialEq, Default, Pod, Zeroable)]
pub struct LongDoubleComplex(pub [u8; 32]);

/// `struct { long double value; int index; }` (`MPI_LONG_DOUBLE_INT`, 32 bytes).
#[repr(C, align(16))]
#[derive(Debug, Clone, Copy, PartialEq, Default, Pod, Zeroable)]
pub struct LongDoubleInt(pub [u8; 32]);

impl Equivalence for LongDouble {}
impl Equivalence for LongDoubleComplex {}
impl Equivalence for LongDoubleInt {}

impl Reducible for LongDouble {
    fn kernel(op: &Op) -> Option<fn(&[u8], &mut [u8])> {
        Some(match op {
            Op::Sum => |a, b| apply(0, 0, 16, a, b),
            Op::Prod => |a, b| apply(0, 1, 16, a, b),
            Op::Min => |a, b| apply(0, 2, 16, a, b),
            Op::Max => |a, b| apply(0, 3, 16, a, b),
            _ => return None,
        })
    }
}

impl Reducible for LongDoubleComplex {
    fn kernel(op: &Op) -> Option<fn(&[u8], &mut [u8])> {
        // MPI defines only SUM and PROD on complex numbers (MPI-5.0 §6.9.2).
        Some(match op {
            Op::Sum => |a, b| apply(1, 0, 32, a, b),
            Op::Prod => |a, b| apply(1, 1, 32, a, b),
            _ => return None,
        })
    }
}

impl Reducible for LongDoubleInt {
    fn kernel(op: &Op) -> Option<fn(&[u8], &mut [u8])> {
        Some(match op {
            Op::MinLoc => |a, b| apply(2, 4, 32, a, b),
            Op::MaxLoc => |a, b| apply(2, 5, 32, a, b),
            _ => return None,
        })
    }
}

#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    use super::*;

    /// An x87 extended value from an `f64` (exact: 64-bit significand, 15-bit exponent).
    fn ext(x: f64) -> LongDouble {
        let mut out = [0u8; 16];
        if x != 0.0 {
            let bits = x.to_bits();
            let sign = (bits >> 63) as u16;
            let e = ((bits >> 52) & 0x7ff) as i32 - 1023 + 16383;
            let m = (1u64 << 63) | ((bits & ((1 << 52) - 1)) << 11);
            out[..8].copy_from_slice(&m.to_le_bytes());
            out[8..10].copy_from_slice(&((sign << 15) | e as u16).to_le_bytes());
        }
        LongDouble(out)
    }

    fn run(op: Op, a: f64, b: f64) -> LongDouble {
        let k = LongDouble::kernel(&op).expect("defined");
        let x = [ext(a)];
        let mut y = [ext(b)];
        k(bytemuck::cast_slice(&x), bytemuck::cast_slice_mut(&mut y));
        y[0]
    }

    #[test]
    fn sum_prod_min_max_compute_in_extended_precision() {
        assert_eq!(run(Op::Sum, 1.5, 2.25), ext(3.75));
        assert_eq!(run(Op::Prod, -3.0, 0.5), ext(-1.5));
        assert_eq!(run(Op::Min, -3.0, 0.5), ext(-3.0));
        assert_eq!(run(Op::Max, -3.0, 0.5), ext(0.5));
        // 1 + 2^-60 is exact in 64 significand bits, not in a double's 53.
        let tiny = 2f64.powi(-60);
        let s = run(Op::Sum, 1.0, tiny);
        assert_ne!(s, ext(1.0));
        assert_eq!(
            u64::from_le_bytes(s.0[..8].try_into().unwrap()),
            (1 << 63) | (1 << 3)
        );
    }

    #[test]
    fn only_the_standard_operations_are_defined() {
        assert!(LongDouble::kernel(&Op::BitwiseAnd).is_none());
        assert!(LongDoubleComplex::kernel(&Op::Min).is_none());
        assert!(LongDoubleInt::kernel(&Op::Sum).is_none());
    }
}
