//! One-sided communication: windows (`MPI_Win`) and the operations on them.
//!
//! ```no_run
//! # use oxmpi::window::LockType;
//! let universe = oxmpi::init()?;
//! let world = universe.world();
//! let win = world.window_allocate::<u64>(1)?;
//! win.lock(LockType::Shared, 0, 0)?;
//! let before = win.fetch_and_op(&1u64, 0, 0, &oxmpi::Op::Sum)?; // a shared counter
//! win.unlock(0)?;
//! win.free()?;
//! # let _ = before;
//! # Ok::<(), oxmpi::Error>(())
//! ```
//!
//! Within a host every operation is complete when its call returns (memory is reached by
//! loads and stores or one cross-process copy), so flushes are cheap; epochs are still checked
//! ([`ErrorClass::RmaSync`] outside one, [`ErrorClass::RmaRange`] outside the window).
//! Windows spanning several hosts are refused with [`ErrorClass::UnsupportedOperation`].
//!
//! Derived datatypes: a [`View`]/[`ViewMut`] on the origin side and a [`TargetView`] on the
//! target side ([`Window::put_view`] and friends). The request forms ([`Window::rput`] …,
//! [`Window::rput_view`] …) return a [`Request`] of a scope that borrows the buffers as an
//! immediate send does; it is complete when returned, since the operation is.
//!
//! # Standard sections
//! MPI-5.0 chapter 12 (one-sided communications).

use std::marker::PhantomData;

use crate::comm::{Comm, Communicator};
use crate::datatype::predefined::Predefined;
use crate::datatype::{Equivalence, Type};
use crate::error::{Error, ErrorClass, Result};
use crate::group::Group;
use crate::handle::win::{accumulate_on, get_on, put_on, Remote, Side};
use crate::op::{Op, Reducible};
use crate::p2p::engine::RecvStart;
use crate::point_to_point::{View, ViewMut};
use crate::request::{Request, Scope, Status};
use crate::rma::WinCore;
use crate::threading::{Single, ThreadLevel};

pub use crate::rma::{mode, Flavor, LockType};

/// A window: memory of every member of a communicator that the others read and write with
/// one-sided operations. `'a` is the lifetime of memory the user lent it ([`create`],
/// [`attach`]). Free it with [`free`](Window::free) (collective); dropping it frees it too.
///
/// [`create`]: Communicator::window_create
/// [`attach`]: Window::attach
pub struct Window<'a, L: ThreadLevel = Single> {
    core: WinCore,
    freed: bool,
    /// The predefined base type of each element type used in accumulates, so a counter's
    /// `fetch_and_op` does not build a datatype per call.
    bases: std::sync::Mutex<Vec<(std::any::TypeId, Predefined)>>,
    /// The first entry of `bases`, read without its mutex.
    first_base: std::sync::OnceLock<(std::any::TypeId, Predefined)>,
    _mem: PhantomData<&'a mut [u8]>,
    _level: L::Marker,
}

impl<L: ThreadLevel> std::fmt::Debug for Window<'_, L> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.core.fmt(f)
    }
}

/// Where a member's memory of a shared window is mapped in this process
/// ([`Window::shared_query`]).
#[derive(Debug, Clone, Copy)]
pub struct SharedRegion {
    /// Start of the member's memory, valid while the window lives; null when the memory is
    /// not mapped here (a window over memory MPI did not allocate).
    pub ptr: *mut u8,
    /// Its size in bytes (0 when not mapped here).
    pub size: usize,
    /// Its displacement unit.
    pub disp_unit: usize,
}

fn comm_of<L: ThreadLevel>(c: &Communicator<L>) -> Comm {
    Comm {
        rt: c.rt.clone(),
        state: c.state.clone(),
    }
}

fn bytes_for<T>(call: &str, len: usize) -> Result<usize> {
    len.checked_mul(std::mem::size_of::<T>())
        .ok_or_else(|| Error::new(ErrorClass::Size, format!("{call}: {len} elements overflow")))
}

/// Data bytes of `count` elements of `ty` (a view's, checked when it was made).
fn view_bytes(ty: &Type, count: u64) -> usize {
    (ty.size() * count) as usize
}

