//! The predefined datatypes of the MPI-5.0 standard ABI: their handle values, names, native
//! size and alignment on this platform (LP64 Linux: `long` and `wchar_t` are 8 and 4 bytes,
//! Fortran `INTEGER`/`REAL`/`LOGICAL` are 4), the reduction class of MPI-5.0 §6.9.2 and the
//! external32 size.
//!
//! The MINLOC/MAXLOC pair types (`MPI_DOUBLE_INT`…) are predefined but not basic: their type
//! map is a value and an `int` at their C struct offsets, so padding is never sent.
//!
//! # Standard sections
//! MPI-5.0 §3.2.2 (basic datatypes), §5.1 (derived datatypes), §6.9.2 (ops per type class),
//! §14.5.2 (external32 sizes), §21.5 (ABI handle encoding).

use std::fmt;

/// How the bytes of a basic element are interpreted (the key of type-signature matching and
/// of the reduction kernels). Types with the same `Repr` match each other (`MPI_INT` and
/// `MPI_INT32_T`; `MPI_LONG_LONG` and `MPI_INT64_T`; not `MPI_LONG`, whose external32 size differs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Repr {
    /// Signed integer of 1, 2, 4, 8 or 16 bytes.
    I8,
    /// 2-byte signed integer.
    I16,
    /// 4-byte signed integer.
    I32,
    /// 8-byte signed integer.
    I64,
    /// C `long` (8 bytes here, 4 in external32, so kept apart from `I64`).
    Long,
    /// C `unsigned long`.
    ULong,
    /// 16-byte signed integer (Fortran `INTEGER16`).
    I128,
    /// 1-byte unsigned integer.
    U8,
    /// 2-byte unsigned integer.
    U16,
    /// 4-byte unsigned integer.
    U32,
    /// 8-byte unsigned integer.
    U64,
    /// IEEE half precision (Fortran `REAL2`; reduced through `f32` arithmetic).
    F16,
    /// IEEE single precision.
    F32,
    /// IEEE double precision.
    F64,
    /// IEEE quad precision (Fortran `REAL16`; moved as bytes, no arithmetic in the core).
    F128,
    /// C `long double`: x87 80-bit extended kept in 16 bytes on x86-64 (IEEE quad in
    /// external32). Its arithmetic is the C layer's, compiled C.
    LongDouble,
    /// Complex of two `F16` (moved as bytes).
    C16,
    /// Complex of two `F32`.
    C32,
    /// Complex of two `F64`.
    C64,
    /// Complex of two `F128` (moved as bytes).
    C128,
    /// Complex of two `LongDouble`.
    LongDoubleComplex,
    /// C `bool` (1 byte, 0 or 1).
    Bool,
    /// Fortran `LOGICAL` of 1, 2, 4, 8 or 16 bytes (non-zero is true).
    Logical(u8),
    /// C `char` (a character, not an integer in §6.9.2).
    Char,
    /// `wchar_t`.
    WChar,
    /// Fortran `CHARACTER`.
    Character,
    /// `MPI_BYTE`: uninterpreted, matches any type.
    Byte,
    /// `MPI_PACKED`: uninterpreted, matches any type.
    Packed,
}

impl Repr {
    /// Native size in bytes.
    pub fn size(self) -> usize {
        use Repr::*;
        match self {
            I8 | U8 | Bool | Char | Character | Byte | Packed => 1,
            I16 | U16 | F16 => 2,
            I32 | U32 | F32 | C16 | WChar => 4,
            I64 | U64 | Long | ULong | F64 | C32 => 8,
            I128 | F128 | C64 | LongDouble => 16,
            C128 | LongDoubleComplex => 32,
            Logical(n) => n as usize,
        }
    }

    /// Whether it matches every type in a signature (`MPI_BYTE`, `MPI_PACKED`).
    pub fn is_untyped(self) -> bool {
        matches!(self, Repr::Byte | Repr::Packed)
    }
}

