//! Process handles: one rank of a communicator (or any rank) as a value, so that code reads
//! as rsmpi's does (`world.process_at_rank(1).send(&x)`). Pure sugar over the rank API of
//! [`Communicator`]: every method calls the communicator method of the same name. An
//! omitted tag is 0, as in rsmpi.

use crate::comm::Communicator;
use crate::datatype::{Buffer, BufferMut, Checked, Element, Elements, ElementsMut, Equivalence};
use crate::error::Result;
use crate::op::{Op, Reducible};

/// Root-only arguments on the ranks that are not the root.
fn none<T>() -> [T; 0] {
    []
}
use crate::point_to_point::{Message, Source, Tag};
use crate::request::{CheckedRequest, Request, Scope};
use crate::threading::ThreadLevel;
use crate::Status;

/// Rank `rank` of a communicator (rsmpi's `Process`); also the root of the rooted
/// collectives, whose methods take the root from it.
#[derive(Debug, Clone, Copy)]
pub struct Process<'c, L: ThreadLevel = crate::Single> {
    comm: &'c Communicator<L>,
    rank: i32,
}

/// Any rank of a communicator, for receives and probes (rsmpi's `AnyProcess`).
#[derive(Debug, Clone, Copy)]
pub struct AnyProcess<'c, L: ThreadLevel = crate::Single> {
    comm: &'c Communicator<L>,
}

impl<L: ThreadLevel> Communicator<L> {
    /// Rank `rank` of this communicator as a [`Process`]. The rank is checked by each
    /// operation ([`ErrorClass::Rank`](crate::ErrorClass::Rank)); `PROC_NULL` is allowed.
    pub fn process_at_rank(&self, rank: i32) -> Process<'_, L> {
        Process { comm: self, rank }
    }

    /// This process as a [`Process`] of this communicator.
    pub fn this_process(&self) -> Process<'_, L> {
        self.process_at_rank(self.rank())
    }

    /// Any rank of this communicator, to receive or probe from (`MPI_ANY_SOURCE`).
    pub fn any_process(&self) -> AnyProcess<'_, L> {
        AnyProcess { comm: self }
    }
}

impl<'c, L: ThreadLevel> Process<'c, L> {
    /// Its rank in the communicator.
    pub fn rank(&self) -> i32 {
        self.rank
    }

    /// Whether this is the calling process.
    pub fn is_self(&self) -> bool {
        self.rank == self.comm.rank()
    }

