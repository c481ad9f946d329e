//! Reduction operations: the predefined ones on the types they apply to, and user operations
//! (Rust closures), commutative or not.
//!
//! Every operation is applied as `inout[i] = in[i] ∘ inout[i]`, where `in` holds the
//! contribution of the *lower* ranks: that is the argument order of `MPI_User_function`, and
//! what lets non-commutative operations reduce in rank order. The predefined kernels are
//! plain element loops over slices that the compiler vectorizes.
//!
//! # Standard sections
//! MPI-5.0 §6.9.2 (predefined reduction operations), §6.9.4 (MINLOC and MAXLOC), §6.9.5
//! (user-defined reduction operations).

use std::fmt;
use std::sync::Arc;

use bytemuck::{Pod, Zeroable};

use crate::datatype::Equivalence;
use crate::error::{Error, ErrorClass, Result};

/// A reduction operation (`MPI_Op`).
#[derive(Clone)]
pub enum Op {
    /// `MPI_SUM`: numbers.
    Sum,
    /// `MPI_PROD`: numbers.
    Prod,
    /// `MPI_MIN`: numbers.
    Min,
    /// `MPI_MAX`: numbers.
    Max,
    /// `MPI_LAND`: integers (non-zero is true; the result is 0 or 1).
    LogicalAnd,
    /// `MPI_LOR`: integers.
    LogicalOr,
    /// `MPI_LXOR`: integers.
    LogicalXor,
    /// `MPI_BAND`: integers and bytes.
    BitwiseAnd,
    /// `MPI_BOR`: integers and bytes.
    BitwiseOr,
    /// `MPI_BXOR`: integers and bytes.
    BitwiseXor,
    /// `MPI_MINLOC`: value/index pairs ([`FloatInt`], [`DoubleInt`], [`LongInt`], [`TwoInt`],
    /// [`ShortInt`]); ties take the smaller index.
    MinLoc,
    /// `MPI_MAXLOC`: value/index pairs; ties take the smaller index.
    MaxLoc,
    /// `MPI_REPLACE`: `a ∘ b = b` (the higher rank's value wins). Not commutative.
    Replace,
    /// `MPI_NO_OP`: `a ∘ b = a` (the lower rank's value stays). Not commutative.
    NoOp,
    /// A user-defined operation ([`UserOp`]).
    User(UserOp),
}

impl fmt::Debug for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Op::User(u) => write!(f, "User(commutative: {})", u.commutative),
            other => f.write_str(other.name()),
        }
    }
}

/// A user kernel over bytes.
type UserFn = Arc<dyn Fn(&[u8], &mut [u8]) + Send + Sync>;

/// The element type a byte-level user operation is applied to: a token the front end chose
/// (the C layer passes its `MPI_Datatype`; the typed API passes [`Datatype::RUST_TYPE`]) and
/// the element size in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Datatype {
    /// Opaque to oxmpi; handed to the callback unchanged.
    pub token: usize,
    /// Bytes per element (non-zero).
    pub size: usize,
}

impl Datatype {
    /// The token of elements reduced through the typed API (a Rust type of `size` bytes).
    pub const RUST_TYPE: usize = 0;

    /// The datatype of Rust elements of type `T`.
    pub fn of<T: Equivalence>() -> Datatype {
        Datatype {
            token: Datatype::RUST_TYPE,
            size: std::mem::size_of::<T>(),
        }
    }
}

/// A byte-level user operation (the shape of `MPI_User_function`): `f(in, inout, count,
/// datatype)` must set element `i` of `inout` to `in[i] ∘ inout[i]` for `i < count`, where
/// both slices hold `count` elements of `datatype.size` bytes.
pub type ByteFn = Arc<dyn Fn(&[u8], &mut [u8], usize, Datatype) + Send + Sync>;

/// A byte-level kernel: `inout = in ∘ inout`, both holding whole elements.
#[derive(Clone)]
pub(crate) enum Kernel {
    /// A predefined operation (no allocation per call).
    Fn(KernelFn),
    /// A user operation over typed slices.
    User(UserFn),
    /// A byte-level user operation and the element type it is applied to.
    Bytes(ByteFn, Datatype),
}

