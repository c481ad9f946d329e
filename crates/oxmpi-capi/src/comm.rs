//! Communicators and groups: size, rank, creation (dup, split, split by type, from a group,
//! intercommunicators, from groups alone), comparison, freeing, and the group operations.

use std::ffi::{c_char, c_int};
use std::sync::Mutex;

use oxmpi::handle::comm::{self as hc, CommHandle};
use oxmpi::handle::errhandler::{self, ErrhandlerHandle};
use oxmpi::handle::group::{self as hg, GroupHandle};
use oxmpi::handle::info::{self as hi, InfoHandle};
use oxmpi::{ErrorClass, Relation, SplitType};

use crate::boundary::{
    comm, comm_handle, count, err, get, handle_of, int_of, mpi_fn, mpi_fn_on_errhandler, put,
    put_str, slice, slice_mut, str_arg, Handle,
};

/// `MPI_UNDEFINED`.
pub const UNDEFINED: c_int = -32766;
/// `MPI_MAX_OBJECT_NAME`.
pub(crate) const MAX_OBJECT_NAME: usize = 128;
/// `MPI_COMM_TYPE_SHARED`.
const COMM_TYPE_SHARED: c_int = 221;
/// `MPI_COMM_TYPE_HW_UNGUIDED`.
const COMM_TYPE_HW_UNGUIDED: c_int = 222;
/// `MPI_COMM_TYPE_HW_GUIDED`.
const COMM_TYPE_HW_GUIDED: c_int = 223;
/// `MPI_COMM_TYPE_RESOURCE_GUIDED`.
const COMM_TYPE_RESOURCE_GUIDED: c_int = 224;
/// `MPI_PROC_NULL`.
const PROC_NULL: c_int = -3;
/// The info key naming the hardware resource of the guided split types, and the one value
/// oxmpi knows (every process of a host shares its memory).
const HW_RESOURCE_TYPE: &str = "mpi_hw_resource_type";
const SHARED_MEMORY: &str = "mpi_shared_memory";

/// The info hints set on each communicator (`MPI_Comm_set_info`), by communicator id.
/// oxmpi acts on none of them; they are kept so `MPI_Comm_get_info` returns them, as the
/// standard allows for hints an implementation ignores.
static HINTS: Mutex<Vec<(i32, Hints)>> = Mutex::new(Vec::new());

/// Info hints as key/value pairs.
type Hints = Vec<(String, String)>;

fn hints_lock() -> std::sync::MutexGuard<'static, Vec<(i32, Hints)>> {
    HINTS.lock().unwrap_or_else(|p| p.into_inner())
}

/// The key/value pairs of info object `h` (`MPI_INFO_NULL` has none).
pub(crate) fn info_pairs(h: Handle) -> oxmpi::Result<Vec<(String, String)>> {
    let i = InfoHandle::from_int(int_of(h));
    if i == InfoHandle::NULL {
        return Ok(Vec::new());
    }
    let n = hi::info_get_nkeys(i)?;
    let mut v = Vec::with_capacity(n as usize);
    for k in 0..n {
        let key = hi::info_get_nthkey(i, k)?;
        if let Some(val) = hi::info_get(i, &key)? {
            v.push((key, val));
        }
    }
    Ok(v)
}

/// Replaces the hints of communicator `c` with `pairs`.
fn set_hints(c: CommHandle, pairs: Vec<(String, String)>) {
    let mut t = hints_lock();
    t.retain(|(id, _)| *id != c.to_int());
    if !pairs.is_empty() {
        t.push((c.to_int(), pairs));
    }
}

/// The hints of communicator `c`.
fn hints(c: CommHandle) -> Vec<(String, String)> {
    hints_lock()
        .iter()
        .find(|(id, _)| *id == c.to_int())
        .map(|(_, p)| p.clone())
        .unwrap_or_default()
}

