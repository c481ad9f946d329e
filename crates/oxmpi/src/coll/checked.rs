//! The `*_checked` forms: `bool` and `char` ([`Checked`] types)
//! in every receiving form whose typed form cannot take them.
//!
//! Which form to call for `bool`/`char`:
//! - the blocking intracommunicator collectives (broadcast, gather(v), scatter(v),
//!   allgather(v), alltoall(v), the reductions, scans, reduce-scatter(-block), the in-place
//!   forms) take them directly, through [`Elements`]/[`ElementsMut`];
//! - every other receiving collective has a twin with `_checked` appended and the same
//!   arguments: the nonblocking (`immediate_*`) and persistent (`*_init`) forms, in place,
//!   v and w included, alltoallw (whose blocks stay in bytes), the neighbourhood
//!   collectives (all three forms) and the intercommunicator collectives;
//! - point to point: `receive_into_checked`, `immediate_receive_into_checked`,
//!   `receive_init_checked`, `send_receive_into_checked`,
//!   `send_receive_replace_into_checked`, `receive_vec_checked` on a communicator,
//!   `receive_into_checked` on an intercommunicator, and a matched [`Message`](crate::Message)'s
//!   `matched_receive_into_checked`, `immediate_matched_receive_into_checked` and
//!   `matched_receive_vec_checked`. Sends take `bool`/`char` in every form.
//!
//! Each form is the typed one run over the raw form of the values (`u8`, `u32`): what is
//! sent goes as its raw view, what is received lands in a raw copy of the receive buffer
//! (a blocking form's local copy, or the stage a [`CheckedRequest`] / [`CheckedPersistent`]
//! owns), and every value of the copy is checked before any reaches the caller's buffer: an
//! invalid one is an [`ErrorClass::Type`](crate::ErrorClass::Type) error and the buffer is
//! left as it was. Reductions allow what the blocking forms allow (LAND, LOR, LXOR on `bool`,
//! MIN and MAX on `char`); anything else is an [`ErrorClass::Op`](crate::ErrorClass::Op)
//! error before anything is sent. A form that receives nothing (scatter in place at its
//! root) returns the typed form's plain request.
//!
//! The forms are generated from one table per communicator kind by `checked!`: an entry
//! names the form, the typed form it runs and its arguments, each tagged with how it passes
//! to the typed form.

use super::{bytes, bytes_mut, InterRoot};
use crate::comm::{Communicator, InterCommunicator};
use crate::datatype::elements::{check_op, with_raw_mut};
use crate::datatype::{Checked, Element, Elements, ElementsMut};
use crate::error::Result;
use crate::op::{Op, Reducible};
use crate::point_to_point::{receive_checked, Status};
use crate::request::{CheckedPersistent, CheckedRequest, Persistent, Request, Scope};
use crate::threading::ThreadLevel;

