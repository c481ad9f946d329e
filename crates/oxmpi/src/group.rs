//! Process groups: ordered sets of processes, built from communicators and from each other.
//!
//! A group is local: creating, combining and comparing groups never communicates.
//!
//! # Standard sections
//! MPI-5.0 §7.3 (group management).

use std::sync::Arc;

use crate::error::{Error, ErrorClass, Result};

/// How two groups (or communicators) relate (`MPI_IDENT`, `MPI_CONGRUENT`, `MPI_SIMILAR`,
/// `MPI_UNEQUAL`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Relation {
    /// Same members in the same order (communicators: the very same communicator).
    Identical,
    /// Communicators only: same members in the same order, different contexts.
    Congruent,
    /// Same members, different order.
    Similar,
    /// Anything else.
    Unequal,
}

/// A group of processes (`MPI_Group`): world ranks in group-rank order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group {
    members: Arc<[u32]>,
    me: u32,
    /// The session id it comes from (a process set's group, or one derived from it), or 0
    /// (the world model): a communicator made from it buffers its sends in that session's
    /// buffer.
    session: u32,
}

impl Group {
    /// The group of world ranks `members`, as seen by world rank `me`.
    pub(crate) fn new(members: Vec<u32>, me: u32) -> Group {
        Group::in_session(members, me, 0)
    }

    /// As [`new`](Self::new), derived from session `session` (0: none).
    pub(crate) fn in_session(members: Vec<u32>, me: u32, session: u32) -> Group {
        Group {
            members: members.into(),
            me,
            session,
        }
    }

    /// The session this group comes from, or 0.
    pub(crate) fn session(&self) -> u32 {
        self.session
    }

    /// World ranks of the members, in group order.
    pub(crate) fn world_ranks(&self) -> &[u32] {
        &self.members
    }

    /// Number of members (`MPI_Group_size`).
    pub fn size(&self) -> i32 {
        self.members.len() as i32
    }

    /// This process's rank in the group, or `None` if it is not a member (`MPI_UNDEFINED`).
    pub fn rank(&self) -> Option<i32> {
        self.position(self.me)
    }

    fn position(&self, world: u32) -> Option<i32> {
        self.members
            .iter()
            .position(|&w| w == world)
            .map(|i| i as i32)
    }

    fn check(&self, call: &str, r: i32) -> Result<u32> {
        usize::try_from(r)
            .ok()
            .and_then(|i| self.members.get(i).copied())
            .ok_or_else(|| {
                Error::new(
                    ErrorClass::Rank,
                    format!(
                        "{call}: rank {r} is not in the group (size {})",
                        self.size()
                    ),
                )
            })
    }

    /// The ranks in `other` of the processes at `ranks` in this group; `None` where a process
    /// is not in `other` (`MPI_Group_translate_ranks`).
    pub fn translate_ranks(&self, ranks: &[i32], other: &Group) -> Result<Vec<Option<i32>>> {
        ranks
            .iter()
            .map(|&r| Ok(other.position(self.check("translate_ranks", r)?)))
            .collect()
    }

    /// How this group relates to `other` (`MPI_Group_compare`): identical, similar or unequal.
    pub fn compare(&self, other: &Group) -> Relation {
        if self.members == other.members {
            return Relation::Identical;
        }
        let mut a = self.members.to_vec();
        let mut b = other.members.to_vec();
        a.sort_unstable();
        b.sort_unstable();
        if a == b {
            Relation::Similar
        } else {
            Relation::Unequal
        }
    }

    fn with_members(&self, it: impl Iterator<Item = u32>) -> Group {
        Group::in_session(it.collect(), self.me, self.session)
    }

    /// This group's members, then `other`'s not already in it (`MPI_Group_union`).
    pub fn union(&self, other: &Group) -> Group {
        let extra = other
            .members
            .iter()
            .copied()
            .filter(|w| !self.members.contains(w));
        self.with_members(self.members.iter().copied().chain(extra))
    }

    /// Members of both, in this group's order (`MPI_Group_intersection`).
    pub fn intersection(&self, other: &Group) -> Group {
        self.with_members(
            self.members
                .iter()
                .copied()
                .filter(|w| other.members.contains(w)),
        )
    }

    /// Members of this group not in `other`, in this group's order (`MPI_Group_difference`).
    pub fn difference(&self, other: &Group) -> Group {
        self.with_members(
            self.members
                .iter()
                .copied()
                .filter(|w| !other.members.contains(w)),
        )
    }

