//! Communicators and attribute keyvals as ids (`MPI_Comm`, `MPI_Comm_create_keyval`).
//!
//! Every function here is the typed API's logic (`comm.rs`) reached through an id: creating
//! (dup, split, split by type, from a group, from groups alone, intercommunicators), comparing, freeing, and
//! attributes with C-shaped callbacks. Errors: an id that is null, freed or never issued is
//! [`ErrorClass::Comm`] (communicators), [`ErrorClass::Group`] (groups) or
//! [`ErrorClass::Keyval`] (keyvals).
//!
//! # Standard sections
//! MPI-5.0 §7.4 (communicator management), §7.6 (intercommunicators), §7.7 (caching).

use std::cell::Cell;
use std::sync::{Arc, RwLock};

use super::attr::{CopyHook, DeleteHook, KeyDef, Predefined, Value};
use super::env::runtime;
use super::group::GroupHandle;
use super::table::Table;
use crate::comm::{Comm, SplitType};
use crate::error::{Error, ErrorClass, Result};
use crate::group::Relation;
use crate::runtime::Runtime;

/// A communicator id (`MPI_Comm`). `Copy`; valid from its creation until
/// [`comm_free`]. [`to_int`](Self::to_int)/[`from_int`](Self::from_int) give the stable
/// integer of `MPI_Comm_toint`/`MPI_Comm_fromint`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(transparent)]
pub struct CommHandle(u32);

impl CommHandle {
    /// `MPI_COMM_NULL` (ABI value).
    pub const NULL: CommHandle = CommHandle(super::attr::NO_COMM);
    /// `MPI_COMM_WORLD` (ABI value).
    pub const WORLD: CommHandle = CommHandle(0x101);
    /// `MPI_COMM_SELF` (ABI value).
    pub const SELF: CommHandle = CommHandle(0x102);

    /// The id as an integer.
    pub fn to_int(self) -> i32 {
        self.0 as i32
    }

    /// The id with integer value `i` (whether it names a communicator is checked on use).
    pub fn from_int(i: i32) -> CommHandle {
        CommHandle(i as u32)
    }
}

static COMMS: Table<Comm> = Table::new();
/// `MPI_COMM_WORLD` and `MPI_COMM_SELF`, from init on.
static PREDEFINED: RwLock<Option<[Comm; 2]>> = RwLock::new(None);

pub(crate) fn install_predefined(rt: &Arc<Runtime>) {
    let both = [Comm::world(rt.clone()), Comm::self_comm(rt.clone())];
    *PREDEFINED.write().unwrap_or_else(|p| p.into_inner()) = Some(both);
}

/// Deletes the attributes of `MPI_COMM_SELF` and forgets both predefined communicators
/// (finalize).
pub(crate) fn free_predefined() -> Result<()> {
    let both = PREDEFINED.write().unwrap_or_else(|p| p.into_inner()).take();
    match both {
        Some([_, self_comm]) => self_comm.free(CommHandle::SELF.0),
        None => Ok(()),
    }
}

fn bad_comm(call: &str, c: CommHandle) -> Error {
    Error::new(
        ErrorClass::Comm,
        format!(
            "{call}: {:#x} is not a live communicator (null, freed, or never created)",
            c.0
        ),
    )
}

/// The communicator behind `c`; also checks that MPI is initialized and this thread may call.
pub(crate) fn get(call: &str, c: CommHandle) -> Result<Comm> {
    runtime(call)?;
    let predefined = match c {
        CommHandle::WORLD => Some(0),
        CommHandle::SELF => Some(1),
        _ => None,
    };
    let found = match predefined {
        Some(i) => PREDEFINED
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
            .map(|b| b[i].clone()),
        None => COMMS.get(c.0),
    };
    found.ok_or_else(|| bad_comm(call, c))
}

pub(crate) fn put(call: &str, c: Comm) -> Result<CommHandle> {
    COMMS.insert(c).map(CommHandle).ok_or_else(|| {
        Error::new(
            ErrorClass::Other,
            format!("{call}: too many communicators are live"),
        )
    })
}

pub(crate) fn put_opt(call: &str, c: Option<Comm>) -> Result<CommHandle> {
    match c {
        Some(c) => put(call, c),
        None => Ok(CommHandle::NULL),
    }
}