impl Kernel {
    /// Applies the kernel: `inout = input ∘ inout`.
    #[inline]
    pub(crate) fn call(&self, input: &[u8], inout: &mut [u8]) {
        match self {
            Kernel::Fn(f) => f(input, inout),
            Kernel::User(f) => f(input, inout),
            Kernel::Bytes(f, dt) => f(input, inout, input.len() / dt.size, *dt),
        }
    }

    /// Whether calling (or dropping) the kernel runs user code, which may call MPI: such
    /// kernels never run inside the progress engine's critical section. Both user forms do
    /// (a C `MPI_User_function` is a [`Kernel::Bytes`]).
    #[inline]
    pub(crate) fn is_user(&self) -> bool {
        matches!(self, Kernel::User(_) | Kernel::Bytes(..))
    }
}

/// What a [`UserOp`] runs.
#[derive(Clone)]
enum UserKind {
    /// A closure over typed slices, for elements of `elem` bytes.
    Typed { f: UserFn, elem: usize },
    /// A byte-level callback, told the element type on every call.
    Bytes(ByteFn),
}

/// A user-defined reduction (`MPI_Op_create`): a Rust closure over typed slices
/// ([`new`](Self::new)) or a byte-level callback ([`from_bytes`](Self::from_bytes)). Both
/// reduce through the same kernel path in every reduction collective.
#[derive(Clone)]
pub struct UserOp {
    f: UserKind,
    commutative: bool,
}

impl UserOp {
    /// An operation on `T`: `f(in, inout)` must set `inout[i] = in[i] ∘ inout[i]` for every
    /// `i` (both slices have the same length). With `commutative == false` oxmpi combines
    /// contributions strictly in rank order; the operation must still be associative.
    pub fn new<T: Equivalence>(
        commutative: bool,
        f: impl Fn(&[T], &mut [T]) + Send + Sync + 'static,
    ) -> Self {
        UserOp {
            f: UserKind::Typed {
                f: Arc::new(move |a: &[u8], b: &mut [u8]| {
                    f(bytemuck::cast_slice(a), bytemuck::cast_slice_mut(b))
                }),
                elem: std::mem::size_of::<T>(),
            },
            commutative,
        }
    }

    /// A byte-level operation (see [`ByteFn`]), usable on elements of any size; the
    /// callback is told the count and element type of every call.
    pub fn from_bytes(commutative: bool, f: ByteFn) -> Self {
        UserOp {
            f: UserKind::Bytes(f),
            commutative,
        }
    }

    /// Whether the operation was declared commutative (`MPI_Op_commutative`).
    pub fn is_commutative(&self) -> bool {
        self.commutative
    }
}

impl Op {
    /// The predefined operations in MPI's order (`MPI_SUM` first, `MPI_NO_OP` last): tables
    /// indexed by [`predefined_index`](Self::predefined_index) follow it.
    pub const PREDEFINED: [Op; 14] = [
        Op::Sum,
        Op::Prod,
        Op::Min,
        Op::Max,
        Op::LogicalAnd,
        Op::LogicalOr,
        Op::LogicalXor,
        Op::BitwiseAnd,
        Op::BitwiseOr,
        Op::BitwiseXor,
        Op::MinLoc,
        Op::MaxLoc,
        Op::Replace,
        Op::NoOp,
    ];

    /// This operation's position in [`PREDEFINED`](Self::PREDEFINED); `None` for a user
    /// operation.
    #[inline]
    pub fn predefined_index(&self) -> Option<usize> {
        Some(match self {
            Op::Sum => 0,
            Op::Prod => 1,
            Op::Min => 2,
            Op::Max => 3,
            Op::LogicalAnd => 4,
            Op::LogicalOr => 5,
            Op::LogicalXor => 6,
            Op::BitwiseAnd => 7,
            Op::BitwiseOr => 8,
            Op::BitwiseXor => 9,
            Op::MinLoc => 10,
            Op::MaxLoc => 11,
            Op::Replace => 12,
            Op::NoOp => 13,
            Op::User(_) => return None,
        })
    }

    /// A user operation on `T` (see [`UserOp::new`]).
    pub fn user<T: Equivalence>(
        commutative: bool,
        f: impl Fn(&[T], &mut [T]) + Send + Sync + 'static,
    ) -> Op {
        Op::User(UserOp::new(commutative, f))
    }