    /// The communicator it belongs to.
    pub fn communicator(&self) -> &'c Communicator<L> {
        self.comm
    }

    /// Sends `buf` to this process with tag 0 (`MPI_Send`).
    pub fn send<B: Buffer + ?Sized>(&self, buf: &B) -> Result<()> {
        self.comm.send(buf, self.rank, 0)
    }

    /// Sends `buf` with `tag`.
    pub fn send_with_tag<B: Buffer + ?Sized>(&self, buf: &B, tag: i32) -> Result<()> {
        self.comm.send(buf, self.rank, tag)
    }

    /// Synchronous send with tag 0 (`MPI_Ssend`).
    pub fn synchronous_send<B: Buffer + ?Sized>(&self, buf: &B) -> Result<()> {
        self.comm.synchronous_send(buf, self.rank, 0)
    }

    /// Buffered send with tag 0 (`MPI_Bsend`).
    pub fn buffered_send<B: Buffer + ?Sized>(&self, buf: &B) -> Result<()> {
        self.comm.buffered_send(buf, self.rank, 0)
    }

    /// Ready-mode send with tag 0 (`MPI_Rsend`).
    pub fn ready_send<B: Buffer + ?Sized>(&self, buf: &B) -> Result<()> {
        self.comm.ready_send(buf, self.rank, 0)
    }

    /// Receives one value from this process, any tag (`MPI_Recv`).
    pub fn receive<T: Equivalence>(&self) -> Result<(T, Status)> {
        self.receive_with_tag(Tag::Any)
    }

    /// Receives one value with `tag`.
    pub fn receive_with_tag<T: Equivalence>(&self, tag: impl Into<Tag>) -> Result<(T, Status)> {
        let mut v = T::zeroed();
        let st = self
            .comm
            .receive_into(std::slice::from_mut(&mut v), self.rank, tag)?;
        Ok((v, st))
    }

    /// Receives into `buf`, any tag.
    pub fn receive_into<B: BufferMut + ?Sized>(&self, buf: &mut B) -> Result<Status> {
        self.comm.receive_into(buf, self.rank, Tag::Any)
    }

    /// Receives a message of any length, any tag, into a new vector (matched probe, then
    /// receive).
    pub fn receive_vec<T: Equivalence>(&self) -> Result<(Vec<T>, Status)> {
        self.comm.receive_vec(self.rank, Tag::Any)
    }

    /// Waits for a message from this process, any tag (`MPI_Probe`).
    pub fn probe<T: Equivalence>(&self) -> Result<Status> {
        self.comm.probe::<T>(self.rank, Tag::Any)
    }

    /// Takes the next message from this process out of matching (`MPI_Mprobe`).
    pub fn matched_probe<T: Equivalence>(&self) -> Result<(Message<L>, Status)> {
        self.comm.matched_probe::<T>(self.rank, Tag::Any)
    }

    /// Starts a send with tag 0 (`MPI_Isend`).
    pub fn immediate_send<'a, 's, B: Buffer + ?Sized>(
        &self,
        scope: &'s Scope<'a>,
        buf: &'a B,
    ) -> Result<Request<'a, 's>> {
        self.comm.immediate_send(scope, buf, self.rank, 0)
    }

    /// Starts a receive from this process, any tag (`MPI_Irecv`).
    pub fn immediate_receive_into<'a, 's, B: BufferMut + ?Sized>(
        &self,
        scope: &'s Scope<'a>,
        buf: &'a mut B,
    ) -> Result<Request<'a, 's>> {
        self.comm
            .immediate_receive_into(scope, buf, self.rank, Tag::Any)
    }

    /// Broadcast from this process (the root) into `buf` on every rank (`MPI_Bcast`): one
    /// value, an array, a slice or a vector.
    pub fn broadcast_into<T: Element, B: ElementsMut<T> + ?Sized>(
        &self,
        buf: &mut B,
    ) -> Result<()> {
        self.comm.broadcast_into(self.rank, buf)
    }

    /// Gather to this process, called by a rank that is not it (`MPI_Gather`).
    pub fn gather_into<T: Element, S: Elements<T> + ?Sized>(&self, send: &S) -> Result<()> {
        self.comm.gather_into(self.rank, send, &mut none::<T>())
    }

    /// Gather to this process, called by it: `recv` gets every rank's `send` in rank order.
    pub fn gather_into_root<T: Element, S: Elements<T> + ?Sized, R: ElementsMut<T> + ?Sized>(
        &self,
        send: &S,
        recv: &mut R,
    ) -> Result<()> {
        self.comm.gather_into(self.rank, send, recv)
    }

    /// Scatter from this process, called by a rank that is not it (`MPI_Scatter`).
    pub fn scatter_into<T: Element, R: ElementsMut<T> + ?Sized>(&self, recv: &mut R) -> Result<()> {
        self.comm.scatter_into(self.rank, &none::<T>(), recv)
    }

    /// Scatter from this process, called by it: block i of `send` goes to rank i.
    pub fn scatter_into_root<T: Element, S: Elements<T> + ?Sized, R: ElementsMut<T> + ?Sized>(
        &self,
        send: &S,
        recv: &mut R,
    ) -> Result<()> {
        self.comm.scatter_into(self.rank, send, recv)
    }

    /// Reduce to this process, called by a rank that is not it (`MPI_Reduce`).
    pub fn reduce_into<T, S>(&self, send: &S, op: Op) -> Result<()>
    where
        T: Element<Raw: Reducible>,
        S: Elements<T> + ?Sized,
    {
        self.comm.reduce_into(self.rank, send, &mut none::<T>(), op)
    }

    /// Reduce to this process, called by it: `recv` gets the combination.
    pub fn reduce_into_root<T, S, R>(&self, send: &S, recv: &mut R, op: Op) -> Result<()>
    where
        T: Element<Raw: Reducible>,
        S: Elements<T> + ?Sized,
        R: ElementsMut<T> + ?Sized,
    {
        self.comm.reduce_into(self.rank, send, recv, op)
    }
}

