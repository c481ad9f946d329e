//! Sessions (`MPI_Session`, MPI-4): a way into MPI without `MPI_Init`. A session names the
//! process sets it can see (`mpi://WORLD`, `mpi://SELF`), makes groups of them, and from a
//! group a communicator ([`comm_create_from_group`](super::comm::comm_create_from_group)),
//! with no `MPI_COMM_WORLD` involved.
//!
//! Sessions and the world model share the process's one runtime ([`super::env`]): the first
//! session starts it if `MPI_Init` has not, and the last one to finalize shuts it down if the
//! world model is not in use. Each session has its own error handler, kept in the error
//! handler table under a key no communicator id takes (the high bit set), so errors of a
//! session's calls dispatch like a communicator's.
//!
//! # Standard sections
//! MPI-5.0 §11.3 (the sessions model), §11.3.2 (process sets), §9.3.3 (session error
//! handlers).

use std::sync::Arc;

use super::comm::CommHandle;
use super::errhandler::{self, ErrhandlerHandle};
use super::group::GroupHandle;
use super::info::InfoHandle;
use super::table::Table;
use crate::error::{Error, ErrorClass, Result};
use crate::group::Group;
use crate::threading::Threading;

/// A session id (`MPI_Session`). `Copy`; valid from [`session_init`] until
/// [`session_finalize`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(transparent)]
pub struct SessionHandle(u32);

impl SessionHandle {
    /// `MPI_SESSION_NULL` (ABI value).
    pub const NULL: SessionHandle = SessionHandle(0x120);

    /// The id as an integer (`MPI_Session_toint`).
    pub fn to_int(self) -> i32 {
        self.0 as i32
    }

    /// The id with integer value `i` (whether it names a session is checked on use).
    pub fn from_int(i: i32) -> SessionHandle {
        SessionHandle(i as u32)
    }

    /// The key of this session's error handler: its id with the high bit set, which no
    /// communicator id has (ids are positive `i32`s).
    pub fn error_key(self) -> CommHandle {
        CommHandle::from_int((self.0 | ERROR_KEY_BIT) as i32)
    }

    /// The session whose error handler key is `c`, if `c` is one ([`Self::error_key`]).
    pub fn of_error_key(c: CommHandle) -> Option<SessionHandle> {
        let k = c.to_int() as u32;
        (k & ERROR_KEY_BIT != 0).then_some(SessionHandle(k & !ERROR_KEY_BIT))
    }
}

const ERROR_KEY_BIT: u32 = 1 << 31;

/// The process sets every session sees, in the order `MPI_Session_get_nth_pset` gives them.
pub const PSETS: [&str; 2] = ["mpi://WORLD", "mpi://SELF"];

/// What a session keeps.
#[derive(Debug, Clone)]
struct Entry {
    /// The thread level the session was given.
    level: Threading,
}

static SESSIONS: Table<Arc<Entry>> = Table::new();

fn entry(call: &str, s: SessionHandle) -> Result<Arc<Entry>> {
    SESSIONS.get(s.0).ok_or_else(|| {
        Error::new(
            ErrorClass::Session,
            format!(
                "{call}: {:#x} is not a live session (null, finalized, or never created)",
                s.0
            ),
        )
    })
}

/// Checks that `s` names a live session.
pub fn check(call: &str, s: SessionHandle) -> Result<()> {
    entry(call, s).map(drop)
}

/// The value of the `thread_level` info key for `level`.
pub fn level_name(level: Threading) -> &'static str {
    match level {
        Threading::Single => "MPI_THREAD_SINGLE",
        Threading::Funneled => "MPI_THREAD_FUNNELED",
        Threading::Serialized => "MPI_THREAD_SERIALIZED",
        Threading::Multiple => "MPI_THREAD_MULTIPLE",
    }
}

/// The thread level a `thread_level` info value asks for (case-insensitive; `None` for
/// anything else).
pub fn level_of_name(v: &str) -> Option<Threading> {
    [
        Threading::Single,
        Threading::Funneled,
        Threading::Serialized,
        Threading::Multiple,
    ]
    .into_iter()
    .find(|&l| level_name(l).eq_ignore_ascii_case(v.trim()))
}

/// Starts a session (`MPI_Session_init`) at thread level `level` (the runtime's, if it runs
/// already at a lower one; `None`: the runtime's, or [`Threading::Single`] if this starts
/// it), with error handler `eh`: predefined, or made by [`session_create_errhandler`]
/// before. Starts the runtime if neither `MPI_Init` nor another session has.
pub fn session_init(level: Option<Threading>, eh: ErrhandlerHandle) -> Result<SessionHandle> {
    errhandler::handler_action(eh)?;
    if eh == ErrhandlerHandle::NULL {
        return Err(Error::new(
            ErrorClass::Errhandler,
            "session_init: the error handler is MPI_ERRHANDLER_NULL",
        ));
    }
    let rt = super::env::session_enter("session_init", level.unwrap_or(Threading::Single))?;
    let e = Arc::new(Entry {
        level: level.map_or(rt.level, |l| rt.level.min(l)),
    });
    let Some(id) = SESSIONS.insert(e) else {
        super::env::session_leave("session_init")?;
        return Err(Error::new(
            ErrorClass::Other,
            "session_init: too many sessions are live",
        ));
    };
    let s = SessionHandle(id);
    errhandler::set_on(s.error_key(), eh)?;
    Ok(s)
}

