//! Point-to-point: blocking sends in every mode, receives, probes, sendrecv(_replace),
//! immediate and persistent operations, the request calls (start, wait, test and their
//! families, cancel, free, get_status), and status queries.
//!
//! Requests live in the handle layer's [`Requests`] table. It carries the thread level as a
//! type; the C layer uses it at `Single` (no promise about other threads), one table per
//! thread: requests of operations started in the engine may be completed from any thread,
//! persistent requests only from the thread that created them.

use std::cell::RefCell;
use std::ffi::{c_int, c_void};

use oxmpi::handle::comm::{comm_p2p, comm_typed, with_p2p, CommHandle};
use oxmpi::handle::request::{self, AnyDone, RequestId, Requests, SendMode};
use oxmpi::{Communicator, ErrorClass, Result, Single, Source, Status, Tag};

use crate::boundary::{
    comm, count, err, get, mpi_fn, put, put_status, recv_buf, send_buf, slice, slice_mut, Handle,
    MpiStatus,
};
use crate::comm::UNDEFINED;
use crate::datatypes::{data, Data};
use crate::grequest;
use crate::staging::{self, Staged};

/// `MPI_REQUEST_NULL`.
const REQUEST_NULL: usize = 0x180;
/// `MPI_ANY_SOURCE`, `MPI_PROC_NULL`, `MPI_ANY_TAG`.
const ANY_SOURCE: c_int = -1;
const PROC_NULL: c_int = -3;
const ANY_TAG: c_int = -2;

thread_local! {
    static REQUESTS: RefCell<Option<Requests<Single>>> = const { RefCell::new(None) };
}

/// Runs `f` on this thread's request table.
pub(crate) fn with_requests<R>(
    name: &str,
    f: impl FnOnce(&mut Requests<Single>) -> Result<R>,
) -> Result<R> {
    REQUESTS.with(|cell| {
        let mut slot = cell.try_borrow_mut().map_err(|_| {
            err(
                ErrorClass::Other,
                name,
                "called from inside a request completion on this thread",
            )
        })?;
        if slot.is_none() {
            *slot = Some(Requests::new(&comm_typed::<Single>(CommHandle::WORLD)?));
        }
        match slot.as_mut() {
            Some(r) => f(r),
            None => Err(err(ErrorClass::Intern, name, "no request table")),
        }
    })
}

/// The request id a C handle holds.
#[inline]
pub(crate) fn req(h: Handle) -> Result<RequestId> {
    match h as usize {
        REQUEST_NULL => Ok(RequestId::NULL),
        // No request id is below 2^32 (they carry a slot index above the generation), so
        // small values are no request.
        v if v < 0x1000 => Err(not_a_request(v)),
        v => Ok(RequestId::from_raw(v as u64)),
    }
}

/// [`req`]'s error, out of line: the request calls check every handle.
#[cold]
#[inline(never)]
fn not_a_request(v: usize) -> oxmpi::Error {
    err(
        ErrorClass::Request,
        "request",
        format!("{v:#x} is not a request"),
    )
}

/// The C handle of a request id.
pub(crate) fn req_handle(r: RequestId) -> Handle {
    if r.is_null() {
        REQUEST_NULL as Handle
    } else {
        r.to_raw() as usize as Handle
    }
}

/// The typed communicator behind `c` for point-to-point calls (an intercommunicator's
/// point-to-point view: ranks name the remote group).
fn typed(c: Handle) -> Result<Communicator<Single>> {
    comm_p2p::<Single>(comm(c))
}

fn source(s: c_int) -> Source {
    match s {
        ANY_SOURCE => Source::Any,
        PROC_NULL => Source::Null,
        r => Source::Rank(r),
    }
}

fn tag(t: c_int) -> Tag {
    if t == ANY_TAG {
        Tag::Any
    } else {
        Tag::Is(t)
    }
}

/// Bytes of `n` elements of predefined datatype `dt`, when `dt` is one and the count is
/// valid; `None` sends the call the general way, which reports any error.
#[inline]
fn predefined_len(n: i64, dt: Handle) -> Option<usize> {
    crate::datatypes::predefined_len(n, dt as usize)
}

/// A receive's tag: non-negative or `MPI_ANY_TAG`.
fn check_recv_tag(name: &str, t: c_int) -> Result<()> {
    if t != ANY_TAG {
        check_send_tag(name, t)?;
    }
    Ok(())
}

/// A send's tag: non-negative.
pub(crate) fn check_send_tag(name: &str, t: c_int) -> Result<()> {
    if !(0..=oxmpi::TAG_UB).contains(&t) {
        return Err(err(
            ErrorClass::Tag,
            name,
            format!("tag {t} is outside 0..={}", oxmpi::TAG_UB),
        ));
    }
    Ok(())
}

/// Sends `n` elements of `dt` at `buf` in `mode`, blocking.
///
/// # Safety
/// `buf` valid for reads of `n` elements of `dt`.
#[allow(clippy::too_many_arguments)] // the C call's arguments, plus the mode
#[inline(always)]
unsafe fn send(
    name: &str,
    mode: SendMode,
    buf: *const c_void,
    n: i64,
    dt: Handle,
    dest: c_int,
    t: c_int,
    c: Handle,
) -> Result<()> {
    // The common case, a standard send of a predefined type with a valid count and tag, in
    // as few steps as the native path: the checks and errors are those of the general way.
    if let (SendMode::Standard, Some(len), true) = (mode, predefined_len(n, dt), t >= 0) {
        return with_p2p(comm(c), |comm| {
            // SAFETY: forwarded from our caller.
            comm.send(unsafe { send_buf(name, buf, len)? }, dest, t)
        });
    }
    // SAFETY: forwarded from our caller.
    unsafe { send_general(name, mode, buf, n, dt, dest, t, c) }
}

/// [`send`] of anything else: derived datatypes, the other modes, and every argument error.
///
/// # Safety
/// As [`send`].
#[allow(clippy::too_many_arguments)]
#[inline(never)]
unsafe fn send_general(
    name: &str,
    mode: SendMode,
    buf: *const c_void,
    n: i64,
    dt: Handle,
    dest: c_int,
    t: c_int,
    c: Handle,
) -> Result<()> {
    let d = data(name, n, dt as usize, buf)?;
    check_send_tag(name, t)?;
    with_p2p(comm(c), |comm| {
        let packed;
        let data: &[u8] = match d {
            // SAFETY: forwarded from our caller (the data starts at the type's lower bound).
            Data::Bytes { offset, len } => unsafe { send_buf(name, at(buf, offset), len)? },
            // A buffered send copies its packed bytes: it must not leave them as pieces.
            Data::Typed { ty, count, len } if mode == SendMode::Buffered => {
                // SAFETY: forwarded from our caller; the packed copy is sent before we return.
                packed = unsafe { Staged::send(ty, buf, count, len, false) };
                packed.buf_ref()
            }
            Data::Typed { ty, count, len } => {
                // SAFETY: forwarded from our caller; the send completes before we return.
                let mut s = unsafe { comm.stage_send(ty, buf, count, len) };
                let sync = mode == SendMode::Synchronous;
                // SAFETY: as above (a ready send takes the standard protocol).
                return unsafe { comm.send_staged(&mut s, sync, dest, t) };
            }
        };
        match mode {
            SendMode::Standard => comm.send(data, dest, t),
            SendMode::Synchronous => comm.synchronous_send(data, dest, t),
            SendMode::Ready => comm.ready_send(data, dest, t),
            SendMode::Buffered => comm.buffered_send(data, dest, t),
        }
    })
}