/// The type classes of MPI-5.0 §6.9.2, which decide the reduction operations defined on a type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OpClass {
    /// C integer: `MIN MAX SUM PROD LAND LOR LXOR BAND BOR BXOR`.
    CInteger,
    /// Fortran integer: `MIN MAX SUM PROD BAND BOR BXOR`.
    FortranInteger,
    /// Floating point: `MIN MAX SUM PROD`.
    Float,
    /// Complex: `SUM PROD`.
    Complex,
    /// Logical (C `bool`, Fortran `LOGICAL`): `LAND LOR LXOR`.
    Logical,
    /// Byte: `BAND BOR BXOR`.
    Byte,
    /// Multi-language types (`MPI_AINT`, `MPI_OFFSET`, `MPI_COUNT`): `MIN MAX SUM PROD BAND BOR
    /// BXOR`.
    MultiLanguage,
    /// A MINLOC/MAXLOC pair type: `MINLOC MAXLOC`.
    Pair,
    /// No predefined reduction (characters, `MPI_PACKED`, half precision).
    Unreduced,
}

/// A predefined datatype: its MPI-5.0 ABI handle value.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Predefined(u16);

/// Everything known about one predefined datatype.
#[derive(Debug, Clone, Copy)]
pub struct Info {
    /// The ABI handle value.
    pub handle: u16,
    /// The MPI name (`"MPI_INT"`), what `MPI_Type_get_name` returns.
    pub name: &'static str,
    /// Native size and extent in bytes (for pairs: the C struct's size).
    pub extent: usize,
    /// Native alignment.
    pub align: usize,
    /// Element interpretation (for pairs: that of the value).
    pub repr: Repr,
    /// Reduction class.
    pub class: OpClass,
    /// Size in the external32 representation (0 when unsupported there).
    pub ext32: usize,
    /// For pair types: the offset of the index (`int`) after the value.
    pub pair_index: Option<usize>,
}

macro_rules! predefined {
    ($( $konst:ident = $h:literal, $name:literal, $repr:expr, $extent:literal, $align:literal, $class:ident, $ext32:literal $(, pair $idx:literal)?; )*) => {
        impl Predefined {
            $(
                #[doc = concat!("`", $name, "`")]
                pub const $konst: Predefined = Predefined($h);
            )*
        }

        /// Every predefined datatype, in handle order of the ABI table.
        pub const ALL: &[Info] = &[ $(
            Info {
                handle: $h,
                name: $name,
                extent: $extent,
                align: $align,
                repr: $repr,
                class: OpClass::$class,
                ext32: $ext32,
                pair_index: predefined!(@pair $($idx)?),
            },
        )* ];
    };
    (@pair) => { None };
    (@pair $idx:literal) => { Some($idx) };
}

use Repr::*;

