//! Error handlers and error codes as ids (`MPI_Errhandler`, `MPI_Add_error_class`).
//!
//! Each communicator has an error handler: [`ErrhandlerHandle::ARE_FATAL`] unless set
//! otherwise, inherited by the communicators made from it (the front end calls [`inherit`]
//! after creating one). What a failed call then does is [`action`]'s answer: return the
//! code, end the job, or call a user handler. Error codes beyond the standard classes are
//! added at run time ([`add_error_class`], [`add_error_code`]), each with an optional
//! string; [`error_class`] and [`error_string`] answer for both kinds.
//!
//! # Standard sections
//! MPI-5.0 §9.3 (error handling), §9.4 (error codes and classes), §9.5 (user-defined
//! error codes).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use super::comm::CommHandle;
use super::env::check_ready;
use super::table::Table;
use crate::error::{Error, ErrorClass, Result};

/// An error handler id (`MPI_Errhandler`). The predefined ones have their MPI-5.0 ABI values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(transparent)]
pub struct ErrhandlerHandle(u32);

impl ErrhandlerHandle {
    /// `MPI_ERRHANDLER_NULL`.
    pub const NULL: ErrhandlerHandle = ErrhandlerHandle(0x140);
    /// `MPI_ERRORS_ARE_FATAL`: print one message and end the job (the default).
    pub const ARE_FATAL: ErrhandlerHandle = ErrhandlerHandle(0x141);
    /// `MPI_ERRORS_ABORT`: end the processes of the communicator (here: the job).
    pub const ABORT: ErrhandlerHandle = ErrhandlerHandle(0x142);
    /// `MPI_ERRORS_RETURN`: return the error code to the caller.
    pub const RETURN: ErrhandlerHandle = ErrhandlerHandle(0x143);

    /// The id as an integer (`MPI_Errhandler_toint`).
    pub fn to_int(self) -> i32 {
        self.0 as i32
    }

    /// The id with integer value `i` (`MPI_Errhandler_fromint`).
    pub fn from_int(i: i32) -> ErrhandlerHandle {
        ErrhandlerHandle(i as u32)
    }

    fn is_predefined(self) -> bool {
        matches!(self, Self::ARE_FATAL | Self::ABORT | Self::RETURN)
    }
}

/// A user error handler (`MPI_Comm_errhandler_function`): called with the communicator and
/// the error code of the call that failed.
pub type HandlerFn = Arc<dyn Fn(CommHandle, i32) + Send + Sync>;

/// What a failed call on a communicator does.
#[derive(Clone)]
pub enum Action {
    /// Return the code (`MPI_ERRORS_RETURN`).
    Return,
    /// Print one message and end the job (`MPI_ERRORS_ARE_FATAL`).
    Fatal,
    /// End the job (`MPI_ERRORS_ABORT`).
    Abort,
    /// Call the user handler, then return the code.
    Call(HandlerFn),
}

/// A user error handler and its references: the ids the program holds (one from its
/// creation, one more from each `MPI_*_get_errhandler`) and the objects it is set on. The
/// last release (`MPI_Errhandler_free`, or the object's end) frees its id.
struct Handler {
    f: HandlerFn,
    refs: usize,
}

static HANDLERS: Table<Arc<Mutex<Handler>>> = Table::new();

/// The function of live user handler `h`, with one more reference to it.
fn retain(call: &str, h: ErrhandlerHandle) -> Result<HandlerFn> {
    let entry = HANDLERS.get(h.0).ok_or_else(|| bad_handler(call, h))?;
    let mut e = lock(&entry);
    // A release that took the count to 0 removed the id already, or is about to under this
    // lock: then the handler is gone for us too.
    if e.refs == 0 {
        return Err(bad_handler(call, h));
    }
    e.refs += 1;
    Ok(e.f.clone())
}

/// Drops one reference to user handler `h`; the last one frees its id. `false` if `h` is
/// no live user handler.
fn release(h: ErrhandlerHandle) -> bool {
    let Some(entry) = HANDLERS.get(h.0) else {
        return false;
    };
    let mut e = lock(&entry);
    if e.refs == 0 {
        return false;
    }
    e.refs -= 1;
    if e.refs == 0 {
        HANDLERS.remove(h.0);
    }
    true
}