/// The split a guided split type (`MPI_COMM_TYPE_HW_GUIDED`, `MPI_COMM_TYPE_RESOURCE_GUIDED`)
/// asks for: the host when `info` names `mpi_shared_memory`, nothing (`MPI_COMM_NULL`) for
/// any other or no resource, as the standard requires for resources not known.
fn guided(info: Handle) -> oxmpi::Result<Option<SplitType>> {
    let shared = info_pairs(info)?
        .iter()
        .any(|(k, v)| k == HW_RESOURCE_TYPE && v == SHARED_MEMORY);
    Ok(shared.then_some(SplitType::Shared))
}

/// Duplicates `c` with hints `pairs` into `*out` (`MPI_Comm_dup` and its info forms).
///
/// # Safety
/// `out` must be null or valid for a write.
unsafe fn dup(
    name: &str,
    c: Handle,
    pairs: Vec<(String, String)>,
    out: *mut Handle,
) -> oxmpi::Result<()> {
    if out.is_null() {
        return Err(err(ErrorClass::Arg, name, "newcomm is NULL"));
    }
    let new = hc::comm_dup(comm(c))?;
    set_hints(new, pairs);
    // SAFETY: forwarded from our caller.
    unsafe { put_comm(name, comm(c), new, out) }
}

/// `MPI_Comm_idup` and `MPI_Comm_idup_with_info`: the duplicate is made at once (the
/// agreement on a context id is a blocking collective in the core), and the request returned
/// is already complete. Correct wherever every member calls it before waiting on anything
/// another member does after it, which is how nonblocking duplication is used.
///
/// # Safety
/// `out` and `r` must be null or valid for writes.
unsafe fn idup(
    name: &str,
    c: Handle,
    pairs: Vec<(String, String)>,
    out: *mut Handle,
    r: *mut Handle,
) -> oxmpi::Result<()> {
    if r.is_null() {
        return Err(err(ErrorClass::Arg, name, "request is NULL"));
    }
    // SAFETY: forwarded from our caller.
    unsafe { dup(name, c, pairs, out)? };
    let id = crate::p2p::with_requests(name, |t| {
        Ok(t.completed(oxmpi::handle::request::empty_status()))
    })?;
    // SAFETY: forwarded from our caller.
    unsafe { put(name, r, crate::p2p::req_handle(id)) }
}

fn group(h: Handle) -> GroupHandle {
    GroupHandle::from_int(int_of(h))
}

fn group_handle(g: GroupHandle) -> Handle {
    handle_of(g.to_int())
}

/// `MPI_IDENT`, `MPI_CONGRUENT`, `MPI_SIMILAR`, `MPI_UNEQUAL`.
fn relation(r: Relation) -> c_int {
    match r {
        Relation::Identical => 201,
        Relation::Congruent => 202,
        Relation::Similar => 203,
        Relation::Unequal => 204,
    }
}

/// Stores new communicator `new` (made from `parent`) in `*out`; it inherits the error
/// handler of its parent.
///
/// # Safety
/// `out` must be null or valid for a write.
unsafe fn put_comm(
    name: &str,
    parent: CommHandle,
    new: CommHandle,
    out: *mut Handle,
) -> oxmpi::Result<()> {
    if new != CommHandle::NULL {
        errhandler::inherit(parent, new);
    }
    // SAFETY: forwarded from our caller.
    unsafe { put(name, out, comm_handle(new)) }
}

/// Frees the communicator at `*c` with `free` (`comm_free` or `comm_disconnect`), forgets
/// what this layer keeps about it (hints, error handler, name) and sets `*c` to
/// `MPI_COMM_NULL`. A failing delete callback still frees it (the error is returned).
///
/// # Safety
/// `c` must be null or valid for reads and writes of one handle.
unsafe fn release(
    name: &str,
    c: *mut Handle,
    free: fn(&mut CommHandle) -> oxmpi::Result<()>,
) -> oxmpi::Result<()> {
    // SAFETY: forwarded from our caller.
    let mut h = comm(unsafe { get(name, c)? });
    let old = h;
    let r = free(&mut h);
    if h == CommHandle::NULL {
        set_hints(old, Vec::new());
        errhandler::forget(old);
        oxmpi::handle::name::forget(old);
        // SAFETY: forwarded from our caller.
        unsafe { put(name, c, comm_handle(h))? };
    }
    r
}