/// Starts a send of `n` elements of `dt` at `buf` in `mode`, or makes it persistent.
///
/// # Safety
/// `buf` valid for reads of `n` elements of `dt` until the request completes (is freed, for
/// persistent ones).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn isend(
    name: &str,
    persistent: bool,
    mode: SendMode,
    buf: *const c_void,
    n: i64,
    dt: Handle,
    dest: c_int,
    t: c_int,
    c: Handle,
    out: *mut Handle,
) -> Result<()> {
    // The common case (msgrate's), a predefined type with a valid count and tag and a request
    // to write: no datatype resolution, nothing staged. The checks, their order and their
    // errors are those of the general way.
    if let (Some(len), true, false) = (predefined_len(n, dt), t >= 0, out.is_null()) {
        return with_p2p(comm(c), |comm| {
            // SAFETY: forwarded from our caller.
            let ptr = unsafe { send_buf(name, buf, len)? }.as_ptr();
            let id = if persistent {
                // SAFETY: the caller keeps the buffer valid while the request is active.
                with_requests(name, |r| unsafe {
                    r.send_init(comm, mode, ptr, len, dest, t)
                })?
            } else {
                // A nonpersistent request lives in the engine, so the thread's table (a
                // thread-local behind a borrow flag) is not reached (msgrate's `MPI_Isend`).
                // SAFETY: as above.
                unsafe { request::isend(comm, mode, ptr, len, dest, t)? }
            };
            // SAFETY: `out` is non-null and valid for a write by the caller's contract.
            unsafe { out.write_unaligned(req_handle(id)) };
            Ok(())
        });
    }
    // SAFETY: forwarded from our caller.
    unsafe { isend_general(name, persistent, mode, buf, n, dt, dest, t, c, out) }
}

/// [`isend`] of anything else: derived datatypes, and every argument error.
///
/// # Safety
/// As [`isend`].
#[allow(clippy::too_many_arguments)]
#[inline(never)]
unsafe fn isend_general(
    name: &str,
    persistent: bool,
    mode: SendMode,
    buf: *const c_void,
    n: i64,
    dt: Handle,
    dest: c_int,
    t: c_int,
    c: Handle,
    out: *mut Handle,
) -> Result<()> {
    let d = data(name, n, dt as usize, buf)?;
    check_send_tag(name, t)?;
    if out.is_null() {
        return Err(err(ErrorClass::Arg, name, "request is NULL"));
    }
    with_p2p(comm(c), |comm| {
        let (ptr, len, mut staged) = match d {
            Data::Bytes { offset, len } => {
                // SAFETY: forwarded from our caller.
                let data = unsafe { send_buf(name, at(buf, offset), len)? };
                (data.as_ptr(), len, None)
            }
            Data::Typed { ty, count, len } => {
                // SAFETY: forwarded from our caller (persistent and buffered sends pack at
                // each start; the others may go as pieces).
                let mut s = unsafe {
                    if persistent || mode == SendMode::Buffered {
                        Staged::send(ty, buf, count, len, persistent)
                    } else {
                        comm.stage_send(ty, buf, count, len)
                    }
                };
                (s.ptr().cast_const(), len, Some(s))
            }
        };
        let id = with_requests(name, |r| {
            // SAFETY: the caller keeps the buffer valid while the request is active; a staged
            // buffer is held with the request until it completes.
            unsafe {
                if persistent {
                    r.send_init(comm, mode, ptr, len, dest, t)
                } else {
                    r.isend(comm, mode, ptr, len, dest, t)
                }
            }
        })?;
        if let Some(s) = staged.take() {
            staging::hold(id, s);
        }
        // SAFETY: `out` is non-null and valid by contract.
        unsafe { put(name, out, req_handle(id)) }
    })
}

/// Starts a receive into `n` elements of `dt` at `buf`, or makes it persistent.
///
/// # Safety
/// `buf` valid for writes of `n` elements of `dt` until the request completes.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn irecv(
    name: &str,
    persistent: bool,
    buf: *mut c_void,
    n: i64,
    dt: Handle,
    src: c_int,
    t: c_int,
    c: Handle,
    out: *mut Handle,
) -> Result<()> {
    // The common case, as in `isend`: the checks, their order and their errors are those of
    // the general way.
    let tag_ok = t >= 0 || t == ANY_TAG;
    if let (Some(len), true, false) = (predefined_len(n, dt), tag_ok, out.is_null()) {
        return with_p2p(comm(c), |comm| {
            // SAFETY: forwarded from our caller.
            let ptr = unsafe { recv_buf(name, buf, len)? }.as_mut_ptr();
            let (from, tg) = (source(src), tag(t));
            let id = if persistent {
                // SAFETY: the caller keeps the buffer valid and unused while the request is
                // active.
                with_requests(name, |r| unsafe { r.recv_init(comm, ptr, len, from, tg) })?
            } else {
                // As in `isend`: no table for a nonpersistent request.
                // SAFETY: as above.
                unsafe { request::irecv(comm, ptr, len, from, tg)? }
            };
            // SAFETY: `out` is non-null and valid for a write by the caller's contract.
            unsafe { out.write_unaligned(req_handle(id)) };
            Ok(())
        });
    }
    // SAFETY: forwarded from our caller.
    unsafe { irecv_general(name, persistent, buf, n, dt, src, t, c, out) }
}

/// [`irecv`] of anything else: derived datatypes, and every argument error.
///
/// # Safety
/// As [`irecv`].
#[allow(clippy::too_many_arguments)]
#[inline(never)]
unsafe fn irecv_general(
    name: &str,
    persistent: bool,
    buf: *mut c_void,
    n: i64,
    dt: Handle,
    src: c_int,
    t: c_int,
    c: Handle,
    out: *mut Handle,
) -> Result<()> {
    let d = data(name, n, dt as usize, buf.cast_const())?;
    check_recv_tag(name, t)?;
    if out.is_null() {
        return Err(err(ErrorClass::Arg, name, "request is NULL"));
    }
    with_p2p(comm(c), |comm| {
        let (ptr, len, mut staged) = match d {
            Data::Bytes { offset, len } => {
                // SAFETY: forwarded from our caller.
                let data = unsafe { recv_buf(name, at_mut(buf, offset), len)? };
                (data.as_mut_ptr(), len, None)
            }
            Data::Typed { ty, count, len } => {
                let mut s = if persistent {
                    Staged::recv(ty, buf, count, len, persistent)
                } else {
                    comm.stage_recv(ty, buf, count, len)
                };
                (s.ptr(), len, Some(s))
            }
        };
        let id = with_requests(name, |r| {
            // SAFETY: the caller keeps the buffer valid and unused while the request is active;
            // a staged buffer is held with the request until it completes.
            unsafe {
                if persistent {
                    r.recv_init(comm, ptr, len, source(src), tag(t))
                } else {
                    r.irecv(comm, ptr, len, source(src), tag(t))
                }
            }
        })?;
        if let Some(s) = staged.take() {
            staging::hold(id, s);
        }
        // SAFETY: `out` is non-null and valid by contract.
        unsafe { put(name, out, req_handle(id)) }
    })
}

/// `MPI_Isendrecv` (and, with a null `sbuf`, `MPI_Isendrecv_replace`: the send is a copy
/// of `rbuf` taken now).
///
/// # Safety
/// Buffers valid as the MPI call requires until the request completes.
#[allow(clippy::too_many_arguments)]
unsafe fn isendrecv(
    name: &str,
    sbuf: *const c_void,
    sn: i64,
    sdt: Handle,
    dest: c_int,
    stag: c_int,
    rbuf: *mut c_void,
    rn: i64,
    rdt: Handle,
    src: c_int,
    rtag: c_int,
    c: Handle,
    out: *mut Handle,
) -> Result<()> {
    check_send_tag(name, stag)?;
    check_recv_tag(name, rtag)?;
    if out.is_null() {
        return Err(err(ErrorClass::Arg, name, "request is NULL"));
    }
    let replace = sbuf.is_null();
    let (sfrom, sd) = if replace {
        (
            rbuf.cast_const(),
            data(name, rn, rdt as usize, rbuf.cast_const())?,
        )
    } else {
        (sbuf, data(name, sn, sdt as usize, sbuf)?)
    };
    let rd = data(name, rn, rdt as usize, rbuf.cast_const())?;
    let mut kept = staging::Kept::default();
    let (sp, slen) = match sd {
        Data::Bytes { offset, len } => {
            // SAFETY: forwarded from our caller.
            let b = unsafe { send_buf(name, at(sfrom, offset), len)? };
            if replace {
                kept.sends.push(b.to_vec());
                (kept.sends[0].as_ptr(), len)
            } else {
                (b.as_ptr(), len)
            }
        }
        Data::Typed { ty, count, len } => {
            // SAFETY: forwarded from our caller; the packed copy is ours.
            let v = unsafe { Staged::send(ty, sfrom, count, len, false) }.into_bytes();
            kept.sends.push(v);
            (kept.sends[0].as_ptr(), len)
        }
    };
    let (rp, rlen, staged) = match rd {
        Data::Bytes { offset, len } => {
            // SAFETY: forwarded from our caller.
            let b = unsafe { recv_buf(name, at_mut(rbuf, offset), len)? };
            (b.as_mut_ptr(), len, None)
        }
        Data::Typed { ty, count, len } => {
            let mut s = Staged::recv(ty, rbuf, count, len, false);
            (s.bytes().as_mut_ptr(), len, Some(s))
        }
    };
    let comm = typed(c)?;
    let id = with_requests(name, |r| {
        // SAFETY: the caller keeps the buffers valid until the request completes; copies and
        // staged buffers are held with the request.
        unsafe {
            r.isendrecv(
                &comm,
                sp,
                slen,
                dest,
                stag,
                rp,
                rlen,
                source(src),
                tag(rtag),
            )
        }
    })?;
    staging::keep(id, kept);
    if let Some(s) = staged {
        staging::hold(id, s);
    }
    // SAFETY: `out` is non-null and valid by contract.
    unsafe { put(name, out, req_handle(id)) }
}

