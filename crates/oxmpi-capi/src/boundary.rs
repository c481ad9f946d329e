//! The C boundary: the handle types as C sees them, the one wrapper every exported function
//! goes through (panics caught, errors dispatched to the communicator's error handler), and
//! the checks of raw arguments (pointers, counts, strings) shared by every call.
//!
//! Handles are pointers to incomplete structs in `mpi.h`; here they are pointer-sized
//! integers holding the core's ids: predefined handles are the standard's constants (below
//! 4096), user objects the core tables' ids (4096 and above).

use std::ffi::{c_char, c_int, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};

use oxmpi::handle::comm::CommHandle;
use oxmpi::handle::errhandler::{self, Action, ErrhandlerHandle};
use oxmpi::{Error, ErrorClass, Result};

/// `MPI_Comm`, `MPI_Group`, ...: a pointer-sized handle value.
pub type Handle = *mut c_void;

/// `MPI_Status`: 8 ints, the first three named by the standard. The rest hold the byte count
/// (low and high halves) and whether the operation was cancelled.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct MpiStatus {
    /// `MPI_SOURCE`.
    pub source: c_int,
    /// `MPI_TAG`.
    pub tag: c_int,
    /// `MPI_ERROR`.
    pub error: c_int,
    /// `MPI_internal`: bytes (low, high), cancelled, unused.
    pub internal: [c_int; 5],
}

impl MpiStatus {
    /// The C form of a core status.
    pub fn from_core(st: &oxmpi::Status) -> MpiStatus {
        let bytes = st.bytes();
        MpiStatus {
            source: st.source(),
            tag: st.tag(),
            error: st.error().map_or(0, |c| c as c_int),
            internal: [
                bytes as u32 as c_int,
                (bytes >> 32) as u32 as c_int,
                st.cancelled() as c_int,
                0,
                0,
            ],
        }
    }

    /// Bytes the operation moved.
    pub fn bytes(&self) -> u64 {
        (self.internal[0] as u32 as u64) | ((self.internal[1] as u32 as u64) << 32)
    }
}

/// The comm id a C handle holds (an invalid value stays invalid: the core rejects it).
pub fn comm(h: Handle) -> CommHandle {
    CommHandle::from_int(int_of(h))
}

/// The C handle of a comm id.
pub fn comm_handle(c: CommHandle) -> Handle {
    handle_of(c.to_int())
}

/// A handle's integer (ids are positive `i32`s; anything larger is no id).
pub fn int_of(h: Handle) -> i32 {
    i32::try_from(h as usize).unwrap_or(-1)
}

/// The C handle of integer id `i`.
pub fn handle_of(i: i32) -> Handle {
    i as u32 as usize as Handle
}

/// Runs `body`, the translation of MPI call `name`, and turns its outcome into the C return
/// code: `MPI_SUCCESS`, or the error dispatched to the error handler of `on()` (which may end
/// the job). A panic becomes `MPI_ERR_INTERN`; none crosses the boundary.
///
/// `on` is asked only when there is an error: finding a window's handler is a table lookup
/// (a read lock and a reference count, four locked instructions), which on every call made
/// a C `MPI_Put` and `MPI_Win_flush` of 8 bytes 12 times the Rust path's 0.011 µs.
#[inline]
pub fn run(
    name: &'static str,
    on: impl FnOnce() -> CommHandle,
    body: impl FnOnce() -> Result<()>,
) -> c_int {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => 0,
        Ok(Err(e)) => fail_with(name, errors_go_to(on), e),
        Err(p) => panicked(name, errors_go_to(on), p),
    }
}

/// Where [`run`]'s error goes: `on()`, or `MPI_COMM_WORLD` if finding it panicked (no panic
/// crosses the boundary).
#[cold]
#[inline(never)]
fn errors_go_to(on: impl FnOnce() -> CommHandle) -> CommHandle {
    catch_unwind(AssertUnwindSafe(on)).unwrap_or(CommHandle::WORLD)
}

