//! Blocking collectives over predefined datatypes, reductions with predefined and user
//! operations (`MPI_Op_create`), and `MPI_Reduce_local`.
//!
//! Data movement goes through the core's collectives on bytes; reductions through its typed
//! ones, with the element type chosen from the datatype ([`with_elem_type`]). A user
//! operation is applied to elements of the datatype's size and is told the C datatype
//! handle of the call (set per call in [`CALL_DATATYPE`]).

use std::borrow::Cow;
use std::cell::Cell;
use std::ffi::{c_int, c_void};

use oxmpi::handle::comm::{comm_coll_lent, comm_typed, CommHandle};
use oxmpi::handle::op::{self as hop, OpHandle};
use oxmpi::op::{ByteFn, Datatype};
use oxmpi::{Communicator, ErrorClass, InterCommunicator, Op, Reducible, Result, Single};

use crate::boundary::{
    comm, count, err, get, handle_of, int_of, mpi_fn, put, slice, span, AbiInt, Handle,
};
use crate::datatypes::{with_elem_type, Predef};
use crate::staging::{PairLayout, Staged};

/// `MPI_IN_PLACE`.
const IN_PLACE: usize = 1;

pub(crate) mod inter;

thread_local! {
    /// The C datatype of the reduction running on this thread, handed to user operations.
    pub(crate) static CALL_DATATYPE: Cell<usize> = const { Cell::new(0) };
}

/// `MPI_User_function`.
pub type UserFunction = unsafe extern "C" fn(*mut c_void, *mut c_void, *mut c_int, *mut Handle);
/// `MPI_User_function_c`: the large-count form, with an `MPI_Count` length.
pub type UserFunctionC = unsafe extern "C" fn(*mut c_void, *mut c_void, *mut i64, *mut Handle);

/// A reduction kernel calling a C user function `call(in, inout, len, datatype)` on `n`
/// elements of the reduction's datatype, at most `max` elements per call: an `int` length
/// cannot name more than `INT_MAX`, so a larger reduction calls it once per slice.
fn user_kernel<L: Copy + TryFrom<usize> + Send + Sync + 'static>(
    max: usize,
    call: impl Fn(*mut c_void, *mut c_void, &mut L, &mut Handle) + Send + Sync + 'static,
) -> ByteFn {
    std::sync::Arc::new(
        move |input: &[u8], inout: &mut [u8], n: usize, dt: Datatype| {
            let token = CALL_DATATYPE.with(|c| c.get());
            let mut dth: Handle = if dt.token != Datatype::RUST_TYPE {
                dt.token
            } else {
                token
            } as Handle;
            let size = input.len().checked_div(n).unwrap_or(0);
            let mut done = 0;
            loop {
                let k = (n - done).min(max);
                let Ok(mut len) = L::try_from(k) else { return };
                // Slice `done..done + k` of the `n` elements the two buffers hold.
                let at = done * size;
                call(
                    input.as_ptr().wrapping_add(at).cast_mut().cast(),
                    inout.as_mut_ptr().wrapping_add(at).cast(),
                    &mut len,
                    &mut dth,
                );
                done += k;
                if done >= n {
                    break;
                }
            }
        },
    )
}

pub(crate) fn typed(c: Handle) -> Result<Communicator<Single>> {
    comm_typed::<Single>(comm(c))
}

/// The communicator behind `c` for a collective defined on both kinds: `Err` an
/// intercommunicator (see [`inter`]).
#[allow(clippy::type_complexity)]
#[inline]
pub(crate) fn either(
    c: Handle,
) -> Result<std::result::Result<Cow<'static, Communicator<Single>>, InterCommunicator<Single>>> {
    comm_coll_lent(comm(c))
}

/// The communicator of a varying-count collective, of either kind: the calls below take
/// the same byte buffers, counts and displacements for both, with the root argument as C
/// gives it (a rank, or on an intercommunicator also `MPI_ROOT` and `MPI_PROC_NULL`).
pub(crate) enum VComm {
    Intra(Cow<'static, Communicator<Single>>),
    Inter(InterCommunicator<Single>),
}

impl VComm {
    pub(crate) fn new(c: Handle) -> Result<VComm> {
        Ok(match either(c)? {
            Ok(comm) => VComm::Intra(comm),
            Err(ic) => VComm::Inter(ic),
        })
    }

    /// How many blocks the counts and displacements describe: the size of the group that
    /// data comes from or goes to.
    pub(crate) fn peers(&self) -> usize {
        match self {
            VComm::Intra(c) => c.size() as usize,
            VComm::Inter(ic) => ic.remote_size() as usize,
        }
    }

    /// This process's rank in its (local) group.
    pub(crate) fn rank(&self) -> c_int {
        match self {
            VComm::Intra(c) => c.rank(),
            VComm::Inter(ic) => ic.rank(),
        }
    }

    /// The size of this process's (local) group.
    pub(crate) fn size(&self) -> c_int {
        match self {
            VComm::Intra(c) => c.size(),
            VComm::Inter(ic) => ic.size(),
        }
    }

    /// Which of its buffers a reduction uses at this process, (send, receive): `rooted`
    /// for `MPI_Reduce` at `root`, else one that delivers everywhere (allreduce, scans,
    /// reduce-scatter). On an intercommunicator the root only receives, the other group
    /// only sends and the root's group's other processes do neither.
    pub(crate) fn reduction_sides(&self, rooted: bool, root: c_int) -> (bool, bool) {
        match self {
            VComm::Intra(c) => (true, !rooted || c.rank() == root),
            VComm::Inter(_) if !rooted => (true, true),
            VComm::Inter(_) => (root >= 0, root == inter::ROOT),
        }
    }

    /// Whether this process is the root of a rooted call.
    pub(crate) fn is_root(&self, root: c_int) -> bool {
        match self {
            VComm::Intra(c) => c.rank() == root,
            VComm::Inter(_) => root == inter::ROOT,
        }
    }

    /// A process of an intercommunicator's root group other than the root: it takes no
    /// part, and its buffers are not significant.
    pub(crate) fn is_bystander(&self, root: c_int) -> bool {
        matches!(self, VComm::Inter(_)) && root == inter::PROC_NULL
    }

    fn gatherv(
        &self,
        name: &str,
        root: c_int,
        send: &[u8],
        recv: &mut [u8],
        bc: &[usize],
        bd: &[usize],
    ) -> Result<()> {
        match self {
            VComm::Intra(c) => c.gather_varcount_into(root, send, recv, bc, bd),
            VComm::Inter(ic) => {
                ic.gather_varcount_into(inter::root_of(name, ic, root)?, send, recv, bc, bd)
            }
        }
    }

    fn scatterv(
        &self,
        name: &str,
        root: c_int,
        send: &[u8],
        bc: &[usize],
        bd: &[usize],
        recv: &mut [u8],
    ) -> Result<()> {
        match self {
            VComm::Intra(c) => c.scatter_varcount_into(root, send, bc, bd, recv),
            VComm::Inter(ic) => {
                ic.scatter_varcount_into(inter::root_of(name, ic, root)?, send, bc, bd, recv)
            }
        }
    }

    fn allgatherv(&self, send: &[u8], recv: &mut [u8], bc: &[usize], bd: &[usize]) -> Result<()> {
        match self {
            VComm::Intra(c) => c.all_gather_varcount_into(send, recv, bc, bd),
            VComm::Inter(ic) => ic.all_gather_varcount_into(send, recv, bc, bd),
        }
    }