/// `MPI_Status_set_elements(_x)`: the status then reports `n` elements of `dt` (a
/// predefined datatype other than a pair, or a derived one made of one predefined type).
///
/// # Safety
/// `status` null or valid for reads and writes.
unsafe fn set_elements(name: &str, status: *mut MpiStatus, dt: Handle, n: i64) -> Result<()> {
    let n = count(name, n)? as u64;
    let elem = match crate::datatypes::lookup(name, dt as usize) {
        Ok(p) if !matches!(p.kind, crate::datatypes::Kind::Pair(_)) => p.size as u64,
        Ok(_) => {
            return Err(err(
                ErrorClass::Type,
                name,
                "a pair datatype's elements are not settable",
            ))
        }
        Err(_) => {
            let ty =
                oxmpi::handle::datatype::type_committed(name, crate::datatypes::id(dt as usize))?;
            let base = ty.base().ok_or_else(|| {
                err(
                    ErrorClass::Type,
                    name,
                    "the datatype is not made of one predefined type",
                )
            })?;
            crate::datatypes::lookup(name, base.handle() as usize)?.size as u64
        }
    };
    let bytes = n
        .checked_mul(elem)
        .ok_or_else(|| err(ErrorClass::Count, name, "count × element size overflows"))?;
    // SAFETY: forwarded.
    let mut st = unsafe { get(name, status)? };
    st.internal[0] = bytes as u32 as c_int;
    st.internal[1] = (bytes >> 32) as u32 as c_int;
    // SAFETY: forwarded.
    unsafe { put(name, status, st) }
}

/// Writes statuses of completed requests: `MPI_STATUSES_IGNORE` (null) skips them.
///
/// # Safety
/// `out` null or valid for `n` statuses.
unsafe fn put_statuses(name: &str, out: *mut MpiStatus, st: &[Status]) -> Result<()> {
    if out.is_null() {
        return Ok(());
    }
    // SAFETY: forwarded from our caller.
    let dst = unsafe { slice_mut(name, out, st.len())? };
    for (d, s) in dst.iter_mut().zip(st) {
        *d = MpiStatus::from_core(s);
    }
    Ok(())
}

/// `MPI_Waitall` of sends that completed as they started ([`RequestId::SENT`]) and null
/// requests only, as a sender's window of small messages is: nothing to ask the core, so no
/// table, no allocation, no engine. The statuses and handles written are those of the general
/// way. Returns false, having changed nothing, if any other request is in the array.
///
/// # Safety
/// `r` valid for `n` reads and writes; `out` null or valid for `n` status writes.
unsafe fn wait_all_sent(name: &str, n: c_int, r: *mut Handle, out: *mut MpiStatus) -> Result<bool> {
    // SAFETY: forwarded from our caller.
    let hs = unsafe { slice_mut(name, r, count(name, n)?)? };
    let (sent, null) = (req_handle(RequestId::SENT), REQUEST_NULL as Handle);
    if !hs.iter().all(|&h| h == sent || h == null) {
        return Ok(false);
    }
    if !out.is_null() {
        // SAFETY: forwarded from our caller.
        let dst = unsafe { slice_mut(name, out, hs.len())? };
        let (sent_st, null_st) = (
            MpiStatus::from_core(&Status::default()),
            MpiStatus::from_core(&oxmpi::handle::request::empty_status()),
        );
        for (d, &h) in dst.iter_mut().zip(hs.iter()) {
            *d = if h == sent { sent_st } else { null_st };
        }
    }
    hs.fill(null);
    Ok(true)
}

/// Reads `n` request handles at `p`.
///
/// # Safety
/// `p` valid for `n` reads and writes.
unsafe fn requests<'a>(
    name: &str,
    n: c_int,
    p: *mut Handle,
) -> Result<(&'a mut [Handle], Vec<RequestId>)> {
    // SAFETY: forwarded from our caller.
    let hs = unsafe { slice_mut(name, p, count(name, n)?)? };
    // A plain loop: collecting `Result`s costs more per handle (msgrate's `MPI_Waitall`).
    let mut ids = Vec::with_capacity(hs.len());
    for &h in hs.iter() {
        ids.push(req(h)?);
    }
    Ok((hs, ids))
}

fn write_back(hs: &mut [Handle], ids: &[RequestId]) {
    for (h, id) in hs.iter_mut().zip(ids) {
        *h = req_handle(*id);
    }
}

/// The requests as they were before a call completes (and nulls) some: for the staged
/// buffers and generalized requests that completion concerns, if there are any.
fn snapshot(ids: &[RequestId]) -> Vec<RequestId> {
    if grequest::any() {
        ids.to_vec()
    } else {
        staging::snapshot(ids)
    }
}

/// Request `id` was reported complete with `st`, by a wait or test that frees it
/// (`freeing`) or by a get-status call: a generalized request's callbacks fill in `st`, and
/// the buffers staged for it are unpacked. The one place each of those calls tells both.
fn reported(id: RequestId, st: &mut Status, freeing: bool) {
    grequest::reported(id, st, freeing);
    staging::completed(id, st, !freeing);
}

/// [`reported`] for requests `ids` (as they were before the call) completed with `sts`.
fn reported_all(ids: &[RequestId], sts: &mut [Status], freeing: bool) {
    if grequest::any() || !staging::is_empty() {
        for (id, st) in ids.iter().zip(sts) {
            reported(*id, st, freeing);
        }
    }
}

/// `res` of a call completing several requests, made `MPI_ERR_IN_STATUS` if a generalized
/// request's callback gave one of `sts` an error.
fn in_status(name: &str, res: Result<()>, sts: &[Status]) -> Result<()> {
    if res.is_ok() && sts.iter().any(|s| s.error().is_some()) {
        return Err(in_status_error(name));
    }
    res
}

/// `MPI_ERR_IN_STATUS` of call `name`.
fn in_status_error(name: &str) -> oxmpi::Error {
    err(
        ErrorClass::InStatus,
        name,
        "an operation failed (its status holds its error)",
    )
}

/// A status slot per request (the empty status), for the calls that report each one.
fn statuses(n: usize) -> Vec<Status> {
    vec![oxmpi::handle::request::empty_status(); n]
}