    /// Whether contributions may be combined in any order (`MPI_Op_commutative`).
    pub fn is_commutative(&self) -> bool {
        match self {
            Op::Replace | Op::NoOp => false,
            Op::User(u) => u.commutative,
            _ => true,
        }
    }

    /// The operation's MPI name.
    pub fn name(&self) -> &'static str {
        match self {
            Op::Sum => "MPI_SUM",
            Op::Prod => "MPI_PROD",
            Op::Min => "MPI_MIN",
            Op::Max => "MPI_MAX",
            Op::LogicalAnd => "MPI_LAND",
            Op::LogicalOr => "MPI_LOR",
            Op::LogicalXor => "MPI_LXOR",
            Op::BitwiseAnd => "MPI_BAND",
            Op::BitwiseOr => "MPI_BOR",
            Op::BitwiseXor => "MPI_BXOR",
            Op::MinLoc => "MPI_MINLOC",
            Op::MaxLoc => "MPI_MAXLOC",
            Op::Replace => "MPI_REPLACE",
            Op::NoOp => "MPI_NO_OP",
            Op::User(_) => "user-defined",
        }
    }

    /// The byte kernel applying this operation to elements of `T`, or an
    /// [`ErrorClass::Op`] error when the operation is not defined on `T`.
    pub(crate) fn kernel_for<T: Reducible>(&self) -> Result<Kernel> {
        match self {
            Op::User(u) => {
                let size = std::mem::size_of::<T>();
                match &u.f {
                    UserKind::Typed { f, elem } if *elem == size => Ok(Kernel::User(f.clone())),
                    UserKind::Typed { elem, .. } => Err(Error::new(
                        ErrorClass::Op,
                        format!(
                            "user operation was made for {elem}-byte elements, used on {size}-byte {}",
                            std::any::type_name::<T>()
                        ),
                    )),
                    UserKind::Bytes(f) => Ok(Kernel::Bytes(f.clone(), Datatype::of::<T>())),
                }
            }
            Op::Replace => Ok(Kernel::Fn(|_a, _b| {})),
            Op::NoOp => Ok(Kernel::Fn(|a, b| b.copy_from_slice(a))),
            op => T::kernel(op).map(Kernel::Fn).ok_or_else(|| {
                Error::new(
                    ErrorClass::Op,
                    format!(
                        "{} is not defined on {}",
                        op.name(),
                        std::any::type_name::<T>()
                    ),
                )
            }),
        }
    }
}

/// Combines `input` into `inout` element by element, `inout[i] = input[i] ∘ inout[i]`
/// (`MPI_Reduce_local`). Errors: [`ErrorClass::Count`] if the lengths differ,
/// [`ErrorClass::Op`] if `op` is not defined on `T`.
pub fn reduce_local<T: Reducible>(input: &[T], inout: &mut [T], op: &Op) -> Result<()> {
    if input.len() != inout.len() {
        return Err(Error::new(
            ErrorClass::Count,
            format!(
                "reduce_local: input has {} elements, inout {}",
                input.len(),
                inout.len()
            ),
        ));
    }
    op.kernel_for::<T>()?
        .call(bytemuck::cast_slice(input), bytemuck::cast_slice_mut(inout));
    Ok(())
}

