//! Matched probes (`MPI_Mprobe`, `MPI_Improbe`) and the receive of a matched message
//! (`MPI_Mrecv`, `MPI_Imrecv`).
//!
//! The core's matched message is a value bound to the thread level as a type; the C layer
//! uses it at `Single`, so messages live in a table per thread, like persistent requests: a
//! message is received on the thread that probed it. Handles carry a generation, so a
//! received (or never issued) handle is `MPI_ERR_REQUEST`, never a stale message.

use std::cell::RefCell;
use std::ffi::{c_int, c_void};

use oxmpi::handle::comm::comm_p2p;
use oxmpi::{ErrorClass, Message, Result, Single, Source, Tag};

use crate::boundary::{comm, err, get, mpi_fn, put, put_status, recv_buf, Handle, MpiStatus};
use crate::datatypes::Data;
use crate::staging::Staged;

/// `MPI_MESSAGE_NULL`, `MPI_MESSAGE_NO_PROC`.
const MESSAGE_NULL: usize = 0x128;
const MESSAGE_NO_PROC: usize = 0x129;
/// Handles are `FIRST + slot`, with the slot's generation above bit `GEN_SHIFT`.
const FIRST: usize = 0x1000;
const GEN_SHIFT: u32 = 20;

struct Slot {
    gen: usize,
    msg: Option<Message<Single>>,
}

thread_local! {
    static MESSAGES: RefCell<Vec<Slot>> = const { RefCell::new(Vec::new()) };
}

fn store(m: Message<Single>) -> Handle {
    MESSAGES.with(|t| {
        let mut t = t.borrow_mut();
        let i = match t.iter().position(|s| s.msg.is_none()) {
            Some(i) => i,
            None => {
                t.push(Slot { gen: 0, msg: None });
                t.len() - 1
            }
        };
        let s = &mut t[i];
        s.gen = (s.gen + 1) % 2048;
        s.msg = Some(m);
        ((s.gen << GEN_SHIFT) | (FIRST + i)) as Handle
    })
}

fn take(name: &str, h: Handle) -> Result<Option<Message<Single>>> {
    let v = h as usize;
    if v == MESSAGE_NO_PROC {
        return Ok(None);
    }
    let (i, gen) = (
        (v & ((1 << GEN_SHIFT) - 1)).wrapping_sub(FIRST),
        v >> GEN_SHIFT,
    );
    MESSAGES
        .with(|t| {
            let mut t = t.borrow_mut();
            t.get_mut(i)
                .filter(|s| s.gen == gen)
                .and_then(|s| s.msg.take())
        })
        .map(Some)
        .ok_or_else(|| {
            err(
                ErrorClass::Request,
                name,
                format!("{v:#x} is not a matched message of this thread (null, received, or never probed)"),
            )
        })
}

fn source(s: c_int) -> Source {
    Source::from(s)
}

fn tag(name: &str, t: c_int) -> Result<Tag> {
    if t < 0 && t != -2 {
        return Err(err(ErrorClass::Tag, name, format!("tag {t} is negative")));
    }
    Ok(Tag::from(t))
}

/// The handle of a probed message: `MPI_MESSAGE_NO_PROC` for one from `MPI_PROC_NULL`.
fn handle(m: Message<Single>, st: &oxmpi::Status) -> Handle {
    if st.source() == oxmpi::PROC_NULL {
        MESSAGE_NO_PROC as Handle
    } else {
        store(m)
    }
}

