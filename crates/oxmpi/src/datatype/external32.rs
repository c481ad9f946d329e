//! The "external32" representation (`MPI_Pack_external`): big-endian, with the fixed sizes
//! of MPI-5.0 §14.5.2 (`long` and `unsigned long` are 4 bytes, `wchar_t` 2, complex types
//! two reals, IEEE floats byte-swapped).
//!
//! Data is packed natively first, then converted run by run along the type signature, so
//! every constructor works unchanged. A value that does not fit its external size (a `long`
//! above 2^31) is an [`ErrorClass::Arg`] error. C `long double` is IEEE quad precision in
//! external32: on x86-64 the 80-bit extended value converts exactly to quad, and a quad
//! unpacks rounded to nearest (ties to even) into 64 significand bits.
//!
//! # Standard sections
//! MPI-5.0 §5.2.3 (canonical pack and unpack), §14.5.2 (external32).

use super::build::Type;
use super::pack;
use super::predefined::Repr;
use crate::error::{Error, ErrorClass, Result};

/// The only data representation supported, as named in `MPI_Pack_external`.
pub const DATAREP: &str = "external32";

/// External size of one element of `r` (0: no external32 form).
fn ext_size(r: Repr) -> usize {
    match r {
        Repr::Long | Repr::ULong => 4,
        Repr::WChar => 2,
        r => r.size(),
    }
}

/// Size of each big-endian unit (complex numbers swap each half).
fn unit(r: Repr) -> usize {
    match r {
        Repr::C16 => 2,
        Repr::C32 => 4,
        Repr::C64 => 8,
        Repr::C128 | Repr::LongDoubleComplex => 16,
        r => r.size(),
    }
}

fn check_rep(call: &str, datarep: &str) -> Result<()> {
    if datarep == DATAREP {
        Ok(())
    } else {
        Err(Error::new(
            ErrorClass::Arg,
            format!("{call}: data representation {datarep:?} is not \"external32\""),
        ))
    }
}

/// Bytes `count` elements of `ty` take in external32 (`MPI_Pack_external_size`).
pub fn pack_external_size(datarep: &str, ty: &Type, count: u64) -> Result<u64> {
    check_rep("pack_external_size", datarep)?;
    let mut n = 0u64;
    for (r, k) in ty.signature().runs(1) {
        n += ext_size(r) as u64 * k;
    }
    n.checked_mul(count)
        .ok_or_else(|| Error::new(ErrorClass::Count, "pack_external_size: size overflows"))
}

/// Packs `count` elements of `ty` whose origin is byte `origin` of `buf` in external32 at
/// `*position` of `out`, advancing `*position` (`MPI_Pack_external`).
pub fn pack_external(
    datarep: &str,
    ty: &Type,
    buf: &[u8],
    origin: usize,
    count: u64,
    out: &mut [u8],
    position: &mut usize,
) -> Result<()> {
    let need = pack_external_size(datarep, ty, count)? as usize;
    if out.len().saturating_sub(*position) < need {
        return Err(Error::new(
            ErrorClass::Truncate,
            format!(
                "pack_external: {need} bytes needed at position {position}, buffer has {}",
                out.len()
            ),
        ));
    }
    let mut native = vec![0u8; pack::pack_size(ty, count)? as usize];
    pack::pack(ty, buf, origin, count, 0, &mut native)?;
    let mut src = &native[..];
    let mut dst = &mut out[*position..*position + need];
    for (r, k) in ty.signature().runs(count) {
        let (ns, es, u) = (r.size(), ext_size(r), unit(r));
        for _ in 0..k {
            let (a, rest) = src.split_at(ns);
            let (b, drest) = std::mem::take(&mut dst).split_at_mut(es);
            to_external(r, a, b, u)?;
            src = rest;
            dst = drest;
        }
    }
    *position += need;
    Ok(())
}

