//! Windows as ids (`MPI_Win`), for the C ABI: the window core ([`crate::rma`]) reached
//! through an id, with MPI datatypes on both sides.
//!
//! Each window also registers its private communicator as a communicator id, which carries
//! the window's error handler (inherited from the communicator it was made from), so the C
//! layer dispatches a window's errors like a communicator's. Derived datatypes work on every
//! side: the origin is packed (or unpacked) through a buffer of ours, and the target side is
//! walked as its contiguous pieces, each checked against the window. A freed or never-issued id is
//! [`ErrorClass::Win`].
//!
//! # Standard sections
//! MPI-5.0 chapter 12 (one-sided communications).

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use super::comm::CommHandle;
use super::datatype::{Plain, TypeHandle};
use super::request::RequestId;
use super::table::Table;
use crate::datatype::build::Type;
use crate::datatype::predefined::Predefined;
use crate::error::{Error, ErrorClass, Result};
use crate::op::Op;
use crate::rma::{Flavor, LockType, WinCore};

/// A window id (`MPI_Win`). `Copy`; valid from its creation until [`win_free`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(transparent)]
pub struct WinHandle(u32);

impl WinHandle {
    /// `MPI_WIN_NULL` (ABI value).
    pub const NULL: WinHandle = WinHandle(0x110);

    /// The id as an integer.
    pub fn to_int(self) -> i32 {
        self.0 as i32
    }

    /// The id with integer value `i` (whether it names a window is checked on use).
    pub fn from_int(i: i32) -> WinHandle {
        WinHandle(i as u32)
    }
}

struct Entry {
    core: WinCore,
    /// The communicator id whose error handler is the window's.
    errs: CommHandle,
    /// Set by [`win_free`] before the id leaves the table, for threads that kept the entry
    /// in [`LAST`].
    freed: AtomicBool,
}

static WINS: Table<Arc<Entry>> = Table::new();

thread_local! {
    /// The window this thread named last, with its id: a call on it again skips the table's
    /// read lock and reference count (four locked instructions a call, eight for a put and
    /// its flush). Freed windows are told apart by [`Entry::freed`]; the thread that frees a
    /// window, and the one that finalizes, drop theirs (see [`forget_last`]).
    static LAST: RefCell<Option<(u32, Arc<Entry>)>> = const { RefCell::new(None) };
}

/// Runs `f` on the live window `w`, from [`LAST`] when it holds `w`, else from the table
/// (then kept in [`LAST`]).
fn with_entry<R>(call: &str, w: WinHandle, f: impl FnOnce(&Entry) -> Result<R>) -> Result<R> {
    let mut f = Some(f);
    // A shared borrow: a call nested in `f` (none is, today) finds it again, and only the
    // miss below ever borrows mutably, never across `f`. A window in `LAST` was kept by this
    // thread after `runtime` admitted it, which only finalize undoes (the thread level and
    // whether this is the main thread never change): a hit checks just that, not the whole
    // of `runtime` (whose thread-local read was a tenth of a C `MPI_Put`).
    let hit = LAST.try_with(|l| {
        let last = l.borrow();
        match &*last {
            Some((id, e))
                if *id == w.0
                    && !e.freed.load(Ordering::Relaxed)
                    && !crate::runtime::is_finalized() =>
            {
                f.take().map(|f| f(e))
            }
            _ => None,
        }
    });
    if let Ok(Some(r)) = hit {
        return r;
    }
    // `entry` checks the runtime in full.
    let e = entry(call, w)?;
    // The entry this replaces may be a window freed by another thread: dropped here, while
    // MPI is running, rather than at this thread's exit.
    let _ = LAST.try_with(|l| {
        if let Ok(mut last) = l.try_borrow_mut() {
            *last = Some((w.0, Arc::clone(&e)));
        }
    });
    // `f` was taken only on a hit, which returned.
    let f = f.take().ok_or_else(|| {
        Error::new(
            ErrorClass::Intern,
            format!("{call}: window lookup ran twice"),
        )
    })?;
    f(&e)
}

/// Drops this thread's [`LAST`] (all of it for `None`, else only if it holds `w`).
fn forget_last(w: Option<WinHandle>) {
    let _ = LAST.try_with(|l| {
        if let Ok(mut last) = l.try_borrow_mut() {
            if w.is_none_or(|w| last.as_ref().is_some_and(|(id, _)| *id == w.0)) {
                *last = None;
            }
        }
    });
}

/// Drops the window this thread kept for its next call (at finalize: the entry must not
/// outlive MPI in a thread-local).
pub(crate) fn forget_kept() {
    forget_last(None);
}

/// Window id by the id of its private communicator, so a callback reached through that
/// communicator (an error handler, an attribute's delete function) can name the window.
static BY_ERRS: std::sync::Mutex<Vec<(CommHandle, WinHandle)>> = std::sync::Mutex::new(Vec::new());

fn by_errs() -> std::sync::MutexGuard<'static, Vec<(CommHandle, WinHandle)>> {
    BY_ERRS.lock().unwrap_or_else(|p| p.into_inner())
}

