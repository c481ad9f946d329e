//! Datatypes at the C boundary: the predefined ones read from the core's table (their ABI
//! handle values, names, extents and element kinds, for the typed reductions), and any
//! datatype handle, predefined or derived, resolved through the core's handle layer
//! (`oxmpi::handle::datatype`) into what communication needs: plain bytes for contiguous
//! types, the type itself for the others.

use std::sync::OnceLock;

use oxmpi::datatype::predefined::{Info, OpClass, Repr, ALL};
use oxmpi::datatype::Type;
use oxmpi::handle::datatype::{type_committed, TypeHandle};
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
    /// A complex number of two `f32` or two `f64` (`SUM` and `PROD` only).
    Complex,
    /// C `long double` (`MIN MAX SUM PROD`, computed by C: [`crate::longdouble`]).
    LongDouble,
    /// C `long double _Complex` (`SUM` and `PROD`).
    LongDoubleComplex,
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
    /// `MPI_LONG_DOUBLE_INT`.
    LongDoubleInt,
}

/// A predefined datatype as the C layer's reductions see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Predef {
    /// The handle's ABI value.
    pub handle: usize,
    /// Its C name.
    pub name: &'static str,
    /// Bytes per element in memory (the extent: a pair's C struct, padding included).
    pub size: usize,
    /// What the bytes mean.
    pub kind: Kind,
}

/// `MPI_DATATYPE_NULL`.
pub const NULL: usize = 0x200;

fn kind_of(i: &Info) -> Kind {
    use Repr::*;
    if i.pair_index.is_some() {
        return match i.name {
            "MPI_FLOAT_INT" => Kind::Pair(Pair::FloatInt),
            "MPI_DOUBLE_INT" => Kind::Pair(Pair::DoubleInt),
            "MPI_LONG_INT" => Kind::Pair(Pair::LongInt),
            "MPI_2INT" | "MPI_2INTEGER" => Kind::Pair(Pair::TwoInt),
            "MPI_SHORT_INT" => Kind::Pair(Pair::ShortInt),
            "MPI_LONG_DOUBLE_INT" => Kind::Pair(Pair::LongDoubleInt),
            _ => Kind::Opaque,
        };
    }
    match i.name {
        "MPI_LONG_DOUBLE" => return Kind::LongDouble,
        "MPI_C_LONG_DOUBLE_COMPLEX" | "MPI_CXX_LONG_DOUBLE_COMPLEX" => {
            return Kind::LongDoubleComplex
        }
        _ => {}
    }
    match (i.repr, i.class) {
        (Byte | Packed, _) => Kind::Byte,
        (_, OpClass::Logical) => Kind::Bool,
        (F32 | F64, _) => Kind::Float,
        (C32 | C64, _) => Kind::Complex,
        (I8 | I16 | I32 | I64 | Long | I128 | Char | WChar, _) => Kind::Signed,
        (U8 | U16 | U32 | U64 | ULong, _) => Kind::Unsigned,
        _ => Kind::Opaque,
    }
}

struct Table {
    types: Vec<Predef>,
    /// Position in `types` of each handle value `0x200 + i`, plus one (0: none), so that a
    /// lookup is one index instead of a search (it is on every call's path).
    index: [u8; 256],
}

fn table() -> &'static Table {
    static T: OnceLock<Table> = OnceLock::new();
    T.get_or_init(|| {
        let types: Vec<Predef> = ALL
            .iter()
            .map(|i| Predef {
                handle: i.handle as usize,
                name: i.name,
                size: i.extent,
                kind: kind_of(i),
            })
            .collect();
        let mut index = [0u8; 256];
        for (k, p) in types.iter().enumerate() {
            index[p.handle - 0x200] = (k + 1) as u8;
        }
        Table { types, index }
    })
}

/// Every predefined datatype, in handle order.
#[cfg(test)]
pub fn predefined() -> &'static [Predef] {
    &table().types
}

/// The predefined datatype behind handle value `h`; [`ErrorClass::Type`] for anything else
/// (null, a derived datatype, garbage).
#[inline]
pub fn lookup(call: &str, h: usize) -> Result<&'static Predef> {
    predef(h).ok_or_else(|| bad(call, h))
}

/// The predefined datatype with handle value `h`, if it is one.
#[inline]
pub fn predef(h: usize) -> Option<&'static Predef> {
    let t = table();
    // Predefined datatypes live in 0x200..0x300 (MPI-5.0 §21.5).
    match h.checked_sub(0x200).and_then(|i| t.index.get(i)) {
        Some(&k) if k > 0 => t.types.get(k as usize - 1),
        _ => None,
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
        format!("{call}: {what} is not a predefined datatype"),
    )
}

/// Bytes per element of each predefined datatype by handle value `0x200 + i` (0: none),
/// built at compile time: the short paths of `MPI_Send`/`MPI_Recv`/`MPI_Isend`/`MPI_Irecv`
/// read one entry, with no first-use check of the run-time table.
static SIZES: [u32; 256] = {
    let mut t = [0u32; 256];
    let mut k = 0;
    while k < ALL.len() {
        let i = ALL[k].handle as usize - 0x200;
        t[i] = ALL[k].extent as u32;
        k += 1;
    }
    t
};

/// Bytes of `n` elements of predefined datatype `h`, when `h` is one and `n` a count whose
/// bytes fit; `None` for anything else (which the general way resolves or reports).
#[inline]
pub fn predefined_len(n: i64, h: usize) -> Option<usize> {
    let size = *SIZES.get(h.wrapping_sub(0x200))?;
    if size == 0 {
        return None;
    }
    usize::try_from(n).ok()?.checked_mul(size as usize)
}