fn lock(h: &Mutex<Handler>) -> MutexGuard<'_, Handler> {
    // Written field by field with no panic between: a poisoned lock is usable.
    h.lock().unwrap_or_else(|p| p.into_inner())
}

/// The handler set on each communicator that has one other than the default; a user handler
/// is kept here with its function, and counts as a reference to its id.
static ON_COMM: Mutex<Option<Attached>> = Mutex::new(None);

/// Communicator id → its handler (and the handler's function, for user handlers).
type Attached = HashMap<u32, (ErrhandlerHandle, Option<HandlerFn>)>;

fn on_comm() -> MutexGuard<'static, Option<Attached>> {
    // Entries are written whole, so a poisoned lock is usable.
    ON_COMM.lock().unwrap_or_else(|p| p.into_inner())
}

fn bad_handler(call: &str, h: ErrhandlerHandle) -> Error {
    Error::new(
        ErrorClass::Errhandler,
        format!(
            "{call}: {:#x} is not a live error handler (null, freed, or never created)",
            h.0
        ),
    )
}

/// A new error handler calling `f` (`MPI_Comm_create_errhandler`).
pub fn errhandler_create(f: HandlerFn) -> Result<ErrhandlerHandle> {
    check_ready("comm_create_errhandler")?;
    insert("comm_create_errhandler", f)
}

/// A new error handler calling `f`, also before MPI is initialized (a session's handler is
/// made before the session, `MPI_Session_create_errhandler`).
pub(crate) fn insert(call: &str, f: HandlerFn) -> Result<ErrhandlerHandle> {
    let h = Arc::new(Mutex::new(Handler { f, refs: 1 }));
    HANDLERS.insert(h).map(ErrhandlerHandle).ok_or_else(|| {
        Error::new(
            ErrorClass::Other,
            format!("{call}: too many error handlers are live"),
        )
    })
}

/// Frees `*h` and sets it to [`ErrhandlerHandle::NULL`] (`MPI_Errhandler_free`).
/// Objects it is set on keep using it, and each id `MPI_*_get_errhandler` gave needs a free
/// of its own. Freeing a predefined handler only resets `*h`.
pub fn errhandler_free(h: &mut ErrhandlerHandle) -> Result<()> {
    check_ready("errhandler_free")?;
    if !h.is_predefined() && !release(*h) {
        return Err(bad_handler("errhandler_free", *h));
    }
    *h = ErrhandlerHandle::NULL;
    Ok(())
}

/// Sets the error handler of `c` (`MPI_Comm_set_errhandler`).
pub fn comm_set_errhandler(c: CommHandle, h: ErrhandlerHandle) -> Result<()> {
    super::comm::get("comm_set_errhandler", c)?;
    set_on(c, h)
}

/// Sets handler `h` under key `c`: a communicator's id, or another object's key that no
/// communicator id takes (a session's, [`SessionHandle::error_key`](super::session::SessionHandle::error_key)).
pub(crate) fn set_on(c: CommHandle, h: ErrhandlerHandle) -> Result<()> {
    let f = if h.is_predefined() {
        None
    } else {
        Some(retain("set_errhandler", h)?)
    };
    let old = on_comm()
        .get_or_insert_with(HashMap::new)
        .insert(c.to_int() as u32, (h, f));
    if let Some((old, Some(_))) = old {
        release(old);
    }
    Ok(())
}

/// The error handler of `c` (`MPI_Comm_get_errhandler`).
pub fn comm_get_errhandler(c: CommHandle) -> Result<ErrhandlerHandle> {
    super::comm::get("comm_get_errhandler", c)?;
    Ok(get_on(c))
}

/// The handler under key `c` (see [`set_on`]); the default is `MPI_ERRORS_ARE_FATAL`.
/// A user handler's id comes with a reference of its own, which the caller frees.
pub(crate) fn get_on(c: CommHandle) -> ErrhandlerHandle {
    let m = on_comm();
    let h = m
        .as_ref()
        .and_then(|m| m.get(&(c.to_int() as u32)))
        .map_or(ErrhandlerHandle::ARE_FATAL, |(h, _)| *h);
    // The attachment holds a reference, so the id is live.
    if !h.is_predefined() && retain("get_errhandler", h).is_err() {
        return ErrhandlerHandle::ARE_FATAL;
    }
    h
}

