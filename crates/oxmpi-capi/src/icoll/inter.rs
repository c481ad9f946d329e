//! The nonblocking and persistent collectives on intercommunicators (MPI-5.0 §6.2.2), in
//! the shapes of the parent module: buffers resolved (derived datatypes staged) by its
//! helpers, then one `inter_*_init` of the handle layer. A rooted call's root passes
//! `MPI_ROOT`, the rest of its group `MPI_PROC_NULL` (their buffers are not touched) and the
//! other group the root's rank in it; `MPI_IN_PLACE` is not defined on intercommunicators
//! and is an `MPI_ERR_ARG` error. Buffers hold one block per process of the *remote* group.

use std::ffi::{c_int, c_void};

use oxmpi::{InterCommunicator, InterRoot, Result, Single};

use super::{blocks, dst, empty, launch, src, Blocks, How};
use crate::boundary::{AbiInt, Handle};
use crate::coll::inter::{no_in_place, root_of};
use crate::staging::Kept;

type Inter = InterCommunicator<Single>;

/// No buffer: the side of a call this process does not use.
fn none() -> (*mut u8, usize) {
    (empty(), 0)
}

/// # Safety
/// No buffers.
pub(super) unsafe fn barrier(name: &str, how: How, ic: &Inter, out: *mut Handle) -> Result<()> {
    // SAFETY: no buffers.
    unsafe {
        launch(name, how, out, Kept::default(), |q| {
            q.inter_barrier_init(ic)
        })
    }
}

/// # Safety
/// As the MPI call.
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn bcast(
    name: &str,
    how: How,
    ic: &Inter,
    buf: *mut c_void,
    n: i64,
    dt: Handle,
    root: c_int,
    out: *mut Handle,
) -> Result<()> {
    let root = root_of(name, ic, root)?;
    let mut k = Kept::default();
    // SAFETY: the caller's buffer, valid until the request completes (is freed).
    unsafe {
        let (b, len) = match root {
            InterRoot::Null => none(),
            r => {
                no_in_place(name, buf)?;
                dst(name, how, buf, n, dt, 1, r == InterRoot::Root, &mut k)?
            }
        };
        launch(name, how, out, k, |q| q.inter_bcast_init(ic, b, len, root))
    }
}

/// `MPI_Igather` (`scatter` false) and `MPI_Iscatter`: the root's buffer holds a block per
/// remote process, each of them sends (receives) one.
///
/// # Safety
/// As the MPI call.
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn rooted(
    name: &str,
    how: How,
    scatter: bool,
    ic: &Inter,
    (sbuf, sn, sdt): (*const c_void, i64, Handle),
    (rbuf, rn, rdt): (*mut c_void, i64, Handle),
    root: c_int,
    out: *mut Handle,
) -> Result<()> {
    let root = root_of(name, ic, root)?;
    let q = ic.remote_size() as usize;
    let mut k = Kept::default();
    let (mut s, mut r) = (none(), none());
    // SAFETY: the caller's buffers, valid until the request completes (is freed).
    unsafe {
        match (root, scatter) {
            (InterRoot::Null, _) => {}
            (InterRoot::Root, false) | (InterRoot::Remote(_), true) => {
                no_in_place(name, rbuf)?;
                let blocks = if scatter { 1 } else { q };
                r = dst(name, how, rbuf, rn, rdt, blocks, false, &mut k)?;
            }
            (InterRoot::Root, true) | (InterRoot::Remote(_), false) => {
                no_in_place(name, sbuf)?;
                let blocks = if scatter { q } else { 1 };
                let (p, len) = src(name, how, sbuf, sn, sdt, blocks, &mut k)?;
                s = (p.cast_mut(), len);
            }
        }
        let s = (s.0.cast_const(), s.1);
        launch(name, how, out, k, |qq| {
            qq.inter_rooted_init(ic, scatter, s, r, root)
        })
    }
}

/// `MPI_Iallgather` (`all_to_all` false) and `MPI_Ialltoall`.
///
/// # Safety
/// As the MPI call.
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn allgather(
    name: &str,
    how: How,
    all_to_all: bool,
    ic: &Inter,
    (sbuf, sn, sdt): (*const c_void, i64, Handle),
    (rbuf, rn, rdt): (*mut c_void, i64, Handle),
    out: *mut Handle,
) -> Result<()> {
    no_in_place(name, sbuf)?;
    let q = ic.remote_size() as usize;
    let mut k = Kept::default();
    // SAFETY: the caller's buffers, valid until the request completes (is freed).
    unsafe {
        let r = dst(name, how, rbuf, rn, rdt, q, false, &mut k)?;
        let s = src(
            name,
            how,
            sbuf,
            sn,
            sdt,
            if all_to_all { q } else { 1 },
            &mut k,
        )?;
        launch(name, how, out, k, |qq| {
            qq.inter_allgather_init(ic, all_to_all, s, r)
        })
    }
}