mpi_fn! {
    /// `MPI_Mprobe`: blocks until a message matches, and removes it from matching.
    fn Mprobe = MPI_Mprobe / PMPI_Mprobe(src: c_int, t: c_int, c: Handle, message: *mut Handle, status: *mut MpiStatus) on comm(c) => {
        let t = tag("Mprobe", t)?;
        if message.is_null() {
            return Err(err(ErrorClass::Arg, "Mprobe", "message is NULL"));
        }
        let (m, st) = comm_p2p::<Single>(comm(c))?.matched_probe::<u8>(source(src), t)?;
        put_status(status, &st);
        put("Mprobe", message, handle(m, &st))
    }

    /// `MPI_Improbe`.
    fn Improbe = MPI_Improbe / PMPI_Improbe(src: c_int, t: c_int, c: Handle, flag: *mut c_int, message: *mut Handle, status: *mut MpiStatus) on comm(c) => {
        let t = tag("Improbe", t)?;
        if message.is_null() || flag.is_null() {
            return Err(err(ErrorClass::Arg, "Improbe", "flag or message is NULL"));
        }
        match comm_p2p::<Single>(comm(c))?.immediate_matched_probe::<u8>(source(src), t)? {
            Some((m, st)) => {
                put_status(status, &st);
                put("Improbe", message, handle(m, &st))?;
                put("Improbe", flag, 1)
            }
            None => put("Improbe", flag, 0),
        }
    }

    /// `MPI_Imrecv`: starts receiving a matched message; `*message` becomes
    /// `MPI_MESSAGE_NULL`.
    fn Imrecv = MPI_Imrecv / PMPI_Imrecv(buf: *mut c_void, n: c_int, dt: Handle, message: *mut Handle, r: *mut Handle) on oxmpi::handle::comm::CommHandle::WORLD => {
        imrecv("Imrecv", buf, n.into(), dt, message, r)
    }

    /// `MPI_Imrecv_c`.
    fn Imrecv_c = MPI_Imrecv_c / PMPI_Imrecv_c(buf: *mut c_void, n: i64, dt: Handle, message: *mut Handle, r: *mut Handle) on oxmpi::handle::comm::CommHandle::WORLD => {
        imrecv("Imrecv_c", buf, n, dt, message, r)
    }

    /// `MPI_Mrecv`: receives a matched message; `*message` becomes `MPI_MESSAGE_NULL`.
    fn Mrecv = MPI_Mrecv / PMPI_Mrecv(buf: *mut c_void, n: c_int, dt: Handle, message: *mut Handle, status: *mut MpiStatus) on oxmpi::handle::comm::CommHandle::WORLD => {
        mrecv("Mrecv", buf, n.into(), dt, message, status)
    }

    /// `MPI_Mrecv_c`.
    fn Mrecv_c = MPI_Mrecv_c / PMPI_Mrecv_c(buf: *mut c_void, n: i64, dt: Handle, message: *mut Handle, status: *mut MpiStatus) on oxmpi::handle::comm::CommHandle::WORLD => {
        mrecv("Mrecv_c", buf, n, dt, message, status)
    }
}

/// `MPI_Imrecv` and `MPI_Imrecv_c`.
///
/// # Safety
/// Pointers as the standard's contract for `MPI_Imrecv`.
unsafe fn imrecv(
    name: &str,
    buf: *mut c_void,
    n: i64,
    dt: Handle,
    message: *mut Handle,
    r: *mut Handle,
) -> Result<()> {
    // SAFETY: forwarded from our caller.
    unsafe {
        if r.is_null() {
            return Err(err(ErrorClass::Arg, name, "request is NULL"));
        }
        let (ptr, len, staged) =
            match crate::datatypes::data(name, n, dt as usize, buf.cast_const())? {
                Data::Bytes { offset, len } => {
                    let at = buf.cast::<u8>().wrapping_offset(offset).cast::<c_void>();
                    (recv_buf(name, at, len)?.as_mut_ptr(), len, None)
                }
                Data::Typed { ty, count, len } => {
                    let mut s = Staged::recv(ty, buf, count, len, false);
                    (s.bytes().as_mut_ptr(), len, Some(s))
                }
            };
        let m = take(name, get(name, message)?)?;
        put(name, message, MESSAGE_NULL as Handle)?;
        let id = match m {
            None => {
                crate::p2p::with_requests(name, |q| Ok(q.completed(oxmpi::Status::proc_null())))?
            }
            // SAFETY: the caller keeps the buffer valid until the request completes; a
            // staged buffer is held with the request.
            Some(m) => crate::p2p::with_requests(name, |q| q.imrecv(m, ptr, len))?,
        };
        if let Some(s) = staged {
            crate::staging::hold(id, s);
        }
        put(name, r, crate::p2p::req_handle(id))
    }
}

/// `MPI_Mrecv` and `MPI_Mrecv_c`.
///
/// # Safety
/// Pointers as the standard's contract for `MPI_Mrecv`.
unsafe fn mrecv(
    name: &str,
    buf: *mut c_void,
    n: i64,
    dt: Handle,
    message: *mut Handle,
    status: *mut MpiStatus,
) -> Result<()> {
    // SAFETY: forwarded from our caller.
    unsafe {
        // The buffer is checked before the message is taken, so a bad buffer loses nothing.
        let mut into = match crate::datatypes::data(name, n, dt as usize, buf.cast_const())? {
            Data::Bytes { offset, len } => {
                let at = buf.cast::<u8>().wrapping_offset(offset).cast::<c_void>();
                Ok(recv_buf(name, at, len)?)
            }
            Data::Typed { ty, count, len } => Err(Staged::recv(ty, buf, count, len, false)),
        };
        let m = take(name, get(name, message)?)?;
        put(name, message, MESSAGE_NULL as Handle)?;
        let st = match (m, &mut into) {
            (None, _) => oxmpi::Status::proc_null(),
            (Some(m), Ok(data)) => m.matched_receive_into(&mut **data)?,
            (Some(m), Err(s)) => {
                let st = m.matched_receive_into(s.bytes())?;
                s.unpack(st.bytes());
                st
            }
        };
        put_status(status, &st);
        Ok(())
    }
}