/// This process's rank in `c` (`MPI_Comm_rank`; the local group's, for intercommunicators).
pub fn comm_rank(c: CommHandle) -> Result<i32> {
    Ok(get("comm_rank", c)?.rank())
}

/// Number of ranks of `c` (`MPI_Comm_size`; the local group's, for intercommunicators).
pub fn comm_size(c: CommHandle) -> Result<i32> {
    Ok(get("comm_size", c)?.size())
}

/// Whether `c` is an intercommunicator (`MPI_Comm_test_inter`).
pub fn comm_test_inter(c: CommHandle) -> Result<bool> {
    Ok(get("comm_test_inter", c)?.is_inter())
}

/// Size of the remote group of intercommunicator `c` (`MPI_Comm_remote_size`).
pub fn comm_remote_size(c: CommHandle) -> Result<i32> {
    let c = inter("comm_remote_size", c)?;
    Ok(c.remote_group().size())
}

fn inter(call: &str, h: CommHandle) -> Result<Comm> {
    let c = get(call, h)?;
    if !c.is_inter() {
        return Err(Error::new(
            ErrorClass::Comm,
            format!("{call}: not an intercommunicator"),
        ));
    }
    Ok(c)
}

/// The group of `c` (`MPI_Comm_group`), as a new group id.
pub fn comm_group(c: CommHandle) -> Result<GroupHandle> {
    super::group::put("comm_group", get("comm_group", c)?.group())
}

/// The remote group of intercommunicator `c` (`MPI_Comm_remote_group`).
pub fn comm_remote_group(c: CommHandle) -> Result<GroupHandle> {
    let c = inter("comm_remote_group", c)?;
    super::group::put("comm_remote_group", c.remote_group())
}

/// How `a` relates to `b` (`MPI_Comm_compare`).
pub fn comm_compare(a: CommHandle, b: CommHandle) -> Result<Relation> {
    Ok(get("comm_compare", a)?.compare(&get("comm_compare", b)?))
}

/// A duplicate of `c` (`MPI_Comm_dup`): each attribute's copy callback decides whether it
/// is copied; if one fails, the call fails with its error and the new communicator is gone
/// (copies already made are deleted again). Collective.
pub fn comm_dup(c: CommHandle) -> Result<CommHandle> {
    put("comm_dup", get("comm_dup", c)?.dup(c.0)?)
}

/// `MPI_Comm_split`: one communicator per `color`, ranks ordered by `key`;
/// [`UNDEFINED`](crate::UNDEFINED) gets [`CommHandle::NULL`]. Collective.
pub fn comm_split(c: CommHandle, color: i32, key: i32) -> Result<CommHandle> {
    put_opt("comm_split", get("comm_split", c)?.split(color, key)?)
}

/// `MPI_Comm_split_type`: `Some(SplitType::Shared)` gives one communicator per host; `None`
/// (`MPI_UNDEFINED`) gives [`CommHandle::NULL`]. Collective.
pub fn comm_split_type(c: CommHandle, kind: Option<SplitType>, key: i32) -> Result<CommHandle> {
    put_opt(
        "comm_split_type",
        get("comm_split_type", c)?.split_type(kind, key)?,
    )
}

/// `MPI_Comm_create`: members of `g` get a new communicator, others
/// [`CommHandle::NULL`]. Collective over `c`.
pub fn comm_create(c: CommHandle, g: GroupHandle) -> Result<CommHandle> {
    let comm = get("comm_create", c)?;
    let g = super::group::get("comm_create", g)?;
    put_opt("comm_create", comm.create(&g)?)
}

/// `MPI_Comm_create_group`: collective over the members of `g` only.
pub fn comm_create_group(c: CommHandle, g: GroupHandle, tag: i32) -> Result<CommHandle> {
    let comm = get("comm_create_group", c)?;
    let g = super::group::get("comm_create_group", g)?;
    put("comm_create_group", comm.create_group(&g, tag)?)
}

