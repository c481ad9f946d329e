//! Nonblocking (`MPI_Ibcast`, …) and persistent (`MPI_Bcast_init`, …) collectives, and the
//! neighbourhood collectives in all three forms (`MPI_Neighbor_allgather`, its `I` and
//! `_init` forms, …).
//!
//! Both forms go through the handle layer's collective `*_init` functions: a persistent
//! request keeps the planned collective, a nonblocking one starts it at once
//! ([`Requests::immediately`]). Data moves as bytes; reductions run on the element type of
//! their (predefined) datatype, as in the blocking forms.
//!
//! Datatypes: the regular collectives take any committed datatype; a non-contiguous one is
//! packed into a copy the request owns (sends) or staged and unpacked when the request
//! completes (receives), which the nonblocking forms support; a persistent request reads its
//! buffers at every start, so it takes contiguous layouts only. The v-collectives and
//! reductions take predefined datatypes. `MPI_IN_PLACE` is accepted wherever MPI allows it;
//! where the in-place block must be copied aside (gatherv, allgatherv, alltoallv,
//! reduce_scatter_block) the copy is taken when the call is made, so only the nonblocking
//! form offers it.

use std::ffi::{c_int, c_void};
use std::ptr::NonNull;

use oxmpi::handle::request::{RequestId, Requests};
use oxmpi::op::Reducible;
use oxmpi::{Communicator, ErrorClass, Op, Result, Single};

use crate::boundary::{comm, count, err, mpi_fn, put, slice, span, Handle};
use crate::coll::{in_place, layout, op, reduce_as, typed, CALL_DATATYPE};
use crate::datatypes::{data, with_elem_type, Data, Predef};
use crate::p2p::{req_handle, with_requests};
use crate::staging::{self, Kept, Staged};

/// Nonblocking (`Now`), persistent (`Init`), or blocking (`Block`: started, then waited
/// for; the neighbourhood collectives).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum How {
    Now,
    Init,
    Block,
}

/// Runs `f` (a `*_init` of the handle layer) started at once or kept, keeps `k` with the
/// request, and writes its handle to `out`.
///
/// # Safety
/// `out` null or valid for a write; the buffers `f` uses valid as the MPI call requires.
unsafe fn launch(
    name: &str,
    how: How,
    out: *mut Handle,
    mut k: Kept,
    f: impl FnOnce(&mut Requests<Single>) -> Result<RequestId>,
) -> Result<()> {
    if out.is_null() && how != How::Block {
        return Err(err(ErrorClass::Arg, name, "request is NULL"));
    }
    let id = with_requests(name, |r| match how {
        How::Init => f(r),
        How::Now | How::Block => r.immediately(f),
    })?;
    k.persistent = how == How::Init;
    staging::keep(id, k);
    if how == How::Block {
        let mut left = id;
        let st = with_requests(name, |r| r.wait(&mut left))?;
        staging::completed(id, &st, false);
        return match st.error() {
            Some(c) => Err(err(c, name, "the collective failed")),
            None => Ok(()),
        };
    }
    // SAFETY: non-null, valid by contract.
    unsafe { put(name, out, req_handle(id)) }
}

/// A non-null address for an empty buffer (null means `MPI_IN_PLACE` to the handle layer).
fn empty() -> *mut u8 {
    NonNull::<u8>::dangling().as_ptr()
}

/// `n × blocks` elements of `dt` from `p` for reading: (address, bytes). A non-contiguous
/// datatype is packed into a copy kept in `k` (nonblocking form only).
///
/// # Safety
/// `p` valid for reads of those elements.
unsafe fn src(
    name: &str,
    how: How,
    p: *const c_void,
    n: i64,
    dt: Handle,
    blocks: usize,
    k: &mut Kept,
) -> Result<(*const u8, usize)> {
    let n = count(name, n)?
        .checked_mul(blocks)
        .ok_or_else(|| err(ErrorClass::Count, name, "count overflows"))?;
    match data(name, n as i64, dt as usize, p)? {
        Data::Bytes { len: 0, .. } => Ok((empty(), 0)),
        Data::Bytes { offset, len } => {
            let at = p.cast::<u8>().wrapping_offset(offset);
            if at.is_null() {
                return Err(null_buffer(name));
            }
            Ok((at, len))
        }
        Data::Typed { ty, count, len } => {
            contiguous_only(name, how)?;
            // SAFETY: forwarded: the elements' bytes are readable.
            let v = unsafe { Staged::send(ty, p, count, len, false) }.into_bytes();
            let at = v.as_ptr();
            k.sends.push(v);
            Ok((at, len))
        }
    }
}

/// `n × blocks` elements of `dt` at `p` for writing (and reading, for in-place forms). A
/// non-contiguous datatype is staged in `k`, starting as the packed current contents, and
/// unpacked when the request completes (nonblocking form only).
///
/// # Safety
/// `p` valid for reads and writes of those elements until the request completes.
unsafe fn dst(
    name: &str,
    how: How,
    p: *mut c_void,
    n: i64,
    dt: Handle,
    blocks: usize,
    k: &mut Kept,
) -> Result<(*mut u8, usize)> {
    let n = count(name, n)?
        .checked_mul(blocks)
        .ok_or_else(|| err(ErrorClass::Count, name, "count overflows"))?;
    match data(name, n as i64, dt as usize, p.cast_const())? {
        Data::Bytes { len: 0, .. } => Ok((empty(), 0)),
        Data::Bytes { offset, len } => {
            let at = p.cast::<u8>().wrapping_offset(offset);
            if at.is_null() {
                return Err(null_buffer(name));
            }
            Ok((at, len))
        }
        Data::Typed { ty, count, len } => {
            contiguous_only(name, how)?;
            // SAFETY: forwarded: the elements' bytes are readable (they are writable).
            let mut s = unsafe { Staged::send(ty, p, count, len, false) };
            let at = s.bytes().as_mut_ptr();
            k.recvs.push(s);
            Ok((at, len))
        }
    }
}

fn contiguous_only(name: &str, how: How) -> Result<()> {
    if how == How::Init {
        return Err(err(
            ErrorClass::Type,
            name,
            "persistent collectives take datatypes with a contiguous layout",
        ));
    }
    Ok(())
}

fn null_buffer(name: &str) -> oxmpi::Error {
    err(
        ErrorClass::Buffer,
        name,
        "the buffer is NULL with a non-zero count",
    )
}

/// An in-place form that needs a copy taken now: nonblocking only.
fn copy_in_place(name: &str, how: How) -> Result<()> {
    if how == How::Init {
        return Err(err(
            ErrorClass::Buffer,
            name,
            "MPI_IN_PLACE is not accepted by the persistent form of this call in oxmpi",
        ));
    }
    Ok(())
}

/// Send and receive blocks of a regular collective must hold the same bytes.
fn same_block(name: &str, send: usize, recv: usize) -> Result<()> {
    if send != recv {
        return Err(err(
            ErrorClass::Truncate,
            name,
            format!("send blocks of {send} bytes but receive blocks of {recv} bytes"),
        ));
    }
    Ok(())
}

/// A predefined datatype of a v-collective or reduction.
fn predefined(name: &str, dt: Handle) -> Result<&'static Predef> {
    crate::datatypes::lookup(name, dt as usize).map_err(|_| {
        err(
            ErrorClass::Type,
            name,
            "the nonblocking and persistent v-collectives and reductions take predefined datatypes",
        )
    })
}

/// Counts and displacements of `p` blocks in bytes, and the extent they cover.
///
/// # Safety
/// Arrays valid for `p` reads.
unsafe fn blocks(
    name: &str,
    p: usize,
    counts: *const c_int,
    displs: *const c_int,
    dt: Handle,
) -> Result<(Vec<usize>, Vec<usize>, usize)> {
    let d = predefined(name, dt)?;
    // SAFETY: forwarded.
    unsafe { layout(name, p, counts, displs, d.size) }
}

