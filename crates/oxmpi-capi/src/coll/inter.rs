//! The blocking collectives on intercommunicators (MPI-5.0 §6.2.2): each group's data goes
//! to the other group, a rooted call's root passes `MPI_ROOT`, the rest of its group
//! `MPI_PROC_NULL` (their buffers are not touched) and the other group the root's rank in
//! it. Thin translations onto [`InterCommunicator`]; `MPI_IN_PLACE` is not defined on
//! intercommunicators and is an [`ErrorClass::Arg`] error.

use std::ffi::{c_int, c_void};

use oxmpi::{ErrorClass, InterCommunicator, InterRoot, Op, Reducible, Result, Single};

use super::{in_place, input, operand_in, operand_out, output};
use crate::boundary::{err, Handle};

/// `MPI_ROOT`.
pub(super) const ROOT: c_int = -4;
/// `MPI_PROC_NULL`.
pub(super) const PROC_NULL: c_int = -3;

type Inter = InterCommunicator<Single>;

/// The role a rooted call's `root` argument gives this process.
pub(crate) fn root_of(name: &str, ic: &Inter, root: c_int) -> Result<InterRoot> {
    match root {
        ROOT => Ok(InterRoot::Root),
        PROC_NULL => Ok(InterRoot::Null),
        r if r >= 0 && r < ic.remote_size() => Ok(InterRoot::Remote(r)),
        r => Err(err(
            ErrorClass::Root,
            name,
            format!(
                "root {r} on an intercommunicator is neither MPI_ROOT, MPI_PROC_NULL nor a rank \
                 of the remote group (size {})",
                ic.remote_size()
            ),
        )),
    }
}

pub(crate) fn no_in_place(name: &str, p: *const c_void) -> Result<()> {
    if in_place(p) {
        return Err(err(
            ErrorClass::Arg,
            name,
            "MPI_IN_PLACE is not defined on an intercommunicator",
        ));
    }
    Ok(())
}

/// `MPI_Bcast` on an intercommunicator.
///
/// # Safety
/// `buf` valid for `n` elements of `dt` at the root and in the other group.
pub(super) unsafe fn bcast(
    name: &str,
    ic: &Inter,
    buf: *mut c_void,
    n: i64,
    dt: Handle,
    root: c_int,
) -> Result<()> {
    let root = root_of(name, ic, root)?;
    if root == InterRoot::Null {
        return ic.broadcast_into(root, &mut [0u8; 0][..]);
    }
    // SAFETY: forwarded from our caller.
    unsafe {
        let mut out = output(name, buf, n, dt, 1)?;
        ic.broadcast_into(root, out.bytes())?;
        out.finish();
    }
    Ok(())
}

/// `MPI_Gather` on an intercommunicator: the root receives remote-size blocks.
///
/// # Safety
/// As the standard's contract for `MPI_Gather`.
#[allow(clippy::too_many_arguments)] // the C call's arguments
pub(super) unsafe fn gather(
    name: &str,
    ic: &Inter,
    sbuf: *const c_void,
    sn: i64,
    sdt: Handle,
    rbuf: *mut c_void,
    rn: i64,
    rdt: Handle,
    root: c_int,
) -> Result<()> {
    // SAFETY: forwarded from our caller.
    unsafe {
        match root_of(name, ic, root)? {
            InterRoot::Null => ic.gather_into::<u8>(InterRoot::Null, &[], &mut []),
            InterRoot::Root => {
                no_in_place(name, sbuf)?;
                let mut recv = output(name, rbuf, rn, rdt, ic.remote_size() as usize)?;
                ic.gather_into(InterRoot::Root, &[], recv.bytes())?;
                recv.finish();
                Ok(())
            }
            r => {
                no_in_place(name, sbuf)?;
                let send = input(name, sbuf, sn, sdt, 1)?;
                ic.gather_into(r, &send, &mut [])
            }
        }
    }
}