/// Gives `new`, made by a constructor from groups, its error handler `eh` and the hints
/// `pairs`, and stores it in `*out` (`MPI_COMM_NULL` as it is).
///
/// # Safety
/// `out` must be null or valid for a write.
unsafe fn put_from_groups(
    name: &str,
    new: CommHandle,
    eh: ErrhandlerHandle,
    pairs: Vec<(String, String)>,
    out: *mut Handle,
) -> oxmpi::Result<()> {
    if new != CommHandle::NULL {
        errhandler::comm_set_errhandler(new, eh)?;
        set_hints(new, pairs);
    }
    // SAFETY: forwarded from our caller.
    unsafe { put(name, out, comm_handle(new)) }
}

/// The arguments the constructors from groups share, checked in the standard's order of
/// classes: the output handle and the string tag (`MPI_ERR_ARG` if NULL, or not UTF-8),
/// the error handler (`MPI_ERR_ERRHANDLER`), the info object (`MPI_INFO_NULL` or a live
/// one, whose hints the new communicator keeps).
///
/// # Safety
/// `stringtag` must be null or point to a NUL-terminated string that outlives `'a`.
unsafe fn from_groups_args<'a>(
    name: &str,
    stringtag: *const c_char,
    info: Handle,
    eh: Handle,
    out: *mut Handle,
) -> oxmpi::Result<(&'a str, ErrhandlerHandle, Hints)> {
    if out.is_null() {
        return Err(err(
            ErrorClass::Arg,
            name,
            "the new communicator's handle pointer is NULL",
        ));
    }
    if stringtag.is_null() {
        return Err(err(ErrorClass::Arg, name, "stringtag is NULL"));
    }
    // SAFETY: non-null, NUL-terminated by our caller's contract.
    let tag = unsafe { str_arg(name, stringtag)? };
    let eh = ErrhandlerHandle::from_int(int_of(eh));
    errhandler::handler_action(eh)?;
    Ok((tag, eh, info_pairs(info)?))
}

/// `n` ranks at `p`.
///
/// # Safety
/// `p` must be valid for `n` reads.
unsafe fn ranks<'a>(name: &str, n: c_int, p: *const c_int) -> oxmpi::Result<&'a [c_int]> {
    // SAFETY: forwarded from our caller.
    unsafe { slice(name, p, count(name, n)?) }
}

