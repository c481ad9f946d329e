//! Point-to-point messaging: MPI semantics above the transports.
//!
//! - [`wire`]: fragment kinds and headers;
//! - [`matching`]: posted and unexpected queues with MPI's ordering rules;
//! - [`stored`]: the bytes of unexpected messages, in buffers reused from message to message;
//! - [`request`]: the request slab and statuses;
//! - [`bsend`]: buffered sends through attached space;
//! - [`proto`]: the protocols (eager, rendezvous with single copy or pushed chunks) over any
//!   transport's link, and the fragment handlers;
//! - [`engine`]: routes, transports, faults, schedules and the progress loop;
//! - [`protocol`]: which protocol each message size takes, from the transport's limits;
//! - [`recv_write`]: receiver-initiated writes into posted buffers;
//! - [`iov`]: a derived datatype's data as pieces, moved in one copy on one host;
//! - `conformance` (tests only): the property suite every transport must pass;
//! - [`progress`]: the lock (only at thread levels that need one) and the waiting policy.

pub mod bsend;
#[cfg(test)]
mod conformance;
pub mod engine;
pub mod iov;
pub mod matching;
pub mod progress;
pub mod proto;
pub mod protocol;
pub mod recv_write;
pub mod request;
pub mod stored;
pub mod wire;
