//! Typed buffers for collectives: one value, an array, a slice, a vector or a
//! [`SharedBuffer`](crate::SharedBuffer) of elements, as in rsmpi, so that
//! `world.all_reduce_into(&x, &mut sum, Op::Sum)` works on a single `x` as well as on slices.
//!
//! Unlike [`Buffer`](super::Buffer), these traits keep the element type `T`, which reductions
//! need for their kernel and which lets `bool` and `char` ([`Checked`] types) take part:
//! they travel as their raw form and every received value is checked before the caller sees
//! it (an invalid one is an [`ErrorClass::Type`] error and leaves the buffer unchanged).
//!
//! An array `[T; N]` is `N` elements of `T` (as in rsmpi), so `&[1, 2]` and a `Vec<i32>`
//! agree on `i32`. Single values are the crate's own element types (numbers, `bool`, `char`,
//! [`Complex32`](crate::op::Complex32)…, the MINLOC/MAXLOC pairs); a value of your own
//! [`Equivalence`] type goes as `std::slice::from_ref(&x)`.

use super::{Checked, Equivalence};
use crate::error::{Error, ErrorClass, Result};
use crate::op::Op;

/// An element type collectives carry: every [`Equivalence`] type as itself, and the
/// [`Checked`] types (`bool`, `char`) through their raw form, checked on receipt.
pub trait Element: Copy + 'static {
    /// The form on the wire: `Self` for [`Equivalence`] types, [`Checked::Raw`] otherwise.
    type Raw: Equivalence;
    /// The raw view of values (no copy).
    fn raw(values: &[Self]) -> &[Self::Raw];
    /// The raw view of a buffer to receive into, when every raw value is a value (`None`:
    /// received raw values must be checked first).
    fn raw_mut(values: &mut [Self]) -> Option<&mut [Self::Raw]>;
    /// The value `raw` stands for, or `None` if none.
    fn value_of(raw: Self::Raw) -> Option<Self>;
    /// Whether reduction `op` is allowed on this type (the raw type's kernels decide the
    /// rest): `bool` takes the logical operations, `char` MIN and MAX.
    fn reduces_with(op: &Op) -> bool {
        let _ = op;
        true
    }
}

impl<T: Equivalence> Element for T {
    type Raw = T;
    #[inline]
    fn raw(values: &[T]) -> &[T] {
        values
    }
    #[inline]
    fn raw_mut(values: &mut [T]) -> Option<&mut [T]> {
        Some(values)
    }
    #[inline]
    fn value_of(raw: T) -> Option<T> {
        Some(raw)
    }
}

impl Element for bool {
    type Raw = u8;
    fn raw(values: &[bool]) -> &[u8] {
        bytemuck::cast_slice(values)
    }
    fn raw_mut(_: &mut [bool]) -> Option<&mut [u8]> {
        None
    }
    fn value_of(raw: u8) -> Option<bool> {
        <bool as Checked>::from_raw(raw)
    }
    fn reduces_with(op: &Op) -> bool {
        matches!(op, Op::LogicalAnd | Op::LogicalOr | Op::LogicalXor)
    }
}

impl Element for char {
    type Raw = u32;
    fn raw(values: &[char]) -> &[u32] {
        bytemuck::cast_slice(values)
    }
    fn raw_mut(_: &mut [char]) -> Option<&mut [u32]> {
        None
    }
    fn value_of(raw: u32) -> Option<char> {
        <char as Checked>::from_raw(raw)
    }
    fn reduces_with(op: &Op) -> bool {
        matches!(op, Op::Min | Op::Max)
    }
}

/// Elements of `T` to send: one value, an array, a slice, a vector or a shared buffer.
pub trait Elements<T: Element> {
    /// The elements, in order.
    fn elements(&self) -> &[T];
}

/// Elements of `T` to receive into.
pub trait ElementsMut<T: Element>: Elements<T> {
    /// The elements, in order, to be overwritten.
    fn elements_mut(&mut self) -> &mut [T];
}

