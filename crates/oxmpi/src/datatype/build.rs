//! Datatype constructors (MPI-5.0 §5.1.2–§5.1.7): contiguous, vector, hvector, indexed,
//! hindexed, indexed_block, hindexed_block, struct, subarray, darray, resized and dup, all
//! with large (`i64`) counts and displacements.
//!
//! Each constructor records how the type was built ([`Combiner`], for
//! `MPI_Type_get_envelope`/`get_contents`) and computes at once its compiled [`Layout`],
//! [`Signature`] and [`Bounds`]: both are built from the old types' compiled forms in time
//! proportional to the constructor's arguments, never to the number of elements (a vector of
//! 10^7 blocks is one loop node). So `commit` has nothing left to do but mark the type.
//!
//! Bounds follow §5.1.6: lb and ub come from the old types' lb and ub (markers set by
//! `resized` are sticky: if any part has an explicit lb, only explicit lbs count); a struct
//! whose ub is not explicit is padded to its largest member alignment (the ε of §5.1.6,
//! which MPICH and Open MPI apply to structs only, as here).
//!
//! Errors: negative counts and block lengths are [`ErrorClass::Count`]; other invalid
//! arguments (mismatched array lengths, subarray/darray arguments out of range) are
//! [`ErrorClass::Arg`]; extents that overflow 64 bits are [`ErrorClass::Type`].

use std::sync::Arc;

use super::layout::Layout;
use super::predefined::Predefined;
use super::signature::Signature;
use crate::error::{Error, ErrorClass, Result};

/// Array storage order for [`Type::subarray`] and [`Type::darray`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Order {
    /// Row-major (`MPI_ORDER_C`): the last dimension varies fastest.
    C,
    /// Column-major (`MPI_ORDER_FORTRAN`): the first dimension varies fastest.
    Fortran,
}

/// How one dimension of a [`Type::darray`] is distributed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Distribution {
    /// `MPI_DISTRIBUTE_BLOCK`, with a block size or `None` for the default
    /// (`MPI_DISTRIBUTE_DFLT_DARG`: ⌈gsize / psize⌉).
    Block(Option<i64>),
    /// `MPI_DISTRIBUTE_CYCLIC`, with a block size or `None` for the default (1).
    Cyclic(Option<i64>),
    /// `MPI_DISTRIBUTE_NONE`: the dimension is not distributed (its process count must be 1).
    None,
}

/// How a datatype was made (`MPI_COMBINER_*`) and from what.
#[derive(Debug, Clone, PartialEq)]
#[allow(missing_docs)] // fields: the standard's argument names
pub enum Combiner {
    /// A predefined type.
    Named(Predefined),
    /// `MPI_Type_dup`.
    Dup { old: Type },
    /// `MPI_Type_contiguous`.
    Contiguous { count: i64, old: Type },
    /// `MPI_Type_vector` (stride in elements of `old`).
    Vector {
        count: i64,
        blocklen: i64,
        stride: i64,
        old: Type,
    },
    /// `MPI_Type_create_hvector` (stride in bytes).
    Hvector {
        count: i64,
        blocklen: i64,
        stride: i64,
        old: Type,
    },
    /// `MPI_Type_indexed` (displacements in elements of `old`).
    Indexed {
        blocklens: Vec<i64>,
        displs: Vec<i64>,
        old: Type,
    },
    /// `MPI_Type_create_hindexed` (displacements in bytes).
    Hindexed {
        blocklens: Vec<i64>,
        displs: Vec<i64>,
        old: Type,
    },
    /// `MPI_Type_create_indexed_block`.
    IndexedBlock {
        blocklen: i64,
        displs: Vec<i64>,
        old: Type,
    },
    /// `MPI_Type_create_hindexed_block` (displacements in bytes).
    HindexedBlock {
        blocklen: i64,
        displs: Vec<i64>,
        old: Type,
    },
    /// `MPI_Type_create_struct` (displacements in bytes).
    Struct {
        blocklens: Vec<i64>,
        displs: Vec<i64>,
        types: Vec<Type>,
    },
    /// `MPI_Type_create_subarray`.
    Subarray {
        sizes: Vec<i64>,
        subsizes: Vec<i64>,
        starts: Vec<i64>,
        order: Order,
        old: Type,
    },
    /// `MPI_Type_create_darray`.
    Darray {
        size: i32,
        rank: i32,
        gsizes: Vec<i64>,
        distribs: Vec<Distribution>,
        psizes: Vec<i32>,
        order: Order,
        old: Type,
    },
    /// `MPI_Type_create_resized`.
    Resized { lb: i64, extent: i64, old: Type },
    /// `MPI_Type_create_f90_real(p, r)` (−1 stands for "not given", `MPI_UNDEFINED`).
    F90Real { p: i32, r: i32, base: Predefined },
    /// `MPI_Type_create_f90_complex(p, r)`.
    F90Complex { p: i32, r: i32, base: Predefined },
    /// `MPI_Type_create_f90_integer(r)`.
    F90Integer { r: i32, base: Predefined },
}