/// `MPI_Intercomm_create` with `local` as the local communicator.
pub fn intercomm_create(
    local: CommHandle,
    local_leader: i32,
    peer: CommHandle,
    remote_leader: i32,
    tag: i32,
) -> Result<CommHandle> {
    let l = get("intercomm_create", local)?;
    let p = get("intercomm_create", peer)?;
    put(
        "intercomm_create",
        l.create_intercomm(local_leader, &p, remote_leader, tag)?,
    )
}

/// `MPI_Comm_create_from_group`: the communicator of `g`'s members, collective over them
/// alone, all giving the same `stringtag`; [`CommHandle::NULL`] for an empty group (a local
/// call). `g`'s processes must be of this job's world, this process among them
/// ([`ErrorClass::Group`] otherwise). See [`Universe::create_from_group`].
///
/// [`Universe::create_from_group`]: crate::Universe::create_from_group
pub fn comm_create_from_group(g: GroupHandle, stringtag: &str) -> Result<CommHandle> {
    const CALL: &str = "comm_create_from_group";
    let rt = runtime(CALL)?;
    let g = super::group::get(CALL, g)?;
    put_opt(CALL, Comm::from_group(rt, &g, stringtag)?)
}

/// `MPI_Intercomm_create_from_groups`: the intercommunicator between this process's group
/// `local` (led by its rank `local_leader`) and the disjoint group `remote` (led by its rank
/// `remote_leader`), collective over both, every process giving the same `stringtag`. See
/// [`Universe::create_from_groups`].
///
/// [`Universe::create_from_groups`]: crate::Universe::create_from_groups
pub fn intercomm_create_from_groups(
    local: GroupHandle,
    local_leader: i32,
    remote: GroupHandle,
    remote_leader: i32,
    stringtag: &str,
) -> Result<CommHandle> {
    const CALL: &str = "intercomm_create_from_groups";
    let rt = runtime(CALL)?;
    let l = super::group::get(CALL, local)?;
    let r = super::group::get(CALL, remote)?;
    put(
        CALL,
        Comm::intercomm_from_groups(rt, &l, local_leader, &r, remote_leader, stringtag)?,
    )
}

/// `MPI_Comm_spawn_multiple` over `c` (`commands` significant at `root` only): the
/// intercommunicator to the new processes. See [`crate::Communicator::spawn`].
pub fn comm_spawn(
    c: CommHandle,
    root: i32,
    commands: &[crate::spawn::SpawnCommand],
) -> Result<CommHandle> {
    put("comm_spawn", get("comm_spawn", c)?.spawn(root, commands)?)
}

/// The intercommunicator to this process's parents (`MPI_Comm_get_parent`): the same handle
/// on every call, [`CommHandle::NULL`] if no oxmpi job spawned this process or once the
/// handle was freed or disconnected.
pub fn comm_get_parent() -> Result<CommHandle> {
    runtime("comm_get_parent")?;
    let Some(p) = crate::spawn::parent() else {
        return Ok(CommHandle::NULL);
    };
    let h = p.raw()?;
    Ok(match get("comm_get_parent", h) {
        Ok(c) if Arc::ptr_eq(&c.state, &p.state) => h,
        _ => CommHandle::NULL,
    })
}

/// `MPI_Intercomm_merge`.
pub fn intercomm_merge(c: CommHandle, high: bool) -> Result<CommHandle> {
    put("intercomm_merge", get("intercomm_merge", c)?.merge(high)?)
}

/// Frees `*c` and sets it to [`CommHandle::NULL`] (`MPI_Comm_free`): every attribute's
/// delete callback runs (the first error is returned; the communicator is freed either
/// way); operations in flight complete. The predefined communicators cannot be freed.
pub fn comm_free(c: &mut CommHandle) -> Result<()> {
    runtime("comm_free")?;
    if matches!(*c, CommHandle::WORLD | CommHandle::SELF) {
        return Err(Error::new(
            ErrorClass::Comm,
            "comm_free: the predefined communicators cannot be freed",
        ));
    }
    // The attributes' delete callbacks run first, while `*c` is still live: they are called
    // with it, and may query it (mpi4py asks whether it is an intercommunicator).
    let deleted = get("comm_free", *c)?.free(c.0);
    COMMS.remove(c.0).ok_or_else(|| bad_comm("comm_free", *c))?;
    *c = CommHandle::NULL;
    deleted
}