/// The window whose private communicator is `c` (see [`error_comm`]), if one is live.
pub fn window_of(c: CommHandle) -> Option<WinHandle> {
    by_errs().iter().find(|(e, _)| *e == c).map(|(_, w)| *w)
}

/// Checks that `w` names a live window.
pub fn check(call: &str, w: WinHandle) -> Result<()> {
    entry(call, w).map(drop)
}

fn entry(call: &str, w: WinHandle) -> Result<Arc<Entry>> {
    super::env::runtime(call)?;
    WINS.get(w.0).ok_or_else(|| {
        Error::new(
            ErrorClass::Win,
            format!(
                "{call}: {:#x} is not a live window (null, freed, or never created)",
                w.0
            ),
        )
    })
}

/// The communicator id carrying `w`'s error handler (`MPI_COMM_WORLD`'s for an unknown `w`).
pub fn error_comm(w: WinHandle) -> CommHandle {
    WINS.get(w.0).map_or(CommHandle::WORLD, |e| e.errs)
}

fn create(
    call: &str,
    comm: CommHandle,
    flavor: Flavor,
    size: i64,
    disp_unit: i32,
    base: *mut u8,
) -> Result<WinHandle> {
    let c = super::comm::get(call, comm)?;
    let size = usize::try_from(size)
        .map_err(|_| Error::new(ErrorClass::Size, format!("{call}: size {size} is negative")))?;
    if disp_unit <= 0 {
        return Err(Error::new(
            ErrorClass::Disp,
            format!("{call}: displacement unit {disp_unit} is not positive"),
        ));
    }
    if flavor == Flavor::Create && size > 0 && base.is_null() {
        return Err(Error::new(
            ErrorClass::Base,
            format!("{call}: base is NULL with a size of {size}"),
        ));
    }
    let core = WinCore::new(&c, flavor, size, disp_unit as usize, base)?;
    let errs = super::comm::put_opt(call, Some(core.comm().clone()))?;
    super::errhandler::inherit(comm, errs);
    let w = WINS
        .insert(Arc::new(Entry {
            core,
            errs,
            freed: AtomicBool::new(false),
        }))
        .map(WinHandle)
        .ok_or_else(|| {
            Error::new(
                ErrorClass::Other,
                format!("{call}: too many windows are live"),
            )
        })?;
    by_errs().push((errs, w));
    Ok(w)
}

/// `MPI_Win_create` over `size` bytes at `base`, which the caller keeps valid until the
/// window is freed. Collective.
pub fn win_create(base: *mut u8, size: i64, disp_unit: i32, comm: CommHandle) -> Result<WinHandle> {
    create("win_create", comm, Flavor::Create, size, disp_unit, base)
}

/// `MPI_Win_allocate`: the window and the base of this process's `size` bytes. Collective.
pub fn win_allocate(size: i64, disp_unit: i32, comm: CommHandle) -> Result<(WinHandle, *mut u8)> {
    let w = create(
        "win_allocate",
        comm,
        Flavor::Allocate,
        size,
        disp_unit,
        std::ptr::null_mut(),
    )?;
    Ok((w, entry("win_allocate", w)?.core.local().0))
}

/// `MPI_Win_allocate_shared`. Collective.
pub fn win_allocate_shared(
    size: i64,
    disp_unit: i32,
    comm: CommHandle,
) -> Result<(WinHandle, *mut u8)> {
    let w = create(
        "win_allocate_shared",
        comm,
        Flavor::Shared,
        size,
        disp_unit,
        std::ptr::null_mut(),
    )?;
    Ok((w, entry("win_allocate_shared", w)?.core.local().0))
}

/// `MPI_Win_create_dynamic`. Collective.
pub fn win_create_dynamic(comm: CommHandle) -> Result<WinHandle> {
    create(
        "win_create_dynamic",
        comm,
        Flavor::Dynamic,
        0,
        1,
        std::ptr::null_mut(),
    )
}

/// `MPI_Win_free`: sets `w` to [`WinHandle::NULL`]. Collective.
pub fn win_free(w: &mut WinHandle) -> Result<()> {
    let e = entry("win_free", *w)?;
    e.core.free()?;
    e.freed.store(true, Ordering::Relaxed);
    forget_last(Some(*w));
    WINS.remove(w.0);
    super::errhandler::forget(e.errs);
    super::name::forget(e.errs);
    let mut errs = e.errs;
    // The private communicator goes with the window, and with it the window's attributes
    // (their delete callbacks run here, still naming the window).
    let freed = super::comm::comm_free(&mut errs);
    by_errs().retain(|(c, _)| *c != e.errs);
    *w = WinHandle::NULL;
    freed
}

/// `MPI_Win_shared_query`: size, displacement unit and local address of `rank`'s memory.
pub fn win_shared_query(w: WinHandle, rank: i32) -> Result<(i64, i32, *mut u8)> {
    let (p, size, unit) = entry("win_shared_query", w)?.core.shared_query(rank)?;
    Ok((size as i64, unit as i32, p))
}

