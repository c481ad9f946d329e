//! Rooted collectives: broadcast, gather(v), scatter(v) and reduce. Each is one plan
//! (validation, program, regions) behind its blocking, nonblocking and persistent forms.

use super::algorithms::tree;
use super::schedule::{Program, Region, Span};
use super::shm_kept::ShmKind;
use super::Planned;
use super::{bytes, bytes_mut, check_len, check_root, combine, hier, select, v_spans, Ctx};
use crate::comm::Communicator;
use crate::datatype::elements::{check_op, with_raw_mut};
use crate::datatype::{Element, Elements, ElementsMut, Equivalence};
use crate::error::Result;
use crate::op::{Op, Reducible};
use crate::request::{Persistent, Request, Scope};
use crate::threading::ThreadLevel;

fn plan_bcast(x: Ctx<'_>, root: u32, n: usize, elem: usize) -> Program {
    let mut pr = Program::new();
    let buf = Span::new(Region::Recv, 0, n);
    let count = n / elem.max(1);
    match x.lay {
        Some(l) => hier::bcast(&mut pr, l, x.me, root, buf, count, elem.max(1), x.c),
        None => match select::bcast(x.c, n, x.p, x.crowded) {
            select::Bcast::Binomial => tree::bcast_binomial(&mut pr, x.grp(), root, buf),
            select::Bcast::ScatterAllgather => {
                tree::bcast_scatter_allgather(&mut pr, x.grp(), root, buf, count, elem.max(1))
            }
        },
    }
    pr
}

fn plan_reduce(x: Ctx<'_>, root: u32, n: usize, commutative: bool, in_place: bool) -> Program {
    let mut pr = Program::new();
    let is_root = x.me == root;
    let output = Span::new(Region::Recv, 0, if is_root { n } else { 0 });
    let input = if in_place && is_root {
        output
    } else {
        Span::new(Region::Send, 0, n)
    };
    match x.lay {
        Some(l) if commutative => hier::reduce(&mut pr, l, x.me, root, input, output),
        _ => tree::reduce_binomial(&mut pr, x.grp(), root, input, output, commutative),
    }
    pr
}

fn plan_gather(x: Ctx<'_>, root: u32, n: usize, in_place: bool) -> Program {
    let mut pr = Program::new();
    let pn = x.p as usize * n;
    let output = Span::new(Region::Recv, 0, if x.me == root { pn } else { 0 });
    let input = if in_place && x.me == root {
        output.sub(root as usize * n, n)
    } else {
        Span::new(Region::Send, 0, n)
    };
    if select::gather_tree(x.c, pn) {
        tree::gather_binomial(&mut pr, x.grp(), root, input, output);
    } else {
        let slots: Vec<Span> = (0..x.p as usize)
            .map(|i| {
                if x.me == root {
                    output.sub(i * n, n)
                } else {
                    output
                }
            })
            .collect();
        tree::gather_linear(&mut pr, x.grp(), root, input, &slots);
    }
    pr
}

fn plan_scatter(x: Ctx<'_>, root: u32, n: usize, in_place: bool) -> Program {
    let mut pr = Program::new();
    let pn = x.p as usize * n;
    let is_root = x.me == root;
    let input = Span::new(Region::Send, 0, if is_root { pn } else { 0 });
    let output = (!(in_place && is_root)).then_some(Span::new(Region::Recv, 0, n));
    if select::gather_tree(x.c, pn) {
        tree::scatter_binomial(&mut pr, x.grp(), root, input, output, n);
    } else {
        let slots: Vec<Span> = (0..x.p as usize)
            .map(|i| if is_root { input.sub(i * n, n) } else { input })
            .collect();
        tree::scatter_linear(&mut pr, x.grp(), root, &slots, output);
    }
    pr
}

/// `recv` at the root, nothing elsewhere (root-only buffers).
fn at_root<T: Equivalence>(is_root: bool, recv: &mut [T]) -> &mut [u8] {
    if is_root {
        bytes_mut(recv)
    } else {
        &mut []
    }
}

