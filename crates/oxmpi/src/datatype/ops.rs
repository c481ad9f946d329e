//! The run-time (operation, datatype) → kernel table the C layer needs: every predefined
//! operation on every predefined type it is defined on (MPI-5.0 §6.9.2), built from the same
//! generic element loops as the typed kernels of [`crate::op`] (`Reducible::kernel`, `zip`);
//! and reductions on derived types built from one predefined type, applied element by
//! element through the type map.
//!
//! Half precision (`MPI_REAL2`, the ABI's only one) is reduced in `f32` and rounded back to
//! nearest even, so each result is the correctly rounded half of the exact one for SUM, PROD,
//! MIN and MAX (an `f32` holds any product or sum of two halves exactly enough: §6.9.2 asks
//! for no more). `long double` types have no kernel yet: their pairs are [`ErrorClass::Op`]
//! errors saying so.
//!
//! # Standard sections
//! MPI-5.0 §6.9.2 (predefined operations and type classes), §6.9.4 (MINLOC/MAXLOC), §6.9.7
//! (`MPI_Reduce_local`).

use super::build::Type;
use super::pack;
use super::predefined::{OpClass, Predefined, Repr};
use crate::error::{Error, ErrorClass, Result};
use crate::op::{zip, DoubleInt, FloatInt, KernelFn, LongInt, Op, Reducible, ShortInt, TwoInt};

/// Whether MPI defines `op` on types of `class` (§6.9.2).
pub fn defined_on(op: &Op, class: OpClass) -> bool {
    use OpClass::*;
    match op {
        Op::Min | Op::Max => matches!(class, CInteger | FortranInteger | Float | MultiLanguage),
        Op::Sum | Op::Prod => matches!(
            class,
            CInteger | FortranInteger | Float | Complex | MultiLanguage
        ),
        Op::LogicalAnd | Op::LogicalOr | Op::LogicalXor => matches!(class, CInteger | Logical),
        Op::BitwiseAnd | Op::BitwiseOr | Op::BitwiseXor => {
            matches!(class, CInteger | FortranInteger | Byte | MultiLanguage)
        }
        Op::MinLoc | Op::MaxLoc => class == Pair,
        Op::Replace | Op::NoOp => true,
        Op::User(_) => false,
    }
}

fn complex32(op: &Op) -> Option<KernelFn> {
    match op {
        Op::Sum => Some(|a, b| zip::<f32>(a, b, |x, y| x + y)),
        Op::Prod => Some(|a, b| {
            zip::<[f32; 2]>(a, b, |x, y| {
                [x[0] * y[0] - x[1] * y[1], x[0] * y[1] + x[1] * y[0]]
            })
        }),
        _ => None,
    }
}

fn complex64(op: &Op) -> Option<KernelFn> {
    match op {
        Op::Sum => Some(|a, b| zip::<f64>(a, b, |x, y| x + y)),
        Op::Prod => Some(|a, b| {
            zip::<[f64; 2]>(a, b, |x, y| {
                [x[0] * y[0] - x[1] * y[1], x[0] * y[1] + x[1] * y[0]]
            })
        }),
        _ => None,
    }
}

/// IEEE binary16 bits to `f32` (exact).
fn f16_to_f32(h: u16) -> f32 {
    let sign = u32::from(h >> 15) << 31;
    let exp = u32::from((h >> 10) & 0x1f);
    let man = u32::from(h & 0x3ff);
    let bits = match exp {
        0 => {
            // Zero or subnormal: man × 2^-24, exact in f32.
            let v = man as f32 * (1.0 / 16_777_216.0);
            return if sign != 0 { -v } else { v };
        }
        31 => sign | 0x7f80_0000 | (man << 13),
        _ => sign | ((exp + 112) << 23) | (man << 13),
    };
    f32::from_bits(bits)
}