    #[allow(clippy::too_many_arguments)] // the standard's arguments
    fn alltoallv(
        &self,
        send: &[u8],
        sc: &[usize],
        sd: &[usize],
        recv: &mut [u8],
        rc: &[usize],
        rd: &[usize],
    ) -> Result<()> {
        match self {
            VComm::Intra(c) => c.all_to_all_varcount_into(send, sc, sd, recv, rc, rd),
            VComm::Inter(ic) => ic.all_to_all_varcount_into(send, sc, sd, recv, rc, rd),
        }
    }
}

// Always inlined: its answer, returned through memory, was reloaded wider than it was
// stored (a failed store forward) on every C reduction.
#[inline(always)]
pub(crate) fn op(h: Handle) -> Result<(OpHandle, Op)> {
    let id = OpHandle::from_int(int_of(h));
    Ok((id, hop::op_get(id)?))
}

pub(crate) fn in_place(p: *const c_void) -> bool {
    p as usize == IN_PLACE
}

/// `len` bytes at `p` as `T`s: misaligned memory is [`ErrorClass::Buffer`].
///
/// # Safety
/// `p` valid for reads of `len` bytes for `'a`.
unsafe fn elems<'a, T>(name: &str, p: *const c_void, len: usize) -> Result<&'a [T]> {
    let size = std::mem::size_of::<T>().max(1);
    if len > 0 && p.is_null() {
        return Err(err(
            ErrorClass::Buffer,
            name,
            "the buffer is NULL with a non-zero count",
        ));
    }
    if len > 0 && (p as usize) % std::mem::align_of::<T>() != 0 {
        return Err(err(
            ErrorClass::Buffer,
            name,
            "the buffer is not aligned for its datatype",
        ));
    }
    // SAFETY: checked non-null and aligned; valid for `len` bytes by contract.
    unsafe { slice(name, p.cast::<T>(), len / size) }
}

/// As [`elems`], mutable.
///
/// # Safety
/// `p` valid for reads and writes of `len` bytes for `'a`, not otherwise used.
unsafe fn elems_mut<'a, T>(name: &str, p: *mut c_void, len: usize) -> Result<&'a mut [T]> {
    // SAFETY: forwarded from our caller; the mutable view is the caller's exclusive buffer.
    let s = unsafe { elems::<T>(name, p, len)? };
    // SAFETY: same memory, exclusively the caller's by contract.
    Ok(unsafe { std::slice::from_raw_parts_mut(s.as_ptr().cast_mut(), s.len()) })
}

/// Bytes at `p` (empty for `len == 0`).
///
/// # Safety
/// As [`elems`].
unsafe fn bytes<'a>(name: &str, p: *const c_void, len: usize) -> Result<&'a [u8]> {
    // SAFETY: forwarded.
    unsafe { elems::<u8>(name, p, len) }
}

/// Bytes at `p`, mutable.
///
/// # Safety
/// As [`elems_mut`].
unsafe fn bytes_mut<'a>(name: &str, p: *mut c_void, len: usize) -> Result<&'a mut [u8]> {
    // SAFETY: forwarded.
    unsafe { elems_mut::<u8>(name, p, len) }
}

/// Runs a reduction with `$T` bound to the element type of `$dt`: the Rust type of a
/// predefined datatype for predefined operations, byte arrays of the datatype's size for user
/// operations (applied by the C function).
macro_rules! reduce_as {
    ($name:expr, $dt:expr, $op:expr, $T:ident => $body:expr) => {{
        let dt: &Predef = $dt;
        if matches!($op, Op::User(_)) {
            // Only user kernels read it: a predefined op skips the thread-local store.
            CALL_DATATYPE.with(|c| c.set(dt.handle));
            match dt.size {
                1 => { type $T = [u8; 1]; $body }
                2 => { type $T = [u8; 2]; $body }
                4 => { type $T = [u8; 4]; $body }
                8 => { type $T = [u8; 8]; $body }
                16 => { type $T = [u8; 16]; $body }
                32 => { type $T = [u8; 32]; $body }
                s => Err(err(ErrorClass::Type, $name, format!("{s}-byte elements"))),
            }
        } else {
            with_elem_type!(dt, $T => $body, Err(err(
                ErrorClass::Op,
                $name,
                format!("{} is not defined on {}", $op.name(), dt.name),
            )))
        }
    }};
}

pub(crate) use reduce_as;

/// Typed reduction helpers (generic over the element type chosen by [`reduce_as`]).
mod typed_ops {
    use super::*;

    /// `MPI_Reduce`.
    ///
    /// # Safety
    /// Buffers valid for `len` bytes as the standard's contract says.
    pub unsafe fn reduce<T: Reducible>(
        c: &Communicator<Single>,
        sbuf: *const c_void,
        rbuf: *mut c_void,
        len: usize,
        op: Op,
        root: c_int,
    ) -> Result<()> {
        let name = "Reduce";
        let me = c.rank() == root;
        // SAFETY: the caller's buffers, valid for `len` bytes (the receive buffer at the root).
        unsafe {
            if me && in_place(sbuf) {
                let mut recv = operand_out::<T>(name, rbuf, len)?;
                c.reduce_in_place(root, recv.elems(), op)?;
                recv.finish();
                return Ok(());
            }
            let send = operand_in::<T>(name, sbuf, len)?;
            if !me {
                return c.reduce_into(root, &send, &mut [], op);
            }
            let mut recv = operand_out::<T>(name, rbuf, len)?;
            c.reduce_into(root, &send, recv.elems(), op)?;
            recv.finish();
            Ok(())
        }
    }

    /// `MPI_Allreduce`, `MPI_Scan`, `MPI_Exscan`: `kind` 0, 1, 2.
    ///
    /// # Safety
    /// Buffers valid for `len` bytes.
    pub unsafe fn all<T: Reducible>(
        name: &str,
        kind: u8,
        c: &Communicator<Single>,
        sbuf: *const c_void,
        rbuf: *mut c_void,
        len: usize,
        op: Op,
    ) -> Result<()> {
        // SAFETY: the caller's buffers, valid for `len` bytes.
        unsafe {
            let mut recv = operand_out::<T>(name, rbuf, len)?;
            if in_place(sbuf) {
                match kind {
                    0 => c.all_reduce_in_place(recv.elems(), op),
                    1 => c.scan_in_place(recv.elems(), op),
                    _ => c.exclusive_scan_in_place(recv.elems(), op),
                }?;
            } else {
                let send = operand_in::<T>(name, sbuf, len)?;
                match kind {
                    0 => c.all_reduce_into(&send, recv.elems(), op),
                    1 => c.scan_into(&send, recv.elems(), op),
                    _ => c.exclusive_scan_into(&send, recv.elems(), op),
                }?;
            }
            recv.finish();
            Ok(())
        }
    }

    /// `MPI_Reduce_scatter` (element `counts`) and `MPI_Reduce_scatter_block`.
    ///
    /// # Safety
    /// Buffers valid for the sums of `counts` (send) and this rank's count (receive).
    pub unsafe fn reduce_scatter<T: Reducible>(
        name: &str,
        c: &Communicator<Single>,
        sbuf: *const c_void,
        rbuf: *mut c_void,
        counts: &[usize],
        op: Op,
    ) -> Result<()> {
        let size = std::mem::size_of::<T>();
        let total: usize = counts.iter().sum::<usize>() * size;
        let mine = counts.get(c.rank() as usize).copied().unwrap_or(0) * size;
        // SAFETY: the caller's buffers, valid for those lengths.
        unsafe {
            if in_place(sbuf) {
                let mut all = operand_out::<T>(name, rbuf, total)?;
                c.reduce_scatter_in_place(all.elems(), counts, op)?;
                all.finish();
                return Ok(());
            }
            let send = operand_in::<T>(name, sbuf, total)?;
            let mut recv = operand_out::<T>(name, rbuf, mine)?;
            c.reduce_scatter_into(&send, recv.elems(), counts, op)?;
            recv.finish();
            Ok(())
        }
    }

    /// `MPI_Reduce_local`.
    ///
    /// # Safety
    /// Buffers valid for `len` bytes.
    pub unsafe fn local<T: Reducible>(
        inbuf: *const c_void,
        inout: *mut c_void,
        len: usize,
        op: Op,
    ) -> Result<()> {
        // SAFETY: the caller's buffers, valid for `len` bytes.
        unsafe {
            let a = operand_in::<T>("Reduce_local", inbuf, len)?;
            let mut b = operand_out::<T>("Reduce_local", inout, len)?;
            oxmpi::reduce_local(&a, b.elems(), &op)?;
            b.finish();
            Ok(())
        }
    }
}

/// A reduction's input of `len` bytes at `p` as `T`s: the caller's memory when it is aligned
/// for `T`, else an aligned copy — MPI does not require a buffer to be aligned for its
/// datatype, and a misaligned `&[T]` cannot exist. The aligned path copies nothing.
///
/// # Safety
/// `p` valid for reads of `len` bytes for `'a`.
unsafe fn operand_in<'a, T: Reducible>(
    name: &str,
    p: *const c_void,
    len: usize,
) -> Result<std::borrow::Cow<'a, [T]>> {
    if len == 0 || (p as usize) % std::mem::align_of::<T>() == 0 || p.is_null() {
        // SAFETY: forwarded; aligned (or empty, or null, which `elems` refuses).
        return Ok(std::borrow::Cow::Borrowed(unsafe {
            elems::<T>(name, p, len)?
        }));
    }
    // SAFETY: forwarded; `T` is plain data, so any bytes are a valid `T`.
    Ok(std::borrow::Cow::Owned(unsafe {
        unaligned_copy::<T>(p, len)
    }))
}

/// `len / size_of::<T>()` elements read from possibly misaligned memory at `p`.
///
/// # Safety
/// `p` valid for reads of `len` bytes; `T` plain data (every bit pattern valid).
unsafe fn unaligned_copy<T: Reducible>(p: *const c_void, len: usize) -> Vec<T> {
    let n = len / std::mem::size_of::<T>().max(1);
    let mut v = Vec::<T>::with_capacity(n);
    // SAFETY: `v` has room for `n` elements; the caller's `p` holds their bytes; `T` is
    // plain data, so the copied bytes make `n` initialised elements.
    unsafe {
        std::ptr::copy_nonoverlapping(
            p.cast::<u8>(),
            v.as_mut_ptr().cast::<u8>(),
            n * size_of::<T>(),
        );
        v.set_len(n);
    }
    v
}

