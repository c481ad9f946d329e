//! How a type was built, in the standard's terms: `MPI_Type_get_envelope` and
//! `MPI_Type_get_contents` (combiner, integers, addresses, large counts, datatypes), the
//! inverse [`from_contents`], `MPI_Type_match_size` and `MPI_Type_create_f90_*` (cached:
//! the same arguments give the same type).
//!
//! Counts go to the integer array unless the type was made by a large-count constructor
//! ([`Type::with_large_counts`]) or a count does not fit an `int`; then they are large counts,
//! laid out as MPI-5.0 Table 5.1 says for the `_c` constructors.
//!
//! # Standard sections
//! MPI-5.0 §5.1.13 (decoding a datatype), §5.1.10 (match_size), §20.1.9 (f90 types).

use std::sync::Mutex;

use super::build::{Combiner, Distribution, Order, Type};
use super::predefined::Predefined;
use crate::error::{Error, ErrorClass, Result};

/// `MPI_COMBINER_*` (MPI-5.0 ABI values).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(i32)]
#[allow(missing_docs)]
pub enum CombinerKind {
    Named = 101,
    Dup = 102,
    Contiguous = 103,
    Vector = 104,
    Hvector = 105,
    Indexed = 106,
    Hindexed = 107,
    IndexedBlock = 108,
    HindexedBlock = 109,
    Struct = 110,
    Subarray = 111,
    Darray = 112,
    F90Real = 113,
    F90Complex = 114,
    F90Integer = 115,
    Resized = 116,
}

/// `MPI_ORDER_C` (ABI value).
pub const ORDER_C: i32 = 12;
/// `MPI_ORDER_FORTRAN`.
pub const ORDER_FORTRAN: i32 = 15;
/// `MPI_DISTRIBUTE_NONE`.
pub const DISTRIBUTE_NONE: i32 = 16;
/// `MPI_DISTRIBUTE_BLOCK`.
pub const DISTRIBUTE_BLOCK: i32 = 17;
/// `MPI_DISTRIBUTE_CYCLIC`.
pub const DISTRIBUTE_CYCLIC: i32 = 18;
/// `MPI_DISTRIBUTE_DFLT_DARG`.
pub const DISTRIBUTE_DFLT_DARG: i32 = 19;
/// `MPI_UNDEFINED`: "not given" for the f90 constructors' `p` and `r`.
pub const UNDEFINED: i32 = crate::comm::UNDEFINED;

/// The arguments a type was made from (`MPI_Type_get_contents`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Contents {
    /// `array_of_integers`.
    pub integers: Vec<i32>,
    /// `array_of_addresses`.
    pub addresses: Vec<i64>,
    /// `array_of_large_counts`.
    pub large_counts: Vec<i64>,
    /// `array_of_datatypes`.
    pub datatypes: Vec<Type>,
}

/// Array lengths and combiner (`MPI_Type_get_envelope`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Envelope {
    /// `num_integers`.
    pub integers: usize,
    /// `num_addresses`.
    pub addresses: usize,
    /// `num_large_counts`.
    pub large_counts: usize,
    /// `num_datatypes`.
    pub datatypes: usize,
    /// How the type was made.
    pub combiner: CombinerKind,
}

fn kind(c: &Combiner) -> CombinerKind {
    match c {
        Combiner::Named(_) => CombinerKind::Named,
        Combiner::Dup { .. } => CombinerKind::Dup,
        Combiner::Contiguous { .. } => CombinerKind::Contiguous,
        Combiner::Vector { .. } => CombinerKind::Vector,
        Combiner::Hvector { .. } => CombinerKind::Hvector,
        Combiner::Indexed { .. } => CombinerKind::Indexed,
        Combiner::Hindexed { .. } => CombinerKind::Hindexed,
        Combiner::IndexedBlock { .. } => CombinerKind::IndexedBlock,
        Combiner::HindexedBlock { .. } => CombinerKind::HindexedBlock,
        Combiner::Struct { .. } => CombinerKind::Struct,
        Combiner::Subarray { .. } => CombinerKind::Subarray,
        Combiner::Darray { .. } => CombinerKind::Darray,
        Combiner::Resized { .. } => CombinerKind::Resized,
        Combiner::F90Real { .. } => CombinerKind::F90Real,
        Combiner::F90Complex { .. } => CombinerKind::F90Complex,
        Combiner::F90Integer { .. } => CombinerKind::F90Integer,
    }
}