mpi_fn! {
    /// `MPI_Send`.
    fn Send = MPI_Send / PMPI_Send(buf: *const c_void, n: c_int, dt: Handle, dest: c_int, t: c_int, c: Handle) on comm(c) => {
        send("Send", SendMode::Standard, buf, n.into(), dt, dest, t, c)
    }

    /// `MPI_Ssend`.
    fn Ssend = MPI_Ssend / PMPI_Ssend(buf: *const c_void, n: c_int, dt: Handle, dest: c_int, t: c_int, c: Handle) on comm(c) => {
        send("Ssend", SendMode::Synchronous, buf, n.into(), dt, dest, t, c)
    }

    /// `MPI_Rsend`.
    fn Rsend = MPI_Rsend / PMPI_Rsend(buf: *const c_void, n: c_int, dt: Handle, dest: c_int, t: c_int, c: Handle) on comm(c) => {
        send("Rsend", SendMode::Ready, buf, n.into(), dt, dest, t, c)
    }

    /// `MPI_Bsend`.
    fn Bsend = MPI_Bsend / PMPI_Bsend(buf: *const c_void, n: c_int, dt: Handle, dest: c_int, t: c_int, c: Handle) on comm(c) => {
        send("Bsend", SendMode::Buffered, buf, n.into(), dt, dest, t, c)
    }

    /// `MPI_Isend`.
    fn Isend = MPI_Isend / PMPI_Isend(buf: *const c_void, n: c_int, dt: Handle, dest: c_int, t: c_int, c: Handle, r: *mut Handle) on comm(c) => {
        isend("Isend", false, SendMode::Standard, buf, n.into(), dt, dest, t, c, r)
    }

    /// `MPI_Issend`.
    fn Issend = MPI_Issend / PMPI_Issend(buf: *const c_void, n: c_int, dt: Handle, dest: c_int, t: c_int, c: Handle, r: *mut Handle) on comm(c) => {
        isend("Issend", false, SendMode::Synchronous, buf, n.into(), dt, dest, t, c, r)
    }

    /// `MPI_Irsend`.
    fn Irsend = MPI_Irsend / PMPI_Irsend(buf: *const c_void, n: c_int, dt: Handle, dest: c_int, t: c_int, c: Handle, r: *mut Handle) on comm(c) => {
        isend("Irsend", false, SendMode::Ready, buf, n.into(), dt, dest, t, c, r)
    }

    /// `MPI_Ibsend`.
    fn Ibsend = MPI_Ibsend / PMPI_Ibsend(buf: *const c_void, n: c_int, dt: Handle, dest: c_int, t: c_int, c: Handle, r: *mut Handle) on comm(c) => {
        isend("Ibsend", false, SendMode::Buffered, buf, n.into(), dt, dest, t, c, r)
    }

    /// `MPI_Send_init`.
    fn Send_init = MPI_Send_init / PMPI_Send_init(buf: *const c_void, n: c_int, dt: Handle, dest: c_int, t: c_int, c: Handle, r: *mut Handle) on comm(c) => {
        isend("Send_init", true, SendMode::Standard, buf, n.into(), dt, dest, t, c, r)
    }

    /// `MPI_Ssend_init`.
    fn Ssend_init = MPI_Ssend_init / PMPI_Ssend_init(buf: *const c_void, n: c_int, dt: Handle, dest: c_int, t: c_int, c: Handle, r: *mut Handle) on comm(c) => {
        isend("Ssend_init", true, SendMode::Synchronous, buf, n.into(), dt, dest, t, c, r)
    }

    /// `MPI_Rsend_init`.
    fn Rsend_init = MPI_Rsend_init / PMPI_Rsend_init(buf: *const c_void, n: c_int, dt: Handle, dest: c_int, t: c_int, c: Handle, r: *mut Handle) on comm(c) => {
        isend("Rsend_init", true, SendMode::Ready, buf, n.into(), dt, dest, t, c, r)
    }

    /// `MPI_Bsend_init`.
    fn Bsend_init = MPI_Bsend_init / PMPI_Bsend_init(buf: *const c_void, n: c_int, dt: Handle, dest: c_int, t: c_int, c: Handle, r: *mut Handle) on comm(c) => {
        isend("Bsend_init", true, SendMode::Buffered, buf, n.into(), dt, dest, t, c, r)
    }

    /// `MPI_Send_c`: `MPI_Send` with an `MPI_Count` count.
    fn Send_c = MPI_Send_c / PMPI_Send_c(buf: *const c_void, n: i64, dt: Handle, dest: c_int, t: c_int, c: Handle) on comm(c) => {
        send("Send_c", SendMode::Standard, buf, n, dt, dest, t, c)
    }

    /// `MPI_Ssend_c`.
    fn Ssend_c = MPI_Ssend_c / PMPI_Ssend_c(buf: *const c_void, n: i64, dt: Handle, dest: c_int, t: c_int, c: Handle) on comm(c) => {
        send("Ssend_c", SendMode::Synchronous, buf, n, dt, dest, t, c)
    }

    /// `MPI_Isend_c`.
    fn Isend_c = MPI_Isend_c / PMPI_Isend_c(buf: *const c_void, n: i64, dt: Handle, dest: c_int, t: c_int, c: Handle, r: *mut Handle) on comm(c) => {
        isend("Isend_c", false, SendMode::Standard, buf, n, dt, dest, t, c, r)
    }

    /// `MPI_Irecv_c`.
    fn Irecv_c = MPI_Irecv_c / PMPI_Irecv_c(buf: *mut c_void, n: i64, dt: Handle, src: c_int, t: c_int, c: Handle, r: *mut Handle) on comm(c) => {
        irecv("Irecv_c", false, buf, n, dt, src, t, c, r)
    }

    /// `MPI_Recv_c`.
    fn Recv_c = MPI_Recv_c / PMPI_Recv_c(buf: *mut c_void, n: i64, dt: Handle, src: c_int, t: c_int, c: Handle, status: *mut MpiStatus) on comm(c) => {
        recv("Recv_c", buf, n, dt, src, t, c, status)
    }

    /// `MPI_Bsend_c`.
    fn Bsend_c = MPI_Bsend_c / PMPI_Bsend_c(buf: *const c_void, n: i64, dt: Handle, dest: c_int, t: c_int, c: Handle) on comm(c) => {
        send("Bsend_c", SendMode::Buffered, buf, n, dt, dest, t, c)
    }

    /// `MPI_Rsend_c`.
    fn Rsend_c = MPI_Rsend_c / PMPI_Rsend_c(buf: *const c_void, n: i64, dt: Handle, dest: c_int, t: c_int, c: Handle) on comm(c) => {
        send("Rsend_c", SendMode::Ready, buf, n, dt, dest, t, c)
    }

    /// `MPI_Issend_c`.
    fn Issend_c = MPI_Issend_c / PMPI_Issend_c(buf: *const c_void, n: i64, dt: Handle, dest: c_int, t: c_int, c: Handle, r: *mut Handle) on comm(c) => {
        isend("Issend_c", false, SendMode::Synchronous, buf, n, dt, dest, t, c, r)
    }

    /// `MPI_Ibsend_c`.
    fn Ibsend_c = MPI_Ibsend_c / PMPI_Ibsend_c(buf: *const c_void, n: i64, dt: Handle, dest: c_int, t: c_int, c: Handle, r: *mut Handle) on comm(c) => {
        isend("Ibsend_c", false, SendMode::Buffered, buf, n, dt, dest, t, c, r)
    }

    /// `MPI_Irsend_c`.
    fn Irsend_c = MPI_Irsend_c / PMPI_Irsend_c(buf: *const c_void, n: i64, dt: Handle, dest: c_int, t: c_int, c: Handle, r: *mut Handle) on comm(c) => {
        isend("Irsend_c", false, SendMode::Ready, buf, n, dt, dest, t, c, r)
    }

    /// `MPI_Send_init_c`.
    fn Send_init_c = MPI_Send_init_c / PMPI_Send_init_c(buf: *const c_void, n: i64, dt: Handle, dest: c_int, t: c_int, c: Handle, r: *mut Handle) on comm(c) => {
        isend("Send_init_c", true, SendMode::Standard, buf, n, dt, dest, t, c, r)
    }

    /// `MPI_Ssend_init_c`.
    fn Ssend_init_c = MPI_Ssend_init_c / PMPI_Ssend_init_c(buf: *const c_void, n: i64, dt: Handle, dest: c_int, t: c_int, c: Handle, r: *mut Handle) on comm(c) => {
        isend("Ssend_init_c", true, SendMode::Synchronous, buf, n, dt, dest, t, c, r)
    }

    /// `MPI_Rsend_init_c`.
    fn Rsend_init_c = MPI_Rsend_init_c / PMPI_Rsend_init_c(buf: *const c_void, n: i64, dt: Handle, dest: c_int, t: c_int, c: Handle, r: *mut Handle) on comm(c) => {
        isend("Rsend_init_c", true, SendMode::Ready, buf, n, dt, dest, t, c, r)
    }

    /// `MPI_Bsend_init_c`.
    fn Bsend_init_c = MPI_Bsend_init_c / PMPI_Bsend_init_c(buf: *const c_void, n: i64, dt: Handle, dest: c_int, t: c_int, c: Handle, r: *mut Handle) on comm(c) => {
        isend("Bsend_init_c", true, SendMode::Buffered, buf, n, dt, dest, t, c, r)
    }

    /// `MPI_Recv_init_c`.
    fn Recv_init_c = MPI_Recv_init_c / PMPI_Recv_init_c(buf: *mut c_void, n: i64, dt: Handle, src: c_int, t: c_int, c: Handle, r: *mut Handle) on comm(c) => {
        irecv("Recv_init_c", true, buf, n, dt, src, t, c, r)
    }

    /// `MPI_Isendrecv_c`.
    fn Isendrecv_c = MPI_Isendrecv_c / PMPI_Isendrecv_c(
        sbuf: *const c_void, sn: i64, sdt: Handle, dest: c_int, stag: c_int,
        rbuf: *mut c_void, rn: i64, rdt: Handle, src: c_int, rtag: c_int,
        c: Handle, r: *mut Handle,
    ) on comm(c) => {
        isendrecv("Isendrecv_c", sbuf, sn, sdt, dest, stag, rbuf, rn, rdt, src, rtag, c, r)
    }

    /// `MPI_Isendrecv_replace_c`.
    fn Isendrecv_replace_c = MPI_Isendrecv_replace_c / PMPI_Isendrecv_replace_c(
        buf: *mut c_void, n: i64, dt: Handle, dest: c_int, stag: c_int, src: c_int, rtag: c_int,
        c: Handle, r: *mut Handle,
    ) on comm(c) => {
        isendrecv("Isendrecv_replace_c", std::ptr::null(), n, dt, dest, stag, buf, n, dt, src, rtag, c, r)
    }

    /// `MPI_Status_set_elements_c`.
    fn Status_set_elements_c = MPI_Status_set_elements_c / PMPI_Status_set_elements_c(status: *mut MpiStatus, dt: Handle, n: i64) on CommHandle::WORLD => {
        set_elements("Status_set_elements_c", status, dt, n)
    }

    /// `MPI_Request_get_status_any`: the first active request that is complete, without
    /// freeing it; `*index` = `MPI_UNDEFINED` (and `*flag` true) if none is active.
    fn Request_get_status_any = MPI_Request_get_status_any / PMPI_Request_get_status_any(
        n: c_int, r: *const Handle, index: *mut c_int, flag: *mut c_int, status: *mut MpiStatus,
    ) on CommHandle::WORLD => {
        let name = "Request_get_status_any";
        let ids = request_ids(name, n, r)?;
        if index.is_null() || flag.is_null() {
            return Err(err(ErrorClass::Arg, name, "index or flag is NULL"));
        }
        let found = with_requests(name, |t| {
            let mut active = false;
            for (i, &id) in ids.iter().enumerate() {
                if !t.is_active(id)? {
                    continue;
                }
                active = true;
                if let Some(st) = t.get_status(id)? {
                    return Ok(Some(Some((i, st))));
                }
            }
            Ok((!active).then_some(None))
        })?;
        match found {
            None => put(name, flag, 0),
            Some(None) => {
                put(name, index, UNDEFINED)?;
                put_status(status, &oxmpi::handle::request::empty_status());
                put(name, flag, 1)
            }
            Some(Some((i, mut st))) => {
                reported(ids[i], &mut st, false);
                put(name, index, i as c_int)?;
                put_status(status, &st);
                put(name, flag, 1)
            }
        }
    }

    /// `MPI_Request_get_status_all`: whether every request is complete (null and inactive
    /// ones count as complete, with an empty status), without freeing any; the statuses are
    /// written only when all are.
    fn Request_get_status_all = MPI_Request_get_status_all / PMPI_Request_get_status_all(
        n: c_int, r: *const Handle, flag: *mut c_int, out: *mut MpiStatus,
    ) on CommHandle::WORLD => {
        let name = "Request_get_status_all";
        let ids = request_ids(name, n, r)?;
        if flag.is_null() {
            return Err(err(ErrorClass::Arg, name, "flag is NULL"));
        }
        let done = with_requests(name, |t| {
            let mut all = Vec::with_capacity(ids.len());
            for &id in &ids {
                match t.get_status(id)? {
                    Some(st) => all.push(st),
                    None => return Ok(None),
                }
            }
            Ok(Some(all))
        })?;
        match done {
            None => put(name, flag, 0),
            Some(mut all) => {
                reported_all(&ids, &mut all, false);
                put_statuses(name, out, &all)?;
                put(name, flag, 1)
            }
        }
    }

    /// `MPI_Request_get_status_some`: the indices of the active requests that are complete,
    /// without freeing them; `*outcount` = `MPI_UNDEFINED` if none is active.
    fn Request_get_status_some = MPI_Request_get_status_some / PMPI_Request_get_status_some(
        n: c_int, r: *const Handle, outcount: *mut c_int, indices: *mut c_int, out: *mut MpiStatus,
    ) on CommHandle::WORLD => {
        let name = "Request_get_status_some";
        let ids = request_ids(name, n, r)?;
        if outcount.is_null() {
            return Err(err(ErrorClass::Arg, name, "outcount is NULL"));
        }
        let found = with_requests(name, |t| {
            let mut active = false;
            let mut done = Vec::new();
            for (i, &id) in ids.iter().enumerate() {
                if !t.is_active(id)? {
                    continue;
                }
                active = true;
                if let Some(st) = t.get_status(id)? {
                    done.push((i, st));
                }
            }
            Ok(active.then_some(done))
        })?;
        let Some(mut done) = found else {
            return put(name, outcount, UNDEFINED);
        };
        for (i, st) in &mut done {
            reported(ids[*i], st, false);
        }
        let idx = slice_mut(name, indices, done.len())?;
        for (d, (i, _)) in idx.iter_mut().zip(&done) {
            *d = *i as c_int;
        }
        if !out.is_null() {
            let sts = slice_mut(name, out, done.len())?;
            for (d, (_, st)) in sts.iter_mut().zip(&done) {
                *d = MpiStatus::from_core(st);
            }
        }
        put(name, outcount, done.len() as c_int)
    }

    /// `MPI_Recv`.
    fn Recv = MPI_Recv / PMPI_Recv(buf: *mut c_void, n: c_int, dt: Handle, src: c_int, t: c_int, c: Handle, status: *mut MpiStatus) on comm(c) => {
        recv("Recv", buf, n.into(), dt, src, t, c, status)
    }

    /// `MPI_Irecv`.
    fn Irecv = MPI_Irecv / PMPI_Irecv(buf: *mut c_void, n: c_int, dt: Handle, src: c_int, t: c_int, c: Handle, r: *mut Handle) on comm(c) => {
        irecv("Irecv", false, buf, n.into(), dt, src, t, c, r)
    }

    /// `MPI_Recv_init`.
    fn Recv_init = MPI_Recv_init / PMPI_Recv_init(buf: *mut c_void, n: c_int, dt: Handle, src: c_int, t: c_int, c: Handle, r: *mut Handle) on comm(c) => {
        irecv("Recv_init", true, buf, n.into(), dt, src, t, c, r)
    }

    /// `MPI_Sendrecv`.
    fn Sendrecv = MPI_Sendrecv / PMPI_Sendrecv(
        sbuf: *const c_void, sn: c_int, sdt: Handle, dest: c_int, stag: c_int,
        rbuf: *mut c_void, rn: c_int, rdt: Handle, src: c_int, rtag: c_int,
        c: Handle, status: *mut MpiStatus,
    ) on comm(c) => {
        sendrecv("Sendrecv", sbuf, sn.into(), sdt, dest, stag, rbuf, rn.into(), rdt, src, rtag, c, status)
    }

    /// `MPI_Sendrecv_c`.
    fn Sendrecv_c = MPI_Sendrecv_c / PMPI_Sendrecv_c(
        sbuf: *const c_void, sn: i64, sdt: Handle, dest: c_int, stag: c_int,
        rbuf: *mut c_void, rn: i64, rdt: Handle, src: c_int, rtag: c_int,
        c: Handle, status: *mut MpiStatus,
    ) on comm(c) => {
        sendrecv("Sendrecv_c", sbuf, sn, sdt, dest, stag, rbuf, rn, rdt, src, rtag, c, status)
    }

    /// `MPI_Isendrecv`: one request for both; it completes with the receive's status.
    fn Isendrecv = MPI_Isendrecv / PMPI_Isendrecv(
        sbuf: *const c_void, sn: c_int, sdt: Handle, dest: c_int, stag: c_int,
        rbuf: *mut c_void, rn: c_int, rdt: Handle, src: c_int, rtag: c_int,
        c: Handle, r: *mut Handle,
    ) on comm(c) => {
        isendrecv("Isendrecv", sbuf, sn.into(), sdt, dest, stag, rbuf, rn.into(), rdt, src, rtag, c, r)
    }

    /// `MPI_Isendrecv_replace`: the message sent is a copy taken now, so the receive may
    /// land in the same buffer.
    fn Isendrecv_replace = MPI_Isendrecv_replace / PMPI_Isendrecv_replace(
        buf: *mut c_void, n: c_int, dt: Handle, dest: c_int, stag: c_int, src: c_int, rtag: c_int,
        c: Handle, r: *mut Handle,
    ) on comm(c) => {
        isendrecv("Isendrecv_replace", std::ptr::null(), n.into(), dt, dest, stag, buf, n.into(), dt, src, rtag, c, r)
    }

    /// `MPI_Sendrecv_replace`.
    fn Sendrecv_replace = MPI_Sendrecv_replace / PMPI_Sendrecv_replace(
        buf: *mut c_void, n: c_int, dt: Handle, dest: c_int, stag: c_int, src: c_int, rtag: c_int,
        c: Handle, status: *mut MpiStatus,
    ) on comm(c) => {
        sendrecv_replace("Sendrecv_replace", buf, n.into(), dt, dest, stag, src, rtag, c, status)
    }

    /// `MPI_Sendrecv_replace_c`.
    fn Sendrecv_replace_c = MPI_Sendrecv_replace_c / PMPI_Sendrecv_replace_c(
        buf: *mut c_void, n: i64, dt: Handle, dest: c_int, stag: c_int, src: c_int, rtag: c_int,
        c: Handle, status: *mut MpiStatus,
    ) on comm(c) => {
        sendrecv_replace("Sendrecv_replace_c", buf, n, dt, dest, stag, src, rtag, c, status)
    }

    /// `MPI_Probe`.
    fn Probe = MPI_Probe / PMPI_Probe(src: c_int, t: c_int, c: Handle, status: *mut MpiStatus) on comm(c) => {
        check_recv_tag("Probe", t)?;
        let st = typed(c)?.probe::<u8>(source(src), tag(t))?;
        put_status(status, &st);
        Ok(())
    }

    /// `MPI_Iprobe`.
    fn Iprobe = MPI_Iprobe / PMPI_Iprobe(src: c_int, t: c_int, c: Handle, flag: *mut c_int, status: *mut MpiStatus) on comm(c) => {
        check_recv_tag("Iprobe", t)?;
        if flag.is_null() {
            return Err(err(ErrorClass::Arg, "Iprobe", "flag is NULL"));
        }
        let st = typed(c)?.immediate_probe::<u8>(source(src), tag(t))?;
        if let Some(st) = &st {
            put_status(status, st);
        }
        put("Iprobe", flag, st.is_some() as c_int)
    }

    /// `MPI_Start`.
    fn Start = MPI_Start / PMPI_Start(r: *mut Handle) on CommHandle::WORLD => {
        let id = req(get("Start", r)?)?;
        staging::starting(id);
        with_requests("Start", |t| t.start(id))
    }

    /// `MPI_Startall`.
    fn Startall = MPI_Startall / PMPI_Startall(n: c_int, r: *mut Handle) on CommHandle::WORLD => {
        let (_, ids) = requests("Startall", n, r)?;
        for &id in &ids {
            staging::starting(id);
        }
        with_requests("Startall", |t| t.start_all(&ids))
    }

    /// `MPI_Wait`.
    fn Wait = MPI_Wait / PMPI_Wait(r: *mut Handle, status: *mut MpiStatus) on CommHandle::WORLD => {
        let mut id = req(get("Wait", r)?)?;
        let was = id;
        let mut st = with_requests("Wait", |t| t.wait(&mut id))?;
        reported(was, &mut st, true);
        put("Wait", r, req_handle(id))?;
        put_status(status, &st);
        status_error("Wait", &st)
    }

    /// `MPI_Test`.
    fn Test = MPI_Test / PMPI_Test(r: *mut Handle, flag: *mut c_int, status: *mut MpiStatus) on CommHandle::WORLD => {
        let mut id = req(get("Test", r)?)?;
        if flag.is_null() {
            return Err(err(ErrorClass::Arg, "Test", "flag is NULL"));
        }
        let was = id;
        let mut st = with_requests("Test", |t| t.test(&mut id))?;
        if let Some(st) = &mut st {
            reported(was, st, true);
        }
        put("Test", r, req_handle(id))?;
        put("Test", flag, st.is_some() as c_int)?;
        match st {
            Some(st) => {
                put_status(status, &st);
                status_error("Test", &st)
            }
            None => Ok(()),
        }
    }

    /// `MPI_Request_get_status`: like `MPI_Test` without freeing the request.
    fn Request_get_status = MPI_Request_get_status / PMPI_Request_get_status(r: Handle, flag: *mut c_int, status: *mut MpiStatus) on CommHandle::WORLD => {
        let id = req(r)?;
        if flag.is_null() {
            return Err(err(ErrorClass::Arg, "Request_get_status", "flag is NULL"));
        }
        let mut st = with_requests("Request_get_status", |t| t.get_status(id))?;
        if let Some(st) = &mut st {
            reported(id, st, false);
        }
        put("Request_get_status", flag, st.is_some() as c_int)?;
        if let Some(st) = st {
            put_status(status, &st);
        }
        Ok(())
    }

    /// `MPI_Waitall`: `MPI_ERR_IN_STATUS` if any failed, each status holding its own error.
    fn Waitall = MPI_Waitall / PMPI_Waitall(n: c_int, r: *mut Handle, out: *mut MpiStatus) on CommHandle::WORLD => {
        // SAFETY: `r` valid for `n` requests, `out` null or valid for `n` statuses (the caller's
        // contract, as for the general way below).
        if unsafe { wait_all_sent("Waitall", n, r, out)? } {
            return Ok(());
        }
        let (hs, mut ids) = requests("Waitall", n, r)?;
        let mut st = statuses(ids.len());
        let was = snapshot(&ids);
        let mut res = with_requests("Waitall", |t| t.wait_all(&mut ids, &mut st));
        if grequest::any() || !staging::is_empty() {
            reported_all(&was, &mut st, true);
            res = in_status("Waitall", res, &st);
        }
        write_back(hs, &ids);
        put_statuses("Waitall", out, &st)?;
        res
    }

    /// `MPI_Testall`.
    fn Testall = MPI_Testall / PMPI_Testall(n: c_int, r: *mut Handle, flag: *mut c_int, out: *mut MpiStatus) on CommHandle::WORLD => {
        let (hs, mut ids) = requests("Testall", n, r)?;
        if flag.is_null() {
            return Err(err(ErrorClass::Arg, "Testall", "flag is NULL"));
        }
        let mut st = statuses(ids.len());
        let was = snapshot(&ids);
        let mut res = with_requests("Testall", |t| t.test_all(&mut ids, &mut st));
        write_back(hs, &ids);
        let done = matches!(res, Ok(true) | Err(_));
        if done && (grequest::any() || !staging::is_empty()) {
            reported_all(&was, &mut st, true);
            res = in_status("Testall", res.map(drop), &st).map(|()| true);
        }
        put("Testall", flag, done as c_int)?;
        if done {
            put_statuses("Testall", out, &st)?;
        }
        res.map(drop)
    }

    /// `MPI_Waitany`: `MPI_UNDEFINED` if every request is null or inactive.
    fn Waitany = MPI_Waitany / PMPI_Waitany(n: c_int, r: *mut Handle, index: *mut c_int, status: *mut MpiStatus) on CommHandle::WORLD => {
        let (hs, mut ids) = requests("Waitany", n, r)?;
        let was = snapshot(&ids);
        let mut got = with_requests("Waitany", |t| Ok(t.wait_any(&mut ids)))?;
        if let Some((i, st)) = &mut got {
            let id = was.get(*i).copied().unwrap_or(RequestId::NULL);
            reported(id, st, true);
        }
        write_back(hs, &ids);
        match got {
            Some((i, st)) => {
                put("Waitany", index, i as c_int)?;
                put_status(status, &st);
                status_error("Waitany", &st)
            }
            None => {
                put_status(status, &oxmpi::handle::request::empty_status());
                put("Waitany", index, UNDEFINED)
            }
        }
    }

    /// `MPI_Testany`.
    fn Testany = MPI_Testany / PMPI_Testany(n: c_int, r: *mut Handle, index: *mut c_int, flag: *mut c_int, status: *mut MpiStatus) on CommHandle::WORLD => {
        let (hs, mut ids) = requests("Testany", n, r)?;
        if flag.is_null() || index.is_null() {
            return Err(err(ErrorClass::Arg, "Testany", "flag or index is NULL"));
        }
        let was = snapshot(&ids);
        let mut got = with_requests("Testany", |t| Ok(t.test_any(&mut ids)))?;
        if let AnyDone::Done(i, st) = &mut got {
            let id = was.get(*i).copied().unwrap_or(RequestId::NULL);
            reported(id, st, true);
        }
        write_back(hs, &ids);
        match got {
            AnyDone::Done(i, st) => {
                put("Testany", index, i as c_int)?;
                put("Testany", flag, 1)?;
                put_status(status, &st);
                status_error("Testany", &st)
            }
            AnyDone::Inactive => {
                put("Testany", index, UNDEFINED)?;
                put_status(status, &oxmpi::handle::request::empty_status());
                put("Testany", flag, 1)
            }
            AnyDone::Pending => {
                put("Testany", index, UNDEFINED)?;
                put("Testany", flag, 0)
            }
        }
    }

    /// `MPI_Waitsome`.
    fn Waitsome = MPI_Waitsome / PMPI_Waitsome(n: c_int, r: *mut Handle, outcount: *mut c_int, indices: *mut c_int, out: *mut MpiStatus) on CommHandle::WORLD => {
        some("Waitsome", true, n, r, outcount, indices, out)
    }

    /// `MPI_Testsome`.
    fn Testsome = MPI_Testsome / PMPI_Testsome(n: c_int, r: *mut Handle, outcount: *mut c_int, indices: *mut c_int, out: *mut MpiStatus) on CommHandle::WORLD => {
        some("Testsome", false, n, r, outcount, indices, out)
    }

    /// `MPI_Cancel`.
    fn Cancel = MPI_Cancel / PMPI_Cancel(r: *mut Handle) on CommHandle::WORLD => {
        let id = req(get("Cancel", r)?)?;
        if grequest::cancel(id)? {
            return Ok(());
        }
        with_requests("Cancel", |t| t.cancel(id))
    }

    /// `MPI_Request_free`.
    fn Request_free = MPI_Request_free / PMPI_Request_free(r: *mut Handle) on CommHandle::WORLD => {
        let mut id = req(get("Request_free", r)?)?;
        let was = id;
        // A completed (or inactive persistent) request's staged buffer can go with it.
        let done = !staging::is_empty()
            && with_requests("Request_free", |t| t.get_status(id)).ok().flatten().is_some();
        with_requests("Request_free", |t| t.free(&mut id))?;
        grequest::freed(was)?;
        staging::freed(was, done);
        crate::convert::request_freed(was);
        put("Request_free", r, req_handle(id))
    }

    /// `MPI_Test_cancelled`.
    fn Test_cancelled = MPI_Test_cancelled / PMPI_Test_cancelled(status: *const MpiStatus, flag: *mut c_int) on CommHandle::WORLD => {
        let st = get("Test_cancelled", status)?;
        put("Test_cancelled", flag, st.internal[2])
    }

    /// `MPI_Status_set_cancelled`.
    fn Status_set_cancelled = MPI_Status_set_cancelled / PMPI_Status_set_cancelled(status: *mut MpiStatus, flag: c_int) on CommHandle::WORLD => {
        let mut st = get("Status_set_cancelled", status)?;
        st.internal[2] = (flag != 0) as c_int;
        put("Status_set_cancelled", status, st)
    }

    /// `MPI_Status_set_elements`.
    fn Status_set_elements = MPI_Status_set_elements / PMPI_Status_set_elements(status: *mut MpiStatus, dt: Handle, n: c_int) on CommHandle::WORLD => {
        set_elements("Status_set_elements", status, dt, n.into())
    }

    /// `MPI_Status_set_elements_x`.
    fn Status_set_elements_x = MPI_Status_set_elements_x / PMPI_Status_set_elements_x(status: *mut MpiStatus, dt: Handle, n: i64) on CommHandle::WORLD => {
        set_elements("Status_set_elements_x", status, dt, n)
    }

    /// `MPI_Status_get_source`.
    fn Status_get_source = MPI_Status_get_source / PMPI_Status_get_source(status: *const MpiStatus, v: *mut c_int) on CommHandle::WORLD => {
        put("Status_get_source", v, get("Status_get_source", status)?.source)
    }

    /// `MPI_Status_set_source`.
    fn Status_set_source = MPI_Status_set_source / PMPI_Status_set_source(status: *mut MpiStatus, v: c_int) on CommHandle::WORLD => {
        let mut st = get("Status_set_source", status)?;
        st.source = v;
        put("Status_set_source", status, st)
    }

    /// `MPI_Status_get_tag`.
    fn Status_get_tag = MPI_Status_get_tag / PMPI_Status_get_tag(status: *const MpiStatus, v: *mut c_int) on CommHandle::WORLD => {
        put("Status_get_tag", v, get("Status_get_tag", status)?.tag)
    }

    /// `MPI_Status_set_tag`.
    fn Status_set_tag = MPI_Status_set_tag / PMPI_Status_set_tag(status: *mut MpiStatus, v: c_int) on CommHandle::WORLD => {
        let mut st = get("Status_set_tag", status)?;
        st.tag = v;
        put("Status_set_tag", status, st)
    }

    /// `MPI_Status_get_error`.
    fn Status_get_error = MPI_Status_get_error / PMPI_Status_get_error(status: *const MpiStatus, v: *mut c_int) on CommHandle::WORLD => {
        put("Status_get_error", v, get("Status_get_error", status)?.error)
    }

    /// `MPI_Status_set_error`.
    fn Status_set_error = MPI_Status_set_error / PMPI_Status_set_error(status: *mut MpiStatus, v: c_int) on CommHandle::WORLD => {
        let mut st = get("Status_set_error", status)?;
        st.error = v;
        put("Status_set_error", status, st)
    }
}