/// A reduction's output (or in-out) buffer as `T`s: the caller's memory when it is aligned
/// for `T`, else an aligned copy of it written back by [`OperandOut::finish`].
enum OperandOut<'a, T> {
    Direct(&'a mut [T]),
    Copied(Vec<T>, *mut u8),
}

impl<T: Reducible> OperandOut<'_, T> {
    fn elems(&mut self) -> &mut [T] {
        match self {
            OperandOut::Direct(s) => s,
            OperandOut::Copied(v, _) => v,
        }
    }

    /// Writes an aligned copy back into the caller's memory (after a successful reduction).
    fn finish(self) {
        if let OperandOut::Copied(v, to) = self {
            // SAFETY: `to` is the caller's buffer of `v`'s bytes, writable by the contract
            // of `operand_out`, and not borrowed elsewhere (the copy stood in for it).
            unsafe {
                std::ptr::copy_nonoverlapping(
                    v.as_ptr().cast::<u8>(),
                    to,
                    std::mem::size_of_val(v.as_slice()),
                )
            };
        }
    }
}

/// [`OperandOut`] for `len` bytes at `p` (read now: in-place and in-out buffers are inputs).
///
/// # Safety
/// `p` valid for reads and writes of `len` bytes for `'a`, not otherwise used.
unsafe fn operand_out<'a, T: Reducible>(
    name: &str,
    p: *mut c_void,
    len: usize,
) -> Result<OperandOut<'a, T>> {
    if len == 0 || (p as usize) % std::mem::align_of::<T>() == 0 || p.is_null() {
        // SAFETY: forwarded.
        return Ok(OperandOut::Direct(unsafe { elems_mut::<T>(name, p, len)? }));
    }
    // SAFETY: forwarded.
    let v = unsafe { unaligned_copy::<T>(p, len) };
    Ok(OperandOut::Copied(v, p.cast()))
}

/// Element counts and displacements (in elements of `size` bytes) as byte counts, with the
/// byte extent they cover.
///
/// # Safety
/// `counts` and `displs` valid for `p` reads.
pub(crate) unsafe fn layout<C: AbiInt, D: AbiInt>(
    name: &str,
    p: usize,
    counts: *const C,
    displs: *const D,
    size: usize,
) -> Result<(Vec<usize>, Vec<usize>, usize)> {
    // SAFETY: forwarded.
    let (c, d) = unsafe { (slice(name, counts, p)?, slice(name, displs, p)?) };
    let mut bc = Vec::with_capacity(p);
    let mut bd = Vec::with_capacity(p);
    let mut extent = 0;
    // Large-count forms can ask for more than the address space.
    let big = || {
        err(
            ErrorClass::Count,
            name,
            "a block is beyond the address space",
        )
    };
    for (&n, &o) in c.iter().zip(d) {
        let (n, o) = (n.wide(), o.wide());
        let o = usize::try_from(o).map_err(|_| {
            err(
                ErrorClass::Arg,
                name,
                format!("displacement {o} is negative"),
            )
        })?;
        let n = count(name, n)?.checked_mul(size).ok_or_else(big)?;
        let o = o.checked_mul(size).ok_or_else(big)?;
        extent = extent.max(o.checked_add(n).ok_or_else(big)?);
        bc.push(n);
        bd.push(o);
    }
    // No object is larger than `isize::MAX` bytes (Rust's and C's limit alike).
    if extent > isize::MAX as usize {
        return Err(big());
    }
    Ok((bc, bd, extent))
}

/// The send side of a collective: `blocks × n` elements of `dt` at `p` as bytes (the
/// user's memory for predefined types, a packed copy for derived ones).
///
/// # Safety
/// `p` valid for reads of those elements.
unsafe fn input<'a>(
    name: &str,
    p: *const c_void,
    n: i64,
    dt: Handle,
    blocks: usize,
) -> Result<std::borrow::Cow<'a, [u8]>> {
    if let Some(d) = crate::datatypes::predef(dt as usize) {
        let len = count(name, n)?
            .checked_mul(d.size)
            .and_then(|x| x.checked_mul(blocks))
            .ok_or_else(|| err(ErrorClass::Count, name, "count × datatype size overflows"))?;
        // SAFETY: forwarded.
        return Ok(std::borrow::Cow::Borrowed(unsafe { bytes(name, p, len)? }));
    }
    let (ty, k, len) = derived(name, n, dt, blocks, p)?;
    // SAFETY: forwarded: the elements' bytes are readable.
    Ok(std::borrow::Cow::Owned(
        unsafe { Staged::send(ty, p, k, len, false) }.into_bytes(),
    ))
}

/// The receive side of a collective: the user's bytes, or a staged copy unpacked by
/// [`Output::finish`].
enum Output<'a> {
    Raw(&'a mut [u8]),
    Staged(Staged),
}

impl Output<'_> {
    fn bytes(&mut self) -> &mut [u8] {
        match self {
            Output::Raw(b) => b,
            Output::Staged(s) => s.bytes(),
        }
    }

    /// Unpacks a staged receive into the user's memory.
    ///
    /// # Safety
    /// The user's elements must still be writable.
    unsafe fn finish(self) {
        if let Output::Staged(s) = self {
            // SAFETY: forwarded.
            unsafe { s.unpack(u64::MAX) };
        }
    }
}

/// The receive side for `blocks × n` elements of `dt` at `p`. A staged copy starts as the
/// packed current contents (what `MPI_IN_PLACE` and a broadcast root send).
///
/// # Safety
/// `p` valid for reads and writes of those elements until [`Output::finish`].
unsafe fn output<'a>(
    name: &str,
    p: *mut c_void,
    n: i64,
    dt: Handle,
    blocks: usize,
) -> Result<Output<'a>> {
    if let Some(d) = crate::datatypes::predef(dt as usize) {
        let len = count(name, n)?
            .checked_mul(d.size)
            .and_then(|x| x.checked_mul(blocks))
            .ok_or_else(|| err(ErrorClass::Count, name, "count × datatype size overflows"))?;
        // SAFETY: forwarded.
        return Ok(Output::Raw(unsafe { bytes_mut(name, p, len)? }));
    }
    let (ty, k, len) = derived(name, n, dt, blocks, p.cast_const())?;
    // SAFETY: forwarded: the elements' bytes are readable (they are writable).
    Ok(Output::Staged(unsafe {
        Staged::send(ty, p, k, len, false)
    }))
}

/// A committed derived type, its element count for `blocks × n` and their packed length.
pub(crate) fn derived(
    name: &str,
    n: i64,
    dt: Handle,
    blocks: usize,
    buf: *const c_void,
) -> Result<(oxmpi::datatype::Type, u64, usize)> {
    let n = count(name, n)?
        .checked_mul(blocks)
        .ok_or_else(|| err(ErrorClass::Count, name, "count overflows"))?;
    match crate::datatypes::data(name, n as i64, dt as usize, buf)? {
        crate::datatypes::Data::Typed { ty, count, len } => Ok((ty, count, len)),
        crate::datatypes::Data::Bytes { len, .. } => {
            let ty =
                oxmpi::handle::datatype::type_committed(name, crate::datatypes::id(dt as usize))?;
            Ok((ty, n as u64, len))
        }
    }
}

/// A reduction over a derived datatype made of one predefined type: the base's table entry
/// and the element count, or `None` for a predefined datatype.
#[inline]
pub(crate) fn reduction_base(name: &str, dt: Handle) -> Result<Option<&'static Predef>> {
    if crate::datatypes::predef(dt as usize).is_some() {
        return Ok(None);
    }
    derived_base(name, dt)
}

/// [`reduction_base`] of a handle that is not a predefined datatype's.
#[inline(never)]
fn derived_base(name: &str, dt: Handle) -> Result<Option<&'static Predef>> {
    let ty = oxmpi::handle::datatype::type_committed(name, crate::datatypes::id(dt as usize))?;
    let base = ty.base().ok_or_else(|| {
        err(
            ErrorClass::Type,
            name,
            "a reduction needs a datatype made of one predefined type",
        )
    })?;
    crate::datatypes::lookup(name, base.handle() as usize).map(Some)
}

/// The C struct layout of `d` if it is a MINLOC/MAXLOC pair type.
pub(crate) fn pair_layout(d: &Predef) -> Option<PairLayout> {
    oxmpi::datatype::Predefined::from_handle(d.handle as u32).and_then(|p| {
        let i = p.info();
        i.pair_index.map(|ix| PairLayout {
            value: i.repr.size(),
            index: p.pair_index_repr().size(),
            at: ix,
            extent: d.size,
        })
    })
}