/// `MPI_Win_attach`.
pub fn win_attach(w: WinHandle, base: *mut u8, size: i64) -> Result<()> {
    let size = usize::try_from(size).map_err(|_| {
        Error::new(
            ErrorClass::Size,
            format!("win_attach: size {size} is negative"),
        )
    })?;
    entry("win_attach", w)?.core.attach(base as u64, size)
}

/// `MPI_Win_detach`.
pub fn win_detach(w: WinHandle, base: *const u8) -> Result<()> {
    entry("win_detach", w)?.core.detach(base as u64)
}

/// The predefined attributes: base, size, displacement unit, flavor (1–4 as the standard
/// orders them: create, allocate, dynamic, shared) and memory model (unified).
#[derive(Debug, Clone, Copy)]
pub struct WinAttrs {
    /// `MPI_WIN_BASE`.
    pub base: *mut u8,
    /// `MPI_WIN_SIZE`.
    pub size: i64,
    /// `MPI_WIN_DISP_UNIT`.
    pub disp_unit: i32,
    /// `MPI_WIN_CREATE_FLAVOR`.
    pub flavor: Flavor,
}

/// `MPI_Win_get_attr` for the predefined keys.
pub fn win_attrs(w: WinHandle) -> Result<WinAttrs> {
    let e = entry("win_get_attr", w)?;
    let (base, size, unit) = e.core.local();
    Ok(WinAttrs {
        base,
        size: size as i64,
        disp_unit: unit as i32,
        flavor: e.core.flavor(),
    })
}

/// `MPI_Win_get_group`.
pub fn win_get_group(w: WinHandle) -> Result<super::group::GroupHandle> {
    super::group::put("win_get_group", entry("win_get_group", w)?.core.group())
}

/// One side of an operation: `count` elements of a datatype, for the C ABI (from ids) and the
/// Rust API (from views) alike.
pub(crate) struct Side {
    ty: std::borrow::Cow<'static, Type>,
    count: u64,
    /// Data bytes (the type's size times the count).
    len: usize,
}

impl Side {
    /// `count` elements of `ty`; [`ErrorClass::Count`] when their data bytes overflow.
    pub(crate) fn new(call: &str, ty: Type, count: u64) -> Result<Side> {
        Side::of(call, std::borrow::Cow::Owned(ty), count)
    }

    /// [`Side::new`] of a type that may be lent (a predefined one).
    #[inline(always)]
    fn of(call: &str, ty: std::borrow::Cow<'static, Type>, count: u64) -> Result<Side> {
        match count
            .checked_mul(ty.size())
            .and_then(|l| usize::try_from(l).ok())
        {
            Some(len) => Ok(Side { ty, count, len }),
            None => Err(count_overflows(call)),
        }
    }

    /// Whether the data is the `len` bytes at the buffer's address (no packing needed).
    #[inline]
    fn plain(&self) -> bool {
        self.len == 0 || (self.ty.is_contiguous() && self.ty.lb() == 0)
    }

    /// The contiguous pieces `(byte offset from the buffer's address, position in the packed
    /// stream, length)`.
    #[inline(always)]
    fn pieces(&self) -> Pieces {
        if self.plain() {
            return Pieces::One([(0, 0, self.len)]);
        }
        self.derived_pieces()
    }

    #[inline(never)]
    fn derived_pieces(&self) -> Pieces {
        let (runs, _) =
            crate::datatype::pack::pieces(&self.ty, self.count, 0, self.len as u64, usize::MAX);
        let mut pos = 0;
        Pieces::Many(
            runs.into_iter()
                .map(|(off, n)| {
                    let piece = (off, pos, n as usize);
                    pos += n as usize;
                    piece
                })
                .collect(),
        )
    }
}

#[cold]
#[inline(never)]
fn count_overflows(call: &str) -> Error {
    Error::new(ErrorClass::Count, format!("{call}: count × size overflows"))
}

/// A side's contiguous pieces (see [`Side::pieces`]): a plain side's one without a heap
/// allocation (one per call of a one-sided operation otherwise).
#[derive(Debug, PartialEq)]
enum Pieces {
    One([(i64, usize, usize); 1]),
    Many(Vec<(i64, usize, usize)>),
}

impl std::ops::Deref for Pieces {
    type Target = [(i64, usize, usize)];

    fn deref(&self) -> &Self::Target {
        match self {
            Pieces::One(p) => p,
            Pieces::Many(v) => v,
        }
    }
}

/// `count` elements of the committed datatype `dt`.
// Inlined, as are `Side::of`, `agree` and the pieces of a plain side, with their errors made
// out of line: a `Side` returned through memory was reloaded 16 bytes at a time over the
// 8-byte stores that wrote it, a failed store forward, three per C `MPI_Put`.
#[inline(always)]
fn side(call: &str, count: i64, dt: TypeHandle) -> Result<Side> {
    let ty = super::datatype::type_committed_lent(call, dt)?;
    let Ok(count) = u64::try_from(count) else {
        return Err(negative_count(call, count));
    };
    Side::of(call, ty, count)
}