/// `p` bytes aligned for `T` (a reduction's buffer).
fn aligned<T>(name: &str, p: *const c_void, len: usize) -> Result<()> {
    if len > 0 && (p as usize) % std::mem::align_of::<T>() != 0 {
        return Err(err(
            ErrorClass::Buffer,
            name,
            "the buffer is not aligned for its datatype",
        ));
    }
    Ok(())
}

/// The reductions, generic over the element type [`reduce_as`] picks.
mod typed_ops {
    use super::*;

    /// The send side of a reduction: null for `MPI_IN_PLACE`, a non-null address otherwise.
    fn send_ptr<T>(name: &str, p: *const c_void, len: usize) -> Result<*const T> {
        if in_place(p) {
            return Ok(std::ptr::null());
        }
        if len == 0 {
            return Ok(NonNull::<T>::dangling().as_ptr());
        }
        if p.is_null() {
            return Err(null_buffer(name));
        }
        aligned::<T>(name, p, len)?;
        Ok(p.cast())
    }

    fn recv_ptr<T>(name: &str, p: *mut c_void, len: usize) -> Result<*mut T> {
        if len == 0 {
            return Ok(NonNull::<T>::dangling().as_ptr());
        }
        if p.is_null() {
            return Err(null_buffer(name));
        }
        aligned::<T>(name, p, len)?;
        Ok(p.cast())
    }

    /// `kind`: 0 allreduce, 1 scan, 2 exscan, 3 reduce at `root`.
    ///
    /// # Safety
    /// Buffers valid for `len` bytes until the request completes (is freed).
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn reduce<T: Reducible>(
        name: &str,
        how: How,
        kind: u8,
        c: &Communicator<Single>,
        sbuf: *const c_void,
        rbuf: *mut c_void,
        len: usize,
        o: oxmpi::handle::op::OpHandle,
        root: c_int,
        out: *mut Handle,
    ) -> Result<()> {
        let n = len / std::mem::size_of::<T>().max(1);
        let s = send_ptr::<T>(name, sbuf, len)?;
        let at_root = kind != 3 || c.rank() == root;
        let r = if at_root {
            recv_ptr::<T>(name, rbuf, len)?
        } else {
            NonNull::<T>::dangling().as_ptr()
        };
        // SAFETY: the caller's buffers, valid until the request completes.
        unsafe {
            launch(name, how, out, Kept::default(), |q| match kind {
                0 => q.allreduce_init(c, s, r, n, o),
                1 => q.scan_init(c, s, r, n, o, false),
                2 => q.scan_init(c, s, r, n, o, true),
                _ => q.reduce_init(c, s, r, n, o, root),
            })
        }
    }

    /// `MPI_Reduce_scatter(_block)`: `counts` in elements.
    ///
    /// # Safety
    /// Buffers valid for the sums of `counts` (send, or receive in place) and this rank's
    /// count.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn reduce_scatter<T: Reducible>(
        name: &str,
        how: How,
        block: bool,
        c: &Communicator<Single>,
        sbuf: *const c_void,
        rbuf: *mut c_void,
        counts: &[usize],
        o: oxmpi::handle::op::OpHandle,
        out: *mut Handle,
    ) -> Result<()> {
        let size = std::mem::size_of::<T>();
        let total: usize = counts.iter().sum();
        let mine = counts.get(c.rank() as usize).copied().unwrap_or(0);
        let mut k = Kept::default();
        let (s, r) = if in_place(sbuf) {
            let r = recv_ptr::<T>(name, rbuf, total * size)?;
            if block {
                // The handle layer's block form has no in-place variant: reduce a copy.
                copy_in_place(name, how)?;
                // SAFETY: in place, `rbuf` holds the whole input (the MPI contract).
                let v =
                    unsafe { std::slice::from_raw_parts(r.cast::<u8>(), total * size) }.to_vec();
                let at = v.as_ptr().cast::<T>();
                k.sends.push(v);
                (at, r)
            } else {
                (std::ptr::null(), r)
            }
        } else {
            (
                send_ptr::<T>(name, sbuf, total * size)?,
                recv_ptr::<T>(name, rbuf, mine * size)?,
            )
        };
        // A copied input must stay 8-byte aligned: a `Vec<u8>` is allocated with the
        // allocator's minimum alignment, at least 8 on every platform oxmpi runs on.
        aligned::<T>(name, s.cast(), if s.is_null() { 0 } else { total * size })?;
        // SAFETY: the caller's buffers (or ours, kept with the request).
        unsafe {
            launch(name, how, out, k, |q| {
                if block {
                    q.reduce_scatter_block_init(c, s, r, mine, o)
                } else {
                    q.reduce_scatter_init(c, s, r, counts, o)
                }
            })
        }
    }
}

/// A reduction (`kind` as in [`typed_ops::reduce`]) of `n` elements of predefined `dt`.
///
/// # Safety
/// As the MPI call.
#[allow(clippy::too_many_arguments)]
unsafe fn reduce(
    name: &str,
    how: How,
    kind: u8,
    sbuf: *const c_void,
    rbuf: *mut c_void,
    n: i64,
    dt: Handle,
    o: Handle,
    root: c_int,
    c: Handle,
    out: *mut Handle,
) -> Result<()> {
    predefined(name, dt)?;
    let (len, d) = span(name, n, dt)?;
    let (oh, op) = op(o)?;
    let comm = typed(c)?;
    if kind == 3 {
        check_root(name, &comm, root)?;
    }
    // SAFETY: forwarded.
    reduce_as!(name, d, op, T => unsafe {
        typed_ops::reduce::<T>(name, how, kind, &comm, sbuf, rbuf, len, oh, root, out)
    })
}

/// `MPI_Reduce_scatter(_block)`.
///
/// # Safety
/// As the MPI call.
#[allow(clippy::too_many_arguments)]
unsafe fn reduce_scatter(
    name: &str,
    how: How,
    block: bool,
    sbuf: *const c_void,
    rbuf: *mut c_void,
    counts: &[usize],
    dt: Handle,
    o: Handle,
    comm: &Communicator<Single>,
    out: *mut Handle,
) -> Result<()> {
    let d = predefined(name, dt)?;
    let (oh, op) = op(o)?;
    // SAFETY: forwarded.
    reduce_as!(name, d, op, T => unsafe {
        typed_ops::reduce_scatter::<T>(name, how, block, comm, sbuf, rbuf, counts, oh, out)
    })
}

/// Element counts of a `p`-array as `usize`.
///
/// # Safety
/// `p` valid for `n` reads.
unsafe fn counts(name: &str, p: *const c_int, n: usize) -> Result<Vec<usize>> {
    // SAFETY: forwarded.
    unsafe { slice(name, p, n)? }
        .iter()
        .map(|&x| count(name, x))
        .collect()
}

/// A root of `comm`: [`ErrorClass::Root`] otherwise.
fn check_root(name: &str, comm: &Communicator<Single>, root: c_int) -> Result<()> {
    if root < 0 || root >= comm.size() {
        return Err(err(
            ErrorClass::Root,
            name,
            format!("root {root} is not a rank"),
        ));
    }
    Ok(())
}

// ---- the calls, each in its nonblocking and persistent form ----------------------------

unsafe fn barrier(name: &str, how: How, c: Handle, out: *mut Handle) -> Result<()> {
    let comm = typed(c)?;
    // SAFETY: no buffers.
    unsafe { launch(name, how, out, Kept::default(), |q| q.barrier_init(&comm)) }
}