/// The predefined type a reduction applies to, element by element.
fn base_of<T: Equivalence>(call: &str) -> Result<Predefined> {
    T::equivalent_datatype().base().ok_or_else(|| {
        Error::new(
            ErrorClass::Type,
            format!("{call}: the element type is not built from one predefined type"),
        )
    })
}

/// What an operation reaches in a target's window: `count` elements of a datatype laid out
/// from displacement `disp` (in the target's displacement units; an address for dynamic
/// windows) of member `rank`. Every contiguous piece of the type map must lie inside the
/// target's window ([`ErrorClass::RmaRange`] otherwise); gaps are never touched.
#[derive(Debug, Clone)]
pub struct TargetView {
    rank: i32,
    disp: i64,
    ty: Type,
    count: u64,
}

impl TargetView {
    /// `count` elements of `ty` at displacement `disp` of member `rank`.
    pub fn new(rank: i32, disp: i64, ty: &Type, count: u64) -> TargetView {
        TargetView {
            rank,
            disp,
            ty: ty.clone(),
            count,
        }
    }

    /// `count` values of `T` through their own datatype (the padding of a
    /// `#[derive(Equivalence)]` struct is not written).
    pub fn of<T: crate::datatype::Datatyped>(rank: i32, disp: i64, count: u64) -> TargetView {
        TargetView {
            rank,
            disp,
            ty: T::datatype(),
            count,
        }
    }

    fn side(&self, call: &str) -> Result<Side> {
        Side::new(call, self.ty.clone(), self.count)
    }

    fn remote<'t>(&self, side: &'t Side) -> Remote<'t> {
        Remote {
            rank: self.rank,
            disp: self.disp,
            side,
        }
    }
}

impl<L: ThreadLevel> Communicator<L> {
    fn window(&self, flavor: Flavor, size: usize, unit: usize, base: *mut u8) -> Result<WinCore> {
        WinCore::new(&comm_of(self), flavor, size, unit.max(1), base)
    }

    /// `MPI_Win_allocate`: a window of `len` zeroed values of `T` per process (each may pass
    /// its own `len`); displacements count values of `T`. Collective.
    pub fn window_allocate<T: Equivalence>(&self, len: usize) -> Result<Window<'static, L>> {
        let size = bytes_for::<T>("win_allocate", len)?;
        let core = self.window(
            Flavor::Allocate,
            size,
            std::mem::size_of::<T>(),
            std::ptr::null_mut(),
        )?;
        Ok(Window::wrap(core))
    }

    /// `MPI_Win_allocate_shared`: like [`window_allocate`](Self::window_allocate), with the
    /// members' memory contiguous and loadable by every member
    /// ([`shared_query`](Window::shared_query)). Collective.
    pub fn window_allocate_shared<T: Equivalence>(&self, len: usize) -> Result<Window<'static, L>> {
        let size = bytes_for::<T>("win_allocate_shared", len)?;
        let core = self.window(
            Flavor::Shared,
            size,
            std::mem::size_of::<T>(),
            std::ptr::null_mut(),
        )?;
        Ok(Window::wrap(core))
    }

    /// `MPI_Win_create`: a window over `memory`, which the window borrows until it is freed;
    /// displacements count values of `T`. Collective.
    pub fn window_create<'a, T: Equivalence>(&self, memory: &'a mut [T]) -> Result<Window<'a, L>> {
        let size = std::mem::size_of_val(memory);
        let core = self.window(
            Flavor::Create,
            size,
            std::mem::size_of::<T>(),
            memory.as_mut_ptr().cast(),
        )?;
        Ok(Window::wrap(core))
    }

    /// `MPI_Win_create_dynamic`: a window without memory; members [`attach`](Window::attach)
    /// memory and targets address it by absolute address ([`Window::address_of`]).
    /// Collective.
    pub fn window_create_dynamic<'a>(&self) -> Result<Window<'a, L>> {
        let core = self.window(Flavor::Dynamic, 0, 1, std::ptr::null_mut())?;
        Ok(Window::wrap(core))
    }
}

impl<'a, L: ThreadLevel> Window<'a, L> {
    fn wrap(core: WinCore) -> Self {
        Window {
            core,
            freed: false,
            bases: std::sync::Mutex::new(Vec::new()),
            first_base: std::sync::OnceLock::new(),
            _mem: PhantomData,
            _level: L::Marker::default(),
        }
    }

