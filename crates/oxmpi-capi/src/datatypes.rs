//! The predefined datatypes: each handle's name, size in bytes and kind of element.
//!
//! A stand-in until the core's datatype engine lands: it is kept to name → (size, kind) so
//! that swapping it for the engine's lookup is mechanical. Sizes are those of the LP64 Linux
//! C ABI the library is built for.

use oxmpi::{Error, ErrorClass, Result};

/// What an element is, for the reductions the predefined operations define on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A signed integer (`char` included, as C compilers on Linux x86-64 have it signed).
    Signed,
    /// An unsigned integer.
    Unsigned,
    /// A binary floating-point number (`float`, `double`).
    Float,
    /// `MPI_BYTE` and `MPI_PACKED`: bytes without a value (bitwise operations only).
    Byte,
    /// A boolean (logical operations only).
    Bool,
    /// A value/index pair of MINLOC and MAXLOC.
    Pair(Pair),
    /// Defined size, no reduction oxmpi implements on it (complex, `long double`, ...).
    Opaque,
}

/// The value/index pair types (named as the core's pair structs).
#[allow(clippy::enum_variant_names)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pair {
    /// `MPI_FLOAT_INT`.
    FloatInt,
    /// `MPI_DOUBLE_INT`.
    DoubleInt,
    /// `MPI_LONG_INT`.
    LongInt,
    /// `MPI_2INT` (and `MPI_2INTEGER`).
    TwoInt,
    /// `MPI_SHORT_INT`.
    ShortInt,
}

/// A predefined datatype.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Predef {
    /// The handle's ABI value.
    pub handle: usize,
    /// Its C name.
    pub name: &'static str,
    /// Bytes per element.
    pub size: usize,
    /// What the bytes mean.
    pub kind: Kind,
}

macro_rules! table {
    ($($h:literal $name:literal $size:literal $kind:expr;)*) => {
        /// Every predefined datatype of the header, by handle value.
        pub const PREDEFINED: &[Predef] = &[
            $(Predef { handle: $h, name: $name, size: $size, kind: $kind },)*
        ];
    };
}

use Kind::{Bool, Byte, Float, Opaque, Signed, Unsigned};

