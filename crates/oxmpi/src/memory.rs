//! Message memory (`MPI_Alloc_mem`): buffers in this rank's shared arena, which peers on the
//! host read with a plain copy during large transfers instead of a `process_vm_readv`.
//!
//! # Standard sections
//! MPI-5.0 §9.2 (memory allocation).

use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;
use std::sync::Arc;

use crate::datatype::Equivalence;
use crate::error::{ErrorClass, Result};
use crate::runtime::Runtime;

/// `len` values of `T` in message memory; dereferences to a slice. Freed on drop.
pub struct SharedBuffer<T: Equivalence> {
    rt: Arc<Runtime>,
    ptr: NonNull<T>,
    len: usize,
    /// Set when no arena exists (no peer on this host): ordinary heap memory.
    heap: Option<Vec<T>>,
}

impl<T: Equivalence> SharedBuffer<T> {
    pub(crate) fn new(rt: Arc<Runtime>, len: usize) -> Result<Self> {
        let bytes = len
            .checked_mul(std::mem::size_of::<T>())
            .ok_or_else(|| crate::Error::new(ErrorClass::NoMem, "alloc_mem: size overflows"))?;
        match rt.engine.with(|e| match e.node() {
            Some(n) => n.alloc_mem(bytes),
            None => Err(crate::Error::new(
                ErrorClass::NoMem,
                "alloc_mem: no shared-memory transport (no peer on this host)",
            )),
        }) {
            Ok(p) => {
                // SAFETY: the arena returned `bytes` writable bytes aligned to 64 (enough for any
                // Equivalence type); zero is a valid value of every Pod type.
                unsafe { p.write_bytes(0, bytes) };
                let ptr = NonNull::new(p.cast::<T>()).expect("arena pointers are non-null");
                Ok(SharedBuffer {
                    rt,
                    ptr,
                    len,
                    heap: None,
                })
            }
            Err(e) if e.message().contains("no shared-memory transport") => {
                let mut v = vec![T::zeroed(); len];
                let ptr = NonNull::new(v.as_mut_ptr()).unwrap_or(NonNull::dangling());
                Ok(SharedBuffer {
                    rt,
                    ptr,
                    len,
                    heap: Some(v),
                })
            }
            Err(e) => Err(e),
        }
    }

    /// Whether the buffer lives in the shared arena (false: ordinary heap fallback).
    pub fn is_shared(&self) -> bool {
        self.heap.is_none()
    }
}

impl<T: Equivalence> Deref for SharedBuffer<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        // SAFETY: `ptr` points to `len` initialized values owned by this buffer.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl<T: Equivalence> DerefMut for SharedBuffer<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        // SAFETY: as above, and `&mut self` makes the access exclusive in this process; peers
        // only read the buffer while a send from it is in flight, which borrows it.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl<T: Equivalence> Drop for SharedBuffer<T> {
    fn drop(&mut self) {
        if self.heap.is_none() {
            let bytes = self.len * std::mem::size_of::<T>();
            let p = self.ptr.as_ptr().cast::<u8>();
            self.rt.engine.with(|e| {
                if let Some(n) = e.node() {
                    n.free_mem(p, bytes);
                }
            });
        }
    }
}

impl<T: Equivalence + std::fmt::Debug> std::fmt::Debug for SharedBuffer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedBuffer")
            .field("len", &self.len)
            .field("shared", &self.is_shared())
            .finish()
    }
}
