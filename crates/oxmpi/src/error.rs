//! Errors as values, each carrying the MPI error class it maps to.
//!
//! Class numbers are those of the MPI-5.0 standard ABI, so the C layer returns
//! `err.class() as i32` unchanged.

use std::fmt;

/// MPI error classes (MPI-5.0 standard ABI values).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(i32)]
#[non_exhaustive]
pub enum ErrorClass {
    /// `MPI_ERR_BUFFER`: invalid buffer pointer or size.
    Buffer = 1,
    /// `MPI_ERR_COUNT`: invalid count.
    Count = 2,
    /// `MPI_ERR_TYPE`: invalid datatype.
    Type = 3,
    /// `MPI_ERR_TAG`: invalid tag.
    Tag = 4,
    /// `MPI_ERR_COMM`: invalid communicator.
    Comm = 5,
    /// `MPI_ERR_RANK`: invalid rank.
    Rank = 6,
    /// `MPI_ERR_REQUEST`: invalid request.
    Request = 7,
    /// `MPI_ERR_ROOT`: invalid root.
    Root = 8,
    /// `MPI_ERR_GROUP`: invalid group.
    Group = 9,
    /// `MPI_ERR_OP`: invalid reduction operation.
    Op = 10,
    /// `MPI_ERR_TOPOLOGY`: invalid topology.
    Topology = 11,
    /// `MPI_ERR_DIMS`: invalid dimensions.
    Dims = 12,
    /// `MPI_ERR_ARG`: another argument is invalid.
    Arg = 13,
    /// `MPI_ERR_UNKNOWN`: unknown error.
    Unknown = 14,
    /// `MPI_ERR_TRUNCATE`: message longer than the receive buffer.
    Truncate = 15,
    /// `MPI_ERR_OTHER`: a known error not in this list.
    Other = 16,
    /// `MPI_ERR_INTERN`: internal error.
    Intern = 17,
    /// `MPI_ERR_IN_STATUS`: see the status of each request.
    InStatus = 19,
    /// `MPI_ERR_PENDING`: request still pending.
    Pending = 18,
    /// `MPI_ERR_ASSERT`: invalid assertion argument (RMA synchronization).
    Assert = 22,
    /// `MPI_ERR_BASE`: invalid base pointer (window memory).
    Base = 24,
    /// `MPI_ERR_DISP`: invalid displacement unit or displacement.
    Disp = 26,
    /// `MPI_ERR_INFO_KEY`: an info key is empty or too long.
    InfoKey = 31,
    /// `MPI_ERR_INFO_NOKEY`: the info object has no such key.
    InfoNoKey = 32,
    /// `MPI_ERR_INFO_VALUE`: an info value is too long.
    InfoValue = 33,
    /// `MPI_ERR_INFO`: invalid info object.
    Info = 34,
    /// `MPI_ERR_KEYVAL`: invalid attribute key.
    Keyval = 36,
    /// `MPI_ERR_LOCKTYPE`: invalid lock type.
    Locktype = 37,
    /// `MPI_ERR_NO_MEM`: out of memory.
    NoMem = 39,
    /// `MPI_ERR_RMA_ATTACH`: memory cannot be attached to a dynamic window.
    RmaAttach = 46,
    /// `MPI_ERR_RMA_CONFLICT`: conflicting accesses to a window.
    RmaConflict = 47,
    /// `MPI_ERR_RMA_RANGE`: target memory outside the window.
    RmaRange = 48,
    /// `MPI_ERR_RMA_SHARED`: memory cannot be shared.
    RmaShared = 49,
    /// `MPI_ERR_RMA_SYNC`: an RMA call outside its synchronization epoch.
    RmaSync = 50,
    /// `MPI_ERR_SIZE`: invalid size.
    Size = 52,
    /// `MPI_ERR_SPAWN`: processes could not be spawned.
    Spawn = 53,
    /// The operation is not supported (ABI class 55).
    UnsupportedOperation = 55,
    /// `MPI_ERR_WIN`: invalid window.
    Win = 56,
    /// `MPI_ERR_RMA_FLAVOR`: the window's flavor does not allow the call.
    RmaFlavor = 57,
    /// `MPI_ERR_PROC_ABORTED`: a peer process aborted.
    ProcAborted = 58,
    /// `MPI_ERR_VALUE_TOO_LARGE`: a value does not fit the (`int`) argument that would return
    /// it; the call's `_c` form takes it.
    ValueTooLarge = 59,
    /// `MPI_ERR_SESSION`: invalid session.
    Session = 60,
    /// `MPI_ERR_ERRHANDLER`: invalid error handler.
    Errhandler = 61,
    /// `MPI_ERR_ABI`: the ABI facts cannot be changed (`MPI_Abi_set_fortran_info`).
    Abi = 62,
}