table! {
    0x201 "MPI_AINT" 8 Signed;
    0x202 "MPI_COUNT" 8 Signed;
    0x203 "MPI_OFFSET" 8 Signed;
    0x207 "MPI_PACKED" 1 Byte;
    0x208 "MPI_SHORT" 2 Signed;
    0x209 "MPI_INT" 4 Signed;
    0x20a "MPI_LONG" 8 Signed;
    0x20b "MPI_LONG_LONG" 8 Signed;
    0x20c "MPI_UNSIGNED_SHORT" 2 Unsigned;
    0x20d "MPI_UNSIGNED" 4 Unsigned;
    0x20e "MPI_UNSIGNED_LONG" 8 Unsigned;
    0x20f "MPI_UNSIGNED_LONG_LONG" 8 Unsigned;
    0x210 "MPI_FLOAT" 4 Float;
    0x212 "MPI_C_FLOAT_COMPLEX" 8 Opaque;
    0x213 "MPI_CXX_FLOAT_COMPLEX" 8 Opaque;
    0x214 "MPI_DOUBLE" 8 Float;
    0x216 "MPI_C_DOUBLE_COMPLEX" 16 Opaque;
    0x217 "MPI_CXX_DOUBLE_COMPLEX" 16 Opaque;
    0x218 "MPI_LOGICAL" 4 Bool;
    0x219 "MPI_INTEGER" 4 Signed;
    0x21a "MPI_REAL" 4 Float;
    0x21b "MPI_COMPLEX" 8 Opaque;
    0x21c "MPI_DOUBLE_PRECISION" 8 Float;
    0x21d "MPI_DOUBLE_COMPLEX" 16 Opaque;
    0x21e "MPI_CHARACTER" 1 Opaque;
    0x220 "MPI_LONG_DOUBLE" 16 Opaque;
    0x224 "MPI_C_LONG_DOUBLE_COMPLEX" 32 Opaque;
    0x225 "MPI_CXX_LONG_DOUBLE_COMPLEX" 32 Opaque;
    0x228 "MPI_FLOAT_INT" 8 Kind::Pair(Pair::FloatInt);
    0x229 "MPI_DOUBLE_INT" 16 Kind::Pair(Pair::DoubleInt);
    0x22a "MPI_LONG_INT" 16 Kind::Pair(Pair::LongInt);
    0x22b "MPI_2INT" 8 Kind::Pair(Pair::TwoInt);
    0x22c "MPI_SHORT_INT" 8 Kind::Pair(Pair::ShortInt);
    0x22d "MPI_LONG_DOUBLE_INT" 32 Opaque;
    0x230 "MPI_2REAL" 8 Opaque;
    0x231 "MPI_2DOUBLE_PRECISION" 16 Opaque;
    0x232 "MPI_2INTEGER" 8 Kind::Pair(Pair::TwoInt);
    0x238 "MPI_C_BOOL" 1 Bool;
    0x239 "MPI_CXX_BOOL" 1 Bool;
    0x23c "MPI_WCHAR" 4 Signed;
    0x240 "MPI_INT8_T" 1 Signed;
    0x241 "MPI_UINT8_T" 1 Unsigned;
    0x243 "MPI_CHAR" 1 Signed;
    0x244 "MPI_SIGNED_CHAR" 1 Signed;
    0x245 "MPI_UNSIGNED_CHAR" 1 Unsigned;
    0x247 "MPI_BYTE" 1 Byte;
    0x248 "MPI_INT16_T" 2 Signed;
    0x249 "MPI_UINT16_T" 2 Unsigned;
    0x250 "MPI_INT32_T" 4 Signed;
    0x251 "MPI_UINT32_T" 4 Unsigned;
    0x258 "MPI_INT64_T" 8 Signed;
    0x259 "MPI_UINT64_T" 8 Unsigned;
    0x2c0 "MPI_LOGICAL1" 1 Bool;
    0x2c1 "MPI_INTEGER1" 1 Signed;
    0x2c8 "MPI_LOGICAL2" 2 Bool;
    0x2c9 "MPI_INTEGER2" 2 Signed;
    0x2d0 "MPI_LOGICAL4" 4 Bool;
    0x2d1 "MPI_INTEGER4" 4 Signed;
    0x2d2 "MPI_REAL4" 4 Float;
    0x2d3 "MPI_COMPLEX4" 8 Opaque;
    0x2d8 "MPI_LOGICAL8" 8 Bool;
    0x2d9 "MPI_INTEGER8" 8 Signed;
    0x2da "MPI_REAL8" 8 Float;
    0x2db "MPI_COMPLEX8" 16 Opaque;
    0x2e1 "MPI_INTEGER16" 16 Signed;
    0x2e3 "MPI_COMPLEX16" 32 Opaque;
}

/// `MPI_DATATYPE_NULL`.
pub const NULL: usize = 0x200;

/// Position in [`PREDEFINED`] of each handle value `0x200 + i`, plus one (0: none), so that
/// a lookup is one index instead of a search (it is on every call's path).
const INDEX: [u8; 256] = {
    let mut index = [0u8; 256];
    let mut i = 0;
    while i < PREDEFINED.len() {
        index[PREDEFINED[i].handle - 0x200] = (i + 1) as u8;
        i += 1;
    }
    index
};

/// The predefined datatype behind handle value `h`; [`ErrorClass::Type`] for anything else
/// (null, a user datatype, garbage).
#[inline]
pub fn lookup(call: &str, h: usize) -> Result<&'static Predef> {
    // Predefined datatypes live in 0x200..0x300 (MPI-5.0 §21.5).
    match h.checked_sub(0x200).and_then(|i| INDEX.get(i)) {
        Some(&k) if k > 0 => Ok(&PREDEFINED[k as usize - 1]),
        _ => Err(bad(call, h)),
    }
}

#[cold]
fn bad(call: &str, h: usize) -> Error {
    let what = if h == NULL {
        "MPI_DATATYPE_NULL".to_string()
    } else {
        format!("{h:#x}")
    };
    Error::new(
        ErrorClass::Type,
        format!("{call}: {what} is not a datatype this library knows (predefined datatypes only)"),
    )
}