/// [`run`]'s error path, out of line so that the success path stays short.
#[cold]
#[inline(never)]
fn fail_with(name: &str, on: CommHandle, e: Error) -> c_int {
    fail(name, on, &e, e.class() as c_int)
}

/// [`run`]'s panic path: `MPI_ERR_INTERN` naming the call.
#[cold]
#[inline(never)]
fn panicked(name: &str, on: CommHandle, p: Box<dyn std::any::Any + Send>) -> c_int {
    let e = panic_error(name, p);
    fail(name, on, &e, ErrorClass::Intern as c_int)
}

/// The `MPI_ERR_INTERN` error of a panic in call `name`.
fn panic_error(name: &str, p: Box<dyn std::any::Any + Send>) -> Error {
    let what = p
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_default();
    Error::new(
        ErrorClass::Intern,
        format!("{name}: internal error: {what}"),
    )
}

/// As [`run`], for the constructors that take the new communicator's error handler
/// (`MPI_Comm_create_from_group`, `MPI_Intercomm_create_from_groups`): the standard has
/// their own errors raised on that handler, `eh`, since there is no communicator yet (a user
/// handler is called with `MPI_COMM_NULL`). An `eh` that is no live handler leaves the error
/// to the handler of `MPI_COMM_WORLD`, as errors tied to no object.
#[inline]
pub fn run_on_errhandler(
    name: &'static str,
    eh: Handle,
    body: impl FnOnce() -> Result<()>,
) -> c_int {
    let e = match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => return 0,
        Ok(Err(e)) => e,
        Err(p) => panic_error(name, p),
    };
    let code = e.class() as c_int;
    let action = errhandler::handler_action(ErrhandlerHandle::from_int(int_of(eh)))
        .unwrap_or_else(|_| errhandler::action(CommHandle::NULL));
    dispatch(name, action, CommHandle::NULL, &e, code)
}

/// `MPI_*_call_errhandler`: after `check` (that the object is live; its error is the
/// call's, dispatched as any other), invokes the error handler of `on` with `code`, as a
/// failed call would; returns `MPI_SUCCESS` when the handler returns.
pub fn call_errhandler(
    name: &'static str,
    on: CommHandle,
    check: impl FnOnce() -> Result<()>,
    code: c_int,
) -> c_int {
    let checked = run(name, || on, check);
    if checked != 0 {
        return checked;
    }
    let e = Error::new(ErrorClass::Other, format!("MPI_{name} with code {code}"));
    fail(name, on, &e, code);
    0
}

/// Hands error `code` of call `name` to the error handler of `on`; returns the code if the
/// handler returns.
pub fn fail(name: &str, on: CommHandle, e: &Error, code: c_int) -> c_int {
    dispatch(name, errhandler::action(on), on, e, code)
}

/// Does what error handler `action` says with error `code` of call `name` (a user handler is
/// called with `on`); returns the code if the handler returns.
fn dispatch(name: &str, action: Action, on: CommHandle, e: &Error, code: c_int) -> c_int {
    match action {
        Action::Return => code,
        Action::Call(f) => {
            // A handler that panics (a Rust bug, or unwinding C++) must not cross the boundary.
            let _ = catch_unwind(AssertUnwindSafe(|| f(on, code)));
            code
        }
        Action::Fatal | Action::Abort => {
            let rank =
                oxmpi::handle::env::world_rank().map_or_else(|| "?".to_string(), |r| r.to_string());
            let class = errhandler::error_class(code).unwrap_or(code);
            let msg = format!(
                "oxmpi: rank {rank}: MPI_{name} failed: {} ({}): {}",
                crate::errors::class_name(class),
                errhandler::error_string(code).unwrap_or_default(),
                e.message()
            );
            oxmpi::handle::env::abort(code.max(1), &msg)
        }
    }
}

/// An error of class `class` naming call `name`.
pub fn err(class: ErrorClass, name: &str, what: impl std::fmt::Display) -> Error {
    Error::new(class, format!("{name}: {what}"))
}