predefined! {
    AINT = 0x201, "MPI_AINT", I64, 8, 8, MultiLanguage, 8;
    COUNT = 0x202, "MPI_COUNT", I64, 8, 8, MultiLanguage, 8;
    OFFSET = 0x203, "MPI_OFFSET", I64, 8, 8, MultiLanguage, 8;
    PACKED = 0x207, "MPI_PACKED", Packed, 1, 1, Unreduced, 1;
    SHORT = 0x208, "MPI_SHORT", I16, 2, 2, CInteger, 2;
    INT = 0x209, "MPI_INT", I32, 4, 4, CInteger, 4;
    LONG = 0x20a, "MPI_LONG", Long, 8, 8, CInteger, 4;
    LONG_LONG = 0x20b, "MPI_LONG_LONG", I64, 8, 8, CInteger, 8;
    UNSIGNED_SHORT = 0x20c, "MPI_UNSIGNED_SHORT", U16, 2, 2, CInteger, 2;
    UNSIGNED = 0x20d, "MPI_UNSIGNED", U32, 4, 4, CInteger, 4;
    UNSIGNED_LONG = 0x20e, "MPI_UNSIGNED_LONG", ULong, 8, 8, CInteger, 4;
    UNSIGNED_LONG_LONG = 0x20f, "MPI_UNSIGNED_LONG_LONG", U64, 8, 8, CInteger, 8;
    FLOAT = 0x210, "MPI_FLOAT", F32, 4, 4, Float, 4;
    C_FLOAT_COMPLEX = 0x212, "MPI_C_FLOAT_COMPLEX", C32, 8, 4, Complex, 8;
    CXX_FLOAT_COMPLEX = 0x213, "MPI_CXX_FLOAT_COMPLEX", C32, 8, 4, Complex, 8;
    DOUBLE = 0x214, "MPI_DOUBLE", F64, 8, 8, Float, 8;
    C_DOUBLE_COMPLEX = 0x216, "MPI_C_DOUBLE_COMPLEX", C64, 16, 8, Complex, 16;
    CXX_DOUBLE_COMPLEX = 0x217, "MPI_CXX_DOUBLE_COMPLEX", C64, 16, 8, Complex, 16;
    LOGICAL = 0x218, "MPI_LOGICAL", Logical(4), 4, 4, Logical, 4;
    INTEGER = 0x219, "MPI_INTEGER", I32, 4, 4, FortranInteger, 4;
    REAL = 0x21a, "MPI_REAL", F32, 4, 4, Float, 4;
    COMPLEX = 0x21b, "MPI_COMPLEX", C32, 8, 4, Complex, 8;
    DOUBLE_PRECISION = 0x21c, "MPI_DOUBLE_PRECISION", F64, 8, 8, Float, 8;
    DOUBLE_COMPLEX = 0x21d, "MPI_DOUBLE_COMPLEX", C64, 16, 8, Complex, 16;
    CHARACTER = 0x21e, "MPI_CHARACTER", Character, 1, 1, Unreduced, 1;
    LONG_DOUBLE = 0x220, "MPI_LONG_DOUBLE", LongDouble, 16, 16, Float, 0;
    C_LONG_DOUBLE_COMPLEX = 0x224, "MPI_C_LONG_DOUBLE_COMPLEX", LongDoubleComplex, 32, 16, Complex, 0;
    CXX_LONG_DOUBLE_COMPLEX = 0x225, "MPI_CXX_LONG_DOUBLE_COMPLEX", LongDoubleComplex, 32, 16, Complex, 0;
    FLOAT_INT = 0x228, "MPI_FLOAT_INT", F32, 8, 4, Pair, 8, pair 4;
    DOUBLE_INT = 0x229, "MPI_DOUBLE_INT", F64, 16, 8, Pair, 12, pair 8;
    LONG_INT = 0x22a, "MPI_LONG_INT", Long, 16, 8, Pair, 8, pair 8;
    TWO_INT = 0x22b, "MPI_2INT", I32, 8, 4, Pair, 8, pair 4;
    SHORT_INT = 0x22c, "MPI_SHORT_INT", I16, 8, 4, Pair, 6, pair 4;
    LONG_DOUBLE_INT = 0x22d, "MPI_LONG_DOUBLE_INT", LongDouble, 32, 16, Pair, 0, pair 16;
    TWO_REAL = 0x230, "MPI_2REAL", F32, 8, 4, Pair, 8, pair 4;
    TWO_DOUBLE_PRECISION = 0x231, "MPI_2DOUBLE_PRECISION", F64, 16, 8, Pair, 16, pair 8;
    TWO_INTEGER = 0x232, "MPI_2INTEGER", I32, 8, 4, Pair, 8, pair 4;
    C_BOOL = 0x238, "MPI_C_BOOL", Bool, 1, 1, Logical, 1;
    CXX_BOOL = 0x239, "MPI_CXX_BOOL", Bool, 1, 1, Logical, 1;
    WCHAR = 0x23c, "MPI_WCHAR", WChar, 4, 4, Unreduced, 2;
    INT8_T = 0x240, "MPI_INT8_T", I8, 1, 1, CInteger, 1;
    UINT8_T = 0x241, "MPI_UINT8_T", U8, 1, 1, CInteger, 1;
    CHAR = 0x243, "MPI_CHAR", Char, 1, 1, Unreduced, 1;
    SIGNED_CHAR = 0x244, "MPI_SIGNED_CHAR", I8, 1, 1, CInteger, 1;
    UNSIGNED_CHAR = 0x245, "MPI_UNSIGNED_CHAR", U8, 1, 1, CInteger, 1;
    BYTE = 0x247, "MPI_BYTE", Byte, 1, 1, Byte, 1;
    INT16_T = 0x248, "MPI_INT16_T", I16, 2, 2, CInteger, 2;
    UINT16_T = 0x249, "MPI_UINT16_T", U16, 2, 2, CInteger, 2;
    INT32_T = 0x250, "MPI_INT32_T", I32, 4, 4, CInteger, 4;
    UINT32_T = 0x251, "MPI_UINT32_T", U32, 4, 4, CInteger, 4;
    INT64_T = 0x258, "MPI_INT64_T", I64, 8, 8, CInteger, 8;
    UINT64_T = 0x259, "MPI_UINT64_T", U64, 8, 8, CInteger, 8;
    LOGICAL1 = 0x2c0, "MPI_LOGICAL1", Logical(1), 1, 1, Logical, 1;
    INTEGER1 = 0x2c1, "MPI_INTEGER1", I8, 1, 1, FortranInteger, 1;
    LOGICAL2 = 0x2c8, "MPI_LOGICAL2", Logical(2), 2, 2, Logical, 2;
    INTEGER2 = 0x2c9, "MPI_INTEGER2", I16, 2, 2, FortranInteger, 2;
    REAL2 = 0x2ca, "MPI_REAL2", F16, 2, 2, Float, 2;
    LOGICAL4 = 0x2d0, "MPI_LOGICAL4", Logical(4), 4, 4, Logical, 4;
    INTEGER4 = 0x2d1, "MPI_INTEGER4", I32, 4, 4, FortranInteger, 4;
    REAL4 = 0x2d2, "MPI_REAL4", F32, 4, 4, Float, 4;
    COMPLEX4 = 0x2d3, "MPI_COMPLEX4", C16, 4, 2, Unreduced, 4;
    LOGICAL8 = 0x2d8, "MPI_LOGICAL8", Logical(8), 8, 8, Logical, 8;
    INTEGER8 = 0x2d9, "MPI_INTEGER8", I64, 8, 8, FortranInteger, 8;
    REAL8 = 0x2da, "MPI_REAL8", F64, 8, 8, Float, 8;
    COMPLEX8 = 0x2db, "MPI_COMPLEX8", C32, 8, 4, Complex, 8;
    LOGICAL16 = 0x2e0, "MPI_LOGICAL16", Logical(16), 16, 16, Logical, 16;
    INTEGER16 = 0x2e1, "MPI_INTEGER16", I128, 16, 16, FortranInteger, 16;
    REAL16 = 0x2e2, "MPI_REAL16", F128, 16, 16, Float, 0;
    COMPLEX16 = 0x2e3, "MPI_COMPLEX16", C64, 16, 8, Complex, 16;
    COMPLEX32 = 0x2eb, "MPI_COMPLEX32", C128, 32, 16, Complex, 0;
}

