//! Collectives on intercommunicators: each group's data goes to the *other* group. Built
//! from the intracommunicator algorithms over each local group (on the intercommunicator's
//! private local context) plus one exchange between the groups' rank-0 leaders. Each is a
//! program like the intracommunicator collectives, so it runs blocking or, as an
//! `immediate_*` call, as a schedule in the progress engine (several may be outstanding).
//!
//! Reductions also exchange an identity of the operation between the groups and fail with
//! [`ErrorClass::Op`] on every participating process when the groups passed different ones.
//!
//! # Standard sections
//! MPI-5.0 §6.2.2 (intercommunicator collectives), §7.6 (intercommunicators).

use super::algorithms::{tree, Grp, EMPTY};
use super::schedule::{Combine, Peer, Program, Region, Span};
use super::{bytes, bytes_mut, check_len, combine, v_spans, Planned};
use crate::comm::InterCommunicator;
use crate::datatype::{Buffer, BufferMut, Equivalence};
use crate::error::{Error, ErrorClass, Result};
use crate::op::{Op, Reducible};
use crate::p2p::engine::{RecvStart, SendMode};
use crate::p2p::wire::Envelope;
use crate::point_to_point::Status;
use crate::request::{Request, Scope};
use crate::threading::ThreadLevel;

/// The root argument of a rooted intercommunicator collective.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InterRoot {
    /// This process is the root (`MPI_ROOT`).
    Root,
    /// This process is in the root's group but is not the root (`MPI_PROC_NULL`).
    Null,
    /// The root is rank `r` of the remote group; this process receives (or contributes).
    Remote(i32),
}

fn local(me: u32, size: u32) -> Grp<'static> {
    Grp::all(me, size)
}

/// Binomial-tree broadcast of several spans at once from group index 0: each rank receives
/// all of them from its parent, then forwards all of them (one round per tree level, as for
/// one span).
fn bcast_spans(pr: &mut Program, g: Grp<'_>, spans: &[Span]) {
    let (me, p) = (g.me, g.size());
    let mut mask = 1;
    while mask < p {
        if me & mask != 0 {
            for &s in spans {
                pr.recv(g.peer(me - mask), s);
            }
            pr.wait();
            break;
        }
        mask <<= 1;
    }
    mask >>= 1;
    while mask > 0 {
        if me + mask < p {
            for &s in spans {
                pr.send(g.peer(me + mask), s);
            }
        }
        mask >>= 1;
    }
    pr.wait();
}

/// What the groups of an intercommunicator reduction exchange to check that they use the
/// same operation: predefined operations by number; user operations (whose closures cannot
/// be compared across processes) by a marker and their commutativity.
fn op_identity(op: &Op) -> u64 {
    const USER: u64 = 0x5553_4552_0000_0000; // "USER"
    match op {
        Op::Sum => 1,
        Op::Prod => 2,
        Op::Min => 3,
        Op::Max => 4,
        Op::LogicalAnd => 5,
        Op::LogicalOr => 6,
        Op::LogicalXor => 7,
        Op::BitwiseAnd => 8,
        Op::BitwiseOr => 9,
        Op::BitwiseXor => 10,
        Op::MinLoc => 11,
        Op::MaxLoc => 12,
        Op::Replace => 13,
        Op::NoOp => 14,
        Op::User(u) => USER | u64::from(u.is_commutative()),
    }
}

impl<L: ThreadLevel> InterCommunicator<L> {
    fn me(&self) -> u32 {
        self.state.rank
    }

    fn lsize(&self) -> u32 {
        self.state.members.len() as u32
    }

    fn run(
        &self,
        name: &'static str,
        prog: Program,
        c: Option<Combine>,
        send: &[u8],
        recv: &mut [u8],
    ) -> Result<()> {
        Planned::new(name, prog, c, send, recv).run(&self.rt, &self.state)
    }