/// Writes `v` through out-pointer `p`; a null pointer is [`ErrorClass::Arg`].
///
/// # Safety
/// `p` must be null or valid for a write of `T` (the C caller's contract).
pub unsafe fn put<T>(name: &str, p: *mut T, v: T) -> Result<()> {
    if p.is_null() {
        return Err(err(ErrorClass::Arg, name, "an output argument is NULL"));
    }
    // SAFETY: non-null, and valid for a write by the caller's contract.
    unsafe { p.write_unaligned(v) };
    Ok(())
}

/// Reads `*p`; a null pointer is [`ErrorClass::Arg`].
///
/// # Safety
/// `p` must be null or valid for a read of `T`.
pub unsafe fn get<T: Copy>(name: &str, p: *const T) -> Result<T> {
    if p.is_null() {
        return Err(err(ErrorClass::Arg, name, "an argument pointer is NULL"));
    }
    // SAFETY: non-null, and valid for a read by the caller's contract.
    Ok(unsafe { p.read_unaligned() })
}

/// Writes `st` to status pointer `p` unless it is `MPI_STATUS_IGNORE` (null).
///
/// # Safety
/// `p` must be null or valid for a write of one `MPI_Status`.
pub unsafe fn put_status(p: *mut MpiStatus, st: &oxmpi::Status) {
    if !p.is_null() {
        // SAFETY: non-null, valid for a write by the caller's contract.
        unsafe { p.write_unaligned(MpiStatus::from_core(st)) };
    }
}

/// `n` elements at `p` as a slice (empty for `n == 0` whatever `p` is); a null `p` with
/// `n > 0` is [`ErrorClass::Arg`].
///
/// # Safety
/// `p` must be valid for reads of `n` elements for `'a`.
pub unsafe fn slice<'a, T>(name: &str, p: *const T, n: usize) -> Result<&'a [T]> {
    if n == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(err(ErrorClass::Arg, name, "an array argument is NULL"));
    }
    // SAFETY: non-null, valid for `n` reads by the caller's contract.
    Ok(unsafe { std::slice::from_raw_parts(p, n) })
}

/// As [`slice`], mutable.
///
/// # Safety
/// `p` must be valid for reads and writes of `n` elements for `'a`, and not otherwise used.
pub unsafe fn slice_mut<'a, T>(name: &str, p: *mut T, n: usize) -> Result<&'a mut [T]> {
    if n == 0 {
        return Ok(&mut []);
    }
    if p.is_null() {
        return Err(err(ErrorClass::Arg, name, "an array argument is NULL"));
    }
    // SAFETY: non-null, valid for `n` reads and writes by the caller's contract.
    Ok(unsafe { std::slice::from_raw_parts_mut(p, n) })
}

/// A count argument as `usize`: negative is [`ErrorClass::Count`].
/// Takes `int` counts and the `MPI_Count` of the large-count (`_c`) functions alike.
#[inline]
pub fn count(name: &str, n: impl Into<i64>) -> Result<usize> {
    let n: i64 = n.into();
    usize::try_from(n).map_err(|_| negative_count(name, n))
}

#[cold]
#[inline(never)]
fn negative_count(name: &str, n: i64) -> Error {
    err(ErrorClass::Count, name, format!("count {n} is negative"))
}

/// An integer array element of the C ABI: a count (`int`, `MPI_Count`) or a displacement
/// (`int`, `MPI_Aint`), which the `_c` forms give in the wider type.
pub trait AbiInt: Copy {
    /// The value as `i64` (lossless: every such type is at most 64 bits here).
    fn wide(self) -> i64;
}

impl AbiInt for c_int {
    fn wide(self) -> i64 {
        self.into()
    }
}

impl AbiInt for i64 {
    fn wide(self) -> i64 {
        self
    }
}

impl AbiInt for isize {
    fn wide(self) -> i64 {
        self as i64
    }
}