fn order_int(o: Order) -> i32 {
    match o {
        Order::C => ORDER_C,
        Order::Fortran => ORDER_FORTRAN,
    }
}

fn distrib_ints(d: Distribution) -> (i32, i64) {
    let darg = |x: Option<i64>| x.unwrap_or(DISTRIBUTE_DFLT_DARG as i64);
    match d {
        Distribution::None => (DISTRIBUTE_NONE, DISTRIBUTE_DFLT_DARG as i64),
        Distribution::Block(b) => (DISTRIBUTE_BLOCK, darg(b)),
        Distribution::Cyclic(b) => (DISTRIBUTE_CYCLIC, darg(b)),
    }
}

/// The integer form of the counts in `v`, if the type is not large and all fit.
fn small(large: bool, v: &[i64]) -> Option<Vec<i32>> {
    if large {
        return None;
    }
    v.iter().map(|&x| i32::try_from(x).ok()).collect()
}

impl Type {
    /// `MPI_Type_get_envelope`.
    pub fn envelope(&self) -> Envelope {
        let c = self.contents().unwrap_or_default();
        Envelope {
            integers: c.integers.len(),
            addresses: c.addresses.len(),
            large_counts: c.large_counts.len(),
            datatypes: c.datatypes.len(),
            combiner: kind(self.combiner()),
        }
    }