    fn check_remote_root(&self, call: &str, root: InterRoot) -> Result<()> {
        if let InterRoot::Remote(r) = root {
            if r < 0 || r >= self.remote_size() {
                return Err(Error::new(
                    ErrorClass::Root,
                    format!(
                        "{call}: root {r} is not a rank of the remote group (size {})",
                        self.remote_size()
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Leaders (local rank 0 of each group) swap `mine` for the other group's `theirs`, which
    /// every local rank then receives. Every local rank passes the same `mine`.
    pub(crate) fn exchange_through_leaders(&self, mine: &[u64], theirs: &mut [u64]) -> Result<()> {
        let n = std::mem::size_of_val(mine);
        let mut pr = Program::new();
        let (input, output) = (Span::new(Region::Send, 0, n), Span::new(Region::Recv, 0, n));
        if self.me() == 0 {
            pr.exchange(Peer::Remote(0), input, output);
        }
        tree::bcast_binomial(&mut pr, local(self.me(), self.lsize()), 0, output);
        self.run(
            "intercomm exchange",
            pr,
            None,
            bytes(mine),
            bytes_mut(theirs),
        )
    }

    /// Bitwise AND of `mine` over every process of both groups, on every process.
    pub(crate) fn and_over_both(&self, mine: &[u64], all: &mut [u64]) -> Result<()> {
        let n = std::mem::size_of_val(mine);
        let mut pr = Program::new();
        let g = local(self.me(), self.lsize());
        let (input, output) = (Span::new(Region::Send, 0, n), Span::new(Region::Recv, 0, n));
        tree::reduce_binomial(&mut pr, g, 0, input, output, true);
        if self.me() == 0 {
            let theirs = pr.scratch(n);
            pr.exchange(Peer::Remote(0), output, theirs);
            pr.reduce(theirs, output, false);
        }
        tree::bcast_binomial(&mut pr, g, 0, output);
        let c = combine::<u64>(&Op::BitwiseAnd)?;
        self.run(
            "intercomm agreement",
            pr,
            Some(c),
            bytes(mine),
            bytes_mut(all),
        )
    }

    /// The blocking form of a planned call.
    fn block(&self, p: Result<Planned<'_>>) -> Result<()> {
        p?.run(&self.rt, &self.state)
    }

    /// The nonblocking form of a planned call, its request in `scope`.
    fn begin<'a, 's>(
        &self,
        scope: &'s Scope<'a>,
        p: Result<Planned<'a>>,
    ) -> Result<Request<'a, 's>> {
        p?.start(&self.rt, &self.state, scope)
    }

    /// A rooted call at a process of the root's group other than the root: it takes no
    /// part, but its empty program still draws a tag in every form (a persistent restart
    /// too), keeping its tag sequence in step with the other members'.
    fn bystander<'b>(name: &'static str) -> Planned<'b> {
        Planned::new(name, Program::new(), None, &[], &mut [])
    }

    /// `MPI_Barrier` over both groups, planned.
    pub(crate) fn barrier_plan(&self, name: &'static str) -> Planned<'static> {
        let mut pr = Program::new();
        let g = local(self.me(), self.lsize());
        tree::reduce_binomial(&mut pr, g, 0, EMPTY, EMPTY, true);
        if self.me() == 0 {
            pr.exchange(Peer::Remote(0), EMPTY, EMPTY);
        }
        tree::bcast_binomial(&mut pr, g, 0, EMPTY);
        Planned::new(name, pr, None, &[], &mut [])
    }

    /// Returns once every process of both groups has called it (`MPI_Barrier`).
    pub fn barrier(&self) -> Result<()> {
        self.block(Ok(self.barrier_plan("intercomm barrier")))
    }

    /// Starts a barrier over both groups (`MPI_Ibarrier`).
    pub fn immediate_barrier<'a, 's>(&self, scope: &'s Scope<'a>) -> Result<Request<'a, 's>> {
        self.begin(scope, Ok(self.barrier_plan("intercomm immediate_barrier")))
    }

    /// `MPI_Bcast` to the other group over `b`, planned.
    pub(crate) fn broadcast_plan<'b>(
        &self,
        name: &'static str,
        root: InterRoot,
        b: &'b mut [u8],
    ) -> Result<Planned<'b>> {
        self.check_remote_root(name, root)?;
        let span = Span::new(Region::Recv, 0, b.len());
        let mut pr = Program::new();
        match root {
            InterRoot::Null => return Ok(Self::bystander(name)),
            InterRoot::Root => {
                pr.send(Peer::Remote(0), span);
                pr.wait();
            }
            InterRoot::Remote(r) => {
                if self.me() == 0 {
                    pr.recv(Peer::Remote(r as u32), span);
                    pr.wait();
                }
                tree::bcast_binomial(&mut pr, local(self.me(), self.lsize()), 0, span);
            }
        }
        Ok(Planned::new(name, pr, None, &[], b))
    }

    /// Broadcasts from the root to every process of the other group (`MPI_Bcast`): the root
    /// passes [`InterRoot::Root`], the rest of its group [`InterRoot::Null`] (their `buf` is
    /// not used), the other group `InterRoot::Remote(root)`.
    pub fn broadcast_into<B: BufferMut + ?Sized>(
        &self,
        root: InterRoot,
        buf: &mut B,
    ) -> Result<()> {
        self.block(self.broadcast_plan("intercomm broadcast", root, buf.bytes_mut()))
    }

    /// Starts a broadcast to the other group (`MPI_Ibcast`); arguments as in
    /// [`broadcast_into`](Self::broadcast_into).
    pub fn immediate_broadcast_into<'a, 's, B: BufferMut + ?Sized>(
        &self,
        scope: &'s Scope<'a>,
        root: InterRoot,
        buf: &'a mut B,
    ) -> Result<Request<'a, 's>> {
        let name = "intercomm immediate_broadcast";
        self.begin(scope, self.broadcast_plan(name, root, buf.bytes_mut()))
    }

    /// `MPI_Allreduce` across the groups, planned.
    pub(crate) fn all_reduce_plan<'b, T: Reducible>(
        &self,
        name: &'static str,
        send: &'b [T],
        recv: &'b mut [T],
        op: &Op,
    ) -> Result<Planned<'b>> {
        check_len(name, "the receive buffer", recv.len(), send.len())?;
        let c = combine::<T>(op)?;
        let id = op_identity(op);
        let n = std::mem::size_of_val(send);
        let mut pr = Program::new();
        let g = local(self.me(), self.lsize());
        let mine = pr.scratch(if self.me() == 0 { n } else { 0 });
        let (my_op, their_op) = (pr.scratch(8), pr.scratch(8));
        let output = Span::new(Region::Recv, 0, n);
        tree::reduce_binomial(
            &mut pr,
            g,
            0,
            Span::new(Region::Send, 0, n),
            mine,
            c.commutative,
        );
        if self.me() == 0 {
            // The leaders swap their operation's identity along with their group's result.
            pr.put(my_op, id);
            pr.send(Peer::Remote(0), my_op);
            pr.send(Peer::Remote(0), mine);
            pr.recv(Peer::Remote(0), their_op);
            pr.recv(Peer::Remote(0), output);
            pr.wait();
        }
        bcast_spans(&mut pr, g, &[their_op, output]);
        pr.expect(their_op, id);
        Ok(Planned::new(
            name,
            pr,
            Some(c),
            bytes(send),
            bytes_mut(recv),
        ))
    }

    /// Every process's `recv` gets the other group's `send`s combined with `op` in that
    /// group's rank order (`MPI_Allreduce`). Both groups pass the same count and operation;
    /// a different operation in the other group is an [`ErrorClass::Op`] error on every
    /// process (user operations are told apart from predefined ones and by commutativity,
    /// not from each other).
    pub fn all_reduce_into<T: Reducible>(&self, send: &[T], recv: &mut [T], op: Op) -> Result<()> {
        self.block(self.all_reduce_plan("intercomm allreduce", send, recv, &op))
    }

    /// Starts an allreduce across the groups (`MPI_Iallreduce`); see
    /// [`all_reduce_into`](Self::all_reduce_into).
    pub fn immediate_all_reduce_into<'a, 's, T: Reducible>(
        &self,
        scope: &'s Scope<'a>,
        send: &'a [T],
        recv: &'a mut [T],
        op: Op,
    ) -> Result<Request<'a, 's>> {
        let name = "intercomm immediate_allreduce";
        self.begin(scope, self.all_reduce_plan(name, send, recv, &op))
    }

    /// `MPI_Reduce_scatter` across the groups, planned: `counts` (one per process of this
    /// group) split the other group's combined `send`s over this group.
    pub(crate) fn reduce_scatter_plan<'b, T: Reducible>(
        &self,
        name: &'static str,
        send: &'b [T],
        recv: &'b mut [T],
        counts: &[usize],
        op: &Op,
    ) -> Result<Planned<'b>> {
        check_len(name, "the counts", counts.len(), self.lsize() as usize)?;
        let total = counts
            .iter()
            .try_fold(0usize, |a, &x| a.checked_add(x))
            .ok_or_else(|| Error::new(ErrorClass::Count, format!("{name}: counts overflow")))?;
        check_len(name, "the send buffer", send.len(), total)?;
        let me = self.me() as usize;
        check_len(name, "the receive buffer", recv.len(), counts[me])?;
        let c = combine::<T>(op)?;
        let id = op_identity(op);
        let elem = std::mem::size_of::<T>();
        let n = total * elem;
        let mut pr = Program::new();
        let g = local(self.me(), self.lsize());
        let lead = me == 0;
        let (mine, theirs) = (
            pr.scratch(if lead { n } else { 0 }),
            pr.scratch(if lead { n } else { 0 }),
        );
        let (my_op, their_op) = (pr.scratch(8), pr.scratch(8));
        let output = Span::new(Region::Recv, 0, counts[me] * elem);
        tree::reduce_binomial(
            &mut pr,
            g,
            0,
            Span::new(Region::Send, 0, n),
            mine,
            c.commutative,
        );
        if lead {
            // The leaders swap their operation's identity along with their group's result,
            // then deal the other group's result out over their own group.
            pr.put(my_op, id);
            pr.send(Peer::Remote(0), my_op);
            pr.send(Peer::Remote(0), mine);
            pr.recv(Peer::Remote(0), their_op);
            pr.recv(Peer::Remote(0), theirs);
            pr.wait();
            let mut at = 0;
            for (j, &k) in counts.iter().enumerate().skip(1) {
                at += counts[j - 1] * elem;
                pr.send(g.peer(j as u32), their_op);
                pr.send(g.peer(j as u32), theirs.sub(at, k * elem));
            }
            pr.wait();
            pr.expect(their_op, id);
            pr.copy(theirs.sub(0, counts[0] * elem), output);
        } else {
            pr.recv(g.peer(0), their_op);
            pr.recv(g.peer(0), output);
            pr.wait();
            pr.expect(their_op, id);
        }
        Ok(Planned::new(
            name,
            pr,
            Some(c),
            bytes(send),
            bytes_mut(recv),
        ))
    }

    /// This process's `recv` gets its block of the other group's `send`s combined with
    /// `op` (`MPI_Reduce_scatter`): `counts[i]` elements go to process i of this group, and
    /// every `send` holds their sum (the same in both groups). Operations are checked
    /// across the groups as in [`all_reduce_into`](Self::all_reduce_into).
    pub fn reduce_scatter_into<T: Reducible>(
        &self,
        send: &[T],
        recv: &mut [T],
        counts: &[usize],
        op: Op,
    ) -> Result<()> {
        let name = "intercomm reduce_scatter";
        self.block(self.reduce_scatter_plan(name, send, recv, counts, &op))
    }

    /// `MPI_Allgather` across the groups, planned.
    pub(crate) fn all_gather_plan<'b, T: Equivalence>(
        &self,
        name: &'static str,
        send: &'b [T],
        recv: &'b mut [T],
    ) -> Result<Planned<'b>> {
        // The blocks received are as long as the other group's send blocks, which may
        // differ from this group's.
        let q = self.remote_size().max(1) as usize;
        if !recv.len().is_multiple_of(q) {
            return Err(Error::new(
                ErrorClass::Count,
                format!(
                    "{name}: the receive buffer's {} elements do not split into {q} blocks",
                    recv.len()
                ),
            ));
        }
        let n = std::mem::size_of_val(send);
        let mut pr = Program::new();
        let g = local(self.me(), self.lsize());
        let mine = pr.scratch(if self.me() == 0 {
            n * self.lsize() as usize
        } else {
            0
        });
        let output = Span::new(Region::Recv, 0, std::mem::size_of_val(recv));
        tree::gather_binomial(&mut pr, g, 0, Span::new(Region::Send, 0, n), mine);
        if self.me() == 0 {
            pr.exchange(Peer::Remote(0), mine, output);
        }
        tree::bcast_binomial(&mut pr, g, 0, output);
        Ok(Planned::new(name, pr, None, bytes(send), bytes_mut(recv)))
    }

    /// Every process's `recv` gets the other group's `send`s in that group's rank order
    /// (`MPI_Allgather`): `recv` holds remote-size blocks, each as long as the other group's
    /// `send`s (which may differ from this group's).
    pub fn all_gather_into<T: Equivalence>(&self, send: &[T], recv: &mut [T]) -> Result<()> {
        self.block(self.all_gather_plan("intercomm allgather", send, recv))
    }

    /// Starts an allgather across the groups (`MPI_Iallgather`); see
    /// [`all_gather_into`](Self::all_gather_into).
    pub fn immediate_all_gather_into<'a, 's, T: Equivalence>(
        &self,
        scope: &'s Scope<'a>,
        send: &'a [T],
        recv: &'a mut [T],
    ) -> Result<Request<'a, 's>> {
        let name = "intercomm immediate_allgather";
        self.begin(scope, self.all_gather_plan(name, send, recv))
    }

    /// `MPI_Reduce` to a root of the other group, planned.
    pub(crate) fn reduce_plan<'b, T: Reducible>(
        &self,
        name: &'static str,
        root: InterRoot,
        send: &'b [T],
        recv: &'b mut [T],
        op: &Op,
    ) -> Result<Planned<'b>> {
        self.check_remote_root(name, root)?;
        let c = combine::<T>(op)?;
        let id = op_identity(op);
        let mut pr = Program::new();
        let (my_op, their_op) = (pr.scratch(8), pr.scratch(8));
        match root {
            InterRoot::Null => return Ok(Self::bystander(name)),
            InterRoot::Root => {
                // Swap operation identities with the contributing group's leader first, so
                // that nothing is reduced or delivered under different operations.
                pr.put(my_op, id);
                pr.send(Peer::Remote(0), my_op);
                pr.recv(Peer::Remote(0), their_op);
                pr.wait();
                pr.expect(their_op, id);
                pr.recv(
                    Peer::Remote(0),
                    Span::new(Region::Recv, 0, std::mem::size_of_val(recv)),
                );
                pr.wait();
            }
            InterRoot::Remote(r) => {
                let g = local(self.me(), self.lsize());
                if self.me() == 0 {
                    pr.put(my_op, id);
                    pr.recv(Peer::Remote(r as u32), their_op);
                    pr.send(Peer::Remote(r as u32), my_op);
                    pr.wait();
                }
                tree::bcast_binomial(&mut pr, g, 0, their_op);
                pr.expect(their_op, id);
                let n = std::mem::size_of_val(send);
                let acc = pr.scratch(if self.me() == 0 { n } else { 0 });
                tree::reduce_binomial(
                    &mut pr,
                    g,
                    0,
                    Span::new(Region::Send, 0, n),
                    acc,
                    c.commutative,
                );
                if self.me() == 0 {
                    pr.send(Peer::Remote(r as u32), acc);
                    pr.wait();
                }
            }
        }
        Ok(Planned::new(
            name,
            pr,
            Some(c),
            bytes(send),
            bytes_mut(recv),
        ))
    }

    /// Combines the other group's `send`s with `op` into the root's `recv` (`MPI_Reduce`);
    /// see [`InterRoot`] for who passes what. `recv` is used at the root, `send` in the
    /// other group. The root and the other group must pass the same operation; otherwise the
    /// root and every process of the other group get an [`ErrorClass::Op`] error and nothing
    /// is combined.
    pub fn reduce_into<T: Reducible>(
        &self,
        root: InterRoot,
        send: &[T],
        recv: &mut [T],
        op: Op,
    ) -> Result<()> {
        self.block(self.reduce_plan("intercomm reduce", root, send, recv, &op))
    }

    /// Starts a reduce to the other group's root (`MPI_Ireduce`); see
    /// [`reduce_into`](Self::reduce_into).
    pub fn immediate_reduce_into<'a, 's, T: Reducible>(
        &self,
        scope: &'s Scope<'a>,
        root: InterRoot,
        send: &'a [T],
        recv: &'a mut [T],
        op: Op,
    ) -> Result<Request<'a, 's>> {
        let name = "intercomm immediate_reduce";
        self.begin(scope, self.reduce_plan(name, root, send, recv, &op))
    }

    /// `MPI_Gather` to a root of the other group, planned.
    pub(crate) fn gather_plan<'b, T: Equivalence>(
        &self,
        name: &'static str,
        root: InterRoot,
        send: &'b [T],
        recv: &'b mut [T],
    ) -> Result<Planned<'b>> {
        self.check_remote_root(name, root)?;
        let mut pr = Program::new();
        match root {
            InterRoot::Null => return Ok(Self::bystander(name)),
            InterRoot::Root => {
                pr.recv(
                    Peer::Remote(0),
                    Span::new(Region::Recv, 0, std::mem::size_of_val(recv)),
                );
                pr.wait();
            }
            InterRoot::Remote(r) => {
                let n = std::mem::size_of_val(send);
                let all = pr.scratch(if self.me() == 0 {
                    n * self.lsize() as usize
                } else {
                    0
                });
                tree::gather_binomial(
                    &mut pr,
                    local(self.me(), self.lsize()),
                    0,
                    Span::new(Region::Send, 0, n),
                    all,
                );
                if self.me() == 0 {
                    pr.send(Peer::Remote(r as u32), all);
                    pr.wait();
                }
            }
        }
        Ok(Planned::new(name, pr, None, bytes(send), bytes_mut(recv)))
    }

    /// Gathers the other group's `send`s, in its rank order, into the root's `recv`
    /// (`MPI_Gather`).
    pub fn gather_into<T: Equivalence>(
        &self,
        root: InterRoot,
        send: &[T],
        recv: &mut [T],
    ) -> Result<()> {
        self.block(self.gather_plan("intercomm gather", root, send, recv))
    }

    /// Starts a gather to the other group's root (`MPI_Igather`); see
    /// [`gather_into`](Self::gather_into).
    pub fn immediate_gather_into<'a, 's, T: Equivalence>(
        &self,
        scope: &'s Scope<'a>,
        root: InterRoot,
        send: &'a [T],
        recv: &'a mut [T],
    ) -> Result<Request<'a, 's>> {
        let name = "intercomm immediate_gather";
        self.begin(scope, self.gather_plan(name, root, send, recv))
    }

    /// `MPI_Scatter` from a root of the other group, planned.
    pub(crate) fn scatter_plan<'b, T: Equivalence>(
        &self,
        name: &'static str,
        root: InterRoot,
        send: &'b [T],
        recv: &'b mut [T],
    ) -> Result<Planned<'b>> {
        self.check_remote_root(name, root)?;
        let mut pr = Program::new();
        match root {
            InterRoot::Null => return Ok(Self::bystander(name)),
            InterRoot::Root => {
                check_len(
                    name,
                    "the send buffer",
                    send.len() % self.remote_size().max(1) as usize,
                    0,
                )?;
                pr.send(
                    Peer::Remote(0),
                    Span::new(Region::Send, 0, std::mem::size_of_val(send)),
                );
                pr.wait();
            }
            InterRoot::Remote(r) => {
                let n = std::mem::size_of_val(recv);
                let all = pr.scratch(if self.me() == 0 {
                    n * self.lsize() as usize
                } else {
                    0
                });
                if self.me() == 0 {
                    pr.recv(Peer::Remote(r as u32), all);
                    pr.wait();
                }
                tree::scatter_binomial(
                    &mut pr,
                    local(self.me(), self.lsize()),
                    0,
                    all,
                    Some(Span::new(Region::Recv, 0, n)),
                    n,
                );
            }
        }
        Ok(Planned::new(name, pr, None, bytes(send), bytes_mut(recv)))
    }

    /// Scatters the root's `send` (remote-size blocks) over the other group, block i to its
    /// rank i (`MPI_Scatter`).
    pub fn scatter_into<T: Equivalence>(
        &self,
        root: InterRoot,
        send: &[T],
        recv: &mut [T],
    ) -> Result<()> {
        self.block(self.scatter_plan("intercomm scatter", root, send, recv))
    }

    /// Starts a scatter from the other group's root (`MPI_Iscatter`); see
    /// [`scatter_into`](Self::scatter_into).
    pub fn immediate_scatter_into<'a, 's, T: Equivalence>(
        &self,
        scope: &'s Scope<'a>,
        root: InterRoot,
        send: &'a [T],
        recv: &'a mut [T],
    ) -> Result<Request<'a, 's>> {
        let name = "intercomm immediate_scatter";
        self.begin(scope, self.scatter_plan(name, root, send, recv))
    }

    /// `MPI_Alltoall` across the groups, planned.
    pub(crate) fn all_to_all_plan<'b, T: Equivalence>(
        &self,
        name: &'static str,
        send: &'b [T],
        recv: &'b mut [T],
    ) -> Result<Planned<'b>> {
        // The blocks sent and received may differ in size: this group's send block is the
        // other group's receive block, and the other way round.
        let q = self.remote_size().max(1) as usize;
        for (what, len) in [("send", send.len()), ("receive", recv.len())] {
            if !len.is_multiple_of(q) {
                return Err(Error::new(
                    ErrorClass::Count,
                    format!(
                        "{name}: the {what} buffer's {len} elements do not split into {q} blocks"
                    ),
                ));
            }
        }
        let (ns, nr) = (
            std::mem::size_of_val(send) / q,
            std::mem::size_of_val(recv) / q,
        );
        let mut pr = Program::new();
        for s in 0..q {
            let j = (self.me() as usize + s) % q;
            pr.recv(Peer::Remote(j as u32), Span::new(Region::Recv, j * nr, nr));
        }
        for s in 0..q {
            let j = (self.me() as usize + s) % q;
            pr.send(Peer::Remote(j as u32), Span::new(Region::Send, j * ns, ns));
        }
        pr.wait();
        Ok(Planned::new(name, pr, None, bytes(send), bytes_mut(recv)))
    }

    /// Block j of `send` goes to remote rank j; remote rank j's block for this process lands
    /// in block j of `recv` (`MPI_Alltoall`). Each buffer holds remote-size blocks; a send
    /// block is as long as the other group's receive blocks (the two may differ).
    pub fn all_to_all_into<T: Equivalence>(&self, send: &[T], recv: &mut [T]) -> Result<()> {
        self.block(self.all_to_all_plan("intercomm alltoall", send, recv))
    }

    /// Starts an all-to-all across the groups (`MPI_Ialltoall`); see
    /// [`all_to_all_into`](Self::all_to_all_into).
    pub fn immediate_all_to_all_into<'a, 's, T: Equivalence>(
        &self,
        scope: &'s Scope<'a>,
        send: &'a [T],
        recv: &'a mut [T],
    ) -> Result<Request<'a, 's>> {
        let name = "intercomm immediate_alltoall";
        self.begin(scope, self.all_to_all_plan(name, send, recv))
    }

    /// `MPI_Gatherv` to a root of the other group, planned.
    pub(crate) fn gather_varcount_plan<'b, T: Equivalence>(
        &self,
        name: &'static str,
        root: InterRoot,
        send: &'b [T],
        recv: &'b mut [T],
        counts: &[usize],
        displs: &[usize],
    ) -> Result<Planned<'b>> {
        self.rooted_v_plan(name, root, false, send, recv, (counts, displs))
    }

    /// `MPI_Gatherv` (`scatter` false) or `MPI_Scatterv` across the groups, planned: the
    /// root's buffer (`recv`, or `send` to scatter) in blocks `counts`/`displs`, one per
    /// remote process, each moved straight between the root and that process.
    fn rooted_v_plan<'b, T: Equivalence>(
        &self,
        name: &'static str,
        root: InterRoot,
        scatter: bool,
        send: &'b [T],
        recv: &'b mut [T],
        (counts, displs): (&[usize], &[usize]),
    ) -> Result<Planned<'b>> {
        self.check_remote_root(name, root)?;
        let (region, len) = if scatter {
            (Region::Send, send.len())
        } else {
            (Region::Recv, recv.len())
        };
        let mut pr = Program::new();
        let moves = |pr: &mut Program, receive: bool, peer: Peer, s: Span| {
            if receive {
                pr.recv(peer, s);
            } else {
                pr.send(peer, s);
            }
        };
        match root {
            InterRoot::Null => return Ok(Self::bystander(name)),
            InterRoot::Root => {
                let q = self.remote_size() as u32;
                let elem = std::mem::size_of::<T>();
                let spans = v_spans(name, region, counts, displs, len, q, elem)?;
                for (j, s) in spans.into_iter().enumerate() {
                    moves(&mut pr, !scatter, Peer::Remote(j as u32), s);
                }
            }
            InterRoot::Remote(r) => {
                // This process's whole buffer, the other side of its block at the root.
                let all = if scatter {
                    Span::new(Region::Recv, 0, std::mem::size_of_val(recv))
                } else {
                    Span::new(Region::Send, 0, std::mem::size_of_val(send))
                };
                moves(&mut pr, scatter, Peer::Remote(r as u32), all);
            }
        }
        pr.wait();
        Ok(Planned::new(name, pr, None, bytes(send), bytes_mut(recv)))
    }

    /// Gathers remote rank i's `send` into the root's `recv` at element `displs[i]`, where
    /// `counts[i]` elements are expected (`MPI_Gatherv`); `counts` and `displs` are used at
    /// the root only. Each remote process's message goes straight to the root.
    pub fn gather_varcount_into<T: Equivalence>(
        &self,
        root: InterRoot,
        send: &[T],
        recv: &mut [T],
        counts: &[usize],
        displs: &[usize],
    ) -> Result<()> {
        let name = "intercomm gatherv";
        self.block(self.gather_varcount_plan(name, root, send, recv, counts, displs))
    }

    /// `MPI_Scatterv` from a root of the other group, planned.
    pub(crate) fn scatter_varcount_plan<'b, T: Equivalence>(
        &self,
        name: &'static str,
        root: InterRoot,
        send: &'b [T],
        counts: &[usize],
        displs: &[usize],
        recv: &'b mut [T],
    ) -> Result<Planned<'b>> {
        self.rooted_v_plan(name, root, true, send, recv, (counts, displs))
    }

    /// Sends `counts[i]` elements of the root's `send` from element `displs[i]` to remote
    /// rank i, into its `recv` (`MPI_Scatterv`); `send`, `counts` and `displs` are used at
    /// the root only.
    pub fn scatter_varcount_into<T: Equivalence>(
        &self,
        root: InterRoot,
        send: &[T],
        counts: &[usize],
        displs: &[usize],
        recv: &mut [T],
    ) -> Result<()> {
        let name = "intercomm scatterv";
        self.block(self.scatter_varcount_plan(name, root, send, counts, displs, recv))
    }

    /// `MPI_Allgatherv` across the groups, planned.
    pub(crate) fn all_gather_varcount_plan<'b, T: Equivalence>(
        &self,
        name: &'static str,
        send: &'b [T],
        recv: &'b mut [T],
        counts: &[usize],
        displs: &[usize],
    ) -> Result<Planned<'b>> {
        let q = self.remote_size() as u32;
        let elem = std::mem::size_of::<T>();
        let spans = v_spans(name, Region::Recv, counts, displs, recv.len(), q, elem)?;
        let mut pr = Program::new();
        for (j, s) in spans.into_iter().enumerate() {
            pr.recv(Peer::Remote(j as u32), s);
        }
        let all = Span::new(Region::Send, 0, std::mem::size_of_val(send));
        for j in 0..q {
            pr.send(Peer::Remote(j), all);
        }
        pr.wait();
        Ok(Planned::new(name, pr, None, bytes(send), bytes_mut(recv)))
    }

    /// Every process's `recv` gets remote rank i's `send` at element `displs[i]`, where
    /// `counts[i]` elements are expected (`MPI_Allgatherv`).
    pub fn all_gather_varcount_into<T: Equivalence>(
        &self,
        send: &[T],
        recv: &mut [T],
        counts: &[usize],
        displs: &[usize],
    ) -> Result<()> {
        let name = "intercomm allgatherv";
        self.block(self.all_gather_varcount_plan(name, send, recv, counts, displs))
    }

    /// `MPI_Alltoallv` across the groups, planned.
    #[allow(clippy::too_many_arguments)] // the standard's arguments
    pub(crate) fn all_to_all_varcount_plan<'b, T: Equivalence>(
        &self,
        name: &'static str,
        send: &'b [T],
        scounts: &[usize],
        sdispls: &[usize],
        recv: &'b mut [T],
        rcounts: &[usize],
        rdispls: &[usize],
    ) -> Result<Planned<'b>> {
        let q = self.remote_size() as u32;
        let elem = std::mem::size_of::<T>();
        let sspans = v_spans(name, Region::Send, scounts, sdispls, send.len(), q, elem)?;
        let rspans = v_spans(name, Region::Recv, rcounts, rdispls, recv.len(), q, elem)?;
        let mut pr = Program::new();
        for (j, s) in rspans.into_iter().enumerate() {
            pr.recv(Peer::Remote(j as u32), s);
        }
        for (j, s) in sspans.into_iter().enumerate() {
            pr.send(Peer::Remote(j as u32), s);
        }
        pr.wait();
        Ok(Planned::new(name, pr, None, bytes(send), bytes_mut(recv)))
    }

    /// `scounts[j]` elements of `send` from `sdispls[j]` go to remote rank j; remote rank
    /// j's block for this process lands in `recv` at `rdispls[j]`, `rcounts[j]` elements
    /// expected (`MPI_Alltoallv`).
    #[allow(clippy::too_many_arguments)] // the standard's arguments
    pub fn all_to_all_varcount_into<T: Equivalence>(
        &self,
        send: &[T],
        scounts: &[usize],
        sdispls: &[usize],
        recv: &mut [T],
        rcounts: &[usize],
        rdispls: &[usize],
    ) -> Result<()> {
        let name = "intercomm alltoallv";
        self.block(
            self.all_to_all_varcount_plan(name, send, scounts, sdispls, recv, rcounts, rdispls),
        )
    }

    /// Sends `buf` to rank `dest` of the remote group (`MPI_Send` on an intercommunicator).
    pub fn send<B: Buffer + ?Sized>(&self, buf: &B, dest: i32, tag: i32) -> Result<()> {
        let to = *usize::try_from(dest)
            .ok()
            .and_then(|d| self.remote().get(d))
            .ok_or_else(|| {
                Error::new(
                    ErrorClass::Rank,
                    format!(
                        "send: rank {dest} is not in the remote group (size {})",
                        self.remote_size()
                    ),
                )
            })?;
        if tag < 0 {
            return Err(Error::new(
                ErrorClass::Tag,
                format!("send: tag {tag} is negative"),
            ));
        }
        let env = Envelope {
            ctx: self.state.context,
            src: self.state.rank,
            tag,
        };
        let b = buf.bytes();
        // SAFETY: `b` stays borrowed until this blocking send completes.
        let id = self
            .rt
            .engine
            .with(|e| unsafe { e.isend(SendMode::Standard, b.as_ptr(), b.len(), to, env) })?;
        if let Some(id) = id {
            crate::request::wait_raw(&self.rt, id, "intercomm send")?;
        }
        Ok(())
    }

    /// Receives into `buf` from rank `source` of the remote group (`MPI_Recv` on an
    /// intercommunicator). A longer message is an [`ErrorClass::Truncate`] error.
    pub fn receive_into<B: BufferMut + ?Sized>(
        &self,
        buf: &mut B,
        source: i32,
        tag: i32,
    ) -> Result<Status> {
        if source < 0 || source >= self.remote_size() {
            return Err(Error::new(
                ErrorClass::Rank,
                format!(
                    "receive: rank {source} is not in the remote group (size {})",
                    self.remote_size()
                ),
            ));
        }
        let elem = buf.element_size();
        let b = buf.bytes_mut();
        let ctx = self.state.context;
        // SAFETY: `b` stays exclusively borrowed until this blocking receive completes.
        let start = self
            .rt
            .engine
            .with(|e| unsafe { e.irecv(b.as_mut_ptr(), b.len(), ctx, source, tag) })?;
        let raw = match start {
            RecvStart::Done(st) => st,
            RecvStart::Pending(id) => crate::request::wait_raw(&self.rt, id, "intercomm receive")?,
        };
        crate::request::status_result(raw, elem)
    }
}

