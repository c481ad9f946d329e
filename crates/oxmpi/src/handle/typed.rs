//! An operation through a non-contiguous datatype: the data is packed into a buffer the
//! operation owns before a send starts, and a receive lands in such a buffer and is unpacked
//! into the user's memory when the request completes. Point-to-point operations that the
//! engine moves as pieces or packs chunk by chunk ([`Staged::send_pieces`],
//! [`Staged::recv_pieces`]: large ones, and eager-size ones it packs straight into the
//! transport and unpacks straight out of it) own no buffer at all: they pass the engine a key
//! ([`Staged::ptr`]) and the engine allocates packed bytes only on a path that needs them.
//!
//! [`Staged`] is one operation's buffer, holding its [`Type`] (so freeing the datatype's
//! handle while the operation is pending is safe). [`StagedOps`] keeps the buffers of
//! nonblocking operations by request id, next to a request table ([`super::request::Requests`]):
//! its owner tells it when a request is created ([`StagedOps::hold`]), started
//! ([`StagedOps::starting`]: persistent sends repack), completed ([`StagedOps::completed`]:
//! receives unpack) and freed ([`StagedOps::freed`]). Contiguous datatypes never come here;
//! with nothing staged every hook returns after one `is_empty` check, so the byte path pays
//! nothing.
//!
//! # Standard sections
//! MPI-5.0 §3.3 (data type matching), §3.7.3 (completion), §5.1.4 (derived datatypes in
//! communication).

use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::Arc;

use super::request::RequestId;
use crate::datatype::build::Type;
use crate::datatype::pack;
use crate::error::ErrorClass;
use crate::p2p::iov::{Chunked, IovDesc, Seg};
use crate::p2p::progress::EngineCell;
use crate::p2p::request::Status;

/// The staging buffer of one operation through a datatype.
pub struct Staged {
    /// The data as pieces or a chunk packer, registered with the engine; such an operation
    /// has no `buf` (the descriptor allocates packed bytes if a path needs them).
    iov: Option<Arc<IovDesc>>,
    ty: Type,
    count: u64,
    user: *mut u8,
    buf: Vec<u8>,
    recv: bool,
    persistent: bool,
}

// SAFETY: `user` is an address the MPI caller lent for the operation; the buffer is only
// touched by the thread that completes the request, as with the plain byte path.
unsafe impl Send for Staged {}

impl Staged {
    /// A send of `count` elements of `ty` at `user`, packed now into `len` bytes (`len` is
    /// `count × ty.size()`).
    ///
    /// # Safety
    /// Every data byte of the elements must be readable now (and at each start of a
    /// persistent request), none of them inside the new buffer (which is ours).
    pub unsafe fn send(
        ty: Type,
        user: *const c_void,
        count: u64,
        len: usize,
        persistent: bool,
    ) -> Staged {
        let mut s = Staged {
            iov: None,
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
            iov: None,
            ty,
            count,
            user: user.cast(),
            buf: vec![0u8; len],
            recv: true,
            persistent,
        }
    }

    /// A point-to-point send of `count` elements of `ty` at `user` (`len` packed bytes).
    /// When `engine` wants this message as pieces (large, with large contiguous blocks) or
    /// packed chunk by chunk as it is pushed (large, fine-grained), it is registered with the
    /// engine and nothing is packed or allocated now (a path that needs the packed bytes
    /// gathers them itself); otherwise it is packed now, as [`send`](Self::send). Either way
    /// the operation's bytes are [`ptr`](Self::ptr) and [`len`](Self::len).
    ///
    /// # Safety
    /// As for [`send`](Self::send), and the data stays readable until the send completes.
    pub unsafe fn send_pieces(
        ty: Type,
        user: *const c_void,
        count: u64,
        len: usize,
        engine: &EngineCell,
    ) -> Staged {
        match Self::pieces(&ty, user.cast(), count, len, true, engine) {
            Some(segs) => Self::registered(ty, user.cast_mut(), count, len, segs, false, engine),
            // SAFETY: forwarded from our caller.
            None => unsafe { Staged::send(ty, user, count, len, false) },
        }
    }