/// Disconnects `*c` (`MPI_Comm_disconnect`): waits until the point-to-point operations this
/// process started on `*c` have completed inside the library — sends until their peer has
/// what it needs from us, receives freed with `MPI_Request_free` until their data is in —
/// then frees `*c` as [`comm_free`] does. Operations on other communicators are not waited
/// for. Requests the caller holds must be complete already, as the standard requires (a
/// pending receive still held is not waited for). Buffered sends are not waited for: one may
/// be to a process that receives it only after disconnecting. The predefined communicators
/// are [`ErrorClass::Comm`].
pub fn comm_disconnect(c: &mut CommHandle) -> Result<()> {
    let rt = runtime("comm_disconnect")?;
    if matches!(*c, CommHandle::WORLD | CommHandle::SELF) {
        return Err(Error::new(
            ErrorClass::Comm,
            "comm_disconnect: the predefined communicators cannot be disconnected",
        ));
    }
    let comm = get("comm_disconnect", *c)?;
    // Context pairs (2k point-to-point, 2k + 1 collective): the communicator's own, and an
    // intercommunicator's local one.
    let pairs = [comm.state.context >> 1, comm.state.local_context >> 1];
    super::request::wait_engine_until(rt, |e| {
        e.enter("comm_disconnect");
        (!e.pending_on(|ctx| pairs.contains(&(ctx >> 1)))).then_some(())
    });
    drop(comm);
    comm_free(c)
}

/// An attribute key id (`MPI_Comm_create_keyval`); the predefined keys have the MPI-5.0
/// ABI values of [`Predefined`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(transparent)]
pub struct KeyvalHandle(u32);

impl KeyvalHandle {
    /// `MPI_KEYVAL_INVALID`.
    pub const INVALID: KeyvalHandle = KeyvalHandle(0);

    /// The key of a predefined attribute (`MPI_TAG_UB`, ...).
    pub fn predefined(p: Predefined) -> KeyvalHandle {
        KeyvalHandle(p as u32)
    }

    /// The id as an integer.
    pub fn to_int(self) -> i32 {
        self.0 as i32
    }

    /// The id with integer value `i`.
    pub fn from_int(i: i32) -> KeyvalHandle {
        KeyvalHandle(i as u32)
    }
}

/// A copy callback (`MPI_Comm_copy_attr_function`): given the communicator being
/// duplicated, the keyval, its extra state and the value, returns the value for the new
/// communicator, `None` to copy nothing, or an error that fails the duplication.
pub type CopyFn =
    Arc<dyn Fn(CommHandle, KeyvalHandle, usize, usize) -> Result<Option<usize>> + Send + Sync>;

/// A delete callback (`MPI_Comm_delete_attr_function`): given the communicator, the keyval,
/// its extra state and the value leaving the communicator; an error fails the call that
/// removed it. The communicator is [`CommHandle::NULL`] for a copy deleted because its
/// duplication failed.
pub type DeleteFn = Arc<dyn Fn(CommHandle, KeyvalHandle, usize, usize) -> Result<()> + Send + Sync>;

/// What duplication does with a keyval's values.
#[derive(Clone)]
pub enum CopyPolicy {
    /// Never copied (`MPI_COMM_NULL_COPY_FN`).
    Null,
    /// Copied as they are (`MPI_COMM_DUP_FN`).
    Dup,
    /// The callback decides per value.
    Call(CopyFn),
}

/// Keyvals created here, by number. A freed keyval leaves the table, but attributes set
/// with it keep their callbacks (they hold the definition) until deleted.
static KEYVALS: std::sync::Mutex<Vec<(u32, Arc<KeyDef>)>> = std::sync::Mutex::new(Vec::new());

fn keyvals() -> std::sync::MutexGuard<'static, Vec<(u32, Arc<KeyDef>)>> {
    KEYVALS.lock().unwrap_or_else(|p| p.into_inner())
}