    /// `MPI_Type_get_contents`; a predefined type has none ([`ErrorClass::Arg`]).
    pub fn contents(&self) -> Result<Contents> {
        let large = self.0.large;
        let mut out = Contents::default();
        // Counts (and, in large form, byte displacements) go to integers or large counts.
        let counts = |out: &mut Contents, v: Vec<i64>, addrs: Vec<i64>| match small(large, &v) {
            Some(ints) => {
                out.integers = ints;
                out.addresses = addrs;
            }
            None => out.large_counts = [v, addrs].concat(),
        };
        let cat = |parts: &[&[i64]]| parts.concat();
        match self.combiner() {
            Combiner::Named(p) => {
                return Err(Error::new(
                    ErrorClass::Arg,
                    format!(
                        "type_get_contents: {} is predefined (combiner NAMED)",
                        p.name()
                    ),
                ))
            }
            Combiner::Dup { old } => out.datatypes = vec![old.clone()],
            Combiner::Contiguous { count, old } => {
                counts(&mut out, vec![*count], vec![]);
                out.datatypes = vec![old.clone()];
            }
            Combiner::Vector {
                count,
                blocklen,
                stride,
                old,
            } => {
                counts(&mut out, vec![*count, *blocklen, *stride], vec![]);
                out.datatypes = vec![old.clone()];
            }
            Combiner::Hvector {
                count,
                blocklen,
                stride,
                old,
            } => {
                counts(&mut out, vec![*count, *blocklen], vec![*stride]);
                out.datatypes = vec![old.clone()];
            }
            Combiner::Indexed {
                blocklens,
                displs,
                old,
            } => {
                counts(
                    &mut out,
                    cat(&[&[blocklens.len() as i64], blocklens, displs]),
                    vec![],
                );
                out.datatypes = vec![old.clone()];
            }
            Combiner::Hindexed {
                blocklens,
                displs,
                old,
            } => {
                counts(
                    &mut out,
                    cat(&[&[blocklens.len() as i64], blocklens]),
                    displs.clone(),
                );
                out.datatypes = vec![old.clone()];
            }
            Combiner::IndexedBlock {
                blocklen,
                displs,
                old,
            } => {
                counts(
                    &mut out,
                    cat(&[&[displs.len() as i64, *blocklen], displs]),
                    vec![],
                );
                out.datatypes = vec![old.clone()];
            }
            Combiner::HindexedBlock {
                blocklen,
                displs,
                old,
            } => {
                counts(
                    &mut out,
                    vec![displs.len() as i64, *blocklen],
                    displs.clone(),
                );
                out.datatypes = vec![old.clone()];
            }
            Combiner::Struct {
                blocklens,
                displs,
                types,
            } => {
                counts(
                    &mut out,
                    cat(&[&[blocklens.len() as i64], blocklens]),
                    displs.clone(),
                );
                out.datatypes = types.clone();
            }
            Combiner::Subarray {
                sizes,
                subsizes,
                starts,
                order,
                old,
            } => {
                let n = sizes.len() as i32;
                let arrays = cat(&[sizes, subsizes, starts]);
                match small(large, &arrays) {
                    Some(ints) => {
                        out.integers = [vec![n], ints, vec![order_int(*order)]].concat();
                    }
                    None => {
                        out.integers = vec![n, order_int(*order)];
                        out.large_counts = arrays;
                    }
                }
                out.datatypes = vec![old.clone()];
            }
            Combiner::Darray {
                size,
                rank,
                gsizes,
                distribs,
                psizes,
                order,
                old,
            } => {
                let n = gsizes.len() as i32;
                let (ds, dargs): (Vec<i32>, Vec<i64>) =
                    distribs.iter().map(|&d| distrib_ints(d)).unzip();
                let dargs: Vec<i32> = dargs.iter().map(|&x| x as i32).collect();
                let tail = [ds, dargs, psizes.clone(), vec![order_int(*order)]].concat();
                match small(large, gsizes) {
                    Some(g) => out.integers = [vec![*size, *rank, n], g, tail].concat(),
                    None => {
                        out.integers = [vec![*size, *rank, n], tail].concat();
                        out.large_counts = gsizes.clone();
                    }
                }
                out.datatypes = vec![old.clone()];
            }
            Combiner::Resized { lb, extent, old } => {
                if large {
                    out.large_counts = vec![*lb, *extent];
                } else {
                    out.addresses = vec![*lb, *extent];
                }
                out.datatypes = vec![old.clone()];
            }
            Combiner::F90Real { p, r, .. } | Combiner::F90Complex { p, r, .. } => {
                out.integers = vec![*p, *r]
            }
            Combiner::F90Integer { r, .. } => out.integers = vec![*r],
        }
        Ok(out)
    }
}

fn bad(m: impl Into<String>) -> Error {
    Error::new(ErrorClass::Arg, format!("type_from_contents: {}", m.into()))
}

