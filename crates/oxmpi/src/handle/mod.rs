//! The handle layer: the core without Rust lifetimes or type parameters, for the C ABI (and
//! Rust users who want it).
//!
//! Requests are plain ids ([`request::RequestId`]) in a table ([`request::Requests`]); the
//! typed API in [`request`](crate::request) and [`point_to_point`](crate::point_to_point)
//! sits on the same functions and their one wait loop.
//!
//! Communicators, groups, datatypes, user operations and keyvals are `Copy` ids into
//! process-wide tables ([`comm::CommHandle`], [`group::GroupHandle`],
//! [`datatype::TypeHandle`], [`op::OpHandle`], [`comm::KeyvalHandle`]); a freed or
//! never-issued id is an error of the matching class, never undefined behaviour. The thread
//! level is chosen at run time ([`env::init_thread`]); since handles carry no level marker,
//! calls that drive the engine check at run time what the typed API checks at compile time:
//! at `Single` and `Funneled` only the thread that initialized MPI may make them.
//!
//! ```no_run
//! use oxmpi::handle::{comm::{self, CommHandle}, env, group};
//! use oxmpi::Threading;
//!
//! let provided = env::init_thread(Threading::Multiple)?;
//! let me = comm::comm_rank(CommHandle::WORLD)?;
//! let mut halves = comm::comm_split(CommHandle::WORLD, me % 2, me)?;
//! let mut g = comm::comm_group(halves)?;
//! println!("{provided:?}: {} ranks with my parity", group::group_size(g)?);
//! group::group_free(&mut g)?;
//! comm::comm_free(&mut halves)?;
//! env::finalize()?;
//! # Ok::<(), oxmpi::Error>(())
//! ```
//!
//! State only the C layer needs lives here too, as ids and per-communicator tables:
//! error handlers and added error codes ([`errhandler`]), info objects ([`info`]) and
//! communicator names ([`name`]).
//!
//! The typed API ([`Communicator`](crate::Communicator), [`Group`](crate::Group),
//! [`Op`](crate::Op), [`Keyval`](crate::Keyval)) sits on the same core: the communicator
//! logic is in `comm.rs` on a type without a level parameter, user operations of both kinds
//! reduce through the one kernel path of `op.rs`, and attributes of both kinds live in one
//! store ([`attr`]).

pub mod attr;
pub mod comm;
pub mod datatype;
pub mod env;
pub mod errhandler;
pub mod group;
pub mod info;
pub mod name;
pub mod op;
pub(crate) mod partitioned;
pub mod request;
pub mod session;
pub(crate) mod table;
pub mod topo;
pub mod typed;
pub mod win;