/// Unpacks external32 data at `*position` of `input` into `count` elements of `ty` whose
/// origin is byte `origin` of `buf`, advancing `*position` (`MPI_Unpack_external`).
pub fn unpack_external(
    datarep: &str,
    input: &[u8],
    position: &mut usize,
    ty: &Type,
    buf: &mut [u8],
    origin: usize,
    count: u64,
) -> Result<()> {
    let need = pack_external_size(datarep, ty, count)? as usize;
    if input.len().saturating_sub(*position) < need {
        return Err(Error::new(
            ErrorClass::Truncate,
            format!(
                "unpack_external: {need} bytes needed at position {position}, input has {}",
                input.len()
            ),
        ));
    }
    let mut native = vec![0u8; pack::pack_size(ty, count)? as usize];
    let mut src = &input[*position..*position + need];
    let mut dst = &mut native[..];
    for (r, k) in ty.signature().runs(count) {
        let (ns, es, u) = (r.size(), ext_size(r), unit(r));
        for _ in 0..k {
            let (a, rest) = src.split_at(es);
            let (b, drest) = std::mem::take(&mut dst).split_at_mut(ns);
            from_external(r, a, b, u);
            src = rest;
            dst = drest;
        }
    }
    pack::unpack(ty, buf, origin, count, 0, &native)?;
    *position += need;
    Ok(())
}

fn to_external(r: Repr, native: &[u8], ext: &mut [u8], unit: usize) -> Result<()> {
    match r {
        Repr::Long | Repr::WChar | Repr::ULong => {
            let wide = if r == Repr::WChar {
                u32::from_ne_bytes(native.try_into().unwrap_or_default()) as i128
            } else {
                let v = i64::from_ne_bytes(native.try_into().unwrap_or_default());
                if r == Repr::ULong {
                    v as u64 as i128
                } else {
                    v as i128
                }
            };
            let fits = match r {
                Repr::Long => i32::try_from(wide).is_ok(),
                Repr::ULong => u32::try_from(wide).is_ok(),
                _ => u16::try_from(wide).is_ok(),
            };
            if !fits {
                return Err(Error::new(
                    ErrorClass::Arg,
                    format!("pack_external: {r:?} value {wide} does not fit its {}-byte external32 size", ext.len()),
                ));
            }
            let be = (wide as i64).to_be_bytes();
            ext.copy_from_slice(&be[8 - ext.len()..]);
        }
        Repr::LongDouble | Repr::LongDoubleComplex if X87 => {
            for (a, b) in native.chunks(16).zip(ext.chunks_mut(16)) {
                b.copy_from_slice(&x87_to_quad(a).to_be_bytes());
            }
        }
        _ => {
            for (a, b) in native.chunks(unit).zip(ext.chunks_mut(unit)) {
                for (i, x) in a.iter().rev().enumerate() {
                    b[i] = *x;
                }
            }
        }
    }
    Ok(())
}

fn from_external(r: Repr, ext: &[u8], native: &mut [u8], unit: usize) {
    match r {
        Repr::Long | Repr::ULong | Repr::WChar => {
            let mut be = [0u8; 8];
            be[8 - ext.len()..].copy_from_slice(ext);
            // Sign-extend `long`; the unsigned ones zero-extend.
            if r == Repr::Long && ext[0] & 0x80 != 0 {
                be[..8 - ext.len()].fill(0xFF);
            }
            let v = i64::from_be_bytes(be);
            if r == Repr::WChar {
                native.copy_from_slice(&(v as u32).to_ne_bytes());
            } else {
                native.copy_from_slice(&v.to_ne_bytes());
            }
        }
        Repr::LongDouble | Repr::LongDoubleComplex if X87 => {
            for (a, b) in ext.chunks(16).zip(native.chunks_mut(16)) {
                let q = u128::from_be_bytes(a.try_into().unwrap_or_default());
                b.copy_from_slice(&quad_to_x87(q));
            }
        }
        _ => {
            for (a, b) in ext.chunks(unit).zip(native.chunks_mut(unit)) {
                for (i, x) in a.iter().rev().enumerate() {
                    b[i] = *x;
                }
            }
        }
    }
}

/// Whether C `long double` is x87 80-bit extended (elsewhere it is taken to be IEEE quad,
/// as on aarch64 Linux, and external32 only swaps its bytes).
const X87: bool = cfg!(any(target_arch = "x86_64", target_arch = "x86"));