/// A blocking send and receive (`MPI_Sendrecv`, `MPI_Sendrecv_c`).
///
/// # Safety
/// Pointers as the standard's contract for `MPI_Sendrecv`.
#[allow(clippy::too_many_arguments)] // the C call's arguments
unsafe fn sendrecv(
    name: &str,
    sbuf: *const c_void,
    sn: i64,
    sdt: Handle,
    dest: c_int,
    stag: c_int,
    rbuf: *mut c_void,
    rn: i64,
    rdt: Handle,
    src: c_int,
    rtag: c_int,
    c: Handle,
    status: *mut MpiStatus,
) -> Result<()> {
    // SAFETY: forwarded from our caller.
    unsafe {
        check_send_tag(name, stag)?;
        check_recv_tag(name, rtag)?;
        let sd = data(name, sn, sdt as usize, sbuf)?;
        let rd = data(name, rn, rdt as usize, rbuf.cast_const())?;
        let packed;
        let sdata: &[u8] = match sd {
            Data::Bytes { offset, len } => send_buf(name, at(sbuf, offset), len)?,
            Data::Typed { ty, count, len } => {
                packed = Staged::send(ty, sbuf, count, len, false);
                packed.buf_ref()
            }
        };
        let comm = typed(c)?;
        let st = match rd {
            Data::Bytes { offset, len } => {
                let rdata = recv_buf(name, at_mut(rbuf, offset), len)?;
                comm.send_receive_into(sdata, dest, stag, rdata, source(src), tag(rtag))?
            }
            Data::Typed { ty, count, len } => {
                let mut s = Staged::recv(ty, rbuf, count, len, false);
                let st =
                    comm.send_receive_into(sdata, dest, stag, s.bytes(), source(src), tag(rtag))?;
                s.unpack(st.bytes());
                st
            }
        };
        put_status(status, &st);
        Ok(())
    }
}