/// A reduction (`kind`: 0 allreduce, 1 scan, 2 exscan, 3 reduce at `root`) over a derived
/// datatype of one predefined base: both sides packed into arrays of the base type (pairs
/// of MINLOC/MAXLOC spread to their C struct layout), reduced with the base's kernel, the
/// result unpacked.
///
/// # Safety
/// Buffers as the standard's contract for the call.
#[allow(clippy::too_many_arguments)]
unsafe fn reduce_derived(
    name: &str,
    kind: u8,
    d: &'static Predef,
    sbuf: *const c_void,
    rbuf: *mut c_void,
    n: i64,
    dt: Handle,
    o: Handle,
    root: c_int,
    c: Handle,
) -> Result<()> {
    let (_, op) = op(o)?;
    let comm = match either(c)? {
        Ok(comm) => comm,
        // SAFETY: forwarded from our caller.
        Err(_) => {
            return unsafe {
                crate::icoll::reduce_blocking(name, kind, sbuf, rbuf, n, dt, o, root, c)
            }
        }
    };
    let at_root = kind != 3 || comm.rank() == root;
    let (ty, k, len) = derived(name, n, dt, 1, rbuf.cast_const())?;
    let pair = pair_layout(d);
    // SAFETY: the caller's buffers, per the standard's contract.
    unsafe {
        let send = if in_place(sbuf) {
            None
        } else {
            Some(PairLayout::widen(
                pair,
                Staged::send(ty.clone(), sbuf, k, len, false).into_bytes(),
            ))
        };
        let mut recv = if at_root {
            Some(Staged::send(ty, rbuf, k, len, false))
        } else {
            None
        };
        let mut wide = recv
            .as_mut()
            .map(|r| PairLayout::widen(pair, r.bytes().to_vec()))
            .unwrap_or_default();
        let wlen = send.as_ref().map_or(wide.len(), |s| s.len());
        let sp = send
            .as_ref()
            .map_or(IN_PLACE as *const c_void, |s| s.as_ptr().cast());
        let rp = if at_root {
            wide.as_mut_ptr().cast()
        } else {
            std::ptr::null_mut()
        };
        if kind == 3 {
            reduce_as!(name, d, op, T => typed_ops::reduce::<T>(&comm, sp, rp, wlen, op, root))?;
        } else {
            reduce_as!(name, d, op, T => typed_ops::all::<T>(name, kind, &comm, sp, rp, wlen, op))?;
        }
        if let Some(mut r) = recv {
            PairLayout::narrow(pair, &wide, r.bytes());
            r.unpack(u64::MAX);
        }
    }
    Ok(())
}

/// The blocks of a v-collective through a derived datatype: element counts and
/// displacements (in extents of `ty`) as the packed byte counts and offsets the byte
/// collectives move, and the packed total.
struct Blocks {
    ty: oxmpi::datatype::Type,
    counts: Vec<u64>,
    displs: Vec<isize>,
    bc: Vec<usize>,
    bd: Vec<usize>,
    total: usize,
}

impl Blocks {
    /// `None` for a predefined datatype (the byte path).
    ///
    /// # Safety
    /// `counts` and `displs` valid for `p` reads.
    unsafe fn new<C: AbiInt, D: AbiInt>(
        name: &str,
        p: usize,
        counts: *const C,
        displs: *const D,
        dt: Handle,
    ) -> Result<Option<Blocks>> {
        if crate::datatypes::predef(dt as usize).is_some() {
            return Ok(None);
        }
        let ty = oxmpi::handle::datatype::type_committed(name, crate::datatypes::id(dt as usize))?;
        // SAFETY: forwarded.
        let (c, d) = unsafe { (slice(name, counts, p)?, slice(name, displs, p)?) };
        let size = ty.size() as usize;
        let mut b = Blocks {
            counts: Vec::with_capacity(p),
            displs: Vec::with_capacity(p),
            bc: Vec::with_capacity(p),
            bd: Vec::with_capacity(p),
            total: 0,
            ty,
        };
        for (&n, &o) in c.iter().zip(d) {
            let n = count(name, n.wide())?;
            let len = n
                .checked_mul(size)
                .ok_or_else(|| err(ErrorClass::Count, name, "count × datatype size overflows"))?;
            b.counts.push(n as u64);
            b.displs
                .push((o.wide() as isize).wrapping_mul(b.ty.extent() as isize));
            b.bd.push(b.total);
            b.bc.push(len);
            b.total += len;
        }
        Ok(Some(b))
    }

    /// Packs every block of the user's buffer at `base`.
    ///
    /// # Safety
    /// The blocks' data bytes must be readable.
    unsafe fn pack(&self, base: *const c_void) -> Vec<u8> {
        let mut out = vec![0u8; self.total];
        for i in 0..self.counts.len() {
            let at = base.cast::<u8>().wrapping_offset(self.displs[i]);
            // SAFETY: forwarded; `out` is ours.
            unsafe {
                oxmpi::datatype::pack::pack_raw(
                    &self.ty,
                    at,
                    self.counts[i],
                    0,
                    &mut out[self.bd[i]..self.bd[i] + self.bc[i]],
                )
            };
        }
        out
    }

    /// Unpacks every block into the user's buffer at `base`.
    ///
    /// # Safety
    /// The blocks' data bytes must be writable.
    unsafe fn unpack(&self, base: *mut c_void, packed: &[u8]) {
        for i in 0..self.counts.len() {
            let at = base.cast::<u8>().wrapping_offset(self.displs[i]);
            // SAFETY: forwarded; `packed` is ours.
            unsafe {
                oxmpi::datatype::pack::unpack_raw(
                    &self.ty,
                    at,
                    self.counts[i],
                    0,
                    &packed[self.bd[i]..self.bd[i] + self.bc[i]],
                )
            };
        }
    }
}

fn no_in_place(name: &str, p: *const c_void) -> Result<()> {
    if in_place(p) {
        return Err(err(
            ErrorClass::Buffer,
            name,
            "MPI_IN_PLACE is not accepted by this call in oxmpi",
        ));
    }
    Ok(())
}

