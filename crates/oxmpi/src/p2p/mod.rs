//! Point-to-point messaging: MPI semantics above the transports.
//!
//! - [`wire`]: fragment kinds and headers;
//! - [`matching`]: posted and unexpected queues with MPI's ordering rules;
//! - [`request`]: the request slab and statuses;
//! - [`bsend`]: buffered sends through attached space;
//! - [`engine`]: protocols (eager, rendezvous with single copy or pushed chunks) and progress;
//! - [`protocol`]: which protocol each message size takes;
//! - [`recv_write`]: receiver-initiated writes into posted buffers;
//! - [`progress`]: the lock (only at thread levels that need one) and the waiting policy.

pub mod bsend;
pub mod engine;
pub mod matching;
pub mod progress;
pub mod protocol;
pub mod recv_write;
pub mod request;
pub mod wire;