/// The parameter type of an argument tagged `send`/`recv` in mode `block` (plain borrows)
/// or `imm`/`keep` (borrows for the request's `'a`).
macro_rules! checked_ty {
    (block send) => { &(impl Elements<T> + ?Sized) };
    (block recv) => { &mut (impl ElementsMut<T> + ?Sized) };
    ($mode:ident send) => { &'a (impl Elements<T> + ?Sized) };
    ($mode:ident recv) => { &'a mut (impl ElementsMut<T> + ?Sized) };
}

/// Checked forms from a table. An entry is
/// `MODE NAME => UNCHECKED(ARGS);` with MODE `block` (returns `Result<()>`), `imm`
/// (takes a scope, returns a [`CheckedRequest`]) or `keep` (a [`CheckedPersistent`]); a form
/// whose arguments have no `recv` (scatter in place) returns the unchecked form's
/// [`Request`] / [`Persistent`]. Argument tags:
/// - `send x`: elements of `T` to send, passed as their raw view;
/// - `sendb x`: the same, passed as bytes (alltoallw's byte blocks);
/// - `recv x`: elements of `T` to receive into, passed as the raw stage, checked on completion;
/// - `recvb x`: the same, the stage passed as bytes;
/// - `op x`: the reduction, refused unless defined on `T`;
/// - `val x: TYPE`: passed as is.
macro_rules! checked {
    // One argument at a time: parameters, arguments of the unchecked call, checks first.
    (@arg $mode:ident $h:tt $raw:ident $rv:tt [$($p:tt)*] [$($a:tt)*] $pre:tt;
        send $x:ident $(, $($t:tt)*)?) => {
        checked!(@arg $mode $h $raw $rv [$($p)* $x: checked_ty!($mode send),]
            [$($a)* T::raw($x.elements()),] $pre; $($($t)*)?);
    };
    (@arg $mode:ident $h:tt $raw:ident $rv:tt [$($p:tt)*] [$($a:tt)*] $pre:tt;
        sendb $x:ident $(, $($t:tt)*)?) => {
        checked!(@arg $mode $h $raw $rv [$($p)* $x: checked_ty!($mode send),]
            [$($a)* bytes(T::raw($x.elements())),] $pre; $($($t)*)?);
    };
    (@arg $mode:ident $h:tt $raw:ident [] [$($p:tt)*] [$($a:tt)*] $pre:tt;
        recv $x:ident $(, $($t:tt)*)?) => {
        checked!(@arg $mode $h $raw [$x] [$($p)* $x: checked_ty!($mode recv),]
            [$($a)* $raw,] $pre; $($($t)*)?);
    };
    (@arg $mode:ident $h:tt $raw:ident [] [$($p:tt)*] [$($a:tt)*] $pre:tt;
        recvb $x:ident $(, $($t:tt)*)?) => {
        checked!(@arg $mode $h $raw [$x] [$($p)* $x: checked_ty!($mode recv),]
            [$($a)* bytes_mut($raw),] $pre; $($($t)*)?);
    };
    (@arg $mode:ident [$(#[$doc:meta])* $name:ident $inner:ident] $raw:ident $rv:tt
        [$($p:tt)*] [$($a:tt)*] [$($pre:tt)*]; op $x:ident $(, $($t:tt)*)?) => {
        checked!(@arg $mode [$(#[$doc])* $name $inner] $raw $rv [$($p)* $x: Op,] [$($a)* $x,]
            [$($pre)* check_op::<T>(stringify!($name), &$x)?;]; $($($t)*)?);
    };
    (@arg $mode:ident $h:tt $raw:ident $rv:tt [$($p:tt)*] [$($a:tt)*] $pre:tt;
        val $x:ident : $ty:ty $(, $($t:tt)*)?) => {
        checked!(@arg $mode $h $raw $rv [$($p)* $x: $ty,] [$($a)* $x,] $pre; $($($t)*)?);
    };

    // All arguments read: the form.
    (@arg block [$(#[$doc:meta])* $name:ident $inner:ident] $raw:ident [$r:ident]
        [$($p:tt)*] [$($a:tt)*] [$($pre:tt)*];) => {
        $(#[$doc])*
        #[allow(clippy::too_many_arguments)]
        pub fn $name<T: Checked + Element<Raw: Reducible>>(&self, $($p)*) -> Result<()> {
            $($pre)*
            with_raw_mut(stringify!($inner), $r.elements_mut(), |$raw| {
                self.$inner($($a)*).map(drop)
            })
        }
    };
    (@arg imm [$(#[$doc:meta])* $name:ident $inner:ident] $raw:ident [$r:ident]
        [$($p:tt)*] [$($a:tt)*] [$($pre:tt)*];) => {
        $(#[$doc])*
        #[allow(clippy::too_many_arguments)]
        pub fn $name<'a, 's, T: Checked + Element<Raw: Reducible>>(
            &self,
            scope: &'s Scope<'a>,
            $($p)*
        ) -> Result<CheckedRequest<'a, 's, T>> {
            $($pre)*
            CheckedRequest::start(stringify!($inner), $r.elements_mut(), false, |$raw| {
                self.$inner(scope, $($a)*)
            })
        }
    };
    (@arg keep [$(#[$doc:meta])* $name:ident $inner:ident] $raw:ident [$r:ident]
        [$($p:tt)*] [$($a:tt)*] [$($pre:tt)*];) => {
        $(#[$doc])*
        #[allow(clippy::too_many_arguments)]
        pub fn $name<'a, 's, T: Checked + Element<Raw: Reducible>>(
            &self,
            scope: &'s Scope<'a>,
            $($p)*
        ) -> Result<CheckedPersistent<'a, 's, T>> {
            $($pre)*
            CheckedPersistent::make(stringify!($inner), $r.elements_mut(), false, |$raw| {
                self.$inner(scope, $($a)*)
            })
        }
    };
    (@arg imm [$(#[$doc:meta])* $name:ident $inner:ident] $raw:ident []
        [$($p:tt)*] [$($a:tt)*] [$($pre:tt)*];) => {
        $(#[$doc])*
        pub fn $name<'a, 's, T: Checked + Element<Raw: Reducible>>(
            &self,
            scope: &'s Scope<'a>,
            $($p)*
        ) -> Result<Request<'a, 's>> {
            $($pre)*
            self.$inner(scope, $($a)*)
        }
    };
    (@arg keep [$(#[$doc:meta])* $name:ident $inner:ident] $raw:ident []
        [$($p:tt)*] [$($a:tt)*] [$($pre:tt)*];) => {
        $(#[$doc])*
        pub fn $name<'a, 's, T: Checked + Element<Raw: Reducible>>(
            &self,
            scope: &'s Scope<'a>,
            $($p)*
        ) -> Result<Persistent<'a, 's>> {
            $($pre)*
            self.$inner(scope, $($a)*)
        }
    };

    () => {};
    ($(#[$doc:meta])* $mode:ident $name:ident => $inner:ident ($($args:tt)*); $($rest:tt)*) => {
        checked!(@arg $mode [$(#[$doc])* $name $inner] raw [] [] [] []; $($args)*);
        checked!($($rest)*);
    };
}

/// Collectives on [`Checked`] types (`bool`, `char`) whose typed
/// forms cannot take them: nonblocking and persistent forms (the blocking intracommunicator
/// forms take them directly), alltoallw, and the neighbourhood collectives. Each runs the
/// typed form over the raw values and checks every received value before it reaches the
/// caller's buffer: an invalid one is an [`ErrorClass::Type`](crate::ErrorClass::Type) error
/// leaving the buffer unchanged; a reduction undefined on the type (anything but LAND, LOR,
/// LXOR on `bool`, MIN, MAX on `char`) an [`ErrorClass::Op`](crate::ErrorClass::Op) error
/// before anything is sent.
impl<L: ThreadLevel> Communicator<L> {
    checked! {
        /// Starts a broadcast of `bool`s or `char`s from `root` (`MPI_Ibcast`).
        imm immediate_broadcast_into_checked => immediate_broadcast_into(val root: i32, recv buf);
        /// A persistent broadcast of `bool`s or `char`s (`MPI_Bcast_init`).
        keep broadcast_init_checked => broadcast_init(val root: i32, recv buf);
        /// Starts an allgather of `bool`s or `char`s (`MPI_Iallgather`).
        imm immediate_all_gather_into_checked => immediate_all_gather_into(send send, recv recv);
        /// A persistent allgather of `bool`s or `char`s (`MPI_Allgather_init`).
        keep all_gather_init_checked => all_gather_init(send send, recv recv);
        /// Starts an all-to-all of `bool`s or `char`s (`MPI_Ialltoall`).
        imm immediate_all_to_all_into_checked => immediate_all_to_all_into(send send, recv recv);
        /// A persistent all-to-all of `bool`s or `char`s (`MPI_Alltoall_init`).
        keep all_to_all_init_checked => all_to_all_init(send send, recv recv);
        /// Starts a gather of `bool`s or `char`s to `root` (`MPI_Igather`).
        imm immediate_gather_into_checked => immediate_gather_into(
            val root: i32, send send, recv recv);
        /// A persistent gather of `bool`s or `char`s (`MPI_Gather_init`).
        keep gather_init_checked => gather_init(val root: i32, send send, recv recv);
        /// Starts a scatter of `bool`s or `char`s from `root` (`MPI_Iscatter`).
        imm immediate_scatter_into_checked => immediate_scatter_into(
            val root: i32, send send, recv recv);
        /// A persistent scatter of `bool`s or `char`s (`MPI_Scatter_init`).
        keep scatter_init_checked => scatter_init(val root: i32, send send, recv recv);
        /// Starts an allreduce of `bool`s or `char`s (`MPI_Iallreduce`).
        imm immediate_all_reduce_into_checked => immediate_all_reduce_into(
            send send, recv recv, op op);
        /// A persistent allreduce of `bool`s or `char`s (`MPI_Allreduce_init`).
        keep all_reduce_init_checked => all_reduce_init(send send, recv recv, op op);
        /// Starts a reduction of `bool`s or `char`s to `root` (`MPI_Ireduce`).
        imm immediate_reduce_into_checked => immediate_reduce_into(
            val root: i32, send send, recv recv, op op);
        /// A persistent reduction of `bool`s or `char`s (`MPI_Reduce_init`).
        keep reduce_init_checked => reduce_init(val root: i32, send send, recv recv, op op);
        /// Starts an inclusive scan of `bool`s or `char`s (`MPI_Iscan`).
        imm immediate_scan_into_checked => immediate_scan_into(send send, recv recv, op op);
        /// A persistent inclusive scan of `bool`s or `char`s (`MPI_Scan_init`).
        keep scan_init_checked => scan_init(send send, recv recv, op op);
        /// Starts an exclusive scan of `bool`s or `char`s (`MPI_Iexscan`; rank 0's buffer
        /// is left as it was).
        imm immediate_exclusive_scan_into_checked => immediate_exclusive_scan_into(
            send send, recv recv, op op);
        /// A persistent exclusive scan of `bool`s or `char`s (`MPI_Exscan_init`; rank 0's
        /// buffer is left as it was).
        keep exclusive_scan_init_checked => exclusive_scan_init(send send, recv recv, op op);
        /// Starts a reduce-scatter of `bool`s or `char`s (`MPI_Ireduce_scatter`).
        imm immediate_reduce_scatter_into_checked => immediate_reduce_scatter_into(
            send send, recv recv, val counts: &[usize], op op);
        /// A persistent reduce-scatter of `bool`s or `char`s (`MPI_Reduce_scatter_init`).
        keep reduce_scatter_init_checked => reduce_scatter_init(
            send send, recv recv, val counts: &[usize], op op);
        /// Starts a reduce-scatter of `bool`s or `char`s with equal blocks
        /// (`MPI_Ireduce_scatter_block`).
        imm immediate_reduce_scatter_block_into_checked => immediate_reduce_scatter_block_into(
            send send, recv recv, op op);
        /// A persistent reduce-scatter of `bool`s or `char`s with equal blocks
        /// (`MPI_Reduce_scatter_block_init`).
        keep reduce_scatter_block_init_checked => reduce_scatter_block_init(
            send send, recv recv, op op);
    }

    checked! {
        /// Starts an in-place allgather of `bool`s or `char`s (`MPI_Iallgather` with
        /// `MPI_IN_PLACE`).
        imm immediate_all_gather_in_place_checked => immediate_all_gather_in_place(recv buf);
        /// A persistent in-place allgather of `bool`s or `char`s.
        keep all_gather_in_place_init_checked => all_gather_in_place_init(recv buf);
        /// Starts an in-place all-to-all of `bool`s or `char`s.
        imm immediate_all_to_all_in_place_checked => immediate_all_to_all_in_place(recv buf);
        /// A persistent in-place all-to-all of `bool`s or `char`s.
        keep all_to_all_in_place_init_checked => all_to_all_in_place_init(recv buf);
        /// Starts an in-place allreduce of `bool`s or `char`s.
        imm immediate_all_reduce_in_place_checked => immediate_all_reduce_in_place(recv buf, op op);
        /// A persistent in-place allreduce of `bool`s or `char`s.
        keep all_reduce_in_place_init_checked => all_reduce_in_place_init(recv buf, op op);
        /// Starts an in-place reduce-scatter of `bool`s or `char`s (`buf` holds the whole
        /// input and receives this rank's block at its start).
        imm immediate_reduce_scatter_in_place_checked => immediate_reduce_scatter_in_place(
            recv buf, val counts: &[usize], op op);
        /// A persistent in-place reduce-scatter of `bool`s or `char`s.
        keep reduce_scatter_in_place_init_checked => reduce_scatter_in_place_init(
            recv buf, val counts: &[usize], op op);
        /// Starts a gather of `bool`s or `char`s whose root has its block in place in `buf`
        /// (other ranks call
        /// [`immediate_gather_into_checked`](Self::immediate_gather_into_checked)).
        imm immediate_gather_in_place_checked => immediate_gather_in_place(val root: i32, recv buf);
        /// A persistent gather of `bool`s or `char`s whose root has its block in place.
        keep gather_in_place_init_checked => gather_in_place_init(val root: i32, recv buf);
        /// Starts a scatter of `bool`s or `char`s whose root keeps its block in place in
        /// `buf`: the root receives nothing, so this returns a plain [`Request`].
        imm immediate_scatter_in_place_checked => immediate_scatter_in_place(
            val root: i32, send buf);
        /// A persistent scatter of `bool`s or `char`s whose root keeps its block in place.
        keep scatter_in_place_init_checked => scatter_in_place_init(val root: i32, send buf);
        /// Starts an in-place reduction of `bool`s or `char`s to `root`.
        imm immediate_reduce_in_place_checked => immediate_reduce_in_place(
            val root: i32, recv buf, op op);
        /// A persistent in-place reduction of `bool`s or `char`s to `root`.
        keep reduce_in_place_init_checked => reduce_in_place_init(val root: i32, recv buf, op op);
        /// Starts an in-place inclusive scan of `bool`s or `char`s.
        imm immediate_scan_in_place_checked => immediate_scan_in_place(recv buf, op op);
        /// A persistent in-place inclusive scan of `bool`s or `char`s.
        keep scan_in_place_init_checked => scan_in_place_init(recv buf, op op);
        /// Starts an in-place exclusive scan of `bool`s or `char`s.
        imm immediate_exclusive_scan_in_place_checked => immediate_exclusive_scan_in_place(
            recv buf, op op);
        /// A persistent in-place exclusive scan of `bool`s or `char`s.
        keep exclusive_scan_in_place_init_checked => exclusive_scan_in_place_init(recv buf, op op);
    }

    checked! {
        /// Starts an allgatherv of `bool`s or `char`s (`MPI_Iallgatherv`).
        imm immediate_all_gather_varcount_into_checked => immediate_all_gather_varcount_into(
            send send, recv recv, val counts: &[usize], val displs: &[usize]);
        /// A persistent allgatherv of `bool`s or `char`s (`MPI_Allgatherv_init`).
        keep all_gather_varcount_init_checked => all_gather_varcount_init(
            send send, recv recv, val counts: &[usize], val displs: &[usize]);
        /// Starts a gatherv of `bool`s or `char`s to `root` (`MPI_Igatherv`).
        imm immediate_gather_varcount_into_checked => immediate_gather_varcount_into(
            val root: i32, send send, recv recv, val counts: &[usize], val displs: &[usize]);
        /// A persistent gatherv of `bool`s or `char`s (`MPI_Gatherv_init`).
        keep gather_varcount_init_checked => gather_varcount_init(
            val root: i32, send send, recv recv, val counts: &[usize], val displs: &[usize]);
        /// Starts a scatterv of `bool`s or `char`s from `root` (`MPI_Iscatterv`).
        imm immediate_scatter_varcount_into_checked => immediate_scatter_varcount_into(
            val root: i32, send send, val counts: &[usize], val displs: &[usize], recv recv);
        /// A persistent scatterv of `bool`s or `char`s (`MPI_Scatterv_init`).
        keep scatter_varcount_init_checked => scatter_varcount_init(
            val root: i32, send send, val counts: &[usize], val displs: &[usize], recv recv);
        /// Starts an alltoallv of `bool`s or `char`s (`MPI_Ialltoallv`).
        imm immediate_all_to_all_varcount_into_checked => immediate_all_to_all_varcount_into(
            send send, val scounts: &[usize], val sdispls: &[usize], recv recv,
            val rcounts: &[usize], val rdispls: &[usize]);
        /// A persistent alltoallv of `bool`s or `char`s (`MPI_Alltoallv_init`).
        keep all_to_all_varcount_init_checked => all_to_all_varcount_init(
            send send, val scounts: &[usize], val sdispls: &[usize], recv recv,
            val rcounts: &[usize], val rdispls: &[usize]);
        /// Alltoallw of `bool`s or `char`s (`MPI_Alltoallw`): the blocks are (displacement,
        /// length) in bytes, as in [`all_to_all_w_into`](Self::all_to_all_w_into); every
        /// value of `recv` is checked, also one that a block filled only in part.
        block all_to_all_w_into_checked => all_to_all_w_into(
            sendb send, val sblocks: &[(usize, usize)], recvb recv, val rblocks: &[(usize,
            usize)]);
        /// Starts an alltoallw of `bool`s or `char`s (`MPI_Ialltoallw`; blocks in bytes).
        imm immediate_all_to_all_w_into_checked => immediate_all_to_all_w_into(
            sendb send, val sblocks: &[(usize, usize)], recvb recv, val rblocks: &[(usize,
            usize)]);
        /// A persistent alltoallw of `bool`s or `char`s (`MPI_Alltoallw_init`; blocks in bytes).
        keep all_to_all_w_init_checked => all_to_all_w_init(
            sendb send, val sblocks: &[(usize, usize)], recvb recv, val rblocks: &[(usize,
            usize)]);
    }

    checked! {
        /// Neighbourhood allgather of `bool`s or `char`s (`MPI_Neighbor_allgather`).
        block neighbor_all_gather_into_checked => neighbor_all_gather_into(send send, recv recv);
        /// Starts a neighbourhood allgather of `bool`s or `char`s.
        imm immediate_neighbor_all_gather_into_checked => immediate_neighbor_all_gather_into(
            send send, recv recv);
        /// A persistent neighbourhood allgather of `bool`s or `char`s.
        keep neighbor_all_gather_init_checked => neighbor_all_gather_init(send send, recv recv);
        /// Neighbourhood allgatherv of `bool`s or `char`s (`MPI_Neighbor_allgatherv`).
        block neighbor_all_gather_varcount_into_checked => neighbor_all_gather_varcount_into(
            send send, recv recv, val counts: &[usize], val displs: &[usize]);
        /// Starts a neighbourhood allgatherv of `bool`s or `char`s.
        imm immediate_neighbor_all_gather_varcount_into_checked =>
            immediate_neighbor_all_gather_varcount_into(
            send send, recv recv, val counts: &[usize], val displs: &[usize]);
        /// A persistent neighbourhood allgatherv of `bool`s or `char`s.
        keep neighbor_all_gather_varcount_init_checked => neighbor_all_gather_varcount_init(
            send send, recv recv, val counts: &[usize], val displs: &[usize]);
        /// Neighbourhood all-to-all of `bool`s or `char`s (`MPI_Neighbor_alltoall`).
        block neighbor_all_to_all_into_checked => neighbor_all_to_all_into(send send, recv recv);
        /// Starts a neighbourhood all-to-all of `bool`s or `char`s.
        imm immediate_neighbor_all_to_all_into_checked => immediate_neighbor_all_to_all_into(
            send send, recv recv);
        /// A persistent neighbourhood all-to-all of `bool`s or `char`s.
        keep neighbor_all_to_all_init_checked => neighbor_all_to_all_init(send send, recv recv);
        /// Neighbourhood alltoallv of `bool`s or `char`s (`MPI_Neighbor_alltoallv`).
        block neighbor_all_to_all_varcount_into_checked => neighbor_all_to_all_varcount_into(
            send send, val scounts: &[usize], val sdispls: &[usize], recv recv,
            val rcounts: &[usize], val rdispls: &[usize]);
        /// Starts a neighbourhood alltoallv of `bool`s or `char`s.
        imm immediate_neighbor_all_to_all_varcount_into_checked =>
            immediate_neighbor_all_to_all_varcount_into(
            send send, val scounts: &[usize], val sdispls: &[usize], recv recv,
            val rcounts: &[usize], val rdispls: &[usize]);
        /// A persistent neighbourhood alltoallv of `bool`s or `char`s.
        keep neighbor_all_to_all_varcount_init_checked => neighbor_all_to_all_varcount_init(
            send send, val scounts: &[usize], val sdispls: &[usize], recv recv,
            val rcounts: &[usize], val rdispls: &[usize]);
        /// Neighbourhood alltoallw of `bool`s or `char`s (`MPI_Neighbor_alltoallw`; blocks
        /// in bytes).
        block neighbor_all_to_all_w_into_checked => neighbor_all_to_all_w_into(
            sendb send, val sblocks: &[(usize, usize)], recvb recv, val rblocks: &[(usize,
            usize)]);
        /// Starts a neighbourhood alltoallw of `bool`s or `char`s (blocks in bytes).
        imm immediate_neighbor_all_to_all_w_into_checked => immediate_neighbor_all_to_all_w_into(
            sendb send, val sblocks: &[(usize, usize)], recvb recv, val rblocks: &[(usize,
            usize)]);
        /// A persistent neighbourhood alltoallw of `bool`s or `char`s (blocks in bytes).
        keep neighbor_all_to_all_w_init_checked => neighbor_all_to_all_w_init(
            sendb send, val sblocks: &[(usize, usize)], recvb recv, val rblocks: &[(usize,
            usize)]);
    }
}

/// Intercommunicator collectives and receives on [`Checked`] types
/// (`bool`, `char`), blocking and nonblocking; arguments as in the typed forms, values checked
/// as in the intracommunicator `*_checked` forms.
impl<L: ThreadLevel> InterCommunicator<L> {
    checked! {
        /// Broadcast of `bool`s or `char`s to the other group (`MPI_Bcast`).
        block broadcast_into_checked => broadcast_into(val root: InterRoot, recv buf);
        /// Starts a broadcast of `bool`s or `char`s to the other group (`MPI_Ibcast`).
        imm immediate_broadcast_into_checked => immediate_broadcast_into(
            val root: InterRoot, recv buf);
        /// Allreduce of `bool`s or `char`s across the groups (`MPI_Allreduce`).
        block all_reduce_into_checked => all_reduce_into(send send, recv recv, op op);
        /// Starts an allreduce of `bool`s or `char`s across the groups.
        imm immediate_all_reduce_into_checked => immediate_all_reduce_into(
            send send, recv recv, op op);
        /// Allgather of `bool`s or `char`s across the groups (`MPI_Allgather`).
        block all_gather_into_checked => all_gather_into(send send, recv recv);
        /// Starts an allgather of `bool`s or `char`s across the groups.
        imm immediate_all_gather_into_checked => immediate_all_gather_into(send send, recv recv);
        /// Reduction of `bool`s or `char`s to the other group's root (`MPI_Reduce`).
        block reduce_into_checked => reduce_into(val root: InterRoot, send send, recv recv, op op);
        /// Starts a reduction of `bool`s or `char`s to the other group's root.
        imm immediate_reduce_into_checked => immediate_reduce_into(
            val root: InterRoot, send send, recv recv, op op);
        /// Gather of `bool`s or `char`s to the other group's root (`MPI_Gather`).
        block gather_into_checked => gather_into(val root: InterRoot, send send, recv recv);
        /// Starts a gather of `bool`s or `char`s to the other group's root.
        imm immediate_gather_into_checked => immediate_gather_into(
            val root: InterRoot, send send, recv recv);
        /// Scatter of `bool`s or `char`s from the other group's root (`MPI_Scatter`).
        block scatter_into_checked => scatter_into(val root: InterRoot, send send, recv recv);
        /// Starts a scatter of `bool`s or `char`s from the other group's root.
        imm immediate_scatter_into_checked => immediate_scatter_into(
            val root: InterRoot, send send, recv recv);
        /// All-to-all of `bool`s or `char`s across the groups (`MPI_Alltoall`).
        block all_to_all_into_checked => all_to_all_into(send send, recv recv);
        /// Starts an all-to-all of `bool`s or `char`s across the groups.
        imm immediate_all_to_all_into_checked => immediate_all_to_all_into(send send, recv recv);
    }

    /// Receives into a slice of `bool`s or `char`s from rank `source` of the remote group
    /// (`MPI_Recv`): the values are checked before any reaches `buf` (an invalid one is an
    /// [`ErrorClass::Type`](crate::ErrorClass::Type) error, `buf` left unchanged).
    pub fn receive_into_checked<T: Checked + Element>(
        &self,
        buf: &mut [T],
        source: i32,
        tag: i32,
    ) -> Result<Status> {
        receive_checked("intercomm receive", buf, |raw| {
            self.receive_into(raw, source, tag)
        })
    }
}