mpi_fn! {
    /// `MPI_Barrier`.
    fn Barrier = MPI_Barrier / PMPI_Barrier(c: Handle) on comm(c) => {
        match either(c)? {
            Ok(comm) => comm.barrier(),
            Err(ic) => ic.barrier(),
        }
    }

    /// `MPI_Bcast`.
    fn Bcast = MPI_Bcast / PMPI_Bcast(buf: *mut c_void, n: c_int, dt: Handle, root: c_int, c: Handle) on comm(c) => {
        let comm = match either(c)? {
            Ok(comm) => comm,
            Err(ic) => return inter::bcast("Bcast", &ic, buf, n.into(), dt, root),
        };
        let mut out = output("Bcast", buf, n.into(), dt, 1)?;
        comm.broadcast_into(root, out.bytes())?;
        out.finish();
        Ok(())
    }

    /// `MPI_Bcast_c`.
    fn Bcast_c = MPI_Bcast_c / PMPI_Bcast_c(buf: *mut c_void, n: i64, dt: Handle, root: c_int, c: Handle) on comm(c) => {
        let comm = match either(c)? {
            Ok(comm) => comm,
            Err(ic) => return inter::bcast("Bcast_c", &ic, buf, n, dt, root),
        };
        let mut out = output("Bcast_c", buf, n, dt, 1)?;
        comm.broadcast_into(root, out.bytes())?;
        out.finish();
        Ok(())
    }

    /// `MPI_Allreduce_c`.
    fn Allreduce_c = MPI_Allreduce_c / PMPI_Allreduce_c(
        sbuf: *const c_void, rbuf: *mut c_void, n: i64, dt: Handle, o: Handle, c: Handle,
    ) on comm(c) => {
        if let Some(b) = reduction_base("Allreduce_c", dt)? {
            return reduce_derived("Allreduce_c", 0, b, sbuf, rbuf, n, dt, o, 0, c);
        }
        let (len, d) = span("Allreduce_c", n, dt)?;
        let (_, op) = op(o)?;
        let comm = match either(c)? {
            Ok(comm) => comm,
            Err(ic) => return reduce_as!("Allreduce_c", d, op, T => inter::allreduce::<T>("Allreduce_c", &ic, sbuf, rbuf, len, op)),
        };
        reduce_as!("Allreduce_c", d, op, T => typed_ops::all::<T>("Allreduce_c", 0, &comm, sbuf, rbuf, len, op))
    }

    /// `MPI_Reduce_c`.
    fn Reduce_c = MPI_Reduce_c / PMPI_Reduce_c(
        sbuf: *const c_void, rbuf: *mut c_void, n: i64, dt: Handle, o: Handle, root: c_int, c: Handle,
    ) on comm(c) => {
        if let Some(b) = reduction_base("Reduce_c", dt)? {
            return reduce_derived("Reduce_c", 3, b, sbuf, rbuf, n, dt, o, root, c);
        }
        let (len, d) = span("Reduce_c", n, dt)?;
        let (_, op) = op(o)?;
        let comm = match either(c)? {
            Ok(comm) => comm,
            Err(ic) => return reduce_as!("Reduce_c", d, op, T => inter::reduce::<T>("Reduce_c", &ic, sbuf, rbuf, len, op, root)),
        };
        reduce_as!("Reduce_c", d, op, T => typed_ops::reduce::<T>(&comm, sbuf, rbuf, len, op, root))
    }

    /// `MPI_Gather`.
    fn Gather = MPI_Gather / PMPI_Gather(
        sbuf: *const c_void, sn: c_int, sdt: Handle,
        rbuf: *mut c_void, rn: c_int, rdt: Handle, root: c_int, c: Handle,
    ) on comm(c) => {
        gather("Gather", sbuf, sn.into(), sdt, rbuf, rn.into(), rdt, root, c)
    }

    /// `MPI_Gather_c`.
    fn Gather_c = MPI_Gather_c / PMPI_Gather_c(
        sbuf: *const c_void, sn: i64, sdt: Handle, rbuf: *mut c_void, rn: i64, rdt: Handle, root: c_int, c: Handle,
    ) on comm(c) => {
        gather("Gather_c", sbuf, sn, sdt, rbuf, rn, rdt, root, c)
    }

    /// `MPI_Gatherv`.
    fn Gatherv = MPI_Gatherv / PMPI_Gatherv(
        sbuf: *const c_void, sn: c_int, sdt: Handle,
        rbuf: *mut c_void, rcounts: *const c_int, displs: *const c_int, rdt: Handle, root: c_int, c: Handle,
    ) on comm(c) => {
        gatherv("Gatherv", sbuf, sn.into(), sdt, rbuf, rcounts, displs, rdt, root, c)
    }

    /// `MPI_Gatherv_c`.
    fn Gatherv_c = MPI_Gatherv_c / PMPI_Gatherv_c(
        sbuf: *const c_void, sn: i64, sdt: Handle, rbuf: *mut c_void, rcounts: *const i64, displs: *const i64, rdt: Handle, root: c_int, c: Handle,
    ) on comm(c) => {
        gatherv("Gatherv_c", sbuf, sn, sdt, rbuf, rcounts, displs, rdt, root, c)
    }

    /// `MPI_Scatter`.
    fn Scatter = MPI_Scatter / PMPI_Scatter(
        sbuf: *const c_void, sn: c_int, sdt: Handle,
        rbuf: *mut c_void, rn: c_int, rdt: Handle, root: c_int, c: Handle,
    ) on comm(c) => {
        scatter("Scatter", sbuf, sn.into(), sdt, rbuf, rn.into(), rdt, root, c)
    }

    /// `MPI_Scatter_c`.
    fn Scatter_c = MPI_Scatter_c / PMPI_Scatter_c(
        sbuf: *const c_void, sn: i64, sdt: Handle, rbuf: *mut c_void, rn: i64, rdt: Handle, root: c_int, c: Handle,
    ) on comm(c) => {
        scatter("Scatter_c", sbuf, sn, sdt, rbuf, rn, rdt, root, c)
    }

    /// `MPI_Scatterv`.
    fn Scatterv = MPI_Scatterv / PMPI_Scatterv(
        sbuf: *const c_void, scounts: *const c_int, displs: *const c_int, sdt: Handle,
        rbuf: *mut c_void, rn: c_int, rdt: Handle, root: c_int, c: Handle,
    ) on comm(c) => {
        scatterv("Scatterv", sbuf, scounts, displs, sdt, rbuf, rn.into(), rdt, root, c)
    }

    /// `MPI_Scatterv_c`.
    fn Scatterv_c = MPI_Scatterv_c / PMPI_Scatterv_c(
        sbuf: *const c_void, scounts: *const i64, displs: *const i64, sdt: Handle, rbuf: *mut c_void, rn: i64, rdt: Handle, root: c_int, c: Handle,
    ) on comm(c) => {
        scatterv("Scatterv_c", sbuf, scounts, displs, sdt, rbuf, rn, rdt, root, c)
    }

    /// `MPI_Allgather`.
    fn Allgather = MPI_Allgather / PMPI_Allgather(
        sbuf: *const c_void, sn: c_int, sdt: Handle,
        rbuf: *mut c_void, rn: c_int, rdt: Handle, c: Handle,
    ) on comm(c) => {
        allgather("Allgather", sbuf, sn.into(), sdt, rbuf, rn.into(), rdt, c)
    }

    /// `MPI_Allgather_c`.
    fn Allgather_c = MPI_Allgather_c / PMPI_Allgather_c(
        sbuf: *const c_void, sn: i64, sdt: Handle, rbuf: *mut c_void, rn: i64, rdt: Handle, c: Handle,
    ) on comm(c) => {
        allgather("Allgather_c", sbuf, sn, sdt, rbuf, rn, rdt, c)
    }

    /// `MPI_Allgatherv`.
    fn Allgatherv = MPI_Allgatherv / PMPI_Allgatherv(
        sbuf: *const c_void, sn: c_int, sdt: Handle,
        rbuf: *mut c_void, rcounts: *const c_int, displs: *const c_int, rdt: Handle, c: Handle,
    ) on comm(c) => {
        allgatherv("Allgatherv", sbuf, sn.into(), sdt, rbuf, rcounts, displs, rdt, c)
    }

    /// `MPI_Allgatherv_c`.
    fn Allgatherv_c = MPI_Allgatherv_c / PMPI_Allgatherv_c(
        sbuf: *const c_void, sn: i64, sdt: Handle, rbuf: *mut c_void, rcounts: *const i64, displs: *const i64, rdt: Handle, c: Handle,
    ) on comm(c) => {
        allgatherv("Allgatherv_c", sbuf, sn, sdt, rbuf, rcounts, displs, rdt, c)
    }

    /// `MPI_Alltoall`.
    fn Alltoall = MPI_Alltoall / PMPI_Alltoall(
        sbuf: *const c_void, sn: c_int, sdt: Handle,
        rbuf: *mut c_void, rn: c_int, rdt: Handle, c: Handle,
    ) on comm(c) => {
        alltoall("Alltoall", sbuf, sn.into(), sdt, rbuf, rn.into(), rdt, c)
    }

    /// `MPI_Alltoall_c`.
    fn Alltoall_c = MPI_Alltoall_c / PMPI_Alltoall_c(
        sbuf: *const c_void, sn: i64, sdt: Handle, rbuf: *mut c_void, rn: i64, rdt: Handle, c: Handle,
    ) on comm(c) => {
        alltoall("Alltoall_c", sbuf, sn, sdt, rbuf, rn, rdt, c)
    }

    /// `MPI_Alltoallv`.
    fn Alltoallv = MPI_Alltoallv / PMPI_Alltoallv(
        sbuf: *const c_void, scounts: *const c_int, sdispls: *const c_int, sdt: Handle,
        rbuf: *mut c_void, rcounts: *const c_int, rdispls: *const c_int, rdt: Handle, c: Handle,
    ) on comm(c) => {
        alltoallv("Alltoallv", sbuf, scounts, sdispls, sdt, rbuf, rcounts, rdispls, rdt, c)
    }

    /// `MPI_Alltoallv_c`.
    fn Alltoallv_c = MPI_Alltoallv_c / PMPI_Alltoallv_c(
        sbuf: *const c_void, scounts: *const i64, sdispls: *const i64, sdt: Handle, rbuf: *mut c_void, rcounts: *const i64, rdispls: *const i64, rdt: Handle, c: Handle,
    ) on comm(c) => {
        alltoallv("Alltoallv_c", sbuf, scounts, sdispls, sdt, rbuf, rcounts, rdispls, rdt, c)
    }

    /// `MPI_Reduce`.
    fn Reduce = MPI_Reduce / PMPI_Reduce(
        sbuf: *const c_void, rbuf: *mut c_void, n: c_int, dt: Handle, o: Handle, root: c_int, c: Handle,
    ) on comm(c) => {
        if let Some(b) = reduction_base("Reduce", dt)? {
            return reduce_derived("Reduce", 3, b, sbuf, rbuf, n.into(), dt, o, root, c);
        }
        let (len, d) = span("Reduce", n, dt)?;
        let (_, op) = op(o)?;
        let comm = match either(c)? {
            Ok(comm) => comm,
            Err(ic) => return reduce_as!("Reduce", d, op, T => inter::reduce::<T>("Reduce", &ic, sbuf, rbuf, len, op, root)),
        };
        reduce_as!("Reduce", d, op, T => typed_ops::reduce::<T>(&comm, sbuf, rbuf, len, op, root))
    }

    /// `MPI_Allreduce`.
    fn Allreduce = MPI_Allreduce / PMPI_Allreduce(
        sbuf: *const c_void, rbuf: *mut c_void, n: c_int, dt: Handle, o: Handle, c: Handle,
    ) on comm(c) => {
        if let Some(b) = reduction_base("Allreduce", dt)? {
            return reduce_derived("Allreduce", 0, b, sbuf, rbuf, n.into(), dt, o, 0, c);
        }
        let (len, d) = span("Allreduce", n, dt)?;
        let (_, op) = op(o)?;
        let comm = match either(c)? {
            Ok(comm) => comm,
            Err(ic) => return reduce_as!("Allreduce", d, op, T => inter::allreduce::<T>("Allreduce", &ic, sbuf, rbuf, len, op)),
        };
        reduce_as!("Allreduce", d, op, T => typed_ops::all::<T>("Allreduce", 0, &comm, sbuf, rbuf, len, op))
    }

    /// `MPI_Scan`.
    fn Scan = MPI_Scan / PMPI_Scan(
        sbuf: *const c_void, rbuf: *mut c_void, n: c_int, dt: Handle, o: Handle, c: Handle,
    ) on comm(c) => {
        scan("Scan", sbuf, rbuf, n.into(), dt, o, c)
    }

    /// `MPI_Scan_c`.
    fn Scan_c = MPI_Scan_c / PMPI_Scan_c(
        sbuf: *const c_void, rbuf: *mut c_void, n: i64, dt: Handle, o: Handle, c: Handle,
    ) on comm(c) => {
        scan("Scan_c", sbuf, rbuf, n, dt, o, c)
    }

    /// `MPI_Exscan`.
    fn Exscan = MPI_Exscan / PMPI_Exscan(
        sbuf: *const c_void, rbuf: *mut c_void, n: c_int, dt: Handle, o: Handle, c: Handle,
    ) on comm(c) => {
        exscan("Exscan", sbuf, rbuf, n.into(), dt, o, c)
    }

    /// `MPI_Exscan_c`.
    fn Exscan_c = MPI_Exscan_c / PMPI_Exscan_c(
        sbuf: *const c_void, rbuf: *mut c_void, n: i64, dt: Handle, o: Handle, c: Handle,
    ) on comm(c) => {
        exscan("Exscan_c", sbuf, rbuf, n, dt, o, c)
    }

    /// `MPI_Reduce_scatter`.
    fn Reduce_scatter = MPI_Reduce_scatter / PMPI_Reduce_scatter(
        sbuf: *const c_void, rbuf: *mut c_void, rcounts: *const c_int, dt: Handle, o: Handle, c: Handle,
    ) on comm(c) => {
        reduce_scatter("Reduce_scatter", sbuf, rbuf, rcounts, dt, o, c)
    }

    /// `MPI_Reduce_scatter_c`.
    fn Reduce_scatter_c = MPI_Reduce_scatter_c / PMPI_Reduce_scatter_c(
        sbuf: *const c_void, rbuf: *mut c_void, rcounts: *const i64, dt: Handle, o: Handle, c: Handle,
    ) on comm(c) => {
        reduce_scatter("Reduce_scatter_c", sbuf, rbuf, rcounts, dt, o, c)
    }

    /// `MPI_Reduce_scatter_block`.
    fn Reduce_scatter_block = MPI_Reduce_scatter_block / PMPI_Reduce_scatter_block(
        sbuf: *const c_void, rbuf: *mut c_void, rn: c_int, dt: Handle, o: Handle, c: Handle,
    ) on comm(c) => {
        reduce_scatter_block("Reduce_scatter_block", sbuf, rbuf, rn.into(), dt, o, c)
    }

    /// `MPI_Reduce_scatter_block_c`.
    fn Reduce_scatter_block_c = MPI_Reduce_scatter_block_c / PMPI_Reduce_scatter_block_c(
        sbuf: *const c_void, rbuf: *mut c_void, rn: i64, dt: Handle, o: Handle, c: Handle,
    ) on comm(c) => {
        reduce_scatter_block("Reduce_scatter_block_c", sbuf, rbuf, rn, dt, o, c)
    }

    /// `MPI_Reduce_local`.
    fn Reduce_local = MPI_Reduce_local / PMPI_Reduce_local(
        inbuf: *const c_void, inout: *mut c_void, n: c_int, dt: Handle, o: Handle,
    ) on CommHandle::WORLD => {
        reduce_local("Reduce_local", inbuf, inout, n.into(), dt, o)
    }

    /// `MPI_Reduce_local_c`.
    fn Reduce_local_c = MPI_Reduce_local_c / PMPI_Reduce_local_c(
        inbuf: *const c_void, inout: *mut c_void, n: i64, dt: Handle, o: Handle,
    ) on CommHandle::WORLD => {
        reduce_local("Reduce_local_c", inbuf, inout, n, dt, o)
    }

    /// `MPI_Op_create`: `f` is called as `f(in, inout, &count, &datatype)` on elements of
    /// the reduction's datatype.
    fn Op_create = MPI_Op_create / PMPI_Op_create(f: Option<UserFunction>, commute: c_int, out: *mut Handle) on CommHandle::WORLD => {
        let f = f.ok_or_else(|| err(ErrorClass::Arg, "Op_create", "the function is NULL"))?;
        if out.is_null() {
            return Err(err(ErrorClass::Arg, "Op_create", "op is NULL"));
        }
        let kernel = user_kernel::<c_int>(c_int::MAX as usize, move |a, b, len, dt| {
            // SAFETY: FFI call of the user's MPI_User_function with buffers of `*len`
            // elements it may read (`a`) and write (`b`), and valid count and datatype cells.
            unsafe { f(a, b, len, dt) }
        });
        let h = hop::op_create(kernel, commute != 0)?;
        put("Op_create", out, handle_of(h.to_int()))
    }

    /// `MPI_Op_create_c`: `MPI_Op_create` with a user function taking an `MPI_Count`
    /// length.
    fn Op_create_c = MPI_Op_create_c / PMPI_Op_create_c(f: Option<UserFunctionC>, commute: c_int, out: *mut Handle) on CommHandle::WORLD => {
        let f = f.ok_or_else(|| err(ErrorClass::Arg, "Op_create_c", "the function is NULL"))?;
        if out.is_null() {
            return Err(err(ErrorClass::Arg, "Op_create_c", "op is NULL"));
        }
        let kernel = user_kernel::<i64>(usize::MAX, move |a, b, len, dt| {
            // SAFETY: as for `MPI_Op_create`, with the large-count function.
            unsafe { f(a, b, len, dt) }
        });
        let h = hop::op_create(kernel, commute != 0)?;
        put("Op_create_c", out, handle_of(h.to_int()))
    }

    /// `MPI_Op_free`.
    fn Op_free = MPI_Op_free / PMPI_Op_free(o: *mut Handle) on CommHandle::WORLD => {
        let mut h = OpHandle::from_int(int_of(get("Op_free", o)?));
        hop::op_free(&mut h)?;
        put("Op_free", o, handle_of(h.to_int()))
    }

    /// `MPI_Op_commutative`.
    fn Op_commutative = MPI_Op_commutative / PMPI_Op_commutative(o: Handle, flag: *mut c_int) on CommHandle::WORLD => {
        let (id, _) = op(o)?;
        put("Op_commutative", flag, hop::op_commutative(id)? as c_int)
    }
}