/// Gives `child` the error handler of `parent` (communicators made from another inherit
/// its handler, MPI-5.0 §9.3).
pub fn inherit(parent: CommHandle, child: CommHandle) {
    let mut m = on_comm();
    if let Some(map) = m.as_mut() {
        if let Some(e) = map.get(&(parent.to_int() as u32)).cloned() {
            // The parent's attachment keeps the id live.
            if e.1.is_some() && retain("inherit", e.0).is_err() {
                return;
            }
            if let Some((old, Some(_))) = map.insert(child.to_int() as u32, e) {
                release(old);
            }
        }
    }
}

/// Forgets the handler of a freed communicator (or another object's, by its key).
pub fn forget(c: CommHandle) {
    let old = on_comm()
        .as_mut()
        .and_then(|m| m.remove(&(c.to_int() as u32)));
    if let Some((old, Some(_))) = old {
        release(old);
    }
}

/// What a call failing on `c` does (`MPI_COMM_NULL` and unknown communicators: the handler
/// of `MPI_COMM_WORLD`, as for errors not tied to a communicator).
pub fn action(c: CommHandle) -> Action {
    let m = on_comm();
    let entry = m.as_ref().and_then(|m| {
        m.get(&(c.to_int() as u32))
            .or_else(|| m.get(&(CommHandle::WORLD.to_int() as u32)))
    });
    match entry {
        None => Action::Fatal,
        Some((h, f)) => match (*h, f) {
            (ErrhandlerHandle::RETURN, _) => Action::Return,
            (ErrhandlerHandle::ABORT, _) => Action::Abort,
            (_, Some(f)) => Action::Call(f.clone()),
            _ => Action::Fatal,
        },
    }
}

/// What a call whose error goes to handler `h` itself does (the constructors that take the
/// new communicator's handler, `MPI_Comm_create_from_group`, raise their own errors on it):
/// [`ErrorClass::Errhandler`] if `h` is not a live handler.
pub fn handler_action(h: ErrhandlerHandle) -> Result<Action> {
    Ok(match h {
        ErrhandlerHandle::RETURN => Action::Return,
        ErrhandlerHandle::ABORT => Action::Abort,
        ErrhandlerHandle::ARE_FATAL => Action::Fatal,
        _ => Action::Call(
            HANDLERS
                .get(h.0)
                .map(|e| lock(&e).f.clone())
                .ok_or_else(|| bad_handler("errhandler", h))?,
        ),
    })
}

// ---------------------------------------------------------------------------------------------
// Error codes and classes.
// ---------------------------------------------------------------------------------------------

/// The first code handed out by [`add_error_class`] and [`add_error_code`]: above
/// `MPI_ERR_LASTCODE`, so added codes never collide with the standard's.
pub const FIRST_USER_CODE: i32 = super::attr::ERR_LASTCODE + 1;

#[derive(Default)]
struct Codes {
    next: i32,
    /// Class of each added code (an added class is its own class).
    class: HashMap<i32, i32>,
    strings: HashMap<i32, String>,
}

static CODES: Mutex<Option<Codes>> = Mutex::new(None);

fn codes() -> MutexGuard<'static, Option<Codes>> {
    CODES.lock().unwrap_or_else(|p| p.into_inner())
}

fn with_codes<R>(f: impl FnOnce(&mut Codes) -> R) -> R {
    let mut g = codes();
    let c = g.get_or_insert_with(|| Codes {
        next: FIRST_USER_CODE,
        ..Codes::default()
    });
    f(c)
}