/// Rebuilds a type from its combiner and contents (what a tool does with
/// `MPI_Type_get_contents`): the result has the same type map.
pub fn from_contents(kind: CombinerKind, c: &Contents) -> Result<Type> {
    let large = !c.large_counts.is_empty();
    // The counts, wherever they were put, then the byte displacements (subarray and darray
    // read their own arrays below).
    let mut nums: Vec<i64> = if large {
        c.large_counts.clone()
    } else {
        let mut v: Vec<i64> = c.integers.iter().map(|&x| x as i64).collect();
        v.extend_from_slice(&c.addresses);
        v
    };
    let old = || {
        c.datatypes
            .first()
            .cloned()
            .ok_or_else(|| bad("no datatype"))
    };
    let get = |v: &[i64], i: usize| v.get(i).copied().ok_or_else(|| bad("too few arguments"));
    let t = match kind {
        CombinerKind::Named => return Err(bad("a NAMED type has no contents")),
        CombinerKind::Dup => Type::dup(&old()?),
        CombinerKind::Contiguous => Type::contiguous(get(&nums, 0)?, &old()?)?,
        CombinerKind::Vector => {
            Type::vector(get(&nums, 0)?, get(&nums, 1)?, get(&nums, 2)?, &old()?)?
        }
        CombinerKind::Hvector => {
            Type::hvector(get(&nums, 0)?, get(&nums, 1)?, get(&nums, 2)?, &old()?)?
        }
        CombinerKind::Indexed | CombinerKind::Hindexed | CombinerKind::Struct => {
            let n = get(&nums, 0)? as usize;
            if nums.len() < 1 + 2 * n {
                return Err(bad("too few arguments"));
            }
            let (bl, d) = (&nums[1..1 + n], &nums[1 + n..1 + 2 * n]);
            match kind {
                CombinerKind::Indexed => Type::indexed(bl, d, &old()?)?,
                CombinerKind::Hindexed => Type::hindexed(bl, d, &old()?)?,
                _ => Type::structure(bl, d, &c.datatypes)?,
            }
        }
        CombinerKind::IndexedBlock | CombinerKind::HindexedBlock => {
            let n = get(&nums, 0)? as usize;
            if nums.len() < 2 + n {
                return Err(bad("too few arguments"));
            }
            let (b, d) = (nums[1], &nums[2..2 + n]);
            match kind {
                CombinerKind::IndexedBlock => Type::indexed_block(b, d, &old()?)?,
                _ => Type::hindexed_block(b, d, &old()?)?,
            }
        }
        CombinerKind::Subarray => {
            let ints = &c.integers;
            let n = *ints.first().ok_or_else(|| bad("no ndims"))? as usize;
            let (arrays, order) = if c.large_counts.is_empty() {
                let v: Vec<i64> = ints
                    .get(1..1 + 3 * n)
                    .ok_or_else(|| bad("too few"))?
                    .iter()
                    .map(|&x| x as i64)
                    .collect();
                (v, *ints.get(1 + 3 * n).ok_or_else(|| bad("no order"))?)
            } else {
                (
                    c.large_counts.clone(),
                    *ints.get(1).ok_or_else(|| bad("no order"))?,
                )
            };
            if arrays.len() < 3 * n {
                return Err(bad("too few arguments"));
            }
            Type::subarray(
                &arrays[..n],
                &arrays[n..2 * n],
                &arrays[2 * n..3 * n],
                order_of(order)?,
                &old()?,
            )?
        }
        CombinerKind::Darray => {
            let ints = &c.integers;
            let [size, rank, n] = [0, 1, 2].map(|i| ints.get(i).copied().unwrap_or(-1));
            let n = usize::try_from(n).map_err(|_| bad("ndims"))?;
            let (gsizes, rest) = if c.large_counts.is_empty() {
                let g: Vec<i64> = ints
                    .get(3..3 + n)
                    .ok_or_else(|| bad("too few"))?
                    .iter()
                    .map(|&x| x as i64)
                    .collect();
                (g, ints.get(3 + n..).unwrap_or(&[]))
            } else {
                (c.large_counts.clone(), ints.get(3..).unwrap_or(&[]))
            };
            if rest.len() < 3 * n + 1 {
                return Err(bad("too few arguments"));
            }
            let distribs = (0..n)
                .map(|i| {
                    let darg = match rest[n + i] {
                        DISTRIBUTE_DFLT_DARG => None,
                        x => Some(x as i64),
                    };
                    match rest[i] {
                        DISTRIBUTE_NONE => Ok(Distribution::None),
                        DISTRIBUTE_BLOCK => Ok(Distribution::Block(darg)),
                        DISTRIBUTE_CYCLIC => Ok(Distribution::Cyclic(darg)),
                        x => Err(bad(format!("distribution {x}"))),
                    }
                })
                .collect::<Result<Vec<_>>>()?;
            Type::darray(
                size,
                rank,
                &gsizes,
                &distribs,
                &rest[2 * n..3 * n],
                order_of(rest[3 * n])?,
                &old()?,
            )?
        }
        CombinerKind::Resized => {
            if !large {
                nums = c.addresses.clone();
            }
            Type::resized(&old()?, get(&nums, 0)?, get(&nums, 1)?)?
        }
        CombinerKind::F90Real => create_f90_real(get(&nums, 0)? as i32, get(&nums, 1)? as i32)?,
        CombinerKind::F90Complex => {
            create_f90_complex(get(&nums, 0)? as i32, get(&nums, 1)? as i32)?
        }
        CombinerKind::F90Integer => create_f90_integer(get(&nums, 0)? as i32)?,
    };
    Ok(if large { t.with_large_counts() } else { t })
}