impl<L: ThreadLevel> Communicator<L> {
    /// The plan of a broadcast of `buf` (elements of `elem` bytes) from `root`.
    pub(crate) fn bcast_plan<'b>(
        &self,
        call: &'static str,
        root: i32,
        buf: &'b mut [u8],
        elem: usize,
    ) -> Result<Planned<'b>> {
        let x = self.ctx();
        let root = check_root(call, root, x.p)?;
        if buf.is_empty() || x.p == 1 {
            return Ok(Planned::nothing(call));
        }
        let prog = plan_bcast(x, root, buf.len(), elem);
        Ok(Planned::new(call, prog, None, &[], buf).on_shm(ShmKind::Bcast { root }))
    }

    /// Broadcasts `buf` (one value, an array, a slice or a vector; `bool` and `char` are
    /// checked on receipt) from `root` to every rank (`MPI_Bcast`).
    pub fn broadcast_into<T: Element, B: ElementsMut<T> + ?Sized>(
        &self,
        root: i32,
        buf: &mut B,
    ) -> Result<()> {
        with_raw_mut("broadcast", buf.elements_mut(), |raw| {
            self.broadcast_raw(root, raw)
        })
    }

    pub(super) fn broadcast_raw<T: Equivalence>(&self, root: i32, buf: &mut [T]) -> Result<()> {
        let elem = size_of::<T>();
        let bytes = bytes_mut(buf);
        if let Ok(r) = u32::try_from(root) {
            if r < self.size() as u32 {
                if let Some(at) = self.shm_fits(bytes.len())? {
                    return self.shm_bcast(at, r, bytes);
                }
                let c = super::select::crossovers();
                let min = c.shm_bcast_min(crate::runtime::oversubscribed(), self.size() as usize);
                if let Some(at) = self.shm_large(bytes.len(), min)? {
                    if self.shm_bcast_large(at, r, bytes)? {
                        return Ok(());
                    }
                }
                // Hosts may differ in oversubscription: every rank of the job decides by the
                // same value.
                if bytes.len() >= c.hier_bcast_long {
                    if let Some(t) = self.two_level()? {
                        return self.two_level_bcast(t, r, bytes, elem);
                    }
                }
            }
        }
        self.coll_run(self.bcast_plan("broadcast", root, bytes, elem)?)
    }

    /// Starts a broadcast (`MPI_Ibcast`).
    pub fn immediate_broadcast_into<'a, 's, T: Equivalence, B: ElementsMut<T> + ?Sized>(
        &self,
        scope: &'s Scope<'a>,
        root: i32,
        buf: &'a mut B,
    ) -> Result<Request<'a, 's>> {
        let elem = size_of::<T>();
        let p = self.bcast_plan(
            "immediate_broadcast",
            root,
            bytes_mut(buf.elements_mut()),
            elem,
        )?;
        self.coll_start(scope, p)
    }

    /// A persistent broadcast (`MPI_Bcast_init`), inactive until started.
    pub fn broadcast_init<'a, 's, T: Equivalence, B: ElementsMut<T> + ?Sized>(
        &self,
        scope: &'s Scope<'a>,
        root: i32,
        buf: &'a mut B,
    ) -> Result<Persistent<'a, 's>> {
        let elem = size_of::<T>();
        let p = self.bcast_plan("broadcast_init", root, bytes_mut(buf.elements_mut()), elem)?;
        self.coll_keep(scope, p)
    }

    /// The plan of a gather of `n` elements of `T` per rank; `send` is `None` in place.
    pub(crate) fn gather_plan<'b, T: Equivalence>(
        &self,
        call: &'static str,
        root: i32,
        send: Option<&'b [T]>,
        recv: &'b mut [T],
    ) -> Result<Planned<'b>> {
        let x = self.ctx();
        let root = check_root(call, root, x.p)?;
        let is_root = x.me == root;
        let n = match send {
            Some(s) => s.len(),
            None => recv.len() / x.p.max(1) as usize,
        };
        if is_root {
            check_len(call, "the receive buffer", recv.len(), n * x.p as usize)?;
        }
        let prog = plan_gather(x, root, n * size_of::<T>(), send.is_none());
        let send = send.map_or(&[][..], bytes);
        Ok(Planned::new(call, prog, None, send, at_root(is_root, recv)))
    }

    /// The blocking gather: through the shared-memory slots when every rank is on this host
    /// and a block fits a slot; the root reads every block with one copy when the total is
    /// long; else the plan.
    fn gather_blocking<T: Equivalence>(
        &self,
        root: i32,
        send: Option<&[T]>,
        recv: &mut [T],
    ) -> Result<()> {
        let (p, me, e) = (self.size() as usize, self.rank() as usize, size_of::<T>());
        if let Ok(r) = usize::try_from(root) {
            let n = send.map_or(recv.len() / p, <[T]>::len) * e;
            // Shapes the plan rejects go to it for their error.
            let fits = me != r || size_of_val(recv) == n * p;
            if r < p && p > 1 && n > 0 && fits && (send.is_some() || me == r) {
                let place: Vec<(usize, usize)> = (0..p).map(|k| (k * n, n)).collect();
                if let Some(at) = self.shm_fits(n)? {
                    let (send, recv) = (send.map(bytes), bytes_mut(recv));
                    return self.shm_gather(at, r as u32, send, recv, &place);
                }
                let min = super::select::crossovers().shm_gather_long;
                if let Some(at) = self.shm_large(n * p, min)? {
                    let (send, recv) = (send.map(bytes), bytes_mut(recv));
                    if self.shm_gather_large(at, Some(r as u32), send, recv, &place)? {
                        return Ok(());
                    }
                }
            }
        }
        self.coll_run(self.gather_plan("gather", root, send, recv)?)
    }

    /// Gathers every rank's `send` into `recv` at `root`, in rank order (`MPI_Gather`).
    /// `recv` (p × `send.len()` elements) is used at the root only.
    pub fn gather_into<T: Element, S: Elements<T> + ?Sized, R: ElementsMut<T> + ?Sized>(
        &self,
        root: i32,
        send: &S,
        recv: &mut R,
    ) -> Result<()> {
        let send = T::raw(send.elements());
        with_raw_mut("gather", recv.elements_mut(), |recv| {
            self.gather_blocking(root, Some(send), recv)
        })
    }

    /// Gather at the root with its own block already in place in `buf` (`MPI_IN_PLACE`);
    /// other ranks call [`gather_into`](Self::gather_into).
    pub fn gather_in_place<T: Element, B: ElementsMut<T> + ?Sized>(
        &self,
        root: i32,
        buf: &mut B,
    ) -> Result<()> {
        with_raw_mut("gather", buf.elements_mut(), |buf| {
            self.gather_blocking(root, None, buf)
        })
    }

    /// Starts a gather whose root has its own block already in place in `buf`
    /// (`MPI_Igather` with `MPI_IN_PLACE`); other ranks call
    /// [`immediate_gather_into`](Self::immediate_gather_into).
    pub fn immediate_gather_in_place<'a, 's, T: Equivalence, B: ElementsMut<T> + ?Sized>(
        &self,
        scope: &'s Scope<'a>,
        root: i32,
        buf: &'a mut B,
    ) -> Result<Request<'a, 's>> {
        self.coll_start(
            scope,
            self.gather_plan("immediate_gather", root, None, buf.elements_mut())?,
        )
    }

    /// Starts a gather (`MPI_Igather`).
    pub fn immediate_gather_into<
        'a,
        's,
        T: Equivalence,
        S: Elements<T> + ?Sized,
        R: ElementsMut<T> + ?Sized,
    >(
        &self,
        scope: &'s Scope<'a>,
        root: i32,
        send: &'a S,
        recv: &'a mut R,
    ) -> Result<Request<'a, 's>> {
        let p = self.gather_plan(
            "immediate_gather",
            root,
            Some(send.elements()),
            recv.elements_mut(),
        )?;
        self.coll_start(scope, p)
    }

    /// A persistent gather (`MPI_Gather_init`), inactive until started.
    pub fn gather_init<
        'a,
        's,
        T: Equivalence,
        S: Elements<T> + ?Sized,
        R: ElementsMut<T> + ?Sized,
    >(
        &self,
        scope: &'s Scope<'a>,
        root: i32,
        send: &'a S,
        recv: &'a mut R,
    ) -> Result<Persistent<'a, 's>> {
        self.coll_keep(
            scope,
            self.gather_plan(
                "gather_init",
                root,
                Some(send.elements()),
                recv.elements_mut(),
            )?,
        )
    }

    /// A persistent gather whose root has its own block in place in `buf`
    /// (`MPI_Gather_init` with `MPI_IN_PLACE`); other ranks call
    /// [`gather_init`](Self::gather_init).
    pub fn gather_in_place_init<'a, 's, T: Equivalence, B: ElementsMut<T> + ?Sized>(
        &self,
        scope: &'s Scope<'a>,
        root: i32,
        buf: &'a mut B,
    ) -> Result<Persistent<'a, 's>> {
        self.coll_keep(
            scope,
            self.gather_plan("gather_init", root, None, buf.elements_mut())?,
        )
    }

    /// The plan of a gatherv.
    pub(crate) fn gatherv_plan<'b, T: Equivalence>(
        &self,
        call: &'static str,
        root: i32,
        send: &'b [T],
        recv: &'b mut [T],
        counts: &[usize],
        displs: &[usize],
    ) -> Result<Planned<'b>> {
        let x = self.ctx();
        let root = check_root(call, root, x.p)?;
        let e = size_of::<T>();
        let is_root = x.me == root;
        let slots = if is_root {
            let s = v_spans(call, Region::Recv, counts, displs, recv.len(), x.p, e)?;
            check_len(call, "the send buffer", send.len(), counts[root as usize])?;
            s
        } else {
            vec![Span::new(Region::Recv, 0, 0); x.p as usize]
        };
        let mut pr = Program::new();
        let input = Span::new(Region::Send, 0, size_of_val(send));
        tree::gather_linear(&mut pr, x.grp(), root, input, &slots);
        Ok(Planned::new(
            call,
            pr,
            None,
            bytes(send),
            at_root(is_root, recv),
        ))
    }

    /// Gathers blocks of different lengths (`MPI_Gatherv`): rank i's `send` lands at
    /// `recv[displs[i]..][..counts[i]]` at the root. `recv`, `counts` and `displs` are used
    /// at the root only.
    pub fn gather_varcount_into<T: Element, S: Elements<T> + ?Sized, R: ElementsMut<T> + ?Sized>(
        &self,
        root: i32,
        send: &S,
        recv: &mut R,
        counts: &[usize],
        displs: &[usize],
    ) -> Result<()> {
        let send = T::raw(send.elements());
        with_raw_mut("gatherv", recv.elements_mut(), |recv| {
            self.coll_run(self.gatherv_plan("gatherv", root, send, recv, counts, displs)?)
        })
    }

    /// Starts a gatherv (`MPI_Igatherv`).
    pub fn immediate_gather_varcount_into<
        'a,
        's,
        T: Equivalence,
        S: Elements<T> + ?Sized,
        R: ElementsMut<T> + ?Sized,
    >(
        &self,
        scope: &'s Scope<'a>,
        root: i32,
        send: &'a S,
        recv: &'a mut R,
        counts: &[usize],
        displs: &[usize],
    ) -> Result<Request<'a, 's>> {
        let p = self.gatherv_plan(
            "immediate_gatherv",
            root,
            send.elements(),
            recv.elements_mut(),
            counts,
            displs,
        )?;
        self.coll_start(scope, p)
    }

    /// A persistent gatherv (`MPI_Gatherv_init`), inactive until started.
    pub fn gather_varcount_init<
        'a,
        's,
        T: Equivalence,
        S: Elements<T> + ?Sized,
        R: ElementsMut<T> + ?Sized,
    >(
        &self,
        scope: &'s Scope<'a>,
        root: i32,
        send: &'a S,
        recv: &'a mut R,
        counts: &[usize],
        displs: &[usize],
    ) -> Result<Persistent<'a, 's>> {
        let p = self.gatherv_plan(
            "gatherv_init",
            root,
            send.elements(),
            recv.elements_mut(),
            counts,
            displs,
        )?;
        self.coll_keep(scope, p)
    }

    /// The plan of a scatter; `recv` is `None` at a root scattering in place.
    pub(crate) fn scatter_plan<'b, T: Equivalence>(
        &self,
        call: &'static str,
        root: i32,
        send: &'b [T],
        recv: Option<&'b mut [T]>,
    ) -> Result<Planned<'b>> {
        let x = self.ctx();
        let root = check_root(call, root, x.p)?;
        let is_root = x.me == root;
        let in_place = recv.is_none();
        let n = match &recv {
            Some(r) => r.len(),
            None => send.len() / x.p.max(1) as usize,
        };
        if is_root {
            check_len(call, "the send buffer", send.len(), n * x.p as usize)?;
        }
        let prog = plan_scatter(x, root, n * size_of::<T>(), in_place);
        let send = if is_root { bytes(send) } else { &[] };
        let recv = recv.map_or(&mut [][..], bytes_mut);
        Ok(Planned::new(call, prog, None, send, recv))
    }

    /// Scatters the root's `send` (p blocks of `recv.len()` elements) so that rank i gets
    /// block i (`MPI_Scatter`). `send` is used at the root only.
    pub fn scatter_into<T: Element, S: Elements<T> + ?Sized, R: ElementsMut<T> + ?Sized>(
        &self,
        root: i32,
        send: &S,
        recv: &mut R,
    ) -> Result<()> {
        let send = T::raw(send.elements());
        with_raw_mut("scatter", recv.elements_mut(), |recv| {
            self.scatter_blocking(root, send, Some(recv))
        })
    }

    /// The blocking scatter: through the shared-memory slots when every rank is on this
    /// host and the root's whole buffer fits a slot, else the plan.
    fn scatter_blocking<T: Equivalence>(
        &self,
        root: i32,
        send: &[T],
        recv: Option<&mut [T]>,
    ) -> Result<()> {
        let (p, me) = (self.size() as usize, self.rank() as usize);
        if let Ok(r) = usize::try_from(root) {
            let n = recv.as_deref().map_or(send.len() / p.max(1), <[T]>::len) * size_of::<T>();
            // Shapes the plan rejects go to it for their error.
            let fits = me != r || size_of_val(send) == n * p;
            if r < p && p > 1 && n > 0 && fits && (recv.is_some() || me == r) {
                if let Some(at) = self.shm_fits(n * p)? {
                    let send = if me == r { bytes(send) } else { &[] };
                    return self.shm_scatter(at, r as u32, send, recv.map(bytes_mut), n);
                }
            }
        }
        self.coll_run(self.scatter_plan("scatter", root, send, recv)?)
    }

    /// Scatter from the root, which keeps its own block in place in `buf` (`MPI_IN_PLACE`);
    /// other ranks call [`scatter_into`](Self::scatter_into).
    pub fn scatter_in_place<T: Element, S: Elements<T> + ?Sized>(
        &self,
        root: i32,
        buf: &S,
    ) -> Result<()> {
        let buf = T::raw(buf.elements());
        self.scatter_blocking(root, buf, None)
    }

    /// Starts a scatter whose root keeps its own block in place in `buf`
    /// (`MPI_Iscatter` with `MPI_IN_PLACE`); other ranks call
    /// [`immediate_scatter_into`](Self::immediate_scatter_into).
    pub fn immediate_scatter_in_place<'a, 's, T: Equivalence, S: Elements<T> + ?Sized>(
        &self,
        scope: &'s Scope<'a>,
        root: i32,
        buf: &'a S,
    ) -> Result<Request<'a, 's>> {
        self.coll_start(
            scope,
            self.scatter_plan("immediate_scatter", root, buf.elements(), None)?,
        )
    }

    /// Starts a scatter (`MPI_Iscatter`).
    pub fn immediate_scatter_into<
        'a,
        's,
        T: Equivalence,
        S: Elements<T> + ?Sized,
        R: ElementsMut<T> + ?Sized,
    >(
        &self,
        scope: &'s Scope<'a>,
        root: i32,
        send: &'a S,
        recv: &'a mut R,
    ) -> Result<Request<'a, 's>> {
        let p = self.scatter_plan(
            "immediate_scatter",
            root,
            send.elements(),
            Some(recv.elements_mut()),
        )?;
        self.coll_start(scope, p)
    }

    /// A persistent scatter (`MPI_Scatter_init`), inactive until started.
    pub fn scatter_init<
        'a,
        's,
        T: Equivalence,
        S: Elements<T> + ?Sized,
        R: ElementsMut<T> + ?Sized,
    >(
        &self,
        scope: &'s Scope<'a>,
        root: i32,
        send: &'a S,
        recv: &'a mut R,
    ) -> Result<Persistent<'a, 's>> {
        self.coll_keep(
            scope,
            self.scatter_plan(
                "scatter_init",
                root,
                send.elements(),
                Some(recv.elements_mut()),
            )?,
        )
    }

    /// A persistent scatter whose root keeps its own block in place in `buf`
    /// (`MPI_Scatter_init` with `MPI_IN_PLACE`); other ranks call
    /// [`scatter_init`](Self::scatter_init).
    pub fn scatter_in_place_init<'a, 's, T: Equivalence, S: Elements<T> + ?Sized>(
        &self,
        scope: &'s Scope<'a>,
        root: i32,
        buf: &'a S,
    ) -> Result<Persistent<'a, 's>> {
        self.coll_keep(
            scope,
            self.scatter_plan("scatter_init", root, buf.elements(), None)?,
        )
    }

    /// The plan of a scatterv.
    pub(crate) fn scatterv_plan<'b, T: Equivalence>(
        &self,
        call: &'static str,
        root: i32,
        send: &'b [T],
        counts: &[usize],
        displs: &[usize],
        recv: &'b mut [T],
    ) -> Result<Planned<'b>> {
        let x = self.ctx();
        let root = check_root(call, root, x.p)?;
        let e = size_of::<T>();
        let is_root = x.me == root;
        let slots = if is_root {
            let s = v_spans(call, Region::Send, counts, displs, send.len(), x.p, e)?;
            check_len(
                call,
                "the receive buffer",
                recv.len(),
                counts[root as usize],
            )?;
            s
        } else {
            vec![Span::new(Region::Send, 0, 0); x.p as usize]
        };
        let mut pr = Program::new();
        let output = Span::new(Region::Recv, 0, size_of_val(recv));
        tree::scatter_linear(&mut pr, x.grp(), root, &slots, Some(output));
        let send = if is_root { bytes(send) } else { &[] };
        Ok(Planned::new(call, pr, None, send, bytes_mut(recv)))
    }

    /// Scatters blocks of different lengths (`MPI_Scatterv`): rank i receives
    /// `send[displs[i]..][..counts[i]]` into `recv`. `send`, `counts`, `displs` are used at
    /// the root only.
    pub fn scatter_varcount_into<
        T: Element,
        S: Elements<T> + ?Sized,
        R: ElementsMut<T> + ?Sized,
    >(
        &self,
        root: i32,
        send: &S,
        counts: &[usize],
        displs: &[usize],
        recv: &mut R,
    ) -> Result<()> {
        let send = T::raw(send.elements());
        with_raw_mut("scatterv", recv.elements_mut(), |recv| {
            self.coll_run(self.scatterv_plan("scatterv", root, send, counts, displs, recv)?)
        })
    }

    /// Starts a scatterv (`MPI_Iscatterv`).
    pub fn immediate_scatter_varcount_into<
        'a,
        's,
        T: Equivalence,
        S: Elements<T> + ?Sized,
        R: ElementsMut<T> + ?Sized,
    >(
        &self,
        scope: &'s Scope<'a>,
        root: i32,
        send: &'a S,
        counts: &[usize],
        displs: &[usize],
        recv: &'a mut R,
    ) -> Result<Request<'a, 's>> {
        let p = self.scatterv_plan(
            "immediate_scatterv",
            root,
            send.elements(),
            counts,
            displs,
            recv.elements_mut(),
        )?;
        self.coll_start(scope, p)
    }

    /// A persistent scatterv (`MPI_Scatterv_init`), inactive until started.
    pub fn scatter_varcount_init<
        'a,
        's,
        T: Equivalence,
        S: Elements<T> + ?Sized,
        R: ElementsMut<T> + ?Sized,
    >(
        &self,
        scope: &'s Scope<'a>,
        root: i32,
        send: &'a S,
        counts: &[usize],
        displs: &[usize],
        recv: &'a mut R,
    ) -> Result<Persistent<'a, 's>> {
        let p = self.scatterv_plan(
            "scatterv_init",
            root,
            send.elements(),
            counts,
            displs,
            recv.elements_mut(),
        )?;
        self.coll_keep(scope, p)
    }

    /// The plan of a reduce; `send` is `None` at a root reducing in place.
    pub(crate) fn reduce_plan<'b, T: Reducible>(
        &self,
        call: &'static str,
        root: i32,
        send: Option<&'b [T]>,
        recv: &'b mut [T],
        op: &Op,
    ) -> Result<Planned<'b>> {
        let x = self.ctx();
        let root = check_root(call, root, x.p)?;
        let c = combine::<T>(op)?;
        let is_root = x.me == root;
        let n = send.map_or(recv.len(), <[T]>::len);
        if is_root {
            check_len(call, "the receive buffer", recv.len(), n)?;
        }
        if n == 0 {
            return Ok(Planned::nothing(call));
        }
        let prog = plan_reduce(x, root, n * size_of::<T>(), c.commutative, send.is_none());
        let send = send.map_or(&[][..], bytes);
        Ok(
            Planned::new(call, prog, Some(c), send, at_root(is_root, recv)).on_shm(
                ShmKind::Reduce {
                    root: Some(root),
                    elem: size_of::<T>(),
                },
            ),
        )
    }

    /// Combines every rank's `send` with `op` into `recv` at `root` (`MPI_Reduce`); `recv`
    /// is used at the root only.
    pub fn reduce_into<T, S, R>(&self, root: i32, send: &S, recv: &mut R, op: Op) -> Result<()>
    where
        T: Element<Raw: Reducible>,
        S: Elements<T> + ?Sized,
        R: ElementsMut<T> + ?Sized,
    {
        check_op::<T>("reduce", &op)?;
        let send = T::raw(send.elements());
        with_raw_mut("reduce", recv.elements_mut(), |recv| {
            self.reduce_blocking(root, Some(send), recv, &op)
        })
    }

    /// The blocking reduce: through shared memory when it fits, else the plan.
    pub(super) fn reduce_blocking<T: Reducible>(
        &self,
        root: i32,
        send: Option<&[T]>,
        recv: &mut [T],
        op: &Op,
    ) -> Result<()> {
        let n = send.map_or(recv.len(), <[T]>::len);
        if let Ok(r) = u32::try_from(root) {
            let fine = r < self.size() as u32 && (r != self.state.rank || recv.len() == n);
            if fine {
                if let Some(at) = self.shm_fits_reduce(n * size_of::<T>(), false)? {
                    return self.shm_reduce(at, Some(r), send, recv, op);
                }
                let min = super::select::crossovers().shm_reduce_long;
                if let Some(at) = self.shm_large(n * size_of::<T>(), min)? {
                    if self.shm_reduce_large(at, Some(r), send, recv, op)? {
                        return Ok(());
                    }
                }
                if n > 0 && size_of::<T>() > 0 && op.is_commutative() {
                    if let Some(t) = self.two_level()? {
                        return self.two_level_reduce(t, r, send, recv, op);
                    }
                }
            }
        }
        self.coll_run(self.reduce_plan("reduce", root, send, recv, op)?)
    }

    /// Reduce at the root with its contribution in `buf`, which receives the result
    /// (`MPI_IN_PLACE`); other ranks call [`reduce_into`](Self::reduce_into).
    pub fn reduce_in_place<T, B>(&self, root: i32, buf: &mut B, op: Op) -> Result<()>
    where
        T: Element<Raw: Reducible>,
        B: ElementsMut<T> + ?Sized,
    {
        check_op::<T>("reduce", &op)?;
        with_raw_mut("reduce", buf.elements_mut(), |buf| {
            self.reduce_blocking(root, None, buf, &op)
        })
    }

    /// Starts a reduce whose root contributes `buf` and receives the result in it
    /// (`MPI_Ireduce` with `MPI_IN_PLACE`); other ranks call
    /// [`immediate_reduce_into`](Self::immediate_reduce_into).
    pub fn immediate_reduce_in_place<'a, 's, T: Reducible, B: ElementsMut<T> + ?Sized>(
        &self,
        scope: &'s Scope<'a>,
        root: i32,
        buf: &'a mut B,
        op: Op,
    ) -> Result<Request<'a, 's>> {
        let p = self.reduce_plan("immediate_reduce", root, None, buf.elements_mut(), &op)?;
        self.coll_start(scope, p)
    }

    /// Starts a reduce (`MPI_Ireduce`).
    pub fn immediate_reduce_into<
        'a,
        's,
        T: Reducible,
        S: Elements<T> + ?Sized,
        R: ElementsMut<T> + ?Sized,
    >(
        &self,
        scope: &'s Scope<'a>,
        root: i32,
        send: &'a S,
        recv: &'a mut R,
        op: Op,
    ) -> Result<Request<'a, 's>> {
        let p = self.reduce_plan(
            "immediate_reduce",
            root,
            Some(send.elements()),
            recv.elements_mut(),
            &op,
        )?;
        self.coll_start(scope, p)
    }

    /// A persistent reduce (`MPI_Reduce_init`), inactive until started.
    pub fn reduce_init<
        'a,
        's,
        T: Reducible,
        S: Elements<T> + ?Sized,
        R: ElementsMut<T> + ?Sized,
    >(
        &self,
        scope: &'s Scope<'a>,
        root: i32,
        send: &'a S,
        recv: &'a mut R,
        op: Op,
    ) -> Result<Persistent<'a, 's>> {
        let p = self.reduce_plan(
            "reduce_init",
            root,
            Some(send.elements()),
            recv.elements_mut(),
            &op,
        )?;
        self.coll_keep(scope, p)
    }

    /// A persistent reduce whose root contributes `buf` and receives the result in it
    /// (`MPI_Reduce_init` with `MPI_IN_PLACE`); other ranks call
    /// [`reduce_init`](Self::reduce_init).
    pub fn reduce_in_place_init<'a, 's, T: Reducible, B: ElementsMut<T> + ?Sized>(
        &self,
        scope: &'s Scope<'a>,
        root: i32,
        buf: &'a mut B,
        op: Op,
    ) -> Result<Persistent<'a, 's>> {
        self.coll_keep(
            scope,
            self.reduce_plan("reduce_init", root, None, buf.elements_mut(), &op)?,
        )
    }
}
