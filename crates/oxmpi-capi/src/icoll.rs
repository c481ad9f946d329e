//! Nonblocking (`MPI_Ibcast`, …) and persistent (`MPI_Bcast_init`, …) collectives, and the
//! neighbourhood collectives in all three forms (`MPI_Neighbor_allgather`, its `I` and
//! `_init` forms, …).
//!
//! Both forms go through the handle layer's collective `*_init` functions: a persistent
//! request keeps the planned collective, a nonblocking one starts it at once
//! ([`Requests::immediately`]). Data moves as bytes; reductions run on the element type of
//! their (predefined) datatype, as in the blocking forms.
//!
//! Datatypes: every form takes any committed datatype, the v- and w-forms included. A
//! non-contiguous one is staged in bytes the request owns ([`Through`]): packed from the
//! caller's memory when the operation starts (at the call, or at each `MPI_Start` of a
//! persistent request) and unpacked into it when the request completes. Reductions take
//! derived datatypes made of one predefined type, reduced with that type's kernel on the
//! staged bytes. `MPI_IN_PLACE` is accepted wherever MPI allows it; where the in-place
//! block must be copied aside (gatherv, allgatherv, alltoallv, reduce_scatter_block) the
//! copy is taken when the call is made, so only the nonblocking form offers it.

use std::ffi::{c_int, c_void};
use std::ptr::NonNull;

use oxmpi::handle::request::{RequestId, Requests};
use oxmpi::op::Reducible;
use oxmpi::{Communicator, ErrorClass, Op, Result, Single};

use crate::boundary::{comm, count, err, mpi_fn, put, slice, span, AbiInt, Handle};
use crate::coll::{
    derived, either, in_place, layout, op, pair_layout, reduce_as, reduction_base, typed, VComm,
    CALL_DATATYPE,
};
use crate::datatypes::{data, with_elem_type, Data, Predef};
use crate::p2p::{req_handle, with_requests};
use crate::staging::{self, Kept, PairLayout, Piece, Through};

mod inter;

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

/// Stages `pieces` of the caller's buffer at `p` (`packed` bytes) in `k` and returns the
/// staged bytes' address: packed now (or, persistent, at each start) if `read`, unpacked at
/// each completion if `write`.
///
/// # Safety
/// The pieces' data bytes valid for reads now (`read`, not persistent), and as `read` and
/// `write` say at each start and completion.
unsafe fn stage(
    how: How,
    p: *const c_void,
    pieces: Vec<Piece>,
    packed: usize,
    pair: Option<PairLayout>,
    rw: (bool, bool),
    k: &mut Kept,
) -> *mut u8 {
    let mut t = Through::new(p, pieces, packed, pair, rw.0, rw.1);
    if rw.0 && how != How::Init {
        // SAFETY: forwarded.
        unsafe { t.pack() };
    }
    let at = if t.staged_len() == 0 {
        empty()
    } else {
        t.ptr()
    };
    k.staged.push(t);
    at
}

/// One piece: `count` elements of `ty` at the buffer's address, `len` packed bytes.
fn one(ty: oxmpi::datatype::Type, count: u64, len: usize) -> Vec<Piece> {
    vec![Piece {
        ty,
        at: 0,
        count,
        off: 0,
        len,
    }]
}

/// `n × blocks` elements of `dt` at `p`: (address, bytes) of the caller's memory, or of a
/// staged copy for a non-contiguous datatype (`rw` as in [`stage`]).
///
/// # Safety
/// `p` valid for the elements as `rw` says, until the request completes (is freed).
#[allow(clippy::too_many_arguments)]
unsafe fn buffer(
    name: &str,
    how: How,
    p: *const c_void,
    n: i64,
    dt: Handle,
    blocks: usize,
    rw: (bool, bool),
    k: &mut Kept,
) -> Result<(*mut u8, usize)> {
    let n = count(name, n)?
        .checked_mul(blocks)
        .ok_or_else(|| err(ErrorClass::Count, name, "count overflows"))?;
    match data(name, n as i64, dt as usize, p)? {
        Data::Bytes { len: 0, .. } => Ok((empty(), 0)),
        Data::Bytes { offset, len } => {
            let at = p.cast::<u8>().wrapping_offset(offset).cast_mut();
            if at.is_null() {
                return Err(null_buffer(name));
            }
            Ok((at, len))
        }
        // SAFETY: forwarded.
        Data::Typed { ty, count, len } => Ok((
            unsafe { stage(how, p, one(ty, count, len), len, None, rw, k) },
            len,
        )),
    }
}

/// `n × blocks` elements of `dt` from `p` for reading: (address, bytes).
///
/// # Safety
/// `p` valid for reads of those elements (at each start, if persistent).
#[allow(clippy::too_many_arguments)]
unsafe fn src(
    name: &str,
    how: How,
    p: *const c_void,
    n: i64,
    dt: Handle,
    blocks: usize,
    k: &mut Kept,
) -> Result<(*const u8, usize)> {
    // SAFETY: forwarded.
    let (at, len) = unsafe { buffer(name, how, p, n, dt, blocks, (true, false), k)? };
    Ok((at.cast_const(), len))
}

/// `n × blocks` elements of `dt` at `p` for writing, and for reading too if `read` (a
/// broadcast, an in-place form): a staged copy then starts as the packed current contents.
///
/// # Safety
/// `p` valid for writes (and reads) of those elements until the request completes.
#[allow(clippy::too_many_arguments)]
unsafe fn dst(
    name: &str,
    how: How,
    p: *mut c_void,
    n: i64,
    dt: Handle,
    blocks: usize,
    read: bool,
    k: &mut Kept,
) -> Result<(*mut u8, usize)> {
    // SAFETY: forwarded.
    unsafe { buffer(name, how, p.cast_const(), n, dt, blocks, (read, true), k) }
}