/// The core id of C datatype handle `h` (values beyond `u32` are no id: the core rejects them).
pub fn id(h: usize) -> TypeHandle {
    TypeHandle::from_int(u32::try_from(h).unwrap_or(u32::MAX) as i32)
}

/// The C handle of a core datatype id.
pub fn handle(t: TypeHandle) -> *mut std::ffi::c_void {
    t.to_int() as u32 as usize as *mut std::ffi::c_void
}

/// Lowest address a datatype may reach from `MPI_BOTTOM`: page 0 is never mapped, so data
/// below it means displacements that are not absolute addresses.
const LOWEST_ADDRESS: i64 = 4096;

/// A NULL buffer (`MPI_BOTTOM`) is only valid when the data lies at absolute addresses;
/// anything else is [`ErrorClass::Buffer`] (instead of a crash).
pub fn check_bottom(call: &str, buf: *const std::ffi::c_void, ty: &Type, count: u64) -> Result<()> {
    if !buf.is_null() {
        return Ok(());
    }
    match oxmpi::datatype::pack::span(ty, count) {
        Some((lo, _)) if lo < LOWEST_ADDRESS => Err(Error::new(
            ErrorClass::Buffer,
            format!("{call}: the buffer is NULL with a non-zero count"),
        )),
        _ => Ok(()),
    }
}

/// How `n` elements of a datatype lie in a user buffer.
pub enum Data {
    /// `len` contiguous bytes starting `offset` bytes from the buffer address (predefined
    /// types, and derived ones whose compiled layout is one run).
    Bytes {
        /// Byte offset of the data from the buffer address (the type's lower bound).
        offset: isize,
        /// Byte length.
        len: usize,
    },
    /// Anything else: moved through the datatype engine (packed or unpacked).
    Typed {
        /// The committed type, held for as long as the operation runs.
        ty: Type,
        /// The element count.
        count: u64,
        /// Bytes of data (`count * size`).
        len: usize,
    },
}

/// How `n` elements of datatype `dt` at `buf` lie in memory, for communication: an unknown,
/// freed or uncommitted datatype is [`ErrorClass::Type`], a negative count
/// [`ErrorClass::Count`], a NULL buffer (`MPI_BOTTOM`) under data that is not at absolute
/// addresses [`ErrorClass::Buffer`].
#[inline]
pub fn data(call: &str, n: i64, dt: usize, buf: *const std::ffi::c_void) -> Result<Data> {
    // The common case, a predefined type and a count that fits, without building errors.
    if let Some(len) = predefined_len(n, dt) {
        return Ok(Data::Bytes { offset: 0, len });
    }
    data_general(call, n, dt, buf)
}

/// [`data`] for derived datatypes, and every error.
#[inline(never)]
fn data_general(call: &str, n: i64, dt: usize, buf: *const std::ffi::c_void) -> Result<Data> {
    let count = crate::boundary::count(call, n)?;
    let overflow = || {
        Error::new(
            ErrorClass::Count,
            format!("{call}: count × datatype size overflows"),
        )
    };
    // The common case, a predefined type, is one table index.
    if let Some(p) = predef(dt) {
        let len = count.checked_mul(p.size).ok_or_else(overflow)?;
        return Ok(Data::Bytes { offset: 0, len });
    }
    if dt == NULL {
        return Err(bad(call, dt));
    }
    let ty = type_committed(call, id(dt))?;
    let len = usize::try_from(ty.size())
        .ok()
        .and_then(|s| s.checked_mul(count))
        .ok_or_else(overflow)?;
    check_bottom(call, buf, &ty, count as u64)?;
    if ty.is_contiguous() || count == 0 {
        return Ok(Data::Bytes {
            offset: ty.lb() as isize,
            len,
        });
    }
    Ok(Data::Typed {
        ty,
        count: count as u64,
        len,
    })
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
            (Kind::Complex, 8) => {
                type $T = oxmpi::op::Complex32;
                $body
            }
            (Kind::Complex, 16) => {
                type $T = oxmpi::op::Complex64;
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
            (Kind::LongDouble, 16) => {
                type $T = $crate::longdouble::LongDouble;
                $body
            }
            (Kind::LongDoubleComplex, 32) => {
                type $T = $crate::longdouble::LongDoubleComplex;
                $body
            }
            (Kind::Pair(Pair::LongDoubleInt), 32) => {
                type $T = $crate::longdouble::LongDoubleInt;
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
    fn the_compile_time_sizes_agree_with_the_table() {
        // Every handle value around the predefined range, and counts at the edges.
        for h in (0..0x400usize).chain([usize::MAX, usize::MAX - 0x1ff, 0x1000, 1 << 40]) {
            for n in [0i64, 1, 3, -1, i64::MIN, i64::MAX] {
                let want = predef(h).and_then(|p| usize::try_from(n).ok()?.checked_mul(p.size));
                assert_eq!(predefined_len(n, h), want, "handle {h:#x}, count {n}");
            }
        }
        assert_eq!(predefined_len(2, 0x201), Some(16)); // MPI_AINT
        assert_eq!(predefined_len(2, NULL), None);
    }

    #[test]
    fn fixed_size_types_carry_their_size_in_the_handle() {
        // MPI-5.0 §21.5: bit 6 set means bits 5:3 hold log2 of the size.
        for p in predefined().iter().filter(|p| p.handle & 0x40 != 0) {
            let size = 1 << ((p.handle >> 3) & 0x7);
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
        let mut table: Vec<(String, usize)> = predefined()
            .iter()
            .map(|p| (p.name.to_string(), p.handle))
            .collect();
        table.sort();
        assert_eq!(declared, table);
    }

    #[test]
    fn every_predefined_handle_is_found_by_its_value() {
        for p in predefined() {
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