/// `MPI_Gather` and `MPI_Gather_c`.
///
/// # Safety
/// Pointers as the standard's contract for `MPI_Gather`.
#[allow(clippy::too_many_arguments)] // the C call's arguments
unsafe fn gather(
    name: &'static str,
    sbuf: *const c_void,
    sn: i64,
    sdt: Handle,
    rbuf: *mut c_void,
    rn: i64,
    rdt: Handle,
    root: c_int,
    c: Handle,
) -> Result<()> {
    // SAFETY: forwarded from our caller.
    unsafe {
        let comm = match either(c)? {
            Ok(comm) => comm,
            Err(ic) => return inter::gather(name, &ic, sbuf, sn, sdt, rbuf, rn, rdt, root),
        };
        let me = comm.rank() == root;
        let p = comm.size() as usize;
        if me {
            let mut recv = output(name, rbuf, rn, rdt, p)?;
            if in_place(sbuf) {
                comm.gather_in_place(root, recv.bytes())?;
            } else {
                let send = input(name, sbuf, sn, sdt, 1)?;
                comm.gather_into(root, &send, recv.bytes())?;
            }
            recv.finish();
            Ok(())
        } else {
            let send = input(name, sbuf, sn, sdt, 1)?;
            comm.gather_into(root, &send, &mut [])
        }
    }
}

