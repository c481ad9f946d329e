//! Buffered-send buffers: the process's (`MPI_Buffer_attach`), a communicator's and a
//! session's (MPI-4.1 `MPI_Comm_attach_buffer`, `MPI_Session_attach_buffer`), automatic
//! buffering (`MPI_BUFFER_AUTOMATIC`), and flushing them (`MPI_Buffer_flush`,
//! `MPI_Comm_iflush_buffer`, ...). A buffered send copies into its communicator's buffer,
//! else into that of the session the communicator derives from, else into the process's.

use std::ffi::{c_int, c_void};

use oxmpi::handle::comm::CommHandle;
use oxmpi::handle::env::{self, BufferOf, SendBuffer};
use oxmpi::handle::session::SessionHandle;
use oxmpi::{ErrorClass, Result};

use crate::boundary::{comm, count, err, int_of, mpi_fn, put, Handle};
use crate::p2p::req_handle;

/// `MPI_BUFFER_AUTOMATIC`.
const BUFFER_AUTOMATIC: usize = 2;

/// The buffer a C caller attaches: `MPI_BUFFER_AUTOMATIC` (size ignored), or `len` bytes.
fn attached(name: &str, buf: *mut c_void, len: usize) -> Result<SendBuffer> {
    if buf as usize == BUFFER_AUTOMATIC {
        return Ok(SendBuffer::Automatic);
    }
    if buf.is_null() && len > 0 {
        return Err(err(ErrorClass::Buffer, name, "the buffer is NULL"));
    }
    Ok(SendBuffer::Region(buf.cast::<u8>(), len))
}

/// Stores a detached buffer's address in `*buf` (a `void **` in practice) and its size in
/// `*size`: `MPI_BUFFER_AUTOMATIC` and 0 for automatic buffering.
///
/// # Safety
/// `buf` and `size` are null or valid for one write each (the C caller's contract).
unsafe fn detached<T: TryFrom<usize>>(
    name: &str,
    b: SendBuffer,
    buf: *mut c_void,
    size: *mut T,
) -> Result<()> {
    let (p, len) = match b {
        SendBuffer::Region(p, len) => (p.cast::<c_void>(), len),
        SendBuffer::Automatic => (BUFFER_AUTOMATIC as *mut c_void, 0),
    };
    let len = T::try_from(len)
        .map_err(|_| err(ErrorClass::ValueTooLarge, name, "the size does not fit"))?;
    // SAFETY: forwarded from our caller.
    unsafe {
        put(name, buf.cast::<*mut c_void>(), p)?;
        put(name, size, len)
    }
}

/// Attaches the C caller's buffer as `of` names.
///
/// # Safety
/// The caller does not touch a region until it is detached (MPI contract).
unsafe fn attach(name: &str, of: BufferOf, buf: *mut c_void, len: usize) -> Result<()> {
    let b = attached(name, buf, len)?;
    // SAFETY: forwarded from our caller.
    unsafe { env::buffer_attach(of, b) }
}

/// Starts a flush of the buffer `of` names into `*r`.
///
/// # Safety
/// `r` is null or valid for one write (the C caller's contract).
unsafe fn iflush(name: &str, of: BufferOf, r: *mut Handle) -> Result<()> {
    if r.is_null() {
        // Checked first: a flush started and then not handed out would never be freed.
        return Err(err(ErrorClass::Arg, name, "the request pointer is NULL"));
    }
    let id = env::buffer_iflush(of)?;
    // SAFETY: forwarded from our caller.
    unsafe { put(name, r, req_handle(id)) }
}