/// The lowest datatype handle value of the ABI (`MPI_DATATYPE_NULL`); the datatypes' handles
/// lie in the 256 values from here.
const HANDLE_BASE: u16 = 0x200;

/// Position + 1 in [`ALL`] of the datatype with handle `HANDLE_BASE + slot`, 0 for none.
static INDEX: [u8; 256] = {
    let mut index = [0u8; 256];
    let mut i = 0;
    while i < ALL.len() {
        let h = ALL[i].handle;
        assert!(h > HANDLE_BASE && h < HANDLE_BASE + 256 && i < 255);
        index[(h - HANDLE_BASE) as usize] = (i + 1) as u8;
        i += 1;
    }
    index
};

impl Predefined {
    /// `MPI_DATATYPE_NULL` (not a datatype: [`Predefined::from_handle`] rejects it).
    pub const NULL_HANDLE: u16 = HANDLE_BASE;
    /// `MPI_C_COMPLEX`, an alias of `MPI_C_FLOAT_COMPLEX`.
    pub const C_COMPLEX: Predefined = Predefined::C_FLOAT_COMPLEX;
    /// `MPI_LONG_LONG_INT`, an alias of `MPI_LONG_LONG`.
    pub const LONG_LONG_INT: Predefined = Predefined::LONG_LONG;

    /// The predefined datatype with ABI handle value `h`, if there is one.
    pub fn from_handle(h: u32) -> Option<Predefined> {
        let slot = h.checked_sub(u32::from(HANDLE_BASE))? as usize;
        match INDEX.get(slot) {
            Some(&i) if i != 0 => Some(Predefined(h as u16)),
            _ => None,
        }
    }

    /// The ABI handle value.
    pub const fn handle(self) -> u16 {
        self.0
    }

    /// Everything about this type. One indexed load: one-sided accumulates and reductions
    /// look it up per call (a binary search was 18% of a 4-byte accumulate).
    #[inline]
    pub fn info(self) -> &'static Info {
        &ALL[self.position()]
    }

    /// Where this type is in [`ALL`]: one indexed load.
    #[inline]
    pub(crate) fn position(self) -> usize {
        usize::from(INDEX[usize::from(self.0 - HANDLE_BASE)]) - 1
    }

    /// The MPI name (`"MPI_INT"`).
    pub fn name(self) -> &'static str {
        self.info().name
    }

    /// Whether it is a MINLOC/MAXLOC pair type.
    pub fn is_pair(self) -> bool {
        self.info().pair_index.is_some()
    }

    /// The data size in bytes (`MPI_Type_size`): for pairs, value plus `int` without padding.
    pub fn size(self) -> usize {
        let i = self.info();
        match i.pair_index {
            Some(_) => i.repr.size() + self.pair_index_repr().size(),
            None => i.extent,
        }
    }

    /// The interpretation of a pair's index (`int`, or Fortran `INTEGER`, `REAL`, `DOUBLE
    /// PRECISION` for the `MPI_2*` types, whose "index" has the value's type).
    pub fn pair_index_repr(self) -> Repr {
        match self {
            Predefined::TWO_REAL => Repr::F32,
            Predefined::TWO_DOUBLE_PRECISION => Repr::F64,
            _ => Repr::I32,
        }
    }
}