/// A blocking send and receive in one buffer (`MPI_Sendrecv_replace`, `_c`).
///
/// # Safety
/// Pointers as the standard's contract for `MPI_Sendrecv_replace`.
#[allow(clippy::too_many_arguments)] // the C call's arguments
unsafe fn sendrecv_replace(
    name: &str,
    buf: *mut c_void,
    n: i64,
    dt: Handle,
    dest: c_int,
    stag: c_int,
    src: c_int,
    rtag: c_int,
    c: Handle,
    status: *mut MpiStatus,
) -> Result<()> {
    // SAFETY: forwarded from our caller.
    unsafe {
        check_send_tag(name, stag)?;
        check_recv_tag(name, rtag)?;
        let comm = typed(c)?;
        let st = match data(name, n, dt as usize, buf.cast_const())? {
            Data::Bytes { offset, len } => {
                let data = recv_buf(name, at_mut(buf, offset), len)?;
                comm.send_receive_replace_into(data, dest, stag, source(src), tag(rtag))?
            }
            Data::Typed { ty, count, len } => {
                let mut s = Staged::send(ty, buf, count, len, false);
                let st =
                    comm.send_receive_replace_into(s.bytes(), dest, stag, source(src), tag(rtag))?;
                // The staged bytes now hold the message; `s` unpacks into `buf`.
                s.unpack(st.bytes());
                st
            }
        };
        put_status(status, &st);
        Ok(())
    }
}