/// Calls `$body` with `$T` bound to the Rust element type of `$dt` (a [`Predef`]) for the
/// typed reductions of the core; `$none` when oxmpi has no arithmetic for it.
macro_rules! with_elem_type {
    ($dt:expr, $T:ident => $body:expr, $none:expr) => {{
        use $crate::datatypes::{Kind, Pair};
        match ($dt.kind, $dt.size) {
            (Kind::Signed, 1) => {
                type $T = i8;
                $body
            }
            (Kind::Signed, 2) => {
                type $T = i16;
                $body
            }
            (Kind::Signed, 4) => {
                type $T = i32;
                $body
            }
            (Kind::Signed, 8) => {
                type $T = i64;
                $body
            }
            (Kind::Signed, 16) => {
                type $T = i128;
                $body
            }
            (Kind::Unsigned | Kind::Byte | Kind::Bool, 1) => {
                type $T = u8;
                $body
            }
            (Kind::Unsigned | Kind::Bool, 2) => {
                type $T = u16;
                $body
            }
            (Kind::Unsigned | Kind::Bool, 4) => {
                type $T = u32;
                $body
            }
            (Kind::Unsigned | Kind::Bool, 8) => {
                type $T = u64;
                $body
            }
            (Kind::Float, 4) => {
                type $T = f32;
                $body
            }
            (Kind::Float, 8) => {
                type $T = f64;
                $body
            }
            (Kind::Pair(Pair::FloatInt), _) => {
                type $T = oxmpi::op::FloatInt;
                $body
            }
            (Kind::Pair(Pair::DoubleInt), _) => {
                type $T = oxmpi::op::DoubleInt;
                $body
            }
            (Kind::Pair(Pair::LongInt), _) => {
                type $T = oxmpi::op::LongInt;
                $body
            }
            (Kind::Pair(Pair::TwoInt), _) => {
                type $T = oxmpi::op::TwoInt;
                $body
            }
            (Kind::Pair(Pair::ShortInt), _) => {
                type $T = oxmpi::op::ShortInt;
                $body
            }
            _ => $none,
        }
    }};
}
pub(crate) use with_elem_type;

#[cfg(test)]
mod tests {
    use super::*;
    use oxmpi::op::{DoubleInt, FloatInt, LongInt, ShortInt, TwoInt};

    #[test]
    fn pair_sizes_match_the_core_layouts() {
        let size = |h| lookup("t", h).unwrap().size;
        assert_eq!(size(0x228), std::mem::size_of::<FloatInt>());
        assert_eq!(size(0x229), std::mem::size_of::<DoubleInt>());
        assert_eq!(size(0x22a), std::mem::size_of::<LongInt>());
        assert_eq!(size(0x22b), std::mem::size_of::<TwoInt>());
        assert_eq!(size(0x22c), std::mem::size_of::<ShortInt>());
    }

    #[test]
    fn fixed_size_types_carry_their_size_in_the_handle() {
        // MPI-5.0 §21.5: bit 6 set means bits 5:3 hold log2 of the size.
        for p in PREDEFINED.iter().filter(|p| p.handle & 0x40 != 0) {
            let log2 = (p.handle >> 3) & 0x7;
            let size = if p.name.contains("COMPLEX") && p.handle & 0x80 != 0 {
                2 << log2
            } else {
                1 << log2
            };
            assert_eq!(p.size, size, "{}", p.name);
        }
    }

    #[test]
    fn the_header_declares_exactly_the_table() {
        let h = include_str!("../include/mpi.h");
        let mut declared: Vec<(String, usize)> = h
            .lines()
            .filter_map(|l| {
                let rest = l.strip_prefix("#define ")?;
                let (name, value) = rest.split_once(" ((MPI_Datatype)0x")?;
                let hex = value.strip_suffix(')')?;
                Some((name.to_string(), usize::from_str_radix(hex, 16).ok()?))
            })
            .filter(|(_, v)| *v != NULL)
            .collect();
        declared.sort();
        let mut table: Vec<(String, usize)> = PREDEFINED
            .iter()
            .map(|p| (p.name.to_string(), p.handle))
            .collect();
        table.sort();
        assert_eq!(declared, table);
    }

    #[test]
    fn every_predefined_handle_is_found_by_its_value() {
        for p in PREDEFINED {
            assert_eq!(lookup("t", p.handle).unwrap(), p);
        }
    }

    #[test]
    fn unknown_handles_are_type_errors() {
        for h in [0, NULL, 0x211, 0x300, usize::MAX] {
            assert_eq!(lookup("t", h).unwrap_err().class(), ErrorClass::Type);
        }
        assert_eq!(lookup("t", 0x209).unwrap().name, "MPI_INT");
    }
}
