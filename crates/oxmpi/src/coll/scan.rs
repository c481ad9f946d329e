//! Prefix reductions: inclusive scan and exclusive scan, each one plan behind its blocking,
//! nonblocking and persistent forms.

use super::algorithms::misc;
use super::schedule::{Program, Region, Span};
use super::{bytes, bytes_mut, check_len, combine, Ctx, Planned};
use crate::comm::Communicator;
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
    pub fn scan_into<T: Reducible>(&self, send: &[T], recv: &mut [T], op: Op) -> Result<()> {
        self.coll_run(self.scan_plan("scan", Some(send), recv, &op, false)?)
    }

    /// Inclusive scan in place (`MPI_IN_PLACE`).
    pub fn scan_in_place<T: Reducible>(&self, buf: &mut [T], op: Op) -> Result<()> {
        self.coll_run(self.scan_plan("scan", None, buf, &op, false)?)
    }

    /// Starts an inclusive scan in place (`MPI_Iscan` with `MPI_IN_PLACE`).
    pub fn immediate_scan_in_place<'a, 's, T: Reducible>(
        &self,
        scope: &'s Scope<'a>,
        buf: &'a mut [T],
        op: Op,
    ) -> Result<Request<'a, 's>> {
        self.coll_start(
            scope,
            self.scan_plan("immediate_scan", None, buf, &op, false)?,
        )
    }

    /// Starts an inclusive scan (`MPI_Iscan`).
    pub fn immediate_scan_into<'a, 's, T: Reducible>(
        &self,
        scope: &'s Scope<'a>,
        send: &'a [T],
        recv: &'a mut [T],
        op: Op,
    ) -> Result<Request<'a, 's>> {
        let p = self.scan_plan("immediate_scan", Some(send), recv, &op, false)?;
        self.coll_start(scope, p)
    }

    /// A persistent inclusive scan (`MPI_Scan_init`), inactive until started.
    pub fn scan_init<'a, 's, T: Reducible>(
        &self,
        scope: &'s Scope<'a>,
        send: &'a [T],
        recv: &'a mut [T],
        op: Op,
    ) -> Result<Persistent<'a, 's>> {
        self.coll_keep(
            scope,
            self.scan_plan("scan_init", Some(send), recv, &op, false)?,
        )
    }

    /// A persistent inclusive scan in place (`MPI_Scan_init` with `MPI_IN_PLACE`).
    pub fn scan_in_place_init<'a, 's, T: Reducible>(
        &self,
        scope: &'s Scope<'a>,
        buf: &'a mut [T],
        op: Op,
    ) -> Result<Persistent<'a, 's>> {
        self.coll_keep(scope, self.scan_plan("scan_init", None, buf, &op, false)?)
    }

    /// Exclusive prefix reduction: rank r's `recv` gets `send` of ranks 0..r combined in rank
    /// order; rank 0's `recv` is left unchanged (`MPI_Exscan`).
    pub fn exclusive_scan_into<T: Reducible>(
        &self,
        send: &[T],
        recv: &mut [T],
        op: Op,
    ) -> Result<()> {
        self.coll_run(self.scan_plan("exscan", Some(send), recv, &op, true)?)
    }

    /// Exclusive scan in place (`MPI_IN_PLACE`).
    pub fn exclusive_scan_in_place<T: Reducible>(&self, buf: &mut [T], op: Op) -> Result<()> {
        self.coll_run(self.scan_plan("exscan", None, buf, &op, true)?)
    }

    /// Starts an exclusive scan in place (`MPI_Iexscan` with `MPI_IN_PLACE`); rank 0's `buf`
    /// is left unchanged.
    pub fn immediate_exclusive_scan_in_place<'a, 's, T: Reducible>(
        &self,
        scope: &'s Scope<'a>,
        buf: &'a mut [T],
        op: Op,
    ) -> Result<Request<'a, 's>> {
        self.coll_start(
            scope,
            self.scan_plan("immediate_exscan", None, buf, &op, true)?,
        )
    }

    /// Starts an exclusive scan (`MPI_Iexscan`).
    pub fn immediate_exclusive_scan_into<'a, 's, T: Reducible>(
        &self,
        scope: &'s Scope<'a>,
        send: &'a [T],
        recv: &'a mut [T],
        op: Op,
    ) -> Result<Request<'a, 's>> {
        let p = self.scan_plan("immediate_exscan", Some(send), recv, &op, true)?;
        self.coll_start(scope, p)
    }

    /// A persistent exclusive scan (`MPI_Exscan_init`), inactive until started.
    pub fn exclusive_scan_init<'a, 's, T: Reducible>(
        &self,
        scope: &'s Scope<'a>,
        send: &'a [T],
        recv: &'a mut [T],
        op: Op,
    ) -> Result<Persistent<'a, 's>> {
        self.coll_keep(
            scope,
            self.scan_plan("exscan_init", Some(send), recv, &op, true)?,
        )
    }

    /// A persistent exclusive scan in place (`MPI_Exscan_init` with `MPI_IN_PLACE`).
    pub fn exclusive_scan_in_place_init<'a, 's, T: Reducible>(
        &self,
        scope: &'s Scope<'a>,
        buf: &'a mut [T],
        op: Op,
    ) -> Result<Persistent<'a, 's>> {
        self.coll_keep(scope, self.scan_plan("exscan_init", None, buf, &op, true)?)
    }
}