/// Combines `count` elements of `datatype` in `input` into `inout`, `inout[i] = input[i] ∘
/// inout[i]` (`MPI_Reduce_local` on raw memory). Only user operations apply to an element
/// type known by size alone: a predefined `op` is an [`ErrorClass::Op`] error here (use
/// [`reduce_local`] on typed slices). Buffers shorter than `count` elements, or a zero-size
/// datatype, are [`ErrorClass::Count`] / [`ErrorClass::Type`] errors.
pub fn reduce_local_bytes(
    input: &[u8],
    inout: &mut [u8],
    count: usize,
    datatype: Datatype,
    op: &Op,
) -> Result<()> {
    if datatype.size == 0 {
        return Err(Error::new(
            ErrorClass::Type,
            "reduce_local: zero-size datatype",
        ));
    }
    let n = count
        .checked_mul(datatype.size)
        .ok_or_else(|| Error::new(ErrorClass::Count, "reduce_local: count * size overflows"))?;
    if input.len() < n || inout.len() < n {
        return Err(Error::new(
            ErrorClass::Count,
            format!(
                "reduce_local: {count} elements of {} bytes need {n} bytes; input has {}, inout {}",
                datatype.size,
                input.len(),
                inout.len()
            ),
        ));
    }
    let kernel = match op {
        Op::User(UserOp {
            f: UserKind::Bytes(f),
            ..
        }) => Kernel::Bytes(f.clone(), datatype),
        Op::User(UserOp {
            f: UserKind::Typed { f, elem },
            ..
        }) if *elem == datatype.size => Kernel::User(f.clone()),
        op => {
            return Err(Error::new(
                ErrorClass::Op,
                format!(
                    "reduce_local: {} cannot be applied to {}-byte elements of unknown type",
                    op.name(),
                    datatype.size
                ),
            ))
        }
    };
    if n > 0 {
        kernel.call(&input[..n], &mut inout[..n]);
    }
    Ok(())
}

/// A plain kernel function (predefined operations need no allocation per call).
pub(crate) type KernelFn = fn(&[u8], &mut [u8]);

/// Element types reductions apply to: every [`Equivalence`] type, with the predefined
/// operations defined on it. Arrays `[T; N]` reduce element by element.
pub trait Reducible: Equivalence {
    /// The kernel of predefined operation `op` on this type, if it is defined.
    #[doc(hidden)]
    fn kernel(op: &Op) -> Option<KernelFn>;
}

#[inline]
pub(crate) fn zip<T: Pod>(a: &[u8], b: &mut [u8], f: impl Fn(T, T) -> T) {
    let a: &[T] = bytemuck::cast_slice(a);
    let b: &mut [T] = bytemuck::cast_slice_mut(b);
    for (y, &x) in b.iter_mut().zip(a) {
        *y = f(x, *y);
    }
}

macro_rules! int_reducible {
    ($($t:ty),*) => { $(
        impl Reducible for $t {
            fn kernel(op: &Op) -> Option<KernelFn> {
                Some(match op {
                    Op::Sum => |a, b| zip::<$t>(a, b, |x, y| x.wrapping_add(y)),
                    Op::Prod => |a, b| zip::<$t>(a, b, |x, y| x.wrapping_mul(y)),
                    Op::Min => |a, b| zip::<$t>(a, b, |x, y| x.min(y)),
                    Op::Max => |a, b| zip::<$t>(a, b, |x, y| x.max(y)),
                    Op::LogicalAnd => |a, b| zip::<$t>(a, b, |x, y| ((x != 0) & (y != 0)) as $t),
                    Op::LogicalOr => |a, b| zip::<$t>(a, b, |x, y| ((x != 0) | (y != 0)) as $t),
                    Op::LogicalXor => |a, b| zip::<$t>(a, b, |x, y| ((x != 0) ^ (y != 0)) as $t),
                    Op::BitwiseAnd => |a, b| zip::<$t>(a, b, |x, y| x & y),
                    Op::BitwiseOr => |a, b| zip::<$t>(a, b, |x, y| x | y),
                    Op::BitwiseXor => |a, b| zip::<$t>(a, b, |x, y| x ^ y),
                    _ => return None,
                })
            }
        }
    )* };
}
int_reducible!(u8, i8, u16, i16, u32, i32, u64, i64, u128, i128, usize, isize);

macro_rules! float_reducible {
    ($($t:ty),*) => { $(
        impl Reducible for $t {
            fn kernel(op: &Op) -> Option<KernelFn> {
                Some(match op {
                    Op::Sum => |a, b| zip::<$t>(a, b, |x, y| x + y),
                    Op::Prod => |a, b| zip::<$t>(a, b, |x, y| x * y),
                    Op::Min => |a, b| zip::<$t>(a, b, |x, y| x.min(y)),
                    Op::Max => |a, b| zip::<$t>(a, b, |x, y| x.max(y)),
                    _ => return None,
                })
            }
        }
    )* };
}
float_reducible!(f32, f64);

impl<T: Reducible, const N: usize> Reducible for [T; N]
where
    [T; N]: Pod,
{
    fn kernel(op: &Op) -> Option<KernelFn> {
        T::kernel(op)
    }
}

