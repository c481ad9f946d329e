//! Handle conversions: the standard ABI's `*_toint`/`*_fromint`, the Fortran `*_c2f`/`*_f2c`
//! that real code (rsmpi, mpi4py) still calls, and `MPI_Status_c2f`/`f2c`.
//!
//! Handles of communicators, groups, operations, error handlers, info objects, datatypes,
//! messages, files, windows and sessions are small positive integers already (predefined
//! constants below 4096, table ids above), so both conversions are the identity on the value;
//! requests are numbered on first conversion. `MPI_Fint` is a C `int`.

use std::ffi::c_int;
use std::sync::Mutex;

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

/// Requests are 64-bit ids, so their integers come from a table: each request converted gets
/// the next number (the same one when converted again); `MPI_REQUEST_NULL` is its constant.
static REQUEST_INTS: Mutex<Vec<usize>> = Mutex::new(Vec::new());

/// `MPI_REQUEST_NULL`.
const REQUEST_NULL: usize = 0x180;
/// First number handed out (above the predefined handle range).
const FIRST_REQUEST_INT: usize = 0x1000;

fn request_to_int(h: Handle) -> c_int {
    let v = h as usize;
    if v == REQUEST_NULL {
        return REQUEST_NULL as c_int;
    }
    let mut t = REQUEST_INTS.lock().unwrap_or_else(|p| p.into_inner());
    let i = match t.iter().position(|&x| x == v) {
        Some(i) => i,
        None => {
            t.push(v);
            t.len() - 1
        }
    };
    c_int::try_from(FIRST_REQUEST_INT + i).unwrap_or(-1)
}

fn request_from_int(i: c_int) -> Handle {
    let t = REQUEST_INTS.lock().unwrap_or_else(|p| p.into_inner());
    usize::try_from(i)
        .ok()
        .and_then(|i| i.checked_sub(FIRST_REQUEST_INT))
        .and_then(|k| t.get(k).copied())
        // Anything else stays what it was: the predefined null, or an invalid request.
        .unwrap_or(i as u32 as usize) as Handle
}

mpi_value_fn! {
    /// The request as an `int` (numbered on first conversion).
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