fn null_buffer(name: &str) -> oxmpi::Error {
    err(
        ErrorClass::Buffer,
        name,
        "the buffer is NULL with a non-zero count",
    )
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

/// The blocks of a v-collective at `base`: `p` counts and displacements (in extents of
/// `dt`) as the byte counts and offsets the byte collectives move, the bytes they span and
/// the address those are relative to: the caller's buffer for a predefined datatype, a
/// staged copy (`rw` as in [`stage`]) for a derived one.
///
/// # Safety
/// Arrays valid for `p` reads; the blocks' data valid as `rw` says.
#[allow(clippy::too_many_arguments)]
unsafe fn blocks<C: AbiInt, D: AbiInt>(
    name: &str,
    how: How,
    p: usize,
    counts: *const C,
    displs: *const D,
    dt: Handle,
    base: *const c_void,
    rw: (bool, bool),
    k: &mut Kept,
) -> Result<Blocks> {
    if let Some(d) = crate::datatypes::predef(dt as usize) {
        // SAFETY: forwarded.
        let (bc, bd, extent) = unsafe { layout(name, p, counts, displs, d.size)? };
        let at = whole(name, base, extent)?.cast_mut();
        return Ok(Blocks { bc, bd, extent, at });
    }
    let ty = oxmpi::handle::datatype::type_committed(name, crate::datatypes::id(dt as usize))?;
    // SAFETY: forwarded.
    let (c, d) = unsafe { (slice(name, counts, p)?, slice(name, displs, p)?) };
    let each: Vec<(usize, i64)> = c
        .iter()
        .zip(d)
        .map(|(&n, &o)| Ok((count(name, n.wide())?, o.wide())))
        .collect::<Result<_>>()?;
    // SAFETY: forwarded.
    unsafe { staged_blocks(name, how, &each, |_| Ok(ty.clone()), true, base, rw, k) }
}

/// Byte counts and offsets of a v- or w-collective's blocks, the bytes they span, and the
/// address they are relative to.
struct Blocks {
    bc: Vec<usize>,
    bd: Vec<usize>,
    extent: usize,
    at: *mut u8,
}

/// Blocks (`count`, displacement) of the types `ty(i)` at `base` staged one after another
/// (`scaled`: displacements in extents of the type, else in bytes).
///
/// # Safety
/// As [`blocks`].
#[allow(clippy::too_many_arguments)]
unsafe fn staged_blocks(
    name: &str,
    how: How,
    each: &[(usize, i64)],
    ty: impl Fn(usize) -> Result<oxmpi::datatype::Type>,
    scaled: bool,
    base: *const c_void,
    rw: (bool, bool),
    k: &mut Kept,
) -> Result<Blocks> {
    let overflow = || err(ErrorClass::Count, name, "count × datatype size overflows");
    let (mut bc, mut bd, mut pieces, mut total) = (vec![], vec![], vec![], 0usize);
    for (i, &(n, o)) in each.iter().enumerate() {
        let t = ty(i)?;
        let len = usize::try_from(t.size())
            .ok()
            .and_then(|s| s.checked_mul(n))
            .ok_or_else(overflow)?;
        let at = if scaled {
            o.wrapping_mul(t.extent())
        } else {
            o
        };
        pieces.push(Piece {
            ty: t,
            at: at as isize,
            count: n as u64,
            off: total,
            len,
        });
        bc.push(len);
        bd.push(total);
        total = total.checked_add(len).ok_or_else(overflow)?;
    }
    if total > isize::MAX as usize {
        return Err(beyond(name));
    }
    // SAFETY: forwarded.
    let at = unsafe { stage(how, base, pieces, total, None, rw, k) };
    Ok(Blocks {
        bc,
        bd,
        extent: total,
        at,
    })
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

    /// The send side of a reduction: null for `MPI_IN_PLACE`, a non-null address otherwise —
    /// the caller's, or, when it is not aligned for `T` (MPI does not require that), of an
    /// aligned copy staged in `k`.
    ///
    /// # Safety
    /// `p` valid for reads of `len` bytes as the request needs them (see [`stage`]).
    unsafe fn send_ptr<T>(
        name: &str,
        how: How,
        p: *const c_void,
        len: usize,
        k: &mut Kept,
    ) -> Result<*const T> {
        if in_place(p) {
            return Ok(std::ptr::null());
        }
        // SAFETY: forwarded.
        unsafe { operand_ptr::<T>(name, how, p, len, false, k) }.map(<*mut T>::cast_const)
    }

    /// The receive side of a reduction, as [`send_ptr`] (a staged copy is read at the start
    /// and written back at completion).
    ///
    /// # Safety
    /// `p` valid for reads and writes of `len` bytes until the request completes.
    unsafe fn recv_ptr<T>(
        name: &str,
        how: How,
        p: *mut c_void,
        len: usize,
        k: &mut Kept,
    ) -> Result<*mut T> {
        // SAFETY: forwarded.
        unsafe { operand_ptr::<T>(name, how, p, len, true, k) }
    }

    /// # Safety
    /// As [`recv_ptr`] (`write`) or [`send_ptr`].
    unsafe fn operand_ptr<T>(
        name: &str,
        how: How,
        p: *const c_void,
        len: usize,
        write: bool,
        k: &mut Kept,
    ) -> Result<*mut T> {
        if len == 0 {
            return Ok(NonNull::<T>::dangling().as_ptr());
        }
        if p.is_null() {
            return Err(null_buffer(name));
        }
        if (p as usize) % std::mem::align_of::<T>() == 0 {
            return Ok(p.cast_mut().cast());
        }
        let bytes = oxmpi::datatype::Type::predefined(oxmpi::datatype::Predefined::BYTE);
        // SAFETY: forwarded; the staged copy is 16-byte aligned, enough for every `T`.
        let at = unsafe {
            stage(
                how,
                p,
                one(bytes, len as u64, len),
                len,
                None,
                (true, write),
                k,
            )
        };
        Ok(at.cast())
    }

    /// `kind`: 0 allreduce, 1 scan, 2 exscan, 3 reduce at `root`; `len` bytes; `k` the
    /// buffers staged for the request.
    ///
    /// # Safety
    /// Buffers valid for `len` bytes until the request completes (is freed).
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn reduce<T: Reducible>(
        name: &str,
        how: How,
        kind: u8,
        c: &VComm,
        (sbuf, rbuf, len): (*const c_void, *mut c_void, usize),
        o: oxmpi::handle::op::OpHandle,
        root: c_int,
        out: *mut Handle,
        mut k: Kept,
    ) -> Result<()> {
        let n = len / std::mem::size_of::<T>().max(1);
        let (sends, at_root) = c.reduction_sides(kind == 3, root);
        let s = if sends {
            // SAFETY: the caller's buffers, valid until the request completes (is freed).
            unsafe { send_ptr::<T>(name, how, sbuf, len, &mut k)? }
        } else {
            NonNull::<T>::dangling().as_ptr()
        };
        let r = if at_root {
            // SAFETY: as above.
            unsafe { recv_ptr::<T>(name, how, rbuf, len, &mut k)? }
        } else {
            NonNull::<T>::dangling().as_ptr()
        };
        // SAFETY: the caller's buffers (or staged ones, kept with the request), valid until
        // the request completes.
        unsafe {
            launch(name, how, out, k, |q| match (c, kind) {
                (VComm::Intra(c), 0) => q.allreduce_init(c, s, r, n, o),
                (VComm::Intra(c), 1) => q.scan_init(c, s, r, n, o, false),
                (VComm::Intra(c), 2) => q.scan_init(c, s, r, n, o, true),
                (VComm::Intra(c), _) => q.reduce_init(c, s, r, n, o, root),
                (VComm::Inter(ic), 0) => q.inter_allreduce_init(ic, (s, r, n), o),
                (VComm::Inter(ic), 3) => {
                    let root = crate::coll::inter::root_of(name, ic, root)?;
                    q.inter_reduce_init(ic, (s, r, n), o, root)
                }
                (VComm::Inter(_), _) => Err(scan_on_inter(name)),
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
        c: &VComm,
        sbuf: *const c_void,
        rbuf: *mut c_void,
        counts: &[usize],
        o: oxmpi::handle::op::OpHandle,
        out: *mut Handle,
        mut k: Kept,
    ) -> Result<()> {
        let size = std::mem::size_of::<T>();
        let total: usize = counts.iter().sum();
        let mine = counts.get(c.rank() as usize).copied().unwrap_or(0);
        let (s, r) = if in_place(sbuf) {
            // SAFETY: the caller's buffer, valid until the request completes (is freed).
            let r = unsafe { recv_ptr::<T>(name, how, rbuf, total * size, &mut k)? };
            if block {
                // The handle layer's block form has no in-place variant: reduce a copy.
                // SAFETY: in place, `rbuf` holds the whole input (the MPI contract).
                let at = unsafe { snapshot(how, r.cast::<u8>(), 0, total * size, &mut k) };
                (at.cast::<T>(), r)
            } else {
                (std::ptr::null(), r)
            }
        } else {
            // SAFETY: the caller's buffers, valid until the request completes (is freed).
            unsafe {
                (
                    send_ptr::<T>(name, how, sbuf, total * size, &mut k)?,
                    recv_ptr::<T>(name, how, rbuf, mine * size, &mut k)?,
                )
            }
        };
        // A copied input must stay 8-byte aligned: a `Vec<u8>` is allocated with the
        // allocator's minimum alignment, at least 8 on every platform oxmpi runs on.
        aligned::<T>(name, s.cast(), if s.is_null() { 0 } else { total * size })?;
        // SAFETY: the caller's buffers (or ours, kept with the request).
        unsafe {
            launch(name, how, out, k, |q| match c {
                VComm::Intra(c) if block => q.reduce_scatter_block_init(c, s, r, mine, o),
                VComm::Intra(c) => q.reduce_scatter_init(c, s, r, counts, o),
                VComm::Inter(ic) => q.inter_reduce_scatter_init(ic, (s, r), counts, o),
            })
        }
    }
}

/// A reduction's operand of `items` elements of a derived datatype `ty` (of base `b`) at
/// `p`, staged as an array of the base's elements: its address and bytes.
///
/// # Safety
/// As [`stage`].
#[allow(clippy::too_many_arguments)]
unsafe fn operand(
    name: &str,
    how: How,
    p: *const c_void,
    ty: &oxmpi::datatype::Type,
    items: usize,
    b: &Predef,
    rw: (bool, bool),
    k: &mut Kept,
) -> Result<(*mut c_void, usize)> {
    let len = usize::try_from(ty.size())
        .ok()
        .and_then(|s| s.checked_mul(items))
        .ok_or_else(|| err(ErrorClass::Count, name, "count × datatype size overflows"))?;
    let pair = pair_layout(b);
    let pieces = one(ty.clone(), items as u64, len);
    // SAFETY: forwarded.
    let at = unsafe { stage(how, p, pieces, len, pair, rw, k) };
    let wide = k.staged.last().map_or(0, |t| t.staged_len());
    Ok((at.cast(), wide))
}

/// A reduction (`kind` as in [`typed_ops::reduce`]) of `n` elements of `dt`: a predefined
/// datatype, or a derived one of one predefined type, whose operands are staged (an
/// in-place input is packed from the receive buffer).
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
    let comm = VComm::new(c)?;
    match &comm {
        VComm::Intra(intra) if kind == 3 => check_root(name, intra, root)?,
        VComm::Intra(_) => {}
        VComm::Inter(_) if kind == 1 || kind == 2 => return Err(scan_on_inter(name)),
        VComm::Inter(ic) => {
            if kind == 3 {
                crate::coll::inter::root_of(name, ic, root)?;
            }
            if comm.reduction_sides(kind == 3, root).0 {
                crate::coll::inter::no_in_place(name, sbuf)?;
            }
        }
    }
    let (sends, at_root) = comm.reduction_sides(kind == 3, root);
    let (oh, op) = op(o)?;
    let mut k = Kept::default();
    let (d, bufs) = match reduction_base(name, dt)? {
        None => {
            let (len, d) = span(name, n, dt)?;
            (d, (sbuf, rbuf, len))
        }
        Some(b) => {
            let (ty, items, _) = derived(name, n, dt, 1, rbuf.cast_const())?;
            let items = items as usize;
            let from = if in_place(sbuf) {
                rbuf.cast_const()
            } else {
                sbuf
            };
            let none = (empty().cast(), 0);
            let (s, slen) = if sends {
                // SAFETY: the caller's buffers, valid until the request completes (is freed).
                unsafe { operand(name, how, from, &ty, items, b, (true, false), &mut k)? }
            } else {
                none
            };
            let (r, rlen) = if at_root {
                // Read too: what the operation leaves alone (exscan's rank 0) stays as it is.
                // SAFETY: as above.
                unsafe { operand(name, how, rbuf, &ty, items, b, (true, true), &mut k)? }
            } else {
                none
            };
            // Both sides stage the same elements; an intercommunicator's root only receives.
            (b, (s.cast_const(), r, slen.max(rlen)))
        }
    };
    // SAFETY: forwarded.
    reduce_as!(name, d, op, T => unsafe {
        typed_ops::reduce::<T>(name, how, kind, &comm, bufs, oh, root, out, k)
    })
}

/// `MPI_Reduce_scatter(_block)` in all three forms: `counts` in elements of `dt`, a
/// predefined datatype or a derived one of one predefined type (staged as in [`reduce`]).
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
    comm: &VComm,
    out: *mut Handle,
) -> Result<()> {
    if matches!(comm, VComm::Inter(_)) {
        crate::coll::inter::no_in_place(name, sbuf)?;
    }
    let (oh, op) = op(o)?;
    let Some(b) = reduction_base(name, dt)? else {
        let d = predefined(name, dt)?;
        // SAFETY: forwarded.
        return reduce_as!(name, d, op, T => unsafe {
            typed_ops::reduce_scatter::<T>(name, how, block, comm, sbuf, rbuf, counts, oh, out, Kept::default())
        });
    };
    let ty = oxmpi::handle::datatype::type_committed(name, crate::datatypes::id(dt as usize))?;
    // Base elements per element of `ty` (pairs count as one).
    let base = oxmpi::datatype::Type::predefined(
        oxmpi::datatype::Predefined::from_handle(b.handle as u32)
            .ok_or_else(|| err(ErrorClass::Type, name, "no base type"))?,
    );
    let per = (ty.size() / base.size().max(1)) as usize;
    let total: usize = counts.iter().sum();
    let mine = counts.get(comm.rank() as usize).copied().unwrap_or(0);
    let scaled: Vec<usize> = counts.iter().map(|&x| x * per).collect();
    let from = if in_place(sbuf) {
        rbuf.cast_const()
    } else {
        sbuf
    };
    let mut k = Kept::default();
    // SAFETY: the caller's buffers, valid until the request completes (is freed).
    let (s, r) = unsafe {
        (
            operand(name, how, from, &ty, total, b, (true, false), &mut k)?.0,
            operand(name, how, rbuf, &ty, mine, b, (true, true), &mut k)?.0,
        )
    };
    // SAFETY: staged buffers, kept with the request.
    reduce_as!(name, b, op, T => unsafe {
        typed_ops::reduce_scatter::<T>(name, how, block, comm, s, r, &scaled, oh, out, k)
    })
}

/// A blocking reduction (`kind` as in [`typed_ops::reduce`]) through the staged path: a
/// derived datatype on an intercommunicator.
///
/// # Safety
/// As the MPI call.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn reduce_blocking(
    name: &str,
    kind: u8,
    sbuf: *const c_void,
    rbuf: *mut c_void,
    n: i64,
    dt: Handle,
    o: Handle,
    root: c_int,
    c: Handle,
) -> Result<()> {
    let out = std::ptr::null_mut();
    // SAFETY: forwarded.
    unsafe { reduce(name, How::Block, kind, sbuf, rbuf, n, dt, o, root, c, out) }
}

/// Blocking `MPI_Reduce_scatter(_block)` through a derived datatype.
///
/// # Safety
/// As the MPI call.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn reduce_scatter_blocking(
    name: &str,
    block: bool,
    sbuf: *const c_void,
    rbuf: *mut c_void,
    counts: &[usize],
    dt: Handle,
    o: Handle,
    comm: &VComm,
) -> Result<()> {
    // SAFETY: forwarded.
    unsafe {
        reduce_scatter(
            name,
            How::Block,
            block,
            sbuf,
            rbuf,
            counts,
            dt,
            o,
            comm,
            std::ptr::null_mut(),
        )
    }
}