/// Lower and upper bounds of a type (§5.1.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Bounds {
    /// Lower bound (`MPI_Type_get_extent`).
    pub lb: i64,
    /// Upper bound.
    pub ub: i64,
    /// Lowest byte of data (`MPI_Type_get_true_extent`).
    pub true_lb: i64,
    /// One past the highest byte of data.
    pub true_ub: i64,
    /// `lb` was set by `resized` (sticky through later constructors).
    pub lb_marked: bool,
    /// `ub` was set by `resized`.
    pub ub_marked: bool,
    /// The type has at least one byte of data.
    pub has_data: bool,
    /// Largest alignment of a basic member (for the struct padding ε).
    pub align: u64,
}

impl Bounds {
    /// `ub - lb`.
    pub fn extent(&self) -> i64 {
        self.ub - self.lb
    }

    /// `true_ub - true_lb`.
    pub fn true_extent(&self) -> i64 {
        self.true_ub - self.true_lb
    }

    fn has_entries(&self) -> bool {
        self.has_data || self.lb_marked || self.ub_marked
    }

    /// Bounds of `n` copies `step` bytes apart, moved by `d`.
    fn replicate(&self, d: i64, n: i64, step: i64) -> Result<Bounds> {
        if !self.has_entries() {
            return Ok(*self);
        }
        let span = (n - 1).checked_mul(step).ok_or_else(overflow)?;
        let (lo, hi) = (span.min(0), span.max(0));
        let add = |a: i64, b: i64| {
            a.checked_add(b)
                .and_then(|x| x.checked_add(d))
                .ok_or_else(overflow)
        };
        let (true_lb, true_ub) = if self.has_data {
            (add(self.true_lb, lo)?, add(self.true_ub, hi)?)
        } else {
            (0, 0)
        };
        Ok(Bounds {
            lb: add(self.lb, lo)?,
            ub: add(self.ub, hi)?,
            true_lb,
            true_ub,
            ..*self
        })
    }

    /// Bounds of a type made of `parts`, each already placed.
    fn combine(parts: &[Bounds], pad: bool) -> Bounds {
        let parts: Vec<&Bounds> = parts.iter().filter(|p| p.has_entries()).collect();
        if parts.is_empty() {
            return Bounds {
                align: 1,
                ..Bounds::default()
            };
        }
        let lb_marked = parts.iter().any(|p| p.lb_marked);
        let ub_marked = parts.iter().any(|p| p.ub_marked);
        let lb = parts
            .iter()
            .filter(|p| p.lb_marked == lb_marked && (lb_marked || p.has_data))
            .map(|p| p.lb)
            .min()
            .unwrap_or(0);
        let ub = parts
            .iter()
            .filter(|p| p.ub_marked == ub_marked && (ub_marked || p.has_data))
            .map(|p| p.ub)
            .max()
            .unwrap_or(0);
        let data: Vec<&&Bounds> = parts.iter().filter(|p| p.has_data).collect();
        let align = parts.iter().map(|p| p.align).max().unwrap_or(1);
        let mut b = Bounds {
            lb,
            ub,
            true_lb: data.iter().map(|p| p.true_lb).min().unwrap_or(0),
            true_ub: data.iter().map(|p| p.true_ub).max().unwrap_or(0),
            lb_marked,
            ub_marked,
            has_data: !data.is_empty(),
            align,
        };
        if pad && !ub_marked && b.has_data {
            let ext = b.ub - b.lb;
            let a = align as i64;
            b.ub += (a - ext.rem_euclid(a)) % a;
        }
        b
    }
}

fn overflow() -> Error {
    Error::new(
        ErrorClass::Type,
        "datatype: displacement or extent overflows 64 bits",
    )
}

/// Everything known about a datatype.
#[derive(Debug)]
pub(crate) struct Inner {
    pub(crate) combiner: Combiner,
    pub(crate) layout: Layout,
    pub(crate) sig: Signature,
    pub(crate) bounds: Bounds,
    /// The one predefined type all data is made of, if there is one (for reductions).
    pub(crate) base: Option<Predefined>,
    /// Made by a large-count (`_c`) constructor: `get_contents` reports counts there.
    pub(crate) large: bool,
}

/// A datatype: a predefined one or one built by a constructor. Cheap to clone (shared);
/// immutable once built, so an operation in flight holds a clone and the type lives as long.
#[derive(Debug, Clone)]
pub struct Type(pub(crate) Arc<Inner>);

impl PartialEq for Type {
    /// Identity: the same type object (a `dup` is a different type).
    fn eq(&self, other: &Type) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

fn count_arg(call: &str, what: &str, n: i64) -> Result<u64> {
    u64::try_from(n)
        .map_err(|_| Error::new(ErrorClass::Count, format!("{call}: {what} {n} is negative")))
}

fn mul(a: i64, b: i64) -> Result<i64> {
    a.checked_mul(b).ok_or_else(overflow)
}

/// A placed block: `blocklen` copies of `old` at byte displacement `d`.
struct Block<'a> {
    d: i64,
    n: i64,
    old: &'a Type,
}