/// `MPI_Scatter` on an intercommunicator: the root sends remote-size blocks.
///
/// # Safety
/// As the standard's contract for `MPI_Scatter`.
#[allow(clippy::too_many_arguments)] // the C call's arguments
pub(super) unsafe fn scatter(
    name: &str,
    ic: &Inter,
    sbuf: *const c_void,
    sn: i64,
    sdt: Handle,
    rbuf: *mut c_void,
    rn: i64,
    rdt: Handle,
    root: c_int,
) -> Result<()> {
    // SAFETY: forwarded from our caller.
    unsafe {
        match root_of(name, ic, root)? {
            InterRoot::Null => ic.scatter_into::<u8>(InterRoot::Null, &[], &mut []),
            InterRoot::Root => {
                no_in_place(name, rbuf)?;
                let send = input(name, sbuf, sn, sdt, ic.remote_size() as usize)?;
                ic.scatter_into(InterRoot::Root, &send, &mut [])
            }
            r => {
                no_in_place(name, rbuf)?;
                let mut recv = output(name, rbuf, rn, rdt, 1)?;
                ic.scatter_into(r, &[], recv.bytes())?;
                recv.finish();
                Ok(())
            }
        }
    }
}

/// `MPI_Allgather` on an intercommunicator: remote-size blocks of the other group's data.
///
/// # Safety
/// As the standard's contract for `MPI_Allgather`.
#[allow(clippy::too_many_arguments)] // the C call's arguments
pub(super) unsafe fn allgather(
    name: &str,
    ic: &Inter,
    sbuf: *const c_void,
    sn: i64,
    sdt: Handle,
    rbuf: *mut c_void,
    rn: i64,
    rdt: Handle,
) -> Result<()> {
    no_in_place(name, sbuf)?;
    // SAFETY: forwarded from our caller.
    unsafe {
        let send = input(name, sbuf, sn, sdt, 1)?;
        let mut recv = output(name, rbuf, rn, rdt, ic.remote_size() as usize)?;
        ic.all_gather_into(&send, recv.bytes())?;
        recv.finish();
    }
    Ok(())
}

/// `MPI_Alltoall` on an intercommunicator: one block to and from each remote rank.
///
/// # Safety
/// As the standard's contract for `MPI_Alltoall`.
#[allow(clippy::too_many_arguments)] // the C call's arguments
pub(super) unsafe fn alltoall(
    name: &str,
    ic: &Inter,
    sbuf: *const c_void,
    sn: i64,
    sdt: Handle,
    rbuf: *mut c_void,
    rn: i64,
    rdt: Handle,
) -> Result<()> {
    no_in_place(name, sbuf)?;
    let p = ic.remote_size() as usize;
    // SAFETY: forwarded from our caller.
    unsafe {
        let send = input(name, sbuf, sn, sdt, p)?;
        let mut recv = output(name, rbuf, rn, rdt, p)?;
        ic.all_to_all_into(&send, recv.bytes())?;
        recv.finish();
    }
    Ok(())
}

/// `MPI_Allreduce` on an intercommunicator: each group gets the other group's reduction.
///
/// # Safety
/// Buffers valid for `len` bytes.
pub(super) unsafe fn allreduce<T: Reducible>(
    name: &str,
    ic: &Inter,
    sbuf: *const c_void,
    rbuf: *mut c_void,
    len: usize,
    op: Op,
) -> Result<()> {
    no_in_place(name, sbuf)?;
    // SAFETY: forwarded from our caller.
    unsafe {
        let send = operand_in::<T>(name, sbuf, len)?;
        let mut recv = operand_out::<T>(name, rbuf, len)?;
        ic.all_reduce_into(&send, recv.elems(), op)?;
        recv.finish();
    }
    Ok(())
}

/// `MPI_Reduce` on an intercommunicator: the root gets the other group's reduction.
///
/// # Safety
/// Buffers valid for `len` bytes (the receive buffer at the root, the send buffer in the
/// other group).
pub(super) unsafe fn reduce<T: Reducible>(
    name: &str,
    ic: &Inter,
    sbuf: *const c_void,
    rbuf: *mut c_void,
    len: usize,
    op: Op,
    root: c_int,
) -> Result<()> {
    // SAFETY: forwarded from our caller.
    unsafe {
        match root_of(name, ic, root)? {
            InterRoot::Null => ic.reduce_into::<T>(InterRoot::Null, &[], &mut [], op),
            InterRoot::Root => {
                no_in_place(name, sbuf)?;
                let mut recv = operand_out::<T>(name, rbuf, len)?;
                ic.reduce_into(InterRoot::Root, &[], recv.elems(), op)?;
                recv.finish();
                Ok(())
            }
            r => {
                no_in_place(name, sbuf)?;
                let send = operand_in::<T>(name, sbuf, len)?;
                ic.reduce_into(r, &send, &mut [], op)
            }
        }
    }
}
