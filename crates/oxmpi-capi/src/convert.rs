//! Handle conversions: the standard ABI's `*_toint`/`*_fromint`, the Fortran `*_c2f`/`*_f2c`
//! that real code (rsmpi, mpi4py) still calls, and `MPI_Status_c2f`/`f2c`.
//!
//! Handles of communicators, groups, operations, error handlers, info objects, datatypes,
//! messages, files, windows and sessions are small positive integers already (predefined
//! constants below 4096, table ids above), so both conversions are the identity on the value;
//! requests are 64-bit ids, numbered in one table that the Fortran bindings use too (so a
//! Fortran request integer is the value of `MPI_Request_c2f`). `MPI_Fint` is a C `int`.

use std::ffi::c_int;

use oxmpi::handle::comm::CommHandle;

use crate::boundary::{get, handle_of, int_of, mpi_fn, mpi_value_fn, put, Handle, MpiStatus};

macro_rules! int_conversions {
    ($($toint:ident / $ptoint:ident, $fromint:ident / $pfromint:ident, $c2f:ident / $pc2f:ident, $f2c:ident / $pf2c:ident;)*) => { $(
        mpi_value_fn! {
            /// The handle as an `int` (the standard ABI's serialization).
            fn $toint / $ptoint(h: Handle) -> c_int { int_of(h) }
            /// The handle an `int` from the matching `_toint` stands for.
            fn $fromint / $pfromint(i: c_int) -> Handle { handle_of(i) }
            /// The handle as a Fortran `INTEGER`.
            fn $c2f / $pc2f(h: Handle) -> c_int { int_of(h) }
            /// The handle a Fortran `INTEGER` from the matching `_c2f` stands for.
            fn $f2c / $pf2c(i: c_int) -> Handle { handle_of(i) }
        }
    )* };
}

int_conversions! {
    MPI_Comm_toint / PMPI_Comm_toint, MPI_Comm_fromint / PMPI_Comm_fromint, MPI_Comm_c2f / PMPI_Comm_c2f, MPI_Comm_f2c / PMPI_Comm_f2c;
    MPI_Group_toint / PMPI_Group_toint, MPI_Group_fromint / PMPI_Group_fromint, MPI_Group_c2f / PMPI_Group_c2f, MPI_Group_f2c / PMPI_Group_f2c;
    MPI_Op_toint / PMPI_Op_toint, MPI_Op_fromint / PMPI_Op_fromint, MPI_Op_c2f / PMPI_Op_c2f, MPI_Op_f2c / PMPI_Op_f2c;
    MPI_Errhandler_toint / PMPI_Errhandler_toint, MPI_Errhandler_fromint / PMPI_Errhandler_fromint, MPI_Errhandler_c2f / PMPI_Errhandler_c2f, MPI_Errhandler_f2c / PMPI_Errhandler_f2c;
    MPI_Info_toint / PMPI_Info_toint, MPI_Info_fromint / PMPI_Info_fromint, MPI_Info_c2f / PMPI_Info_c2f, MPI_Info_f2c / PMPI_Info_f2c;
    MPI_Type_toint / PMPI_Type_toint, MPI_Type_fromint / PMPI_Type_fromint, MPI_Type_c2f / PMPI_Type_c2f, MPI_Type_f2c / PMPI_Type_f2c;
    MPI_Message_toint / PMPI_Message_toint, MPI_Message_fromint / PMPI_Message_fromint, MPI_Message_c2f / PMPI_Message_c2f, MPI_Message_f2c / PMPI_Message_f2c;
    MPI_File_toint / PMPI_File_toint, MPI_File_fromint / PMPI_File_fromint, MPI_File_c2f / PMPI_File_c2f, MPI_File_f2c / PMPI_File_f2c;
    MPI_Win_toint / PMPI_Win_toint, MPI_Win_fromint / PMPI_Win_fromint, MPI_Win_c2f / PMPI_Win_c2f, MPI_Win_f2c / PMPI_Win_f2c;
    MPI_Session_toint / PMPI_Session_toint, MPI_Session_fromint / PMPI_Session_fromint, MPI_Session_c2f / PMPI_Session_c2f, MPI_Session_f2c / PMPI_Session_f2c;
}

/// `MPI_REQUEST_NULL`: its integer is its value, as for every predefined handle.
const REQUEST_NULL: usize = 0x180;

/// Requests are 64-bit ids, so their integers index a table of the ids converted.
///
/// A request's entry is decided by the slot it occupies: entry `2 * slot` for the engine's
/// slot (unique among the process's live nonblocking requests), `2 * n + 1` for persistent
/// requests, numbered here from a free list because their slots are per-thread. Converting
/// an engine request is one store and never locks; the engine reuses its slots, so the
/// numbers stay as few as the peak of live requests, and an entry left behind by a completed
/// request holds a stale id the core refuses (`MPI_ERR_REQUEST`) until the slot's next
/// request is converted. Only persistent requests, which live until `MPI_Request_free`, are
/// registered and released (see [`request_freed`]). Requests never converted cost nothing.
mod request_ints {
    use std::collections::HashMap;
    use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
    use std::sync::{Mutex, OnceLock};