/// The request ids of `n` handles at `r`, read only (the `MPI_Request_get_status_*` calls).
///
/// # Safety
/// `r` must be valid for reads of `n` handles.
unsafe fn request_ids(name: &str, n: c_int, r: *const Handle) -> Result<Vec<RequestId>> {
    // SAFETY: forwarded from our caller.
    unsafe { slice(name, r, count(name, n)?)? }
        .iter()
        .map(|&h| req(h))
        .collect()
}

/// `p` moved by a datatype's lower bound (wrapping: with `MPI_BOTTOM` the bound is an address).
pub(crate) fn at(p: *const c_void, offset: isize) -> *const c_void {
    p.cast::<u8>().wrapping_offset(offset).cast()
}

/// As [`at`], mutable.
pub(crate) fn at_mut(p: *mut c_void, offset: isize) -> *mut c_void {
    p.cast::<u8>().wrapping_offset(offset).cast()
}

/// A blocking receive of `n` elements of `dt` into `buf` (`MPI_Recv`, `MPI_Recv_c`).
///
/// # Safety
/// Pointers as the standard's contract for `MPI_Recv`.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn recv(
    name: &str,
    buf: *mut c_void,
    n: i64,
    dt: Handle,
    src: c_int,
    t: c_int,
    c: Handle,
    status: *mut MpiStatus,
) -> Result<()> {
    // The common case, a predefined type with a valid count and tag, in as few steps as the
    // native path: the checks and errors are those of the general way.
    if let (Some(len), true) = (predefined_len(n, dt), t >= 0 || t == ANY_TAG) {
        return with_p2p(comm(c), |comm| {
            // SAFETY: forwarded from our caller.
            let data = unsafe { recv_buf(name, buf, len)? };
            // SAFETY: forwarded from our caller.
            unsafe { finish_recv(comm.receive_into(data, source(src), tag(t)), status) }
        });
    }
    // SAFETY: forwarded from our caller.
    unsafe { recv_general(name, buf, n, dt, src, t, c, status) }
}