/// `f32` to IEEE binary16 bits, rounded to nearest even (overflow to infinity, NaN kept a
/// quiet NaN).
fn f32_to_f16(x: f32) -> u16 {
    let b = x.to_bits();
    let sign = ((b >> 16) & 0x8000) as u16;
    let exp = ((b >> 23) & 0xff) as i32;
    let man = b & 0x7f_ffff;
    if exp == 255 {
        let nan = if man != 0 {
            0x200 | (man >> 13) as u16
        } else {
            0
        };
        return sign | 0x7c00 | nan;
    }
    // Round `v`, whose low `shift` bits are dropped, to nearest even.
    let round = |v: u32, shift: u32| {
        let (kept, rem, mid) = (v >> shift, v & ((1 << shift) - 1), 1 << (shift - 1));
        if rem > mid || (rem == mid && kept & 1 == 1) {
            kept + 1
        } else {
            kept
        }
    };
    let e = exp - 127 + 15;
    if e >= 31 {
        return sign | 0x7c00;
    }
    if e <= 0 {
        if e < -10 {
            return sign;
        }
        // Subnormal (or rounding up into the smallest normal, which the carry encodes).
        return sign | round(man | 0x80_0000, (14 - e) as u32) as u16;
    }
    // A carry out of the mantissa bumps the exponent, up to infinity: both encoded right.
    sign | round(((e as u32) << 23) | man, 13) as u16
}

/// `inout = g(in, inout)` on halves, computed in `f32`.
fn via_f32(a: &[u8], b: &mut [u8], g: fn(f32, f32) -> f32) {
    zip::<u16>(a, b, |x, y| f32_to_f16(g(f16_to_f32(x), f16_to_f32(y))));
}

/// SUM, PROD, MIN and MAX on half precision, computed in `f32`.
fn half(op: &Op) -> Option<KernelFn> {
    Some(match op {
        Op::Sum => |a, b| via_f32(a, b, |x, y| x + y),
        Op::Prod => |a, b| via_f32(a, b, |x, y| x * y),
        Op::Min => |a, b| via_f32(a, b, f32::min),
        Op::Max => |a, b| via_f32(a, b, f32::max),
        _ => return None,
    })
}

macro_rules! same_type_pair {
    ($name:ident, $t:ty) => {
        /// MINLOC/MAXLOC on Fortran pairs whose index has the value's type.
        fn $name(op: &Op) -> Option<KernelFn> {
            match op {
                Op::MinLoc => Some(|a, b| {
                    zip::<[$t; 2]>(a, b, |x, y| {
                        if x[0] < y[0] || (x[0] == y[0] && x[1] < y[1]) {
                            x
                        } else {
                            y
                        }
                    })
                }),
                Op::MaxLoc => Some(|a, b| {
                    zip::<[$t; 2]>(a, b, |x, y| {
                        if x[0] > y[0] || (x[0] == y[0] && x[1] < y[1]) {
                            x
                        } else {
                            y
                        }
                    })
                }),
                _ => None,
            }
        }
    };
}
same_type_pair!(two_real, f32);
same_type_pair!(two_double, f64);

/// The kernel of a predefined operation on elements of one basic representation.
fn by_repr(op: &Op, r: Repr) -> Option<KernelFn> {
    use Repr::*;
    match r {
        I8 => i8::kernel(op),
        I16 => i16::kernel(op),
        I32 => i32::kernel(op),
        I64 | Long => i64::kernel(op),
        I128 => i128::kernel(op),
        U8 | Bool | Byte | Logical(1) => u8::kernel(op),
        U16 | Logical(2) => u16::kernel(op),
        U32 | Logical(4) => u32::kernel(op),
        U64 | ULong | Logical(8) => u64::kernel(op),
        Logical(16) => u128::kernel(op),
        F32 => f32::kernel(op),
        F64 => f64::kernel(op),
        F16 => half(op),
        C32 => complex32(op),
        C64 => complex64(op),
        _ => None,
    }
}

fn pair_kernel(op: &Op, p: Predefined) -> Option<KernelFn> {
    match p {
        Predefined::FLOAT_INT => FloatInt::kernel(op),
        Predefined::DOUBLE_INT => DoubleInt::kernel(op),
        Predefined::LONG_INT => LongInt::kernel(op),
        Predefined::TWO_INT | Predefined::TWO_INTEGER => TwoInt::kernel(op),
        Predefined::SHORT_INT => ShortInt::kernel(op),
        Predefined::TWO_REAL => two_real(op),
        Predefined::TWO_DOUBLE_PRECISION => two_double(op),
        _ => None,
    }
}