mpi_fn! {
    /// `MPI_Comm_size`.
    fn Comm_size = MPI_Comm_size / PMPI_Comm_size(c: Handle, size: *mut c_int) on comm(c) => {
        put("Comm_size", size, hc::comm_size(comm(c))?)
    }

    /// `MPI_Comm_rank`.
    fn Comm_rank = MPI_Comm_rank / PMPI_Comm_rank(c: Handle, rank: *mut c_int) on comm(c) => {
        put("Comm_rank", rank, hc::comm_rank(comm(c))?)
    }

    /// `MPI_Comm_test_inter`.
    fn Comm_test_inter = MPI_Comm_test_inter / PMPI_Comm_test_inter(c: Handle, flag: *mut c_int) on comm(c) => {
        put("Comm_test_inter", flag, hc::comm_test_inter(comm(c))? as c_int)
    }

    /// `MPI_Comm_remote_size`.
    fn Comm_remote_size = MPI_Comm_remote_size / PMPI_Comm_remote_size(c: Handle, size: *mut c_int) on comm(c) => {
        put("Comm_remote_size", size, hc::comm_remote_size(comm(c))?)
    }

    /// `MPI_Comm_group`.
    fn Comm_group = MPI_Comm_group / PMPI_Comm_group(c: Handle, g: *mut Handle) on comm(c) => {
        put("Comm_group", g, group_handle(hc::comm_group(comm(c))?))
    }

    /// `MPI_Comm_remote_group`.
    fn Comm_remote_group = MPI_Comm_remote_group / PMPI_Comm_remote_group(c: Handle, g: *mut Handle) on comm(c) => {
        put("Comm_remote_group", g, group_handle(hc::comm_remote_group(comm(c))?))
    }

    /// `MPI_Comm_compare`.
    fn Comm_compare = MPI_Comm_compare / PMPI_Comm_compare(a: Handle, b: Handle, result: *mut c_int) on comm(a) => {
        put("Comm_compare", result, relation(hc::comm_compare(comm(a), comm(b))?))
    }

    /// `MPI_Comm_dup`.
    fn Comm_dup = MPI_Comm_dup / PMPI_Comm_dup(c: Handle, out: *mut Handle) on comm(c) => {
        dup("Comm_dup", c, hints(comm(c)), out)
    }

    /// `MPI_Comm_dup_with_info`: the duplicate takes the hints of `info` instead of `c`'s.
    fn Comm_dup_with_info = MPI_Comm_dup_with_info / PMPI_Comm_dup_with_info(c: Handle, info: Handle, out: *mut Handle) on comm(c) => {
        dup("Comm_dup_with_info", c, info_pairs(info)?, out)
    }

    /// `MPI_Comm_idup` (see [`idup`]).
    fn Comm_idup = MPI_Comm_idup / PMPI_Comm_idup(c: Handle, out: *mut Handle, r: *mut Handle) on comm(c) => {
        idup("Comm_idup", c, hints(comm(c)), out, r)
    }

    /// `MPI_Comm_idup_with_info` (see [`idup`]).
    fn Comm_idup_with_info = MPI_Comm_idup_with_info / PMPI_Comm_idup_with_info(c: Handle, info: Handle, out: *mut Handle, r: *mut Handle) on comm(c) => {
        idup("Comm_idup_with_info", c, info_pairs(info)?, out, r)
    }

    /// `MPI_Comm_set_info`: replaces the communicator's hints (none changes what oxmpi does).
    fn Comm_set_info = MPI_Comm_set_info / PMPI_Comm_set_info(c: Handle, info: Handle) on comm(c) => {
        hc::comm_size(comm(c))?;
        set_hints(comm(c), info_pairs(info)?);
        Ok(())
    }

    /// `MPI_Comm_get_info`: a new info object holding the communicator's hints.
    fn Comm_get_info = MPI_Comm_get_info / PMPI_Comm_get_info(c: Handle, out: *mut Handle) on comm(c) => {
        hc::comm_size(comm(c))?;
        if out.is_null() {
            return Err(err(ErrorClass::Arg, "Comm_get_info", "info_used is NULL"));
        }
        let pairs = hints(comm(c));
        let refs: Vec<(&str, &str)> = pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        put("Comm_get_info", out, handle_of(hi::info_from(&refs)?.to_int()))
    }

    /// `MPI_Comm_split`.
    fn Comm_split = MPI_Comm_split / PMPI_Comm_split(c: Handle, color: c_int, key: c_int, out: *mut Handle) on comm(c) => {
        if color < 0 && color != UNDEFINED {
            return Err(err(ErrorClass::Arg, "Comm_split", format!("color {color} is negative")));
        }
        if out.is_null() {
            return Err(err(ErrorClass::Arg, "Comm_split", "newcomm is NULL"));
        }
        put_comm("Comm_split", comm(c), hc::comm_split(comm(c), color, key)?, out)
    }

    /// `MPI_Comm_split_type`: `MPI_COMM_TYPE_SHARED` (one communicator per host), the guided
    /// types (the host for `mpi_hw_resource_type` = `mpi_shared_memory`, else
    /// `MPI_COMM_NULL`), `MPI_COMM_TYPE_HW_UNGUIDED` (the host if it is smaller than `c`,
    /// else `MPI_COMM_NULL`: no finer level is known) or `MPI_UNDEFINED`.
    fn Comm_split_type = MPI_Comm_split_type / PMPI_Comm_split_type(
        c: Handle,
        split_type: c_int,
        key: c_int,
        info: Handle,
        out: *mut Handle,
    ) on comm(c) => {
        let kind = match split_type {
            COMM_TYPE_SHARED => Some(SplitType::Shared),
            COMM_TYPE_HW_GUIDED | COMM_TYPE_RESOURCE_GUIDED => guided(info)?,
            COMM_TYPE_HW_UNGUIDED => Some(SplitType::Shared),
            UNDEFINED => None,
            t => return Err(err(ErrorClass::Arg, "Comm_split_type", format!("split type {t} is not supported"))),
        };
        if out.is_null() {
            return Err(err(ErrorClass::Arg, "Comm_split_type", "newcomm is NULL"));
        }
        let mut new = hc::comm_split_type(comm(c), kind, key)?;
        if split_type == COMM_TYPE_HW_UNGUIDED && new != CommHandle::NULL {
            // The result must be strictly smaller than `c`; a host is the only level known,
            // so where it is all of `c` (on every member alike: then `c` spans one host)
            // the answer is MPI_COMM_NULL.
            if hc::comm_size(new)? == hc::comm_size(comm(c))? {
                hc::comm_free(&mut new)?;
            } else if InfoHandle::from_int(int_of(info)) != InfoHandle::NULL {
                // The standard has the info argument report the resource split by.
                hi::info_set(InfoHandle::from_int(int_of(info)), HW_RESOURCE_TYPE, SHARED_MEMORY)?;
            }
        }
        put_comm("Comm_split_type", comm(c), new, out)
    }

    /// `MPI_Comm_create`.
    fn Comm_create = MPI_Comm_create / PMPI_Comm_create(c: Handle, g: Handle, out: *mut Handle) on comm(c) => {
        if out.is_null() {
            return Err(err(ErrorClass::Arg, "Comm_create", "newcomm is NULL"));
        }
        put_comm("Comm_create", comm(c), hc::comm_create(comm(c), group(g))?, out)
    }

    /// `MPI_Comm_create_group`.
    fn Comm_create_group = MPI_Comm_create_group / PMPI_Comm_create_group(c: Handle, g: Handle, tag: c_int, out: *mut Handle) on comm(c) => {
        if out.is_null() {
            return Err(err(ErrorClass::Arg, "Comm_create_group", "newcomm is NULL"));
        }
        hc::comm_size(comm(c))?;
        // A process outside the group gets MPI_COMM_NULL at once (a local call, as the
        // standard has it: rsmpi's `split_by_subgroup` relies on it).
        if hg::group_rank(group(g))?.is_none() {
            return put("Comm_create_group", out, comm_handle(CommHandle::NULL));
        }
        put_comm("Comm_create_group", comm(c), hc::comm_create_group(comm(c), group(g), tag)?, out)
    }

    /// `MPI_Intercomm_create`.
    fn Intercomm_create = MPI_Intercomm_create / PMPI_Intercomm_create(
        local: Handle,
        local_leader: c_int,
        peer: Handle,
        remote_leader: c_int,
        tag: c_int,
        out: *mut Handle,
    ) on comm(local) => {
        if out.is_null() {
            return Err(err(ErrorClass::Arg, "Intercomm_create", "newintercomm is NULL"));
        }
        let new = hc::intercomm_create(comm(local), local_leader, comm(peer), remote_leader, tag)?;
        put_comm("Intercomm_create", comm(local), new, out)
    }

    /// `MPI_Intercomm_merge`.
    fn Intercomm_merge = MPI_Intercomm_merge / PMPI_Intercomm_merge(c: Handle, high: c_int, out: *mut Handle) on comm(c) => {
        if out.is_null() {
            return Err(err(ErrorClass::Arg, "Intercomm_merge", "newintracomm is NULL"));
        }
        put_comm("Intercomm_merge", comm(c), hc::intercomm_merge(comm(c), high != 0)?, out)
    }

    /// `MPI_Comm_free`.
    fn Comm_free = MPI_Comm_free / PMPI_Comm_free(c: *mut Handle) on CommHandle::WORLD => {
        release("Comm_free", c, hc::comm_free)
    }

    /// `MPI_Comm_disconnect`: `MPI_Comm_free` once this process's outgoing traffic has left
    /// it (see [`hc::comm_disconnect`]); also for intercommunicators.
    fn Comm_disconnect = MPI_Comm_disconnect / PMPI_Comm_disconnect(c: *mut Handle) on CommHandle::WORLD => {
        release("Comm_disconnect", c, hc::comm_disconnect)
    }

    /// `MPI_Comm_set_name`.
    fn Comm_set_name = MPI_Comm_set_name / PMPI_Comm_set_name(c: Handle, name: *const c_char) on comm(c) => {
        oxmpi::handle::name::comm_set_name(comm(c), str_arg("Comm_set_name", name)?)
    }

    /// `MPI_Comm_get_name`: `name` must hold `MPI_MAX_OBJECT_NAME` bytes.
    fn Comm_get_name = MPI_Comm_get_name / PMPI_Comm_get_name(c: Handle, name: *mut c_char, len: *mut c_int) on comm(c) => {
        // mpi4py and others name the null handle like the predefined ones.
        let n = if comm(c) == CommHandle::NULL {
            "MPI_COMM_NULL".to_string()
        } else {
            oxmpi::handle::name::comm_get_name(comm(c))?
        };
        let written = put_str("Comm_get_name", name, MAX_OBJECT_NAME, &n)?;
        put("Comm_get_name", len, written)
    }

    /// `MPI_Comm_get_parent`: the intercommunicator to the processes that spawned this one
    /// (the same handle every call), or `MPI_COMM_NULL` when none did or once it was freed
    /// or disconnected.
    fn Comm_get_parent = MPI_Comm_get_parent / PMPI_Comm_get_parent(parent: *mut Handle) on CommHandle::WORLD => {
        oxmpi::handle::env::check_ready("Comm_get_parent")?;
        put("Comm_get_parent", parent, comm_handle(hc::comm_get_parent()?))
    }

    /// `MPI_Group_size`.
    fn Group_size = MPI_Group_size / PMPI_Group_size(g: Handle, size: *mut c_int) on CommHandle::WORLD => {
        put("Group_size", size, hg::group_size(group(g))?)
    }

    /// `MPI_Group_rank`: `MPI_UNDEFINED` if this process is not a member.
    fn Group_rank = MPI_Group_rank / PMPI_Group_rank(g: Handle, rank: *mut c_int) on CommHandle::WORLD => {
        put("Group_rank", rank, hg::group_rank(group(g))?.unwrap_or(UNDEFINED))
    }

    /// `MPI_Group_translate_ranks`.
    fn Group_translate_ranks = MPI_Group_translate_ranks / PMPI_Group_translate_ranks(
        a: Handle,
        n: c_int,
        ranks_a: *const c_int,
        b: Handle,
        ranks_b: *mut c_int,
    ) on CommHandle::WORLD => {
        let from = ranks("Group_translate_ranks", n, ranks_a)?;
        let to = slice_mut("Group_translate_ranks", ranks_b, from.len())?;
        // MPI_PROC_NULL translates to itself; the rest go to the core.
        let real: Vec<c_int> = from.iter().copied().filter(|&r| r != PROC_NULL).collect();
        let mut got = hg::group_translate_ranks(group(a), &real, group(b))?.into_iter();
        for (t, &f) in to.iter_mut().zip(from) {
            *t = if f == PROC_NULL {
                PROC_NULL
            } else {
                got.next().flatten().unwrap_or(UNDEFINED)
            };
        }
        Ok(())
    }

    /// `MPI_Group_compare`.
    fn Group_compare = MPI_Group_compare / PMPI_Group_compare(a: Handle, b: Handle, result: *mut c_int) on CommHandle::WORLD => {
        put("Group_compare", result, relation(hg::group_compare(group(a), group(b))?))
    }

    /// `MPI_Group_union`.
    fn Group_union = MPI_Group_union / PMPI_Group_union(a: Handle, b: Handle, out: *mut Handle) on CommHandle::WORLD => {
        put("Group_union", out, group_handle(hg::group_union(group(a), group(b))?))
    }

    /// `MPI_Group_intersection`.
    fn Group_intersection = MPI_Group_intersection / PMPI_Group_intersection(a: Handle, b: Handle, out: *mut Handle) on CommHandle::WORLD => {
        put("Group_intersection", out, group_handle(hg::group_intersection(group(a), group(b))?))
    }

    /// `MPI_Group_difference`.
    fn Group_difference = MPI_Group_difference / PMPI_Group_difference(a: Handle, b: Handle, out: *mut Handle) on CommHandle::WORLD => {
        put("Group_difference", out, group_handle(hg::group_difference(group(a), group(b))?))
    }

    /// `MPI_Group_incl`.
    fn Group_incl = MPI_Group_incl / PMPI_Group_incl(g: Handle, n: c_int, r: *const c_int, out: *mut Handle) on CommHandle::WORLD => {
        let r = ranks("Group_incl", n, r)?;
        put("Group_incl", out, group_handle(hg::group_incl(group(g), r)?))
    }

    /// `MPI_Group_excl`.
    fn Group_excl = MPI_Group_excl / PMPI_Group_excl(g: Handle, n: c_int, r: *const c_int, out: *mut Handle) on CommHandle::WORLD => {
        let r = ranks("Group_excl", n, r)?;
        put("Group_excl", out, group_handle(hg::group_excl(group(g), r)?))
    }

    /// `MPI_Group_range_incl`: `ranges` holds `n` triplets (first, last, stride).
    fn Group_range_incl = MPI_Group_range_incl / PMPI_Group_range_incl(g: Handle, n: c_int, ranges: *const [c_int; 3], out: *mut Handle) on CommHandle::WORLD => {
        let r: Vec<(i32, i32, i32)> = slice("Group_range_incl", ranges, count("Group_range_incl", n)?)?
            .iter()
            .map(|t| (t[0], t[1], t[2]))
            .collect();
        put("Group_range_incl", out, group_handle(hg::group_range_incl(group(g), &r)?))
    }

    /// `MPI_Group_range_excl`.
    fn Group_range_excl = MPI_Group_range_excl / PMPI_Group_range_excl(g: Handle, n: c_int, ranges: *const [c_int; 3], out: *mut Handle) on CommHandle::WORLD => {
        let r: Vec<(i32, i32, i32)> = slice("Group_range_excl", ranges, count("Group_range_excl", n)?)?
            .iter()
            .map(|t| (t[0], t[1], t[2]))
            .collect();
        put("Group_range_excl", out, group_handle(hg::group_range_excl(group(g), &r)?))
    }

    /// `MPI_Group_free`.
    fn Group_free = MPI_Group_free / PMPI_Group_free(g: *mut Handle) on CommHandle::WORLD => {
        let mut h = group(get("Group_free", g)?);
        hg::group_free(&mut h)?;
        put("Group_free", g, group_handle(h))
    }
}