/// The byte length of `n` elements of datatype `dt`, and the datatype: an unknown datatype
/// is [`ErrorClass::Type`], a negative count [`ErrorClass::Count`].
// Inlined, errors out of line: its answer came back through memory, reloaded wider than it
// was stored (a failed store forward), on every C reduction.
#[inline]
pub fn span(
    name: &str,
    n: impl Into<i64>,
    dt: Handle,
) -> Result<(usize, &'static crate::datatypes::Predef)> {
    let n = count(name, n)?;
    let d = crate::datatypes::lookup(name, dt as usize)?;
    match n.checked_mul(d.size) {
        Some(len) => Ok((len, d)),
        None => Err(span_overflows(name)),
    }
}

#[cold]
#[inline(never)]
fn span_overflows(name: &str) -> Error {
    err(ErrorClass::Count, name, "count × datatype size overflows")
}

/// A send buffer of `len` bytes: null with `len > 0` is [`ErrorClass::Buffer`].
///
/// # Safety
/// `p` must be valid for reads of `len` bytes for `'a`.
// Inlined, with the error out of line: every send's short path goes through here.
#[inline]
pub unsafe fn send_buf<'a>(name: &str, p: *const c_void, len: usize) -> Result<&'a [u8]> {
    if len == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(null_buffer(name));
    }
    // SAFETY: non-null, valid for `len` reads by the caller's contract.
    Ok(unsafe { std::slice::from_raw_parts(p.cast::<u8>(), len) })
}

/// A receive buffer of `len` bytes: null with `len > 0` is [`ErrorClass::Buffer`].
///
/// # Safety
/// `p` must be valid for writes of `len` bytes for `'a`, and not otherwise used.
#[inline]
pub unsafe fn recv_buf<'a>(name: &str, p: *mut c_void, len: usize) -> Result<&'a mut [u8]> {
    if len == 0 {
        return Ok(&mut []);
    }
    if p.is_null() {
        return Err(null_buffer(name));
    }
    // SAFETY: non-null, valid for `len` reads and writes by the caller's contract.
    Ok(unsafe { std::slice::from_raw_parts_mut(p.cast::<u8>(), len) })
}

/// The error of a NULL buffer with a non-zero count.
#[cold]
#[inline(never)]
fn null_buffer(name: &str) -> Error {
    err(
        ErrorClass::Buffer,
        name,
        "the buffer is NULL with a non-zero count",
    )
}

/// A NUL-terminated C string as UTF-8; null or invalid UTF-8 is [`ErrorClass::Arg`].
///
/// # Safety
/// `p` must be null or point to a NUL-terminated string.
pub unsafe fn str_arg<'a>(name: &str, p: *const c_char) -> Result<&'a str> {
    if p.is_null() {
        return Err(err(ErrorClass::Arg, name, "a string argument is NULL"));
    }
    // SAFETY: non-null and NUL-terminated by the caller's contract.
    unsafe { std::ffi::CStr::from_ptr(p) }
        .to_str()
        .map_err(|_| err(ErrorClass::Arg, name, "a string argument is not UTF-8"))
}

/// Copies `s` into `buf` of `cap` bytes (truncated to `cap - 1`, NUL-terminated) and returns
/// the length written without the NUL.
///
/// # Safety
/// `buf` must be null or valid for writes of `cap` bytes.
pub unsafe fn put_str(name: &str, buf: *mut c_char, cap: usize, s: &str) -> Result<c_int> {
    if buf.is_null() || cap == 0 {
        return Err(err(ErrorClass::Arg, name, "the string buffer is NULL"));
    }
    let n = s.len().min(cap - 1);
    // SAFETY: `buf` is valid for `cap` bytes and `n + 1 <= cap`; `s` is valid for `n` bytes
    // and cannot overlap memory the caller handed us for writing.
    unsafe {
        std::ptr::copy_nonoverlapping(s.as_ptr(), buf.cast::<u8>(), n);
        *buf.add(n) = 0;
    }
    Ok(n as c_int)
}