/// The kernel of predefined operation `op` on contiguous native elements of `p` (`inout =
/// in ∘ inout`, both slices whole elements, aligned for `p`). An [`ErrorClass::Op`] error
/// when MPI does not define `op` on `p`, or oxmpi has no kernel for it yet.
pub fn kernel(op: &Op, p: Predefined) -> Result<KernelFn> {
    let info = p.info();
    if !defined_on(op, info.class) {
        return Err(Error::new(
            ErrorClass::Op,
            format!(
                "{} is not defined on {} (MPI-5.0 §6.9.2)",
                op.name(),
                p.name()
            ),
        ));
    }
    let k = match op {
        Op::Replace => Some((|_, _| {}) as KernelFn),
        Op::NoOp => Some((|a: &[u8], b: &mut [u8]| b.copy_from_slice(a)) as KernelFn),
        _ if info.pair_index.is_some() => pair_kernel(op, p),
        _ => by_repr(op, info.repr),
    };
    k.ok_or_else(|| {
        Error::new(
            ErrorClass::Op,
            format!(
                "{} on {} is not implemented in oxmpi yet",
                op.name(),
                p.name()
            ),
        )
    })
}

/// Applies `k` to elements that may not be aligned for it, through aligned stack chunks.
fn apply(k: KernelFn, align: usize, elem: usize, input: &[u8], inout: &mut [u8]) {
    if (input.as_ptr() as usize).is_multiple_of(align)
        && (inout.as_ptr() as usize).is_multiple_of(align)
    {
        return k(input, inout);
    }
    let mut a = [0u128; 64];
    let mut b = [0u128; 64];
    let chunk = (1024 / elem).max(1) * elem;
    for (x, y) in input.chunks(chunk).zip(inout.chunks_mut(chunk)) {
        let ab = &mut bytemuck::cast_slice_mut::<u128, u8>(&mut a)[..x.len()];
        let bb = &mut bytemuck::cast_slice_mut::<u128, u8>(&mut b)[..y.len()];
        ab.copy_from_slice(x);
        bb.copy_from_slice(y);
        k(ab, bb);
        y.copy_from_slice(bb);
    }
}