/// `MPI_Igatherv` (`all` false) and `MPI_Iallgatherv`: the blocks of the receive buffer,
/// one per remote process.
///
/// # Safety
/// As the MPI call.
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn gatherv<C: AbiInt, D: AbiInt>(
    name: &str,
    how: How,
    all: bool,
    ic: &Inter,
    (sbuf, sn, sdt): (*const c_void, i64, Handle),
    (rbuf, rcounts, displs, rdt): (*mut c_void, *const C, *const D, Handle),
    root: c_int,
    out: *mut Handle,
) -> Result<()> {
    // An allgatherv has no root: every process sends and receives (`role` unused).
    let role = if all {
        InterRoot::Null
    } else {
        root_of(name, ic, root)?
    };
    let (sends, receives) = if all {
        (true, true)
    } else {
        (
            matches!(role, InterRoot::Remote(_)),
            role == InterRoot::Root,
        )
    };
    let q = ic.remote_size() as usize;
    let mut k = Kept::default();
    // SAFETY: the caller's buffers and arrays, valid until the request completes.
    unsafe {
        let b = if receives {
            no_in_place(name, rbuf.cast_const())?;
            blocks(
                name,
                how,
                q,
                rcounts,
                displs,
                rdt,
                rbuf,
                (false, true),
                &mut k,
            )?
        } else {
            no_blocks()
        };
        let s = if sends {
            no_in_place(name, sbuf)?;
            src(name, how, sbuf, sn, sdt, 1, &mut k)?
        } else {
            (empty().cast_const(), 0)
        };
        launch(name, how, out, k, |qq| {
            let r = (b.at, b.extent);
            let bl = (&b.bc[..], &b.bd[..]);
            if all {
                qq.inter_allgatherv_init(ic, s, r, bl)
            } else {
                qq.inter_gatherv_init(ic, s, r, bl, role)
            }
        })
    }
}

/// `MPI_Iscatterv`: the root's send buffer in blocks, one per remote process.
///
/// # Safety
/// As the MPI call.
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn scatterv<C: AbiInt, D: AbiInt>(
    name: &str,
    how: How,
    ic: &Inter,
    (sbuf, scounts, displs, sdt): (*const c_void, *const C, *const D, Handle),
    (rbuf, rn, rdt): (*mut c_void, i64, Handle),
    root: c_int,
    out: *mut Handle,
) -> Result<()> {
    let role = root_of(name, ic, root)?;
    let q = ic.remote_size() as usize;
    let mut k = Kept::default();
    // SAFETY: the caller's buffers and arrays, valid until the request completes.
    unsafe {
        let b = if role == InterRoot::Root {
            no_in_place(name, sbuf)?;
            blocks(
                name,
                how,
                q,
                scounts,
                displs,
                sdt,
                sbuf,
                (true, false),
                &mut k,
            )?
        } else {
            no_blocks()
        };
        let r = if matches!(role, InterRoot::Remote(_)) {
            no_in_place(name, rbuf.cast_const())?;
            dst(name, how, rbuf, rn, rdt, 1, false, &mut k)?
        } else {
            none()
        };
        launch(name, how, out, k, |qq| {
            let s = (b.at.cast_const(), b.extent);
            qq.inter_scatterv_init(ic, s, (&b.bc[..], &b.bd[..]), r, role)
        })
    }
}

/// `MPI_Ialltoallv` and `MPI_Ialltoallw`: `build(p, send, rw, k)` gives the send (`send`)
/// or receive blocks for the `p` remote processes.
///
/// # Safety
/// As the MPI call.
pub(super) unsafe fn alltoall_blocks(
    name: &str,
    how: How,
    ic: &Inter,
    sbuf: *const c_void,
    out: *mut Handle,
    build: impl Fn(usize, bool, (bool, bool), &mut Kept) -> Result<Blocks>,
) -> Result<()> {
    no_in_place(name, sbuf)?;
    let q = ic.remote_size() as usize;
    let mut k = Kept::default();
    let r = build(q, false, (false, true), &mut k)?;
    let s = build(q, true, (true, false), &mut k)?;
    // SAFETY: the caller's buffers (or staged ones, kept), valid until the request completes.
    unsafe {
        launch(name, how, out, k, |qq| {
            qq.inter_alltoallv_init(
                ic,
                (s.at.cast_const(), s.extent),
                (&s.bc[..], &s.bd[..]),
                (r.at, r.extent),
                (&r.bc[..], &r.bd[..]),
            )
        })
    }
}

/// The blocks of a side this process does not use.
fn no_blocks() -> Blocks {
    Blocks {
        bc: Vec::new(),
        bd: Vec::new(),
        extent: 0,
        at: empty(),
    }
}