mpi_fn! {
    /// `MPI_Buffer_attach`.
    fn Buffer_attach = MPI_Buffer_attach / PMPI_Buffer_attach(buf: *mut c_void, size: c_int) on CommHandle::WORLD => {
        let len = count("Buffer_attach", size)?;
        // SAFETY: the caller does not touch the buffer until it is detached (MPI contract).
        unsafe { attach("Buffer_attach", BufferOf::Process, buf, len) }
    }

    /// `MPI_Buffer_attach_c`: `MPI_Buffer_attach` with an `MPI_Count` size.
    fn Buffer_attach_c = MPI_Buffer_attach_c / PMPI_Buffer_attach_c(buf: *mut c_void, size: i64) on CommHandle::WORLD => {
        let len = count("Buffer_attach_c", size)?;
        // SAFETY: as for `MPI_Buffer_attach`.
        unsafe { attach("Buffer_attach_c", BufferOf::Process, buf, len) }
    }

    /// `MPI_Buffer_detach`: `buf` receives the address (it is a `void **` in practice).
    fn Buffer_detach = MPI_Buffer_detach / PMPI_Buffer_detach(buf: *mut c_void, size: *mut c_int) on CommHandle::WORLD => {
        let b = env::buffer_detach(BufferOf::Process, c_int::MAX as usize)?;
        detached("Buffer_detach", b, buf, size)
    }

    /// `MPI_Buffer_detach_c`: `MPI_Buffer_detach` with an `MPI_Count` size.
    fn Buffer_detach_c = MPI_Buffer_detach_c / PMPI_Buffer_detach_c(buf: *mut c_void, size: *mut i64) on CommHandle::WORLD => {
        let b = env::buffer_detach(BufferOf::Process, i64::MAX as usize)?;
        detached("Buffer_detach_c", b, buf, size)
    }

    /// `MPI_Buffer_flush`.
    fn Buffer_flush = MPI_Buffer_flush / PMPI_Buffer_flush() on CommHandle::WORLD => {
        env::buffer_flush(BufferOf::Process)
    }

    /// `MPI_Buffer_iflush`.
    fn Buffer_iflush = MPI_Buffer_iflush / PMPI_Buffer_iflush(r: *mut Handle) on CommHandle::WORLD => {
        iflush("Buffer_iflush", BufferOf::Process, r)
    }

    /// `MPI_Comm_attach_buffer`.
    fn Comm_attach_buffer = MPI_Comm_attach_buffer / PMPI_Comm_attach_buffer(c: Handle, buf: *mut c_void, size: c_int) on comm(c) => {
        let len = count("Comm_attach_buffer", size)?;
        // SAFETY: as for `MPI_Buffer_attach`.
        unsafe { attach("Comm_attach_buffer", BufferOf::Comm(comm(c)), buf, len) }
    }

    /// `MPI_Comm_attach_buffer_c`.
    fn Comm_attach_buffer_c = MPI_Comm_attach_buffer_c / PMPI_Comm_attach_buffer_c(c: Handle, buf: *mut c_void, size: i64) on comm(c) => {
        let len = count("Comm_attach_buffer_c", size)?;
        // SAFETY: as for `MPI_Buffer_attach`.
        unsafe { attach("Comm_attach_buffer_c", BufferOf::Comm(comm(c)), buf, len) }
    }

    /// `MPI_Comm_detach_buffer`.
    fn Comm_detach_buffer = MPI_Comm_detach_buffer / PMPI_Comm_detach_buffer(c: Handle, buf: *mut c_void, size: *mut c_int) on comm(c) => {
        let b = env::buffer_detach(BufferOf::Comm(comm(c)), c_int::MAX as usize)?;
        detached("Comm_detach_buffer", b, buf, size)
    }

    /// `MPI_Comm_detach_buffer_c`.
    fn Comm_detach_buffer_c = MPI_Comm_detach_buffer_c / PMPI_Comm_detach_buffer_c(c: Handle, buf: *mut c_void, size: *mut i64) on comm(c) => {
        let b = env::buffer_detach(BufferOf::Comm(comm(c)), i64::MAX as usize)?;
        detached("Comm_detach_buffer_c", b, buf, size)
    }

    /// `MPI_Comm_flush_buffer`.
    fn Comm_flush_buffer = MPI_Comm_flush_buffer / PMPI_Comm_flush_buffer(c: Handle) on comm(c) => {
        env::buffer_flush(BufferOf::Comm(comm(c)))
    }

    /// `MPI_Comm_iflush_buffer`.
    fn Comm_iflush_buffer = MPI_Comm_iflush_buffer / PMPI_Comm_iflush_buffer(c: Handle, r: *mut Handle) on comm(c) => {
        iflush("Comm_iflush_buffer", BufferOf::Comm(comm(c)), r)
    }

    /// `MPI_Session_attach_buffer`: the buffer of the communicators derived from `s` that
    /// have none of their own.
    fn Session_attach_buffer = MPI_Session_attach_buffer / PMPI_Session_attach_buffer(s: Handle, buf: *mut c_void, size: c_int) on session(s).error_key() => {
        let len = count("Session_attach_buffer", size)?;
        // SAFETY: as for `MPI_Buffer_attach`.
        unsafe { attach("Session_attach_buffer", BufferOf::Session(session(s)), buf, len) }
    }

    /// `MPI_Session_attach_buffer_c`.
    fn Session_attach_buffer_c = MPI_Session_attach_buffer_c / PMPI_Session_attach_buffer_c(s: Handle, buf: *mut c_void, size: i64) on session(s).error_key() => {
        let len = count("Session_attach_buffer_c", size)?;
        // SAFETY: as for `MPI_Buffer_attach`.
        unsafe { attach("Session_attach_buffer_c", BufferOf::Session(session(s)), buf, len) }
    }

    /// `MPI_Session_detach_buffer`.
    fn Session_detach_buffer = MPI_Session_detach_buffer / PMPI_Session_detach_buffer(s: Handle, buf: *mut c_void, size: *mut c_int) on session(s).error_key() => {
        let b = env::buffer_detach(BufferOf::Session(session(s)), c_int::MAX as usize)?;
        detached("Session_detach_buffer", b, buf, size)
    }

    /// `MPI_Session_detach_buffer_c`.
    fn Session_detach_buffer_c = MPI_Session_detach_buffer_c / PMPI_Session_detach_buffer_c(s: Handle, buf: *mut c_void, size: *mut i64) on session(s).error_key() => {
        let b = env::buffer_detach(BufferOf::Session(session(s)), i64::MAX as usize)?;
        detached("Session_detach_buffer_c", b, buf, size)
    }

    /// `MPI_Session_flush_buffer`.
    fn Session_flush_buffer = MPI_Session_flush_buffer / PMPI_Session_flush_buffer(s: Handle) on session(s).error_key() => {
        env::buffer_flush(BufferOf::Session(session(s)))
    }

    /// `MPI_Session_iflush_buffer`.
    fn Session_iflush_buffer = MPI_Session_iflush_buffer / PMPI_Session_iflush_buffer(s: Handle, r: *mut Handle) on session(s).error_key() => {
        iflush("Session_iflush_buffer", BufferOf::Session(session(s)), r)
    }
}

fn session(h: Handle) -> SessionHandle {
    SessionHandle::from_int(int_of(h))
}