impl fmt::Debug for Predefined {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The optional Fortran types of the standard ABI, named as `MPI_Abi_get_fortran_info`'s
/// `mpi_<name>_supported` keys name them.
const FORTRAN_OPTIONAL: [(&str, Predefined); 19] = [
    ("logical1", Predefined::LOGICAL1),
    ("logical2", Predefined::LOGICAL2),
    ("logical4", Predefined::LOGICAL4),
    ("logical8", Predefined::LOGICAL8),
    ("logical16", Predefined::LOGICAL16),
    ("integer1", Predefined::INTEGER1),
    ("integer2", Predefined::INTEGER2),
    ("integer4", Predefined::INTEGER4),
    ("integer8", Predefined::INTEGER8),
    ("integer16", Predefined::INTEGER16),
    ("real2", Predefined::REAL2),
    ("real4", Predefined::REAL4),
    ("real8", Predefined::REAL8),
    ("real16", Predefined::REAL16),
    ("complex4", Predefined::COMPLEX4),
    ("complex8", Predefined::COMPLEX8),
    ("complex16", Predefined::COMPLEX16),
    ("complex32", Predefined::COMPLEX32),
    ("double_complex", Predefined::DOUBLE_COMPLEX),
];

/// What `MPI_Abi_get_fortran_info` reports (MPI-5.0 §20.3): the bytes of the default Fortran
/// `LOGICAL`, `INTEGER`, `REAL` and `DOUBLE PRECISION` that this library's datatypes and its
/// Fortran bindings use, and for each optional Fortran type whether it is supported. A type
/// is supported when `MPI_Type_size` gives it a nonzero size, which here is every one (the
/// library moves and reduces all of them).
pub fn fortran_abi_info() -> Vec<(String, String)> {
    let sizes = [
        ("logical", Predefined::LOGICAL),
        ("integer", Predefined::INTEGER),
        ("real", Predefined::REAL),
        ("double_precision", Predefined::DOUBLE_PRECISION),
    ];
    let size = sizes
        .iter()
        .map(|(n, t)| (format!("mpi_{n}_size"), t.info().extent.to_string()));
    let supported = FORTRAN_OPTIONAL.iter().map(|(n, t)| {
        let yes = t.info().extent > 0;
        (format!("mpi_{n}_supported"), yes.to_string())
    });
    size.chain(supported).collect()
}

/// The Fortran `.TRUE.` and `.FALSE.` of a `LOGICAL` of `size` bytes, in its first `size`
/// bytes (`MPI_Abi_get_fortran_booleans`): 1 and 0, as gfortran stores them and the logical
/// reductions write them; `None` for a size that no `LOGICAL` kind has.
pub fn fortran_booleans(size: usize) -> Option<([u8; 16], [u8; 16])> {
    if !matches!(size, 1 | 2 | 4 | 8 | 16) {
        return None;
    }
    let mut t = [0u8; 16];
    t[if cfg!(target_endian = "little") {
        0
    } else {
        size - 1
    }] = 1;
    Some((t, [0u8; 16]))
}

/// The Rust types that stand for a predefined datatype (for the typed API and the derive).
pub trait Basic {
    /// The predefined datatype of this Rust type.
    const PREDEFINED: Predefined;
}

macro_rules! basic {
    ($($t:ty => $p:ident),*) => { $( impl Basic for $t { const PREDEFINED: Predefined = Predefined::$p; } )* };
}
basic!(i8 => INT8_T, u8 => UINT8_T, i16 => INT16_T, u16 => UINT16_T, i32 => INT32_T,
    u32 => UINT32_T, i64 => INT64_T, u64 => UINT64_T, f32 => FLOAT, f64 => DOUBLE,
    isize => AINT, usize => UINT64_T, bool => C_BOOL);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_type_is_found_at_its_place_in_all() {
        for (i, info) in ALL.iter().enumerate() {
            let p = Predefined::from_handle(u32::from(info.handle)).expect("a predefined handle");
            assert_eq!(p.position(), i, "{}", info.name);
            assert_eq!(p.info().name, info.name);
        }
    }