impl ErrorClass {
    /// The class whose ABI value is `code`, if oxmpi has it (a class a program added with
    /// `MPI_Add_error_class`, or a standard one oxmpi never raises, has none).
    pub fn from_code(code: i32) -> Option<ErrorClass> {
        Some(match code {
            1 => ErrorClass::Buffer,
            2 => ErrorClass::Count,
            3 => ErrorClass::Type,
            4 => ErrorClass::Tag,
            5 => ErrorClass::Comm,
            6 => ErrorClass::Rank,
            7 => ErrorClass::Request,
            8 => ErrorClass::Root,
            9 => ErrorClass::Group,
            10 => ErrorClass::Op,
            11 => ErrorClass::Topology,
            12 => ErrorClass::Dims,
            13 => ErrorClass::Arg,
            14 => ErrorClass::Unknown,
            15 => ErrorClass::Truncate,
            16 => ErrorClass::Other,
            17 => ErrorClass::Intern,
            19 => ErrorClass::InStatus,
            18 => ErrorClass::Pending,
            22 => ErrorClass::Assert,
            24 => ErrorClass::Base,
            26 => ErrorClass::Disp,
            31 => ErrorClass::InfoKey,
            32 => ErrorClass::InfoNoKey,
            33 => ErrorClass::InfoValue,
            34 => ErrorClass::Info,
            36 => ErrorClass::Keyval,
            37 => ErrorClass::Locktype,
            39 => ErrorClass::NoMem,
            46 => ErrorClass::RmaAttach,
            47 => ErrorClass::RmaConflict,
            48 => ErrorClass::RmaRange,
            49 => ErrorClass::RmaShared,
            50 => ErrorClass::RmaSync,
            52 => ErrorClass::Size,
            53 => ErrorClass::Spawn,
            55 => ErrorClass::UnsupportedOperation,
            56 => ErrorClass::Win,
            57 => ErrorClass::RmaFlavor,
            58 => ErrorClass::ProcAborted,
            59 => ErrorClass::ValueTooLarge,
            60 => ErrorClass::Session,
            61 => ErrorClass::Errhandler,
            62 => ErrorClass::Abi,
            _ => return None,
        })
    }
}

/// An MPI error: its class and a message naming the call and cause.
///
/// Boxed, so that a `Result<T>` of a small `T` (a send's `Option<ReqId>`) is two registers:
/// a wider one goes through memory on the hot path, where reloading it with wide loads after
/// narrow stores stalls on store forwarding, and so on the ring stores still draining.
#[derive(Clone, PartialEq, Eq)]
pub struct Error(Box<Inner>);

#[derive(Clone, PartialEq, Eq)]
struct Inner {
    class: ErrorClass,
    message: String,
}

impl Error {
    /// An error of `class` with a human-readable `message`.
    #[cold]
    pub fn new(class: ErrorClass, message: impl Into<String>) -> Self {
        Error(Box::new(Inner {
            class,
            message: message.into(),
        }))
    }

    /// The MPI error class.
    pub fn class(&self) -> ErrorClass {
        self.0.class
    }

    /// The message, without the class.
    pub fn message(&self) -> &str {
        &self.0.message
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Error")
            .field("class", &self.0.class)
            .field("message", &self.0.message)
            .finish()
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({:?})", self.0.message, self.0.class)
    }
}

impl std::error::Error for Error {}

impl From<oxmpi_pmi::PmiError> for Error {
    fn from(e: oxmpi_pmi::PmiError) -> Self {
        Error::new(ErrorClass::Other, e.to_string())
    }
}

/// Result type of every fallible oxmpi call.
pub type Result<T> = std::result::Result<T, Error>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_have_abi_values() {
        assert_eq!(ErrorClass::Truncate as i32, 15);
        assert_eq!(ErrorClass::Rank as i32, 6);
        assert_eq!(ErrorClass::ProcAborted as i32, 58);
        assert_eq!(ErrorClass::Pending as i32, 18);
        assert_eq!(ErrorClass::NoMem as i32, 39);
        assert_eq!(ErrorClass::Info as i32, 34);
        assert_eq!(ErrorClass::Errhandler as i32, 61);
        assert_eq!(ErrorClass::Abi as i32, 62);
        assert_eq!(ErrorClass::RmaSync as i32, 50);
        assert_eq!(ErrorClass::RmaRange as i32, 48);
        assert_eq!(ErrorClass::Win as i32, 56);
        assert_eq!(ErrorClass::RmaFlavor as i32, 57);
        assert_eq!(ErrorClass::Locktype as i32, 37);
        assert_eq!(ErrorClass::Spawn as i32, 53);
        assert_eq!(ErrorClass::ValueTooLarge as i32, 59);
        assert_eq!(ErrorClass::Session as i32, 60);
        for c in [
            ErrorClass::Buffer,
            ErrorClass::Other,
            ErrorClass::RmaFlavor,
            ErrorClass::ValueTooLarge,
            ErrorClass::Errhandler,
            ErrorClass::Session,
            ErrorClass::Abi,
        ] {
            assert_eq!(ErrorClass::from_code(c as i32), Some(c));
        }
        assert_eq!(ErrorClass::from_code(0), None);
        assert_eq!(ErrorClass::from_code(20), None);
        assert_eq!(ErrorClass::from_code(16384), None);
        let e = Error::new(ErrorClass::Tag, "send: tag -5 is negative");
        assert_eq!(e.class(), ErrorClass::Tag);
        assert_eq!(e.to_string(), "send: tag -5 is negative (Tag)");
    }
}