    /// This process's rank in the window's group.
    pub fn rank(&self) -> i32 {
        self.core.rank() as i32
    }

    /// Number of members.
    pub fn size(&self) -> i32 {
        self.core.size() as i32
    }

    /// `MPI_Win_get_group`.
    pub fn group(&self) -> Group {
        self.core.group()
    }

    /// `MPI_WIN_CREATE_FLAVOR`.
    pub fn flavor(&self) -> Flavor {
        self.core.flavor()
    }

    /// `MPI_WIN_BASE`: start of this process's window memory (null for dynamic windows).
    pub fn base(&self) -> *mut u8 {
        self.core.local().0
    }

    /// `MPI_WIN_SIZE`: this process's window size in bytes.
    pub fn size_bytes(&self) -> usize {
        self.core.local().1
    }

    /// `MPI_WIN_DISP_UNIT`.
    pub fn disp_unit(&self) -> usize {
        self.core.local().2
    }

    /// This process's window memory as values of `T`, for local loads between epochs.
    /// [`ErrorClass::Type`] if the memory is not whole, aligned values of `T`.
    pub fn local<T: Equivalence>(&self) -> Result<&[T]> {
        let (p, len, _) = self.core.local();
        if p.is_null() || len == 0 {
            return Ok(&[]);
        }
        // SAFETY: `len` bytes at `p` are this process's window memory, alive while `self`
        // is; peers may store into it concurrently only when the program breaks the
        // standard's epoch rules.
        let bytes = unsafe { std::slice::from_raw_parts(p, len) };
        bytemuck::try_cast_slice(bytes)
            .map_err(|e| Error::new(ErrorClass::Type, format!("window memory as values: {e}")))
    }

    /// This process's window memory as values of `T`, for local stores between epochs.
    pub fn local_mut<T: Equivalence>(&mut self) -> Result<&mut [T]> {
        let (p, len, _) = self.core.local();
        if p.is_null() || len == 0 {
            return Ok(&mut []);
        }
        // SAFETY: as in `local`; `&mut self` makes the access exclusive in this process.
        let bytes = unsafe { std::slice::from_raw_parts_mut(p, len) };
        bytemuck::try_cast_slice_mut(bytes)
            .map_err(|e| Error::new(ErrorClass::Type, format!("window memory as values: {e}")))
    }

    /// `MPI_Win_shared_query`: where member `rank`'s memory is mapped here (`PROC_NULL`: the
    /// first member with memory). For `create` and dynamic windows, whose memory MPI did not
    /// allocate, a null region of size 0.
    pub fn shared_query(&self, rank: i32) -> Result<SharedRegion> {
        let (ptr, size, disp_unit) = self.core.shared_query(rank)?;
        Ok(SharedRegion {
            ptr,
            size,
            disp_unit,
        })
    }

    /// `MPI_Win_attach`: makes `memory` reachable in this dynamic window until
    /// [`detach`](Self::detach); returns its address, which targets use as displacement.
    pub fn attach<T: Equivalence>(&mut self, memory: &'a mut [T]) -> Result<i64> {
        let addr = memory.as_mut_ptr() as u64;
        self.core.attach(addr, std::mem::size_of_val(memory))?;
        Ok(addr as i64)
    }

    /// `MPI_Win_detach` of memory attached at `address`.
    pub fn detach(&mut self, address: i64) -> Result<()> {
        self.core.detach(address as u64)
    }

    /// Whether memory is attached at `address` here.
    pub fn is_attached(&self, address: i64) -> bool {
        self.core.attached(address as u64)
    }

    /// The address of `value` (`MPI_Get_address`), for dynamic-window displacements.
    pub fn address_of<T>(value: &T) -> i64 {
        value as *const T as i64
    }

    fn elem_base<T: Equivalence>(&self, call: &str) -> Result<Predefined> {
        let id = std::any::TypeId::of::<T>();
        // The first element type used, without the mutex: a window nearly always
        // accumulates one type, and a lock per operation showed in a small accumulate.
        if let Some(&(t, p)) = self.first_base.get() {
            if t == id {
                return Ok(p);
            }
        }
        let mut bases = self.bases.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(&(_, p)) = bases.iter().find(|(t, _)| *t == id) {
            return Ok(p);
        }
        let p = base_of::<T>(call)?;
        bases.push((id, p));
        let _ = self.first_base.set((id, p));
        Ok(p)
    }