fn order_of(o: i32) -> Result<Order> {
    match o {
        ORDER_C => Ok(Order::C),
        ORDER_FORTRAN => Ok(Order::Fortran),
        x => Err(bad(format!("order {x}"))),
    }
}

/// Which type class `MPI_Type_match_size` looks in (`MPI_TYPECLASS_*`, ABI values).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(i32)]
pub enum TypeClass {
    /// `MPI_TYPECLASS_INTEGER`.
    Integer = 192,
    /// `MPI_TYPECLASS_REAL`.
    Real = 193,
    /// `MPI_TYPECLASS_COMPLEX`.
    Complex = 194,
}

/// `MPI_Type_match_size`: the predefined Fortran type of `class` with `size` bytes.
pub fn match_size(class: TypeClass, size: usize) -> Result<Predefined> {
    use Predefined as P;
    let found = match (class, size) {
        (TypeClass::Integer, 1) => P::INTEGER1,
        (TypeClass::Integer, 2) => P::INTEGER2,
        (TypeClass::Integer, 4) => P::INTEGER4,
        (TypeClass::Integer, 8) => P::INTEGER8,
        (TypeClass::Integer, 16) => P::INTEGER16,
        (TypeClass::Real, 2) => P::REAL2,
        (TypeClass::Real, 4) => P::REAL4,
        (TypeClass::Real, 8) => P::REAL8,
        (TypeClass::Real, 16) => P::REAL16,
        (TypeClass::Complex, 4) => P::COMPLEX4,
        (TypeClass::Complex, 8) => P::COMPLEX8,
        (TypeClass::Complex, 16) => P::COMPLEX16,
        (TypeClass::Complex, 32) => P::COMPLEX32,
        _ => {
            return Err(Error::new(
                ErrorClass::Arg,
                format!("type_match_size: no {class:?} type of {size} bytes"),
            ))
        }
    };
    Ok(found)
}

/// `MPI_Type_get_value_index`: the predefined MINLOC/MAXLOC pair type whose value is `value`
/// and whose index is `index`, if there is one (MPI-5.0 §6.9.4; the Fortran pairs hold two
/// values of one type).
pub fn value_index(value: Predefined, index: Predefined) -> Option<Predefined> {
    use Predefined as P;
    let pair = match (value, index) {
        (P::FLOAT, P::INT) => P::FLOAT_INT,
        (P::DOUBLE, P::INT) => P::DOUBLE_INT,
        (P::LONG, P::INT) => P::LONG_INT,
        (P::INT, P::INT) => P::TWO_INT,
        (P::SHORT, P::INT) => P::SHORT_INT,
        (P::LONG_DOUBLE, P::INT) => P::LONG_DOUBLE_INT,
        (P::REAL, P::REAL) => P::TWO_REAL,
        (P::DOUBLE_PRECISION, P::DOUBLE_PRECISION) => P::TWO_DOUBLE_PRECISION,
        (P::INTEGER, P::INTEGER) => P::TWO_INTEGER,
        _ => return None,
    };
    Some(pair)
}