#[allow(clippy::too_many_arguments)]
unsafe fn bcast(
    name: &str,
    how: How,
    buf: *mut c_void,
    n: i64,
    dt: Handle,
    root: c_int,
    c: Handle,
    out: *mut Handle,
) -> Result<()> {
    let comm = typed(c)?;
    check_root(name, &comm, root)?;
    let mut k = Kept::default();
    // SAFETY: the caller's buffer.
    let (b, len) = unsafe { dst(name, how, buf, n, dt, 1, &mut k)? };
    // SAFETY: valid until the request completes (is freed); a staged copy is kept with it.
    unsafe { launch(name, how, out, k, |q| q.bcast_init(&comm, b, len, root)) }
}

#[allow(clippy::too_many_arguments)]
unsafe fn gather(
    name: &str,
    how: How,
    sbuf: *const c_void,
    sn: c_int,
    sdt: Handle,
    rbuf: *mut c_void,
    rn: c_int,
    rdt: Handle,
    root: c_int,
    c: Handle,
    out: *mut Handle,
) -> Result<()> {
    let comm = typed(c)?;
    check_root(name, &comm, root)?;
    let p = comm.size() as usize;
    let mut k = Kept::default();
    // SAFETY: the caller's buffers, valid until the request completes.
    unsafe {
        if comm.rank() == root {
            let (r, rlen) = dst(name, how, rbuf, rn.into(), rdt, p, &mut k)?;
            let block = rlen / p.max(1);
            let (s, slen) = if in_place(sbuf) {
                (std::ptr::null(), block)
            } else {
                src(name, how, sbuf, sn.into(), sdt, 1, &mut k)?
            };
            same_block(name, slen, block)?;
            launch(name, how, out, k, |q| {
                q.gather_init(&comm, s, slen, r, root)
            })
        } else {
            let (s, slen) = src(name, how, sbuf, sn.into(), sdt, 1, &mut k)?;
            launch(name, how, out, k, |q| {
                q.gather_init(&comm, s, slen, empty(), root)
            })
        }
    }
}

#[allow(clippy::too_many_arguments)]
unsafe fn scatter(
    name: &str,
    how: How,
    sbuf: *const c_void,
    sn: c_int,
    sdt: Handle,
    rbuf: *mut c_void,
    rn: c_int,
    rdt: Handle,
    root: c_int,
    c: Handle,
    out: *mut Handle,
) -> Result<()> {
    let comm = typed(c)?;
    check_root(name, &comm, root)?;
    let p = comm.size() as usize;
    let mut k = Kept::default();
    // SAFETY: the caller's buffers, valid until the request completes.
    unsafe {
        if comm.rank() == root {
            let (s, slen) = src(name, how, sbuf, sn.into(), sdt, p, &mut k)?;
            let block = slen / p.max(1);
            let r = if in_place(rbuf) {
                std::ptr::null_mut()
            } else {
                let (r, rlen) = dst(name, how, rbuf, rn.into(), rdt, 1, &mut k)?;
                same_block(name, block, rlen)?;
                r
            };
            launch(name, how, out, k, |q| {
                q.scatter_init(&comm, s, r, block, root)
            })
        } else {
            let (r, rlen) = dst(name, how, rbuf, rn.into(), rdt, 1, &mut k)?;
            launch(name, how, out, k, |q| {
                q.scatter_init(&comm, empty(), r, rlen, root)
            })
        }
    }
}

#[allow(clippy::too_many_arguments)]
unsafe fn allgather(
    name: &str,
    how: How,
    sbuf: *const c_void,
    sn: c_int,
    sdt: Handle,
    rbuf: *mut c_void,
    rn: c_int,
    rdt: Handle,
    c: Handle,
    out: *mut Handle,
) -> Result<()> {
    let comm = typed(c)?;
    let p = comm.size() as usize;
    let mut k = Kept::default();
    // SAFETY: the caller's buffers, valid until the request completes.
    unsafe {
        let (r, rlen) = dst(name, how, rbuf, rn.into(), rdt, p, &mut k)?;
        let block = rlen / p.max(1);
        let (s, slen) = if in_place(sbuf) {
            (std::ptr::null(), block)
        } else {
            src(name, how, sbuf, sn.into(), sdt, 1, &mut k)?
        };
        same_block(name, slen, block)?;
        launch(name, how, out, k, |q| q.allgather_init(&comm, s, slen, r))
    }
}

#[allow(clippy::too_many_arguments)]
unsafe fn alltoall(
    name: &str,
    how: How,
    sbuf: *const c_void,
    sn: c_int,
    sdt: Handle,
    rbuf: *mut c_void,
    rn: c_int,
    rdt: Handle,
    c: Handle,
    out: *mut Handle,
) -> Result<()> {
    let comm = typed(c)?;
    let p = comm.size() as usize;
    let mut k = Kept::default();
    // SAFETY: the caller's buffers, valid until the request completes.
    unsafe {
        let (r, rlen) = dst(name, how, rbuf, rn.into(), rdt, p, &mut k)?;
        let s = if in_place(sbuf) {
            std::ptr::null()
        } else {
            let (s, slen) = src(name, how, sbuf, sn.into(), sdt, p, &mut k)?;
            same_block(name, slen, rlen)?;
            s
        };
        launch(name, how, out, k, |q| {
            q.alltoall_init(&comm, s, r, rlen / p.max(1))
        })
    }
}

/// A block of `len` bytes at `at` of the caller's buffer, copied into `k`.
///
/// # Safety
/// `base + at` valid for reads of `len` bytes.
unsafe fn copy_block(base: *const c_void, at: usize, len: usize, k: &mut Kept) -> *const u8 {
    if len == 0 {
        return empty();
    }
    // SAFETY: forwarded.
    let v = unsafe { std::slice::from_raw_parts(base.cast::<u8>().add(at), len) }.to_vec();
    let p = v.as_ptr();
    k.sends.push(v);
    p
}