impl Type {
    /// The predefined type `p`.
    pub fn predefined(p: Predefined) -> Type {
        let info = p.info();
        let (layout, sig) = match info.pair_index {
            Some(idx) => {
                let ir = p.pair_index_repr();
                (
                    Layout::seq(vec![
                        Layout::run(0, info.repr.size() as u64),
                        Layout::run(idx as i64, ir.size() as u64),
                    ]),
                    Signature::concat([Signature::basic(info.repr, 1), Signature::basic(ir, 1)]),
                )
            }
            None => (
                Layout::run(0, info.extent as u64),
                Signature::basic(info.repr, 1),
            ),
        };
        Type(Arc::new(Inner {
            combiner: Combiner::Named(p),
            layout,
            sig,
            bounds: Bounds {
                lb: 0,
                ub: info.extent as i64,
                true_lb: 0,
                true_ub: match info.pair_index {
                    Some(idx) => (idx + p.pair_index_repr().size()) as i64,
                    None => info.extent as i64,
                },
                lb_marked: false,
                ub_marked: false,
                has_data: true,
                align: info.align as u64,
            },
            base: Some(p),
            large: false,
        }))
    }

    /// The type for Rust values of `T` (a predefined type).
    pub fn of<T: super::predefined::Basic>() -> Type {
        Type::predefined(T::PREDEFINED)
    }

    fn new(
        combiner: Combiner,
        layout: Layout,
        sig: Signature,
        bounds: Bounds,
        base: Option<Predefined>,
    ) -> Type {
        Type(Arc::new(Inner {
            combiner,
            layout,
            sig,
            bounds,
            base,
            large: false,
        }))
    }

    /// The same type recording that it was made by a large-count (`_c`) constructor, so
    /// `get_envelope`/`get_contents` report its counts as large counts.
    pub fn with_large_counts(self) -> Type {
        let i = &self.0;
        Type(Arc::new(Inner {
            combiner: i.combiner.clone(),
            layout: i.layout.clone(),
            sig: i.sig.clone(),
            bounds: i.bounds,
            base: i.base,
            large: true,
        }))
    }