/// Types made by the f90 constructors: the standard wants the same handle back for the same
/// arguments, so each is made once.
static F90: Mutex<Vec<(F90Key, Type)>> = Mutex::new(Vec::new());

/// (0 real, 1 complex, 2 integer; p; r).
type F90Key = (u8, i32, i32);

fn cached(key: F90Key, make: impl FnOnce() -> Type) -> Type {
    let mut c = F90.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((_, t)) = c.iter().find(|(k, _)| *k == key) {
        return t.clone();
    }
    let t = make();
    c.push((key, t.clone()));
    t
}

/// Real kinds as (decimal precision, decimal exponent range, type): IEEE single, double, quad.
const REALS: [(i32, i32, Predefined); 3] = [
    (6, 37, Predefined::REAL4),
    (15, 307, Predefined::REAL8),
    (33, 4931, Predefined::REAL16),
];

fn real_kind(call: &str, p: i32, r: i32) -> Result<usize> {
    if p == UNDEFINED && r == UNDEFINED {
        return Err(Error::new(
            ErrorClass::Arg,
            format!("{call}: p and r are both MPI_UNDEFINED"),
        ));
    }
    REALS
        .iter()
        .position(|&(kp, kr, _)| (p == UNDEFINED || p <= kp) && (r == UNDEFINED || r <= kr))
        .ok_or_else(|| {
            Error::new(
                ErrorClass::Arg,
                format!("{call}: no real kind with precision {p} and range {r}"),
            )
        })
}

/// `MPI_Type_create_f90_real(p, r)` ([`UNDEFINED`] for an argument not given).
pub fn create_f90_real(p: i32, r: i32) -> Result<Type> {
    let k = real_kind("type_create_f90_real", p, r)?;
    let base = REALS[k].2;
    Ok(cached((0, p, r), || {
        Type::f90(base, Combiner::F90Real { p, r, base })
    }))
}

/// `MPI_Type_create_f90_complex(p, r)`.
pub fn create_f90_complex(p: i32, r: i32) -> Result<Type> {
    let k = real_kind("type_create_f90_complex", p, r)?;
    let base = [
        Predefined::COMPLEX8,
        Predefined::COMPLEX16,
        Predefined::COMPLEX32,
    ][k];
    Ok(cached((1, p, r), || {
        Type::f90(base, Combiner::F90Complex { p, r, base })
    }))
}