impl<L: ThreadLevel> AnyProcess<'_, L> {
    /// Receives one value from any rank, any tag (`MPI_Recv` with `MPI_ANY_SOURCE`).
    pub fn receive<T: Equivalence>(&self) -> Result<(T, Status)> {
        self.receive_with_tag(Tag::Any)
    }

    /// Receives one value from any rank with `tag`.
    pub fn receive_with_tag<T: Equivalence>(&self, tag: impl Into<Tag>) -> Result<(T, Status)> {
        let mut v = T::zeroed();
        let st = self
            .comm
            .receive_into(std::slice::from_mut(&mut v), Source::Any, tag)?;
        Ok((v, st))
    }

    /// Receives into `buf` from any rank, any tag.
    pub fn receive_into<B: BufferMut + ?Sized>(&self, buf: &mut B) -> Result<Status> {
        self.comm.receive_into(buf, Source::Any, Tag::Any)
    }

    /// Receives a message of any length from any rank into a new vector.
    pub fn receive_vec<T: Equivalence>(&self) -> Result<(Vec<T>, Status)> {
        self.comm.receive_vec(Source::Any, Tag::Any)
    }

    /// Waits for a message from any rank (`MPI_Probe`).
    pub fn probe<T: Equivalence>(&self) -> Result<Status> {
        self.comm.probe::<T>(Source::Any, Tag::Any)
    }

    /// Takes the next message from any rank out of matching (`MPI_Mprobe`).
    pub fn matched_probe<T: Equivalence>(&self) -> Result<(Message<L>, Status)> {
        self.comm.matched_probe::<T>(Source::Any, Tag::Any)
    }

    /// Starts a receive from any rank, any tag (`MPI_Irecv`).
    pub fn immediate_receive_into<'a, 's, B: BufferMut + ?Sized>(
        &self,
        scope: &'s Scope<'a>,
        buf: &'a mut B,
    ) -> Result<Request<'a, 's>> {
        self.comm
            .immediate_receive_into(scope, buf, Source::Any, Tag::Any)
    }
}

/// The receives of `bool`/`char` ([`Checked`] types) on a process handle, forwarding to the
/// communicator's `*_checked` forms with the handle's source: every received value is checked
/// before any reaches the caller (an invalid one is an [`ErrorClass::Type`] error, the buffer
/// left unchanged).
///
/// [`ErrorClass::Type`]: crate::ErrorClass::Type
macro_rules! checked_receives {
    ($ty:ident, $me:ident => $src:expr) => {
        impl<L: ThreadLevel> $ty<'_, L> {
            /// Receives one [`Checked`] value, any tag.
            pub fn receive_checked<T: Checked + Element + Default>(&self) -> Result<(T, Status)> {
                let mut v = [T::default()];
                let st = self.receive_into_checked(&mut v)?;
                Ok((v[0], st))
            }

            /// Receives into a slice of a [`Checked`] type, any tag.
            pub fn receive_into_checked<T: Checked + Element>(
                &self,
                buf: &mut [T],
            ) -> Result<Status> {
                let $me = self;
                let src = $src;
                self.comm.receive_into_checked(buf, src, Tag::Any)
            }

            /// Receives a message of any length of a [`Checked`] type into a new vector.
            pub fn receive_vec_checked<T: Checked + Element>(&self) -> Result<(Vec<T>, Status)> {
                let $me = self;
                let src = $src;
                self.comm.receive_vec_checked(src, Tag::Any)
            }

            /// Starts a receive into a slice of a [`Checked`] type, any tag; the values are
            /// checked when the request completes.
            pub fn immediate_receive_into_checked<'a, 's, T: Checked + Element>(
                &self,
                scope: &'s Scope<'a>,
                buf: &'a mut [T],
            ) -> Result<CheckedRequest<'a, 's, T>> {
                let $me = self;
                let src = $src;
                self.comm
                    .immediate_receive_into_checked(scope, buf, src, Tag::Any)
            }
        }
    };
}

checked_receives!(Process, p => Source::Rank(p.rank));
checked_receives!(AnyProcess, _p => Source::Any);