/// Ends session `*s` and sets it to [`SessionHandle::NULL`] (`MPI_Session_finalize`),
/// after draining and detaching its buffer if one is attached; the last session shuts MPI
/// down (collectively) if the world model is not in use.
pub fn session_finalize(s: &mut SessionHandle) -> Result<()> {
    entry("session_finalize", *s)?;
    // A buffer still attached is drained and let go, as MPI_Finalize does the process's.
    let of = super::env::BufferOf::Session(*s);
    if super::env::buffer_is_attached(of)? {
        super::env::buffer_detach(of, usize::MAX)?;
    }
    SESSIONS.remove(s.0);
    errhandler::forget(s.error_key());
    *s = SessionHandle::NULL;
    super::env::session_leave("session_finalize")
}

/// The hints in use (`MPI_Session_get_info`): the thread level provided.
pub fn session_get_info(s: SessionHandle) -> Result<InfoHandle> {
    let e = entry("session_get_info", s)?;
    super::info::info_from(&[("thread_level", level_name(e.level))])
}

/// How many process sets the session sees (`MPI_Session_get_num_psets`).
pub fn session_num_psets(s: SessionHandle) -> Result<usize> {
    check("session_get_num_psets", s)?;
    Ok(PSETS.len())
}

/// The name of process set `n` (`MPI_Session_get_nth_pset`); [`ErrorClass::Arg`] out of
/// range.
pub fn session_nth_pset(s: SessionHandle, n: i32) -> Result<&'static str> {
    check("session_get_nth_pset", s)?;
    usize::try_from(n)
        .ok()
        .and_then(|i| PSETS.get(i).copied())
        .ok_or_else(|| {
            Error::new(
                ErrorClass::Arg,
                format!(
                    "session_get_nth_pset: {n} is no process set (there are {})",
                    PSETS.len()
                ),
            )
        })
}

/// The world ranks of process set `name` ([`ErrorClass::Arg`] if there is no such set);
/// names compare case-insensitively, as URIs' schemes do.
fn pset(call: &str, name: &str) -> Result<(Vec<u32>, u32)> {
    let rt = super::env::runtime(call)?;
    if name.eq_ignore_ascii_case(PSETS[0]) {
        Ok(((0..rt.size).collect(), rt.rank))
    } else if name.eq_ignore_ascii_case(PSETS[1]) {
        Ok((vec![rt.rank], rt.rank))
    } else {
        Err(Error::new(
            ErrorClass::Arg,
            format!("{call}: no process set is named {name:?} (there are {PSETS:?})"),
        ))
    }
}

/// The info of process set `name` (`MPI_Session_get_pset_info`): its size as `mpi_size`.
pub fn session_pset_info(s: SessionHandle, name: &str) -> Result<InfoHandle> {
    check("session_get_pset_info", s)?;
    let (members, _) = pset("session_get_pset_info", name)?;
    super::info::info_from(&[("mpi_size", &members.len().to_string())])
}

/// The group of process set `name` (`MPI_Group_from_session_pset`).
pub fn group_from_pset(s: SessionHandle, name: &str) -> Result<GroupHandle> {
    check("group_from_session_pset", s)?;
    let (members, me) = pset("group_from_session_pset", name)?;
    super::group::put(
        "group_from_session_pset",
        Group::in_session(members, me, s.0),
    )
}

/// A new error handler for sessions calling `f` (`MPI_Session_create_errhandler`), which
/// may come before MPI is initialized: a session's handler is given to
/// [`session_init`]. `f` gets the session's [`error key`](SessionHandle::error_key).
pub fn session_create_errhandler(f: errhandler::HandlerFn) -> Result<ErrhandlerHandle> {
    errhandler::insert("session_create_errhandler", f)
}

/// Sets the error handler of session `s` (`MPI_Session_set_errhandler`).
pub fn session_set_errhandler(s: SessionHandle, eh: ErrhandlerHandle) -> Result<()> {
    check("session_set_errhandler", s)?;
    errhandler::set_on(s.error_key(), eh)
}

/// The error handler of session `s` (`MPI_Session_get_errhandler`).
pub fn session_get_errhandler(s: SessionHandle) -> Result<ErrhandlerHandle> {
    check("session_get_errhandler", s)?;
    Ok(errhandler::get_on(s.error_key()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_keys_never_name_a_communicator_and_map_back() {
        for id in [0x1000u32, 0x1234_5678 & 0x7fff_ffff, 0x7fff_ffff] {
            let s = SessionHandle(id);
            let k = s.error_key();
            assert!(k.to_int() < 0, "a communicator id is a positive i32");
            assert_eq!(SessionHandle::of_error_key(k), Some(s));
        }
        assert_eq!(SessionHandle::of_error_key(CommHandle::WORLD), None);
    }

    #[test]
    fn thread_level_names_round_trip() {
        for l in [
            Threading::Single,
            Threading::Funneled,
            Threading::Serialized,
            Threading::Multiple,
        ] {
            assert_eq!(level_of_name(level_name(l)), Some(l));
        }
        assert_eq!(
            level_of_name(" mpi_thread_multiple"),
            Some(Threading::Multiple)
        );
        assert_eq!(level_of_name("MPI_THREAD_SOMETIMES"), None);
    }

    #[test]
    fn a_null_or_unknown_session_is_an_error_of_its_class() {
        for s in [SessionHandle::NULL, SessionHandle(0x1_0000)] {
            let e = check("t", s).unwrap_err();
            assert_eq!(e.class(), ErrorClass::Session);
        }
    }
}