    /// `MPI_Put`: `origin` to `target`'s window at displacement `disp` (in its units).
    pub fn put<T: Equivalence>(&self, origin: &[T], target: i32, disp: i64) -> Result<()> {
        self.core.put(bytemuck::cast_slice(origin), target, disp)
    }

    /// `MPI_Get`: fills `origin` from `target`'s window at displacement `disp`.
    pub fn get<T: Equivalence>(&self, origin: &mut [T], target: i32, disp: i64) -> Result<()> {
        self.core
            .get(bytemuck::cast_slice_mut(origin), target, disp)
    }

    /// `MPI_Accumulate`: `target[disp + i] = target[disp + i] ∘ origin[i]`, atomic per element.
    /// Predefined operations only ([`ErrorClass::Op`] for user ones).
    pub fn accumulate<T: Reducible>(
        &self,
        origin: &[T],
        target: i32,
        disp: i64,
        op: &Op,
    ) -> Result<()> {
        let base = self.elem_base::<T>("accumulate")?;
        self.core.accumulate(
            "accumulate",
            bytemuck::cast_slice(origin),
            None,
            target,
            disp,
            base,
            op,
        )
    }

    /// `MPI_Get_accumulate`: [`accumulate`](Self::accumulate), returning the old values in
    /// `result`.
    pub fn get_accumulate<T: Reducible>(
        &self,
        origin: &[T],
        result: &mut [T],
        target: i32,
        disp: i64,
        op: &Op,
    ) -> Result<()> {
        let base = self.elem_base::<T>("get_accumulate")?;
        self.core.accumulate(
            "get_accumulate",
            bytemuck::cast_slice(origin),
            Some(bytemuck::cast_slice_mut(result)),
            target,
            disp,
            base,
            op,
        )
    }

    /// `MPI_Fetch_and_op` on one value: returns the old value.
    pub fn fetch_and_op<T: Reducible>(
        &self,
        origin: &T,
        target: i32,
        disp: i64,
        op: &Op,
    ) -> Result<T> {
        let mut old = T::zeroed();
        let base = self.elem_base::<T>("fetch_and_op")?;
        self.core.accumulate(
            "fetch_and_op",
            bytemuck::bytes_of(origin),
            Some(bytemuck::bytes_of_mut(&mut old)),
            target,
            disp,
            base,
            op,
        )?;
        Ok(old)
    }

    /// `MPI_Compare_and_swap`: stores `origin` if the target value equals `compare`;
    /// returns the old value either way.
    pub fn compare_and_swap<T: Equivalence>(
        &self,
        origin: &T,
        compare: &T,
        target: i32,
        disp: i64,
    ) -> Result<T> {
        let mut old = T::zeroed();
        let base = self.elem_base::<T>("compare_and_swap")?;
        self.core.compare_and_swap(
            bytemuck::bytes_of(origin),
            bytemuck::bytes_of(compare),
            bytemuck::bytes_of_mut(&mut old),
            target,
            disp,
            base,
        )?;
        Ok(old)
    }

    /// `MPI_Put` through datatypes: the elements `origin` shows to the elements `target`
    /// describes. Both must hold the same data: as many bytes ([`ErrorClass::Count`]) and
    /// matching type signatures ([`ErrorClass::Type`]).
    ///
    /// ```no_run
    /// # use oxmpi::datatype::Type;
    /// # use oxmpi::point_to_point::View;
    /// # use oxmpi::window::TargetView;
    /// let universe = oxmpi::init()?;
    /// let world = universe.world();
    /// let win = world.window_allocate::<f64>(8)?;
    /// // Four contiguous doubles into every other double of rank 0's window.
    /// let every_other = Type::vector(4, 1, 2, &Type::of::<f64>())?;
    /// let data = [1.0f64, 2.0, 3.0, 4.0];
    /// win.fence(0)?;
    /// win.put_view(&View::of(&data), &TargetView::new(0, 0, &every_other, 1))?;
    /// win.fence(0)?;
    /// # Ok::<(), oxmpi::Error>(())
    /// ```
    pub fn put_view(&self, origin: &View<'_>, target: &TargetView) -> Result<()> {
        let (p, ty, count) = origin.parts();
        let o = Side::new("put", ty.clone(), count)?;
        let t = target.side("put")?;
        // SAFETY: the view's elements lie in the buffer it borrows (checked when it was made,
        // or `Datatyped`'s contract), readable while `origin` lives.
        unsafe { put_on(&self.core, p, &o, &target.remote(&t)) }
    }

