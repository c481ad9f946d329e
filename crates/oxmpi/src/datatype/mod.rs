//! Typed buffers: which Rust values can travel in a message, viewed as bytes.
//!
//! A type is [`Equivalence`] when every bit pattern is a valid value and it has no padding
//! (`bytemuck::Pod`): then a received message can be written straight into it. `bool` and
//! `char` are [`Checked`]: they are sent as their bytes like any other value, and received
//! through a check, because not every byte pattern is a valid `bool` or `char`.
//!
//! # Standard sections
//! MPI-5.0 §3.2.2 (message data), §5 (datatypes).
//!
//! # The datatype engine
//! - [`predefined`]: every predefined datatype of the MPI-5.0 ABI;
//! - [`build`]: the constructors ([`Type`]);
//! - [`layout`]: the compiled form (runs, loops kept as loops);
//! - [`signature`]: type signatures, matching and element counts;
//! - [`pack`]: pack/unpack (resumable at any byte offset), iovec pieces, pack_size;
//! - [`external32`]: the canonical big-endian representation;
//! - [`envelope`]: get_envelope/get_contents, match_size, the f90 types;
//! - [`ops`]: the run-time (op, datatype) → kernel table and reductions on derived types.
//!
//! [`Datatyped`] says which Rust types have a datatype (every [`Equivalence`] type, and
//! structs with `#[derive(oxmpi::Equivalence)]`); `handle::datatype` gives types as ids.
//!
//! # For the transports and protocols
//! A [`Type`] is immutable and shared: an operation keeps a clone for as long as it runs.
//! [`Type::is_contiguous`] says when `count` elements are one plain byte range (then nothing
//! changes from today's path). Otherwise [`pack::pack_raw`] / [`pack::unpack_raw`] move
//! packed bytes `k..k + n` of the stream between the user's elements and any slice (a ring
//! cell, a pool block, a pipelined chunk), resuming at `k` in O(depth) without replaying the
//! bytes before it; [`pack::pieces`] lists the contiguous `(offset, len)` runs of a byte
//! range, for `process_vm_readv`/`writev` iovecs; [`Type::check_match`] compares send and
//! receive signatures.

use bytemuck::Pod;

pub mod build;
pub mod elements;
pub mod envelope;
pub mod external32;
pub mod layout;
pub mod ops;
pub mod pack;
pub mod predefined;
#[cfg(test)]
mod reference;
pub mod signature;

pub use build::{Bounds, Combiner, Distribution, Order, Type};
pub use elements::{Element, Elements, ElementsMut};
pub use predefined::Predefined;

/// A type whose values can be sent and received as raw bytes.
pub trait Equivalence: Pod {
    /// Its MPI datatype: the predefined type for numbers, a contiguous type for arrays, and
    /// `size_of::<Self>()` bytes (`MPI_BYTE`) unless an implementation says better.
    fn equivalent_datatype() -> Type {
        Type::contiguous(
            std::mem::size_of::<Self>() as i64,
            &Type::predefined(Predefined::BYTE),
        )
        .unwrap_or_else(|e| unreachable!("a Rust type's size is a valid count: {e}"))
    }
}

macro_rules! equivalence {
    ($($t:ty),*) => { $(
        impl Equivalence for $t {
            fn equivalent_datatype() -> Type {
                Type::of::<$t>()
            }
        }
    )* };
}
equivalence!(u8, i8, u16, i16, u32, i32, u64, i64, usize, isize, f32, f64);
impl Equivalence for u128 {}
impl Equivalence for i128 {}

impl<T: Equivalence, const N: usize> Equivalence for [T; N]
where
    [T; N]: Pod,
{
    fn equivalent_datatype() -> Type {
        Type::contiguous(N as i64, &T::equivalent_datatype())
            .unwrap_or_else(|e| unreachable!("an array length is a valid count: {e}"))
    }
}

/// A Rust type with an MPI datatype describing its bytes: every [`Equivalence`] type, and
/// structs with `#[derive(oxmpi::Equivalence)]` (which may have padding: their datatype
/// lists only the fields).
///
/// # Safety
/// [`datatype`](Self::datatype) must list only bytes inside a value (offsets in
/// `0..size_of::<Self>()`) that are initialized in every value and accept every bit pattern,
/// and must have extent `size_of::<Self>()`: sends read those bytes and receives write them.
pub unsafe trait Datatyped: Sized {
    /// The datatype of one value.
    fn datatype() -> Type;
}

// SAFETY: an `Equivalence` type is `Pod` (no padding, every bit pattern valid) and its
// `equivalent_datatype` covers its own bytes with extent `size_of::<Self>()`.
unsafe impl<T: Equivalence> Datatyped for T {
    fn datatype() -> Type {
        T::equivalent_datatype()
    }
}