/// The byte length of both sides and their type when they are the same count of the same
/// [`Plain`] type: the C calls' short path, which needs no [`Side`], agrees by construction
/// and has one piece. `None` sends the call down the general path, which reports any error.
#[inline(always)]
fn both_plain(
    ocount: i64,
    otype: TypeHandle,
    tcount: i64,
    ttype: TypeHandle,
) -> Option<(usize, Plain)> {
    if otype != ttype || ocount != tcount {
        return None;
    }
    let p = super::datatype::plain(otype)?;
    let len = u64::try_from(ocount).ok()?.checked_mul(p.size)?;
    Some((usize::try_from(len).ok()?, p))
}

#[cold]
#[inline(never)]
fn negative_count(call: &str, count: i64) -> Error {
    Error::new(
        ErrorClass::Count,
        format!("{call}: count {count} is negative"),
    )
}

/// Checks that two sides of one operation describe the same data: as many bytes
/// ([`ErrorClass::Count`]) and matching type signatures ([`ErrorClass::Type`]; `MPI_BYTE`
/// matches anything).
#[inline(always)]
fn agree(call: &str, o: &Side, t: &Side) -> Result<()> {
    if o.len != t.len {
        return Err(lengths_differ(call, o, t));
    }
    // The same type (a predefined one, lent from one table) the same number of times.
    if std::ptr::eq::<Type>(&*o.ty, &*t.ty) && o.count == t.count {
        return Ok(());
    }
    signatures_agree(call, o, t)
}

#[cold]
#[inline(never)]
fn lengths_differ(call: &str, o: &Side, t: &Side) -> Error {
    Error::new(
        ErrorClass::Count,
        format!(
            "{call}: the origin describes {} bytes, the target {}",
            o.len, t.len
        ),
    )
}

#[inline(never)]
fn signatures_agree(call: &str, o: &Side, t: &Side) -> Result<()> {
    o.ty.check_match(o.count, &t.ty, t.count)
        .map_err(|e| Error::new(ErrorClass::Type, format!("{call}: {}", e.message())))
}

/// The origin's data as one packed byte string: borrowed when it is plain.
///
/// # Safety
/// `p` valid for reads of the side's elements (null is `MPI_BOTTOM` for derived types).
#[inline(always)]
unsafe fn gather<'a>(call: &str, p: *const u8, o: &Side) -> Result<std::borrow::Cow<'a, [u8]>> {
    if o.plain() {
        // SAFETY: forwarded contract.
        return Ok(std::borrow::Cow::Borrowed(unsafe { src(call, p, o.len)? }));
    }
    // SAFETY: forwarded contract.
    unsafe { pack_side(p, o) }
}

/// [`gather`] of a side that is not plain.
///
/// # Safety
/// As [`gather`].
#[inline(never)]
unsafe fn pack_side<'a>(p: *const u8, o: &Side) -> Result<std::borrow::Cow<'a, [u8]>> {
    let mut v = vec![0u8; o.len];
    // SAFETY: the caller guarantees the elements are readable; `v` is a fresh buffer.
    unsafe { crate::datatype::pack::pack_raw(&o.ty, p, o.count, 0, &mut v) };
    Ok(std::borrow::Cow::Owned(v))
}

/// Runs `fill` on a packed buffer for the side at `p`, then scatters it there: straight into
/// the user's memory when the side is plain.
///
/// # Safety
/// `p` valid for writes of the side's elements (null is `MPI_BOTTOM` for derived types).
#[inline(always)]
unsafe fn scatter(
    call: &str,
    p: *mut u8,
    r: &Side,
    fill: impl FnOnce(&mut [u8]) -> Result<()>,
) -> Result<()> {
    if r.plain() {
        // SAFETY: forwarded contract.
        return fill(unsafe { dst(call, p, r.len)? });
    }
    let mut v = vec![0u8; r.len];
    fill(&mut v)?;
    // SAFETY: the caller guarantees the elements are writable; `v` is our own buffer.
    unsafe { crate::datatype::pack::unpack_raw(&r.ty, p, r.count, 0, &v) };
    Ok(())
}

/// The predefined type of an accumulate: the target's, which the origin's must share.
fn acc_base(call: &str, o: Option<&Side>, t: &Side) -> Result<Predefined> {
    let base = base_of(call, &t.ty)?;
    if let Some(o) = o.filter(|o| o.len > 0) {
        if base_of(call, &o.ty)? != base {
            return Err(Error::new(
                ErrorClass::Type,
                format!("{call}: the origin and target datatypes are built from different predefined types"),
            ));
        }
    }
    Ok(base)
}

fn base_of(call: &str, ty: &Type) -> Result<Predefined> {
    ty.base().ok_or_else(|| {
        Error::new(
            ErrorClass::Type,
            format!("{call}: accumulates need a datatype built from one predefined type"),
        )
    })
}

