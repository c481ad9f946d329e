//! One-sided communication (`MPI_Win_*`, `MPI_Put`, `MPI_Get`, the accumulates, and their
//! request forms) over the handle layer's windows (`oxmpi::handle::win`).
//!
//! A window's errors go to its own error handler (`MPI_Win_set_errhandler`; at creation, the
//! communicator's). Derived datatypes work on both sides. `MPI_Rput` and friends return
//! requests that are already complete: within a host every operation is done when its call
//! returns. Info arguments are accepted and ignored (no hint changes behaviour yet).

use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_void};
use std::sync::Mutex;

use oxmpi::handle::comm::CommHandle;
use oxmpi::handle::comm::{self as hc, CopyPolicy, KeyvalHandle};
use oxmpi::handle::errhandler::{self as he, ErrhandlerHandle};
use oxmpi::handle::group::GroupHandle;
use oxmpi::handle::op::{self as hop, OpHandle};
use oxmpi::handle::win::{self as hw, WinHandle};
use oxmpi::window::Flavor;
use oxmpi::{ErrorClass, Op, Result};

use crate::boundary::{comm, err, get, handle_of, int_of, mpi_fn, put, put_str, str_arg, Handle};
use crate::datatypes::id as ty;

/// `MPI_REQUEST_NULL`.
const REQUEST_NULL: usize = 0x180;
/// `MPI_WIN_BASE`, `MPI_WIN_SIZE`, `MPI_WIN_DISP_UNIT`, `MPI_WIN_CREATE_FLAVOR`,
/// `MPI_WIN_MODEL`.
const WIN_BASE: c_int = 601;
const WIN_SIZE: c_int = 603;
const WIN_DISP_UNIT: c_int = 602;
const WIN_CREATE_FLAVOR: c_int = 604;
const WIN_MODEL: c_int = 605;
/// `MPI_WIN_UNIFIED`: public and private copies are one memory.
const WIN_UNIFIED: c_int = 321;

/// `MPI_Win_errhandler_function` (variadic in C; only the two named arguments are passed).
pub type WinErrhandlerFunction = unsafe extern "C" fn(*mut Handle, *mut c_int);
/// `MPI_Win_delete_attr_function`.
pub type WinDeleteFunction = unsafe extern "C" fn(Handle, c_int, *mut c_void, *mut c_void) -> c_int;

/// A large-count displacement unit, which windows keep as an `int`.
fn unit(call: &str, u: isize) -> Result<c_int> {
    c_int::try_from(u).map_err(|_| {
        err(
            ErrorClass::Disp,
            call,
            format!("displacement unit {u} does not fit an int"),
        )
    })
}

fn win(h: Handle) -> WinHandle {
    WinHandle::from_int(int_of(h))
}

fn win_handle(w: WinHandle) -> Handle {
    handle_of(w.to_int())
}

/// Where errors of calls on window `h` go.
fn on_win(h: Handle) -> CommHandle {
    hw::error_comm(win(h))
}

/// The op of a one-sided call, whose window lookup checks that MPI is running.
fn op(h: Handle) -> Result<Op> {
    hop::op_named(OpHandle::from_int(int_of(h)))
}

fn group(h: Handle) -> GroupHandle {
    GroupHandle::from_int(int_of(h))
}

fn flavor_value(f: Flavor) -> c_int {
    match f {
        Flavor::Create => 311,
        Flavor::Allocate => 312,
        Flavor::Dynamic => 313,
        Flavor::Shared => 314,
    }
}

/// Values `MPI_Win_get_attr` points to: per window, stable until the window is freed.
#[derive(Default)]
struct AttrVals {
    size: isize,
    disp_unit: c_int,
    flavor: c_int,
    model: c_int,
}

static ATTRS: Mutex<Option<HashMap<i32, Box<AttrVals>>>> = Mutex::new(None);

/// Where errors of `MPI_Win_free(w)` go: the window's handler, or `MPI_COMM_WORLD`'s.
fn free_errors(w: *mut Handle) -> CommHandle {
    if w.is_null() {
        return CommHandle::WORLD;
    }
    // SAFETY: a non-null `MPI_Win *` argument is valid for a read by MPI_Win_free's contract.
    on_win(unsafe { w.read_unaligned() })
}