    use oxmpi::handle::request::{IdSlot, RequestId};

    /// First integer handed out (above the predefined handle range).
    pub const FIRST: usize = 0x1000;
    /// The integer of [`RequestId::SENT`] (every send that completed as it started), below
    /// the table's range and above every predefined handle.
    pub const SENT: i32 = FIRST as i32 - 1;
    /// What `f2c` gives for an integer that names no request: no request id is this small,
    /// so every call reports `MPI_ERR_REQUEST` for it.
    pub const NOT_A_REQUEST: usize = 1;
    /// Entries of the first chunk; chunk `c` holds `CHUNK0 << c`, so 21 chunks cover every
    /// positive `int`.
    const CHUNK0: usize = 1024;
    const CHUNKS: usize = 21;

    /// The entries: request ids by integer, 0 for none. Chunks are made on first use and
    /// never move, so readers need no lock.
    static TABLE: [OnceLock<Box<[AtomicU64]>>; CHUNKS] = [const { OnceLock::new() }; CHUNKS];

    /// Persistent requests converted and not yet freed: their numbers, and the free list.
    #[derive(Default)]
    struct Persistent {
        ints: HashMap<u64, usize>,
        free: Vec<usize>,
        next: usize,
    }
    static PERSISTENT: Mutex<Option<Persistent>> = Mutex::new(None);
    /// How many are registered: `request_freed` returns after this one load when none is.
    static LIVE: AtomicUsize = AtomicUsize::new(0);

    /// (chunk, offset) of entry `k`: chunk `c` starts at `CHUNK0 * (2^c - 1)`.
    pub fn locate(k: usize) -> (usize, usize) {
        let q = k / CHUNK0 + 1;
        let c = (usize::BITS - 1 - q.leading_zeros()) as usize;
        (c, k - CHUNK0 * ((1 << c) - 1))
    }