/// Scans are not defined on intercommunicators (MPI-5.0 §6.2.2).
fn scan_on_inter(name: &str) -> oxmpi::Error {
    err(
        ErrorClass::Comm,
        name,
        "scans are not defined on intercommunicators",
    )
}

/// Element counts of a `p`-array as `usize`.
///
/// # Safety
/// `p` valid for `n` reads.
unsafe fn counts<C: AbiInt>(name: &str, p: *const C, n: usize) -> Result<Vec<usize>> {
    // SAFETY: forwarded.
    unsafe { slice(name, p, n)? }
        .iter()
        .map(|&x| count(name, x.wide()))
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
    let comm = match either(c)? {
        Ok(comm) => comm,
        // SAFETY: forwarded.
        Err(ic) => return unsafe { inter::barrier(name, how, &ic, out) },
    };
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
    let comm = match either(c)? {
        Ok(comm) => comm,
        // SAFETY: forwarded.
        Err(ic) => return unsafe { inter::bcast(name, how, &ic, buf, n, dt, root, out) },
    };
    check_root(name, &comm, root)?;
    let mut k = Kept::default();
    // SAFETY: the caller's buffer.
    let (b, len) = unsafe { dst(name, how, buf, n, dt, 1, comm.rank() == root, &mut k)? };
    // SAFETY: valid until the request completes (is freed); a staged copy is kept with it.
    unsafe { launch(name, how, out, k, |q| q.bcast_init(&comm, b, len, root)) }
}