/// A type only some of whose bit patterns are values (`bool`, `char`): sent as bytes, received
/// into its raw form and checked (see `Communicator::receive_into_checked`).
pub trait Checked: bytemuck::NoUninit {
    /// The raw form with the same size, in which every bit pattern is valid.
    type Raw: Equivalence;
    /// The value a raw element stands for, or `None` if it stands for none.
    fn from_raw(raw: Self::Raw) -> Option<Self>;
}

impl Checked for bool {
    type Raw = u8;
    fn from_raw(raw: u8) -> Option<bool> {
        match raw {
            0 => Some(false),
            1 => Some(true),
            _ => None,
        }
    }
}

impl Checked for char {
    type Raw = u32;
    fn from_raw(raw: u32) -> Option<char> {
        char::from_u32(raw)
    }
}

macro_rules! checked_buffer {
    ($($t:ty),*) => { $(
        impl Buffer for $t {
            fn bytes(&self) -> &[u8] {
                bytemuck::bytes_of(self)
            }
            fn element_size(&self) -> usize {
                std::mem::size_of::<$t>()
            }
        }
        impl Buffer for [$t] {
            fn bytes(&self) -> &[u8] {
                bytemuck::cast_slice(self)
            }
            fn element_size(&self) -> usize {
                std::mem::size_of::<$t>()
            }
        }
        impl Buffer for Vec<$t> {
            fn bytes(&self) -> &[u8] {
                bytemuck::cast_slice(self)
            }
            fn element_size(&self) -> usize {
                std::mem::size_of::<$t>()
            }
        }
        impl<const N: usize> Buffer for [$t; N] {
            fn bytes(&self) -> &[u8] {
                bytemuck::cast_slice(self)
            }
            fn element_size(&self) -> usize {
                std::mem::size_of::<$t>()
            }
        }
    )* };
}
checked_buffer!(bool, char);

/// Something that can be sent: one value, an array, a slice or a vector of [`Equivalence`]
/// (or of a [`Checked`] type).
pub trait Buffer {
    /// The bytes to send.
    fn bytes(&self) -> &[u8];
    /// Size of one element in bytes (for element counts in statuses).
    fn element_size(&self) -> usize;
}

/// Something a message can be received into.
pub trait BufferMut {
    /// The bytes to fill.
    fn bytes_mut(&mut self) -> &mut [u8];
    /// Size of one element in bytes.
    fn element_size(&self) -> usize;
}

impl<T: Equivalence> Buffer for T {
    fn bytes(&self) -> &[u8] {
        bytemuck::bytes_of(self)
    }
    fn element_size(&self) -> usize {
        std::mem::size_of::<T>()
    }
}

impl<T: Equivalence> Buffer for [T] {
    fn bytes(&self) -> &[u8] {
        bytemuck::cast_slice(self)
    }
    fn element_size(&self) -> usize {
        std::mem::size_of::<T>()
    }
}

impl<T: Equivalence> Buffer for Vec<T> {
    fn bytes(&self) -> &[u8] {
        bytemuck::cast_slice(self)
    }
    fn element_size(&self) -> usize {
        std::mem::size_of::<T>()
    }
}

impl<T: Equivalence> BufferMut for T {
    fn bytes_mut(&mut self) -> &mut [u8] {
        bytemuck::bytes_of_mut(self)
    }
    fn element_size(&self) -> usize {
        std::mem::size_of::<T>()
    }
}

impl<T: Equivalence> BufferMut for [T] {
    fn bytes_mut(&mut self) -> &mut [u8] {
        bytemuck::cast_slice_mut(self)
    }
    fn element_size(&self) -> usize {
        std::mem::size_of::<T>()
    }
}

impl<T: Equivalence> BufferMut for Vec<T> {
    fn bytes_mut(&mut self) -> &mut [u8] {
        bytemuck::cast_slice_mut(self)
    }
    fn element_size(&self) -> usize {
        std::mem::size_of::<T>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checked_types_send_their_bytes_and_reject_invalid_raw_values() {
        assert_eq!([true, false][..].bytes(), &[1, 0]);
        assert_eq!('A'.bytes(), &65u32.to_ne_bytes());
        assert_eq!(bool::from_raw(2), None);
        assert_eq!(bool::from_raw(1), Some(true));
        assert_eq!(char::from_raw(0xD800), None, "surrogate");
        assert_eq!(char::from_raw(0x1F600), Some('😀'));
    }

    #[test]
    fn views_are_native_bytes() {
        let v = vec![1u32, 2];
        assert_eq!(v.bytes(), &[1, 0, 0, 0, 2, 0, 0, 0]);
        assert_eq!(Buffer::element_size(&v), 4);
        let mut x = 0f64;
        x.bytes_mut().copy_from_slice(&1.5f64.to_ne_bytes());
        assert_eq!(x, 1.5);
        let a = [[1u8, 2]; 3];
        assert_eq!(a[..].bytes().len(), 6);
        assert_eq!(Buffer::element_size(&a[..]), 2);
    }
}