/// `len` bytes at `p` (empty for `len == 0`).
///
/// # Safety
/// `p` valid for reads of `len` bytes for `'a`.
#[inline(always)]
unsafe fn src<'a>(call: &str, p: *const u8, len: usize) -> Result<&'a [u8]> {
    if len == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(null_buffer(call, "origin"));
    }
    // SAFETY: non-null; valid for `len` reads by the caller's contract.
    Ok(unsafe { std::slice::from_raw_parts(p, len) })
}

#[cold]
#[inline(never)]
fn null_buffer(call: &str, which: &str) -> Error {
    Error::new(
        ErrorClass::Buffer,
        format!("{call}: the {which} buffer is NULL"),
    )
}

/// As [`src`], for writes.
///
/// # Safety
/// `p` valid for writes of `len` bytes for `'a` and not otherwise used.
#[inline(always)]
unsafe fn dst<'a>(call: &str, p: *mut u8, len: usize) -> Result<&'a mut [u8]> {
    if len == 0 {
        return Ok(&mut []);
    }
    if p.is_null() {
        return Err(null_buffer(call, "result"));
    }
    // SAFETY: non-null; valid for `len` writes by the caller's contract.
    Ok(unsafe { std::slice::from_raw_parts_mut(p, len) })
}

/// Where an operation lands: the target's rank, the displacement (in its units) and the
/// target side, walked as contiguous pieces, each range-checked on its own.
pub(crate) struct Remote<'t> {
    /// Rank in the window's group (or `PROC_NULL`).
    pub(crate) rank: i32,
    /// Displacement in the target's units (an address for dynamic windows).
    pub(crate) disp: i64,
    /// The target datatype and count.
    pub(crate) side: &'t Side,
}

impl Remote<'_> {
    /// The target side's pieces, all checked against the window first (epoch, range), so an
    /// operation that fails has moved nothing.
    #[inline(always)]
    fn pieces(&self, core: &WinCore, call: &str) -> Result<Pieces> {
        let pieces = self.side.pieces();
        if pieces.len() > 1 {
            for &(skew, _, n) in pieces.iter() {
                core.check_at(call, self.rank, self.disp, skew, n)?;
            }
        }
        Ok(pieces)
    }
}

/// `MPI_Put` of the origin side at `origin` on `core`: the body the C ABI's ids and the Rust
/// API's views share.
///
/// # Safety
/// `origin` valid for reads of `o`'s elements.
pub(crate) unsafe fn put_on(
    core: &WinCore,
    origin: *const u8,
    o: &Side,
    t: &Remote<'_>,
) -> Result<()> {
    agree("put", o, t.side)?;
    let pieces = t.pieces(core, "put")?;
    // SAFETY: forwarded contract.
    let data = unsafe { gather("put", origin, o)? };
    for &(skew, pos, n) in pieces.iter() {
        core.put_at(&data[pos..pos + n], t.rank, t.disp, skew)?;
    }
    Ok(())
}

/// `MPI_Get` into the origin side at `origin` on `core`.
///
/// # Safety
/// `origin` valid for writes of `o`'s elements and not otherwise used meanwhile.
pub(crate) unsafe fn get_on(
    core: &WinCore,
    origin: *mut u8,
    o: &Side,
    t: &Remote<'_>,
) -> Result<()> {
    agree("get", o, t.side)?;
    let pieces = t.pieces(core, "get")?;
    // SAFETY: forwarded contract.
    unsafe {
        scatter("get", origin, o, |buf| {
            for &(skew, pos, n) in pieces.iter() {
                core.get_at(&mut buf[pos..pos + n], t.rank, t.disp, skew)?;
            }
            Ok(())
        })
    }
}

/// `MPI_Accumulate` (`result` `None`) and `MPI_Get_accumulate` on `core`: each contiguous
/// piece of the target side is one element-wise atomic accumulate. `o` is `None` for
/// `MPI_NO_OP`, whose origin is not read.
///
/// # Safety
/// `origin` valid for reads of `o`'s elements; `result`'s pointer for writes of its side's
/// elements and not otherwise used meanwhile.
pub(crate) unsafe fn accumulate_on(
    core: &WinCore,
    call: &str,
    origin: (*const u8, Option<&Side>),
    result: Option<(*mut u8, &Side)>,
    t: &Remote<'_>,
    op: &Op,
) -> Result<()> {
    if let Some((_, r)) = result {
        agree(call, r, t.side)?;
    }
    let (origin, o) = origin;
    if let Some(o) = o {
        agree(call, o, t.side)?;
    }
    if t.side.len == 0 {
        // No element meets the operation, so its pairing with the datatype is not checked
        // (mpi4py accumulates zero bytes with SUM); the target and the epoch still are.
        return core.check_at(call, t.rank, t.disp, 0, 0);
    }
    let base = acc_base(call, o, t.side)?;
    let pieces = t.pieces(core, call)?;
    let data = match o {
        // SAFETY: forwarded contract.
        Some(o) => unsafe { gather(call, origin, o)? },
        None => std::borrow::Cow::Borrowed(&[][..]),
    };
    let each = |mut out: Option<&mut [u8]>| -> Result<()> {
        for &(skew, pos, n) in pieces.iter() {
            let from = if data.is_empty() {
                &[][..]
            } else {
                &data[pos..pos + n]
            };
            let into = out.as_deref_mut().map(|b| &mut b[pos..pos + n]);
            core.accumulate_at(call, from, into, t.rank, t.disp, skew, base, op)?;
        }
        Ok(())
    };
    match result {
        None => each(None),
        // SAFETY: forwarded contract.
        Some((p, r)) => unsafe { scatter(call, p, r, |out| each(Some(out))) },
    }
}