/// The standard's error classes with their descriptions (MPI-5.0 ABI values).
const CLASSES: [(i32, &str); 63] = [
    (0, "no error"),
    (1, "invalid buffer pointer"),
    (2, "invalid count argument"),
    (3, "invalid datatype"),
    (4, "invalid tag"),
    (5, "invalid communicator"),
    (6, "invalid rank"),
    (7, "invalid request"),
    (8, "invalid root"),
    (9, "invalid group"),
    (10, "invalid operation"),
    (11, "invalid topology"),
    (12, "invalid dimension argument"),
    (13, "invalid argument of some other kind"),
    (14, "unknown error"),
    (15, "message truncated"),
    (16, "known error not in this list"),
    (17, "internal MPI error"),
    (18, "pending request"),
    (19, "error code is in status"),
    (20, "permission denied"),
    (21, "error related to the amode passed to MPI_File_open"),
    (22, "invalid assert argument"),
    (23, "invalid file name"),
    (24, "invalid base argument"),
    (25, "error in a data conversion function"),
    (26, "invalid disp argument"),
    (
        27,
        "conversion function registered twice for a data representation",
    ),
    (28, "file exists"),
    (
        29,
        "file operation could not be completed, as the file is in use",
    ),
    (30, "invalid file handle"),
    (31, "invalid info key"),
    (32, "info key not defined"),
    (33, "invalid info value"),
    (34, "invalid info object"),
    (35, "other I/O error"),
    (36, "invalid keyval"),
    (37, "invalid locktype argument"),
    (38, "invalid service name"),
    (39, "out of memory"),
    (40, "collective argument not identical on all processes"),
    (41, "not enough space"),
    (42, "file does not exist"),
    (43, "invalid port name"),
    (44, "quota exceeded"),
    (45, "read-only file or file system"),
    (46, "error attaching memory to a window"),
    (47, "conflicting accesses to a window"),
    (48, "target memory not part of the window"),
    (49, "memory cannot be shared"),
    (50, "wrong synchronization of RMA calls"),
    (51, "invalid service name"),
    (52, "invalid size argument"),
    (53, "error spawning processes"),
    (54, "unsupported data representation"),
    (55, "unsupported operation"),
    (56, "invalid window object"),
    (57, "unsupported window flavor"),
    (58, "a process involved in the operation aborted"),
    (59, "value too large to store"),
    (60, "invalid session"),
    (61, "invalid error handler"),
    (62, "ABI mismatch"),
];

fn standard(code: i32) -> Option<&'static str> {
    CLASSES.iter().find(|(c, _)| *c == code).map(|(_, s)| *s)
}

fn bad_code(call: &str, code: i32) -> Error {
    Error::new(
        ErrorClass::Arg,
        format!("{call}: {code} is not an error code or class"),
    )
}

/// The class of error code `code` (`MPI_Error_class`).
pub fn error_class(code: i32) -> Result<i32> {
    if standard(code).is_some() {
        return Ok(code);
    }
    with_codes(|c| c.class.get(&code).copied()).ok_or_else(|| bad_code("error_class", code))
}

/// The description of error code `code` (`MPI_Error_string`): the string added for it, else
/// its class's.
pub fn error_string(code: i32) -> Result<String> {
    if let Some(s) = with_codes(|c| c.strings.get(&code).cloned()) {
        return Ok(s);
    }
    let class = error_class(code)?;
    Ok(standard(class).unwrap_or("").to_string())
}

/// A new error class (`MPI_Add_error_class`).
pub fn add_error_class() -> Result<i32> {
    check_ready("add_error_class")?;
    Ok(with_codes(|c| {
        let k = c.next;
        c.next += 1;
        c.class.insert(k, k);
        k
    }))
}

/// The largest error code in use (the value of `MPI_LASTUSEDCODE`): `MPI_ERR_LASTCODE` until
/// a class or code is added, then the last one added.
pub fn last_used_code() -> i32 {
    with_codes(|c| c.next - 1)
}

/// A new error code of class `class` (`MPI_Add_error_code`).
pub fn add_error_code(class: i32) -> Result<i32> {
    check_ready("add_error_code")?;
    let known = standard(class).is_some() || with_codes(|c| c.class.get(&class) == Some(&class));
    if !known || class == 0 {
        return Err(bad_code("add_error_code", class));
    }
    Ok(with_codes(|c| {
        let k = c.next;
        c.next += 1;
        c.class.insert(k, class);
        k
    }))
}

/// Sets the description of added code or class `code` (`MPI_Add_error_string`); the
/// standard's own codes keep theirs ([`ErrorClass::Arg`]).
pub fn add_error_string(code: i32, s: &str) -> Result<()> {
    check_ready("add_error_string")?;
    if code < FIRST_USER_CODE {
        return Err(Error::new(
            ErrorClass::Arg,
            format!("add_error_string: {code} is a predefined code"),
        ));
    }
    with_codes(|c| {
        if !c.class.contains_key(&code) {
            return Err(bad_code("add_error_string", code));
        }
        c.strings.insert(code, s.to_string());
        Ok(())
    })
}