/// Writes a blocking receive's outcome to `status`: all of it, or on an error its class (a
/// truncated message still reports who sent it).
///
/// # Safety
/// `status` must be null or valid for a write of one `MPI_Status`.
#[inline]
unsafe fn finish_recv(st: Result<Status>, status: *mut MpiStatus) -> Result<()> {
    match st {
        Ok(st) => {
            // SAFETY: forwarded from our caller.
            unsafe { put_status(status, &st) };
            Ok(())
        }
        Err(e) => {
            if !status.is_null() {
                // SAFETY: non-null, valid by the caller's contract.
                unsafe { (*status).error = e.class() as c_int };
            }
            Err(e)
        }
    }
}

/// [`recv`] of anything else: derived datatypes, and every argument error.
///
/// # Safety
/// As [`recv`].
#[allow(clippy::too_many_arguments)]
#[inline(never)]
unsafe fn recv_general(
    name: &str,
    buf: *mut c_void,
    n: i64,
    dt: Handle,
    src: c_int,
    t: c_int,
    c: Handle,
    status: *mut MpiStatus,
) -> Result<()> {
    let d = data(name, n, dt as usize, buf.cast_const())?;
    check_recv_tag(name, t)?;
    with_p2p(comm(c), |comm| {
        let st = match d {
            Data::Bytes { offset, len } => {
                // SAFETY: forwarded from our caller.
                let data = unsafe { recv_buf(name, at_mut(buf, offset), len)? };
                comm.receive_into(data, source(src), tag(t))
            }
            Data::Typed { ty, count, len } => {
                let mut s = comm.stage_recv(ty, buf, count, len);
                // SAFETY: `buf` holds the elements, writable by the caller's contract.
                unsafe { comm.receive_staged(&mut s, source(src), tag(t)) }
            }
        };
        // SAFETY: forwarded from our caller.
        unsafe { finish_recv(st, status) }
    })
}

/// The error a completed operation's status carries, as the call's result.
fn status_error(name: &str, st: &Status) -> Result<()> {
    match st.error() {
        None => Ok(()),
        Some(c) => Err(err(c, name, format!("the operation failed ({c:?})"))),
    }
}

/// `MPI_Waitsome`/`MPI_Testsome`.
///
/// # Safety
/// Pointers as the standard's contract for those calls.
unsafe fn some(
    name: &str,
    wait: bool,
    n: c_int,
    r: *mut Handle,
    outcount: *mut c_int,
    indices: *mut c_int,
    out: *mut MpiStatus,
) -> Result<()> {
    // SAFETY: forwarded from our caller.
    let (hs, mut ids) = unsafe { requests(name, n, r)? };
    let mut done = Vec::new();
    let was = snapshot(&ids);
    let mut res = with_requests(name, |t| {
        if wait {
            t.wait_some(&mut ids, &mut done)
        } else {
            t.test_some(&mut ids, &mut done)
        }
    });
    write_back(hs, &ids);
    for (i, st) in &mut done {
        let id = was.get(*i).copied().unwrap_or(RequestId::NULL);
        reported(id, st, true);
    }
    if res.is_ok() && done.iter().any(|(_, st)| st.error().is_some()) {
        res = Err(in_status_error(name));
    }
    let active = match &res {
        Ok(a) => *a,
        Err(e) if e.class() == ErrorClass::InStatus => true,
        Err(e) => return Err(e.clone()),
    };
    if !active {
        // SAFETY: forwarded from our caller.
        return unsafe { put(name, outcount, UNDEFINED) };
    }
    // SAFETY: forwarded from our caller.
    unsafe {
        put(name, outcount, done.len() as c_int)?;
        let idx = slice_mut(name, indices, done.len())?;
        for (d, (i, _)) in idx.iter_mut().zip(&done) {
            *d = *i as c_int;
        }
        if !out.is_null() {
            let sts = slice_mut(name, out, done.len())?;
            for (d, (_, st)) in sts.iter_mut().zip(&done) {
                *d = MpiStatus::from_core(st);
            }
        }
    }
    res.map(drop)
}
