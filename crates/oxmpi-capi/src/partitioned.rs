//! Partitioned communication (MPI-4): `MPI_Psend_init`, `MPI_Precv_init`, `MPI_Pready`,
//! `MPI_Pready_range`, `MPI_Pready_list` and `MPI_Parrived`, over the handle layer's
//! partitioned requests.
//!
//! Like every persistent request of this C layer, a partitioned request lives in the table of
//! the thread that created it, which starts, waits for and frees it; `MPI_Pready` and
//! `MPI_Parrived` also find it from other threads (`Requests::pready` looks it up by id).
//! Through a non-contiguous datatype, a send is packed when its last partition is marked
//! ready, and a receive is unpacked when `MPI_Parrived` first sees it arrived (and, as any
//! receive, at completion).

use std::ffi::{c_int, c_void};

use oxmpi::handle::comm::{with_p2p, CommHandle};
use oxmpi::{ErrorClass, Result};

use crate::boundary::{comm, count, err, mpi_fn, put, recv_buf, send_buf, slice, Handle};
use crate::datatypes::{data, Data};
use crate::p2p::{at, at_mut, check_send_tag, req, req_handle, with_requests};
use crate::staging::{self, Staged};

/// A partitioned send (`send`) or receive of `partitions` × `n` elements of `dt` at `buf`,
/// with rank `peer` of `c`, into `*out`.
///
/// # Safety
/// `buf` valid (for reads of a send, writes of a receive) for the whole message whenever
/// the request is active, until it is freed; `out` null or valid for a write.
#[allow(clippy::too_many_arguments)]
unsafe fn init(
    name: &str,
    send: bool,
    buf: *mut c_void,
    partitions: c_int,
    n: i64,
    dt: Handle,
    peer: c_int,
    t: c_int,
    c: Handle,
    out: *mut Handle,
) -> Result<()> {
    let parts = count(name, partitions)?;
    let per = count(name, n)?;
    let total = per
        .checked_mul(parts)
        .and_then(|v| i64::try_from(v).ok())
        .ok_or_else(|| err(ErrorClass::Count, name, "partitions × count overflows"))?;
    let d = data(name, total, dt as usize, buf.cast_const())?;
    check_send_tag(name, t)?;
    if out.is_null() {
        return Err(err(ErrorClass::Arg, name, "request is NULL"));
    }
    with_p2p(comm(c), |comm| {
        let (ptr, len, staged) = match d {
            // SAFETY: forwarded from our caller.
            Data::Bytes { offset, len } if send => unsafe {
                let b = send_buf(name, at(buf.cast_const(), offset), len)?;
                (b.as_ptr().cast_mut(), len, None)
            },
            // SAFETY: forwarded from our caller.
            Data::Bytes { offset, len } => unsafe {
                let b = recv_buf(name, at_mut(buf, offset), len)?;
                (b.as_mut_ptr(), len, None)
            },
            Data::Typed { ty, count, len } => {
                // SAFETY: forwarded from our caller (packed when the last partition is
                // ready, unpacked when it has arrived).
                let mut s = unsafe {
                    if send {
                        Staged::send(ty, buf.cast_const(), count, len, true)
                    } else {
                        Staged::recv(ty, buf, count, len, true)
                    }
                };
                (s.ptr(), len, Some(s))
            }
        };
        let id = with_requests(name, |r| {
            // SAFETY: the caller keeps the buffer valid while the request is active; a
            // staged buffer is held with the request until it is freed.
            unsafe {
                if send {
                    r.psend_init(comm, ptr, len, parts, peer, t)
                } else {
                    r.precv_init(comm, ptr, len, parts, peer, t)
                }
            }
        })?;
        if let Some(s) = staged {
            staging::hold(id, s);
        }
        // SAFETY: `out` is non-null and valid by contract.
        unsafe { put(name, out, req_handle(id)) }
    })
}

/// Marks `parts` of partitioned send `r` ready; a staged send is packed before its data may
/// go.
fn ready(name: &str, r: Handle, parts: impl IntoIterator<Item = i64>) -> Result<()> {
    let id = req(r)?;
    with_requests(name, |t| {
        t.pready(name, id, parts, &mut || staging::starting(id))
    })
}

mpi_fn! {
    /// `MPI_Psend_init`.
    fn Psend_init = MPI_Psend_init / PMPI_Psend_init(
        buf: *const c_void, partitions: c_int, n: i64, dt: Handle, dest: c_int, t: c_int,
        c: Handle, _info: Handle, r: *mut Handle,
    ) on comm(c) => {
        init("Psend_init", true, buf.cast_mut(), partitions, n, dt, dest, t, c, r)
    }

    /// `MPI_Precv_init`.
    fn Precv_init = MPI_Precv_init / PMPI_Precv_init(
        buf: *mut c_void, partitions: c_int, n: i64, dt: Handle, src: c_int, t: c_int,
        c: Handle, _info: Handle, r: *mut Handle,
    ) on comm(c) => {
        init("Precv_init", false, buf, partitions, n, dt, src, t, c, r)
    }

    /// `MPI_Pready`.
    fn Pready = MPI_Pready / PMPI_Pready(partition: c_int, r: Handle) on CommHandle::WORLD => {
        ready("Pready", r, [i64::from(partition)])
    }

    /// `MPI_Pready_range`: partitions `low..=high`.
    fn Pready_range = MPI_Pready_range / PMPI_Pready_range(low: c_int, high: c_int, r: Handle) on CommHandle::WORLD => {
        if low > high {
            return Err(err(ErrorClass::Arg, "Pready_range", format!("range {low}..={high} is empty")));
        }
        ready("Pready_range", r, i64::from(low)..=i64::from(high))
    }

    /// `MPI_Pready_list`.
    fn Pready_list = MPI_Pready_list / PMPI_Pready_list(n: c_int, parts: *const c_int, r: Handle) on CommHandle::WORLD => {
        let list = slice("Pready_list", parts, count("Pready_list", n)?)?;
        ready("Pready_list", r, list.iter().map(|&p| i64::from(p)))
    }

    /// `MPI_Parrived`.
    fn Parrived = MPI_Parrived / PMPI_Parrived(r: Handle, partition: c_int, flag: *mut c_int) on CommHandle::WORLD => {
        if flag.is_null() {
            return Err(err(ErrorClass::Arg, "Parrived", "flag is NULL"));
        }
        let id = req(r)?;
        let arrived = with_requests("Parrived", |t| t.parrived("Parrived", id, i64::from(partition)))?;
        if let Some(st) = &arrived {
            // Through a datatype, the data is the user's once unpacked.
            staging::completed(id, st, true);
        }
        put("Parrived", flag, arrived.is_some() as c_int)
    }
}
