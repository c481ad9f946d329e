//! oxmpi: MPI for Rust.
//!
//! ```no_run
//! let universe = oxmpi::init()?;
//! let world = universe.world();
//! println!("rank {} of {} on {}", world.rank(), world.size(), oxmpi::processor_name());
//! # Ok::<(), oxmpi::Error>(())
//! ```
//!
//! # Layers, top to bottom
//! - [`environment`], [`comm`]: the public API (init, communicators).
//! - [`handle`]: the same core without lifetimes or type parameters (ids, run-time thread
//!   level, byte-level user ops, attribute callbacks), for the C ABI.
//! - internals, not public: `runtime` (start-up over PMI, placement, business cards), `p2p`
//!   (matching, protocols, requests, the progress engine) and `transport` (`self`, `shm`);
//!   `ARCHITECTURE.md` in the repository describes them.
//! - [`config`]: `OXMPI_*` tunables; [`error`]: errors mapped to MPI error classes;
//!   [`threading`]: thread levels as types.
//!
//! # Thread levels are types
//! ```compile_fail
//! fn needs_send<T: Send>(_: T) {}
//! let universe = oxmpi::init().unwrap(); // Threading::Single
//! needs_send(universe.world()); // error: a Single-level communicator cannot leave its thread
//! ```
//! ```no_run
//! fn needs_send<T: Send + Sync>(_: T) {}
//! let universe = oxmpi::init_with::<oxmpi::Multiple>().unwrap();
//! needs_send(universe.world());
//! ```
#![deny(missing_docs, unsafe_op_in_unsafe_fn)]

pub(crate) mod bytecopy;
pub mod coll;
pub mod comm;
pub mod config;
pub mod datatype;
pub mod environment;
pub mod error;
pub mod future;
pub mod group;
pub mod handle;
pub mod info;
pub mod memory;
pub mod op;
pub(crate) mod p2p;
pub mod point_to_point;
pub mod process;
pub mod request;
pub(crate) mod rma;
pub(crate) mod runtime;
pub mod spawn;
pub mod threading;
pub mod topology;
pub(crate) mod transport;
pub mod window;

pub use coll::InterRoot;
pub use comm::{AnyCommunicator, Communicator, InterCommunicator, Keyval, SplitType, UNDEFINED};
pub use datatype::{
    Buffer, BufferMut, Checked, Datatyped, Element, Elements, ElementsMut, Equivalence,
};
pub use environment::{
    init, init_with, library_version, processor_name, time, time_resolution, version, Universe,
};
pub use error::{Error, ErrorClass, Result};
pub use future::OwnedReceive;
pub use group::{Group, Relation};
pub use handle::attr::Predefined;
pub use memory::SharedBuffer;
pub use op::{reduce_local, Op, Reducible, UserOp};
/// `#[derive(Equivalence)]`: the datatype of a struct (see [`Datatyped`]).
pub use oxmpi_derive::Equivalence;
pub use p2p::bsend::BSEND_OVERHEAD;
pub use p2p::engine::FaultMode;
pub use p2p::matching::{ANY_SOURCE, ANY_TAG, PROC_NULL};
pub use p2p::proto::Stats as ProtocolStats;
pub use p2p::request::Status;
pub use point_to_point::{Message, Source, Tag, TAG_UB};
pub use process::{AnyProcess, Process};
pub use request::{
    scope, static_scope, CancelGuard, CheckedPersistent, CheckedRequest, Completion, Finished,
    InStatus, Persistent, Request, RequestCollection, Scope, SendRequest,
};
pub use runtime::{is_finalized, is_initialized};
pub use threading::{Funneled, Multiple, Serialized, Single, ThreadLevel, Threading};
pub use topology::{
    CartesianCommunicator, CartesianLayout, DistGraphCommunicator, GraphCommunicator, Shift,
    TopoKind,
};
pub use window::{LockType, Window};