/// Defines MPI functions: each body is exported as `PMPI_x` and `MPI_x` calls it, so a
/// profiling library that defines `MPI_x` (and calls `PMPI_x`) intercepts the call. Every
/// body runs in [`run`]: panics are caught and errors go to the error handler of the
/// communicator named after the arguments (`on comm(c)`; calls without a communicator name
/// `MPI_COMM_WORLD`).
macro_rules! mpi_fn {
    ($(
        $(#[$doc:meta])*
        fn $name:ident = $mpi:ident / $pmpi:ident ( $($a:ident : $t:ty),* $(,)? )
            on $on:expr => $body:block
    )*) => { $(
        $(#[$doc])*
        ///
        /// # Safety
        /// The pointer arguments follow the MPI standard's contract for this call.
        #[no_mangle]
        pub unsafe extern "C" fn $pmpi($($a: $t),*) -> std::ffi::c_int {
            // Evaluated only on an error, after the body: every `on` names the handle's
            // error handler from the arguments, which a failed call leaves as they were.
            let on = move || -> oxmpi::handle::comm::CommHandle { $on };
            $crate::boundary::run(stringify!($name), on, move || {
                // SAFETY: the body dereferences only pointer arguments, after checking them
                // for null; their validity for the sizes given is the MPI standard's contract
                // with the C caller, which is the one assumption of this boundary.
                #[allow(unused_unsafe)]
                unsafe { $body }
            })
        }

        $(#[$doc])*
        ///
        /// # Safety
        /// As the `PMPI_` function.
        #[no_mangle]
        pub unsafe extern "C" fn $mpi($($a: $t),*) -> std::ffi::c_int {
            // SAFETY: same contract, forwarded.
            unsafe { $pmpi($($a),*) }
        }
    )* };
}
pub(crate) use mpi_fn;

/// As [`mpi_fn`], for calls whose errors go to an error handler argument instead of a
/// communicator's (`raised on eh`): bodies run in [`run_on_errhandler`].
macro_rules! mpi_fn_on_errhandler {
    ($(
        $(#[$doc:meta])*
        fn $name:ident = $mpi:ident / $pmpi:ident ( $($a:ident : $t:ty),* $(,)? )
            raised on $eh:expr => $body:block
    )*) => { $(
        $(#[$doc])*
        ///
        /// # Safety
        /// The pointer arguments follow the MPI standard's contract for this call.
        #[no_mangle]
        pub unsafe extern "C" fn $pmpi($($a: $t),*) -> std::ffi::c_int {
            let eh: $crate::boundary::Handle = $eh;
            $crate::boundary::run_on_errhandler(stringify!($name), eh, move || {
                // SAFETY: as in `mpi_fn`: the body dereferences only pointer arguments, after
                // checking them for null, valid by the MPI standard's contract.
                #[allow(unused_unsafe)]
                unsafe { $body }
            })
        }

        $(#[$doc])*
        ///
        /// # Safety
        /// As the `PMPI_` function.
        #[no_mangle]
        pub unsafe extern "C" fn $mpi($($a: $t),*) -> std::ffi::c_int {
            // SAFETY: same contract, forwarded.
            unsafe { $pmpi($($a),*) }
        }
    )* };
}
pub(crate) use mpi_fn_on_errhandler;

/// Defines functions that return a value instead of an error code (`MPI_Wtime`,
/// `MPI_Comm_c2f`, ...), exported as `PMPI_x` and `MPI_x` like [`mpi_fn`]. Their bodies
/// cannot fail and do not panic (no lookup that can fail, no arithmetic that can overflow).
macro_rules! mpi_value_fn {
    ($(
        $(#[$doc:meta])*
        fn $mpi:ident / $pmpi:ident ( $($a:ident : $t:ty),* $(,)? ) -> $ret:ty $body:block
    )*) => { $(
        $(#[$doc])*
        #[no_mangle]
        pub extern "C" fn $pmpi($($a: $t),*) -> $ret $body

        $(#[$doc])*
        #[no_mangle]
        pub extern "C" fn $mpi($($a: $t),*) -> $ret {
            $pmpi($($a),*)
        }
    )* };
}
pub(crate) use mpi_value_fn;