macro_rules! complex_reducible {
    ($($(#[$doc:meta])* $name:ident($t:ty);)*) => { $(
        $(#[$doc])*
        #[repr(C)]
        #[derive(Debug, Clone, Copy, PartialEq, Default, Pod, Zeroable)]
        pub struct $name {
            /// The real part.
            pub re: $t,
            /// The imaginary part.
            pub im: $t,
        }

        impl Equivalence for $name {}

        impl Reducible for $name {
            fn kernel(op: &Op) -> Option<KernelFn> {
                // MPI defines only SUM and PROD on complex numbers (MPI-5.0 §6.9.2).
                Some(match op {
                    Op::Sum => |a, b| zip::<$name>(a, b, |x, y| $name { re: x.re + y.re, im: x.im + y.im }),
                    Op::Prod => |a, b| zip::<$name>(a, b, |x, y| $name {
                        re: x.re * y.re - x.im * y.im,
                        im: x.re * y.im + x.im * y.re,
                    }),
                    _ => return None,
                })
            }
        }
    )* };
}

complex_reducible! {
    /// `MPI_C_FLOAT_COMPLEX`, Fortran `MPI_COMPLEX`: two `f32`.
    Complex32(f32);
    /// `MPI_C_DOUBLE_COMPLEX`, Fortran `MPI_DOUBLE_COMPLEX`: two `f64`.
    Complex64(f64);
}

macro_rules! loc_pair {
    ($(#[$doc:meta] $name:ident { $v:ty, $(@ $mid:ident : $midty:ty,)? $i:ty $(, $pad:ident : $padty:ty)? })*) => { $(
        #[$doc]
        #[repr(C)]
        #[derive(Debug, Clone, Copy, PartialEq, Default, Pod, Zeroable)]
        pub struct $name {
            /// The value compared.
            pub value: $v,
            $( #[doc(hidden)] pub $mid: $midty, )?
            /// Its location (usually a rank or an array index).
            pub index: $i,
            $( #[doc(hidden)] pub $pad: $padty, )?
        }

        impl $name {
            /// A pair.
            pub fn new(value: $v, index: $i) -> Self {
                let mut x: $name = Zeroable::zeroed();
                x.value = value;
                x.index = index;
                x
            }
        }

        impl Equivalence for $name {}

        impl Reducible for $name {
            fn kernel(op: &Op) -> Option<KernelFn> {
                Some(match op {
                    Op::MinLoc => |a, b| zip::<$name>(a, b, |x, y| {
                        if x.value < y.value || (x.value == y.value && x.index < y.index) { x } else { y }
                    }),
                    Op::MaxLoc => |a, b| zip::<$name>(a, b, |x, y| {
                        if x.value > y.value || (x.value == y.value && x.index < y.index) { x } else { y }
                    }),
                    _ => return None,
                })
            }
        }
    )* };
}

loc_pair! {
    /// `MPI_FLOAT_INT`: an `f32` value and an `i32` index.
    FloatInt { f32, i32 }
    /// `MPI_DOUBLE_INT`: an `f64` value and an `i32` index (C layout: 16 bytes).
    DoubleInt { f64, i32, _pad: u32 }
    /// `MPI_LONG_INT`: an `i64` value and an `i32` index (C layout: 16 bytes).
    LongInt { i64, i32, _pad: u32 }
    /// `MPI_2INT`: an `i32` value and an `i32` index.
    TwoInt { i32, i32 }
    /// `MPI_SHORT_INT`: an `i16` value and an `i32` index (C layout: 8 bytes).
    ShortInt { i16, @ _pad: u16, i32 }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn apply<T: Reducible>(op: Op, a: &[T], b: &mut [T]) -> Result<()> {
        let k = op.kernel_for::<T>()?;
        k.call(bytemuck::cast_slice(a), bytemuck::cast_slice_mut(b));
        Ok(())
    }

    #[test]
    fn complex_sum_and_prod_only() {
        let a = [Complex64 { re: 1.0, im: 2.0 }];
        let mut b = [Complex64 { re: 3.0, im: -1.0 }];
        apply(Op::Sum, &a, &mut b).unwrap();
        assert_eq!(b, [Complex64 { re: 4.0, im: 1.0 }]);
        // (1 + 2i)(4 + i) = 2 + 9i
        apply(Op::Prod, &a, &mut b).unwrap();
        assert_eq!(b, [Complex64 { re: 2.0, im: 9.0 }]);
        let mut c = [Complex32 { re: 1.0, im: 1.0 }];
        apply(Op::Prod, &[Complex32 { re: 0.0, im: 1.0 }], &mut c).unwrap();
        assert_eq!(c, [Complex32 { re: -1.0, im: 1.0 }]);
        assert_eq!(
            apply(Op::Max, &a, &mut b).unwrap_err().class(),
            ErrorClass::Op
        );
    }

    #[test]
    fn predefined_ops_on_numbers() {
        let mut b = [1i32, 5, -3, 0];
        apply(Op::Sum, &[2, 2, 2, 2], &mut b).unwrap();
        assert_eq!(b, [3, 7, -1, 2]);
        apply(Op::Max, &[0, 10, 0, 0], &mut b).unwrap();
        assert_eq!(b, [3, 10, 0, 2]);
        apply(Op::LogicalAnd, &[1, 0, 7, 7], &mut b).unwrap();
        assert_eq!(b, [1, 0, 0, 1]);
        apply(Op::LogicalXor, &[1, 1, 0, 0], &mut b).unwrap();
        assert_eq!(b, [0, 1, 0, 1]);
        let mut f = [1.5f64, -2.0];
        apply(Op::Prod, &[2.0, 3.0], &mut f).unwrap();
        assert_eq!(f, [3.0, -6.0]);
        apply(Op::Min, &[0.0, 0.0], &mut f).unwrap();
        assert_eq!(f, [0.0, -6.0]);
        let mut u = [0b1100u8];
        apply(Op::BitwiseXor, &[0b1010], &mut u).unwrap();
        assert_eq!(u, [0b0110]);
        let mut arr = [[1.0f32, 2.0, 3.0]];
        apply(Op::Sum, &[[1.0, 1.0, 1.0]], &mut arr).unwrap();
        assert_eq!(arr, [[2.0, 3.0, 4.0]]);
    }

    #[test]
    fn undefined_combinations_are_op_errors() {
        let e = apply(Op::BitwiseAnd, &[1.0f64], &mut [2.0]).unwrap_err();
        assert_eq!(e.class(), ErrorClass::Op);
        let e = apply(Op::MinLoc, &[1i32], &mut [2]).unwrap_err();
        assert_eq!(e.class(), ErrorClass::Op);
        let e = apply(Op::Sum, &[TwoInt::new(1, 1)], &mut [TwoInt::new(1, 2)]).unwrap_err();
        assert_eq!(e.class(), ErrorClass::Op);
        let wrong = Op::user::<u64>(true, |_, _| {});
        let e = apply(wrong, &[1i32], &mut [2]).unwrap_err();
        assert_eq!(e.class(), ErrorClass::Op);
    }

    #[test]
    fn minloc_maxloc_break_ties_by_index() {
        let mut b = [
            DoubleInt::new(1.0, 3),
            DoubleInt::new(5.0, 9),
            TwoInt::new(0, 0).into_double(),
        ];
        apply(
            Op::MinLoc,
            &[
                DoubleInt::new(1.0, 1),
                DoubleInt::new(6.0, 0),
                DoubleInt::new(-1.0, 4),
            ],
            &mut b,
        )
        .unwrap();
        assert_eq!(b[0], DoubleInt::new(1.0, 1));
        assert_eq!(b[1], DoubleInt::new(5.0, 9));
        assert_eq!(b[2], DoubleInt::new(-1.0, 4));
        let mut m = [TwoInt::new(4, 7)];
        apply(Op::MaxLoc, &[TwoInt::new(4, 2)], &mut m).unwrap();
        assert_eq!(m, [TwoInt::new(4, 2)]);
        assert_eq!(std::mem::size_of::<DoubleInt>(), 16);
        assert_eq!(std::mem::size_of::<ShortInt>(), 8);
    }

    impl TwoInt {
        fn into_double(self) -> DoubleInt {
            DoubleInt::new(self.value as f64, self.index)
        }
    }

    #[test]
    fn replace_noop_and_user_ops_keep_argument_order() {
        let mut b = [1u8, 2];
        apply(Op::Replace, &[9, 9], &mut b).unwrap();
        assert_eq!(b, [1, 2], "the later (inout) operand wins");
        apply(Op::NoOp, &[9, 9], &mut b).unwrap();
        assert_eq!(b, [9, 9], "the earlier (in) operand stays");
        assert!(!Op::Replace.is_commutative() && Op::Sum.is_commutative());
        // 2x2 matrix product, row-major: inout = in · inout.
        let matmul = Op::user::<[i64; 4]>(false, |a, b| {
            for (x, y) in a.iter().zip(b.iter_mut()) {
                *y = [
                    x[0] * y[0] + x[1] * y[2],
                    x[0] * y[1] + x[1] * y[3],
                    x[2] * y[0] + x[3] * y[2],
                    x[2] * y[1] + x[3] * y[3],
                ];
            }
        });
        assert!(!matmul.is_commutative());
        let mut m = [[1i64, 1, 0, 1]];
        apply(matmul, &[[1, 0, 1, 1]], &mut m).unwrap();
        assert_eq!(m, [[1, 1, 1, 2]]);
    }

    #[test]
    fn byte_level_user_ops_see_count_and_datatype() {
        use std::sync::Mutex;
        let seen = Arc::new(Mutex::new(Vec::new()));
        let seen2 = seen.clone();
        // Byte-wise "inout = in - inout" (not commutative), recording each call's arguments.
        let op = Op::User(UserOp::from_bytes(
            false,
            Arc::new(move |a: &[u8], b: &mut [u8], n: usize, dt: Datatype| {
                seen2.lock().unwrap().push((n, dt));
                for (y, x) in b.iter_mut().zip(a) {
                    *y = x.wrapping_sub(*y);
                }
            }),
        ));
        assert!(!op.is_commutative());
        let mut b = [[1u8, 2, 3]; 2];
        apply(op.clone(), &[[10u8, 10, 10]; 2], &mut b).unwrap();
        assert_eq!(b, [[9, 8, 7]; 2]);
        assert_eq!(seen.lock().unwrap()[0], (2, Datatype::of::<[u8; 3]>()));
        // On raw memory with a front end's token.
        let dt = Datatype { token: 77, size: 2 };
        let mut inout = [1u8, 1, 1, 1, 5];
        reduce_local_bytes(&[3, 3, 3, 3, 3], &mut inout, 2, dt, &op).unwrap();
        assert_eq!(
            inout,
            [2, 2, 2, 2, 5],
            "only count * size bytes are touched"
        );
        assert_eq!(seen.lock().unwrap()[1], (2, dt));
        let e = reduce_local_bytes(&[0; 3], &mut [0; 4], 2, dt, &op).unwrap_err();
        assert_eq!(e.class(), ErrorClass::Count);
        let e =
            reduce_local_bytes(&[], &mut [], 0, Datatype { token: 0, size: 0 }, &op).unwrap_err();
        assert_eq!(e.class(), ErrorClass::Type);
        let e = reduce_local_bytes(&[0; 4], &mut [0; 4], 1, Datatype::of::<i32>(), &Op::Sum)
            .unwrap_err();
        assert_eq!(e.class(), ErrorClass::Op, "predefined ops need a Rust type");
        // A typed user op applies at byte level to elements of its own size only.
        let typed = Op::user::<u16>(true, |a, b| {
            for (y, x) in b.iter_mut().zip(a) {
                *y += x
            }
        });
        // u16 storage: the typed closure sees the bytes as u16, which needs their alignment.
        let mut v = [1u16];
        reduce_local_bytes(
            bytemuck::cast_slice(&[2u16]),
            bytemuck::cast_slice_mut(&mut v),
            1,
            Datatype { token: 1, size: 2 },
            &typed,
        )
        .unwrap();
        assert_eq!(v, [3]);
        let e =
            reduce_local_bytes(&[0; 4], &mut [0; 4], 1, Datatype::of::<u32>(), &typed).unwrap_err();
        assert_eq!(e.class(), ErrorClass::Op);
    }
}