impl<T: Element> Elements<T> for [T] {
    #[inline]
    fn elements(&self) -> &[T] {
        self
    }
}
impl<T: Element> ElementsMut<T> for [T] {
    #[inline]
    fn elements_mut(&mut self) -> &mut [T] {
        self
    }
}
impl<T: Element, const N: usize> Elements<T> for [T; N] {
    #[inline]
    fn elements(&self) -> &[T] {
        self
    }
}
impl<T: Element, const N: usize> ElementsMut<T> for [T; N] {
    #[inline]
    fn elements_mut(&mut self) -> &mut [T] {
        self
    }
}
impl<T: Element> Elements<T> for Vec<T> {
    #[inline]
    fn elements(&self) -> &[T] {
        self
    }
}
impl<T: Element> ElementsMut<T> for Vec<T> {
    #[inline]
    fn elements_mut(&mut self) -> &mut [T] {
        self
    }
}
impl<T: Element> Elements<T> for std::borrow::Cow<'_, [T]> {
    #[inline]
    fn elements(&self) -> &[T] {
        self
    }
}
impl<T: Element> Elements<T> for Box<[T]> {
    #[inline]
    fn elements(&self) -> &[T] {
        self
    }
}
impl<T: Element> ElementsMut<T> for Box<[T]> {
    #[inline]
    fn elements_mut(&mut self) -> &mut [T] {
        self
    }
}
impl<T: Equivalence> Elements<T> for crate::memory::SharedBuffer<T> {
    fn elements(&self) -> &[T] {
        self
    }
}
impl<T: Equivalence> ElementsMut<T> for crate::memory::SharedBuffer<T> {
    fn elements_mut(&mut self) -> &mut [T] {
        self
    }
}

macro_rules! single_value {
    ($($t:ty),* $(,)?) => { $(
        impl Elements<$t> for $t {
            #[inline]
            fn elements(&self) -> &[$t] {
                std::slice::from_ref(self)
            }
        }
        impl ElementsMut<$t> for $t {
            #[inline]
            fn elements_mut(&mut self) -> &mut [$t] {
                std::slice::from_mut(self)
            }
        }
    )* };
}
single_value!(u8, i8, u16, i16, u32, i32, u64, i64, u128, i128, usize, isize, f32, f64);
single_value!(bool, char);
single_value!(
    crate::op::Complex32,
    crate::op::Complex64,
    crate::op::FloatInt,
    crate::op::DoubleInt,
    crate::op::LongInt,
    crate::op::TwoInt,
    crate::op::ShortInt,
);

/// Runs `f` on the raw form of `buf`: in place when every raw value is a value, otherwise on
/// a copy whose values are checked before they replace `buf`'s (an invalid one is an
/// [`ErrorClass::Type`] error naming `call`, and `buf` is left unchanged).
#[inline]
pub(crate) fn with_raw_mut<T: Element, R>(
    call: &str,
    buf: &mut [T],
    f: impl FnOnce(&mut [T::Raw]) -> Result<R>,
) -> Result<R> {
    if let Some(raw) = T::raw_mut(buf) {
        return f(raw);
    }
    checked(call, buf, f)
}

#[cold]
fn checked<T: Element, R>(
    call: &str,
    buf: &mut [T],
    f: impl FnOnce(&mut [T::Raw]) -> Result<R>,
) -> Result<R> {
    let mut raw = T::raw(buf).to_vec();
    let r = f(&mut raw)?;
    store_checked(call, &raw, buf)?;
    Ok(r)
}

/// Replaces `dest[..raw.len()]` with the values `raw` stands for, once all are checked: an
/// invalid one is an [`ErrorClass::Type`] error naming `call`, and `dest` is left unchanged.
pub(crate) fn store_checked<T: Element>(call: &str, raw: &[T::Raw], dest: &mut [T]) -> Result<()> {
    let values = checked_values::<T>(call, raw)?;
    dest[..values.len()].copy_from_slice(&values);
    Ok(())
}

