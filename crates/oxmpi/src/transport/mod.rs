//! Transports move fragments between ranks; they know nothing of MPI matching.
//!
//! - [`shm`]: ranks on the same host, through shared memory (cells, pools, single copy).
//! - Messages to oneself never reach a transport: the protocol layer loops them back.
//! - `tcp` (between hosts) and `ofi` will sit beside `shm` with the same shape: `send` a
//!   fragment (header + payload, `Busy` when out of room), `poll` to deliver arrivals, and
//!   optional one-sided `get`/`put` for single-copy rendezvous.

pub mod shm;