fn nonnull<T>(name: &str, p: *const T, len: usize) -> Result<()> {
    if len > 0 && p.is_null() {
        return Err(null_buffer(name));
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
unsafe fn gatherv(
    name: &str,
    how: How,
    sbuf: *const c_void,
    sn: c_int,
    sdt: Handle,
    rbuf: *mut c_void,
    rcounts: *const c_int,
    displs: *const c_int,
    rdt: Handle,
    root: c_int,
    c: Handle,
    out: *mut Handle,
) -> Result<()> {
    let comm = typed(c)?;
    check_root(name, &comm, root)?;
    let mut k = Kept::default();
    let me = comm.rank();
    // SAFETY: the caller's buffers and arrays, valid until the request completes.
    unsafe {
        if me != root {
            let (s, slen) = src(name, how, sbuf, sn.into(), sdt, 1, &mut k)?;
            return launch(name, how, out, k, |q| {
                q.gatherv_init(&comm, s, slen, empty(), 0, &[], &[], root)
            });
        }
        let p = comm.size() as usize;
        let (bc, bd, extent) = blocks(name, p, rcounts, displs, rdt)?;
        nonnull(name, rbuf, extent)?;
        let (s, slen) = if in_place(sbuf) {
            copy_in_place(name, how)?;
            let i = me as usize;
            (copy_block(rbuf, bd[i], bc[i], &mut k), bc[i])
        } else {
            src(name, how, sbuf, sn.into(), sdt, 1, &mut k)?
        };
        let r = if extent == 0 {
            empty()
        } else {
            rbuf.cast::<u8>()
        };
        launch(name, how, out, k, |q| {
            q.gatherv_init(&comm, s, slen, r, extent, &bc, &bd, root)
        })
    }
}

#[allow(clippy::too_many_arguments)]
unsafe fn scatterv(
    name: &str,
    how: How,
    sbuf: *const c_void,
    scounts: *const c_int,
    displs: *const c_int,
    sdt: Handle,
    rbuf: *mut c_void,
    rn: c_int,
    rdt: Handle,
    root: c_int,
    c: Handle,
    out: *mut Handle,
) -> Result<()> {
    let comm = typed(c)?;
    check_root(name, &comm, root)?;
    let mut k = Kept::default();
    let me = comm.rank();
    // SAFETY: the caller's buffers and arrays, valid until the request completes.
    unsafe {
        if me != root {
            let (r, rlen) = dst(name, how, rbuf, rn.into(), rdt, 1, &mut k)?;
            return launch(name, how, out, k, |q| {
                q.scatterv_init(&comm, empty(), 0, &[], &[], r, rlen, root)
            });
        }
        let p = comm.size() as usize;
        let (bc, bd, extent) = blocks(name, p, scounts, displs, sdt)?;
        nonnull(name, sbuf, extent)?;
        let s = if extent == 0 {
            empty().cast_const()
        } else {
            sbuf.cast::<u8>()
        };
        let (r, rlen) = if in_place(rbuf) {
            // The root's block stays where it is: it lands in scratch the request owns.
            let mut v = vec![0u8; bc[me as usize]];
            let at = v.as_mut_ptr();
            let n = v.len();
            k.sends.push(v);
            (at, n)
        } else {
            dst(name, how, rbuf, rn.into(), rdt, 1, &mut k)?
        };
        launch(name, how, out, k, |q| {
            q.scatterv_init(&comm, s, extent, &bc, &bd, r, rlen, root)
        })
    }
}

#[allow(clippy::too_many_arguments)]
unsafe fn allgatherv(
    name: &str,
    how: How,
    sbuf: *const c_void,
    sn: c_int,
    sdt: Handle,
    rbuf: *mut c_void,
    rcounts: *const c_int,
    displs: *const c_int,
    rdt: Handle,
    c: Handle,
    out: *mut Handle,
) -> Result<()> {
    let comm = typed(c)?;
    let mut k = Kept::default();
    let p = comm.size() as usize;
    // SAFETY: the caller's buffers and arrays, valid until the request completes.
    unsafe {
        let (bc, bd, extent) = blocks(name, p, rcounts, displs, rdt)?;
        nonnull(name, rbuf, extent)?;
        let (s, slen) = if in_place(sbuf) {
            copy_in_place(name, how)?;
            let i = comm.rank() as usize;
            (copy_block(rbuf, bd[i], bc[i], &mut k), bc[i])
        } else {
            src(name, how, sbuf, sn.into(), sdt, 1, &mut k)?
        };
        let r = if extent == 0 {
            empty()
        } else {
            rbuf.cast::<u8>()
        };
        launch(name, how, out, k, |q| {
            q.allgatherv_init(&comm, s, slen, r, extent, &bc, &bd)
        })
    }
}

#[allow(clippy::too_many_arguments)]
unsafe fn alltoallv(
    name: &str,
    how: How,
    sbuf: *const c_void,
    scounts: *const c_int,
    sdispls: *const c_int,
    sdt: Handle,
    rbuf: *mut c_void,
    rcounts: *const c_int,
    rdispls: *const c_int,
    rdt: Handle,
    c: Handle,
    out: *mut Handle,
) -> Result<()> {
    let comm = typed(c)?;
    let mut k = Kept::default();
    let p = comm.size() as usize;
    // SAFETY: the caller's buffers and arrays, valid until the request completes.
    unsafe {
        let (rc, rd, rext) = blocks(name, p, rcounts, rdispls, rdt)?;
        nonnull(name, rbuf, rext)?;
        let (s, sext, sc, sd) = if in_place(sbuf) {
            // The input is the receive buffer as it is now, laid out like the output.
            copy_in_place(name, how)?;
            (
                copy_block(rbuf, 0, rext, &mut k),
                rext,
                rc.clone(),
                rd.clone(),
            )
        } else {
            let (sc, sd, sext) = blocks(name, p, scounts, sdispls, sdt)?;
            nonnull(name, sbuf, sext)?;
            let s = if sext == 0 {
                empty().cast_const()
            } else {
                sbuf.cast::<u8>()
            };
            (s, sext, sc, sd)
        };
        let r = if rext == 0 {
            empty()
        } else {
            rbuf.cast::<u8>()
        };
        launch(name, how, out, k, |q| {
            q.alltoallv_init(&comm, s, sext, &sc, &sd, r, rext, &rc, &rd)
        })
    }
}

/// `n` neighbours' blocks of an alltoallw: byte counts and displacements (predefined
/// datatypes, displacements in bytes), and the extent they cover.
///
/// # Safety
/// Arrays valid for `n` reads.
unsafe fn wblocks<D: Disp>(
    name: &str,
    n: usize,
    counts: *const c_int,
    displs: *const D,
    types: *const Handle,
) -> Result<(Vec<usize>, Vec<usize>, usize)> {
    // SAFETY: forwarded.
    let (c, d, t) = unsafe {
        (
            slice(name, counts, n)?,
            slice(name, displs, n)?,
            slice(name, types, n)?,
        )
    };
    let (mut bc, mut bd, mut extent) = (Vec::with_capacity(n), Vec::with_capacity(n), 0);
    for i in 0..n {
        let len = count(name, c[i])?
            .checked_mul(predefined(name, t[i])?.size)
            .ok_or_else(|| err(ErrorClass::Count, name, "count × datatype size overflows"))?;
        let di = d[i].wide();
        let at = usize::try_from(di).map_err(|_| {
            err(
                ErrorClass::Arg,
                name,
                format!("displacement {di} is negative"),
            )
        })?;
        extent = extent.max(at + len);
        bc.push(len);
        bd.push(at);
    }
    Ok((bc, bd, extent))
}

/// A byte displacement: `int` (`MPI_Alltoallw`) or `MPI_Aint` (the neighbourhood form).
trait Disp: Copy {
    fn wide(self) -> i64;
}

impl Disp for c_int {
    fn wide(self) -> i64 {
        self.into()
    }
}

impl Disp for isize {
    fn wide(self) -> i64 {
        self as i64
    }
}

/// The caller's buffer of `extent` bytes at `p` (a non-null address when empty).
fn whole<T>(name: &str, p: *const T, extent: usize) -> Result<*const u8> {
    nonnull(name, p, extent)?;
    Ok(if extent == 0 { empty() } else { p.cast() })
}

/// The neighbourhood collectives, `kind` 0 allgather, 1 alltoall.
#[allow(clippy::too_many_arguments)]
unsafe fn neighbor_regular(
    name: &str,
    how: How,
    kind: u8,
    sbuf: *const c_void,
    sn: c_int,
    sdt: Handle,
    rbuf: *mut c_void,
    rn: c_int,
    rdt: Handle,
    c: Handle,
    out: *mut Handle,
) -> Result<()> {
    let comm = typed(c)?;
    let (indeg, outdeg) = oxmpi::handle::topo::neighbor_degrees(crate::boundary::comm(c))?;
    let mut k = Kept::default();
    // SAFETY: the caller's buffers, valid until the request completes.
    unsafe {
        let (s, slen) = src(
            name,
            how,
            sbuf,
            sn.into(),
            sdt,
            if kind == 0 { 1 } else { outdeg },
            &mut k,
        )?;
        let (r, rlen) = dst(name, how, rbuf, rn.into(), rdt, indeg, &mut k)?;
        launch(name, how, out, k, |q| {
            if kind == 0 {
                q.neighbor_allgather_init(&comm, s, slen, r, rlen)
            } else {
                q.neighbor_alltoall_init(&comm, s, slen, r, rlen)
            }
        })
    }
}

#[allow(clippy::too_many_arguments)]
unsafe fn neighbor_allgatherv(
    name: &str,
    how: How,
    sbuf: *const c_void,
    sn: c_int,
    sdt: Handle,
    rbuf: *mut c_void,
    rcounts: *const c_int,
    displs: *const c_int,
    rdt: Handle,
    c: Handle,
    out: *mut Handle,
) -> Result<()> {
    let comm = typed(c)?;
    let (indeg, _) = oxmpi::handle::topo::neighbor_degrees(crate::boundary::comm(c))?;
    let mut k = Kept::default();
    // SAFETY: the caller's buffers and arrays, valid until the request completes.
    unsafe {
        let (s, slen) = src(name, how, sbuf, sn.into(), sdt, 1, &mut k)?;
        let (bc, bd, extent) = blocks(name, indeg, rcounts, displs, rdt)?;
        let r = whole(name, rbuf, extent)?.cast_mut();
        launch(name, how, out, k, |q| {
            q.neighbor_v_init(&comm, s, slen, None, r, extent, &bc, &bd)
        })
    }
}

#[allow(clippy::too_many_arguments)]
unsafe fn neighbor_alltoallv(
    name: &str,
    how: How,
    sbuf: *const c_void,
    scounts: *const c_int,
    sdispls: *const c_int,
    sdt: Handle,
    rbuf: *mut c_void,
    rcounts: *const c_int,
    rdispls: *const c_int,
    rdt: Handle,
    c: Handle,
    out: *mut Handle,
) -> Result<()> {
    let comm = typed(c)?;
    let (indeg, outdeg) = oxmpi::handle::topo::neighbor_degrees(crate::boundary::comm(c))?;
    // SAFETY: the caller's buffers and arrays, valid until the request completes.
    unsafe {
        let (sc, sd, sext) = blocks(name, outdeg, scounts, sdispls, sdt)?;
        let (rc, rd, rext) = blocks(name, indeg, rcounts, rdispls, rdt)?;
        let s = whole(name, sbuf, sext)?;
        let r = whole(name, rbuf, rext)?.cast_mut();
        launch(name, how, out, Kept::default(), |q| {
            q.neighbor_v_init(&comm, s, sext, Some((&sc, &sd)), r, rext, &rc, &rd)
        })
    }
}

#[allow(clippy::too_many_arguments)]
unsafe fn neighbor_alltoallw(
    name: &str,
    how: How,
    sbuf: *const c_void,
    scounts: *const c_int,
    sdispls: *const isize,
    sdts: *const Handle,
    rbuf: *mut c_void,
    rcounts: *const c_int,
    rdispls: *const isize,
    rdts: *const Handle,
    c: Handle,
    out: *mut Handle,
) -> Result<()> {
    let comm = typed(c)?;
    let (indeg, outdeg) = oxmpi::handle::topo::neighbor_degrees(crate::boundary::comm(c))?;
    // SAFETY: the caller's buffers and arrays, valid until the request completes.
    unsafe {
        let (sc, sd, sext) = wblocks(name, outdeg, scounts, sdispls, sdts)?;
        let (rc, rd, rext) = wblocks(name, indeg, rcounts, rdispls, rdts)?;
        let s = whole(name, sbuf, sext)?;
        let r = whole(name, rbuf, rext)?.cast_mut();
        launch(name, how, out, Kept::default(), |q| {
            q.neighbor_v_init(&comm, s, sext, Some((&sc, &sd)), r, rext, &rc, &rd)
        })
    }
}

/// `MPI_Alltoallw` in its three forms (predefined datatypes; displacements in bytes).
#[allow(clippy::too_many_arguments)]
unsafe fn alltoallw(
    name: &str,
    how: How,
    sbuf: *const c_void,
    scounts: *const c_int,
    sdispls: *const c_int,
    sdts: *const Handle,
    rbuf: *mut c_void,
    rcounts: *const c_int,
    rdispls: *const c_int,
    rdts: *const Handle,
    c: Handle,
    out: *mut Handle,
) -> Result<()> {
    let comm = typed(c)?;
    let p = comm.size() as usize;
    let mut k = Kept::default();
    // SAFETY: the caller's buffers and arrays, valid until the request completes.
    unsafe {
        let (rc, rd, rext) = wblocks(name, p, rcounts, rdispls, rdts)?;
        let r = whole(name, rbuf, rext)?.cast_mut();
        let (s, sext, sc, sd) = if in_place(sbuf) {
            // The input is the receive buffer as it is now, laid out like the output.
            copy_in_place(name, how)?;
            (
                copy_block(rbuf, 0, rext, &mut k),
                rext,
                rc.clone(),
                rd.clone(),
            )
        } else {
            let (sc, sd, sext) = wblocks(name, p, scounts, sdispls, sdts)?;
            (whole(name, sbuf, sext)?, sext, sc, sd)
        };
        launch(name, how, out, k, |q| {
            q.alltoallv_init(&comm, s, sext, &sc, &sd, r, rext, &rc, &rd)
        })
    }
}

mpi_fn! {
    /// `MPI_Alltoallw` (predefined datatypes).
    fn Alltoallw = MPI_Alltoallw / PMPI_Alltoallw(
        sbuf: *const c_void, scounts: *const c_int, sdispls: *const c_int, sdts: *const Handle,
        rbuf: *mut c_void, rcounts: *const c_int, rdispls: *const c_int, rdts: *const Handle, c: Handle,
    ) on comm(c) => {
        alltoallw("Alltoallw", How::Block, sbuf, scounts, sdispls, sdts, rbuf, rcounts, rdispls, rdts, c, std::ptr::null_mut())
    }
    /// `MPI_Ialltoallw`.
    fn Ialltoallw = MPI_Ialltoallw / PMPI_Ialltoallw(
        sbuf: *const c_void, scounts: *const c_int, sdispls: *const c_int, sdts: *const Handle,
        rbuf: *mut c_void, rcounts: *const c_int, rdispls: *const c_int, rdts: *const Handle, c: Handle,
        r: *mut Handle,
    ) on comm(c) => {
        alltoallw("Ialltoallw", How::Now, sbuf, scounts, sdispls, sdts, rbuf, rcounts, rdispls, rdts, c, r)
    }
    /// `MPI_Alltoallw_init`.
    fn Alltoallw_init = MPI_Alltoallw_init / PMPI_Alltoallw_init(
        sbuf: *const c_void, scounts: *const c_int, sdispls: *const c_int, sdts: *const Handle,
        rbuf: *mut c_void, rcounts: *const c_int, rdispls: *const c_int, rdts: *const Handle, c: Handle,
        _info: Handle, r: *mut Handle,
    ) on comm(c) => {
        alltoallw("Alltoallw_init", How::Init, sbuf, scounts, sdispls, sdts, rbuf, rcounts, rdispls, rdts, c, r)
    }
}

mpi_fn! {
    /// `MPI_Neighbor_allgather`.
    fn Neighbor_allgather = MPI_Neighbor_allgather / PMPI_Neighbor_allgather(
        sbuf: *const c_void, sn: c_int, sdt: Handle, rbuf: *mut c_void, rn: c_int, rdt: Handle, c: Handle,
    ) on comm(c) => {
        neighbor_regular("Neighbor_allgather", How::Block, 0, sbuf, sn, sdt, rbuf, rn, rdt, c, std::ptr::null_mut())
    }
    /// `MPI_Ineighbor_allgather`.
    fn Ineighbor_allgather = MPI_Ineighbor_allgather / PMPI_Ineighbor_allgather(
        sbuf: *const c_void, sn: c_int, sdt: Handle, rbuf: *mut c_void, rn: c_int, rdt: Handle, c: Handle,
        r: *mut Handle,
    ) on comm(c) => {
        neighbor_regular("Ineighbor_allgather", How::Now, 0, sbuf, sn, sdt, rbuf, rn, rdt, c, r)
    }
    /// `MPI_Neighbor_allgather_init`.
    fn Neighbor_allgather_init = MPI_Neighbor_allgather_init / PMPI_Neighbor_allgather_init(
        sbuf: *const c_void, sn: c_int, sdt: Handle, rbuf: *mut c_void, rn: c_int, rdt: Handle, c: Handle,
        _info: Handle, r: *mut Handle,
    ) on comm(c) => {
        neighbor_regular("Neighbor_allgather_init", How::Init, 0, sbuf, sn, sdt, rbuf, rn, rdt, c, r)
    }

    /// `MPI_Neighbor_alltoall`.
    fn Neighbor_alltoall = MPI_Neighbor_alltoall / PMPI_Neighbor_alltoall(
        sbuf: *const c_void, sn: c_int, sdt: Handle, rbuf: *mut c_void, rn: c_int, rdt: Handle, c: Handle,
    ) on comm(c) => {
        neighbor_regular("Neighbor_alltoall", How::Block, 1, sbuf, sn, sdt, rbuf, rn, rdt, c, std::ptr::null_mut())
    }
    /// `MPI_Ineighbor_alltoall`.
    fn Ineighbor_alltoall = MPI_Ineighbor_alltoall / PMPI_Ineighbor_alltoall(
        sbuf: *const c_void, sn: c_int, sdt: Handle, rbuf: *mut c_void, rn: c_int, rdt: Handle, c: Handle,
        r: *mut Handle,
    ) on comm(c) => {
        neighbor_regular("Ineighbor_alltoall", How::Now, 1, sbuf, sn, sdt, rbuf, rn, rdt, c, r)
    }
    /// `MPI_Neighbor_alltoall_init`.
    fn Neighbor_alltoall_init = MPI_Neighbor_alltoall_init / PMPI_Neighbor_alltoall_init(
        sbuf: *const c_void, sn: c_int, sdt: Handle, rbuf: *mut c_void, rn: c_int, rdt: Handle, c: Handle,
        _info: Handle, r: *mut Handle,
    ) on comm(c) => {
        neighbor_regular("Neighbor_alltoall_init", How::Init, 1, sbuf, sn, sdt, rbuf, rn, rdt, c, r)
    }

    /// `MPI_Neighbor_allgatherv`.
    fn Neighbor_allgatherv = MPI_Neighbor_allgatherv / PMPI_Neighbor_allgatherv(
        sbuf: *const c_void, sn: c_int, sdt: Handle, rbuf: *mut c_void, rcounts: *const c_int,
        displs: *const c_int, rdt: Handle, c: Handle,
    ) on comm(c) => {
        neighbor_allgatherv("Neighbor_allgatherv", How::Block, sbuf, sn, sdt, rbuf, rcounts, displs, rdt, c, std::ptr::null_mut())
    }
    /// `MPI_Ineighbor_allgatherv`.
    fn Ineighbor_allgatherv = MPI_Ineighbor_allgatherv / PMPI_Ineighbor_allgatherv(
        sbuf: *const c_void, sn: c_int, sdt: Handle, rbuf: *mut c_void, rcounts: *const c_int,
        displs: *const c_int, rdt: Handle, c: Handle, r: *mut Handle,
    ) on comm(c) => {
        neighbor_allgatherv("Ineighbor_allgatherv", How::Now, sbuf, sn, sdt, rbuf, rcounts, displs, rdt, c, r)
    }
    /// `MPI_Neighbor_allgatherv_init`.
    fn Neighbor_allgatherv_init = MPI_Neighbor_allgatherv_init / PMPI_Neighbor_allgatherv_init(
        sbuf: *const c_void, sn: c_int, sdt: Handle, rbuf: *mut c_void, rcounts: *const c_int,
        displs: *const c_int, rdt: Handle, c: Handle, _info: Handle, r: *mut Handle,
    ) on comm(c) => {
        neighbor_allgatherv("Neighbor_allgatherv_init", How::Init, sbuf, sn, sdt, rbuf, rcounts, displs, rdt, c, r)
    }

    /// `MPI_Neighbor_alltoallv`.
    fn Neighbor_alltoallv = MPI_Neighbor_alltoallv / PMPI_Neighbor_alltoallv(
        sbuf: *const c_void, scounts: *const c_int, sdispls: *const c_int, sdt: Handle,
        rbuf: *mut c_void, rcounts: *const c_int, rdispls: *const c_int, rdt: Handle, c: Handle,
    ) on comm(c) => {
        neighbor_alltoallv("Neighbor_alltoallv", How::Block, sbuf, scounts, sdispls, sdt, rbuf, rcounts, rdispls, rdt, c, std::ptr::null_mut())
    }
    /// `MPI_Ineighbor_alltoallv`.
    fn Ineighbor_alltoallv = MPI_Ineighbor_alltoallv / PMPI_Ineighbor_alltoallv(
        sbuf: *const c_void, scounts: *const c_int, sdispls: *const c_int, sdt: Handle,
        rbuf: *mut c_void, rcounts: *const c_int, rdispls: *const c_int, rdt: Handle, c: Handle,
        r: *mut Handle,
    ) on comm(c) => {
        neighbor_alltoallv("Ineighbor_alltoallv", How::Now, sbuf, scounts, sdispls, sdt, rbuf, rcounts, rdispls, rdt, c, r)
    }
    /// `MPI_Neighbor_alltoallv_init`.
    fn Neighbor_alltoallv_init = MPI_Neighbor_alltoallv_init / PMPI_Neighbor_alltoallv_init(
        sbuf: *const c_void, scounts: *const c_int, sdispls: *const c_int, sdt: Handle,
        rbuf: *mut c_void, rcounts: *const c_int, rdispls: *const c_int, rdt: Handle, c: Handle,
        _info: Handle, r: *mut Handle,
    ) on comm(c) => {
        neighbor_alltoallv("Neighbor_alltoallv_init", How::Init, sbuf, scounts, sdispls, sdt, rbuf, rcounts, rdispls, rdt, c, r)
    }

    /// `MPI_Neighbor_alltoallw` (predefined datatypes; displacements in bytes).
    fn Neighbor_alltoallw = MPI_Neighbor_alltoallw / PMPI_Neighbor_alltoallw(
        sbuf: *const c_void, scounts: *const c_int, sdispls: *const isize, sdts: *const Handle,
        rbuf: *mut c_void, rcounts: *const c_int, rdispls: *const isize, rdts: *const Handle, c: Handle,
    ) on comm(c) => {
        neighbor_alltoallw("Neighbor_alltoallw", How::Block, sbuf, scounts, sdispls, sdts, rbuf, rcounts, rdispls, rdts, c, std::ptr::null_mut())
    }
    /// `MPI_Ineighbor_alltoallw`.
    fn Ineighbor_alltoallw = MPI_Ineighbor_alltoallw / PMPI_Ineighbor_alltoallw(
        sbuf: *const c_void, scounts: *const c_int, sdispls: *const isize, sdts: *const Handle,
        rbuf: *mut c_void, rcounts: *const c_int, rdispls: *const isize, rdts: *const Handle, c: Handle,
        r: *mut Handle,
    ) on comm(c) => {
        neighbor_alltoallw("Ineighbor_alltoallw", How::Now, sbuf, scounts, sdispls, sdts, rbuf, rcounts, rdispls, rdts, c, r)
    }
    /// `MPI_Neighbor_alltoallw_init`.
    fn Neighbor_alltoallw_init = MPI_Neighbor_alltoallw_init / PMPI_Neighbor_alltoallw_init(
        sbuf: *const c_void, scounts: *const c_int, sdispls: *const isize, sdts: *const Handle,
        rbuf: *mut c_void, rcounts: *const c_int, rdispls: *const isize, rdts: *const Handle, c: Handle,
        _info: Handle, r: *mut Handle,
    ) on comm(c) => {
        neighbor_alltoallw("Neighbor_alltoallw_init", How::Init, sbuf, scounts, sdispls, sdts, rbuf, rcounts, rdispls, rdts, c, r)
    }
}

mpi_fn! {
    /// `MPI_Ibarrier`.
    fn Ibarrier = MPI_Ibarrier / PMPI_Ibarrier(c: Handle, r: *mut Handle) on comm(c) => {
        barrier("Ibarrier", How::Now, c, r)
    }
    /// `MPI_Barrier_init`.
    fn Barrier_init = MPI_Barrier_init / PMPI_Barrier_init(c: Handle, _info: Handle, r: *mut Handle) on comm(c) => {
        barrier("Barrier_init", How::Init, c, r)
    }

    /// `MPI_Ibcast`.
    fn Ibcast = MPI_Ibcast / PMPI_Ibcast(buf: *mut c_void, n: c_int, dt: Handle, root: c_int, c: Handle, r: *mut Handle) on comm(c) => {
        bcast("Ibcast", How::Now, buf, n.into(), dt, root, c, r)
    }
    /// `MPI_Bcast_init`.
    fn Bcast_init = MPI_Bcast_init / PMPI_Bcast_init(buf: *mut c_void, n: c_int, dt: Handle, root: c_int, c: Handle, _info: Handle, r: *mut Handle) on comm(c) => {
        bcast("Bcast_init", How::Init, buf, n.into(), dt, root, c, r)
    }

    /// `MPI_Igather`.
    fn Igather = MPI_Igather / PMPI_Igather(
        sbuf: *const c_void, sn: c_int, sdt: Handle, rbuf: *mut c_void, rn: c_int, rdt: Handle,
        root: c_int, c: Handle, r: *mut Handle,
    ) on comm(c) => {
        gather("Igather", How::Now, sbuf, sn, sdt, rbuf, rn, rdt, root, c, r)
    }
    /// `MPI_Gather_init`.
    fn Gather_init = MPI_Gather_init / PMPI_Gather_init(
        sbuf: *const c_void, sn: c_int, sdt: Handle, rbuf: *mut c_void, rn: c_int, rdt: Handle,
        root: c_int, c: Handle, _info: Handle, r: *mut Handle,
    ) on comm(c) => {
        gather("Gather_init", How::Init, sbuf, sn, sdt, rbuf, rn, rdt, root, c, r)
    }

    /// `MPI_Iscatter`.
    fn Iscatter = MPI_Iscatter / PMPI_Iscatter(
        sbuf: *const c_void, sn: c_int, sdt: Handle, rbuf: *mut c_void, rn: c_int, rdt: Handle,
        root: c_int, c: Handle, r: *mut Handle,
    ) on comm(c) => {
        scatter("Iscatter", How::Now, sbuf, sn, sdt, rbuf, rn, rdt, root, c, r)
    }
    /// `MPI_Scatter_init`.
    fn Scatter_init = MPI_Scatter_init / PMPI_Scatter_init(
        sbuf: *const c_void, sn: c_int, sdt: Handle, rbuf: *mut c_void, rn: c_int, rdt: Handle,
        root: c_int, c: Handle, _info: Handle, r: *mut Handle,
    ) on comm(c) => {
        scatter("Scatter_init", How::Init, sbuf, sn, sdt, rbuf, rn, rdt, root, c, r)
    }

    /// `MPI_Iallgather`.
    fn Iallgather = MPI_Iallgather / PMPI_Iallgather(
        sbuf: *const c_void, sn: c_int, sdt: Handle, rbuf: *mut c_void, rn: c_int, rdt: Handle,
        c: Handle, r: *mut Handle,
    ) on comm(c) => {
        allgather("Iallgather", How::Now, sbuf, sn, sdt, rbuf, rn, rdt, c, r)
    }
    /// `MPI_Allgather_init`.
    fn Allgather_init = MPI_Allgather_init / PMPI_Allgather_init(
        sbuf: *const c_void, sn: c_int, sdt: Handle, rbuf: *mut c_void, rn: c_int, rdt: Handle,
        c: Handle, _info: Handle, r: *mut Handle,
    ) on comm(c) => {
        allgather("Allgather_init", How::Init, sbuf, sn, sdt, rbuf, rn, rdt, c, r)
    }

    /// `MPI_Ialltoall`.
    fn Ialltoall = MPI_Ialltoall / PMPI_Ialltoall(
        sbuf: *const c_void, sn: c_int, sdt: Handle, rbuf: *mut c_void, rn: c_int, rdt: Handle,
        c: Handle, r: *mut Handle,
    ) on comm(c) => {
        alltoall("Ialltoall", How::Now, sbuf, sn, sdt, rbuf, rn, rdt, c, r)
    }
    /// `MPI_Alltoall_init`.
    fn Alltoall_init = MPI_Alltoall_init / PMPI_Alltoall_init(
        sbuf: *const c_void, sn: c_int, sdt: Handle, rbuf: *mut c_void, rn: c_int, rdt: Handle,
        c: Handle, _info: Handle, r: *mut Handle,
    ) on comm(c) => {
        alltoall("Alltoall_init", How::Init, sbuf, sn, sdt, rbuf, rn, rdt, c, r)
    }

    /// `MPI_Igatherv`.
    fn Igatherv = MPI_Igatherv / PMPI_Igatherv(
        sbuf: *const c_void, sn: c_int, sdt: Handle, rbuf: *mut c_void, rcounts: *const c_int,
        displs: *const c_int, rdt: Handle, root: c_int, c: Handle, r: *mut Handle,
    ) on comm(c) => {
        gatherv("Igatherv", How::Now, sbuf, sn, sdt, rbuf, rcounts, displs, rdt, root, c, r)
    }
    /// `MPI_Gatherv_init`.
    fn Gatherv_init = MPI_Gatherv_init / PMPI_Gatherv_init(
        sbuf: *const c_void, sn: c_int, sdt: Handle, rbuf: *mut c_void, rcounts: *const c_int,
        displs: *const c_int, rdt: Handle, root: c_int, c: Handle, _info: Handle, r: *mut Handle,
    ) on comm(c) => {
        gatherv("Gatherv_init", How::Init, sbuf, sn, sdt, rbuf, rcounts, displs, rdt, root, c, r)
    }

    /// `MPI_Iscatterv`.
    fn Iscatterv = MPI_Iscatterv / PMPI_Iscatterv(
        sbuf: *const c_void, scounts: *const c_int, displs: *const c_int, sdt: Handle,
        rbuf: *mut c_void, rn: c_int, rdt: Handle, root: c_int, c: Handle, r: *mut Handle,
    ) on comm(c) => {
        scatterv("Iscatterv", How::Now, sbuf, scounts, displs, sdt, rbuf, rn, rdt, root, c, r)
    }
    /// `MPI_Scatterv_init`.
    fn Scatterv_init = MPI_Scatterv_init / PMPI_Scatterv_init(
        sbuf: *const c_void, scounts: *const c_int, displs: *const c_int, sdt: Handle,
        rbuf: *mut c_void, rn: c_int, rdt: Handle, root: c_int, c: Handle, _info: Handle,
        r: *mut Handle,
    ) on comm(c) => {
        scatterv("Scatterv_init", How::Init, sbuf, scounts, displs, sdt, rbuf, rn, rdt, root, c, r)
    }

    /// `MPI_Iallgatherv`.
    fn Iallgatherv = MPI_Iallgatherv / PMPI_Iallgatherv(
        sbuf: *const c_void, sn: c_int, sdt: Handle, rbuf: *mut c_void, rcounts: *const c_int,
        displs: *const c_int, rdt: Handle, c: Handle, r: *mut Handle,
    ) on comm(c) => {
        allgatherv("Iallgatherv", How::Now, sbuf, sn, sdt, rbuf, rcounts, displs, rdt, c, r)
    }
    /// `MPI_Allgatherv_init`.
    fn Allgatherv_init = MPI_Allgatherv_init / PMPI_Allgatherv_init(
        sbuf: *const c_void, sn: c_int, sdt: Handle, rbuf: *mut c_void, rcounts: *const c_int,
        displs: *const c_int, rdt: Handle, c: Handle, _info: Handle, r: *mut Handle,
    ) on comm(c) => {
        allgatherv("Allgatherv_init", How::Init, sbuf, sn, sdt, rbuf, rcounts, displs, rdt, c, r)
    }

    /// `MPI_Ialltoallv`.
    fn Ialltoallv = MPI_Ialltoallv / PMPI_Ialltoallv(
        sbuf: *const c_void, scounts: *const c_int, sdispls: *const c_int, sdt: Handle,
        rbuf: *mut c_void, rcounts: *const c_int, rdispls: *const c_int, rdt: Handle,
        c: Handle, r: *mut Handle,
    ) on comm(c) => {
        alltoallv("Ialltoallv", How::Now, sbuf, scounts, sdispls, sdt, rbuf, rcounts, rdispls, rdt, c, r)
    }
    /// `MPI_Alltoallv_init`.
    fn Alltoallv_init = MPI_Alltoallv_init / PMPI_Alltoallv_init(
        sbuf: *const c_void, scounts: *const c_int, sdispls: *const c_int, sdt: Handle,
        rbuf: *mut c_void, rcounts: *const c_int, rdispls: *const c_int, rdt: Handle,
        c: Handle, _info: Handle, r: *mut Handle,
    ) on comm(c) => {
        alltoallv("Alltoallv_init", How::Init, sbuf, scounts, sdispls, sdt, rbuf, rcounts, rdispls, rdt, c, r)
    }

    /// `MPI_Ireduce`.
    fn Ireduce = MPI_Ireduce / PMPI_Ireduce(
        sbuf: *const c_void, rbuf: *mut c_void, n: c_int, dt: Handle, o: Handle, root: c_int,
        c: Handle, r: *mut Handle,
    ) on comm(c) => {
        reduce("Ireduce", How::Now, 3, sbuf, rbuf, n.into(), dt, o, root, c, r)
    }
    /// `MPI_Reduce_init`.
    fn Reduce_init = MPI_Reduce_init / PMPI_Reduce_init(
        sbuf: *const c_void, rbuf: *mut c_void, n: c_int, dt: Handle, o: Handle, root: c_int,
        c: Handle, _info: Handle, r: *mut Handle,
    ) on comm(c) => {
        reduce("Reduce_init", How::Init, 3, sbuf, rbuf, n.into(), dt, o, root, c, r)
    }

    /// `MPI_Iallreduce`.
    fn Iallreduce = MPI_Iallreduce / PMPI_Iallreduce(
        sbuf: *const c_void, rbuf: *mut c_void, n: c_int, dt: Handle, o: Handle, c: Handle,
        r: *mut Handle,
    ) on comm(c) => {
        reduce("Iallreduce", How::Now, 0, sbuf, rbuf, n.into(), dt, o, 0, c, r)
    }
    /// `MPI_Allreduce_init`.
    fn Allreduce_init = MPI_Allreduce_init / PMPI_Allreduce_init(
        sbuf: *const c_void, rbuf: *mut c_void, n: c_int, dt: Handle, o: Handle, c: Handle,
        _info: Handle, r: *mut Handle,
    ) on comm(c) => {
        reduce("Allreduce_init", How::Init, 0, sbuf, rbuf, n.into(), dt, o, 0, c, r)
    }

    /// `MPI_Iscan`.
    fn Iscan = MPI_Iscan / PMPI_Iscan(
        sbuf: *const c_void, rbuf: *mut c_void, n: c_int, dt: Handle, o: Handle, c: Handle,
        r: *mut Handle,
    ) on comm(c) => {
        reduce("Iscan", How::Now, 1, sbuf, rbuf, n.into(), dt, o, 0, c, r)
    }
    /// `MPI_Scan_init`.
    fn Scan_init = MPI_Scan_init / PMPI_Scan_init(
        sbuf: *const c_void, rbuf: *mut c_void, n: c_int, dt: Handle, o: Handle, c: Handle,
        _info: Handle, r: *mut Handle,
    ) on comm(c) => {
        reduce("Scan_init", How::Init, 1, sbuf, rbuf, n.into(), dt, o, 0, c, r)
    }

    /// `MPI_Iexscan`.
    fn Iexscan = MPI_Iexscan / PMPI_Iexscan(
        sbuf: *const c_void, rbuf: *mut c_void, n: c_int, dt: Handle, o: Handle, c: Handle,
        r: *mut Handle,
    ) on comm(c) => {
        reduce("Iexscan", How::Now, 2, sbuf, rbuf, n.into(), dt, o, 0, c, r)
    }
    /// `MPI_Exscan_init`.
    fn Exscan_init = MPI_Exscan_init / PMPI_Exscan_init(
        sbuf: *const c_void, rbuf: *mut c_void, n: c_int, dt: Handle, o: Handle, c: Handle,
        _info: Handle, r: *mut Handle,
    ) on comm(c) => {
        reduce("Exscan_init", How::Init, 2, sbuf, rbuf, n.into(), dt, o, 0, c, r)
    }

    /// `MPI_Ireduce_scatter`.
    fn Ireduce_scatter = MPI_Ireduce_scatter / PMPI_Ireduce_scatter(
        sbuf: *const c_void, rbuf: *mut c_void, rcounts: *const c_int, dt: Handle, o: Handle,
        c: Handle, r: *mut Handle,
    ) on comm(c) => {
        let comm = typed(c)?;
        let counts = counts("Ireduce_scatter", rcounts, comm.size() as usize)?;
        reduce_scatter("Ireduce_scatter", How::Now, false, sbuf, rbuf, &counts, dt, o, &comm, r)
    }
    /// `MPI_Reduce_scatter_init`.
    fn Reduce_scatter_init = MPI_Reduce_scatter_init / PMPI_Reduce_scatter_init(
        sbuf: *const c_void, rbuf: *mut c_void, rcounts: *const c_int, dt: Handle, o: Handle,
        c: Handle, _info: Handle, r: *mut Handle,
    ) on comm(c) => {
        let comm = typed(c)?;
        let counts = counts("Reduce_scatter_init", rcounts, comm.size() as usize)?;
        reduce_scatter("Reduce_scatter_init", How::Init, false, sbuf, rbuf, &counts, dt, o, &comm, r)
    }

    /// `MPI_Ireduce_scatter_block`.
    fn Ireduce_scatter_block = MPI_Ireduce_scatter_block / PMPI_Ireduce_scatter_block(
        sbuf: *const c_void, rbuf: *mut c_void, rn: c_int, dt: Handle, o: Handle, c: Handle,
        r: *mut Handle,
    ) on comm(c) => {
        let comm = typed(c)?;
        let counts = vec![count("Ireduce_scatter_block", rn)?; comm.size() as usize];
        reduce_scatter("Ireduce_scatter_block", How::Now, true, sbuf, rbuf, &counts, dt, o, &comm, r)
    }
    /// `MPI_Reduce_scatter_block_init`.
    fn Reduce_scatter_block_init = MPI_Reduce_scatter_block_init / PMPI_Reduce_scatter_block_init(
        sbuf: *const c_void, rbuf: *mut c_void, rn: c_int, dt: Handle, o: Handle, c: Handle,
        _info: Handle, r: *mut Handle,
    ) on comm(c) => {
        let comm = typed(c)?;
        let counts = vec![count("Reduce_scatter_block_init", rn)?; comm.size() as usize];
        reduce_scatter("Reduce_scatter_block_init", How::Init, true, sbuf, rbuf, &counts, dt, o, &comm, r)
    }
}
