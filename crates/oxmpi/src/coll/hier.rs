//! Node-aware (two-level) collectives, after seed 001's two-stage broadcast: one leader per
//! host talks across hosts, and each leader then serves the ranks of its own host, so every
//! slow inter-host link carries a message once instead of once per rank behind it.
//!
//! A host's leader is its lowest communicator rank, except that for rooted operations the
//! root leads its own host (saving a hop). The host grouping comes from the runtime's
//! collective placement (`Runtime::coll_locality`), which tests override with
//! `OXMPI_HOST_OVERRIDE` to exercise these paths on one machine.
//!
//! Nonblocking and persistent forms run the whole two-level algorithm as one program of
//! messages. The blocking forms (with `OXMPI_COLL_HIER_SHM=1`) do each intra-host stage as a
//! collective of a host sub-communicator instead, so it goes through that host's shared
//! memory (`shm`) when it can, and only the stage across hosts is a program of messages among
//! the leaders on this communicator's context. The host sub-communicator is split off once,
//! collectively, by the first blocking collective that can use it ([`HostStage`]). There is
//! no leader sub-communicator: the leaders of a rooted operation depend on the root, so
//! their stage is a program over the leaders' ranks of this communicator.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

use super::algorithms::{allreduce, misc, tree, Grp, EMPTY};
use super::schedule::{self, Program, Region, Span};
use super::select::{self, Crossovers};
use super::{combine, Planned};
use crate::comm::{Comm, Communicator};
use crate::error::Result;
use crate::op::{Op, Reducible};
use crate::runtime::locality::Locality;
use crate::threading::{Multiple, ThreadLevel};

/// How a communicator's ranks spread over hosts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HostLayout {
    /// Host index (dense, numbered by first appearance in rank order) of each rank.
    host: Vec<u32>,
    /// Ranks on each host, ascending.
    locals: Vec<Vec<u32>>,
}

impl HostLayout {
    /// The layout of a communicator whose rank `i` is world rank `members[i]`, or `None` when
    /// a two-level algorithm cannot help (one host, or one rank per host).
    pub fn new(members: &[u32], loc: &Locality) -> Option<HostLayout> {
        // With processes of another job, whose hosts each side sees differently, every member
        // must plan alike: no two-level algorithm.
        if !loc.all_in_job(members) {
            return None;
        }
        let mut ids: Vec<u32> = Vec::new();
        let mut host = Vec::with_capacity(members.len());
        let mut locals: Vec<Vec<u32>> = Vec::new();
        for (i, &w) in members.iter().enumerate() {
            let h = loc.host_of(w);
            let k = match ids.iter().position(|&x| x == h) {
                Some(k) => k,
                None => {
                    ids.push(h);
                    locals.push(Vec::new());
                    ids.len() - 1
                }
            };
            host.push(k as u32);
            locals[k].push(i as u32);
        }
        (locals.len() > 1 && locals.len() < members.len()).then_some(HostLayout { host, locals })
    }

    /// The leader of each host; the root leads its own host.
    fn leaders(&self, root: Option<u32>) -> Vec<u32> {
        let mut l: Vec<u32> = self.locals.iter().map(|v| v[0]).collect();
        if let Some(r) = root {
            l[self.host[r as usize] as usize] = r;
        }
        l
    }

    /// This rank's host group and its index in it, and the index of `leader` in it.
    fn local(&self, me: u32, leader: u32) -> (Grp<'_>, u32) {
        let v = &self.locals[self.host[me as usize] as usize];
        let idx = |r: u32| v.iter().position(|&x| x == r).unwrap_or(0) as u32;
        (Grp::of(v, idx(me)), idx(leader))
    }
}

/// Two-level barrier: gather within each host, dissemination among leaders, release within
/// each host.
pub(crate) fn barrier(pr: &mut Program, lay: &HostLayout, me: u32) {
    let leaders = lay.leaders(None);
    let h = lay.host[me as usize];
    let (local, li) = lay.local(me, leaders[h as usize]);
    tree::reduce_binomial(pr, local, li, EMPTY, EMPTY, true);
    if leaders[h as usize] == me {
        misc::barrier_dissemination(pr, Grp::of(&leaders, h));
    }
    tree::bcast_binomial(pr, local, li, EMPTY);
}