    /// A point-to-point receive into `count` elements of `ty` at `user`: registered with
    /// `engine` as pieces or as a chunk unpacker when it wants them (a rendezvous then
    /// scatters straight into the user's memory, and no staging buffer exists unless a
    /// path needs one), as [`recv`](Self::recv) otherwise.
    pub fn recv_pieces(
        ty: Type,
        user: *mut c_void,
        count: u64,
        len: usize,
        engine: &EngineCell,
    ) -> Staged {
        match Self::pieces(&ty, user.cast_const().cast(), count, len, false, engine) {
            Some(segs) => Self::registered(ty, user, count, len, segs, true, engine),
            None => Staged::recv(ty, user, count, len, false),
        }
    }

    /// An operation registered with `engine` as `segs` (pieces) or, for `None`, as a chunk
    /// packer: it owns no bytes.
    fn registered(
        ty: Type,
        user: *mut c_void,
        count: u64,
        len: usize,
        segs: Option<Vec<Seg>>,
        recv: bool,
        engine: &EngineCell,
    ) -> Staged {
        let chunks = Box::new(TypedChunks {
            ty: ty.clone(),
            user: user.cast(),
            count,
        });
        let d = match segs {
            // A receive also unpacks a packing sender's chunks as they arrive.
            Some(segs) if recv => IovDesc::pieces_and_chunks(len, segs, chunks),
            Some(segs) => IovDesc::new(len, segs),
            None => IovDesc::chunked(len, chunks),
        };
        engine.with(|e| e.register_iov(d.clone()));
        Staged {
            iov: Some(d),
            ty,
            count,
            user: user.cast(),
            buf: Vec::new(),
            recv,
            persistent: false,
        }
    }

    /// How `engine` wants `count` elements of `ty` at `user` moved: `Some(Some(pieces))`
    /// as pieces (absolute addresses, `MPI_BOTTOM` for a null `user`), `Some(None)` packed
    /// chunk by chunk (straight into the transport's fragments, or as pushed), `None` packed
    /// whole (the smallest messages; large ones without the policy).
    fn pieces(
        ty: &Type,
        user: *const u8,
        count: u64,
        len: usize,
        send: bool,
        engine: &EngineCell,
    ) -> Option<Option<Vec<Seg>>> {
        if ty.is_contiguous() {
            return None;
        }
        let estimate = ty.layout().pieces().saturating_mul(count);
        let (iov, chunks) =
            engine.with(|e| (e.wants_iov(len, estimate, send), e.wants_chunks(len)));
        if !iov {
            return chunks.then_some(None);
        }
        let (p, n) = pack::pieces(ty, count, 0, len as u64, usize::MAX);
        if n != len as u64 {
            return chunks.then_some(None);
        }
        let base = if user.is_null() {
            0
        } else {
            user.expose_provenance() as i64
        };
        Some(Some(
            p.into_iter()
                .map(|(off, l)| Seg {
                    addr: base.wrapping_add(off) as u64,
                    len: l,
                })
                .collect(),
        ))
    }

    /// The address to pass for the operation's bytes: the staged bytes, or for an operation
    /// registered with the engine its key, which only the engine resolves (never read or
    /// write it, nor make a slice of it).
    pub fn ptr(&mut self) -> *mut u8 {
        match &self.iov {
            Some(d) => d.key(),
            None => self.buf.as_mut_ptr(),
        }
    }

    /// The operation's packed length in bytes.
    pub fn len(&self) -> usize {
        match &self.iov {
            Some(d) => d.len(),
            None => self.buf.len(),
        }
    }

    /// Whether the operation has no bytes.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the operation is registered with the engine (it owns no staged bytes; see
    /// [`ptr`](Self::ptr)).
    pub fn is_registered(&self) -> bool {
        self.iov.is_some()
    }