    /// `MPI_Get` through datatypes: fills the elements `origin` shows from the elements
    /// `target` describes (bytes outside `origin`'s type map are left untouched). Errors as
    /// [`put_view`](Self::put_view).
    pub fn get_view(&self, origin: &mut ViewMut<'_>, target: &TargetView) -> Result<()> {
        let (p, ty, count) = origin.parts();
        let o = Side::new("get", ty.clone(), count)?;
        let t = target.side("get")?;
        // SAFETY: the view's elements lie in the buffer it borrows exclusively (checked when
        // it was made, or `Datatyped`'s contract), writable while `origin` lives.
        unsafe { get_on(&self.core, p, &o, &target.remote(&t)) }
    }

    /// `MPI_Accumulate` through datatypes: each element `target` describes is combined with
    /// the matching element `origin` shows, atomically per element. Both types must be built
    /// from one and the same predefined type ([`ErrorClass::Type`]).
    pub fn accumulate_view(&self, origin: &View<'_>, target: &TargetView, op: &Op) -> Result<()> {
        let call = "accumulate";
        let (p, ty, count) = origin.parts();
        let o = Side::new(call, ty.clone(), count)?;
        let t = target.side(call)?;
        // SAFETY: as in `put_view`.
        unsafe {
            accumulate_on(
                &self.core,
                call,
                (p, Some(&o)),
                None,
                &target.remote(&t),
                op,
            )
        }
    }

    /// `MPI_Get_accumulate` through datatypes: [`accumulate_view`](Self::accumulate_view),
    /// with the old target values into the elements `result` shows. With [`Op::NoOp`] the
    /// origin is not read (an empty view will do).
    pub fn get_accumulate_view(
        &self,
        origin: &View<'_>,
        result: &mut ViewMut<'_>,
        target: &TargetView,
        op: &Op,
    ) -> Result<()> {
        let call = "get_accumulate";
        let (p, ty, count) = origin.parts();
        let o = if matches!(op, Op::NoOp) {
            None
        } else {
            Some(Side::new(call, ty.clone(), count)?)
        };
        let (rp, rty, rcount) = result.parts();
        let r = Side::new(call, rty.clone(), rcount)?;
        let t = target.side(call)?;
        // SAFETY: as in `put_view` for `origin` and `get_view` for `result`; the two views
        // cannot overlap (one is a shared borrow, the other an exclusive one).
        unsafe {
            accumulate_on(
                &self.core,
                call,
                (p, o.as_ref()),
                Some((rp, &r)),
                &target.remote(&t),
                op,
            )
        }
    }

    /// The request of an operation that completed in its call (see the module docs): the
    /// standard's local completion holds at once, and its wait or test returns at once.
    fn done<'b, 's>(&self, scope: &'s Scope<'b>, bytes: usize, elem: usize) -> Request<'b, 's> {
        let st = Status {
            bytes: bytes as u64,
            ..Status::default()
        };
        Request::new(&self.core.comm().rt, RecvStart::Done(st), elem, scope)
    }