/// Removes added class `class` (`MPI_Remove_error_class`): [`ErrorClass::Arg`] for a
/// predefined or unknown class, and for one that still has codes or a string (remove
/// those first).
pub fn remove_error_class(class: i32) -> Result<()> {
    check_ready("remove_error_class")?;
    with_codes(|c| {
        if class < FIRST_USER_CODE || c.class.get(&class) != Some(&class) {
            return Err(bad_code("remove_error_class", class));
        }
        if c.class.iter().any(|(&k, &cl)| cl == class && k != class) {
            return Err(Error::new(
                ErrorClass::Arg,
                format!("remove_error_class: class {class} still has error codes"),
            ));
        }
        if c.strings.contains_key(&class) {
            return Err(Error::new(
                ErrorClass::Arg,
                format!("remove_error_class: class {class} still has a string"),
            ));
        }
        c.class.remove(&class);
        Ok(())
    })
}

/// Removes added code `code` (`MPI_Remove_error_code`): [`ErrorClass::Arg`] for a
/// predefined or unknown code, a class, or a code that still has a string.
pub fn remove_error_code(code: i32) -> Result<()> {
    check_ready("remove_error_code")?;
    with_codes(|c| {
        match c.class.get(&code) {
            Some(&cl) if code >= FIRST_USER_CODE && cl != code => {}
            _ => return Err(bad_code("remove_error_code", code)),
        }
        if c.strings.contains_key(&code) {
            return Err(Error::new(
                ErrorClass::Arg,
                format!("remove_error_code: code {code} still has a string"),
            ));
        }
        c.class.remove(&code);
        Ok(())
    })
}

/// Removes the string of added code or class `code` (`MPI_Remove_error_string`); it then
/// reads as the empty string. [`ErrorClass::Arg`] for a predefined or unknown code.
pub fn remove_error_string(code: i32) -> Result<()> {
    check_ready("remove_error_string")?;
    with_codes(|c| {
        if code < FIRST_USER_CODE || !c.class.contains_key(&code) {
            return Err(bad_code("remove_error_string", code));
        }
        c.strings.remove(&code);
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_user_handler_lives_until_its_last_reference_goes() {
        let h = insert("t", Arc::new(|_, _| {})).unwrap();
        // A second id from a get, and an object it is set on (a key no communicator has).
        let key = CommHandle::from_int(i32::MIN | 0x1234);
        retain("t", h).unwrap();
        set_on(key, h).unwrap();
        assert_eq!(get_on(key), h, "the object's handler");
        // References now: creation, the first get, the object, the second get.
        for left in [3, 2, 1] {
            assert!(release(h));
            assert!(
                HANDLERS.get(h.0).is_some(),
                "gone with {left} references left"
            );
        }
        assert!(
            matches!(action(key), Action::Call(_)),
            "still set on the object"
        );
        forget(key);
        assert!(
            HANDLERS.get(h.0).is_none(),
            "the object's end was the last reference"
        );
        assert!(!release(h), "freed past its last reference");
        assert!(retain("t", h).is_err());
    }

    #[test]
    fn replacing_a_handler_lets_the_old_one_go() {
        let a = insert("t", Arc::new(|_, _| {})).unwrap();
        let key = CommHandle::from_int(i32::MIN | 0x4321);
        set_on(key, a).unwrap();
        assert!(release(a), "the creator's id freed");
        assert!(HANDLERS.get(a.0).is_some(), "the object holds it");
        set_on(key, ErrhandlerHandle::RETURN).unwrap();
        assert!(HANDLERS.get(a.0).is_none(), "replaced, nobody holds it");
        assert!(matches!(action(key), Action::Return));
        forget(key);
    }

    #[test]
    fn standard_classes_are_their_own_class_and_have_strings() {
        for code in 0..=62 {
            assert_eq!(error_class(code).unwrap(), code);
            assert!(!error_string(code).unwrap().is_empty());
        }
        assert_eq!(error_string(15).unwrap(), "message truncated");
        assert_eq!(error_class(63).unwrap_err().class(), ErrorClass::Arg);
        assert_eq!(error_class(-1).unwrap_err().class(), ErrorClass::Arg);
        assert_eq!(
            error_class(FIRST_USER_CODE + 100_000).unwrap_err().class(),
            ErrorClass::Arg
        );
    }

    #[test]
    fn action_defaults_to_fatal() {
        assert!(matches!(
            action(CommHandle::from_int(0x7777)),
            Action::Fatal
        ));
    }
}