#[allow(clippy::too_many_arguments)]
/// Two-level broadcast (seed 001): across host leaders first, then within each host.
pub(crate) fn bcast(
    pr: &mut Program,
    lay: &HostLayout,
    me: u32,
    root: u32,
    buf: Span,
    count: usize,
    elem: usize,
    c: &Crossovers,
) {
    let leaders = lay.leaders(Some(root));
    let h = lay.host[me as usize];
    let hr = lay.host[root as usize];
    let flat = |pr: &mut Program, g: Grp<'_>, root: u32| match select::bcast(
        c,
        buf.len,
        g.size(),
        false,
    ) {
        select::Bcast::Binomial => tree::bcast_binomial(pr, g, root, buf),
        select::Bcast::ScatterAllgather => {
            tree::bcast_scatter_allgather(pr, g, root, buf, count, elem)
        }
    };
    if leaders[h as usize] == me {
        flat(pr, Grp::of(&leaders, h), hr);
    }
    let (local, li) = lay.local(me, leaders[h as usize]);
    flat(pr, local, li);
}

/// Two-level reduce (commutative operations): within each host to its leader, then across
/// leaders to the root.
pub(crate) fn reduce(
    pr: &mut Program,
    lay: &HostLayout,
    me: u32,
    root: u32,
    input: Span,
    output: Span,
) {
    let leaders = lay.leaders(Some(root));
    let h = lay.host[me as usize];
    let (local, li) = lay.local(me, leaders[h as usize]);
    let part = if me == root {
        output
    } else if leaders[h as usize] == me {
        pr.scratch(input.len)
    } else {
        EMPTY
    };
    tree::reduce_binomial(pr, local, li, input, part, true);
    if leaders[h as usize] == me {
        tree::reduce_binomial(
            pr,
            Grp::of(&leaders, h),
            lay.host[root as usize],
            part,
            output,
            true,
        );
    }
}

#[allow(clippy::too_many_arguments)]
/// Two-level allreduce (commutative operations): reduce within each host to its leader,
/// allreduce among leaders, broadcast within each host.
pub(crate) fn allreduce(
    pr: &mut Program,
    lay: &HostLayout,
    me: u32,
    input: Span,
    output: Span,
    count: usize,
    elem: usize,
    c: &Crossovers,
) {
    let leaders = lay.leaders(None);
    let h = lay.host[me as usize];
    let (local, li) = lay.local(me, leaders[h as usize]);
    tree::reduce_binomial(pr, local, li, input, output, true);
    if leaders[h as usize] == me {
        let g = Grp::of(&leaders, h);
        match select::allreduce(c, output.len, count, g.size(), true) {
            select::Allreduce::RecursiveDoubling => {
                allreduce::recursive_doubling(pr, g, output, output, true)
            }
            select::Allreduce::Rabenseifner => {
                allreduce::rabenseifner(pr, g, output, output, count, elem, true)
            }
            select::Allreduce::Ring => allreduce::ring(pr, g, output, output, count, elem),
        }
    }
    match select::bcast(c, output.len, local.size(), false) {
        select::Bcast::Binomial => tree::bcast_binomial(pr, local, li, output),
        select::Bcast::ScatterAllgather => {
            tree::bcast_scatter_allgather(pr, local, li, output, count, elem)
        }
    }
}

/// The host sub-communicator of a communicator spanning hosts, kept in its state.
#[derive(Default)]
pub(crate) struct HostStage {
    /// This rank's host's members (ranks in this communicator's order), once split off;
    /// `None` when that failed on every member alike (out of contexts): messages only.
    comm: OnceLock<Option<Communicator<Multiple>>>,
    /// Set while the split runs: its own collectives on this communicator go by messages.
    building: AtomicBool,
}

impl std::fmt::Debug for HostStage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostStage")
            .field("made", &self.comm.get().map(Option::is_some))
            .finish_non_exhaustive()
    }
}

/// A blocking collective's view of its two levels: the layout and this rank's host
/// communicator.
pub(super) struct TwoLevel<'s> {
    lay: &'s HostLayout,
    host: &'s Communicator<Multiple>,
}

impl TwoLevel<'_> {
    /// The leader of this rank's host (for `root`, the root leads its host) and its rank in
    /// the host communicator (whose ranks are the host's ranks in ascending order).
    fn leader(&self, me: u32, root: Option<u32>) -> (u32, u32, Vec<u32>) {
        let leaders = self.lay.leaders(root);
        let h = self.lay.host[me as usize] as usize;
        let (_, li) = self.lay.local(me, leaders[h]);
        (leaders[h], li, leaders)
    }
}