    /// The members at `ranks`, in that order (`MPI_Group_incl`). Ranks must be valid and
    /// distinct ([`ErrorClass::Rank`]).
    pub fn include(&self, ranks: &[i32]) -> Result<Group> {
        let mut seen = vec![false; self.members.len()];
        let mut out = Vec::with_capacity(ranks.len());
        for &r in ranks {
            let w = self.check("include", r)?;
            if std::mem::replace(&mut seen[r as usize], true) {
                return Err(Error::new(
                    ErrorClass::Rank,
                    format!("include: rank {r} is listed twice"),
                ));
            }
            out.push(w);
        }
        Ok(Group::in_session(out, self.me, self.session))
    }

    /// The members not at `ranks`, in group order (`MPI_Group_excl`).
    pub fn exclude(&self, ranks: &[i32]) -> Result<Group> {
        let mut drop = vec![false; self.members.len()];
        for &r in ranks {
            self.check("exclude", r)?;
            if std::mem::replace(&mut drop[r as usize], true) {
                return Err(Error::new(
                    ErrorClass::Rank,
                    format!("exclude: rank {r} is listed twice"),
                ));
            }
        }
        Ok(self.with_members(
            self.members
                .iter()
                .zip(drop)
                .filter(|(_, d)| !d)
                .map(|(&w, _)| w),
        ))
    }

    fn expand(&self, call: &str, ranges: &[(i32, i32, i32)]) -> Result<Vec<i32>> {
        let mut out = Vec::new();
        for &(first, last, stride) in ranges {
            if stride == 0 {
                return Err(Error::new(ErrorClass::Arg, format!("{call}: stride 0")));
            }
            let mut r = first;
            while (stride > 0 && r <= last) || (stride < 0 && r >= last) {
                out.push(r);
                r += stride;
            }
        }
        Ok(out)
    }

    /// The members in the ranges `(first, last, stride)` (`MPI_Group_range_incl`).
    pub fn range_include(&self, ranges: &[(i32, i32, i32)]) -> Result<Group> {
        self.include(&self.expand("range_include", ranges)?)
    }

    /// The members not in the ranges `(first, last, stride)` (`MPI_Group_range_excl`).
    pub fn range_exclude(&self, ranges: &[(i32, i32, i32)]) -> Result<Group> {
        self.exclude(&self.expand("range_exclude", ranges)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_operations_keep_the_documented_order() {
        let a = Group::new(vec![0, 1, 2, 3, 4], 2);
        let b = Group::new(vec![4, 2, 6], 2);
        assert_eq!(a.rank(), Some(2));
        assert_eq!(b.rank(), Some(1));
        assert_eq!(a.union(&b).world_ranks(), &[0, 1, 2, 3, 4, 6]);
        assert_eq!(a.intersection(&b).world_ranks(), &[2, 4]);
        assert_eq!(b.intersection(&a).world_ranks(), &[4, 2]);
        assert_eq!(a.difference(&b).world_ranks(), &[0, 1, 3]);
        assert_eq!(a.include(&[4, 0]).unwrap().world_ranks(), &[4, 0]);
        assert_eq!(a.exclude(&[0, 2]).unwrap().world_ranks(), &[1, 3, 4]);
        assert_eq!(a.exclude(&[0, 2]).unwrap().rank(), None);
        assert_eq!(
            a.range_include(&[(0, 4, 2), (3, 1, -2)])
                .unwrap()
                .world_ranks(),
            &[0, 2, 4, 3, 1]
        );
        assert_eq!(
            a.range_exclude(&[(1, 3, 1)]).unwrap().world_ranks(),
            &[0, 4]
        );
        assert_eq!(
            a.translate_ranks(&[0, 2, 4], &b).unwrap(),
            vec![None, Some(1), Some(0)]
        );
        assert_eq!(Group::new(Vec::new(), 0).size(), 0);
    }

    #[test]
    fn comparisons_and_errors() {
        let a = Group::new(vec![0, 1, 2], 0);
        assert_eq!(a.compare(&a.clone()), Relation::Identical);
        assert_eq!(
            a.compare(&a.include(&[2, 1, 0]).unwrap()),
            Relation::Similar
        );
        assert_eq!(a.compare(&a.include(&[2, 1]).unwrap()), Relation::Unequal);
        assert_eq!(a.include(&[3]).unwrap_err().class(), ErrorClass::Rank);
        assert_eq!(a.include(&[1, 1]).unwrap_err().class(), ErrorClass::Rank);
        assert_eq!(a.exclude(&[-1]).unwrap_err().class(), ErrorClass::Rank);
        assert_eq!(
            a.range_include(&[(0, 2, 0)]).unwrap_err().class(),
            ErrorClass::Arg
        );
        assert_eq!(
            a.translate_ranks(&[5], &a).unwrap_err().class(),
            ErrorClass::Rank
        );
    }
}