/// # Safety
/// `out` must be null or valid for a write of one request handle.
unsafe fn done_request(name: &str, out: *mut Handle) -> Result<()> {
    let r = hw::completed_request()?;
    let h = if r.is_null() {
        REQUEST_NULL as Handle
    } else {
        r.to_raw() as usize as Handle
    };
    // SAFETY: caller contract.
    unsafe { put(name, out, h) }
}

mpi_fn! {
    /// `MPI_Win_create`.
    fn Win_create = MPI_Win_create / PMPI_Win_create(base: *mut c_void, size: isize, disp_unit: c_int, info: Handle, c: Handle, out: *mut Handle) on comm(c) => {
        let _ = info;
        let w = hw::win_create(base.cast(), size as i64, disp_unit, comm(c))?;
        put("Win_create", out, win_handle(w))
    }

    /// `MPI_Win_allocate`: `baseptr` is a `void **`.
    fn Win_allocate = MPI_Win_allocate / PMPI_Win_allocate(size: isize, disp_unit: c_int, info: Handle, c: Handle, baseptr: *mut c_void, out: *mut Handle) on comm(c) => {
        let _ = info;
        if baseptr.is_null() {
            return Err(err(ErrorClass::Arg, "Win_allocate", "baseptr is NULL"));
        }
        let (w, p) = hw::win_allocate(size as i64, disp_unit, comm(c))?;
        put("Win_allocate", baseptr.cast::<*mut c_void>(), p.cast())?;
        put("Win_allocate", out, win_handle(w))
    }

    /// `MPI_Win_allocate_shared`: `baseptr` is a `void **`.
    fn Win_allocate_shared = MPI_Win_allocate_shared / PMPI_Win_allocate_shared(size: isize, disp_unit: c_int, info: Handle, c: Handle, baseptr: *mut c_void, out: *mut Handle) on comm(c) => {
        let _ = info;
        if baseptr.is_null() {
            return Err(err(ErrorClass::Arg, "Win_allocate_shared", "baseptr is NULL"));
        }
        let (w, p) = hw::win_allocate_shared(size as i64, disp_unit, comm(c))?;
        put("Win_allocate_shared", baseptr.cast::<*mut c_void>(), p.cast())?;
        put("Win_allocate_shared", out, win_handle(w))
    }

    /// `MPI_Win_create_dynamic`.
    fn Win_create_dynamic = MPI_Win_create_dynamic / PMPI_Win_create_dynamic(info: Handle, c: Handle, out: *mut Handle) on comm(c) => {
        let _ = info;
        let w = hw::win_create_dynamic(comm(c))?;
        put("Win_create_dynamic", out, win_handle(w))
    }

    /// `MPI_Win_shared_query`: `baseptr` is a `void **`.
    fn Win_shared_query = MPI_Win_shared_query / PMPI_Win_shared_query(w: Handle, rank: c_int, size: *mut isize, disp_unit: *mut c_int, baseptr: *mut c_void) on on_win(w) => {
        let (s, u, p) = hw::win_shared_query(win(w), rank)?;
        put("Win_shared_query", size, s as isize)?;
        put("Win_shared_query", disp_unit, u)?;
        put("Win_shared_query", baseptr.cast::<*mut c_void>(), p.cast())
    }

    /// `MPI_Win_attach`.
    fn Win_attach = MPI_Win_attach / PMPI_Win_attach(w: Handle, base: *mut c_void, size: isize) on on_win(w) => {
        hw::win_attach(win(w), base.cast(), size as i64)
    }

    /// `MPI_Win_detach`.
    fn Win_detach = MPI_Win_detach / PMPI_Win_detach(w: Handle, base: *const c_void) on on_win(w) => {
        hw::win_detach(win(w), base.cast())
    }

    /// `MPI_Win_free`.
    fn Win_free = MPI_Win_free / PMPI_Win_free(w: *mut Handle) on free_errors(w) => {
        let mut id = win(get("Win_free", w)?);
        let key = id.to_int();
        hw::win_free(&mut id)?;
        if let Some(m) = ATTRS.lock().unwrap_or_else(|p| p.into_inner()).as_mut() {
            m.remove(&key);
        }
        put("Win_free", w, win_handle(id))
    }

    /// `MPI_Win_get_group`.
    fn Win_get_group = MPI_Win_get_group / PMPI_Win_get_group(w: Handle, out: *mut Handle) on on_win(w) => {
        put("Win_get_group", out, handle_of(hw::win_get_group(win(w))?.to_int()))
    }

    /// `MPI_Win_get_attr` for the predefined keys: `MPI_WIN_BASE` stores the base address
    /// itself, the others a pointer to the value. Other keys: `flag = 0`.
    fn Win_get_attr = MPI_Win_get_attr / PMPI_Win_get_attr(w: Handle, key: c_int, out: *mut c_void, flag: *mut c_int) on on_win(w) => {
        let a = hw::win_attrs(win(w))?;
        if out.is_null() {
            return Err(err(ErrorClass::Arg, "Win_get_attr", "attribute_val is NULL"));
        }
        let slot = out.cast::<*mut c_void>();
        let mut guard = ATTRS.lock().unwrap_or_else(|p| p.into_inner());
        let vals = guard
            .get_or_insert_with(HashMap::new)
            .entry(win(w).to_int())
            .or_default();
        vals.size = a.size as isize;
        vals.disp_unit = a.disp_unit;
        vals.flavor = flavor_value(a.flavor);
        vals.model = WIN_UNIFIED;
        let p: *mut c_void = match key {
            WIN_BASE => a.base.cast(),
            WIN_SIZE => (&mut vals.size as *mut isize).cast(),
            WIN_DISP_UNIT => (&mut vals.disp_unit as *mut c_int).cast(),
            WIN_CREATE_FLAVOR => (&mut vals.flavor as *mut c_int).cast(),
            WIN_MODEL => (&mut vals.model as *mut c_int).cast(),
            // The communicator's predefined keys are not window attributes.
            k if oxmpi::Predefined::from_key(k as u32).is_some() => return put("Win_get_attr", flag, 0),
            k => match hc::comm_get_attr(on_win(w), KeyvalHandle::from_int(k))? {
                Some(v) => v as *mut c_void,
                None => return put("Win_get_attr", flag, 0),
            },
        };
        put("Win_get_attr", slot, p)?;
        put("Win_get_attr", flag, 1)
    }

    /// `MPI_Win_set_errhandler`.
    fn Win_set_errhandler = MPI_Win_set_errhandler / PMPI_Win_set_errhandler(w: Handle, h: Handle) on on_win(w) => {
        hw::win_attrs(win(w))?;
        he::comm_set_errhandler(on_win(w), ErrhandlerHandle::from_int(int_of(h)))
    }

    /// `MPI_Win_get_errhandler`.
    fn Win_get_errhandler = MPI_Win_get_errhandler / PMPI_Win_get_errhandler(w: Handle, out: *mut Handle) on on_win(w) => {
        hw::win_attrs(win(w))?;
        put("Win_get_errhandler", out, handle_of(he::comm_get_errhandler(on_win(w))?.to_int()))
    }

    /// `MPI_Put`.
    fn Put = MPI_Put / PMPI_Put(origin: *const c_void, ocount: c_int, otype: Handle, target: c_int, disp: isize, tcount: c_int, ttype: Handle, w: Handle) on on_win(w) => {
        hw::put(origin.cast(), ocount.into(), ty(otype as usize), target, disp as i64, tcount.into(), ty(ttype as usize), win(w))
    }

    /// `MPI_Get`.
    fn Get = MPI_Get / PMPI_Get(origin: *mut c_void, ocount: c_int, otype: Handle, target: c_int, disp: isize, tcount: c_int, ttype: Handle, w: Handle) on on_win(w) => {
        hw::get(origin.cast(), ocount.into(), ty(otype as usize), target, disp as i64, tcount.into(), ty(ttype as usize), win(w))
    }

    /// `MPI_Accumulate`.
    fn Accumulate = MPI_Accumulate / PMPI_Accumulate(origin: *const c_void, ocount: c_int, otype: Handle, target: c_int, disp: isize, tcount: c_int, ttype: Handle, o: Handle, w: Handle) on on_win(w) => {
        hw::accumulate(origin.cast(), ocount.into(), ty(otype as usize), target, disp as i64, tcount.into(), ty(ttype as usize), &op(o)?, win(w))
    }

    /// `MPI_Get_accumulate`.
    fn Get_accumulate = MPI_Get_accumulate / PMPI_Get_accumulate(origin: *const c_void, ocount: c_int, otype: Handle, result: *mut c_void, rcount: c_int, rtype: Handle, target: c_int, disp: isize, tcount: c_int, ttype: Handle, o: Handle, w: Handle) on on_win(w) => {
        hw::get_accumulate("get_accumulate", origin.cast(), ocount.into(), ty(otype as usize), result.cast(), rcount.into(), ty(rtype as usize), target, disp as i64, tcount.into(), ty(ttype as usize), &op(o)?, win(w))
    }

    /// `MPI_Fetch_and_op`.
    fn Fetch_and_op = MPI_Fetch_and_op / PMPI_Fetch_and_op(origin: *const c_void, result: *mut c_void, dt: Handle, target: c_int, disp: isize, o: Handle, w: Handle) on on_win(w) => {
        let t = ty(dt as usize);
        hw::get_accumulate("fetch_and_op", origin.cast(), 1, t, result.cast(), 1, t, target, disp as i64, 1, t, &op(o)?, win(w))
    }

    /// `MPI_Compare_and_swap`.
    fn Compare_and_swap = MPI_Compare_and_swap / PMPI_Compare_and_swap(origin: *const c_void, compare: *const c_void, result: *mut c_void, dt: Handle, target: c_int, disp: isize, w: Handle) on on_win(w) => {
        hw::compare_and_swap(origin.cast(), compare.cast(), result.cast(), ty(dt as usize), target, disp as i64, win(w))
    }

    /// `MPI_Rput`: the request is complete at once.
    fn Rput = MPI_Rput / PMPI_Rput(origin: *const c_void, ocount: c_int, otype: Handle, target: c_int, disp: isize, tcount: c_int, ttype: Handle, w: Handle, req: *mut Handle) on on_win(w) => {
        hw::put(origin.cast(), ocount.into(), ty(otype as usize), target, disp as i64, tcount.into(), ty(ttype as usize), win(w))?;
        done_request("Rput", req)
    }

    /// `MPI_Rget`.
    fn Rget = MPI_Rget / PMPI_Rget(origin: *mut c_void, ocount: c_int, otype: Handle, target: c_int, disp: isize, tcount: c_int, ttype: Handle, w: Handle, req: *mut Handle) on on_win(w) => {
        hw::get(origin.cast(), ocount.into(), ty(otype as usize), target, disp as i64, tcount.into(), ty(ttype as usize), win(w))?;
        done_request("Rget", req)
    }

    /// `MPI_Raccumulate`.
    fn Raccumulate = MPI_Raccumulate / PMPI_Raccumulate(origin: *const c_void, ocount: c_int, otype: Handle, target: c_int, disp: isize, tcount: c_int, ttype: Handle, o: Handle, w: Handle, req: *mut Handle) on on_win(w) => {
        hw::accumulate(origin.cast(), ocount.into(), ty(otype as usize), target, disp as i64, tcount.into(), ty(ttype as usize), &op(o)?, win(w))?;
        done_request("Raccumulate", req)
    }

    /// `MPI_Rget_accumulate`.
    fn Rget_accumulate = MPI_Rget_accumulate / PMPI_Rget_accumulate(origin: *const c_void, ocount: c_int, otype: Handle, result: *mut c_void, rcount: c_int, rtype: Handle, target: c_int, disp: isize, tcount: c_int, ttype: Handle, o: Handle, w: Handle, req: *mut Handle) on on_win(w) => {
        hw::get_accumulate("rget_accumulate", origin.cast(), ocount.into(), ty(otype as usize), result.cast(), rcount.into(), ty(rtype as usize), target, disp as i64, tcount.into(), ty(ttype as usize), &op(o)?, win(w))?;
        done_request("Rget_accumulate", req)
    }

    /// `MPI_Put_c` (large counts).
    fn Put_c = MPI_Put_c / PMPI_Put_c(origin: *const c_void, ocount: i64, otype: Handle, target: c_int, disp: isize, tcount: i64, ttype: Handle, w: Handle) on on_win(w) => {
        hw::put(origin.cast(), ocount, ty(otype as usize), target, disp as i64, tcount, ty(ttype as usize), win(w))
    }

    /// `MPI_Get_c`.
    fn Get_c = MPI_Get_c / PMPI_Get_c(origin: *mut c_void, ocount: i64, otype: Handle, target: c_int, disp: isize, tcount: i64, ttype: Handle, w: Handle) on on_win(w) => {
        hw::get(origin.cast(), ocount, ty(otype as usize), target, disp as i64, tcount, ty(ttype as usize), win(w))
    }

    /// `MPI_Accumulate_c`.
    fn Accumulate_c = MPI_Accumulate_c / PMPI_Accumulate_c(origin: *const c_void, ocount: i64, otype: Handle, target: c_int, disp: isize, tcount: i64, ttype: Handle, o: Handle, w: Handle) on on_win(w) => {
        hw::accumulate(origin.cast(), ocount, ty(otype as usize), target, disp as i64, tcount, ty(ttype as usize), &op(o)?, win(w))
    }

    /// `MPI_Get_accumulate_c`.
    fn Get_accumulate_c = MPI_Get_accumulate_c / PMPI_Get_accumulate_c(origin: *const c_void, ocount: i64, otype: Handle, result: *mut c_void, rcount: i64, rtype: Handle, target: c_int, disp: isize, tcount: i64, ttype: Handle, o: Handle, w: Handle) on on_win(w) => {
        hw::get_accumulate("get_accumulate", origin.cast(), ocount, ty(otype as usize), result.cast(), rcount, ty(rtype as usize), target, disp as i64, tcount, ty(ttype as usize), &op(o)?, win(w))
    }

    /// `MPI_Rput_c`: the request is complete at once.
    fn Rput_c = MPI_Rput_c / PMPI_Rput_c(origin: *const c_void, ocount: i64, otype: Handle, target: c_int, disp: isize, tcount: i64, ttype: Handle, w: Handle, req: *mut Handle) on on_win(w) => {
        hw::put(origin.cast(), ocount, ty(otype as usize), target, disp as i64, tcount, ty(ttype as usize), win(w))?;
        done_request("Rput_c", req)
    }

    /// `MPI_Rget_c`.
    fn Rget_c = MPI_Rget_c / PMPI_Rget_c(origin: *mut c_void, ocount: i64, otype: Handle, target: c_int, disp: isize, tcount: i64, ttype: Handle, w: Handle, req: *mut Handle) on on_win(w) => {
        hw::get(origin.cast(), ocount, ty(otype as usize), target, disp as i64, tcount, ty(ttype as usize), win(w))?;
        done_request("Rget_c", req)
    }

    /// `MPI_Raccumulate_c`.
    fn Raccumulate_c = MPI_Raccumulate_c / PMPI_Raccumulate_c(origin: *const c_void, ocount: i64, otype: Handle, target: c_int, disp: isize, tcount: i64, ttype: Handle, o: Handle, w: Handle, req: *mut Handle) on on_win(w) => {
        hw::accumulate(origin.cast(), ocount, ty(otype as usize), target, disp as i64, tcount, ty(ttype as usize), &op(o)?, win(w))?;
        done_request("Raccumulate_c", req)
    }

    /// `MPI_Rget_accumulate_c`.
    fn Rget_accumulate_c = MPI_Rget_accumulate_c / PMPI_Rget_accumulate_c(origin: *const c_void, ocount: i64, otype: Handle, result: *mut c_void, rcount: i64, rtype: Handle, target: c_int, disp: isize, tcount: i64, ttype: Handle, o: Handle, w: Handle, req: *mut Handle) on on_win(w) => {
        hw::get_accumulate("rget_accumulate", origin.cast(), ocount, ty(otype as usize), result.cast(), rcount, ty(rtype as usize), target, disp as i64, tcount, ty(ttype as usize), &op(o)?, win(w))?;
        done_request("Rget_accumulate_c", req)
    }

    /// `MPI_Win_create_c`: the displacement unit is an `MPI_Aint`.
    fn Win_create_c = MPI_Win_create_c / PMPI_Win_create_c(base: *mut c_void, size: isize, disp_unit: isize, info: Handle, c: Handle, out: *mut Handle) on comm(c) => {
        let _ = info;
        let w = hw::win_create(base.cast(), size as i64, unit("Win_create_c", disp_unit)?, comm(c))?;
        put("Win_create_c", out, win_handle(w))
    }

    /// `MPI_Win_allocate_c`.
    fn Win_allocate_c = MPI_Win_allocate_c / PMPI_Win_allocate_c(size: isize, disp_unit: isize, info: Handle, c: Handle, baseptr: *mut c_void, out: *mut Handle) on comm(c) => {
        let _ = info;
        if baseptr.is_null() {
            return Err(err(ErrorClass::Arg, "Win_allocate_c", "baseptr is NULL"));
        }
        let (w, p) = hw::win_allocate(size as i64, unit("Win_allocate_c", disp_unit)?, comm(c))?;
        put("Win_allocate_c", baseptr.cast::<*mut c_void>(), p.cast())?;
        put("Win_allocate_c", out, win_handle(w))
    }

    /// `MPI_Win_allocate_shared_c`.
    fn Win_allocate_shared_c = MPI_Win_allocate_shared_c / PMPI_Win_allocate_shared_c(size: isize, disp_unit: isize, info: Handle, c: Handle, baseptr: *mut c_void, out: *mut Handle) on comm(c) => {
        let _ = info;
        if baseptr.is_null() {
            return Err(err(ErrorClass::Arg, "Win_allocate_shared_c", "baseptr is NULL"));
        }
        let (w, p) = hw::win_allocate_shared(size as i64, unit("Win_allocate_shared_c", disp_unit)?, comm(c))?;
        put("Win_allocate_shared_c", baseptr.cast::<*mut c_void>(), p.cast())?;
        put("Win_allocate_shared_c", out, win_handle(w))
    }

    /// `MPI_Win_shared_query_c`.
    fn Win_shared_query_c = MPI_Win_shared_query_c / PMPI_Win_shared_query_c(w: Handle, rank: c_int, size: *mut isize, disp_unit: *mut isize, baseptr: *mut c_void) on on_win(w) => {
        let (s, u, p) = hw::win_shared_query(win(w), rank)?;
        put("Win_shared_query_c", size, s as isize)?;
        put("Win_shared_query_c", disp_unit, u as isize)?;
        put("Win_shared_query_c", baseptr.cast::<*mut c_void>(), p.cast())
    }

    /// `MPI_Win_fence`.
    fn Win_fence = MPI_Win_fence / PMPI_Win_fence(assert: c_int, w: Handle) on on_win(w) => {
        hw::win_fence(assert, win(w))
    }

    /// `MPI_Win_post`.
    fn Win_post = MPI_Win_post / PMPI_Win_post(g: Handle, assert: c_int, w: Handle) on on_win(w) => {
        hw::win_post(group(g), assert, win(w))
    }

    /// `MPI_Win_start`.
    fn Win_start = MPI_Win_start / PMPI_Win_start(g: Handle, assert: c_int, w: Handle) on on_win(w) => {
        hw::win_start(group(g), assert, win(w))
    }

    /// `MPI_Win_complete`.
    fn Win_complete = MPI_Win_complete / PMPI_Win_complete(w: Handle) on on_win(w) => {
        hw::win_complete(win(w))
    }

    /// `MPI_Win_wait`.
    fn Win_wait = MPI_Win_wait / PMPI_Win_wait(w: Handle) on on_win(w) => {
        hw::win_wait(win(w))
    }

    /// `MPI_Win_test`.
    fn Win_test = MPI_Win_test / PMPI_Win_test(w: Handle, flag: *mut c_int) on on_win(w) => {
        let done = hw::win_test(win(w))?;
        put("Win_test", flag, done as c_int)
    }

    /// `MPI_Win_lock`.
    fn Win_lock = MPI_Win_lock / PMPI_Win_lock(lock_type: c_int, rank: c_int, assert: c_int, w: Handle) on on_win(w) => {
        hw::win_lock(lock_type, rank, assert, win(w))
    }

    /// `MPI_Win_unlock`.
    fn Win_unlock = MPI_Win_unlock / PMPI_Win_unlock(rank: c_int, w: Handle) on on_win(w) => {
        hw::win_unlock(rank, win(w))
    }

    /// `MPI_Win_lock_all`.
    fn Win_lock_all = MPI_Win_lock_all / PMPI_Win_lock_all(assert: c_int, w: Handle) on on_win(w) => {
        hw::win_lock_all(assert, win(w))
    }

    /// `MPI_Win_unlock_all`.
    fn Win_unlock_all = MPI_Win_unlock_all / PMPI_Win_unlock_all(w: Handle) on on_win(w) => {
        hw::win_unlock_all(win(w))
    }

    /// `MPI_Win_flush`.
    fn Win_flush = MPI_Win_flush / PMPI_Win_flush(rank: c_int, w: Handle) on on_win(w) => {
        hw::win_flush("win_flush", Some(rank), win(w))
    }

    /// `MPI_Win_flush_all`.
    fn Win_flush_all = MPI_Win_flush_all / PMPI_Win_flush_all(w: Handle) on on_win(w) => {
        hw::win_flush("win_flush_all", None, win(w))
    }

    /// `MPI_Win_flush_local`.
    fn Win_flush_local = MPI_Win_flush_local / PMPI_Win_flush_local(rank: c_int, w: Handle) on on_win(w) => {
        hw::win_flush("win_flush_local", Some(rank), win(w))
    }

    /// `MPI_Win_flush_local_all`.
    fn Win_flush_local_all = MPI_Win_flush_local_all / PMPI_Win_flush_local_all(w: Handle) on on_win(w) => {
        hw::win_flush("win_flush_local_all", None, win(w))
    }

    /// `MPI_Win_sync`.
    fn Win_sync = MPI_Win_sync / PMPI_Win_sync(w: Handle) on on_win(w) => {
        hw::win_sync(win(w))
    }

    /// `MPI_Win_create_errhandler`: the handler receives the window's handle.
    fn Win_create_errhandler = MPI_Win_create_errhandler / PMPI_Win_create_errhandler(
        f: Option<WinErrhandlerFunction>,
        out: *mut Handle,
    ) on CommHandle::WORLD => {
        let f = f.ok_or_else(|| err(ErrorClass::Arg, "Win_create_errhandler", "the function is NULL"))?;
        if out.is_null() {
            return Err(err(ErrorClass::Arg, "Win_create_errhandler", "errhandler is NULL"));
        }
        let h = he::errhandler_create(std::sync::Arc::new(move |c: CommHandle, code: i32| {
            let mut wh = win_handle(hw::window_of(c).unwrap_or(WinHandle::NULL));
            let mut code = code;
            // SAFETY: FFI call of the user's handler with pointers to two live locals.
            unsafe { f(&mut wh, &mut code) };
        }))?;
        put("Win_create_errhandler", out, handle_of(h.to_int()))
    }

    /// `MPI_Win_set_name`.
    fn Win_set_name = MPI_Win_set_name / PMPI_Win_set_name(w: Handle, name: *const c_char) on on_win(w) => {
        hw::check("Win_set_name", win(w))?;
        oxmpi::handle::name::comm_set_name(on_win(w), str_arg("Win_set_name", name)?)
    }

    /// `MPI_Win_get_name`: `name` must hold `MPI_MAX_OBJECT_NAME` bytes; a window never
    /// named has the empty name.
    fn Win_get_name = MPI_Win_get_name / PMPI_Win_get_name(w: Handle, name: *mut c_char, len: *mut c_int) on on_win(w) => {
        // As `MPI_Comm_get_name`: the null handle is named like the predefined ones.
        let n = if win(w) == WinHandle::NULL {
            "MPI_WIN_NULL".to_string()
        } else {
            hw::check("Win_get_name", win(w))?;
            oxmpi::handle::name::comm_get_name(on_win(w))?
        };
        let written = put_str("Win_get_name", name, crate::comm::MAX_OBJECT_NAME, &n)?;
        put("Win_get_name", len, written)
    }

    /// `MPI_Win_set_info`: no hint changes a window's behaviour, so all are accepted.
    fn Win_set_info = MPI_Win_set_info / PMPI_Win_set_info(w: Handle, info: Handle) on on_win(w) => {
        hw::check("Win_set_info", win(w))?;
        let i = oxmpi::handle::info::InfoHandle::from_int(int_of(info));
        if i != oxmpi::handle::info::InfoHandle::NULL {
            oxmpi::handle::info::info_get_nkeys(i)?;
        }
        Ok(())
    }

    /// `MPI_Win_get_info`: a new, empty info (no hint is in use).
    fn Win_get_info = MPI_Win_get_info / PMPI_Win_get_info(w: Handle, out: *mut Handle) on on_win(w) => {
        hw::check("Win_get_info", win(w))?;
        if out.is_null() {
            return Err(err(ErrorClass::Arg, "Win_get_info", "info_used is NULL"));
        }
        put("Win_get_info", out, handle_of(oxmpi::handle::info::info_create()?.to_int()))
    }

    /// `MPI_Win_create_keyval`: `MPI_WIN_NULL_COPY_FN` (0) and `MPI_WIN_DUP_FN` (1) are both
    /// accepted (windows are never duplicated); a null delete function is
    /// `MPI_WIN_NULL_DELETE_FN`.
    fn Win_create_keyval = MPI_Win_create_keyval / PMPI_Win_create_keyval(
        copy: usize, delete: Option<WinDeleteFunction>, keyval: *mut c_int, extra: *mut c_void
    ) on CommHandle::WORLD => {
        if keyval.is_null() {
            return Err(err(ErrorClass::Arg, "Win_create_keyval", "keyval is NULL"));
        }
        let _ = copy;
        let delete = delete.map(|f| {
            std::sync::Arc::new(move |c: CommHandle, k: KeyvalHandle, extra: usize, v: usize| {
                let wh = win_handle(hw::window_of(c).unwrap_or(WinHandle::NULL));
                // SAFETY: FFI call of the user's delete function.
                let rc = unsafe { f(wh, k.to_int(), v as *mut c_void, extra as *mut c_void) };
                if rc != 0 {
                    return Err(err(
                        ErrorClass::Other,
                        "window attribute delete",
                        format!("the delete function returned {rc}"),
                    ));
                }
                Ok(())
            }) as hc::DeleteFn
        });
        let k = hc::keyval_create(CopyPolicy::Null, delete, extra as usize)?;
        put("Win_create_keyval", keyval, k.to_int())
    }

    /// `MPI_Win_free_keyval`.
    fn Win_free_keyval = MPI_Win_free_keyval / PMPI_Win_free_keyval(keyval: *mut c_int) on CommHandle::WORLD => {
        let mut k = KeyvalHandle::from_int(get("Win_free_keyval", keyval)?);
        hc::keyval_free(&mut k)?;
        put("Win_free_keyval", keyval, k.to_int())
    }

    /// `MPI_Win_set_attr`.
    fn Win_set_attr = MPI_Win_set_attr / PMPI_Win_set_attr(w: Handle, k: c_int, v: *mut c_void) on on_win(w) => {
        hw::check("Win_set_attr", win(w))?;
        hc::comm_set_attr(on_win(w), KeyvalHandle::from_int(k), v as usize)
    }

    /// `MPI_Win_delete_attr`.
    fn Win_delete_attr = MPI_Win_delete_attr / PMPI_Win_delete_attr(w: Handle, k: c_int) on on_win(w) => {
        hw::check("Win_delete_attr", win(w))?;
        hc::comm_delete_attr(on_win(w), KeyvalHandle::from_int(k))
    }
}

/// `MPI_Win_call_errhandler`: invokes the error handler of window `w` with `code`; returns
/// `MPI_SUCCESS` when the handler returns.
///
/// # Safety
/// None beyond the MPI contract (no pointer arguments).
#[no_mangle]
pub unsafe extern "C" fn PMPI_Win_call_errhandler(w: Handle, code: c_int) -> c_int {
    let check = || hw::win_attrs(win(w)).map(drop);
    crate::boundary::call_errhandler("Win_call_errhandler", on_win(w), check, code)
}

/// `MPI_Win_call_errhandler`.
///
/// # Safety
/// As the `PMPI_` function.
#[no_mangle]
pub unsafe extern "C" fn MPI_Win_call_errhandler(w: Handle, code: c_int) -> c_int {
    // SAFETY: same contract, forwarded.
    unsafe { PMPI_Win_call_errhandler(w, code) }
}