    /// Combines placed blocks in order (indexed, struct).
    fn blocks(combiner: Combiner, blocks: &[Block<'_>], pad: bool) -> Result<Type> {
        let mut layouts = Vec::with_capacity(blocks.len());
        let mut sigs = Vec::with_capacity(blocks.len());
        let mut bounds = Vec::with_capacity(blocks.len());
        let mut base: Option<Option<Predefined>> = None;
        for b in blocks {
            if b.n == 0 {
                continue;
            }
            let ext = b.old.extent();
            layouts.push(Layout::repeat(b.old.0.layout.clone(), b.n as u64, ext).shift(b.d));
            sigs.push(b.old.0.sig.repeat(b.n as u64));
            bounds.push(b.old.0.bounds.replicate(b.d, b.n, ext)?);
            if b.old.size() > 0 {
                base = Some(match base {
                    None => b.old.0.base,
                    Some(x) if x == b.old.0.base => x,
                    Some(_) => None,
                });
            }
        }
        Ok(Type::new(
            combiner,
            Layout::seq(layouts),
            Signature::concat(sigs),
            Bounds::combine(&bounds, pad),
            base.flatten(),
        ))
    }

    /// `count` blocks of `blocklen` copies of `old`, block `i` at `i * stride` bytes.
    fn strided(
        combiner: Combiner,
        count: u64,
        blocklen: u64,
        stride: i64,
        old: &Type,
    ) -> Result<Type> {
        let ext = old.extent();
        let block = Layout::repeat(old.0.layout.clone(), blocklen, ext);
        let layout = Layout::repeat(block, count, stride);
        let sig = old.0.sig.repeat(blocklen).repeat(count);
        let bounds = if count == 0 || blocklen == 0 {
            Bounds::combine(&[], false)
        } else {
            old.0
                .bounds
                .replicate(0, blocklen as i64, ext)?
                .replicate(0, count as i64, stride)?
        };
        Ok(Type::new(combiner, layout, sig, bounds, old.0.base))
    }

    /// `MPI_Type_contiguous`: `count` copies of `old`.
    pub fn contiguous(count: i64, old: &Type) -> Result<Type> {
        let n = count_arg("type_contiguous", "count", count)?;
        let c = Combiner::Contiguous {
            count,
            old: old.clone(),
        };
        Type::strided(c, 1, n, 0, old)
    }

    /// `MPI_Type_vector`: `count` blocks of `blocklen` elements, `stride` elements apart.
    pub fn vector(count: i64, blocklen: i64, stride: i64, old: &Type) -> Result<Type> {
        let n = count_arg("type_vector", "count", count)?;
        let b = count_arg("type_vector", "blocklength", blocklen)?;
        let s = mul(stride, old.extent())?;
        let c = Combiner::Vector {
            count,
            blocklen,
            stride,
            old: old.clone(),
        };
        Type::strided(c, n, b, s, old)
    }

    /// `MPI_Type_create_hvector`: like [`vector`](Self::vector), `stride` in bytes.
    pub fn hvector(count: i64, blocklen: i64, stride: i64, old: &Type) -> Result<Type> {
        let n = count_arg("type_create_hvector", "count", count)?;
        let b = count_arg("type_create_hvector", "blocklength", blocklen)?;
        let c = Combiner::Hvector {
            count,
            blocklen,
            stride,
            old: old.clone(),
        };
        Type::strided(c, n, b, stride, old)
    }

    fn check_lens(call: &str, blocklens: &[i64], displs: &[i64]) -> Result<()> {
        if blocklens.len() != displs.len() {
            return Err(Error::new(
                ErrorClass::Arg,
                format!(
                    "{call}: {} block lengths but {} displacements",
                    blocklens.len(),
                    displs.len()
                ),
            ));
        }
        for &b in blocklens {
            count_arg(call, "blocklength", b)?;
        }
        Ok(())
    }

    /// `MPI_Type_indexed`: blocks of `blocklens[i]` elements at `displs[i]` elements.
    pub fn indexed(blocklens: &[i64], displs: &[i64], old: &Type) -> Result<Type> {
        Type::check_lens("type_indexed", blocklens, displs)?;
        let ext = old.extent();
        let blocks = blocklens
            .iter()
            .zip(displs)
            .map(|(&n, &d)| {
                Ok(Block {
                    d: mul(d, ext)?,
                    n,
                    old,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let c = Combiner::Indexed {
            blocklens: blocklens.to_vec(),
            displs: displs.to_vec(),
            old: old.clone(),
        };
        Type::blocks(c, &blocks, false)
    }

    /// `MPI_Type_create_hindexed`: like [`indexed`](Self::indexed), displacements in bytes.
    pub fn hindexed(blocklens: &[i64], displs: &[i64], old: &Type) -> Result<Type> {
        Type::check_lens("type_create_hindexed", blocklens, displs)?;
        let blocks: Vec<Block<'_>> = blocklens
            .iter()
            .zip(displs)
            .map(|(&n, &d)| Block { d, n, old })
            .collect();
        let c = Combiner::Hindexed {
            blocklens: blocklens.to_vec(),
            displs: displs.to_vec(),
            old: old.clone(),
        };
        Type::blocks(c, &blocks, false)
    }

    fn same_blocks(
        combiner: Combiner,
        blocklen: u64,
        byte_displs: &[i64],
        old: &Type,
    ) -> Result<Type> {
        let ext = old.extent();
        let block = Layout::repeat(old.0.layout.clone(), blocklen, ext);
        let layout = Layout::table(block, byte_displs);
        let sig = old.0.sig.repeat(blocklen).repeat(byte_displs.len() as u64);
        let parts = if blocklen == 0 {
            vec![]
        } else {
            byte_displs
                .iter()
                .map(|&d| old.0.bounds.replicate(d, blocklen as i64, ext))
                .collect::<Result<Vec<_>>>()?
        };
        Ok(Type::new(
            combiner,
            layout,
            sig,
            Bounds::combine(&parts, false),
            old.0.base,
        ))
    }

    /// `MPI_Type_create_indexed_block`: blocks of `blocklen` elements at `displs[i]` elements.
    pub fn indexed_block(blocklen: i64, displs: &[i64], old: &Type) -> Result<Type> {
        let b = count_arg("type_create_indexed_block", "blocklength", blocklen)?;
        let ext = old.extent();
        let bytes = displs
            .iter()
            .map(|&d| mul(d, ext))
            .collect::<Result<Vec<_>>>()?;
        let c = Combiner::IndexedBlock {
            blocklen,
            displs: displs.to_vec(),
            old: old.clone(),
        };
        Type::same_blocks(c, b, &bytes, old)
    }

    /// `MPI_Type_create_hindexed_block`: like [`indexed_block`](Self::indexed_block),
    /// displacements in bytes.
    pub fn hindexed_block(blocklen: i64, displs: &[i64], old: &Type) -> Result<Type> {
        let b = count_arg("type_create_hindexed_block", "blocklength", blocklen)?;
        let c = Combiner::HindexedBlock {
            blocklen,
            displs: displs.to_vec(),
            old: old.clone(),
        };
        Type::same_blocks(c, b, displs, old)
    }

    /// `MPI_Type_create_struct`: `blocklens[i]` copies of `types[i]` at byte `displs[i]`.
    pub fn structure(blocklens: &[i64], displs: &[i64], types: &[Type]) -> Result<Type> {
        Type::check_lens("type_create_struct", blocklens, displs)?;
        if types.len() != blocklens.len() {
            return Err(Error::new(
                ErrorClass::Arg,
                format!(
                    "type_create_struct: {} block lengths but {} types",
                    blocklens.len(),
                    types.len()
                ),
            ));
        }
        let blocks: Vec<Block<'_>> = blocklens
            .iter()
            .zip(displs)
            .zip(types)
            .map(|((&n, &d), old)| Block { d, n, old })
            .collect();
        let c = Combiner::Struct {
            blocklens: blocklens.to_vec(),
            displs: displs.to_vec(),
            types: types.to_vec(),
        };
        Type::blocks(c, &blocks, true)
    }

    /// `MPI_Type_create_resized`: the same data with lower bound `lb` and extent `extent`.
    pub fn resized(old: &Type, lb: i64, extent: i64) -> Result<Type> {
        let ub = lb.checked_add(extent).ok_or_else(overflow)?;
        let b = old.0.bounds;
        Ok(Type::new(
            Combiner::Resized {
                lb,
                extent,
                old: old.clone(),
            },
            old.0.layout.clone(),
            old.0.sig.clone(),
            Bounds {
                lb,
                ub,
                lb_marked: true,
                ub_marked: true,
                ..b
            },
            old.0.base,
        ))
    }

    /// `MPI_Type_dup`: a new type with the same type map.
    pub fn dup(old: &Type) -> Type {
        let i = &old.0;
        Type::new(
            Combiner::Dup { old: old.clone() },
            i.layout.clone(),
            i.sig.clone(),
            i.bounds,
            i.base,
        )
    }

    /// Wraps `t`'s data and bounds under another combiner.
    fn rename(t: Type, combiner: Combiner) -> Type {
        let i = &t.0;
        Type::new(combiner, i.layout.clone(), i.sig.clone(), i.bounds, i.base)
    }

    /// `MPI_Type_create_subarray`: the `subsizes` block starting at `starts` of an array of
    /// `sizes` elements of `old`, with the extent of the whole array.
    pub fn subarray(
        sizes: &[i64],
        subsizes: &[i64],
        starts: &[i64],
        order: Order,
        old: &Type,
    ) -> Result<Type> {
        let call = "type_create_subarray";
        let n = sizes.len();
        if n == 0 || subsizes.len() != n || starts.len() != n {
            return Err(Error::new(
                ErrorClass::Arg,
                format!(
                    "{call}: {n} sizes, {} subsizes, {} starts (need equal and > 0)",
                    subsizes.len(),
                    starts.len()
                ),
            ));
        }
        for i in 0..n {
            if sizes[i] <= 0
                || subsizes[i] <= 0
                || subsizes[i] > sizes[i]
                || starts[i] < 0
                || starts[i] > sizes[i] - subsizes[i]
            {
                return Err(Error::new(
                    ErrorClass::Arg,
                    format!(
                        "{call}: dimension {i}: size {}, subsize {}, start {} (need 0 < subsize <= size, 0 <= start <= size - subsize)",
                        sizes[i], subsizes[i], starts[i]
                    ),
                ));
            }
        }
        // Dimensions from the fastest-varying to the slowest.
        let dims: Vec<usize> = match order {
            Order::C => (0..n).rev().collect(),
            Order::Fortran => (0..n).collect(),
        };
        let ext = old.extent();
        let mut t = old.clone();
        let mut step = ext;
        let mut disp = 0i64;
        for &d in &dims {
            t = Type::hvector(subsizes[d], 1, step, &t)?;
            disp = disp
                .checked_add(mul(starts[d], step)?)
                .ok_or_else(overflow)?;
            step = mul(step, sizes[d])?;
        }
        let placed = Type::hindexed_block(1, &[disp], &t)?;
        let full = Type::resized(&placed, 0, step)?;
        Ok(Type::rename(
            full,
            Combiner::Subarray {
                sizes: sizes.to_vec(),
                subsizes: subsizes.to_vec(),
                starts: starts.to_vec(),
                order,
                old: old.clone(),
            },
        ))
    }

    /// `MPI_Type_create_darray`: the part of a `gsizes` array of `old` that process `rank`
    /// of `size` owns, on a row-major process grid `psizes`, distributed per dimension by
    /// `distribs`; the extent is that of the whole array.
    #[allow(clippy::too_many_arguments)]
    pub fn darray(
        size: i32,
        rank: i32,
        gsizes: &[i64],
        distribs: &[Distribution],
        psizes: &[i32],
        order: Order,
        old: &Type,
    ) -> Result<Type> {
        let call = "type_create_darray";
        let arg = |m: String| Error::new(ErrorClass::Arg, format!("{call}: {m}"));
        let n = gsizes.len();
        if size <= 0 || rank < 0 || rank >= size {
            return Err(arg(format!("rank {rank} of {size} processes")));
        }
        if distribs.len() != n || psizes.len() != n {
            return Err(arg(format!(
                "{n} gsizes, {} distribs, {} psizes",
                distribs.len(),
                psizes.len()
            )));
        }
        if psizes.iter().any(|&p| p <= 0) || gsizes.iter().any(|&g| g <= 0) {
            return Err(arg("gsizes and psizes must be positive".into()));
        }
        if psizes.iter().map(|&p| p as i64).product::<i64>() != size as i64 {
            return Err(arg(format!("psizes {psizes:?} do not multiply to {size}")));
        }
        // Process grid coordinates, row-major whatever the array order (§5.1.12).
        let mut coords = vec![0i64; n];
        let mut r = rank as i64;
        for i in (0..n).rev() {
            coords[i] = r % psizes[i] as i64;
            r /= psizes[i] as i64;
        }
        let dims: Vec<usize> = match order {
            Order::C => (0..n).rev().collect(),
            Order::Fortran => (0..n).collect(),
        };
        let ext = old.extent();
        let mut t = old.clone();
        let mut step = ext;
        let mut disp = 0i64;
        for &d in &dims {
            let (g, p, c) = (gsizes[d], psizes[d] as i64, coords[d]);
            let (start, piece) = match distribs[d] {
                Distribution::None | Distribution::Block(_) => {
                    let blk = match distribs[d] {
                        Distribution::Block(Some(b)) => b,
                        Distribution::None => {
                            if p != 1 {
                                return Err(arg(format!(
                                    "dimension {d} is not distributed but has {p} processes"
                                )));
                            }
                            g
                        }
                        _ => (g + p - 1) / p,
                    };
                    if blk <= 0 || blk.checked_mul(p).is_none_or(|x| x < g) {
                        return Err(arg(format!(
                            "dimension {d}: block size {blk} x {p} processes does not cover {g}"
                        )));
                    }
                    let first = blk * c;
                    let mine = blk.min(g - first).max(0);
                    (
                        if mine == 0 { 0 } else { first },
                        Type::hvector(mine, 1, step, &t)?,
                    )
                }
                Distribution::Cyclic(b) => {
                    let blk = b.unwrap_or(1);
                    if blk <= 0 {
                        return Err(arg(format!("dimension {d}: cyclic block size {blk}")));
                    }
                    let first = blk * c;
                    let round = mul(blk, p)?;
                    let (full, rem) = if first >= g {
                        (0, 0)
                    } else {
                        let left = g - first;
                        let full = left / round;
                        let rest = left % round;
                        if rest >= blk {
                            (full + 1, 0)
                        } else {
                            (full, rest)
                        }
                    };
                    let one = Type::hvector(blk, 1, step, &t)?;
                    let blocks = Type::hvector(full, 1, mul(round, step)?, &one)?;
                    let tail = Type::hvector(rem, 1, step, &t)?;
                    let piece = Type::structure(
                        &[1, 1],
                        &[0, mul(mul(full, round)?, step)?],
                        &[blocks, tail],
                    )?;
                    (if full == 0 && rem == 0 { 0 } else { first }, piece)
                }
            };
            t = piece;
            disp = disp.checked_add(mul(start, step)?).ok_or_else(overflow)?;
            step = mul(step, g)?;
        }
        let placed = Type::hindexed_block(1, &[disp], &t)?;
        let full = Type::resized(&placed, 0, step)?;
        Ok(Type::rename(
            full,
            Combiner::Darray {
                size,
                rank,
                gsizes: gsizes.to_vec(),
                distribs: distribs.to_vec(),
                psizes: psizes.to_vec(),
                order,
                old: old.clone(),
            },
        ))
    }

    /// A type with `t`'s data under an `F90_*` combiner.
    pub(crate) fn f90(base: Predefined, combiner: Combiner) -> Type {
        Type::rename(Type::predefined(base), combiner)
    }

    /// How the type was made.
    pub fn combiner(&self) -> &Combiner {
        &self.0.combiner
    }

    /// The predefined type this is, if it is one.
    pub fn as_predefined(&self) -> Option<Predefined> {
        match self.0.combiner {
            Combiner::Named(p) => Some(p),
            _ => None,
        }
    }

    /// Bytes of data in one element (`MPI_Type_size`).
    pub fn size(&self) -> u64 {
        self.0.layout.size()
    }

    /// Lower bound, upper bound and their markers.
    pub fn bounds(&self) -> &Bounds {
        &self.0.bounds
    }

    /// `ub - lb` (`MPI_Type_get_extent`).
    pub fn extent(&self) -> i64 {
        self.0.bounds.extent()
    }

    /// Lower bound.
    pub fn lb(&self) -> i64 {
        self.0.bounds.lb
    }

    /// `(true_lb, true_extent)` (`MPI_Type_get_true_extent`).
    pub fn true_extent(&self) -> (i64, i64) {
        (self.0.bounds.true_lb, self.0.bounds.true_extent())
    }

    /// The compiled layout of one element.
    pub fn layout(&self) -> &Layout {
        &self.0.layout
    }

    /// The type signature of one element.
    pub fn signature(&self) -> &Signature {
        &self.0.sig
    }

    /// The one predefined type all the data is made of, if any (reductions need one).
    pub fn base(&self) -> Option<Predefined> {
        self.0.base
    }

    /// Whether `count` elements are one contiguous run of `count * size` bytes starting at
    /// the buffer address plus `lb` (then data moves as plain bytes, with no added cost).
    #[inline]
    pub fn is_contiguous(&self) -> bool {
        match self.0.layout.as_run() {
            Some((d, len)) => d == self.0.bounds.lb && len as i64 == self.extent(),
            None => self.size() == 0,
        }
    }

    /// Basic elements in `bytes` bytes of data of this type (`MPI_Get_elements_x`): partial
    /// elements of the type count their basic elements; `None` (`MPI_UNDEFINED`) when
    /// `bytes` ends inside a basic element.
    pub fn elements_in(&self, bytes: u64) -> Option<u64> {
        self.0.sig.elements_in(bytes)
    }

    /// Whole elements of this type in `bytes` bytes (`MPI_Get_count`); `None`
    /// (`MPI_UNDEFINED`) if `bytes` is not a multiple of the size.
    pub fn count_in(&self, bytes: u64) -> Option<u64> {
        match self.size() {
            0 => (bytes == 0).then_some(0),
            s => bytes.is_multiple_of(s).then(|| bytes / s),
        }
    }

    /// Checks that `count` elements of this type may be received as `rcount` elements of
    /// `recv` (their signatures match, MPI-5.0 §3.3.1); a mismatch is [`ErrorClass::Type`].
    pub fn check_match(&self, count: u64, recv: &Type, rcount: u64) -> Result<()> {
        if self.0.sig.matches(count, &recv.0.sig, rcount) {
            Ok(())
        } else {
            Err(Error::new(
                ErrorClass::Type,
                format!(
                    "type signatures differ: {count} x {} sent, {rcount} x {} received",
                    self.describe(),
                    recv.describe()
                ),
            ))
        }
    }

    fn describe(&self) -> String {
        match self.as_predefined() {
            Some(p) => p.name().to_string(),
            None => format!("derived type of {} bytes", self.size()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dbl() -> Type {
        Type::predefined(Predefined::DOUBLE)
    }

    #[test]
    fn vector_bounds_and_contiguity() {
        let v = Type::vector(3, 2, 4, &dbl()).unwrap();
        assert_eq!(v.size(), 48);
        assert_eq!(v.extent(), (2 * 4 + 2) * 8);
        assert!(!v.is_contiguous());
        let c = Type::vector(3, 2, 2, &dbl()).unwrap();
        assert!(c.is_contiguous());
        assert_eq!(c.layout().as_run(), Some((0, 48)));
        let neg = Type::hvector(3, 1, -16, &dbl()).unwrap();
        assert_eq!((neg.lb(), neg.extent()), (-32, 40));
        assert_eq!(neg.true_extent(), (-32, 40));
        assert_eq!(
            Type::vector(4, 1, 2, &dbl()).unwrap().signature(),
            &Signature::basic(crate::datatype::predefined::Repr::F64, 4)
        );
        let big = Type::vector(10_000_000, 1, 2, &dbl()).unwrap();
        assert_eq!(big.size(), 80_000_000);
        assert!(matches!(
            big.layout(),
            Layout::Loop {
                count: 10_000_000,
                ..
            }
        ));
    }

    #[test]
    fn signatures_match_across_shapes_and_mismatches_are_type_errors() {
        let v = Type::vector(4, 1, 3, &dbl()).unwrap();
        assert!(
            v.check_match(1, &dbl(), 4).is_ok(),
            "vector of 4 doubles as 4 doubles"
        );
        assert!(dbl().check_match(4, &v, 1).is_ok());
        let f = Type::predefined(Predefined::FLOAT);
        assert_eq!(
            v.check_match(1, &f, 8).unwrap_err().class(),
            ErrorClass::Type
        );
        assert!(v
            .check_match(1, &Type::predefined(Predefined::BYTE), 32)
            .is_ok());
        let i = Type::predefined(Predefined::INT);
        let s = Type::structure(&[1, 1], &[0, 8], &[i.clone(), dbl()]).unwrap();
        let back = Type::structure(&[1, 1], &[0, 8], &[dbl(), i]).unwrap();
        assert_eq!(
            s.check_match(1, &back, 1).unwrap_err().class(),
            ErrorClass::Type
        );
        assert_eq!(s.count_in(24), Some(2));
        assert_eq!(s.count_in(13), None);
    }

    #[test]
    fn struct_pads_to_alignment_unless_resized() {
        let s = Type::structure(
            &[1, 1],
            &[0, 8],
            &[dbl(), Type::predefined(Predefined::CHAR)],
        )
        .unwrap();
        assert_eq!((s.size(), s.extent()), (9, 16));
        assert_eq!(s.true_extent(), (0, 9));
        let r = Type::resized(&Type::predefined(Predefined::INT), -4, 12).unwrap();
        let s2 = Type::structure(
            &[1, 1],
            &[0, 100],
            &[r.clone(), Type::predefined(Predefined::CHAR)],
        )
        .unwrap();
        assert_eq!(
            (s2.lb(), s2.extent()),
            (-4, 12),
            "explicit bounds are sticky"
        );
        let c = Type::contiguous(3, &r).unwrap();
        assert_eq!((c.lb(), c.extent()), (-4, 36));
    }

    #[test]
    fn bad_arguments_have_the_standard_classes() {
        let e = Type::vector(-1, 1, 1, &dbl()).unwrap_err();
        assert_eq!(e.class(), ErrorClass::Count);
        let e = Type::contiguous(-3, &dbl()).unwrap_err();
        assert_eq!(e.class(), ErrorClass::Count);
        let e = Type::indexed(&[1, 2], &[0], &dbl()).unwrap_err();
        assert_eq!(e.class(), ErrorClass::Arg);
        let e = Type::indexed(&[1, -2], &[0, 4], &dbl()).unwrap_err();
        assert_eq!(e.class(), ErrorClass::Count);
        let e = Type::structure(&[1], &[0], &[]).unwrap_err();
        assert_eq!(e.class(), ErrorClass::Arg);
        let e = Type::subarray(&[4, 4], &[2, 5], &[0, 0], Order::C, &dbl()).unwrap_err();
        assert_eq!(e.class(), ErrorClass::Arg);
        let e = Type::subarray(&[4], &[2], &[3], Order::C, &dbl()).unwrap_err();
        assert_eq!(e.class(), ErrorClass::Arg);
        let e = Type::hvector(2, 1, i64::MAX, &dbl()).unwrap_err();
        assert_eq!(e.class(), ErrorClass::Type);
        let d = [Distribution::Block(None)];
        assert_eq!(
            Type::darray(2, 2, &[4], &d, &[2], Order::C, &dbl())
                .unwrap_err()
                .class(),
            ErrorClass::Arg
        );
        assert_eq!(
            Type::darray(2, 0, &[4], &d, &[3], Order::C, &dbl())
                .unwrap_err()
                .class(),
            ErrorClass::Arg
        );
        let nd = [Distribution::None];
        assert_eq!(
            Type::darray(2, 0, &[4], &nd, &[2], Order::C, &dbl())
                .unwrap_err()
                .class(),
            ErrorClass::Arg
        );
        let small = [Distribution::Block(Some(1))];
        assert_eq!(
            Type::darray(2, 0, &[4], &small, &[2], Order::C, &dbl())
                .unwrap_err()
                .class(),
            ErrorClass::Arg
        );
    }

    #[test]
    fn subarray_selects_the_block_with_the_whole_extent() {
        // 4x5 array of doubles, rows 1..3, columns 2..5 (C order).
        let s = Type::subarray(&[4, 5], &[2, 3], &[1, 2], Order::C, &dbl()).unwrap();
        assert_eq!((s.lb(), s.extent(), s.size()), (0, 160, 48));
        let mut runs = Vec::new();
        s.layout().walk(0, 0, &mut |o: i64, n: u64| {
            runs.push((o / 8, n / 8));
            true
        });
        assert_eq!(runs, vec![(7, 3), (12, 3)]);
        let f = Type::subarray(&[4, 5], &[2, 3], &[1, 2], Order::Fortran, &dbl()).unwrap();
        let mut runs = Vec::new();
        f.layout().walk(0, 0, &mut |o: i64, n: u64| {
            runs.push((o / 8, n / 8));
            true
        });
        assert_eq!(runs, vec![(9, 2), (13, 2), (17, 2)]);
    }

    #[test]
    fn darray_block_and_cyclic() {
        let i = Type::predefined(Predefined::INT);
        // 10 elements over 3 processes, block: 4, 4, 2.
        let owned = |t: &Type| {
            let mut v = Vec::new();
            t.layout().walk(0, 0, &mut |o: i64, n: u64| {
                v.extend((o / 4)..(o + n as i64) / 4);
                true
            });
            v
        };
        let b = [Distribution::Block(None)];
        assert_eq!(
            owned(&Type::darray(3, 2, &[10], &b, &[3], Order::C, &i).unwrap()),
            vec![8, 9]
        );
        let c2 = [Distribution::Cyclic(Some(2))];
        let t = Type::darray(3, 1, &[11], &c2, &[3], Order::C, &i).unwrap();
        assert_eq!(owned(&t), vec![2, 3, 8, 9]);
        assert_eq!(t.extent(), 44);
        let t = Type::darray(3, 2, &[11], &c2, &[3], Order::C, &i).unwrap();
        assert_eq!(owned(&t), vec![4, 5, 10]);
        // 2-D: 4x4, rows block over 2, columns cyclic over 2; rank 3 = coords (1, 1).
        let t = Type::darray(
            4,
            3,
            &[4, 4],
            &[Distribution::Block(None), Distribution::Cyclic(None)],
            &[2, 2],
            Order::C,
            &i,
        )
        .unwrap();
        assert_eq!(owned(&t), vec![9, 11, 13, 15]);
        let t = Type::darray(
            4,
            3,
            &[4, 4],
            &[Distribution::Block(None), Distribution::Cyclic(None)],
            &[2, 2],
            Order::Fortran,
            &i,
        )
        .unwrap();
        // Column-major: element (r, c) at r + 4c; rows 2..4, columns 1 and 3.
        assert_eq!(owned(&t), vec![6, 7, 14, 15]);
    }
}