#[allow(clippy::too_many_arguments)]
unsafe fn gather(
    name: &str,
    how: How,
    sbuf: *const c_void,
    sn: i64,
    sdt: Handle,
    rbuf: *mut c_void,
    rn: i64,
    rdt: Handle,
    root: c_int,
    c: Handle,
    out: *mut Handle,
) -> Result<()> {
    let comm = match either(c)? {
        Ok(comm) => comm,
        // SAFETY: forwarded.
        Err(ic) => {
            let (s, r) = ((sbuf, sn, sdt), (rbuf, rn, rdt));
            return unsafe { inter::rooted(name, how, false, &ic, s, r, root, out) };
        }
    };
    check_root(name, &comm, root)?;
    let p = comm.size() as usize;
    let mut k = Kept::default();
    // SAFETY: the caller's buffers, valid until the request completes.
    unsafe {
        if comm.rank() == root {
            let ip = in_place(sbuf);
            let (r, rlen) = dst(name, how, rbuf, rn, rdt, p, ip, &mut k)?;
            let block = rlen / p.max(1);
            let (s, slen) = if ip {
                (std::ptr::null(), block)
            } else {
                src(name, how, sbuf, sn, sdt, 1, &mut k)?
            };
            same_block(name, slen, block)?;
            launch(name, how, out, k, |q| {
                q.gather_init(&comm, s, slen, r, root)
            })
        } else {
            let (s, slen) = src(name, how, sbuf, sn, sdt, 1, &mut k)?;
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
    sn: i64,
    sdt: Handle,
    rbuf: *mut c_void,
    rn: i64,
    rdt: Handle,
    root: c_int,
    c: Handle,
    out: *mut Handle,
) -> Result<()> {
    let comm = match either(c)? {
        Ok(comm) => comm,
        // SAFETY: forwarded.
        Err(ic) => {
            let (s, r) = ((sbuf, sn, sdt), (rbuf, rn, rdt));
            return unsafe { inter::rooted(name, how, true, &ic, s, r, root, out) };
        }
    };
    check_root(name, &comm, root)?;
    let p = comm.size() as usize;
    let mut k = Kept::default();
    // SAFETY: the caller's buffers, valid until the request completes.
    unsafe {
        if comm.rank() == root {
            let (s, slen) = src(name, how, sbuf, sn, sdt, p, &mut k)?;
            let block = slen / p.max(1);
            let r = if in_place(rbuf) {
                std::ptr::null_mut()
            } else {
                let (r, rlen) = dst(name, how, rbuf, rn, rdt, 1, false, &mut k)?;
                same_block(name, block, rlen)?;
                r
            };
            launch(name, how, out, k, |q| {
                q.scatter_init(&comm, s, r, block, root)
            })
        } else {
            let (r, rlen) = dst(name, how, rbuf, rn, rdt, 1, false, &mut k)?;
            launch(name, how, out, k, |q| {
                q.scatter_init(&comm, empty(), r, rlen, root)
            })
        }
    }
}

/// `MPI_Allgather` (`all_to_all` false) and `MPI_Alltoall`.
#[allow(clippy::too_many_arguments)]
unsafe fn allgather(
    name: &str,
    how: How,
    all_to_all: bool,
    sbuf: *const c_void,
    sn: i64,
    sdt: Handle,
    rbuf: *mut c_void,
    rn: i64,
    rdt: Handle,
    c: Handle,
    out: *mut Handle,
) -> Result<()> {
    let comm = match either(c)? {
        Ok(comm) => comm,
        // SAFETY: forwarded.
        Err(ic) => {
            let (s, r) = ((sbuf, sn, sdt), (rbuf, rn, rdt));
            return unsafe { inter::allgather(name, how, all_to_all, &ic, s, r, out) };
        }
    };
    let p = comm.size() as usize;
    let mut k = Kept::default();
    let ip = in_place(sbuf);
    // SAFETY: the caller's buffers, valid until the request completes.
    unsafe {
        let (r, rlen) = dst(name, how, rbuf, rn, rdt, p, ip, &mut k)?;
        let block = rlen / p.max(1);
        let sblocks = if all_to_all { p } else { 1 };
        let (s, slen) = if ip {
            (std::ptr::null(), block * sblocks)
        } else {
            src(name, how, sbuf, sn, sdt, sblocks, &mut k)?
        };
        same_block(name, slen, block * sblocks)?;
        launch(name, how, out, k, |q| {
            if all_to_all {
                q.alltoall_init(&comm, s, r, block)
            } else {
                q.allgather_init(&comm, s, slen, r)
            }
        })
    }
}

/// The `len` bytes at `at` of `base` as they are when the operation starts, kept in `k`:
/// copied now, or, persistent, staged and copied again at each start. An in-place form's
/// input, which the operation then overwrites where it lies.
///
/// # Safety
/// `base + at` valid for reads of `len` bytes now, or at each start if persistent (after
/// the buffers staged in `k` before it are packed: `base` may be one of them).
unsafe fn snapshot(how: How, base: *const u8, at: usize, len: usize, k: &mut Kept) -> *const u8 {
    if len == 0 {
        return empty();
    }
    if how == How::Init {
        let bytes = oxmpi::datatype::Type::predefined(oxmpi::datatype::Predefined::BYTE);
        // SAFETY: forwarded; `read` without `write`: packed at each start, never unpacked.
        let p = unsafe { base.add(at) };
        return unsafe {
            stage(
                how,
                p.cast(),
                one(bytes, len as u64, len),
                len,
                None,
                (true, false),
                k,
            )
        }
        .cast_const();
    }
    // SAFETY: forwarded.
    let v = unsafe { std::slice::from_raw_parts(base.add(at), len) }.to_vec();
    let p = v.as_ptr();
    k.sends.push(v);
    p
}

/// `MPI_Gatherv` (`all` false; `root` receives) and `MPI_Allgatherv` (`all` true).
#[allow(clippy::too_many_arguments)]
unsafe fn gatherv<C: AbiInt, D: AbiInt>(
    name: &str,
    how: How,
    all: bool,
    sbuf: *const c_void,
    sn: i64,
    sdt: Handle,
    rbuf: *mut c_void,
    rcounts: *const C,
    displs: *const D,
    rdt: Handle,
    root: c_int,
    c: Handle,
    out: *mut Handle,
) -> Result<()> {
    let comm = match either(c)? {
        Ok(comm) => comm,
        // SAFETY: forwarded.
        Err(ic) => {
            let (s, r) = ((sbuf, sn, sdt), (rbuf, rcounts, displs, rdt));
            return unsafe { inter::gatherv(name, how, all, &ic, s, r, root, out) };
        }
    };
    if !all {
        check_root(name, &comm, root)?;
    }
    let mut k = Kept::default();
    let me = comm.rank();
    // SAFETY: the caller's buffers and arrays, valid until the request completes.
    unsafe {
        if !all && me != root {
            let (s, slen) = src(name, how, sbuf, sn, sdt, 1, &mut k)?;
            return launch(name, how, out, k, |q| {
                q.gatherv_init(&comm, s, slen, empty(), 0, &[], &[], root)
            });
        }
        let p = comm.size() as usize;
        let ip = in_place(sbuf);
        let b = blocks(name, how, p, rcounts, displs, rdt, rbuf, (ip, true), &mut k)?;
        let (s, slen) = if ip {
            let i = me as usize;
            (snapshot(how, b.at, b.bd[i], b.bc[i], &mut k), b.bc[i])
        } else {
            src(name, how, sbuf, sn, sdt, 1, &mut k)?
        };
        launch(name, how, out, k, |q| {
            if all {
                q.allgatherv_init(&comm, s, slen, b.at, b.extent, &b.bc, &b.bd)
            } else {
                q.gatherv_init(&comm, s, slen, b.at, b.extent, &b.bc, &b.bd, root)
            }
        })
    }
}

#[allow(clippy::too_many_arguments)]
unsafe fn scatterv<C: AbiInt, D: AbiInt>(
    name: &str,
    how: How,
    sbuf: *const c_void,
    scounts: *const C,
    displs: *const D,
    sdt: Handle,
    rbuf: *mut c_void,
    rn: i64,
    rdt: Handle,
    root: c_int,
    c: Handle,
    out: *mut Handle,
) -> Result<()> {
    let comm = match either(c)? {
        Ok(comm) => comm,
        // SAFETY: forwarded.
        Err(ic) => {
            let (s, r) = ((sbuf, scounts, displs, sdt), (rbuf, rn, rdt));
            return unsafe { inter::scatterv(name, how, &ic, s, r, root, out) };
        }
    };
    check_root(name, &comm, root)?;
    let mut k = Kept::default();
    let me = comm.rank();
    // SAFETY: the caller's buffers and arrays, valid until the request completes.
    unsafe {
        if me != root {
            let (r, rlen) = dst(name, how, rbuf, rn, rdt, 1, false, &mut k)?;
            return launch(name, how, out, k, |q| {
                q.scatterv_init(&comm, empty(), 0, &[], &[], r, rlen, root)
            });
        }
        let p = comm.size() as usize;
        let b = blocks(
            name,
            how,
            p,
            scounts,
            displs,
            sdt,
            sbuf,
            (true, false),
            &mut k,
        )?;
        let (r, rlen) = if in_place(rbuf) {
            // The root's block stays where it is: it lands in scratch the request owns.
            let mut v = vec![0u8; b.bc[me as usize]];
            let at = v.as_mut_ptr();
            let n = v.len();
            k.sends.push(v);
            (at, n)
        } else {
            dst(name, how, rbuf, rn, rdt, 1, false, &mut k)?
        };
        launch(name, how, out, k, |q| {
            q.scatterv_init(&comm, b.at, b.extent, &b.bc, &b.bd, r, rlen, root)
        })
    }
}

/// The send side of an alltoallv/w: in place, the receive blocks as they are when the
/// operation starts ([`snapshot`]), else the send blocks.
///
/// # Safety
/// `r`'s bytes readable now (at each start, if persistent).
unsafe fn in_place_input(
    how: How,
    r: &Blocks,
    k: &mut Kept,
    send: impl FnOnce(&mut Kept) -> Result<Blocks>,
    ip: bool,
) -> Result<Blocks> {
    if !ip {
        return send(k);
    }
    Ok(Blocks {
        // SAFETY: forwarded.
        at: unsafe { snapshot(how, r.at, 0, r.extent, k) }.cast_mut(),
        bc: r.bc.clone(),
        bd: r.bd.clone(),
        extent: r.extent,
    })
}

/// `MPI_Alltoallv` and `MPI_Alltoallw`: `build(p, send, rw, k)` gives the send (`send`)
/// or receive blocks for `p` ranks.
unsafe fn alltoall_blocks(
    name: &str,
    how: How,
    sbuf: *const c_void,
    c: Handle,
    out: *mut Handle,
    build: impl Fn(usize, bool, (bool, bool), &mut Kept) -> Result<Blocks>,
) -> Result<()> {
    let comm = match either(c)? {
        Ok(comm) => comm,
        // SAFETY: forwarded.
        Err(ic) => return unsafe { inter::alltoall_blocks(name, how, &ic, sbuf, out, build) },
    };
    let mut k = Kept::default();
    let p = comm.size() as usize;
    let ip = in_place(sbuf);
    let r = build(p, false, (ip, true), &mut k)?;
    // SAFETY: the receive blocks are readable now, or at each start (the MPI contract).
    let s = unsafe { in_place_input(how, &r, &mut k, |k| build(p, true, (true, false), k), ip)? };
    // SAFETY: the caller's buffers (or staged ones, kept), valid until the request completes.
    unsafe {
        launch(name, how, out, k, |q| {
            q.alltoallv_init(
                &comm, s.at, s.extent, &s.bc, &s.bd, r.at, r.extent, &r.bc, &r.bd,
            )
        })
    }
}

#[allow(clippy::too_many_arguments)]
unsafe fn alltoallv<C: AbiInt, D: AbiInt>(
    name: &str,
    how: How,
    sbuf: *const c_void,
    scounts: *const C,
    sdispls: *const D,
    sdt: Handle,
    rbuf: *mut c_void,
    rcounts: *const C,
    rdispls: *const D,
    rdt: Handle,
    c: Handle,
    out: *mut Handle,
) -> Result<()> {
    // SAFETY: the caller's buffers and arrays, valid until the request completes.
    unsafe {
        alltoall_blocks(name, how, sbuf, c, out, |p, send, rw, k| {
            if send {
                blocks(name, how, p, scounts, sdispls, sdt, sbuf, rw, k)
            } else {
                blocks(name, how, p, rcounts, rdispls, rdt, rbuf, rw, k)
            }
        })
    }
}

/// `n` blocks of an alltoallw at `base` (displacements in bytes), as [`blocks`]: the
/// caller's buffer when every datatype is predefined, else every block staged through its
/// datatype.
///
/// # Safety
/// Arrays valid for `n` reads; the blocks' data valid as `rw` says.
#[allow(clippy::too_many_arguments)]
unsafe fn wblocks<C: AbiInt, D: AbiInt>(
    name: &str,
    how: How,
    n: usize,
    counts: *const C,
    displs: *const D,
    types: *const Handle,
    base: *const c_void,
    rw: (bool, bool),
    k: &mut Kept,
) -> Result<Blocks> {
    // SAFETY: forwarded.
    let (c, d, t) = unsafe {
        (
            slice(name, counts, n)?,
            slice(name, displs, n)?,
            slice(name, types, n)?,
        )
    };
    let each: Vec<(usize, i64)> = c
        .iter()
        .zip(d)
        .map(|(&x, &o)| Ok((count(name, x.wide())?, o.wide())))
        .collect::<Result<_>>()?;
    if t.iter()
        .any(|&h| crate::datatypes::predef(h as usize).is_none())
    {
        let ty = |i: usize| {
            oxmpi::handle::datatype::type_committed(name, crate::datatypes::id(t[i] as usize))
        };
        // SAFETY: forwarded.
        return unsafe { staged_blocks(name, how, &each, ty, false, base, rw, k) };
    }
    let mut bc = Vec::with_capacity(n);
    for (i, &(x, _)) in each.iter().enumerate() {
        let len = x
            .checked_mul(crate::datatypes::lookup(name, t[i] as usize)?.size)
            .ok_or_else(|| err(ErrorClass::Count, name, "count × datatype size overflows"))?;
        bc.push(len);
    }
    // The region runs from the lowest block to the end of the highest, so displacements may
    // be negative, or absolute addresses from `MPI_BOTTOM` (a null `base`).
    let spans = || each.iter().zip(&bc).filter(|(_, &len)| len > 0);
    let lo = spans().map(|(&(_, di), _)| di).min().unwrap_or(0);
    let mut extent = 0usize;
    for (&(_, di), &len) in spans() {
        let end = usize::try_from(i128::from(di) - i128::from(lo))
            .ok()
            .and_then(|at| at.checked_add(len))
            .ok_or_else(|| beyond(name))?;
        extent = extent.max(end);
    }
    if extent > isize::MAX as usize {
        return Err(beyond(name));
    }
    let bd = each
        .iter()
        .zip(&bc)
        .map(|(&(_, di), &len)| if len > 0 { (di - lo) as usize } else { 0 })
        .collect();
    let start = base.cast::<u8>().wrapping_offset(lo as isize);
    let at = whole(name, start, extent)?.cast_mut();
    Ok(Blocks { bc, bd, extent, at })
}

/// Blocks that reach beyond the address space ([`ErrorClass::Count`]).
fn beyond(name: &str) -> oxmpi::Error {
    err(
        ErrorClass::Count,
        name,
        "a block is beyond the address space",
    )
}

/// The caller's buffer of `extent` bytes at `p` (a non-null address when empty).
fn whole<T>(name: &str, p: *const T, extent: usize) -> Result<*const u8> {
    if extent > 0 && p.is_null() {
        return Err(null_buffer(name));
    }
    Ok(if extent == 0 { empty() } else { p.cast() })
}

/// The neighbourhood collectives, `kind` 0 allgather, 1 alltoall.
#[allow(clippy::too_many_arguments)]
unsafe fn neighbor_regular(
    name: &str,
    how: How,
    kind: u8,
    sbuf: *const c_void,
    sn: i64,
    sdt: Handle,
    rbuf: *mut c_void,
    rn: i64,
    rdt: Handle,
    c: Handle,
    out: *mut Handle,
) -> Result<()> {
    let comm = typed(c)?;
    let (indeg, outdeg) = oxmpi::handle::topo::neighbor_degrees(crate::boundary::comm(c))?;
    let mut k = Kept::default();
    let sblocks = if kind == 0 { 1 } else { outdeg };
    // SAFETY: the caller's buffers, valid until the request completes.
    unsafe {
        let (s, slen) = src(name, how, sbuf, sn, sdt, sblocks, &mut k)?;
        let (r, rlen) = dst(name, how, rbuf, rn, rdt, indeg, false, &mut k)?;
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
unsafe fn neighbor_allgatherv<C: AbiInt, D: AbiInt>(
    name: &str,
    how: How,
    sbuf: *const c_void,
    sn: i64,
    sdt: Handle,
    rbuf: *mut c_void,
    rcounts: *const C,
    displs: *const D,
    rdt: Handle,
    c: Handle,
    out: *mut Handle,
) -> Result<()> {
    let comm = typed(c)?;
    let (indeg, _) = oxmpi::handle::topo::neighbor_degrees(crate::boundary::comm(c))?;
    let mut k = Kept::default();
    // SAFETY: the caller's buffers and arrays, valid until the request completes.
    unsafe {
        let (s, slen) = src(name, how, sbuf, sn, sdt, 1, &mut k)?;
        let r = blocks(
            name,
            how,
            indeg,
            rcounts,
            displs,
            rdt,
            rbuf,
            (false, true),
            &mut k,
        )?;
        launch(name, how, out, k, |q| {
            q.neighbor_v_init(&comm, s, slen, None, r.at, r.extent, &r.bc, &r.bd)
        })
    }
}

/// The vector neighbourhood collectives: `build` gives the send and receive blocks from
/// the in- and out-degrees.
unsafe fn neighbor_v(
    name: &str,
    how: How,
    c: Handle,
    out: *mut Handle,
    build: impl FnOnce(usize, usize, &mut Kept) -> Result<(Blocks, Blocks)>,
) -> Result<()> {
    let comm = typed(c)?;
    let (indeg, outdeg) = oxmpi::handle::topo::neighbor_degrees(crate::boundary::comm(c))?;
    let mut k = Kept::default();
    let (s, r) = build(indeg, outdeg, &mut k)?;
    // SAFETY: the caller's buffers (or staged ones, kept), valid until the request completes.
    unsafe {
        launch(name, how, out, k, |q| {
            q.neighbor_v_init(
                &comm,
                s.at,
                s.extent,
                Some((&s.bc, &s.bd)),
                r.at,
                r.extent,
                &r.bc,
                &r.bd,
            )
        })
    }
}

#[allow(clippy::too_many_arguments)]
unsafe fn neighbor_alltoallv<C: AbiInt, D: AbiInt>(
    name: &str,
    how: How,
    sbuf: *const c_void,
    scounts: *const C,
    sdispls: *const D,
    sdt: Handle,
    rbuf: *mut c_void,
    rcounts: *const C,
    rdispls: *const D,
    rdt: Handle,
    c: Handle,
    out: *mut Handle,
) -> Result<()> {
    // SAFETY: the caller's buffers and arrays, valid until the request completes.
    unsafe {
        neighbor_v(name, how, c, out, |indeg, outdeg, k| {
            Ok((
                blocks(
                    name,
                    how,
                    outdeg,
                    scounts,
                    sdispls,
                    sdt,
                    sbuf,
                    (true, false),
                    k,
                )?,
                blocks(
                    name,
                    how,
                    indeg,
                    rcounts,
                    rdispls,
                    rdt,
                    rbuf,
                    (false, true),
                    k,
                )?,
            ))
        })
    }
}

#[allow(clippy::too_many_arguments)]
unsafe fn neighbor_alltoallw<C: AbiInt, D: AbiInt>(
    name: &str,
    how: How,
    sbuf: *const c_void,
    scounts: *const C,
    sdispls: *const D,
    sdts: *const Handle,
    rbuf: *mut c_void,
    rcounts: *const C,
    rdispls: *const D,
    rdts: *const Handle,
    c: Handle,
    out: *mut Handle,
) -> Result<()> {
    // SAFETY: the caller's buffers and arrays, valid until the request completes.
    unsafe {
        neighbor_v(name, how, c, out, |indeg, outdeg, k| {
            Ok((
                wblocks(
                    name,
                    how,
                    outdeg,
                    scounts,
                    sdispls,
                    sdts,
                    sbuf,
                    (true, false),
                    k,
                )?,
                wblocks(
                    name,
                    how,
                    indeg,
                    rcounts,
                    rdispls,
                    rdts,
                    rbuf,
                    (false, true),
                    k,
                )?,
            ))
        })
    }
}

/// `MPI_Alltoallw` in its three forms (displacements in bytes).
#[allow(clippy::too_many_arguments)]
unsafe fn alltoallw<C: AbiInt, D: AbiInt>(
    name: &str,
    how: How,
    sbuf: *const c_void,
    scounts: *const C,
    sdispls: *const D,
    sdts: *const Handle,
    rbuf: *mut c_void,
    rcounts: *const C,
    rdispls: *const D,
    rdts: *const Handle,
    c: Handle,
    out: *mut Handle,
) -> Result<()> {
    // SAFETY: the caller's buffers and arrays, valid until the request completes.
    unsafe {
        alltoall_blocks(name, how, sbuf, c, out, |p, send, rw, k| {
            if send {
                wblocks(name, how, p, scounts, sdispls, sdts, sbuf, rw, k)
            } else {
                wblocks(name, how, p, rcounts, rdispls, rdts, rbuf, rw, k)
            }
        })
    }
}

/// Defines the exported forms of one collective, each as `MPI_x` and `PMPI_x` through
/// [`mpi_fn`]: the nonblocking one (`r`: the request), the persistent one (`_info`, `r`),
/// and, where given, the blocking one; each calls `$f(name, how, args…, request)`.
macro_rules! forms {
    (@block [] $($rest:tt)*) => {};
    (@block [$B:ident $MB:ident $PB:ident] ($($a:ident : $t:ty),*) $c:ident $f:ident ($($x:expr),*)) => {
        mpi_fn! {
            #[doc = concat!("`MPI_", stringify!($B), "`.")]
            fn $B = $MB / $PB($($a: $t),*) on comm($c) => {
                $f(stringify!($B), How::Block, $($x,)* std::ptr::null_mut())
            }
        }
    };
    ($(
        $I:ident = $MI:ident / $PI:ident, $N:ident = $MN:ident / $PN:ident
        $(, $B:ident = $MB:ident / $PB:ident)?
        ( $($a:ident : $t:ty),* $(,)? ) on $c:ident => $f:ident ( $($x:expr),* $(,)? );
    )*) => { $(
        mpi_fn! {
            #[doc = concat!("`MPI_", stringify!($I), "`.")]
            fn $I = $MI / $PI($($a: $t,)* r: *mut Handle) on comm($c) => {
                $f(stringify!($I), How::Now, $($x,)* r)
            }
            #[doc = concat!("`MPI_", stringify!($N), "`.")]
            fn $N = $MN / $PN($($a: $t,)* _info: Handle, r: *mut Handle) on comm($c) => {
                $f(stringify!($N), How::Init, $($x,)* r)
            }
        }
        forms!(@block [$($B $MB $PB)?] ($($a: $t),*) $c $f ($($x),*));
    )* };
}

/// `MPI_Reduce_scatter` in a nonblocking or persistent form: the counts read here.
#[allow(clippy::too_many_arguments)]
unsafe fn reduce_scatter_counts<C: AbiInt>(
    name: &str,
    how: How,
    block: bool,
    sbuf: *const c_void,
    rbuf: *mut c_void,
    rcounts: *const C,
    rn: i64,
    dt: Handle,
    o: Handle,
    c: Handle,
    out: *mut Handle,
) -> Result<()> {
    let comm = VComm::new(c)?;
    let p = comm.size() as usize;
    let counts = if block {
        vec![count(name, rn)?; p]
    } else {
        // SAFETY: `rcounts` valid for `p` reads (the MPI contract).
        unsafe { counts(name, rcounts, p)? }
    };
    // SAFETY: forwarded.
    unsafe { reduce_scatter(name, how, block, sbuf, rbuf, &counts, dt, o, &comm, out) }
}

forms! {
    Ibarrier = MPI_Ibarrier / PMPI_Ibarrier, Barrier_init = MPI_Barrier_init / PMPI_Barrier_init
        (c: Handle) on c => barrier(c);
    Ibcast = MPI_Ibcast / PMPI_Ibcast, Bcast_init = MPI_Bcast_init / PMPI_Bcast_init
        (buf: *mut c_void, n: c_int, dt: Handle, root: c_int, c: Handle) on c
        => bcast(buf, n.into(), dt, root, c);
    Igather = MPI_Igather / PMPI_Igather, Gather_init = MPI_Gather_init / PMPI_Gather_init
        (sbuf: *const c_void, sn: c_int, sdt: Handle, rbuf: *mut c_void, rn: c_int, rdt: Handle,
         root: c_int, c: Handle) on c
        => gather(sbuf, sn.into(), sdt, rbuf, rn.into(), rdt, root, c);
    Iscatter = MPI_Iscatter / PMPI_Iscatter, Scatter_init = MPI_Scatter_init / PMPI_Scatter_init
        (sbuf: *const c_void, sn: c_int, sdt: Handle, rbuf: *mut c_void, rn: c_int, rdt: Handle,
         root: c_int, c: Handle) on c
        => scatter(sbuf, sn.into(), sdt, rbuf, rn.into(), rdt, root, c);
    Iallgather = MPI_Iallgather / PMPI_Iallgather,
    Allgather_init = MPI_Allgather_init / PMPI_Allgather_init
        (sbuf: *const c_void, sn: c_int, sdt: Handle, rbuf: *mut c_void, rn: c_int, rdt: Handle,
         c: Handle) on c
        => allgather(false, sbuf, sn.into(), sdt, rbuf, rn.into(), rdt, c);
    Ialltoall = MPI_Ialltoall / PMPI_Ialltoall, Alltoall_init = MPI_Alltoall_init / PMPI_Alltoall_init
        (sbuf: *const c_void, sn: c_int, sdt: Handle, rbuf: *mut c_void, rn: c_int, rdt: Handle,
         c: Handle) on c
        => allgather(true, sbuf, sn.into(), sdt, rbuf, rn.into(), rdt, c);
    Igatherv = MPI_Igatherv / PMPI_Igatherv, Gatherv_init = MPI_Gatherv_init / PMPI_Gatherv_init
        (sbuf: *const c_void, sn: c_int, sdt: Handle, rbuf: *mut c_void, rcounts: *const c_int,
         displs: *const c_int, rdt: Handle, root: c_int, c: Handle) on c
        => gatherv(false, sbuf, sn.into(), sdt, rbuf, rcounts, displs, rdt, root, c);
    Iallgatherv = MPI_Iallgatherv / PMPI_Iallgatherv,
    Allgatherv_init = MPI_Allgatherv_init / PMPI_Allgatherv_init
        (sbuf: *const c_void, sn: c_int, sdt: Handle, rbuf: *mut c_void, rcounts: *const c_int,
         displs: *const c_int, rdt: Handle, c: Handle) on c
        => gatherv(true, sbuf, sn.into(), sdt, rbuf, rcounts, displs, rdt, 0, c);
    Iscatterv = MPI_Iscatterv / PMPI_Iscatterv, Scatterv_init = MPI_Scatterv_init / PMPI_Scatterv_init
        (sbuf: *const c_void, scounts: *const c_int, displs: *const c_int, sdt: Handle,
         rbuf: *mut c_void, rn: c_int, rdt: Handle, root: c_int, c: Handle) on c
        => scatterv(sbuf, scounts, displs, sdt, rbuf, rn.into(), rdt, root, c);
    Ialltoallv = MPI_Ialltoallv / PMPI_Ialltoallv, Alltoallv_init = MPI_Alltoallv_init / PMPI_Alltoallv_init
        (sbuf: *const c_void, scounts: *const c_int, sdispls: *const c_int, sdt: Handle,
         rbuf: *mut c_void, rcounts: *const c_int, rdispls: *const c_int, rdt: Handle, c: Handle) on c
        => alltoallv(sbuf, scounts, sdispls, sdt, rbuf, rcounts, rdispls, rdt, c);
    Ialltoallw = MPI_Ialltoallw / PMPI_Ialltoallw, Alltoallw_init = MPI_Alltoallw_init / PMPI_Alltoallw_init,
    Alltoallw = MPI_Alltoallw / PMPI_Alltoallw
        (sbuf: *const c_void, scounts: *const c_int, sdispls: *const c_int, sdts: *const Handle,
         rbuf: *mut c_void, rcounts: *const c_int, rdispls: *const c_int, rdts: *const Handle,
         c: Handle) on c
        => alltoallw(sbuf, scounts, sdispls, sdts, rbuf, rcounts, rdispls, rdts, c);
    Ireduce = MPI_Ireduce / PMPI_Ireduce, Reduce_init = MPI_Reduce_init / PMPI_Reduce_init
        (sbuf: *const c_void, rbuf: *mut c_void, n: c_int, dt: Handle, o: Handle, root: c_int,
         c: Handle) on c
        => reduce(3, sbuf, rbuf, n.into(), dt, o, root, c);
    Iallreduce = MPI_Iallreduce / PMPI_Iallreduce, Allreduce_init = MPI_Allreduce_init / PMPI_Allreduce_init
        (sbuf: *const c_void, rbuf: *mut c_void, n: c_int, dt: Handle, o: Handle, c: Handle) on c
        => reduce(0, sbuf, rbuf, n.into(), dt, o, 0, c);
    Iscan = MPI_Iscan / PMPI_Iscan, Scan_init = MPI_Scan_init / PMPI_Scan_init
        (sbuf: *const c_void, rbuf: *mut c_void, n: c_int, dt: Handle, o: Handle, c: Handle) on c
        => reduce(1, sbuf, rbuf, n.into(), dt, o, 0, c);
    Iexscan = MPI_Iexscan / PMPI_Iexscan, Exscan_init = MPI_Exscan_init / PMPI_Exscan_init
        (sbuf: *const c_void, rbuf: *mut c_void, n: c_int, dt: Handle, o: Handle, c: Handle) on c
        => reduce(2, sbuf, rbuf, n.into(), dt, o, 0, c);
    Ireduce_scatter = MPI_Ireduce_scatter / PMPI_Ireduce_scatter,
    Reduce_scatter_init = MPI_Reduce_scatter_init / PMPI_Reduce_scatter_init
        (sbuf: *const c_void, rbuf: *mut c_void, rcounts: *const c_int, dt: Handle, o: Handle,
         c: Handle) on c
        => reduce_scatter_counts(false, sbuf, rbuf, rcounts, 0, dt, o, c);
    Ireduce_scatter_block = MPI_Ireduce_scatter_block / PMPI_Ireduce_scatter_block,
    Reduce_scatter_block_init = MPI_Reduce_scatter_block_init / PMPI_Reduce_scatter_block_init
        (sbuf: *const c_void, rbuf: *mut c_void, rn: c_int, dt: Handle, o: Handle, c: Handle) on c
        => reduce_scatter_counts(true, sbuf, rbuf, std::ptr::null::<c_int>(), rn.into(), dt, o, c);
    Ineighbor_allgather = MPI_Ineighbor_allgather / PMPI_Ineighbor_allgather,
    Neighbor_allgather_init = MPI_Neighbor_allgather_init / PMPI_Neighbor_allgather_init,
    Neighbor_allgather = MPI_Neighbor_allgather / PMPI_Neighbor_allgather
        (sbuf: *const c_void, sn: c_int, sdt: Handle, rbuf: *mut c_void, rn: c_int, rdt: Handle,
         c: Handle) on c
        => neighbor_regular(0, sbuf, sn.into(), sdt, rbuf, rn.into(), rdt, c);
    Ineighbor_alltoall = MPI_Ineighbor_alltoall / PMPI_Ineighbor_alltoall,
    Neighbor_alltoall_init = MPI_Neighbor_alltoall_init / PMPI_Neighbor_alltoall_init,
    Neighbor_alltoall = MPI_Neighbor_alltoall / PMPI_Neighbor_alltoall
        (sbuf: *const c_void, sn: c_int, sdt: Handle, rbuf: *mut c_void, rn: c_int, rdt: Handle,
         c: Handle) on c
        => neighbor_regular(1, sbuf, sn.into(), sdt, rbuf, rn.into(), rdt, c);
    Ineighbor_allgatherv = MPI_Ineighbor_allgatherv / PMPI_Ineighbor_allgatherv,
    Neighbor_allgatherv_init = MPI_Neighbor_allgatherv_init / PMPI_Neighbor_allgatherv_init,
    Neighbor_allgatherv = MPI_Neighbor_allgatherv / PMPI_Neighbor_allgatherv
        (sbuf: *const c_void, sn: c_int, sdt: Handle, rbuf: *mut c_void, rcounts: *const c_int,
         displs: *const c_int, rdt: Handle, c: Handle) on c
        => neighbor_allgatherv(sbuf, sn.into(), sdt, rbuf, rcounts, displs, rdt, c);
    Ineighbor_alltoallv = MPI_Ineighbor_alltoallv / PMPI_Ineighbor_alltoallv,
    Neighbor_alltoallv_init = MPI_Neighbor_alltoallv_init / PMPI_Neighbor_alltoallv_init,
    Neighbor_alltoallv = MPI_Neighbor_alltoallv / PMPI_Neighbor_alltoallv
        (sbuf: *const c_void, scounts: *const c_int, sdispls: *const c_int, sdt: Handle,
         rbuf: *mut c_void, rcounts: *const c_int, rdispls: *const c_int, rdt: Handle, c: Handle) on c
        => neighbor_alltoallv(sbuf, scounts, sdispls, sdt, rbuf, rcounts, rdispls, rdt, c);
    Ineighbor_alltoallw = MPI_Ineighbor_alltoallw / PMPI_Ineighbor_alltoallw,
    Neighbor_alltoallw_init = MPI_Neighbor_alltoallw_init / PMPI_Neighbor_alltoallw_init,
    Neighbor_alltoallw = MPI_Neighbor_alltoallw / PMPI_Neighbor_alltoallw
        (sbuf: *const c_void, scounts: *const c_int, sdispls: *const isize, sdts: *const Handle,
         rbuf: *mut c_void, rcounts: *const c_int, rdispls: *const isize, rdts: *const Handle,
         c: Handle) on c
        => neighbor_alltoallw(sbuf, scounts, sdispls, sdts, rbuf, rcounts, rdispls, rdts, c);
}

// The large-count forms: `MPI_Count` counts and count arrays, `MPI_Aint` displacements, on
// the same bodies (which widen every count and displacement they read).
forms! {
    Ibcast_c = MPI_Ibcast_c / PMPI_Ibcast_c, Bcast_init_c = MPI_Bcast_init_c / PMPI_Bcast_init_c
        (buf: *mut c_void, n: i64, dt: Handle, root: c_int, c: Handle) on c
        => bcast(buf, n, dt, root, c);
    Igather_c = MPI_Igather_c / PMPI_Igather_c, Gather_init_c = MPI_Gather_init_c / PMPI_Gather_init_c
        (sbuf: *const c_void, sn: i64, sdt: Handle, rbuf: *mut c_void, rn: i64, rdt: Handle,
         root: c_int, c: Handle) on c
        => gather(sbuf, sn, sdt, rbuf, rn, rdt, root, c);
    Iscatter_c = MPI_Iscatter_c / PMPI_Iscatter_c, Scatter_init_c = MPI_Scatter_init_c / PMPI_Scatter_init_c
        (sbuf: *const c_void, sn: i64, sdt: Handle, rbuf: *mut c_void, rn: i64, rdt: Handle,
         root: c_int, c: Handle) on c
        => scatter(sbuf, sn, sdt, rbuf, rn, rdt, root, c);
    Iallgather_c = MPI_Iallgather_c / PMPI_Iallgather_c,
    Allgather_init_c = MPI_Allgather_init_c / PMPI_Allgather_init_c
        (sbuf: *const c_void, sn: i64, sdt: Handle, rbuf: *mut c_void, rn: i64, rdt: Handle,
         c: Handle) on c
        => allgather(false, sbuf, sn, sdt, rbuf, rn, rdt, c);
    Ialltoall_c = MPI_Ialltoall_c / PMPI_Ialltoall_c, Alltoall_init_c = MPI_Alltoall_init_c / PMPI_Alltoall_init_c
        (sbuf: *const c_void, sn: i64, sdt: Handle, rbuf: *mut c_void, rn: i64, rdt: Handle,
         c: Handle) on c
        => allgather(true, sbuf, sn, sdt, rbuf, rn, rdt, c);
    Igatherv_c = MPI_Igatherv_c / PMPI_Igatherv_c, Gatherv_init_c = MPI_Gatherv_init_c / PMPI_Gatherv_init_c
        (sbuf: *const c_void, sn: i64, sdt: Handle, rbuf: *mut c_void, rcounts: *const i64,
         displs: *const isize, rdt: Handle, root: c_int, c: Handle) on c
        => gatherv(false, sbuf, sn, sdt, rbuf, rcounts, displs, rdt, root, c);
    Iallgatherv_c = MPI_Iallgatherv_c / PMPI_Iallgatherv_c,
    Allgatherv_init_c = MPI_Allgatherv_init_c / PMPI_Allgatherv_init_c
        (sbuf: *const c_void, sn: i64, sdt: Handle, rbuf: *mut c_void, rcounts: *const i64,
         displs: *const isize, rdt: Handle, c: Handle) on c
        => gatherv(true, sbuf, sn, sdt, rbuf, rcounts, displs, rdt, 0, c);
    Iscatterv_c = MPI_Iscatterv_c / PMPI_Iscatterv_c, Scatterv_init_c = MPI_Scatterv_init_c / PMPI_Scatterv_init_c
        (sbuf: *const c_void, scounts: *const i64, displs: *const isize, sdt: Handle,
         rbuf: *mut c_void, rn: i64, rdt: Handle, root: c_int, c: Handle) on c
        => scatterv(sbuf, scounts, displs, sdt, rbuf, rn, rdt, root, c);
    Ialltoallv_c = MPI_Ialltoallv_c / PMPI_Ialltoallv_c, Alltoallv_init_c = MPI_Alltoallv_init_c / PMPI_Alltoallv_init_c
        (sbuf: *const c_void, scounts: *const i64, sdispls: *const isize, sdt: Handle,
         rbuf: *mut c_void, rcounts: *const i64, rdispls: *const isize, rdt: Handle, c: Handle) on c
        => alltoallv(sbuf, scounts, sdispls, sdt, rbuf, rcounts, rdispls, rdt, c);
    Ialltoallw_c = MPI_Ialltoallw_c / PMPI_Ialltoallw_c, Alltoallw_init_c = MPI_Alltoallw_init_c / PMPI_Alltoallw_init_c,
    Alltoallw_c = MPI_Alltoallw_c / PMPI_Alltoallw_c
        (sbuf: *const c_void, scounts: *const i64, sdispls: *const isize, sdts: *const Handle,
         rbuf: *mut c_void, rcounts: *const i64, rdispls: *const isize, rdts: *const Handle,
         c: Handle) on c
        => alltoallw(sbuf, scounts, sdispls, sdts, rbuf, rcounts, rdispls, rdts, c);
    Ireduce_c = MPI_Ireduce_c / PMPI_Ireduce_c, Reduce_init_c = MPI_Reduce_init_c / PMPI_Reduce_init_c
        (sbuf: *const c_void, rbuf: *mut c_void, n: i64, dt: Handle, o: Handle, root: c_int,
         c: Handle) on c
        => reduce(3, sbuf, rbuf, n, dt, o, root, c);
    Iallreduce_c = MPI_Iallreduce_c / PMPI_Iallreduce_c, Allreduce_init_c = MPI_Allreduce_init_c / PMPI_Allreduce_init_c
        (sbuf: *const c_void, rbuf: *mut c_void, n: i64, dt: Handle, o: Handle, c: Handle) on c
        => reduce(0, sbuf, rbuf, n, dt, o, 0, c);
    Iscan_c = MPI_Iscan_c / PMPI_Iscan_c, Scan_init_c = MPI_Scan_init_c / PMPI_Scan_init_c
        (sbuf: *const c_void, rbuf: *mut c_void, n: i64, dt: Handle, o: Handle, c: Handle) on c
        => reduce(1, sbuf, rbuf, n, dt, o, 0, c);
    Iexscan_c = MPI_Iexscan_c / PMPI_Iexscan_c, Exscan_init_c = MPI_Exscan_init_c / PMPI_Exscan_init_c
        (sbuf: *const c_void, rbuf: *mut c_void, n: i64, dt: Handle, o: Handle, c: Handle) on c
        => reduce(2, sbuf, rbuf, n, dt, o, 0, c);
    Ireduce_scatter_c = MPI_Ireduce_scatter_c / PMPI_Ireduce_scatter_c,
    Reduce_scatter_init_c = MPI_Reduce_scatter_init_c / PMPI_Reduce_scatter_init_c
        (sbuf: *const c_void, rbuf: *mut c_void, rcounts: *const i64, dt: Handle, o: Handle,
         c: Handle) on c
        => reduce_scatter_counts(false, sbuf, rbuf, rcounts, 0, dt, o, c);
    Ireduce_scatter_block_c = MPI_Ireduce_scatter_block_c / PMPI_Ireduce_scatter_block_c,
    Reduce_scatter_block_init_c = MPI_Reduce_scatter_block_init_c / PMPI_Reduce_scatter_block_init_c
        (sbuf: *const c_void, rbuf: *mut c_void, rn: i64, dt: Handle, o: Handle, c: Handle) on c
        => reduce_scatter_counts(true, sbuf, rbuf, std::ptr::null::<i64>(), rn, dt, o, c);
    Ineighbor_allgather_c = MPI_Ineighbor_allgather_c / PMPI_Ineighbor_allgather_c,
    Neighbor_allgather_init_c = MPI_Neighbor_allgather_init_c / PMPI_Neighbor_allgather_init_c,
    Neighbor_allgather_c = MPI_Neighbor_allgather_c / PMPI_Neighbor_allgather_c
        (sbuf: *const c_void, sn: i64, sdt: Handle, rbuf: *mut c_void, rn: i64, rdt: Handle,
         c: Handle) on c
        => neighbor_regular(0, sbuf, sn, sdt, rbuf, rn, rdt, c);
    Ineighbor_alltoall_c = MPI_Ineighbor_alltoall_c / PMPI_Ineighbor_alltoall_c,
    Neighbor_alltoall_init_c = MPI_Neighbor_alltoall_init_c / PMPI_Neighbor_alltoall_init_c,
    Neighbor_alltoall_c = MPI_Neighbor_alltoall_c / PMPI_Neighbor_alltoall_c
        (sbuf: *const c_void, sn: i64, sdt: Handle, rbuf: *mut c_void, rn: i64, rdt: Handle,
         c: Handle) on c
        => neighbor_regular(1, sbuf, sn, sdt, rbuf, rn, rdt, c);
    Ineighbor_allgatherv_c = MPI_Ineighbor_allgatherv_c / PMPI_Ineighbor_allgatherv_c,
    Neighbor_allgatherv_init_c = MPI_Neighbor_allgatherv_init_c / PMPI_Neighbor_allgatherv_init_c,
    Neighbor_allgatherv_c = MPI_Neighbor_allgatherv_c / PMPI_Neighbor_allgatherv_c
        (sbuf: *const c_void, sn: i64, sdt: Handle, rbuf: *mut c_void, rcounts: *const i64,
         displs: *const isize, rdt: Handle, c: Handle) on c
        => neighbor_allgatherv(sbuf, sn, sdt, rbuf, rcounts, displs, rdt, c);
    Ineighbor_alltoallv_c = MPI_Ineighbor_alltoallv_c / PMPI_Ineighbor_alltoallv_c,
    Neighbor_alltoallv_init_c = MPI_Neighbor_alltoallv_init_c / PMPI_Neighbor_alltoallv_init_c,
    Neighbor_alltoallv_c = MPI_Neighbor_alltoallv_c / PMPI_Neighbor_alltoallv_c
        (sbuf: *const c_void, scounts: *const i64, sdispls: *const isize, sdt: Handle,
         rbuf: *mut c_void, rcounts: *const i64, rdispls: *const isize, rdt: Handle, c: Handle) on c
        => neighbor_alltoallv(sbuf, scounts, sdispls, sdt, rbuf, rcounts, rdispls, rdt, c);
    Ineighbor_alltoallw_c = MPI_Ineighbor_alltoallw_c / PMPI_Ineighbor_alltoallw_c,
    Neighbor_alltoallw_init_c = MPI_Neighbor_alltoallw_init_c / PMPI_Neighbor_alltoallw_init_c,
    Neighbor_alltoallw_c = MPI_Neighbor_alltoallw_c / PMPI_Neighbor_alltoallw_c
        (sbuf: *const c_void, scounts: *const i64, sdispls: *const isize, sdts: *const Handle,
         rbuf: *mut c_void, rcounts: *const i64, rdispls: *const isize, rdts: *const Handle,
         c: Handle) on c
        => neighbor_alltoallw(sbuf, scounts, sdispls, sdts, rbuf, rcounts, rdispls, rdts, c);
}