/// `MPI_Reduce_local` with a datatype: `inout = in ∘ inout` over `count` elements of `ty`
/// whose origin is byte 0 of both slices. `ty` must be built from one predefined type
/// ([`ErrorClass::Op`] otherwise, and for an undefined pair); a type map reaching outside
/// either slice is [`ErrorClass::Buffer`]. Bytes outside the type map are left untouched.
pub fn reduce(input: &[u8], inout: &mut [u8], count: u64, ty: &Type, op: &Op) -> Result<()> {
    let p = ty.base().ok_or_else(|| {
        Error::new(
            ErrorClass::Op,
            format!(
                "{}: reductions need a datatype built from one predefined type",
                op.name()
            ),
        )
    })?;
    let k = kernel(op, p)?;
    pack::pack_size(ty, count)?;
    if let Some((lo, hi)) = pack::span(ty, count) {
        let len = input.len().min(inout.len()) as i64;
        if lo < 0 || hi > len {
            return Err(Error::new(
                ErrorClass::Buffer,
                format!(
                    "reduce: {count} elements touch bytes {lo}..{hi}, buffers have {} and {}",
                    input.len(),
                    inout.len()
                ),
            ));
        }
    }
    let info = p.info();
    match info.pair_index {
        None => {
            // Every run holds whole elements (each element's data is contiguous).
            ty.layout()
                .walk_count(count, ty.extent(), 0, &mut |off: i64, len: u64| {
                    let (o, n) = (off as usize, len as usize);
                    apply(
                        k,
                        info.align,
                        info.extent,
                        &input[o..o + n],
                        &mut inout[o..o + n],
                    );
                    true
                });
        }
        Some(idx) => {
            // A pair's value and index may be apart: gather both into an aligned copy of the
            // C struct, reduce, and write back the two fields only.
            let size = p.size() as u64;
            let (vs, is) = (info.repr.size(), p.pair_index_repr().size());
            let mut pos = 0u64;
            ty.layout()
                .walk_count(count, ty.extent(), 0, &mut |off: i64, len: u64| {
                    let mut q = pos.next_multiple_of(size);
                    while q < pos + len {
                        let o = (off + (q - pos) as i64) as usize;
                        let mut a = [0u128; 2];
                        let mut b = [0u128; 2];
                        {
                            let ab = bytemuck::cast_slice_mut::<u128, u8>(&mut a);
                            ab[..vs].copy_from_slice(&input[o..o + vs]);
                            ab[idx..idx + is].copy_from_slice(&input[o + idx..o + idx + is]);
                            let bb = bytemuck::cast_slice_mut::<u128, u8>(&mut b);
                            bb[..vs].copy_from_slice(&inout[o..o + vs]);
                            bb[idx..idx + is].copy_from_slice(&inout[o + idx..o + idx + is]);
                            k(&ab[..info.extent], &mut bb[..info.extent]);
                        }
                        let bb = bytemuck::cast_slice::<u128, u8>(&b);
                        inout[o..o + vs].copy_from_slice(&bb[..vs]);
                        inout[o + idx..o + idx + is].copy_from_slice(&bb[idx..idx + is]);
                        q += size;
                    }
                    pos += len;
                    true
                });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datatype::predefined::ALL;

    const OPS: [Op; 14] = Op::PREDEFINED;

    fn red(op: Op, p: Predefined, a: &[u8], b: &mut [u8]) -> Result<()> {
        let n = (a.len() / p.info().extent) as u64;
        reduce(a, b, n, &Type::predefined(p), &op)
    }

    #[test]
    fn the_table_covers_every_defined_pair_and_rejects_the_others() {
        let mut defined = 0;
        for i in ALL {
            let p = Predefined::from_handle(i.handle as u32).unwrap();
            for op in OPS.iter() {
                let r = kernel(op, p);
                // Quad precision has no Rust arithmetic; `long double` is computed by C in
                // the C layer.
                let no_kernel_yet = matches!(
                    i.repr,
                    Repr::F128 | Repr::C128 | Repr::LongDouble | Repr::LongDoubleComplex
                ) && !matches!(op, Op::Replace | Op::NoOp);
                if defined_on(op, i.class) && !no_kernel_yet {
                    assert!(r.is_ok(), "{} on {}", op.name(), i.name);
                    defined += 1;
                } else {
                    assert_eq!(
                        r.unwrap_err().class(),
                        ErrorClass::Op,
                        "{} on {}",
                        op.name(),
                        i.name
                    );
                }
            }
        }
        assert!(defined > 400, "{defined} pairs");
    }

    /// 2^n, exact (`powi` need not be, and is not under Miri).
    fn p2(n: i32) -> f32 {
        f32::from_bits(((127 + n) as u32) << 23)
    }

    #[test]
    fn half_precision_converts_exactly_and_rounds_to_nearest_even() {
        // Every finite half survives the trip through f32; NaNs stay NaNs.
        // Every one natively; a sample under the interpreter.
        for h in (0..=u16::MAX).step_by(if cfg!(miri) { 97 } else { 1 }) {
            let x = f16_to_f32(h);
            if x.is_nan() {
                assert!(f16_to_f32(f32_to_f16(x)).is_nan(), "{h:#06x}");
            } else {
                assert_eq!(f32_to_f16(x), h, "{h:#06x} = {x}");
            }
        }
        assert_eq!(f16_to_f32(0x3c00), 1.0);
        assert_eq!(f16_to_f32(0xc000), -2.0);
        assert_eq!(f16_to_f32(0x7bff), 65504.0);
        assert_eq!(f16_to_f32(0x0001), p2(-24));
        // Halfway between 1 and the next half (1 + 2^-10): ties go to the even one.
        assert_eq!(f32_to_f16(1.0 + p2(-11)), 0x3c00);
        assert_eq!(f32_to_f16(1.0 + 3.0 * p2(-11)), 0x3c02);
        assert_eq!(f32_to_f16(1.0 + p2(-11) + p2(-20)), 0x3c01);
        // Overflow, the largest finite, subnormals and underflow.
        assert_eq!(f32_to_f16(65520.0), 0x7c00);
        assert_eq!(f32_to_f16(65519.0), 0x7bff);
        assert_eq!(f32_to_f16(-1e9), 0xfc00);
        assert_eq!(f32_to_f16(3.0 * p2(-25)), 0x0002);
        assert_eq!(f32_to_f16(p2(-25)), 0x0000);
        assert_eq!(f32_to_f16(-p2(-26)), 0x8000);
        assert_eq!(f32_to_f16(p2(-14) - p2(-26)), 0x0400);
    }

    #[test]
    fn half_precision_reduces_through_f32() {
        let h = |v: f32| f32_to_f16(v).to_ne_bytes();
        let cases = [
            (Op::Sum, 1.5f32, 2.25f32, 3.75f32),
            (Op::Prod, -1.5, 3.0, -4.5),
            (Op::Min, -1.5, 3.0, -1.5),
            (Op::Max, -1.5, 3.0, 3.0),
            // 2048 + 1 is not a half: ties to even, 2048.
            (Op::Sum, 2048.0, 1.0, 2048.0),
            (Op::Prod, 300.0, 300.0, f32::INFINITY),
        ];
        for (op, a, b, want) in cases {
            let mut inout = [h(a), h(a)].concat();
            let input = [h(b), h(b)].concat();
            red(op.clone(), Predefined::REAL2, &input, &mut inout).unwrap();
            for c in inout.chunks_exact(2) {
                let got = f16_to_f32(u16::from_ne_bytes([c[0], c[1]]));
                assert_eq!(got, want, "{} {a} {b}", op.name());
            }
        }
        for op in [Op::BitwiseAnd, Op::LogicalOr, Op::MinLoc] {
            assert_eq!(
                kernel(&op, Predefined::REAL2).unwrap_err().class(),
                ErrorClass::Op
            );
        }
    }

    #[test]
    fn each_class_reduces() {
        // C integer and Fortran integer, multi-language.
        let mut b = 5i32.to_ne_bytes();
        red(Op::Sum, Predefined::INT, &7i32.to_ne_bytes(), &mut b).unwrap();
        assert_eq!(i32::from_ne_bytes(b), 12);
        let mut b = 6i64.to_ne_bytes();
        red(
            Op::BitwiseAnd,
            Predefined::AINT,
            &3i64.to_ne_bytes(),
            &mut b,
        )
        .unwrap();
        assert_eq!(i64::from_ne_bytes(b), 2);
        assert_eq!(
            red(Op::LogicalAnd, Predefined::INTEGER, &[1; 4], &mut [1; 4])
                .unwrap_err()
                .class(),
            ErrorClass::Op
        );
        // Float.
        let mut b = 2.5f64.to_ne_bytes();
        red(Op::Max, Predefined::DOUBLE, &3.5f64.to_ne_bytes(), &mut b).unwrap();
        assert_eq!(f64::from_ne_bytes(b), 3.5);
        // Complex product: (1 + 2i)(3 + 4i) = -5 + 10i.
        let c = |re: f32, im: f32| [re.to_ne_bytes(), im.to_ne_bytes()].concat();
        let mut b = c(3.0, 4.0);
        red(Op::Prod, Predefined::C_FLOAT_COMPLEX, &c(1.0, 2.0), &mut b).unwrap();
        assert_eq!(b, c(-5.0, 10.0));
        assert_eq!(
            red(Op::Max, Predefined::C_FLOAT_COMPLEX, &c(0.0, 0.0), &mut b)
                .unwrap_err()
                .class(),
            ErrorClass::Op
        );
        // Logical: C bool and Fortran LOGICAL.
        let mut b = [1u8, 0, 1];
        red(Op::LogicalXor, Predefined::C_BOOL, &[1, 1, 0], &mut b).unwrap();
        assert_eq!(b, [0, 1, 1]);
        let mut b = 0u32.to_ne_bytes();
        red(
            Op::LogicalOr,
            Predefined::LOGICAL,
            &7u32.to_ne_bytes(),
            &mut b,
        )
        .unwrap();
        assert_eq!(u32::from_ne_bytes(b), 1);
        // Byte.
        let mut b = [0b1100u8];
        red(Op::BitwiseXor, Predefined::BYTE, &[0b1010], &mut b).unwrap();
        assert_eq!(b, [0b0110]);
        assert_eq!(
            red(Op::Sum, Predefined::BYTE, &[1], &mut [1])
                .unwrap_err()
                .class(),
            ErrorClass::Op
        );
        assert_eq!(
            red(Op::Sum, Predefined::CHAR, &[1], &mut [1])
                .unwrap_err()
                .class(),
            ErrorClass::Op
        );
        // Replace keeps inout, no_op takes in.
        let mut b = [9u8];
        red(Op::NoOp, Predefined::CHAR, &[4], &mut b).unwrap();
        assert_eq!(b, [4]);
    }

    #[test]
    fn pairs_reduce_as_minloc_maxloc_even_inside_derived_types() {
        let di = |v: f64, i: i32| bytemuck::bytes_of(&DoubleInt::new(v, i)).to_vec();
        let mut b = [di(1.0, 3), di(5.0, 2)].concat();
        let a = [di(1.0, 1), di(4.0, 0)].concat();
        red(Op::MinLoc, Predefined::DOUBLE_INT, &a, &mut b).unwrap();
        assert_eq!(b, [di(1.0, 1), di(4.0, 0)].concat());
        // Elements 0 and 2 of SHORT_INT (value and index with padding between them).
        let si = Type::predefined(Predefined::SHORT_INT);
        let v = Type::vector(2, 1, 2, &si).unwrap();
        let el = |s: i16, i: i32| {
            let mut e = [0xAAu8; 8];
            e[..2].copy_from_slice(&s.to_ne_bytes());
            e[4..].copy_from_slice(&i.to_ne_bytes());
            e
        };
        let input = [el(1, 5), el(0, 0), el(9, 1)].concat();
        let mut inout = [el(2, 4), el(7, 7), el(9, 0)].concat();
        reduce(&input, &mut inout, 1, &v, &Op::MaxLoc).unwrap();
        assert_eq!(
            inout,
            [el(2, 4), el(7, 7), el(9, 0)].concat(),
            "2 > 1; the tie 9/9 keeps the smaller index"
        );
        reduce(&input, &mut inout, 1, &v, &Op::MinLoc).unwrap();
        assert_eq!(
            inout,
            [el(1, 5), el(7, 7), el(9, 0)].concat(),
            "the gap element is untouched"
        );
        assert_eq!(
            reduce(&input, &mut inout, 1, &v, &Op::Sum)
                .unwrap_err()
                .class(),
            ErrorClass::Op
        );
        // 2REAL: the index is a REAL.
        let mut b = bytemuck::cast_slice::<f32, u8>(&[3.0, 1.0]).to_vec();
        red(
            Op::MaxLoc,
            Predefined::TWO_REAL,
            bytemuck::cast_slice::<f32, u8>(&[4.0, 2.0]),
            &mut b,
        )
        .unwrap();
        assert_eq!(b, bytemuck::cast_slice::<f32, u8>(&[4.0, 2.0]));
    }

    #[test]
    fn derived_types_reduce_through_the_type_map_even_unaligned() {
        // Every other int, starting at byte 1 (misaligned), count 2 with extent 16.
        let t = Type::hvector(2, 1, 8, &Type::predefined(Predefined::INT)).unwrap();
        let t = Type::hindexed_block(1, &[1], &t).unwrap();
        let t = Type::resized(&t, 0, 16).unwrap();
        let input: Vec<u8> = (0..33).map(|_| 1).collect();
        let mut inout: Vec<u8> = vec![0; 33];
        reduce(&input, &mut inout, 2, &t, &Op::Sum).unwrap();
        let ones = i32::from_ne_bytes([1; 4]);
        for (i, chunk) in [1usize, 9, 17, 25].iter().enumerate() {
            assert_eq!(
                i32::from_ne_bytes(inout[*chunk..chunk + 4].try_into().unwrap()),
                ones,
                "element {i}"
            );
        }
        assert_eq!(inout[0], 0);
        assert_eq!(inout[5..9], [0; 4], "gap untouched");
        let mixed = Type::structure(
            &[1, 1],
            &[0, 8],
            &[
                Type::predefined(Predefined::INT),
                Type::predefined(Predefined::DOUBLE),
            ],
        )
        .unwrap();
        assert_eq!(
            reduce(&[0; 16], &mut [0; 16], 1, &mixed, &Op::Sum)
                .unwrap_err()
                .class(),
            ErrorClass::Op
        );
        assert_eq!(
            reduce(&input, &mut inout, 3, &t, &Op::Sum)
                .unwrap_err()
                .class(),
            ErrorClass::Buffer
        );
    }
}
