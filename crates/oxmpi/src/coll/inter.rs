//! Collectives on intercommunicators: each group's data goes to the *other* group. Built
//! from the intracommunicator algorithms over each local group (on the intercommunicator's
//! private local context) plus one exchange between the groups' rank-0 leaders.
//!
//! # Standard sections
//! MPI-5.0 §6.2.2 (intercommunicator collectives), §7.6 (intercommunicators).

use super::algorithms::{tree, Grp, EMPTY};
use super::schedule::{Combine, Peer, Program, Raw, Region, Span};
use super::{bytes, bytes_mut, check_len, combine, launch, Plan};
use crate::comm::InterCommunicator;
use crate::datatype::{Buffer, BufferMut, Equivalence};
use crate::error::{Error, ErrorClass, Result};
use crate::op::{Op, Reducible};
use crate::p2p::engine::{RecvStart, SendMode};
use crate::p2p::wire::Envelope;
use crate::point_to_point::Status;
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
        send: Raw,
        recv: Raw,
    ) -> Result<()> {
        let plan = Plan {
            name,
            prog,
            combine: c,
        };
        // SAFETY: every caller passes regions of slices it borrows for the whole call.
        unsafe { launch(&self.rt, &self.state, None, plan, send, recv) }.map(drop)
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
            Raw::read(bytes(mine)),
            Raw::write(bytes_mut(theirs)),
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
            Raw::read(bytes(mine)),
            Raw::write(bytes_mut(all)),
        )
    }

    /// Returns once every process of both groups has called it (`MPI_Barrier`).
    pub fn barrier(&self) -> Result<()> {
        let mut pr = Program::new();
        let g = local(self.me(), self.lsize());
        tree::reduce_binomial(&mut pr, g, 0, EMPTY, EMPTY, true);
        if self.me() == 0 {
            pr.exchange(Peer::Remote(0), EMPTY, EMPTY);
        }
        tree::bcast_binomial(&mut pr, g, 0, EMPTY);
        self.run("intercomm barrier", pr, None, Raw::EMPTY, Raw::EMPTY)
    }

    /// Broadcasts from the root to every process of the other group (`MPI_Bcast`): the root
    /// passes [`InterRoot::Root`], the rest of its group [`InterRoot::Null`] (their `buf` is
    /// not used), the other group `InterRoot::Remote(root)`.
    pub fn broadcast_into<B: BufferMut + ?Sized>(
        &self,
        root: InterRoot,
        buf: &mut B,
    ) -> Result<()> {
        self.check_remote_root("broadcast", root)?;
        let b = buf.bytes_mut();
        let span = Span::new(Region::Recv, 0, b.len());
        let mut pr = Program::new();
        match root {
            InterRoot::Null => {
                // Keep in step with the group's other members, which use this call's tag.
                self.state.next_tag();
                return Ok(());
            }
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
        self.run("intercomm broadcast", pr, None, Raw::EMPTY, Raw::write(b))
    }

    /// Every process's `recv` gets the other group's `send`s combined with `op` in that
    /// group's rank order (`MPI_Allreduce`). Both groups pass the same count.
    pub fn all_reduce_into<T: Reducible>(&self, send: &[T], recv: &mut [T], op: Op) -> Result<()> {
        check_len("allreduce", "the receive buffer", recv.len(), send.len())?;
        let c = combine::<T>(&op)?;
        let n = std::mem::size_of_val(send);
        let mut pr = Program::new();
        let g = local(self.me(), self.lsize());
        let mine = pr.scratch(if self.me() == 0 { n } else { 0 });
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
            pr.exchange(Peer::Remote(0), mine, output);
        }
        tree::bcast_binomial(&mut pr, g, 0, output);
        self.run(
            "intercomm allreduce",
            pr,
            Some(c),
            Raw::read(bytes(send)),
            Raw::write(bytes_mut(recv)),
        )
    }

    /// Every process's `recv` gets the other group's `send`s in that group's rank order
    /// (`MPI_Allgather`): `recv` holds remote-size blocks of `send.len()` elements.
    pub fn all_gather_into<T: Equivalence>(&self, send: &[T], recv: &mut [T]) -> Result<()> {
        check_len(
            "allgather",
            "the receive buffer",
            recv.len(),
            send.len() * self.remote_size() as usize,
        )?;
        let n = std::mem::size_of_val(send);
        let mut pr = Program::new();
        let g = local(self.me(), self.lsize());
        let mine = pr.scratch(if self.me() == 0 {
            n * self.lsize() as usize
        } else {
            0
        });
        let output = Span::new(Region::Recv, 0, n * self.remote_size() as usize);
        tree::gather_binomial(&mut pr, g, 0, Span::new(Region::Send, 0, n), mine);
        if self.me() == 0 {
            pr.exchange(Peer::Remote(0), mine, output);
        }
        tree::bcast_binomial(&mut pr, g, 0, output);
        self.run(
            "intercomm allgather",
            pr,
            None,
            Raw::read(bytes(send)),
            Raw::write(bytes_mut(recv)),
        )
    }

    /// Combines the other group's `send`s with `op` into the root's `recv` (`MPI_Reduce`);
    /// see [`InterRoot`] for who passes what. `recv` is used at the root, `send` in the
    /// other group.
    pub fn reduce_into<T: Reducible>(
        &self,
        root: InterRoot,
        send: &[T],
        recv: &mut [T],
        op: Op,
    ) -> Result<()> {
        self.check_remote_root("reduce", root)?;
        let c = combine::<T>(&op)?;
        let mut pr = Program::new();
        match root {
            InterRoot::Null => {
                // Keep in step with the group's other members, which use this call's tag.
                self.state.next_tag();
                return Ok(());
            }
            InterRoot::Root => {
                pr.recv(
                    Peer::Remote(0),
                    Span::new(Region::Recv, 0, std::mem::size_of_val(recv)),
                );
                pr.wait();
            }
            InterRoot::Remote(r) => {
                let n = std::mem::size_of_val(send);
                let acc = pr.scratch(if self.me() == 0 { n } else { 0 });
                tree::reduce_binomial(
                    &mut pr,
                    local(self.me(), self.lsize()),
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
        self.run(
            "intercomm reduce",
            pr,
            Some(c),
            Raw::read(bytes(send)),
            Raw::write(bytes_mut(recv)),
        )
    }

    /// Gathers the other group's `send`s, in its rank order, into the root's `recv`
    /// (`MPI_Gather`).
    pub fn gather_into<T: Equivalence>(
        &self,
        root: InterRoot,
        send: &[T],
        recv: &mut [T],
    ) -> Result<()> {
        self.check_remote_root("gather", root)?;
        let mut pr = Program::new();
        match root {
            InterRoot::Null => {
                // Keep in step with the group's other members, which use this call's tag.
                self.state.next_tag();
                return Ok(());
            }
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
        self.run(
            "intercomm gather",
            pr,
            None,
            Raw::read(bytes(send)),
            Raw::write(bytes_mut(recv)),
        )
    }

    /// Scatters the root's `send` (remote-size blocks) over the other group, block i to its
    /// rank i (`MPI_Scatter`).
    pub fn scatter_into<T: Equivalence>(
        &self,
        root: InterRoot,
        send: &[T],
        recv: &mut [T],
    ) -> Result<()> {
        self.check_remote_root("scatter", root)?;
        let mut pr = Program::new();
        match root {
            InterRoot::Null => {
                // Keep in step with the group's other members, which use this call's tag.
                self.state.next_tag();
                return Ok(());
            }
            InterRoot::Root => {
                check_len(
                    "scatter",
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
        self.run(
            "intercomm scatter",
            pr,
            None,
            Raw::read(bytes(send)),
            Raw::write(bytes_mut(recv)),
        )
    }

    /// Block j of `send` goes to remote rank j; remote rank j's block for this process lands
    /// in block j of `recv` (`MPI_Alltoall`).
    pub fn all_to_all_into<T: Equivalence>(&self, send: &[T], recv: &mut [T]) -> Result<()> {
        let q = self.remote_size().max(1) as usize;
        check_len("alltoall", "the receive buffer", recv.len(), send.len())?;
        if !send.len().is_multiple_of(q) {
            return Err(Error::new(
                ErrorClass::Count,
                format!(
                    "alltoall: {} elements do not split into {q} blocks",
                    send.len()
                ),
            ));
        }
        let n = std::mem::size_of_val(send) / q;
        let mut pr = Program::new();
        for s in 0..q {
            let j = (self.me() as usize + s) % q;
            pr.recv(Peer::Remote(j as u32), Span::new(Region::Recv, j * n, n));
        }
        for s in 0..q {
            let j = (self.me() as usize + s) % q;
            pr.send(Peer::Remote(j as u32), Span::new(Region::Send, j * n, n));
        }
        pr.wait();
        self.run(
            "intercomm alltoall",
            pr,
            None,
            Raw::read(bytes(send)),
            Raw::write(bytes_mut(recv)),
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
            crate::request::wait_raw(&self.rt, id)?;
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
            RecvStart::Pending(id) => crate::request::wait_raw(&self.rt, id)?,
        };
        crate::request::status_result(raw, elem)
    }
}