    #[test]
    fn fortran_abi_info_gives_default_sizes_and_every_optional_type() {
        let info = fortran_abi_info();
        let get = |k: &str| info.iter().find(|(x, _)| x == k).map(|(_, v)| v.as_str());
        assert_eq!(get("mpi_integer_size"), Some("4"));
        assert_eq!(get("mpi_double_precision_size"), Some("8"));
        assert_eq!(get("mpi_real16_supported"), Some("true"));
        assert_eq!(get("mpi_double_complex_supported"), Some("true"));
        assert_eq!(info.len(), 4 + 19);
    }

    #[test]
    fn fortran_booleans_are_one_and_zero_of_each_logical_kind() {
        for size in [1usize, 2, 4, 8, 16] {
            let (t, f) = fortran_booleans(size).unwrap();
            let one = match size {
                1 => 1u8.to_ne_bytes().to_vec(),
                2 => 1u16.to_ne_bytes().to_vec(),
                4 => 1u32.to_ne_bytes().to_vec(),
                8 => 1u64.to_ne_bytes().to_vec(),
                _ => 1u128.to_ne_bytes().to_vec(),
            };
            assert_eq!(t[..size], one[..], "size {size}");
            assert_eq!(f, [0; 16]);
        }
        assert_eq!(fortran_booleans(3), None);
        assert_eq!(fortran_booleans(0), None);
    }

    #[test]
    fn table_is_sorted_by_handle_and_sizes_follow_the_abi_encoding() {
        assert!(ALL.windows(2).all(|w| w[0].handle < w[1].handle));
        for i in ALL {
            assert!(i.extent % i.align == 0, "{}", i.name);
            // Fixed-size types (bit 6 set, not a pair): bits 5:3 hold log2 of the size.
            if i.handle & 0x40 != 0
                && i.pair_index.is_none()
                && i.handle & 0x80 == 0
                && i.handle & 7 == 0
            {
                assert_eq!(i.extent, 1 << ((i.handle >> 3) & 7), "{}", i.name);
            }
        }
        assert_eq!(Predefined::INT64_T.handle(), 0x258);
        assert_eq!(Predefined::INTEGER8.handle(), 0x2d9);
        assert_eq!(Predefined::from_handle(0x209), Some(Predefined::INT));
        assert_eq!(Predefined::from_handle(0x200), None);
        assert_eq!(Predefined::from_handle(0x1_0209), None);
        assert_eq!(Predefined::from_handle(0x1ff), None);
        assert_eq!(Predefined::from_handle(0x300), None);
        // Every handle of the 256 finds its own entry, and nothing else is a datatype.
        for h in 0x100..0x400u32 {
            match ALL.iter().find(|i| u32::from(i.handle) == h) {
                Some(i) => {
                    let p = Predefined::from_handle(h).expect("in the table");
                    assert!(std::ptr::eq(p.info(), i), "{}", i.name);
                }
                None => assert_eq!(Predefined::from_handle(h), None, "{h:#x}"),
            }
        }
        assert_eq!(Predefined::INT.name(), "MPI_INT");
        assert_eq!(Predefined::DOUBLE_INT.size(), 12);
        assert_eq!(Predefined::DOUBLE_INT.info().extent, 16);
        assert_eq!(Predefined::SHORT_INT.size(), 6);
        assert_eq!(Predefined::C_COMPLEX, Predefined::C_FLOAT_COMPLEX);
    }

    #[test]
    fn pair_layouts_are_the_c_structs() {
        use crate::op::{DoubleInt, FloatInt, LongInt, ShortInt, TwoInt};
        assert_eq!(
            std::mem::size_of::<DoubleInt>(),
            Predefined::DOUBLE_INT.info().extent
        );
        assert_eq!(std::mem::offset_of!(DoubleInt, index), 8);
        assert_eq!(std::mem::offset_of!(ShortInt, index), 4);
        assert_eq!(std::mem::offset_of!(LongInt, index), 8);
        assert_eq!(std::mem::size_of::<FloatInt>(), 8);
        assert_eq!(std::mem::size_of::<TwoInt>(), 8);
    }
}