/// `MPI_Put`.
///
/// # Safety
/// `origin` valid for reads of `ocount` elements of `otype`.
#[allow(clippy::too_many_arguments)]
pub unsafe fn put(
    origin: *const u8,
    ocount: i64,
    otype: TypeHandle,
    target: i32,
    disp: i64,
    tcount: i64,
    ttype: TypeHandle,
    w: WinHandle,
) -> Result<()> {
    if let Some((len, _)) = both_plain(ocount, otype, tcount, ttype) {
        return with_entry("put", w, |e| {
            // SAFETY: forwarded contract.
            e.core
                .put_at(unsafe { src("put", origin, len)? }, target, disp, 0)
        });
    }
    with_entry("put", w, |e| {
        let o = side("put", ocount, otype)?;
        let t = side("put", tcount, ttype)?;
        let t = Remote {
            rank: target,
            disp,
            side: &t,
        };
        // SAFETY: forwarded contract.
        unsafe { put_on(&e.core, origin, &o, &t) }
    })
}

/// `MPI_Get`.
///
/// # Safety
/// `origin` valid for writes of `ocount` elements of `otype`.
#[allow(clippy::too_many_arguments)]
pub unsafe fn get(
    origin: *mut u8,
    ocount: i64,
    otype: TypeHandle,
    target: i32,
    disp: i64,
    tcount: i64,
    ttype: TypeHandle,
    w: WinHandle,
) -> Result<()> {
    if let Some((len, _)) = both_plain(ocount, otype, tcount, ttype) {
        return with_entry("get", w, |e| {
            // SAFETY: forwarded contract.
            e.core
                .get_at(unsafe { dst("get", origin, len)? }, target, disp, 0)
        });
    }
    with_entry("get", w, |e| {
        let o = side("get", ocount, otype)?;
        let t = side("get", tcount, ttype)?;
        let t = Remote {
            rank: target,
            disp,
            side: &t,
        };
        // SAFETY: forwarded contract.
        unsafe { get_on(&e.core, origin, &o, &t) }
    })
}

/// `MPI_Accumulate`.
///
/// # Safety
/// `origin` valid for reads of `ocount` elements of `otype`.
#[allow(clippy::too_many_arguments)]
pub unsafe fn accumulate(
    origin: *const u8,
    ocount: i64,
    otype: TypeHandle,
    target: i32,
    disp: i64,
    tcount: i64,
    ttype: TypeHandle,
    op: &Op,
    w: WinHandle,
) -> Result<()> {
    let call = "accumulate";
    if let Some((
        len @ 1..,
        Plain {
            base: Some(base), ..
        },
    )) = both_plain(ocount, otype, tcount, ttype)
    {
        return with_entry(call, w, |e| {
            // SAFETY: forwarded contract.
            let data = unsafe { src(call, origin, len)? };
            e.core
                .accumulate_at(call, data, None, target, disp, 0, base, op)
        });
    }
    with_entry(call, w, |e| {
        let o = side(call, ocount, otype)?;
        let t = side(call, tcount, ttype)?;
        let t = Remote {
            rank: target,
            disp,
            side: &t,
        };
        // SAFETY: forwarded contract.
        unsafe { accumulate_on(&e.core, call, (origin, Some(&o)), None, &t, op) }
    })
}

/// `MPI_Get_accumulate` (and `MPI_Fetch_and_op` with counts of 1). With `MPI_NO_OP` the
/// origin is not read and may be null.
///
/// # Safety
/// `origin` valid for reads of `ocount` elements of `otype` (unless the op is `NO_OP`),
/// `result` for writes of `rcount` elements of `rtype`.
#[allow(clippy::too_many_arguments)]
pub unsafe fn get_accumulate(
    call: &str,
    origin: *const u8,
    ocount: i64,
    otype: TypeHandle,
    result: *mut u8,
    rcount: i64,
    rtype: TypeHandle,
    target: i32,
    disp: i64,
    tcount: i64,
    ttype: TypeHandle,
    op: &Op,
    w: WinHandle,
) -> Result<()> {
    let no_op = matches!(op, Op::NoOp);
    if let Some((
        len @ 1..,
        Plain {
            base: Some(base), ..
        },
    )) = both_plain(rcount, rtype, tcount, ttype)
    {
        if no_op || (otype == ttype && ocount == tcount) {
            return with_entry(call, w, |e| {
                // SAFETY: forwarded contract (the origin is not read for `MPI_NO_OP`).
                let (data, out) = unsafe {
                    let data = if no_op {
                        &[][..]
                    } else {
                        src(call, origin, len)?
                    };
                    (data, dst(call, result, len)?)
                };
                e.core
                    .accumulate_at(call, data, Some(out), target, disp, 0, base, op)
            });
        }
    }
    with_entry(call, w, |e| {
        let r = side(call, rcount, rtype)?;
        let t = side(call, tcount, ttype)?;
        agree(call, &r, &t)?;
        let o = if no_op {
            None
        } else {
            Some(side(call, ocount, otype)?)
        };
        let t = Remote {
            rank: target,
            disp,
            side: &t,
        };
        // SAFETY: forwarded contract.
        unsafe {
            accumulate_on(
                &e.core,
                call,
                (origin, o.as_ref()),
                Some((result, &r)),
                &t,
                op,
            )
        }
    })
}

