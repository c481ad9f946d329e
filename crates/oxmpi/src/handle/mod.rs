//! The handle layer: the core's objects as plain, lifetime-free values that a C layer can
//! store (`MPI_Request`, ...), with every check the typed Rust API makes. The typed API in
//! [`request`](crate::request) and [`point_to_point`](crate::point_to_point) sits on it.

pub mod request;
