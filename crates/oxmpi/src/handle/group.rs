//! Groups as ids (`MPI_Group`): the operations of [`Group`] reached through an id. Group
//! operations are local; they need MPI initialized but never communicate. Errors: an id that
//! is null, freed or never issued is [`ErrorClass::Group`].
//!
//! # Standard sections
//! MPI-5.0 §7.3 (group management).

use super::env::runtime;
use super::table::Table;
use crate::error::{Error, ErrorClass, Result};
use crate::group::{Group, Relation};

/// A group id (`MPI_Group`). `Copy`; valid from its creation until [`group_free`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(transparent)]
pub struct GroupHandle(u32);

impl GroupHandle {
    /// `MPI_GROUP_NULL` (ABI value).
    pub const NULL: GroupHandle = GroupHandle(0x108);
    /// `MPI_GROUP_EMPTY` (ABI value): the group without members.
    pub const EMPTY: GroupHandle = GroupHandle(0x109);

    /// The id as an integer (`MPI_Group_toint`).
    pub fn to_int(self) -> i32 {
        self.0 as i32
    }

    /// The id with integer value `i` (`MPI_Group_fromint`).
    pub fn from_int(i: i32) -> GroupHandle {
        GroupHandle(i as u32)
    }
}

static GROUPS: Table<Group> = Table::new();

pub(crate) fn get(call: &str, g: GroupHandle) -> Result<Group> {
    let rt = runtime(call)?;
    if g == GroupHandle::EMPTY {
        return Ok(Group::new(Vec::new(), rt.rank));
    }
    GROUPS.get(g.0).ok_or_else(|| {
        Error::new(
            ErrorClass::Group,
            format!(
                "{call}: {:#x} is not a live group (null, freed, or never created)",
                g.0
            ),
        )
    })
}

pub(crate) fn put(call: &str, g: Group) -> Result<GroupHandle> {
    GROUPS.insert(g).map(GroupHandle).ok_or_else(|| {
        Error::new(
            ErrorClass::Other,
            format!("{call}: too many groups are live"),
        )
    })
}

/// Number of members (`MPI_Group_size`).
pub fn group_size(g: GroupHandle) -> Result<i32> {
    Ok(get("group_size", g)?.size())
}

/// This process's rank in `g`, or `None` if it is not a member (`MPI_Group_rank`,
/// `MPI_UNDEFINED`).
pub fn group_rank(g: GroupHandle) -> Result<Option<i32>> {
    Ok(get("group_rank", g)?.rank())
}

/// The ranks in `b` of the processes at `ranks` in `a` (`MPI_Group_translate_ranks`);
/// `None` where a process is not in `b`.
pub fn group_translate_ranks(
    a: GroupHandle,
    ranks: &[i32],
    b: GroupHandle,
) -> Result<Vec<Option<i32>>> {
    let call = "group_translate_ranks";
    get(call, a)?.translate_ranks(ranks, &get(call, b)?)
}

/// How `a` relates to `b` (`MPI_Group_compare`).
pub fn group_compare(a: GroupHandle, b: GroupHandle) -> Result<Relation> {
    Ok(get("group_compare", a)?.compare(&get("group_compare", b)?))
}

/// `MPI_Group_union`.
pub fn group_union(a: GroupHandle, b: GroupHandle) -> Result<GroupHandle> {
    let call = "group_union";
    put(call, get(call, a)?.union(&get(call, b)?))
}

/// `MPI_Group_intersection`.
pub fn group_intersection(a: GroupHandle, b: GroupHandle) -> Result<GroupHandle> {
    let call = "group_intersection";
    put(call, get(call, a)?.intersection(&get(call, b)?))
}

/// `MPI_Group_difference`.
pub fn group_difference(a: GroupHandle, b: GroupHandle) -> Result<GroupHandle> {
    let call = "group_difference";
    put(call, get(call, a)?.difference(&get(call, b)?))
}

/// `MPI_Group_incl`: the members at `ranks`, in that order.
pub fn group_incl(g: GroupHandle, ranks: &[i32]) -> Result<GroupHandle> {
    put("group_incl", get("group_incl", g)?.include(ranks)?)
}

/// `MPI_Group_excl`: the members not at `ranks`, in group order.
pub fn group_excl(g: GroupHandle, ranks: &[i32]) -> Result<GroupHandle> {
    put("group_excl", get("group_excl", g)?.exclude(ranks)?)
}

/// `MPI_Group_range_incl`: the members in the ranges `(first, last, stride)`.
pub fn group_range_incl(g: GroupHandle, ranges: &[(i32, i32, i32)]) -> Result<GroupHandle> {
    let call = "group_range_incl";
    put(call, get(call, g)?.range_include(ranges)?)
}

/// `MPI_Group_range_excl`: the members not in the ranges `(first, last, stride)`.
pub fn group_range_excl(g: GroupHandle, ranges: &[(i32, i32, i32)]) -> Result<GroupHandle> {
    let call = "group_range_excl";
    put(call, get(call, g)?.range_exclude(ranges)?)
}

/// Frees `*g` and sets it to [`GroupHandle::NULL`] (`MPI_Group_free`). Freeing
/// [`GroupHandle::EMPTY`] is allowed and does nothing else.
pub fn group_free(g: &mut GroupHandle) -> Result<()> {
    runtime("group_free")?;
    if *g != GroupHandle::EMPTY {
        GROUPS.remove(g.0).ok_or_else(|| {
            Error::new(
                ErrorClass::Group,
                format!("group_free: {:#x} is not a live group", g.0),
            )
        })?;
    }
    *g = GroupHandle::NULL;
    Ok(())
}