/// `MPI_Compare_and_swap` on one element of the predefined type `dt`.
///
/// # Safety
/// `origin` and `compare` valid for reads of one element, `result` for a write of one.
pub unsafe fn compare_and_swap(
    origin: *const u8,
    compare: *const u8,
    result: *mut u8,
    dt: TypeHandle,
    target: i32,
    disp: i64,
    w: WinHandle,
) -> Result<()> {
    let call = "compare_and_swap";
    with_entry(call, w, |e| {
        let one = side(call, 1, dt)?;
        let base = base_of(call, &one.ty)?;
        if !one.plain() || one.len != base.info().extent {
            return Err(Error::new(
                ErrorClass::Type,
                format!("{call}: compare-and-swap takes one element of a predefined type"),
            ));
        }
        let len = one.len;
        // SAFETY: forwarded contract.
        let (o, c, r) = unsafe {
            (
                src(call, origin, len)?,
                src(call, compare, len)?,
                dst(call, result, len)?,
            )
        };
        e.core.compare_and_swap(o, c, r, target, disp, base)
    })
}

/// A request that is already complete, for `MPI_Rput` and friends: every operation is
/// complete when its call returns.
pub fn completed_request() -> Result<RequestId> {
    let rt = super::env::runtime("rput")?;
    Ok(super::request::completed(rt))
}

/// `MPI_Win_fence`.
pub fn win_fence(assert: i32, w: WinHandle) -> Result<()> {
    entry("win_fence", w)?.core.fence(assert)
}

fn group_ranks(call: &str, w: &Entry, g: super::group::GroupHandle) -> Result<Vec<i32>> {
    let group = super::group::get(call, g)?;
    let mine = w.core.group();
    let all: Vec<i32> = (0..group.size()).collect();
    group
        .translate_ranks(&all, &mine)?
        .into_iter()
        .map(|r| {
            r.ok_or_else(|| {
                Error::new(
                    ErrorClass::Group,
                    format!("{call}: the group has a process outside the window's group"),
                )
            })
        })
        .collect()
}

/// `MPI_Win_post`.
pub fn win_post(g: super::group::GroupHandle, assert: i32, w: WinHandle) -> Result<()> {
    let e = entry("win_post", w)?;
    let ranks = group_ranks("win_post", &e, g)?;
    e.core.post(&ranks, assert)
}

/// `MPI_Win_start`.
pub fn win_start(g: super::group::GroupHandle, assert: i32, w: WinHandle) -> Result<()> {
    let e = entry("win_start", w)?;
    let ranks = group_ranks("win_start", &e, g)?;
    e.core.start(&ranks, assert)
}

/// `MPI_Win_complete`.
pub fn win_complete(w: WinHandle) -> Result<()> {
    entry("win_complete", w)?.core.complete()
}

/// `MPI_Win_wait`.
pub fn win_wait(w: WinHandle) -> Result<()> {
    entry("win_wait", w)?.core.wait()
}

/// `MPI_Win_test`.
pub fn win_test(w: WinHandle) -> Result<bool> {
    entry("win_test", w)?.core.test()
}

/// `MPI_Win_lock` with the standard's lock type values (`MPI_LOCK_EXCLUSIVE` 301,
/// `MPI_LOCK_SHARED` 302).
pub fn win_lock(lock_type: i32, rank: i32, assert: i32, w: WinHandle) -> Result<()> {
    let kind = match lock_type {
        301 => LockType::Exclusive,
        302 => LockType::Shared,
        other => {
            return Err(Error::new(
                ErrorClass::Locktype,
                format!("win_lock: {other} is not MPI_LOCK_EXCLUSIVE or MPI_LOCK_SHARED"),
            ))
        }
    };
    entry("win_lock", w)?.core.lock(kind, rank, assert)
}

/// `MPI_Win_unlock`.
pub fn win_unlock(rank: i32, w: WinHandle) -> Result<()> {
    entry("win_unlock", w)?.core.unlock(rank)
}

/// `MPI_Win_lock_all`.
pub fn win_lock_all(assert: i32, w: WinHandle) -> Result<()> {
    entry("win_lock_all", w)?.core.lock_all(assert)
}