#[cfg(test)]
mod tests {
    use super::super::schedule::sim::{run, Bufs};
    use super::*;

    #[test]
    fn bcast_spans_delivers_every_span_to_every_rank() {
        for p in 1..=9u32 {
            let (a, b) = (Span::new(Region::Recv, 0, 3), Span::new(Region::Recv, 8, 5));
            let progs: Vec<Program> = (0..p)
                .map(|me| {
                    let mut pr = Program::new();
                    bcast_spans(&mut pr, local(me, p), &[a, b]);
                    pr
                })
                .collect();
            let mut bufs: Vec<Bufs> = (0..p)
                .map(|me| Bufs {
                    send: vec![],
                    recv: if me == 0 {
                        (1..=13).collect()
                    } else {
                        vec![0; 13]
                    },
                })
                .collect();
            run(&progs, &mut bufs, None);
            for (r, b) in bufs.iter().enumerate() {
                assert_eq!(b.recv[..3], [1, 2, 3], "p {p} rank {r}");
                assert_eq!(b.recv[8..], [9, 10, 11, 12, 13], "p {p} rank {r}");
            }
        }
    }

    #[test]
    fn operations_have_distinct_identities() {
        let mut ops = Op::PREDEFINED.to_vec();
        ops.push(Op::user::<i32>(true, |_, _| {}));
        ops.push(Op::user::<i32>(false, |_, _| {}));
        let mut ids: Vec<u64> = ops.iter().map(op_identity).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), ops.len());
    }
}