    /// The staged bytes, taken (a send that needs no unpacking; not a registered one).
    pub fn into_bytes(self) -> Vec<u8> {
        debug_assert!(self.iov.is_none(), "a registered operation owns no bytes");
        self.buf
    }

    /// The staged bytes, read-only (not a registered operation's).
    pub fn buf_ref(&self) -> &[u8] {
        debug_assert!(self.iov.is_none(), "a registered operation owns no bytes");
        &self.buf
    }

    /// The staged bytes, for the transport (not a registered operation's).
    pub fn bytes(&mut self) -> &mut [u8] {
        debug_assert!(self.iov.is_none(), "a registered operation owns no bytes");
        &mut self.buf
    }

    /// # Safety
    /// The user's data bytes must be readable.
    unsafe fn pack(&mut self) {
        // SAFETY: forwarded; `buf` is ours, distinct from user memory. A short pack leaves
        // zeros, but `buf` has exactly `count × size` bytes.
        unsafe { pack::pack_raw(&self.ty, self.user, self.count, 0, &mut self.buf) };
    }

    /// Unpacks the first `bytes` staged bytes (all of them if fewer) into the user's memory;
    /// bytes of the user's buffer outside the type map are left untouched.
    ///
    /// # Safety
    /// The user's data bytes must be writable (the MPI contract while a receive is pending),
    /// none of them inside the staged buffer.
    pub unsafe fn unpack(&self, bytes: u64) {
        let n = usize::try_from(bytes).unwrap_or(usize::MAX);
        let data = match &self.iov {
            // The data went straight into the user's memory.
            Some(d) if d.direct() => return,
            // SAFETY: the receive completed: nothing writes its packed bytes any more. None
            // allocated: no byte arrived.
            Some(d) => match unsafe { d.packed(n) } {
                Some(p) => p,
                None => return,
            },
            None => &self.buf[..n.min(self.buf.len())],
        };
        // SAFETY: forwarded; the packed bytes are ours, distinct from user memory.
        unsafe { pack::unpack_raw(&self.ty, self.user, self.count, 0, data) };
    }
}

/// `count` elements of `ty` at `user`, packed and unpacked a chunk at a time.
struct TypedChunks {
    ty: Type,
    user: *mut u8,
    count: u64,
}

// SAFETY: `user` is the address of memory the MPI caller lent to one pending operation; the
// engine calls the packer only while that operation is pending, from whichever thread
// drives it (under the engine's lock at thread levels that share it), as with the plain
// byte path's buffer pointers.
unsafe impl Send for TypedChunks {}
// SAFETY: as for `Send`: the calls read the type and the address only.
unsafe impl Sync for TypedChunks {}

impl Chunked for TypedChunks {
    unsafe fn pack(&self, start: u64, out: &mut [u8]) {
        // SAFETY: forwarded (the operation's data is readable); `out` is the engine's own.
        unsafe { pack::pack_raw(&self.ty, self.user, self.count, start, out) };
    }

    unsafe fn unpack(&self, start: u64, data: &[u8]) {
        // SAFETY: forwarded (the operation's data is writable); `data` is the engine's own.
        unsafe { pack::unpack_raw(&self.ty, self.user, self.count, start, data) };
    }
}

/// The staged operations of one request table, by request id.
#[derive(Default)]
pub struct StagedOps {
    live: HashMap<u64, Staged>,
    /// Buffers of requests freed while they may still be in flight: kept, never reused.
    orphans: Vec<Staged>,
}

impl StagedOps {
    /// An empty table.
    pub fn new() -> StagedOps {
        StagedOps::default()
    }

    /// How many operations are staged.
    pub fn len(&self) -> usize {
        self.live.len()
    }