/// The values `raw` stands for: an invalid one is an [`ErrorClass::Type`] error naming `call`.
pub(crate) fn checked_values<T: Element>(call: &str, raw: &[T::Raw]) -> Result<Vec<T>> {
    raw.iter()
        .enumerate()
        .map(|(i, &x)| {
            T::value_of(x).ok_or_else(|| {
                Error::new(
                    ErrorClass::Type,
                    format!(
                        "{call}: received element {i} is no valid {}",
                        std::any::type_name::<T>()
                    ),
                )
            })
        })
        .collect()
}

/// A heap buffer of raw elements that a nonblocking or persistent operation on a
/// [`Checked`] type writes into, in place of the user's buffer (see
/// [`CheckedRequest`](crate::request::CheckedRequest)). It is held as a raw pointer, not a
/// `Box`, because the engine writes into it while its owner moves.
pub(crate) struct Stage<R> {
    ptr: std::ptr::NonNull<R>,
    len: usize,
}

impl<R: Equivalence> Stage<R> {
    /// A stage holding a copy of `values`.
    pub(crate) fn new(values: &[R]) -> Stage<R> {
        let b: Box<[R]> = values.into();
        let len = b.len();
        // Box::into_raw never returns null (an empty slice gives a dangling, non-null one).
        let ptr = std::ptr::NonNull::new(Box::into_raw(b).cast::<R>())
            .unwrap_or(std::ptr::NonNull::dangling());
        Stage { ptr, len }
    }

    /// The stage as a slice with any lifetime, for an operation to read and write.
    ///
    /// # Safety
    /// The slice must not be used after the stage is dropped, nor while [`get`](Self::get)
    /// or [`load`](Self::load) runs.
    pub(crate) unsafe fn lend<'x>(&self) -> &'x mut [R] {
        // SAFETY: `ptr`/`len` are the live allocation made in `new`; the caller keeps the
        // borrow inside its lifetime and exclusive, as this function's contract says.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }

    /// The staged raw values (no operation may be writing them).
    pub(crate) fn get(&self) -> &[R] {
        // SAFETY: the allocation lives until drop; the owner calls this only when no
        // operation it lent the stage to is active.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }

    /// Copies `values` in (no operation may be using the stage).
    pub(crate) fn load(&mut self, values: &[R]) {
        // SAFETY: as `get`; `&mut self` and the owner's state rule out other users.
        let dst = unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) };
        dst[..values.len()].copy_from_slice(values);
    }
}

impl<R> Drop for Stage<R> {
    fn drop(&mut self) {
        // SAFETY: the pointer and length came from `Box::into_raw` in `new` and are freed
        // only here; owners complete every operation using the stage before dropping it.
        drop(unsafe {
            Box::from_raw(std::ptr::slice_from_raw_parts_mut(
                self.ptr.as_ptr(),
                self.len,
            ))
        });
    }
}