    fn entry(k: usize, make: bool) -> Option<&'static AtomicU64> {
        let (c, off) = locate(k);
        let chunk = TABLE.get(c)?;
        let chunk = if make {
            chunk.get_or_init(|| (0..CHUNK0 << c).map(|_| AtomicU64::new(0)).collect())
        } else {
            chunk.get()?
        };
        chunk.get(off)
    }

    /// The integer of `k`, with `raw` stored at its entry; -1 if `k` is beyond every `int`.
    fn publish(k: usize, raw: u64) -> i32 {
        let Ok(i) = i32::try_from(FIRST + k) else {
            return -1;
        };
        match entry(k, true) {
            Some(e) => {
                // Release: whoever gets the integer (through any synchronization) sees the id.
                e.store(raw, Ordering::Release);
                i
            }
            None => -1,
        }
    }

    /// The integer of request handle value `v`.
    pub fn to_int(v: usize) -> i32 {
        if v == super::REQUEST_NULL {
            return v as i32;
        }
        if v as u64 == RequestId::SENT.to_raw() {
            return SENT;
        }
        let raw = v as u64;
        match RequestId::from_raw(raw).slot() {
            Some(IdSlot::Engine(s)) => publish(2 * s as usize, raw),
            Some(IdSlot::Persistent(_)) => {
                let mut g = PERSISTENT.lock().unwrap_or_else(|p| p.into_inner());
                let t = g.get_or_insert_with(Persistent::default);
                let n = match t.ints.get(&raw) {
                    Some(&n) => n,
                    None => {
                        let n = t.free.pop().unwrap_or_else(|| {
                            t.next += 1;
                            t.next - 1
                        });
                        t.ints.insert(raw, n);
                        LIVE.fetch_add(1, Ordering::Relaxed);
                        n
                    }
                };
                publish(2 * n + 1, raw)
            }
            // No request: the predefined range keeps its value (f2c gives it back, and calls
            // refuse it); anything else must not alias a table integer.
            None if v < FIRST => v as i32,
            None => -1,
        }
    }

    /// The request handle value integer `i` stands for.
    pub fn from_int(i: i32) -> usize {
        let Ok(u) = usize::try_from(i) else {
            return NOT_A_REQUEST;
        };
        if i == SENT {
            return RequestId::SENT.to_raw() as usize;
        }
        if u < FIRST {
            return u;
        }
        match entry(u - FIRST, false).map(|e| e.load(Ordering::Acquire)) {
            Some(raw) if raw != 0 => raw as usize,
            _ => NOT_A_REQUEST,
        }
    }

    /// Persistent request `id` was freed: its number goes back to the free list.
    pub fn freed(id: RequestId) {
        if LIVE.load(Ordering::Relaxed) == 0 || !matches!(id.slot(), Some(IdSlot::Persistent(_))) {
            return;
        }
        let mut g = PERSISTENT.lock().unwrap_or_else(|p| p.into_inner());
        let Some(t) = g.as_mut() else { return };
        if let Some(n) = t.ints.remove(&id.to_raw()) {
            if let Some(e) = entry(2 * n + 1, false) {
                e.store(0, Ordering::Release);
            }
            t.free.push(n);
            LIVE.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

/// Request `id` was freed (`MPI_Request_free`): a persistent request's Fortran integer is
/// released. One atomic load while no persistent request has been converted.
pub(crate) fn request_freed(id: oxmpi::handle::request::RequestId) {
    request_ints::freed(id);
}

fn request_to_int(h: Handle) -> c_int {
    request_ints::to_int(h as usize)
}

fn request_from_int(i: c_int) -> Handle {
    request_ints::from_int(i) as Handle
}

mpi_value_fn! {
    /// The request as an `int` (the same integer while the request lives).
    fn MPI_Request_toint / PMPI_Request_toint(h: Handle) -> c_int { request_to_int(h) }
    /// The request an `int` from `MPI_Request_toint` stands for.
    fn MPI_Request_fromint / PMPI_Request_fromint(i: c_int) -> Handle { request_from_int(i) }
    /// The request as a Fortran `INTEGER`.
    fn MPI_Request_c2f / PMPI_Request_c2f(h: Handle) -> c_int { request_to_int(h) }
    /// The request a Fortran `INTEGER` from `MPI_Request_c2f` stands for.
    fn MPI_Request_f2c / PMPI_Request_f2c(i: c_int) -> Handle { request_from_int(i) }
}

mpi_fn! {
    /// `MPI_Status_c2f`: the C and Fortran statuses are the same 8 integers in the standard ABI.
    fn Status_c2f = MPI_Status_c2f / PMPI_Status_c2f(c: *const MpiStatus, f: *mut MpiStatus) on CommHandle::WORLD => {
        put("Status_c2f", f, get("Status_c2f", c)?)
    }

    /// `MPI_Status_f2c`.
    fn Status_f2c = MPI_Status_f2c / PMPI_Status_f2c(f: *const MpiStatus, c: *mut MpiStatus) on CommHandle::WORLD => {
        put("Status_f2c", c, get("Status_f2c", f)?)
    }
}

#[cfg(test)]
mod tests {
    use super::request_ints::{from_int, locate, to_int, FIRST, NOT_A_REQUEST, SENT};
    use super::*;
    use oxmpi::handle::request::RequestId;

    fn engine(idx: u64, gen: u64) -> usize {
        (((idx + 1) << 32) | gen) as usize
    }

    fn persistent(idx: u64, gen: u64) -> usize {
        ((1 << 63) | (idx << 32) | gen) as usize
    }

    #[test]
    fn chunks_tile_the_integers() {
        assert_eq!(locate(0), (0, 0));
        assert_eq!(locate(1023), (0, 1023));
        assert_eq!(locate(1024), (1, 0));
        assert_eq!(locate(3071), (1, 2047));
        assert_eq!(locate(3072), (2, 0));
        assert!(locate(i32::MAX as usize - FIRST).0 < 21);
    }

    #[test]
    fn engine_requests_are_numbered_by_their_slot() {
        let a = engine(7, 3);
        let i = to_int(a);
        assert_eq!(i as usize, FIRST + 14);
        assert_eq!(from_int(i), a);
        assert_eq!(to_int(a), i, "the same request, the same integer");
        // The slot's next request takes the integer over.
        let b = engine(7, 4);
        assert_eq!(to_int(b), i);
        assert_eq!(from_int(i), b);
        assert_ne!(to_int(engine(8, 4)), i);
    }

    #[test]
    fn persistent_requests_are_released_when_freed() {
        let (p, q) = (persistent(40_000, 1), persistent(40_001, 1));
        let (i, j) = (to_int(p), to_int(q));
        assert!(i != j && i % 2 == 1 && j % 2 == 1, "{i} {j}");
        assert_eq!((from_int(i), from_int(j)), (p, q));
        assert_eq!(to_int(p), i);
        request_freed(RequestId::from_raw(p as u64));
        assert_eq!(from_int(i), NOT_A_REQUEST);
        assert_eq!(from_int(j), q);
        let r = persistent(40_002, 1);
        assert_eq!(to_int(r), i, "the freed number is reused");
        request_freed(RequestId::from_raw(q as u64));
        request_freed(RequestId::from_raw(r as u64));
    }

    #[test]
    fn null_and_junk_stay_what_they_are() {
        assert_eq!(to_int(REQUEST_NULL), 0x180);
        assert_eq!(from_int(0x180), REQUEST_NULL);
        assert_eq!(to_int(5), 5);
        assert_eq!(from_int(5), 5);
        // Every send that finished as it started shares one id, and so one integer.
        let sent = RequestId::SENT.to_raw() as usize;
        assert_eq!(to_int(sent), SENT);
        assert_eq!(from_int(SENT), sent);
        assert!(SENT < FIRST as i32 && SENT > 0x3ff);
        // Not an id, and above the predefined range: no integer a table entry could have.
        assert_eq!(to_int(0x1234_5678), -1);
        assert_eq!(from_int(-1), NOT_A_REQUEST);
        assert_eq!(from_int(i32::MAX), NOT_A_REQUEST);
        assert_eq!(from_int((FIRST + 2 * 900_001) as i32), NOT_A_REQUEST);
    }
}