/// A new keyval (`MPI_Comm_create_keyval`) with its copy policy, an optional delete callback
/// and `extra_state`, passed to both. Values are pointer-sized (`void *` in C).
pub fn keyval_create(
    copy: CopyPolicy,
    delete: Option<DeleteFn>,
    extra_state: usize,
) -> Result<KeyvalHandle> {
    runtime("keyval_create")?;
    let id = super::attr::next_key_id();
    let k = KeyvalHandle(id);
    let copy: Option<CopyHook> = match copy {
        CopyPolicy::Null => None,
        CopyPolicy::Dup => Some(Box::new(|_, v: &Value| Ok(Some(v.clone())))),
        CopyPolicy::Call(f) => Some(Box::new(move |c: u32, v: &Value| {
            Ok(f(CommHandle(c), k, extra_state, word(v))?.map(|x| Arc::new(x) as Value))
        })),
    };
    let delete: Option<DeleteHook> = delete.map(|f| -> DeleteHook {
        Box::new(move |c: u32, v: &Value| f(CommHandle(c), k, extra_state, word(v)))
    });
    let def = Arc::new(KeyDef {
        id,
        copy,
        delete,
        predefined: false,
    });
    keyvals().push((id, def));
    Ok(k)
}

/// A stored value as a word: keyvals created here store `usize`; the predefined attributes
/// are `i32`s, sign-extended.
fn word(v: &Value) -> usize {
    if let Some(&x) = v.downcast_ref::<usize>() {
        x
    } else if let Some(&x) = v.downcast_ref::<i32>() {
        x as isize as usize
    } else {
        0
    }
}

fn bad_keyval(call: &str, k: KeyvalHandle) -> Error {
    Error::new(
        ErrorClass::Keyval,
        format!(
            "{call}: keyval {} is not live (invalid, freed, or never created)",
            k.0
        ),
    )
}

fn keydef(call: &str, k: KeyvalHandle) -> Result<Arc<KeyDef>> {
    if let Some(p) = Predefined::from_key(k.0) {
        return Ok(p.def().clone());
    }
    keyvals()
        .iter()
        .find(|(id, _)| *id == k.0)
        .map(|(_, d)| d.clone())
        .ok_or_else(|| bad_keyval(call, k))
}

/// Frees `*k` and sets it to [`KeyvalHandle::INVALID`] (`MPI_Comm_free_keyval`); attributes
/// already set with it keep working until deleted.
pub fn keyval_free(k: &mut KeyvalHandle) -> Result<()> {
    runtime("keyval_free")?;
    if Predefined::from_key(k.0).is_some() {
        return Err(Error::new(
            ErrorClass::Keyval,
            "keyval_free: predefined keyvals cannot be freed",
        ));
    }
    let mut all = keyvals();
    let i = all
        .iter()
        .position(|(id, _)| *id == k.0)
        .ok_or_else(|| bad_keyval("keyval_free", *k))?;
    all.swap_remove(i);
    *k = KeyvalHandle::INVALID;
    Ok(())
}

/// Sets attribute `k` of `c` to `value` (`MPI_Comm_set_attr`); a value it replaces goes
/// through the delete callback first, and if that fails the old value stays and the error
/// is returned.
pub fn comm_set_attr(c: CommHandle, k: KeyvalHandle, value: usize) -> Result<()> {
    let comm = get("comm_set_attr", c)?;
    let def = keydef("comm_set_attr", k)?;
    comm.state.attrs.set(c.0, &def, Arc::new(value))
}

/// The value of attribute `k` of `c`, if set (`MPI_Comm_get_attr`). Predefined attributes
/// are integers, returned sign-extended.
pub fn comm_get_attr(c: CommHandle, k: KeyvalHandle) -> Result<Option<usize>> {
    let comm = get("comm_get_attr", c)?;
    let def = keydef("comm_get_attr", k)?;
    let v = comm.state.attrs.get(def.id).as_ref().map(word);
    // `MPI_LASTUSEDCODE` moves with every code added since the attribute was set.
    if def.id == super::attr::Predefined::LastUsedCode as u32 {
        return Ok(v.map(|_| super::errhandler::last_used_code() as isize as usize));
    }
    Ok(v)
}

/// Deletes attribute `k` of `c` (`MPI_Comm_delete_attr`), running its delete callback; if
/// that fails the attribute stays and the error is returned. Deleting an attribute that is
/// not set does nothing.
pub fn comm_delete_attr(c: CommHandle, k: KeyvalHandle) -> Result<()> {
    let comm = get("comm_delete_attr", c)?;
    let def = keydef("comm_delete_attr", k)?;
    comm.state.attrs.delete(c.0, &def).map(drop)
}