impl<L: ThreadLevel> Communicator<L> {
    /// The host sub-communicator this blocking node-aware collective does its intra-host
    /// stages on, or `None` for the message program (one host, `OXMPI_COLL_HIERARCHICAL=0`,
    /// `OXMPI_COLL_HIER_SHM=0`, or inside the split that makes it). Every member answers
    /// alike, so the first call splits on every member together.
    pub(super) fn two_level(&self) -> Result<Option<TwoLevel<'_>>> {
        let c = super::crossovers();
        if c.hierarchical == 0 || c.hier_shm == 0 || self.state.remote.is_some() {
            return Ok(None);
        }
        let Some(lay) = self.state.layout(&self.rt) else {
            return Ok(None);
        };
        let stage = &self.state.host_stage;
        let made = match stage.comm.get() {
            Some(m) => m,
            // The split's own allgather and allreduces on this communicator.
            None if stage.building.swap(true, Ordering::AcqRel) => return Ok(None),
            None => {
                let me = self.state.rank;
                let parent = Comm {
                    rt: self.rt.clone(),
                    state: self.state.clone(),
                };
                // Keyed by rank: the host communicator's ranks are `lay.locals[h]` in order.
                let split = parent.split(lay.host[me as usize] as i32, me as i32);
                stage.building.store(false, Ordering::Release);
                // Running out of contexts fails on every member alike: messages then.
                let host = split.ok().flatten().map(Communicator::from_comm);
                let _ = stage.comm.set(host);
                stage.comm.get().unwrap_or(&None)
            }
        };
        Ok(made.as_ref().map(|host| TwoLevel { lay, host }))
    }

    /// This communicator's host sub-communicator, if a blocking collective made one; for
    /// tests and diagnostics.
    #[doc(hidden)]
    pub fn host_communicator(&self) -> Option<Communicator<Multiple>> {
        self.state.host_stage.comm.get()?.clone()
    }

    /// Runs the leaders' stage `prog` (`None` on ranks that are no leader) with this
    /// communicator's next collective tag, which every member takes so that the tags of
    /// later collectives still agree.
    fn leaders_run(
        &self,
        name: &'static str,
        prog: Option<Program>,
        op: Option<schedule::Combine>,
        send: &[u8],
        recv: &mut [u8],
    ) -> Result<()> {
        let tag = self.state.next_tag();
        let Some(prog) = prog else {
            return Ok(());
        };
        match Planned::new(name, prog, op, send, recv).exec(&self.state, tag)? {
            Some(mut exec) => schedule::run(&self.rt, &mut exec),
            None => Ok(()),
        }
    }

    /// Two-level barrier: the host's barrier, a dissemination among the leaders, the host's
    /// barrier again (which releases the host once its leader is through).
    pub(super) fn two_level_barrier(&self, t: TwoLevel<'_>) -> Result<()> {
        let me = self.state.rank;
        t.host.barrier()?;
        let (leader, _, leaders) = t.leader(me, None);
        let prog = (leader == me).then(|| {
            let mut pr = Program::new();
            let h = t.lay.host[me as usize];
            misc::barrier_dissemination(&mut pr, Grp::of(&leaders, h));
            pr
        });
        self.leaders_run("barrier", prog, None, &[], &mut [])?;
        t.host.barrier()
    }

    /// Two-level broadcast: among the leaders (the root's host led by the root), then the
    /// host's broadcast from its leader.
    pub(super) fn two_level_bcast(
        &self,
        t: TwoLevel<'_>,
        root: u32,
        buf: &mut [u8],
        elem: usize,
    ) -> Result<()> {
        let me = self.state.rank;
        let (leader, li, leaders) = t.leader(me, Some(root));
        let prog = (leader == me).then(|| {
            let mut pr = Program::new();
            let g = Grp::of(&leaders, t.lay.host[me as usize]);
            let hr = t.lay.host[root as usize];
            let span = Span::new(Region::Recv, 0, buf.len());
            match select::bcast(super::crossovers(), buf.len(), g.size(), false) {
                select::Bcast::Binomial => tree::bcast_binomial(&mut pr, g, hr, span),
                select::Bcast::ScatterAllgather => {
                    let elem = elem.max(1);
                    let count = buf.len() / elem;
                    tree::bcast_scatter_allgather(&mut pr, g, hr, span, count, elem)
                }
            }
            pr
        });
        self.leaders_run("broadcast", prog, None, &[], buf)?;
        t.host.broadcast_raw::<u8>(li as i32, buf)
    }

    /// Two-level reduce (commutative `op`): the host's reduce to its leader (the root on
    /// the root's host), then a binomial reduce among the leaders to the root. `send` is
    /// `None` at a root reducing in place.
    pub(super) fn two_level_reduce<T: Reducible>(
        &self,
        t: TwoLevel<'_>,
        root: u32,
        send: Option<&[T]>,
        recv: &mut [T],
        op: &Op,
    ) -> Result<()> {
        let me = self.state.rank;
        let (leader, li, leaders) = t.leader(me, Some(root));
        let n = send.map_or(recv.len(), <[T]>::len);
        // A leader other than the root keeps its host's partial result here.
        let mut part: Vec<T> = if leader == me && me != root {
            vec![T::zeroed(); n]
        } else {
            Vec::new()
        };
        if me == root {
            t.host.reduce_blocking(li as i32, send, recv, op)?;
        } else {
            t.host.reduce_blocking(li as i32, send, &mut part, op)?;
        }
        let prog = (leader == me).then(|| {
            let mut pr = Program::new();
            let g = Grp::of(&leaders, t.lay.host[me as usize]);
            let len = n * size_of::<T>();
            let (input, output) = if me == root {
                let out = Span::new(Region::Recv, 0, len);
                (out, out)
            } else {
                (Span::new(Region::Send, 0, len), EMPTY)
            };
            tree::reduce_binomial(&mut pr, g, t.lay.host[root as usize], input, output, true);
            pr
        });
        let c = combine::<T>(op)?;
        if me == root {
            self.leaders_run("reduce", prog, Some(c), &[], super::bytes_mut(recv))
        } else {
            self.leaders_run("reduce", prog, Some(c), super::bytes(&part), &mut [])
        }
    }

    /// Two-level allreduce (commutative `op`): the host's reduce to its leader, an
    /// allreduce among the leaders in the leader's `recv`, the host's broadcast of it.
    /// `send` is `None` in place.
    pub(super) fn two_level_allreduce<T: Reducible>(
        &self,
        t: TwoLevel<'_>,
        send: Option<&[T]>,
        recv: &mut [T],
        op: &Op,
    ) -> Result<()> {
        let me = self.state.rank;
        let (leader, li, leaders) = t.leader(me, None);
        let is_leader = leader == me;
        match (send, is_leader) {
            (_, true) => t.host.reduce_blocking(li as i32, send, recv, op)?,
            (Some(s), false) => t.host.reduce_blocking(li as i32, Some(s), &mut [], op)?,
            (None, false) => t
                .host
                .reduce_blocking(li as i32, Some(&*recv), &mut [], op)?,
        }
        let c = combine::<T>(op)?;
        let prog = is_leader.then(|| {
            let mut pr = Program::new();
            let g = Grp::of(&leaders, t.lay.host[me as usize]);
            let (count, elem) = (recv.len(), size_of::<T>());
            let out = Span::new(Region::Recv, 0, count * elem);
            match select::allreduce(super::crossovers(), out.len, count, g.size(), true) {
                select::Allreduce::RecursiveDoubling => {
                    allreduce::recursive_doubling(&mut pr, g, out, out, true)
                }
                select::Allreduce::Rabenseifner => {
                    allreduce::rabenseifner(&mut pr, g, out, out, count, elem, true)
                }
                select::Allreduce::Ring => allreduce::ring(&mut pr, g, out, out, count, elem),
            }
            pr
        });
        self.leaders_run("allreduce", prog, Some(c), &[], super::bytes_mut(recv))?;
        t.host.broadcast_raw::<T>(li as i32, recv)
    }
}

