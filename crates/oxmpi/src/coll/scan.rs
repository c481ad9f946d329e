//! Prefix reductions: inclusive scan and exclusive scan, each one plan behind its blocking,
//! nonblocking and persistent forms.

use super::algorithms::misc;
use super::schedule::{Program, Region, Span};
use super::{bytes, bytes_mut, check_len, combine, Ctx, Planned};
use crate::comm::Communicator;
use crate::datatype::elements::{check_op, with_raw_mut};
use crate::datatype::{Element, Elements, ElementsMut};
use crate::error::Result;
use crate::op::{Op, Reducible};
use crate::request::{Persistent, Request, Scope};
use crate::threading::ThreadLevel;

fn plan_scan(x: Ctx<'_>, n: usize, exclusive: bool, in_place: bool) -> Program {
    let mut pr = Program::new();
    let output = Span::new(Region::Recv, 0, n);
    let input = if in_place {
        let s = pr.scratch(n);
        pr.copy(output, s);
        s
    } else {
        Span::new(Region::Send, 0, n)
    };
    if exclusive {
        misc::exscan(&mut pr, x.grp(), input, output);
    } else {
        misc::scan(&mut pr, x.grp(), input, output);
    }
    pr
}

impl<L: ThreadLevel> Communicator<L> {
    /// The plan of a scan (`exclusive`: exscan); `send` is `None` in place.
    pub(crate) fn scan_plan<'b, T: Reducible>(
        &self,
        call: &'static str,
        send: Option<&'b [T]>,
        recv: &'b mut [T],
        op: &Op,
        exclusive: bool,
    ) -> Result<Planned<'b>> {
        let x = self.ctx();
        let c = combine::<T>(op)?;
        let n = send.map_or(recv.len(), <[T]>::len);
        check_len(call, "the receive buffer", recv.len(), n)?;
        if n == 0 {
            return Ok(Planned::nothing(call));
        }
        let prog = plan_scan(x, n * size_of::<T>(), exclusive, send.is_none());
        let send = send.map_or(&[][..], bytes);
        Ok(Planned::new(call, prog, Some(c), send, bytes_mut(recv)))
    }

    /// Inclusive prefix reduction: rank r's `recv` gets `send` of ranks 0..=r combined in
    /// rank order (`MPI_Scan`).
    pub fn scan_into<T, S, R>(&self, send: &S, recv: &mut R, op: Op) -> Result<()>
    where
        T: Element<Raw: Reducible>,
        S: Elements<T> + ?Sized,
        R: ElementsMut<T> + ?Sized,
    {
        self.scan_blocking(
            "scan",
            Some(T::raw(send.elements())),
            recv.elements_mut(),
            op,
            false,
        )
    }

    /// The blocking scans, on raw elements (checked on receipt for `bool`/`char`).
    fn scan_blocking<T: Element<Raw: Reducible>>(
        &self,
        call: &'static str,
        send: Option<&[T::Raw]>,
        recv: &mut [T],
        op: Op,
        exclusive: bool,
    ) -> Result<()> {
        check_op::<T>(call, &op)?;
        with_raw_mut(call, recv, |recv| {
            self.coll_run(self.scan_plan(call, send, recv, &op, exclusive)?)
        })
    }

    /// Inclusive scan in place (`MPI_IN_PLACE`).
    pub fn scan_in_place<T, B>(&self, buf: &mut B, op: Op) -> Result<()>
    where
        T: Element<Raw: Reducible>,
        B: ElementsMut<T> + ?Sized,
    {
        self.scan_blocking("scan", None, buf.elements_mut(), op, false)
    }

    /// Starts an inclusive scan in place (`MPI_Iscan` with `MPI_IN_PLACE`).
    pub fn immediate_scan_in_place<'a, 's, T: Reducible, B: ElementsMut<T> + ?Sized>(
        &self,
        scope: &'s Scope<'a>,
        buf: &'a mut B,
        op: Op,
    ) -> Result<Request<'a, 's>> {
        self.coll_start(
            scope,
            self.scan_plan("immediate_scan", None, buf.elements_mut(), &op, false)?,
        )
    }

    /// Starts an inclusive scan (`MPI_Iscan`).
    pub fn immediate_scan_into<
        'a,
        's,
        T: Reducible,
        S: Elements<T> + ?Sized,
        R: ElementsMut<T> + ?Sized,
    >(
        &self,
        scope: &'s Scope<'a>,
        send: &'a S,
        recv: &'a mut R,
        op: Op,
    ) -> Result<Request<'a, 's>> {
        let p = self.scan_plan(
            "immediate_scan",
            Some(send.elements()),
            recv.elements_mut(),
            &op,
            false,
        )?;
        self.coll_start(scope, p)
    }

    /// A persistent inclusive scan (`MPI_Scan_init`), inactive until started.
    pub fn scan_init<'a, 's, T: Reducible, S: Elements<T> + ?Sized, R: ElementsMut<T> + ?Sized>(
        &self,
        scope: &'s Scope<'a>,
        send: &'a S,
        recv: &'a mut R,
        op: Op,
    ) -> Result<Persistent<'a, 's>> {
        self.coll_keep(
            scope,
            self.scan_plan(
                "scan_init",
                Some(send.elements()),
                recv.elements_mut(),
                &op,
                false,
            )?,
        )
    }

    /// A persistent inclusive scan in place (`MPI_Scan_init` with `MPI_IN_PLACE`).
    pub fn scan_in_place_init<'a, 's, T: Reducible, B: ElementsMut<T> + ?Sized>(
        &self,
        scope: &'s Scope<'a>,
        buf: &'a mut B,
        op: Op,
    ) -> Result<Persistent<'a, 's>> {
        self.coll_keep(
            scope,
            self.scan_plan("scan_init", None, buf.elements_mut(), &op, false)?,
        )
    }

    /// Exclusive prefix reduction: rank r's `recv` gets `send` of ranks 0..r combined in rank
    /// order; rank 0's `recv` is left unchanged (`MPI_Exscan`).
    pub fn exclusive_scan_into<T, S, R>(&self, send: &S, recv: &mut R, op: Op) -> Result<()>
    where
        T: Element<Raw: Reducible>,
        S: Elements<T> + ?Sized,
        R: ElementsMut<T> + ?Sized,
    {
        let send = Some(T::raw(send.elements()));
        self.scan_blocking("exscan", send, recv.elements_mut(), op, true)
    }

    /// Exclusive scan in place (`MPI_IN_PLACE`).
    pub fn exclusive_scan_in_place<T, B>(&self, buf: &mut B, op: Op) -> Result<()>
    where
        T: Element<Raw: Reducible>,
        B: ElementsMut<T> + ?Sized,
    {
        self.scan_blocking("exscan", None, buf.elements_mut(), op, true)
    }

    /// Starts an exclusive scan in place (`MPI_Iexscan` with `MPI_IN_PLACE`); rank 0's `buf`
    /// is left unchanged.
    pub fn immediate_exclusive_scan_in_place<'a, 's, T: Reducible, B: ElementsMut<T> + ?Sized>(
        &self,
        scope: &'s Scope<'a>,
        buf: &'a mut B,
        op: Op,
    ) -> Result<Request<'a, 's>> {
        self.coll_start(
            scope,
            self.scan_plan("immediate_exscan", None, buf.elements_mut(), &op, true)?,
        )
    }

    /// Starts an exclusive scan (`MPI_Iexscan`).
    pub fn immediate_exclusive_scan_into<
        'a,
        's,
        T: Reducible,
        S: Elements<T> + ?Sized,
        R: ElementsMut<T> + ?Sized,
    >(
        &self,
        scope: &'s Scope<'a>,
        send: &'a S,
        recv: &'a mut R,
        op: Op,
    ) -> Result<Request<'a, 's>> {
        let p = self.scan_plan(
            "immediate_exscan",
            Some(send.elements()),
            recv.elements_mut(),
            &op,
            true,
        )?;
        self.coll_start(scope, p)
    }

    /// A persistent exclusive scan (`MPI_Exscan_init`), inactive until started.
    pub fn exclusive_scan_init<
        'a,
        's,
        T: Reducible,
        S: Elements<T> + ?Sized,
        R: ElementsMut<T> + ?Sized,
    >(
        &self,
        scope: &'s Scope<'a>,
        send: &'a S,
        recv: &'a mut R,
        op: Op,
    ) -> Result<Persistent<'a, 's>> {
        self.coll_keep(
            scope,
            self.scan_plan(
                "exscan_init",
                Some(send.elements()),
                recv.elements_mut(),
                &op,
                true,
            )?,
        )
    }

    /// A persistent exclusive scan in place (`MPI_Exscan_init` with `MPI_IN_PLACE`).
    pub fn exclusive_scan_in_place_init<'a, 's, T: Reducible, B: ElementsMut<T> + ?Sized>(
        &self,
        scope: &'s Scope<'a>,
        buf: &'a mut B,
        op: Op,
    ) -> Result<Persistent<'a, 's>> {
        self.coll_keep(
            scope,
            self.scan_plan("exscan_init", None, buf.elements_mut(), &op, true)?,
        )
    }
}