/// `MPI_Type_create_f90_integer(r)`: an integer of at least `r` decimal digits.
pub fn create_f90_integer(r: i32) -> Result<Type> {
    let base = match r {
        i32::MIN..=2 => Predefined::INTEGER1,
        3..=4 => Predefined::INTEGER2,
        5..=9 => Predefined::INTEGER4,
        10..=18 => Predefined::INTEGER8,
        19..=38 => Predefined::INTEGER16,
        _ => {
            return Err(Error::new(
                ErrorClass::Arg,
                format!("type_create_f90_integer: no integer kind with {r} decimal digits"),
            ))
        }
    };
    Ok(cached((2, r, 0), || {
        Type::f90(base, Combiner::F90Integer { r, base })
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn value_index_names_each_pair_type_by_its_value_and_index() {
        use crate::datatype::predefined::{OpClass, ALL};
        let all = || {
            ALL.iter()
                .filter_map(|i| Predefined::from_handle(u32::from(i.handle)))
        };
        let mut found = Vec::new();
        for v in all() {
            for i in all() {
                if let Some(p) = value_index(v, i) {
                    let (pi, vi, ii) = (p.info(), v.info(), i.info());
                    assert_eq!(pi.class, OpClass::Pair, "{}", pi.name);
                    // The value leads; the index follows at its own alignment.
                    assert_eq!(pi.repr, vi.repr, "{}", pi.name);
                    let at = vi.extent.next_multiple_of(ii.align);
                    assert_eq!(pi.pair_index, Some(at), "{}", pi.name);
                    found.push(p);
                }
            }
        }
        let mut pairs: Vec<_> = all().filter(|p| p.info().class == OpClass::Pair).collect();
        found.sort();
        pairs.sort();
        assert_eq!(found, pairs, "each pair type exactly once");
        assert_eq!(value_index(Predefined::INT, Predefined::FLOAT), None);
        assert_eq!(value_index(Predefined::INT32_T, Predefined::INT), None);
    }

    #[test]
    fn contents_round_trip_in_integer_and_large_form() {
        let d = Type::predefined(Predefined::DOUBLE);
        let v = Type::hvector(3, 2, 40, &d).unwrap();
        let e = v.envelope();
        assert_eq!(
            (e.integers, e.addresses, e.large_counts, e.datatypes),
            (2, 1, 0, 1)
        );
        assert_eq!(e.combiner, CombinerKind::Hvector);
        let c = v.contents().unwrap();
        assert_eq!(
            (c.integers.clone(), c.addresses.clone()),
            (vec![3, 2], vec![40])
        );
        assert_eq!(c.datatypes[0], d);
        let back = from_contents(e.combiner, &c).unwrap();
        assert_eq!(back.layout(), v.layout());
        let big = Type::hvector(3, 2, 40, &d).unwrap().with_large_counts();
        let c = big.contents().unwrap();
        assert_eq!(
            (c.integers.len(), c.large_counts.clone()),
            (0, vec![3, 2, 40])
        );
        let huge = Type::contiguous(1 << 33, &d).unwrap();
        assert_eq!(huge.contents().unwrap().large_counts, vec![1 << 33]);
        let sub = Type::subarray(&[1 << 32, 4], &[2, 2], &[0, 1], Order::C, &d).unwrap();
        let c = sub.contents().unwrap();
        assert_eq!(
            (c.integers.clone(), c.large_counts.len()),
            (vec![2, ORDER_C], 6)
        );
        let back = from_contents(CombinerKind::Subarray, &c).unwrap();
        assert_eq!((back.layout(), back.contents().unwrap()), (sub.layout(), c));
        assert_eq!(d.envelope().combiner, CombinerKind::Named);
        assert_eq!(d.contents().unwrap_err().class(), ErrorClass::Arg);
        let s = Type::subarray(&[4, 5], &[2, 3], &[1, 2], Order::Fortran, &d).unwrap();
        let c = s.contents().unwrap();
        assert_eq!(c.integers, vec![2, 4, 5, 2, 3, 1, 2, ORDER_FORTRAN]);
        assert_eq!(
            from_contents(CombinerKind::Subarray, &c).unwrap().layout(),
            s.layout()
        );
    }

    #[test]
    fn match_size_and_f90_types_are_cached() {
        assert_eq!(match_size(TypeClass::Real, 8).unwrap(), Predefined::REAL8);
        assert_eq!(
            match_size(TypeClass::Integer, 3).unwrap_err().class(),
            ErrorClass::Arg
        );
        let a = create_f90_real(10, UNDEFINED).unwrap();
        assert_eq!(a.size(), 8);
        assert_eq!(
            a,
            create_f90_real(10, UNDEFINED).unwrap(),
            "same handle for the same (p, r)"
        );
        assert_eq!(a.contents().unwrap().integers, vec![10, UNDEFINED]);
        assert_eq!(a.envelope().combiner, CombinerKind::F90Real);
        assert_eq!(create_f90_integer(9).unwrap().size(), 4);
        assert_eq!(create_f90_integer(10).unwrap().size(), 8);
        assert_eq!(create_f90_complex(20, 100).unwrap().size(), 32);
        assert_eq!(create_f90_real(40, 1).unwrap_err().class(), ErrorClass::Arg);
        assert_eq!(create_f90_integer(50).unwrap_err().class(), ErrorClass::Arg);
    }
}
