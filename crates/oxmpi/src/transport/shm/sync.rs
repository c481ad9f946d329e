//! The synchronization primitives of the shm ring: std's in production, loom's when built with
//! `RUSTFLAGS="--cfg oxmpi_loom"`, so that the very code that runs between processes is the code the
//! model checker explores (crossbeam's and tokio's practice; see `scripts/check-unsafe`).
//!
//! Under loom the types are larger than in production, so a ring built with them can only live
//! in ordinary memory: the loom tests build their rings on the heap, never in a segment.

#[cfg(oxmpi_loom)]
pub(crate) use loom::sync::atomic::{AtomicU32, AtomicU64, Ordering};
#[cfg(not(oxmpi_loom))]
pub(crate) use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// Bytes handed between threads (or processes) by a protocol rather than by atomics.
///
/// In production this is a transparent `UnsafeCell<T>`: the same bytes as `T`, so it can sit in
/// a shared mapping. Under loom it is loom's cell, and taking a pointer records an access: loom
/// then fails any execution in which that access is not ordered after the last conflicting one.
#[cfg(not(oxmpi_loom))]
#[repr(transparent)]
pub(crate) struct RacyCell<T>(std::cell::UnsafeCell<T>);

#[cfg(not(oxmpi_loom))]
impl<T> RacyCell<T> {
    /// A cell holding `value`.
    #[cfg(test)]
    pub(crate) fn new(value: T) -> Self {
        RacyCell(std::cell::UnsafeCell::new(value))
    }

    /// A pointer for reading the bytes (the caller is about to read them).
    #[inline(always)]
    pub(crate) fn read_ptr(&self) -> *const T {
        self.0.get()
    }

    /// A pointer for writing the bytes (the caller is about to write them).
    #[inline(always)]
    pub(crate) fn write_ptr(&self) -> *mut T {
        self.0.get()
    }
}

#[cfg(oxmpi_loom)]
pub(crate) struct RacyCell<T>(loom::cell::UnsafeCell<T>);

#[cfg(oxmpi_loom)]
impl<T> RacyCell<T> {
    /// A cell holding `value` (inside a loom model only).
    #[cfg(test)]
    pub(crate) fn new(value: T) -> Self {
        RacyCell(loom::cell::UnsafeCell::new(value))
    }

    /// A pointer for reading; loom checks the read now, when the caller is about to do it.
    pub(crate) fn read_ptr(&self) -> *const T {
        self.0.with(|p| p)
    }

    /// A pointer for writing; loom checks the write now, when the caller is about to do it.
    pub(crate) fn write_ptr(&self) -> *mut T {
        self.0.with_mut(|p| p)
    }
}