/// `MPI_Win_unlock_all`.
pub fn win_unlock_all(w: WinHandle) -> Result<()> {
    entry("win_unlock_all", w)?.core.unlock_all()
}

/// `MPI_Win_flush`, `MPI_Win_flush_local` (`rank`) and their `_all` forms (`None`).
pub fn win_flush(call: &str, rank: Option<i32>, w: WinHandle) -> Result<()> {
    with_entry(call, w, |e| e.core.flush(call, rank))
}

/// `MPI_Win_sync`.
pub fn win_sync(w: WinHandle) -> Result<()> {
    entry("win_sync", w)?.core.sync();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn i64s() -> Type {
        Type::of::<i64>()
    }

    #[test]
    fn sides_must_agree_in_bytes_and_type_signature() {
        let every_other = Type::vector(4, 1, 2, &i64s()).unwrap();
        let t = Side::new("t", every_other, 1).unwrap();
        assert!(agree("t", &Side::new("t", i64s(), 4).unwrap(), &t).is_ok());
        let doubles = Side::new("t", Type::of::<f64>(), 4).unwrap();
        assert_eq!(
            agree("t", &doubles, &t).unwrap_err().class(),
            ErrorClass::Type
        );
        let short = Side::new("t", i64s(), 3).unwrap();
        assert_eq!(
            agree("t", &short, &t).unwrap_err().class(),
            ErrorClass::Count
        );
        let bytes = Side::new("t", Type::predefined(Predefined::BYTE), 32).unwrap();
        assert!(agree("t", &bytes, &t).is_ok(), "MPI_BYTE matches anything");
    }

    #[test]
    fn a_side_whose_bytes_overflow_is_a_count_error() {
        let big = Type::contiguous(1 << 20, &i64s()).unwrap();
        let e = Side::new("t", big, u64::MAX / 2).err().unwrap();
        assert_eq!(e.class(), ErrorClass::Count);
    }

    /// The pieces, expanded to bytes, are the type map's bytes in packed order (checked
    /// against the block list, for copies placed one extent apart).
    #[test]
    fn pieces_are_the_type_map_in_packed_order() {
        let blocks = [(1usize, 2usize), (4, 1), (7, 3)];
        let (lens, displs): (Vec<i64>, Vec<i64>) =
            blocks.iter().map(|&(d, l)| (l as i64, d as i64)).unzip();
        let ty = Type::indexed(&lens, &displs, &i64s()).unwrap();
        let extent = 10 - 1;
        for count in 0..4u64 {
            let want: Vec<i64> = (0..count as usize)
                .flat_map(|k| {
                    blocks.iter().flat_map(move |&(d, l)| {
                        (8 * (k * extent + d)..8 * (k * extent + d + l)).map(|b| b as i64)
                    })
                })
                .collect();
            let side = Side::new("t", ty.clone(), count).unwrap();
            let mut got = Vec::new();
            for &(off, pos, n) in side.pieces().iter() {
                assert_eq!(
                    pos,
                    got.len(),
                    "pieces are consecutive in the packed stream"
                );
                got.extend(off..off + n as i64);
            }
            assert_eq!(got, want, "count {count}");
        }
        let plain = Side::new("t", i64s(), 4).unwrap();
        assert_eq!(plain.pieces(), Pieces::One([(0, 0, 32)]));
    }

    /// The short path takes the same count of the same gapless predefined type on both
    /// sides and nothing else: every other pairing (and every error) is the general path's.
    #[test]
    fn only_equal_sides_of_one_plain_type_take_the_short_path() {
        let int = TypeHandle::of(Predefined::INT32_T);
        let dbl = TypeHandle::of(Predefined::DOUBLE);
        let (len, p) = both_plain(3, int, 3, int).unwrap();
        assert_eq!((len, p.size, p.base), (12, 4, Some(Predefined::INT32_T)));
        assert_eq!(both_plain(0, dbl, 0, dbl).map(|(l, _)| l), Some(0));
        assert!(both_plain(3, int, 3, dbl).is_none(), "different types");
        assert!(both_plain(3, int, 2, int).is_none(), "different counts");
        assert!(both_plain(-1, int, -1, int).is_none(), "negative count");
        assert!(
            both_plain(i64::MAX, dbl, i64::MAX, dbl).is_none(),
            "bytes overflow"
        );
        // A pair type has a gap between its value and its index.
        let pair = TypeHandle::of(Predefined::DOUBLE_INT);
        assert!(both_plain(1, pair, 1, pair).is_none());
        // Every predefined type's answer is its type's own.
        for info in crate::datatype::predefined::ALL {
            let Some(p) = Predefined::from_handle(info.handle as u32) else {
                continue;
            };
            let ty = Type::predefined(p);
            let want =
                (ty.is_contiguous() && ty.lb() == 0).then(|| (ty.size() as usize, ty.base()));
            let got =
                both_plain(1, TypeHandle::of(p), 1, TypeHandle::of(p)).map(|(l, p)| (l, p.base));
            assert_eq!(got, want, "{}", info.name);
        }
    }
}