/// An x87 extended value (16 little-endian bytes: 64-bit significand with its integer bit,
/// then sign and 15-bit exponent) as IEEE quad bits. Exact: the exponent ranges agree and
/// 63 fraction bits fit in 112.
fn x87_to_quad(b: &[u8]) -> u128 {
    let m = u64::from_le_bytes(b[..8].try_into().unwrap_or_default());
    let se = u16::from_le_bytes(b[8..10].try_into().unwrap_or_default());
    let sign = u128::from(se >> 15) << 127;
    let e = u128::from(se & 0x7fff);
    let frac = u128::from(m & !(1 << 63)) << 49;
    match e {
        // Zero and denormals share quad's scale (2^-16382 per integer unit); a
        // pseudo-denormal's integer bit carries into the exponent, as its value says.
        0 => sign | (u128::from(m) << 49),
        0x7fff if frac == 0 => sign | (0x7fff << 112),
        _ => sign | (e << 112) | frac,
    }
}

/// IEEE quad bits as an x87 extended value, rounded to nearest, ties to even.
fn quad_to_x87(q: u128) -> [u8; 16] {
    let sign = (q >> 127) as u16;
    let mut e = ((q >> 112) & 0x7fff) as u16;
    let frac = q & ((1 << 112) - 1);
    let m: u64 = if e == 0x7fff {
        if frac == 0 {
            1 << 63
        } else {
            // A NaN stays a NaN, quiet, with the top of its payload.
            (1 << 63) | (1 << 62) | (frac >> 49) as u64
        }
    } else {
        // The significand with its integer bit (none for zero and denormals).
        let sig = if e == 0 { frac } else { frac | (1 << 112) };
        let (hi, rest) = (sig >> 49, sig & ((1 << 49) - 1));
        let half = 1u128 << 48;
        let up = rest > half || (rest == half && hi & 1 == 1);
        let mut r = hi + u128::from(up);
        if r >> 64 != 0 {
            // Rounding carried out of 64 bits: the next binade (or infinity).
            r >>= 1;
            e += 1;
        } else if e == 0 && r >> 63 != 0 {
            // A denormal rounded up to the smallest normal.
            e = 1;
        }
        if e == 0x7fff {
            r = 1 << 63;
        }
        r as u64
    };
    let mut out = [0u8; 16];
    out[..8].copy_from_slice(&m.to_le_bytes());
    out[8..10].copy_from_slice(&((sign << 15) | e).to_le_bytes());
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datatype::predefined::Predefined;

    fn t(p: Predefined) -> Type {
        Type::predefined(p)
    }

    #[test]
    fn known_byte_strings() {
        let s = Type::structure(
            &[1, 1, 1, 1],
            &[0, 4, 8, 16],
            &[
                t(Predefined::INT),
                t(Predefined::SHORT),
                t(Predefined::DOUBLE),
                t(Predefined::LONG),
            ],
        )
        .unwrap();
        let mut buf = vec![0u8; 24];
        buf[0..4].copy_from_slice(&0x01020304i32.to_ne_bytes());
        buf[4..6].copy_from_slice(&(-2i16).to_ne_bytes());
        buf[8..16].copy_from_slice(&1.5f64.to_ne_bytes());
        buf[16..24].copy_from_slice(&(-3i64).to_ne_bytes());
        assert_eq!(
            pack_external_size("external32", &s, 1).unwrap(),
            4 + 2 + 8 + 4
        );
        let mut out = vec![0u8; 18];
        let mut pos = 0;
        pack_external("external32", &s, &buf, 0, 1, &mut out, &mut pos).unwrap();
        assert_eq!(pos, 18);
        assert_eq!(
            out,
            [1, 2, 3, 4, 0xFF, 0xFE, 0x3F, 0xF8, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFD]
        );
        let mut back = vec![0u8; 24];
        let mut pos = 0;
        unpack_external("external32", &out, &mut pos, &s, &mut back, 0, 1).unwrap();
        assert_eq!(&back[0..6], &buf[0..6]);
        assert_eq!(&back[8..24], &buf[8..24]);
        // Complex: each half big-endian; float 1.0 is 3F800000.
        let c = t(Predefined::C_FLOAT_COMPLEX);
        let mut src = Vec::new();
        src.extend_from_slice(&1.0f32.to_ne_bytes());
        src.extend_from_slice(&(-2.0f32).to_ne_bytes());
        let mut out = [0u8; 8];
        let mut pos = 0;
        pack_external("external32", &c, &src, 0, 1, &mut out, &mut pos).unwrap();
        assert_eq!(out, [0x3F, 0x80, 0, 0, 0xC0, 0, 0, 0]);
    }

    #[test]
    fn errors() {
        let l = t(Predefined::LONG);
        let big = (1i64 << 40).to_ne_bytes();
        let mut out = [0u8; 4];
        let mut pos = 0;
        let e = pack_external("external32", &l, &big, 0, 1, &mut out, &mut pos).unwrap_err();
        assert_eq!(e.class(), ErrorClass::Arg);
        assert_eq!(pos, 0);
        let e = pack_external("native", &l, &big, 0, 1, &mut out, &mut pos).unwrap_err();
        assert_eq!(e.class(), ErrorClass::Arg);
        let mut small = [0u8; 3];
        let e = pack_external(
            "external32",
            &t(Predefined::INT),
            &[0; 4],
            0,
            1,
            &mut small,
            &mut pos,
        )
        .unwrap_err();
        assert_eq!(e.class(), ErrorClass::Truncate);
    }

    /// An x87 value from its significand and sign/exponent word.
    fn x87(m: u64, se: u16) -> [u8; 16] {
        let mut b = [0u8; 16];
        b[..8].copy_from_slice(&m.to_le_bytes());
        b[8..10].copy_from_slice(&se.to_le_bytes());
        b
    }

    #[test]
    fn long_double_is_ieee_quad_in_external32() {
        if !X87 {
            return;
        }
        let one = x87(1 << 63, 0x3fff);
        let minus_2_5 = x87(0xa000_0000_0000_0000, 0xc000);
        let ty = t(Predefined::LONG_DOUBLE);
        assert_eq!(pack_external_size("external32", &ty, 2).unwrap(), 32);
        let native: Vec<u8> = one.iter().chain(minus_2_5.iter()).copied().collect();
        let mut out = [0u8; 32];
        let mut pos = 0;
        pack_external("external32", &ty, &native, 0, 2, &mut out, &mut pos).unwrap();
        let mut want = [0u8; 32];
        want[..2].copy_from_slice(&[0x3f, 0xff]);
        want[16..19].copy_from_slice(&[0xc0, 0x00, 0x40]);
        assert_eq!(out, want);
        let mut back = vec![0xAAu8; 32];
        let mut pos = 0;
        unpack_external("external32", &out, &mut pos, &ty, &mut back, 0, 2).unwrap();
        assert_eq!(back, native[..32]);
        // The smallest denormal, the largest finite value and infinity: exact both ways.
        for v in [
            x87(1, 0),
            x87(u64::MAX, 0x7ffe),
            x87(1 << 63, 0xffff),
            x87(0, 0x8000),
        ] {
            assert_eq!(quad_to_x87(x87_to_quad(&v)), v);
        }
        // NaN stays NaN.
        let nan = quad_to_x87(x87_to_quad(&x87(0xc000_0000_0000_0001, 0x7fff)));
        assert_eq!(nan[8..10], [0xff, 0x7f]);
        assert_ne!(u64::from_le_bytes(nan[..8].try_into().unwrap()) << 1, 0);
    }

    #[test]
    fn quad_rounds_to_nearest_even_into_64_bits() {
        let one = 0x3fffu128 << 112;
        // 1 + 2^-64 is halfway between 1 and 1 + 2^-63: ties to even, 1.
        assert_eq!(quad_to_x87(one | (1 << 48)), x87(1 << 63, 0x3fff));
        // Just above halfway: up.
        assert_eq!(quad_to_x87(one | (1 << 48) | 1), x87((1 << 63) | 1, 0x3fff));
        // 1 + 3 * 2^-64: halfway, odd below: up to 1 + 2^-62.
        assert_eq!(quad_to_x87(one | (3 << 48)), x87((1 << 63) | 2, 0x3fff));
        // All ones round up into the next binade.
        assert_eq!(quad_to_x87(one | ((1 << 112) - 1)), x87(1 << 63, 0x4000));
        // Overflow past the largest finite value is infinity.
        let top = (0x7ffeu128 << 112) | ((1 << 112) - 1);
        assert_eq!(quad_to_x87(top), x87(1 << 63, 0x7fff));
        // A quad denormal rounding up to the smallest normal.
        assert_eq!(quad_to_x87((1 << 112) - 1), x87(1 << 63, 0x0001));
    }
}