thread_local! {
    /// `MPI_COMM_WORLD` and `MPI_COMM_SELF` as this thread's typed communicators, made on the
    /// thread's first call after init: [`with_p2p`] lends them without the table's lock and
    /// without counting references (six atomic read-modify-writes per call otherwise, each
    /// draining the store buffer behind the message just written). A plain reference without
    /// a destructor, so that reaching it is one TLS lookup (a destructor adds a registration
    /// state check to every access, measured 60 instructions per call in the shared library);
    /// the pair itself lives as long as the process (two handles per thread that calls MPI).
    static TYPED: Cell<Option<&'static [crate::Communicator<crate::Single>; 2]>> =
        const { Cell::new(None) };
}

/// Runs `f` on the communicator behind `c` as a [`Single`](crate::Single) communicator, as
/// [`comm_p2p`] gives it (same checks, same errors; an intercommunicator as its
/// point-to-point view), lending `MPI_COMM_WORLD` and `MPI_COMM_SELF` from a per-thread
/// copy: the C ABI's point-to-point calls go through here.
// Always inlined, the closure with it, and `f` called in one place on a reference from either
// way: the C ABI's short paths then run without the closure's captures stored to the stack
// for a slow path that takes it by value (a few call sites only, all in that layer).
#[inline(always)]
pub fn with_p2p<R>(
    c: CommHandle,
    f: impl FnOnce(&crate::Communicator<crate::Single>) -> Result<R>,
) -> Result<R> {
    let owned;
    let comm = match lent(c) {
        Some(comm) => comm,
        None => {
            owned = typed_slow(c)?;
            &owned
        }
    };
    f(comm)
}

/// The thread's copy of `MPI_COMM_WORLD` or `MPI_COMM_SELF` if `c` is one of them and the
/// thread has its copies.
#[inline(always)]
fn lent(c: CommHandle) -> Option<&'static crate::Communicator<crate::Single>> {
    if c == CommHandle::WORLD || c == CommHandle::SELF {
        // The copies exist on a thread only once `runtime` let it call, and neither the
        // thread level nor the calling thread changes after that: finalize is the one check
        // left.
        if let Some(both) = TYPED.with(Cell::get) {
            if !crate::runtime::is_finalized() {
                return Some(&both[usize::from(c == CommHandle::SELF)]);
            }
        }
    }
    None
}

/// [`with_p2p`] on a thread's first call, after finalize, and for communicators other than
/// the predefined two (out of line, so that the short path stays short).
#[inline(never)]
fn typed_slow(c: CommHandle) -> Result<crate::Communicator<crate::Single>> {
    match c {
        CommHandle::WORLD => Ok(typed_first(c)?[0].clone()),
        CommHandle::SELF => Ok(typed_first(c)?[1].clone()),
        _ => comm_p2p::<crate::Single>(c),
    }
}

/// [`with_p2p`] on a thread's first call (or after finalize): init, finalize and the
/// calling thread are checked as `get` does, then the thread's pair is made.
#[cold]
#[inline(never)]
fn typed_first(c: CommHandle) -> Result<&'static [crate::Communicator<crate::Single>; 2]> {
    runtime("comm_typed")?;
    if let Some(both) = TYPED.with(Cell::get) {
        return Ok(both);
    }
    let both = PREDEFINED
        .read()
        .unwrap_or_else(|p| p.into_inner())
        .as_ref()
        .map(|b| b.clone().map(crate::Communicator::from_comm))
        .ok_or_else(|| bad_comm("comm_typed", c))?;
    let both: &'static [crate::Communicator<crate::Single>; 2] = Box::leak(Box::new(both));
    TYPED.with(|t| t.set(Some(both)));
    Ok(both)
}