    /// `MPI_Rput`: [`put`](Self::put) as a request of `scope`. Like an immediate send's
    /// buffer, `origin` stays borrowed until the scope ends, so it cannot be freed or changed
    /// while the operation may still read it. Errors are returned at the call.
    ///
    /// ```no_run
    /// let universe = oxmpi::init()?;
    /// let world = universe.world();
    /// let win = world.window_allocate::<u64>(4)?;
    /// let data = vec![1u64; 4];
    /// win.lock(oxmpi::LockType::Shared, 0, 0)?;
    /// oxmpi::scope(|scope| -> oxmpi::Result<()> {
    ///     let r = win.rput(scope, &data, 0, 0)?;
    ///     r.wait()?;
    ///     Ok(())
    /// })?;
    /// win.unlock(0)?;
    /// # Ok::<(), oxmpi::Error>(())
    /// ```
    /// The buffer cannot be dropped while its request lives:
    /// ```compile_fail
    /// let universe = oxmpi::init().unwrap();
    /// let world = universe.world();
    /// let win = world.window_allocate::<u64>(4).unwrap();
    /// let data = vec![1u64; 4];
    /// win.lock(oxmpi::LockType::Shared, 0, 0).unwrap();
    /// oxmpi::scope(|scope| -> oxmpi::Result<()> {
    ///     let r = win.rput(scope, &data, 0, 0)?;
    ///     drop(data); // error: `data` is borrowed for the request's scope
    ///     r.wait()?;
    ///     Ok(())
    /// }).unwrap();
    /// ```
    pub fn rput<'b, 's, T: Equivalence>(
        &self,
        scope: &'s Scope<'b>,
        origin: &'b [T],
        target: i32,
        disp: i64,
    ) -> Result<Request<'b, 's>> {
        self.put(origin, target, disp)?;
        Ok(self.done(
            scope,
            std::mem::size_of_val(origin),
            std::mem::size_of::<T>(),
        ))
    }

    /// `MPI_Rget`: [`get`](Self::get) as a request of `scope`, `origin` borrowed until the
    /// scope ends; the data is there once the request completes.
    pub fn rget<'b, 's, T: Equivalence>(
        &self,
        scope: &'s Scope<'b>,
        origin: &'b mut [T],
        target: i32,
        disp: i64,
    ) -> Result<Request<'b, 's>> {
        self.get(origin, target, disp)?;
        Ok(self.done(
            scope,
            std::mem::size_of_val(origin),
            std::mem::size_of::<T>(),
        ))
    }

    /// `MPI_Raccumulate`: [`accumulate`](Self::accumulate) as a request of `scope`.
    pub fn raccumulate<'b, 's, T: Reducible>(
        &self,
        scope: &'s Scope<'b>,
        origin: &'b [T],
        target: i32,
        disp: i64,
        op: &Op,
    ) -> Result<Request<'b, 's>> {
        self.accumulate(origin, target, disp, op)?;
        Ok(self.done(
            scope,
            std::mem::size_of_val(origin),
            std::mem::size_of::<T>(),
        ))
    }

    /// `MPI_Rget_accumulate`: [`get_accumulate`](Self::get_accumulate) as a request of
    /// `scope`; the old values are in `result` once it completes.
    pub fn rget_accumulate<'b, 's, T: Reducible>(
        &self,
        scope: &'s Scope<'b>,
        origin: &'b [T],
        result: &'b mut [T],
        target: i32,
        disp: i64,
        op: &Op,
    ) -> Result<Request<'b, 's>> {
        self.get_accumulate(origin, result, target, disp, op)?;
        Ok(self.done(
            scope,
            std::mem::size_of_val(result),
            std::mem::size_of::<T>(),
        ))
    }

    /// `MPI_Rput` through datatypes ([`put_view`](Self::put_view)); the view's buffer stays
    /// borrowed until the scope ends. The status counts bytes.
    pub fn rput_view<'b, 's>(
        &self,
        scope: &'s Scope<'b>,
        origin: View<'b>,
        target: &TargetView,
    ) -> Result<Request<'b, 's>> {
        self.put_view(&origin, target)?;
        let (_, ty, count) = origin.parts();
        Ok(self.done(scope, view_bytes(ty, count), 0))
    }

    /// `MPI_Rget` through datatypes ([`get_view`](Self::get_view)).
    pub fn rget_view<'b, 's>(
        &self,
        scope: &'s Scope<'b>,
        mut origin: ViewMut<'b>,
        target: &TargetView,
    ) -> Result<Request<'b, 's>> {
        self.get_view(&mut origin, target)?;
        let (_, ty, count) = origin.parts();
        Ok(self.done(scope, view_bytes(ty, count), 0))
    }