mpi_fn_on_errhandler! {
    /// `MPI_Comm_create_from_group`: the communicator of `g`'s processes, collective over
    /// them alone (see [`hc::comm_create_from_group`]); `MPI_COMM_NULL` for an empty group.
    /// The new communicator gets error handler `eh` and the hints of `info`; the call's own
    /// errors are raised on `eh`.
    fn Comm_create_from_group = MPI_Comm_create_from_group / PMPI_Comm_create_from_group(
        g: Handle,
        stringtag: *const c_char,
        info: Handle,
        eh: Handle,
        out: *mut Handle,
    ) raised on eh => {
        let name = "Comm_create_from_group";
        let (tag, eh, pairs) = from_groups_args(name, stringtag, info, eh, out)?;
        let new = hc::comm_create_from_group(group(g), tag)?;
        put_from_groups(name, new, eh, pairs, out)
    }

    /// `MPI_Intercomm_create_from_groups`: the intercommunicator between this process's
    /// group and the disjoint `remote` group (see [`hc::intercomm_create_from_groups`]).
    /// The new communicator gets error handler `eh` and the hints of `info`; the call's own
    /// errors are raised on `eh`.
    fn Intercomm_create_from_groups = MPI_Intercomm_create_from_groups / PMPI_Intercomm_create_from_groups(
        local: Handle,
        local_leader: c_int,
        remote: Handle,
        remote_leader: c_int,
        stringtag: *const c_char,
        info: Handle,
        eh: Handle,
        out: *mut Handle,
    ) raised on eh => {
        let name = "Intercomm_create_from_groups";
        let (tag, eh, pairs) = from_groups_args(name, stringtag, info, eh, out)?;
        let new = hc::intercomm_create_from_groups(group(local), local_leader, group(remote), remote_leader, tag)?;
        put_from_groups(name, new, eh, pairs, out)
    }
}