/// A typed handle to the communicator behind `c`, for the typed API's operations
/// (point-to-point, collectives) in a program initialized through [`init_thread`]. `L` may
/// not promise more threading than the level in force ([`ErrorClass::Other`] otherwise), so
/// the typed rules (`Send`/`Sync` by level) keep holding. Fails for intercommunicators
/// ([`ErrorClass::Comm`]); [`comm_p2p`] gives their point-to-point view.
///
/// [`init_thread`]: super::env::init_thread
pub fn comm_typed<L: crate::ThreadLevel>(c: CommHandle) -> Result<crate::Communicator<L>> {
    let comm = typed_checked::<L>("comm_typed", c)?;
    if comm.is_inter() {
        return Err(Error::new(
            ErrorClass::Comm,
            "comm_typed: an intercommunicator is not a Communicator",
        ));
    }
    Ok(crate::Communicator::from_comm(comm))
}

/// As [`comm_typed`], for point-to-point calls only (the C ABI's send, receive, probe and
/// request-starting calls): an intercommunicator is accepted and given as its
/// point-to-point view, whose ranks (destinations, sources, statuses) name the remote group
/// and whose messages travel on the intercommunicator's own context. Only point-to-point
/// operations are meaningful on that view: its rank, size and collectives are those of the
/// local group on a context the remote group also sends on, so a collective on it does not
/// complete correctly (memory stays safe). Use [`comm_typed`] for everything else.
pub fn comm_p2p<L: crate::ThreadLevel>(c: CommHandle) -> Result<crate::Communicator<L>> {
    Ok(crate::Communicator::from_comm(typed_checked::<L>(
        "comm_p2p", c,
    )?))
}

/// [`comm_coll`] for a [`Single`](crate::Single) communicator, with `MPI_COMM_WORLD` and
/// `MPI_COMM_SELF` lent from the thread's copy as [`with_p2p`] lends them: the C ABI's
/// collectives go through here. Owned, the communicator's two reference counts went up and
/// down once per call, and the last decrement waited for the collective's own stores to a
/// line a peer polls (a rooted shared-memory collective's root: 0.13 instead of 0.05 µs for
/// an 8-byte broadcast).
// Inlined up to the lent copy (a C collective's short path), the rest out of line.
#[inline]
pub fn comm_coll_lent(c: CommHandle) -> Result<CollComm> {
    if let Some(comm) = lent(c) {
        return Ok(Ok(std::borrow::Cow::Borrowed(comm)));
    }
    comm_coll_owned(c)
}

/// The communicator of a C collective: an intracommunicator, lent where the thread keeps a
/// copy, or an intercommunicator.
pub type CollComm = std::result::Result<
    std::borrow::Cow<'static, crate::Communicator<crate::Single>>,
    crate::InterCommunicator<crate::Single>,
>;

/// [`comm_coll_lent`] of a communicator this thread has no copy of.
#[inline(never)]
fn comm_coll_owned(c: CommHandle) -> Result<CollComm> {
    use std::borrow::Cow;
    if c == CommHandle::WORLD || c == CommHandle::SELF {
        // Makes the thread's copies on its first call, as point-to-point does.
        return Ok(Ok(Cow::Owned(typed_slow(c)?)));
    }
    Ok(comm_coll::<crate::Single>(c)?.map(Cow::Owned))
}

/// The communicator behind `c` for a collective: `Ok(Ok(_))` an intracommunicator (as
/// [`comm_typed`] gives it), `Ok(Err(_))` an intercommunicator, whose collectives send each
/// group's data to the other group. Same checks and errors as [`comm_typed`] otherwise.
#[allow(clippy::type_complexity)] // either of the two typed communicators
pub fn comm_coll<L: crate::ThreadLevel>(
    c: CommHandle,
) -> Result<std::result::Result<crate::Communicator<L>, crate::InterCommunicator<L>>> {
    let comm = typed_checked::<L>("comm_coll", c)?;
    Ok(if comm.is_inter() {
        Err(crate::InterCommunicator::from_arc(comm.rt, comm.state))
    } else {
        Ok(crate::Communicator::from_comm(comm))
    })
}

/// The communicator behind `c`, checked as [`comm_typed`] documents (thread level).
fn typed_checked<L: crate::ThreadLevel>(call: &str, c: CommHandle) -> Result<Comm> {
    let comm = get(call, c)?;
    if L::LEVEL > comm.rt.level {
        return Err(Error::new(
            ErrorClass::Other,
            format!(
                "{call}: a {:?} handle needs that thread level; {:?} is in force",
                L::LEVEL,
                comm.rt.level
            ),
        ));
    }
    Ok(comm)
}