    /// `MPI_Raccumulate` through datatypes ([`accumulate_view`](Self::accumulate_view)).
    pub fn raccumulate_view<'b, 's>(
        &self,
        scope: &'s Scope<'b>,
        origin: View<'b>,
        target: &TargetView,
        op: &Op,
    ) -> Result<Request<'b, 's>> {
        self.accumulate_view(&origin, target, op)?;
        let (_, ty, count) = origin.parts();
        Ok(self.done(scope, view_bytes(ty, count), 0))
    }

    /// `MPI_Rget_accumulate` through datatypes
    /// ([`get_accumulate_view`](Self::get_accumulate_view)).
    pub fn rget_accumulate_view<'b, 's>(
        &self,
        scope: &'s Scope<'b>,
        origin: View<'b>,
        mut result: ViewMut<'b>,
        target: &TargetView,
        op: &Op,
    ) -> Result<Request<'b, 's>> {
        self.get_accumulate_view(&origin, &mut result, target, op)?;
        let (_, ty, count) = result.parts();
        Ok(self.done(scope, view_bytes(ty, count), 0))
    }

    /// `MPI_Win_fence` with assertion bits from [`mode`]. Collective.
    pub fn fence(&self, assert: i32) -> Result<()> {
        self.core.fence(assert)
    }

    /// `MPI_Win_post`: exposes this window to the members `group` names (ranks of the
    /// window's group).
    pub fn post(&self, group: &[i32], assert: i32) -> Result<()> {
        self.core.post(group, assert)
    }

    /// `MPI_Win_start`: opens an access epoch to the members in `group`.
    pub fn start(&self, group: &[i32], assert: i32) -> Result<()> {
        self.core.start(group, assert)
    }

    /// `MPI_Win_complete`.
    pub fn complete(&self) -> Result<()> {
        self.core.complete()
    }

    /// `MPI_Win_wait`.
    pub fn wait(&self) -> Result<()> {
        self.core.wait()
    }

    /// `MPI_Win_test`: whether the exposure epoch ended.
    pub fn test(&self) -> Result<bool> {
        self.core.test()
    }

    /// `MPI_Win_lock`.
    pub fn lock(&self, kind: LockType, target: i32, assert: i32) -> Result<()> {
        self.core.lock(kind, target, assert)
    }

    /// `MPI_Win_unlock`.
    pub fn unlock(&self, target: i32) -> Result<()> {
        self.core.unlock(target)
    }

    /// `MPI_Win_lock_all`.
    pub fn lock_all(&self, assert: i32) -> Result<()> {
        self.core.lock_all(assert)
    }

    /// `MPI_Win_unlock_all`.
    pub fn unlock_all(&self) -> Result<()> {
        self.core.unlock_all()
    }

    /// `MPI_Win_flush`: this process's operations to `target` are complete there, and
    /// ordered before its later ones. It does not order the program's own loads and stores
    /// to shared window memory: [`sync`](Self::sync) does, as the standard says.
    pub fn flush(&self, target: i32) -> Result<()> {
        self.core.flush("win_flush", Some(target))
    }

    /// `MPI_Win_flush_all`.
    pub fn flush_all(&self) -> Result<()> {
        self.core.flush("win_flush_all", None)
    }

    /// `MPI_Win_flush_local`.
    pub fn flush_local(&self, target: i32) -> Result<()> {
        self.core.flush("win_flush_local", Some(target))
    }

    /// `MPI_Win_flush_local_all`.
    pub fn flush_local_all(&self) -> Result<()> {
        self.core.flush("win_flush_local_all", None)
    }

    /// `MPI_Win_sync`.
    pub fn sync(&self) {
        self.core.sync()
    }

    /// `MPI_Win_free`. Collective; [`ErrorClass::RmaSync`] while a PSCW or lock epoch is open
    /// (the window is then freed without waiting for the others).
    pub fn free(mut self) -> Result<()> {
        self.freed = true;
        self.core.free()
    }
}

impl<L: ThreadLevel> Drop for Window<'_, L> {
    fn drop(&mut self) {
        // Members may still be reaching into this memory: wait for them as `free` does,
        // unless unwinding (a barrier then could hang on peers that will never arrive).
        if !self.freed && !std::thread::panicking() {
            let _ = self.core.free();
        }
    }
}