/// `MPI_Scatter` and `MPI_Scatter_c`.
///
/// # Safety
/// Pointers as the standard's contract for `MPI_Scatter`.
#[allow(clippy::too_many_arguments)] // the C call's arguments
unsafe fn scatter(
    name: &'static str,
    sbuf: *const c_void,
    sn: i64,
    sdt: Handle,
    rbuf: *mut c_void,
    rn: i64,
    rdt: Handle,
    root: c_int,
    c: Handle,
) -> Result<()> {
    // SAFETY: forwarded from our caller.
    unsafe {
        let comm = match either(c)? {
            Ok(comm) => comm,
            Err(ic) => return inter::scatter(name, &ic, sbuf, sn, sdt, rbuf, rn, rdt, root),
        };
        let p = comm.size() as usize;
        if comm.rank() == root {
            let send = input(name, sbuf, sn, sdt, p)?;
            if in_place(rbuf) {
                return comm.scatter_in_place(root, &send);
            }
            let mut recv = output(name, rbuf, rn, rdt, 1)?;
            comm.scatter_into(root, &send, recv.bytes())?;
            recv.finish();
            Ok(())
        } else {
            let mut recv = output(name, rbuf, rn, rdt, 1)?;
            comm.scatter_into(root, &[], recv.bytes())?;
            recv.finish();
            Ok(())
        }
    }
}

/// `MPI_Allgather` and `MPI_Allgather_c`.
///
/// # Safety
/// Pointers as the standard's contract for `MPI_Allgather`.
#[allow(clippy::too_many_arguments)] // the C call's arguments
unsafe fn allgather(
    name: &'static str,
    sbuf: *const c_void,
    sn: i64,
    sdt: Handle,
    rbuf: *mut c_void,
    rn: i64,
    rdt: Handle,
    c: Handle,
) -> Result<()> {
    // SAFETY: forwarded from our caller.
    unsafe {
        let comm = match either(c)? {
            Ok(comm) => comm,
            Err(ic) => return inter::allgather(name, &ic, sbuf, sn, sdt, rbuf, rn, rdt),
        };
        let mut recv = output(name, rbuf, rn, rdt, comm.size() as usize)?;
        if in_place(sbuf) {
            comm.all_gather_in_place(recv.bytes())?;
        } else {
            let send = input(name, sbuf, sn, sdt, 1)?;
            comm.all_gather_into(&send, recv.bytes())?;
        }
        recv.finish();
        Ok(())
    }
}

/// `MPI_Alltoall` and `MPI_Alltoall_c`.
///
/// # Safety
/// Pointers as the standard's contract for `MPI_Alltoall`.
#[allow(clippy::too_many_arguments)] // the C call's arguments
unsafe fn alltoall(
    name: &'static str,
    sbuf: *const c_void,
    sn: i64,
    sdt: Handle,
    rbuf: *mut c_void,
    rn: i64,
    rdt: Handle,
    c: Handle,
) -> Result<()> {
    // SAFETY: forwarded from our caller.
    unsafe {
        let comm = match either(c)? {
            Ok(comm) => comm,
            Err(ic) => return inter::alltoall(name, &ic, sbuf, sn, sdt, rbuf, rn, rdt),
        };
        let p = comm.size() as usize;
        let mut recv = output(name, rbuf, rn, rdt, p)?;
        if in_place(sbuf) {
            comm.all_to_all_in_place(recv.bytes())?;
        } else {
            let send = input(name, sbuf, sn, sdt, p)?;
            comm.all_to_all_into(&send, recv.bytes())?;
        }
        recv.finish();
        Ok(())
    }
}

/// `MPI_Scan` and `MPI_Scan_c`.
///
/// # Safety
/// Pointers as the standard's contract for `MPI_Scan`.
#[allow(clippy::too_many_arguments)] // the C call's arguments
unsafe fn scan(
    name: &'static str,
    sbuf: *const c_void,
    rbuf: *mut c_void,
    n: i64,
    dt: Handle,
    o: Handle,
    c: Handle,
) -> Result<()> {
    // SAFETY: forwarded from our caller.
    unsafe {
        if let Some(b) = reduction_base(name, dt)? {
            return reduce_derived(name, 1, b, sbuf, rbuf, n, dt, o, 0, c);
        }
        let (len, d) = span(name, n, dt)?;
        let (_, op) = op(o)?;
        let comm = typed(c)?;
        reduce_as!(name, d, op, T => typed_ops::all::<T>(name, 1, &comm, sbuf, rbuf, len, op))
    }
}

/// `MPI_Exscan` and `MPI_Exscan_c`.
///
/// # Safety
/// Pointers as the standard's contract for `MPI_Exscan`.
#[allow(clippy::too_many_arguments)] // the C call's arguments
unsafe fn exscan(
    name: &'static str,
    sbuf: *const c_void,
    rbuf: *mut c_void,
    n: i64,
    dt: Handle,
    o: Handle,
    c: Handle,
) -> Result<()> {
    // SAFETY: forwarded from our caller.
    unsafe {
        if let Some(b) = reduction_base(name, dt)? {
            return reduce_derived(name, 2, b, sbuf, rbuf, n, dt, o, 0, c);
        }
        let (len, d) = span(name, n, dt)?;
        let (_, op) = op(o)?;
        let comm = typed(c)?;
        reduce_as!(name, d, op, T => typed_ops::all::<T>(name, 2, &comm, sbuf, rbuf, len, op))
    }
}

/// `MPI_Reduce_scatter_block` and `MPI_Reduce_scatter_block_c`.
///
/// # Safety
/// Pointers as the standard's contract for `MPI_Reduce_scatter_block`.
#[allow(clippy::too_many_arguments)] // the C call's arguments
unsafe fn reduce_scatter_block(
    name: &'static str,
    sbuf: *const c_void,
    rbuf: *mut c_void,
    rn: i64,
    dt: Handle,
    o: Handle,
    c: Handle,
) -> Result<()> {
    // SAFETY: forwarded from our caller.
    unsafe {
        let comm = VComm::new(c)?;
        let counts = vec![count(name, rn)?; comm.size() as usize];
        // Derived datatypes and intercommunicators go through the staged (nonblocking) path.
        let comm = match comm {
            VComm::Intra(intra) if reduction_base(name, dt)?.is_none() => intra,
            other => {
                return crate::icoll::reduce_scatter_blocking(
                    name, true, sbuf, rbuf, &counts, dt, o, &other,
                )
            }
        };
        let (_, d) = span(name, rn, dt)?;
        let (_, op) = op(o)?;
        reduce_as!(name, d, op, T => typed_ops::reduce_scatter::<T>(name, &comm, sbuf, rbuf, &counts, op))
    }
}

/// `MPI_Reduce_local` and `MPI_Reduce_local_c`.
///
/// # Safety
/// Pointers as the standard's contract for `MPI_Reduce_local`.
#[allow(clippy::too_many_arguments)] // the C call's arguments
unsafe fn reduce_local(
    name: &'static str,
    inbuf: *const c_void,
    inout: *mut c_void,
    n: i64,
    dt: Handle,
    o: Handle,
) -> Result<()> {
    // SAFETY: forwarded from our caller.
    unsafe {
        let (len, d) = span(name, n, dt)?;
        let (_, op) = op(o)?;
        reduce_as!(name, d, op, T => typed_ops::local::<T>(inbuf, inout, len, op))
    }
}

/// `MPI_Gatherv` and `MPI_Gatherv_c`.
///
/// # Safety
/// Pointers as the standard's contract for `MPI_Gatherv`.
#[allow(clippy::too_many_arguments)] // the C call's arguments
unsafe fn gatherv<C: AbiInt, D: AbiInt>(
    name: &'static str,
    sbuf: *const c_void,
    sn: i64,
    sdt: Handle,
    rbuf: *mut c_void,
    rcounts: *const C,
    displs: *const D,
    rdt: Handle,
    root: c_int,
    c: Handle,
) -> Result<()> {
    // SAFETY: forwarded from our caller.
    unsafe {
        no_in_place(name, sbuf)?;
        let comm = VComm::new(c)?;
        if comm.is_bystander(root) {
            return comm.gatherv(name, root, &[], &mut [], &[], &[]);
        }
        let root_only = comm.is_root(root) && matches!(comm, VComm::Inter(_));
        let send = if root_only {
            std::borrow::Cow::Borrowed(&[][..])
        } else {
            input(name, sbuf, sn, sdt, 1)?
        };
        if !comm.is_root(root) {
            return comm.gatherv(name, root, &send, &mut [], &[], &[]);
        }
        let p = comm.peers();
        if let Some(b) = Blocks::new(name, p, rcounts, displs, rdt)? {
            let mut tmp = vec![0u8; b.total];
            comm.gatherv(name, root, &send, &mut tmp, &b.bc, &b.bd)?;
            b.unpack(rbuf, &tmp);
            return Ok(());
        }
        let d = crate::datatypes::lookup(name, rdt as usize)?;
        let (bc, bd, extent) = layout(name, p, rcounts, displs, d.size)?;
        comm.gatherv(name, root, &send, bytes_mut(name, rbuf, extent)?, &bc, &bd)
    }
}