    /// Whether no operation is staged (the fast path's one check).
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.live.is_empty()
    }

    /// The ids of a request array before a completion call, if any operation is staged
    /// (empty otherwise, so the common case copies nothing).
    pub fn snapshot(&self, ids: &[RequestId]) -> Vec<RequestId> {
        if self.is_empty() {
            Vec::new()
        } else {
            ids.to_vec()
        }
    }

    /// Keeps `s` with request `id` until the request completes (is freed, if persistent).
    pub fn hold(&mut self, id: RequestId, s: Staged) {
        if !id.is_null() {
            self.live.insert(id.to_raw(), s);
        }
    }

    /// Request `id` completed with `st`: a receive is unpacked (a truncated one as far as
    /// it got, a cancelled or failed one not at all); a non-persistent operation's buffer is
    /// dropped unless `keep` (`MPI_Request_get_status`, which leaves the request).
    pub fn completed(&mut self, id: RequestId, st: &Status, keep: bool) {
        if id.is_null() || self.is_empty() {
            return;
        }
        let raw = id.to_raw();
        if let Some(s) = self.live.get(&raw) {
            let ok = !matches!(st.error(), Some(c) if c != ErrorClass::Truncate);
            if s.recv && ok && !st.cancelled() {
                // SAFETY: the receive was pending on this memory, which the caller keeps
                // valid and writable until completion (the MPI contract).
                unsafe { s.unpack(st.bytes()) };
            }
            if !s.persistent && !keep {
                self.live.remove(&raw);
            }
        }
    }

    /// Persistent request `id` is about to start: a send repacks the user's current data.
    pub fn starting(&mut self, id: RequestId) {
        if id.is_null() || self.is_empty() {
            return;
        }
        if let Some(s) = self.live.get_mut(&id.to_raw()) {
            if !s.recv {
                // SAFETY: the user's send buffer is readable while the request is active.
                unsafe { s.pack() };
            }
        }
    }

    /// Request `id` was freed: its buffer goes unless the operation may still be in flight
    /// (`done` false), when it is kept aside for good.
    pub fn freed(&mut self, id: RequestId, done: bool) {
        if id.is_null() || self.is_empty() {
            return;
        }
        if let (Some(s), false) = (self.live.remove(&id.to_raw()), done) {
            self.orphans.push(s);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datatype::predefined::Predefined;

    fn vec4() -> Type {
        Type::vector(4, 1, 2, &Type::predefined(Predefined::DOUBLE)).unwrap()
    }

    fn status(bytes: u64) -> Status {
        Status {
            bytes,
            ..Status::default()
        }
    }

    #[test]
    fn a_send_packs_the_strided_elements() {
        let a: Vec<f64> = (0..8).map(f64::from).collect();
        // SAFETY: `a` holds the vector's 7-element span.
        let s = unsafe { Staged::send(vec4(), a.as_ptr().cast(), 1, 32, false) };
        let got: Vec<f64> = s
            .buf_ref()
            .chunks_exact(8)
            .map(|c| f64::from_ne_bytes(c.try_into().unwrap()))
            .collect();
        assert_eq!(got, [0.0, 2.0, 4.0, 6.0]);
    }

    #[test]
    fn a_receive_unpacks_at_completion_leaving_gaps() {
        let mut b = vec![-1.0f64; 8];
        let mut ops = StagedOps::new();
        let id = RequestId::from_raw(1 << 40);
        let mut s = Staged::recv(vec4(), b.as_mut_ptr().cast(), 1, 32, false);
        for (i, c) in s.bytes().chunks_exact_mut(8).enumerate() {
            c.copy_from_slice(&(10.0 + i as f64).to_ne_bytes());
        }
        ops.hold(id, s);
        assert!(!ops.is_empty());
        ops.completed(id, &status(32), false);
        assert!(ops.is_empty(), "a completed receive drops its buffer");
        assert_eq!(b, [10.0, -1.0, 11.0, -1.0, 12.0, -1.0, 13.0, -1.0]);
    }

    #[test]
    fn a_short_message_unpacks_only_what_arrived() {
        let mut b = vec![-1.0f64; 8];
        let mut ops = StagedOps::new();
        let id = RequestId::from_raw(1 << 41);
        let mut s = Staged::recv(vec4(), b.as_mut_ptr().cast(), 1, 32, false);
        s.bytes().fill(0);
        ops.hold(id, s);
        ops.completed(id, &status(16), false);
        assert_eq!(b, [0.0, -1.0, 0.0, -1.0, -1.0, -1.0, -1.0, -1.0]);
    }

    #[test]
    fn failed_or_cancelled_receives_leave_the_buffer() {
        let mut b = vec![-1.0f64; 8];
        let mut ops = StagedOps::new();
        for (k, st) in [
            Status {
                cancelled: true,
                ..status(32)
            },
            Status {
                error: Some(ErrorClass::Type),
                ..status(32)
            },
        ]
        .into_iter()
        .enumerate()
        {
            let id = RequestId::from_raw((k as u64 + 1) << 42);
            ops.hold(
                id,
                Staged::recv(vec4(), b.as_mut_ptr().cast(), 1, 32, false),
            );
            ops.completed(id, &st, false);
        }
        assert_eq!(b, [-1.0; 8]);
    }

    #[test]
    fn persistent_sends_repack_at_each_start_and_stay_until_freed() {
        let mut a = [1.0f64; 8];
        // The program changes its data through the pointer it lent, as a C program does.
        let p = a.as_mut_ptr();
        let mut ops = StagedOps::new();
        let id = RequestId::from_raw(1 << 43);
        // SAFETY: `a` holds the vector's span and outlives the staged operation's use.
        let s = unsafe { Staged::send(vec4(), p.cast_const().cast(), 1, 32, true) };
        ops.hold(id, s);
        // SAFETY: `p` points at `a`'s 8 elements, which nothing else uses meanwhile.
        (0..8).for_each(|i| unsafe { *p.add(i) = 5.0 });
        ops.starting(id);
        let packed = ops.live[&id.to_raw()].buf_ref().to_vec();
        assert!(packed
            .chunks_exact(8)
            .all(|c| f64::from_ne_bytes(c.try_into().unwrap()) == 5.0));
        ops.completed(id, &status(32), false);
        assert!(!ops.is_empty(), "a persistent request keeps its buffer");
        ops.freed(id, true);
        assert!(ops.is_empty() && ops.orphans.is_empty());
    }

    #[test]
    fn a_request_freed_in_flight_keeps_its_buffer_aside() {
        let a = [1.0f64; 8];
        let mut ops = StagedOps::new();
        let id = RequestId::from_raw(1 << 44);
        // SAFETY: `a` holds the vector's span.
        ops.hold(id, unsafe {
            Staged::send(vec4(), a.as_ptr().cast(), 1, 32, false)
        });
        ops.freed(id, false);
        assert!(ops.is_empty());
        assert_eq!(ops.orphans.len(), 1);
    }

    #[test]
    fn the_type_outlives_its_handle() {
        use crate::handle::datatype as hd;
        let mut h = hd::type_from(vec4()).unwrap();
        hd::type_commit(h).unwrap();
        let ty = hd::type_committed("t", h).unwrap();
        let a: Vec<f64> = (0..8).map(f64::from).collect();
        hd::type_free(&mut h).unwrap();
        // SAFETY: `a` holds the vector's span.
        let s = unsafe { Staged::send(ty, a.as_ptr().cast(), 1, 32, false) };
        assert_eq!(s.buf_ref().len(), 32);
        assert_eq!(&s.buf_ref()[8..16], &2.0f64.to_ne_bytes());
    }

    #[test]
    fn null_ids_and_empty_tables_are_no_ops() {
        let mut ops = StagedOps::new();
        ops.completed(RequestId::NULL, &status(8), false);
        ops.starting(RequestId::NULL);
        ops.freed(RequestId::NULL, false);
        assert!(ops.snapshot(&[RequestId::NULL]).is_empty());
        ops.hold(
            RequestId::NULL,
            Staged::recv(vec4(), std::ptr::null_mut(), 0, 0, false),
        );
        assert!(ops.is_empty());
    }
}
