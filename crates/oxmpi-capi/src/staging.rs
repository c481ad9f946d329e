//! Operations through a non-contiguous datatype: the data is packed into a buffer the
//! operation owns before a send starts, and a receive lands in such a buffer and is unpacked
//! into the user's memory when the request completes (every wait/test call, every
//! completion of a persistent request, `MPI_Request_get_status`).
//!
//! The buffers of nonblocking operations live in a per-thread table keyed by request id (the
//! C layer's request table is per thread too). Each entry holds its [`Type`], so
//! `MPI_Type_free` of a pending operation's type is safe. Contiguous datatypes never come
//! here: completions check [`is_empty`] first, one thread-local load.

use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::c_void;

use oxmpi::datatype::pack;
use oxmpi::datatype::Type;
use oxmpi::handle::request::RequestId;
use oxmpi::Status;

/// The staging of one operation.
pub struct Staged {
    ty: Type,
    count: u64,
    user: *mut u8,
    buf: Vec<u8>,
    recv: bool,
    persistent: bool,
}

impl Staged {
    /// A send of `count` elements of `ty` at `user`, packed now into `len` bytes.
    ///
    /// # Safety
    /// Every data byte of the elements must be readable now (and at each start of a
    /// persistent request).
    pub unsafe fn send(
        ty: Type,
        user: *const c_void,
        count: u64,
        len: usize,
        persistent: bool,
    ) -> Staged {
        let mut s = Staged {
            ty,
            count,
            user: user as *mut u8,
            buf: vec![0u8; len],
            recv: false,
            persistent,
        };
        // SAFETY: forwarded from our caller.
        unsafe { s.pack() };
        s
    }

    /// A receive into `count` elements of `ty` at `user` through `len` staged bytes.
    pub fn recv(ty: Type, user: *mut c_void, count: u64, len: usize, persistent: bool) -> Staged {
        Staged {
            ty,
            count,
            user: user.cast(),
            buf: vec![0u8; len],
            recv: true,
            persistent,
        }
    }

    /// The staged bytes, taken (for a send that needs no unpacking).
    pub fn into_bytes(self) -> Vec<u8> {
        self.buf
    }

    /// The staged bytes, read-only.
    pub fn buf_ref(&self) -> &[u8] {
        &self.buf
    }

    /// The staged bytes, for the transport.
    pub fn bytes(&mut self) -> &mut [u8] {
        &mut self.buf
    }

    /// # Safety
    /// The user's data bytes must be readable.
    unsafe fn pack(&mut self) {
        // SAFETY: forwarded; `buf` is ours, distinct from user memory.
        unsafe { pack::pack_raw(&self.ty, self.user, self.count, 0, &mut self.buf) };
    }

    /// Unpacks the first `bytes` received bytes into the user's memory.
    ///
    /// # Safety
    /// The user's data bytes must be writable (the MPI contract while a receive is pending).
    pub unsafe fn unpack(&self, bytes: u64) {
        let n = (bytes as usize).min(self.buf.len());
        // SAFETY: forwarded; `buf` is ours, distinct from user memory.
        unsafe { pack::unpack_raw(&self.ty, self.user, self.count, 0, &self.buf[..n]) };
    }
}

thread_local! {
    static STAGED: RefCell<HashMap<u64, Staged>> = RefCell::new(HashMap::new());
    /// Buffers of requests freed while they may still be in flight: kept, never reused.
    static ORPHANS: RefCell<Vec<Staged>> = const { RefCell::new(Vec::new()) };
}

/// Whether no operation of this thread is staged (the fast path's one check).
#[inline]
pub fn is_empty() -> bool {
    STAGED.with(|s| s.borrow().is_empty())
}

/// The ids of a request array before a completion call, if any operation is staged (empty
/// otherwise, so the common case copies nothing).
pub fn snapshot(ids: &[RequestId]) -> Vec<RequestId> {
    if is_empty() {
        Vec::new()
    } else {
        ids.to_vec()
    }
}

/// Keeps `s` with request `id` until the request completes (is freed, if persistent).
pub fn hold(id: RequestId, s: Staged) {
    if !id.is_null() {
        STAGED.with(|t| t.borrow_mut().insert(id.to_raw(), s));
    }
}

/// Request `id` completed with `st`: a receive is unpacked; a non-persistent operation's
/// buffer is dropped (`keep`: `MPI_Request_get_status`, which leaves the request).
pub fn completed(id: RequestId, st: &Status, keep: bool) {
    if id.is_null() || is_empty() {
        return;
    }
    STAGED.with(|t| {
        let mut t = t.borrow_mut();
        let raw = id.to_raw();
        if let Some(s) = t.get(&raw) {
            if s.recv
                && st
                    .error()
                    .map_or(true, |c| c == oxmpi::ErrorClass::Truncate)
                && !st.cancelled()
            {
                // SAFETY: the receive was pending on this memory, which the caller keeps
                // valid and writable until completion (the MPI contract).
                unsafe { s.unpack(st.bytes()) };
            }
            if !s.persistent && !keep {
                t.remove(&raw);
            }
        }
    });
}

/// Persistent request `id` is about to start: a send repacks the user's current data.
pub fn starting(id: RequestId) {
    if id.is_null() || is_empty() {
        return;
    }
    STAGED.with(|t| {
        if let Some(s) = t.borrow_mut().get_mut(&id.to_raw()) {
            if !s.recv {
                // SAFETY: the user's send buffer is readable while the request is active.
                unsafe { s.pack() };
            }
        }
    });
}

/// Request `id` was freed (`MPI_Request_free`): its buffer may still be in use by the
/// engine, so it is kept aside for good unless `done`.
pub fn freed(id: RequestId, done: bool) {
    if id.is_null() || is_empty() {
        return;
    }
    let s = STAGED.with(|t| t.borrow_mut().remove(&id.to_raw()));
    if let (Some(s), false) = (s, done) {
        ORPHANS.with(|o| o.borrow_mut().push(s));
    }
}