/// `MPI_Scatterv` and `MPI_Scatterv_c`.
///
/// # Safety
/// Pointers as the standard's contract for `MPI_Scatterv`.
#[allow(clippy::too_many_arguments)] // the C call's arguments
unsafe fn scatterv<C: AbiInt, D: AbiInt>(
    name: &'static str,
    sbuf: *const c_void,
    scounts: *const C,
    displs: *const D,
    sdt: Handle,
    rbuf: *mut c_void,
    rn: i64,
    rdt: Handle,
    root: c_int,
    c: Handle,
) -> Result<()> {
    // SAFETY: forwarded from our caller.
    unsafe {
        no_in_place(name, rbuf)?;
        let comm = VComm::new(c)?;
        if comm.is_bystander(root) {
            return comm.scatterv(name, root, &[], &[], &[], &mut []);
        }
        // An intercommunicator's root receives nothing.
        let mut recv = if comm.is_root(root) && matches!(comm, VComm::Inter(_)) {
            Output::Raw(&mut [])
        } else {
            output(name, rbuf, rn, rdt, 1)?
        };
        if comm.is_root(root) {
            let p = comm.peers();
            if let Some(b) = Blocks::new(name, p, scounts, displs, sdt)? {
                let packed = b.pack(sbuf);
                comm.scatterv(name, root, &packed, &b.bc, &b.bd, recv.bytes())?;
            } else {
                let d = crate::datatypes::lookup(name, sdt as usize)?;
                let (bc, bd, extent) = layout(name, p, scounts, displs, d.size)?;
                comm.scatterv(
                    name,
                    root,
                    bytes(name, sbuf, extent)?,
                    &bc,
                    &bd,
                    recv.bytes(),
                )?;
            }
        } else {
            comm.scatterv(name, root, &[], &[], &[], recv.bytes())?;
        }
        recv.finish();
        Ok(())
    }
}

/// `MPI_Allgatherv` and `MPI_Allgatherv_c`.
///
/// # Safety
/// Pointers as the standard's contract for `MPI_Allgatherv`.
#[allow(clippy::too_many_arguments)] // the C call's arguments
unsafe fn allgatherv<C: AbiInt, D: AbiInt>(
    name: &'static str,
    sbuf: *const c_void,
    sn: i64,
    sdt: Handle,
    rbuf: *mut c_void,
    rcounts: *const C,
    displs: *const D,
    rdt: Handle,
    c: Handle,
) -> Result<()> {
    // SAFETY: forwarded from our caller.
    unsafe {
        no_in_place(name, sbuf)?;
        let comm = VComm::new(c)?;
        let p = comm.peers();
        let send = input(name, sbuf, sn, sdt, 1)?;
        if let Some(b) = Blocks::new(name, p, rcounts, displs, rdt)? {
            let mut tmp = vec![0u8; b.total];
            comm.allgatherv(&send, &mut tmp, &b.bc, &b.bd)?;
            b.unpack(rbuf, &tmp);
            return Ok(());
        }
        let d = crate::datatypes::lookup(name, rdt as usize)?;
        let (bc, bd, extent) = layout(name, p, rcounts, displs, d.size)?;
        comm.allgatherv(&send, bytes_mut(name, rbuf, extent)?, &bc, &bd)
    }
}

/// `MPI_Alltoallv` and `MPI_Alltoallv_c`.
///
/// # Safety
/// Pointers as the standard's contract for `MPI_Alltoallv`.
#[allow(clippy::too_many_arguments)] // the C call's arguments
unsafe fn alltoallv<C: AbiInt, D: AbiInt>(
    name: &'static str,
    sbuf: *const c_void,
    scounts: *const C,
    sdispls: *const D,
    sdt: Handle,
    rbuf: *mut c_void,
    rcounts: *const C,
    rdispls: *const D,
    rdt: Handle,
    c: Handle,
) -> Result<()> {
    // SAFETY: forwarded from our caller.
    unsafe {
        let comm = VComm::new(c)?;
        // MPI_IN_PLACE: the receive blocks as they are now are the send blocks, read from a
        // copy taken before anything arrives (intracommunicators only).
        if matches!(comm, VComm::Inter(_)) {
            inter::no_in_place(name, sbuf)?;
        }
        let ip = in_place(sbuf);
        let p = comm.peers();
        let sb = if ip {
            None
        } else {
            Blocks::new(name, p, scounts, sdispls, sdt)?
        };
        let rb = Blocks::new(name, p, rcounts, rdispls, rdt)?;
        let (packed, sc, sdi);
        let send: &[u8] = match (&sb, &rb) {
            (_, Some(b)) if ip => {
                packed = b.pack(rbuf.cast_const());
                (sc, sdi) = (b.bc.clone(), b.bd.clone());
                &packed
            }
            _ if ip => {
                let rd = crate::datatypes::lookup(name, rdt as usize)?;
                let (c, d, rext) = layout(name, p, rcounts, rdispls, rd.size)?;
                (sc, sdi) = (c, d);
                packed = bytes(name, rbuf.cast_const(), rext)?.to_vec();
                &packed
            }
            (Some(b), _) => {
                packed = b.pack(sbuf);
                (sc, sdi) = (b.bc.clone(), b.bd.clone());
                &packed
            }
            (None, _) => {
                let sd = crate::datatypes::lookup(name, sdt as usize)?;
                let (c, d, sext) = layout(name, p, scounts, sdispls, sd.size)?;
                (sc, sdi) = (c, d);
                bytes(name, sbuf, sext)?
            }
        };
        match &rb {
            Some(b) => {
                let mut tmp = vec![0u8; b.total];
                comm.alltoallv(send, &sc, &sdi, &mut tmp, &b.bc, &b.bd)?;
                b.unpack(rbuf, &tmp);
                Ok(())
            }
            None => {
                let rd = crate::datatypes::lookup(name, rdt as usize)?;
                let (rc, rdi, rext) = layout(name, p, rcounts, rdispls, rd.size)?;
                comm.alltoallv(send, &sc, &sdi, bytes_mut(name, rbuf, rext)?, &rc, &rdi)
            }
        }
    }
}

/// `MPI_Reduce_scatter` and `MPI_Reduce_scatter_c`.
///
/// # Safety
/// Pointers as the standard's contract for `MPI_Reduce_scatter`.
#[allow(clippy::too_many_arguments)] // the C call's arguments
unsafe fn reduce_scatter<C: AbiInt>(
    name: &'static str,
    sbuf: *const c_void,
    rbuf: *mut c_void,
    rcounts: *const C,
    dt: Handle,
    o: Handle,
    c: Handle,
) -> Result<()> {
    // SAFETY: forwarded from our caller.
    unsafe {
        let comm = VComm::new(c)?;
        let counts = slice(name, rcounts, comm.size() as usize)?
            .iter()
            .map(|&n| count(name, n.wide()))
            .collect::<Result<Vec<usize>>>()?;
        // Derived datatypes and intercommunicators go through the staged (nonblocking) path.
        let comm = match comm {
            VComm::Intra(intra) if reduction_base(name, dt)?.is_none() => intra,
            other => {
                return crate::icoll::reduce_scatter_blocking(
                    name, false, sbuf, rbuf, &counts, dt, o, &other,
                )
            }
        };
        let d = crate::datatypes::lookup(name, dt as usize)?;
        let (_, op) = op(o)?;
        reduce_as!(name, d, op, T => typed_ops::reduce_scatter::<T>(name, &comm, sbuf, rbuf, &counts, op))
    }
}

#[cfg(test)]
mod tests {
    use super::PairLayout;

    #[test]
    fn pairs_widen_to_their_struct_and_narrow_back() {
        // MPI_DOUBLE_INT: 8-byte value, 4-byte index at offset 8, 16-byte struct.
        let p = Some(PairLayout {
            value: 8,
            index: 4,
            at: 8,
            extent: 16,
        });
        let packed: Vec<u8> = (0..24).collect();
        let wide = PairLayout::widen(p, packed.clone());
        assert_eq!(wide.len(), 32);
        assert_eq!(&wide[..12], &packed[..12]);
        assert_eq!(&wide[12..16], &[0; 4]);
        assert_eq!(&wide[16..28], &packed[12..24]);
        let mut back = vec![0u8; 24];
        PairLayout::narrow(p, &wide, &mut back);
        assert_eq!(back, packed);
        // Not a pair: unchanged both ways.
        assert_eq!(PairLayout::widen(None, packed.clone()), packed);
        let mut same = vec![0u8; 24];
        PairLayout::narrow(None, &packed, &mut same);
        assert_eq!(same, packed);
    }
}