#[cfg(test)]
mod tests {
    use super::super::algorithms::testing::*;
    use super::*;
    use crate::coll::schedule::sim::Bufs;
    use crate::coll::schedule::Region;

    fn layouts() -> Vec<Vec<u32>> {
        vec![
            vec![0, 0, 1, 1],
            vec![0, 1, 0, 1, 2],
            vec![3, 3, 3, 1, 1, 2, 2, 2, 2],
            vec![0, 1, 1, 1, 1, 0, 2],
        ]
    }

    #[test]
    fn layout_needs_several_hosts_with_several_ranks() {
        assert!(HostLayout::new(&[0, 1, 2], &Locality::new(vec![0, 0, 0])).is_none());
        assert!(HostLayout::new(&[0, 1, 2], &Locality::new(vec![0, 1, 2])).is_none());
        let l = HostLayout::new(&[2, 0, 1], &Locality::new(vec![0, 5, 5])).unwrap();
        assert_eq!(l.locals.len(), 2);
        assert_eq!(l.leaders(None), vec![0, 1]);
        assert_eq!(l.leaders(Some(2)), vec![2, 1]);
    }

    #[test]
    fn two_level_collectives_match_flat_results() {
        let c = Crossovers {
            bcast_long: 64,
            allreduce_long: 64,
            ..Crossovers::default()
        };
        for hosts in layouts() {
            let p = hosts.len() as u32;
            let members: Vec<u32> = (0..p).collect();
            let lay = HostLayout::new(&members, &Locality::new(hosts.clone())).unwrap();
            for count in [0usize, 1, 5, 40] {
                let n = count * 4;
                let val = |r: usize, i: usize| (r * 1000 + i) as u32;
                // barrier
                let progs: Vec<_> = (0..p)
                    .map(|r| {
                        let mut pr = Program::new();
                        barrier(&mut pr, &lay, r);
                        pr
                    })
                    .collect();
                run(&progs, &mut vec![Bufs::default(); p as usize], None);
                for root in 0..p {
                    // bcast
                    let progs: Vec<_> = (0..p)
                        .map(|r| {
                            let mut pr = Program::new();
                            bcast(
                                &mut pr,
                                &lay,
                                r,
                                root,
                                Span::new(Region::Recv, 0, n),
                                count,
                                4,
                                &c,
                            );
                            pr
                        })
                        .collect();
                    let mut bufs: Vec<Bufs> = (0..p as usize)
                        .map(|r| Bufs {
                            send: vec![],
                            recv: if r == root as usize {
                                bytes(&(0..count).map(|i| val(r, i)).collect::<Vec<_>>())
                            } else {
                                vec![0; n]
                            },
                        })
                        .collect();
                    run(&progs, &mut bufs, None);
                    let want = bytes(
                        &(0..count)
                            .map(|i| val(root as usize, i))
                            .collect::<Vec<_>>(),
                    );
                    assert!(
                        bufs.iter().all(|b| b.recv == want),
                        "bcast {hosts:?} root {root} count {count}"
                    );
                    // reduce
                    let progs: Vec<_> = (0..p)
                        .map(|r| {
                            let mut pr = Program::new();
                            let out = Span::new(Region::Recv, 0, if r == root { n } else { 0 });
                            reduce(&mut pr, &lay, r, root, Span::new(Region::Send, 0, n), out);
                            pr
                        })
                        .collect();
                    let mut bufs: Vec<Bufs> = (0..p as usize)
                        .map(|r| Bufs {
                            send: bytes(&(0..count).map(|i| val(r, i)).collect::<Vec<_>>()),
                            recv: vec![0; if r == root as usize { n } else { 0 }],
                        })
                        .collect();
                    run(&progs, &mut bufs, Some(&sum()));
                    let want = bytes(
                        &(0..count)
                            .map(|i| (0..p as usize).map(|r| val(r, i)).sum::<u32>())
                            .collect::<Vec<_>>(),
                    );
                    assert_eq!(
                        bufs[root as usize].recv, want,
                        "reduce {hosts:?} root {root} count {count}"
                    );
                }
                // allreduce
                let progs: Vec<_> = (0..p)
                    .map(|r| {
                        let mut pr = Program::new();
                        allreduce(
                            &mut pr,
                            &lay,
                            r,
                            Span::new(Region::Send, 0, n),
                            Span::new(Region::Recv, 0, n),
                            count,
                            4,
                            &c,
                        );
                        pr
                    })
                    .collect();
                let mut bufs: Vec<Bufs> = (0..p as usize)
                    .map(|r| Bufs {
                        send: bytes(&(0..count).map(|i| val(r, i)).collect::<Vec<_>>()),
                        recv: vec![0; n],
                    })
                    .collect();
                run(&progs, &mut bufs, Some(&sum()));
                let want = bytes(
                    &(0..count)
                        .map(|i| (0..p as usize).map(|r| val(r, i)).sum::<u32>())
                        .collect::<Vec<_>>(),
                );
                assert!(
                    bufs.iter().all(|b| b.recv == want),
                    "allreduce {hosts:?} count {count}"
                );
            }
        }
    }
}