/// [`ErrorClass::Op`] unless `op` is allowed on `T` (see [`Element::reduces_with`]).
pub(crate) fn check_op<T: Element>(call: &str, op: &Op) -> Result<()> {
    if T::reduces_with(op) {
        Ok(())
    } else {
        Err(Error::new(
            ErrorClass::Op,
            format!(
                "{call}: {} is not defined on {}",
                op.name(),
                std::any::type_name::<T>()
            ),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count<T: Element, S: Elements<T> + ?Sized>(s: &S) -> usize {
        s.elements().len()
    }

    #[test]
    fn single_values_arrays_slices_and_vectors_agree_on_the_element_type() {
        assert_eq!(count(&5i32), 1);
        assert_eq!(count(&[1i32, 2, 3]), 3);
        assert_eq!(count(&vec![1u8; 4]), 4);
        assert_eq!(
            count(&[[1i64; 4]; 2]),
            2,
            "arrays of arrays: elements are arrays"
        );
        assert_eq!(count(&true), 1);
        assert_eq!(count(&['a', 'b'][..]), 2);
        let mut x = 0f64;
        x.elements_mut()[0] = 2.5;
        assert_eq!(x, 2.5);
    }

    #[test]
    fn checked_receipt_rejects_invalid_raw_values_and_leaves_the_buffer() {
        let mut b = [true, false, true];
        let e = with_raw_mut("t", &mut b[..], |raw| {
            raw.copy_from_slice(&[0, 2, 1]);
            Ok(())
        })
        .unwrap_err();
        assert_eq!(e.class(), ErrorClass::Type);
        assert!(e.message().contains("element 1"), "{e}");
        assert_eq!(b, [true, false, true]);
        with_raw_mut("t", &mut b[..], |raw| {
            assert_eq!(raw, &[1, 0, 1], "the raw copy starts as the buffer");
            raw.copy_from_slice(&[0, 1, 0]);
            Ok(())
        })
        .unwrap();
        assert_eq!(b, [false, true, false]);
        let mut c = ['x'];
        let e = with_raw_mut("t", &mut c[..], |raw| {
            raw[0] = 0xD800;
            Ok(())
        })
        .unwrap_err();
        assert_eq!((e.class(), c), (ErrorClass::Type, ['x']));
        let mut n = [7i32];
        with_raw_mut("t", &mut n[..], |raw| {
            raw[0] = -1;
            Ok(())
        })
        .unwrap();
        assert_eq!(n, [-1]);
    }

    #[test]
    fn a_stage_lends_its_memory_and_reads_back_what_was_written() {
        let mut st = Stage::new(&[1u32, 2, 3]);
        assert_eq!(st.get(), &[1, 2, 3]);
        // SAFETY: the lent slice is used and dropped before `get`/`load`/drop of the stage.
        let lent = unsafe { st.lend() };
        lent[1] = 0xD800;
        assert_eq!(st.get(), &[1, 0xD800, 3]);
        let mut dest = ['a', 'b', 'c'];
        let e = store_checked::<char>("t", st.get(), &mut dest).unwrap_err();
        assert_eq!((e.class(), dest), (ErrorClass::Type, ['a', 'b', 'c']));
        st.load(&['x' as u32, 'y' as u32, 'z' as u32]);
        store_checked::<char>("t", &st.get()[..2], &mut dest).unwrap();
        assert_eq!(dest, ['x', 'y', 'c']);
        let empty: Stage<u8> = Stage::new(&[]);
        assert!(empty.get().is_empty());
    }

    #[test]
    fn checked_values_convert_every_value_or_name_the_first_invalid_one() {
        assert_eq!(checked_values::<bool>("t", &[1, 0]).unwrap(), [true, false]);
        assert_eq!(
            checked_values::<char>("t", &[0x41, 0x1F600]).unwrap(),
            ['A', '\u{1F600}']
        );
        assert!(checked_values::<bool>("t", &[]).unwrap().is_empty());
        let e = checked_values::<char>("call", &[0x41, 0x11_0000, 0xD800]).unwrap_err();
        assert_eq!(e.class(), ErrorClass::Type);
        assert!(
            e.message().contains("call") && e.message().contains("element 1"),
            "{e}"
        );
    }

    #[test]
    fn checked_types_allow_only_their_reductions() {
        assert!(check_op::<bool>("t", &Op::LogicalXor).is_ok());
        assert_eq!(
            check_op::<bool>("t", &Op::Sum).unwrap_err().class(),
            ErrorClass::Op
        );
        assert!(check_op::<char>("t", &Op::Max).is_ok());
        assert!(check_op::<char>("t", &Op::LogicalAnd).is_err());
        assert!(check_op::<i32>("t", &Op::Sum).is_ok());
    }
}
