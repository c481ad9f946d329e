//! Node-aware (two-level) collectives, after seed 001's two-stage broadcast: one leader per
//! host talks across hosts, and each leader then serves the ranks of its own host, so every
//! slow inter-host link carries a message once instead of once per rank behind it.
//!
//! A host's leader is its lowest communicator rank, except that for rooted operations the
//! root leads its own host (saving a hop). The host grouping comes from the runtime's
//! collective placement (`Runtime::coll_locality`), which tests override with
//! `OXMPI_HOST_OVERRIDE` to exercise these paths on one machine.

use super::algorithms::{allreduce, misc, tree, Grp, EMPTY};
use super::schedule::{Program, Span};
use super::select::{self, Crossovers};
use crate::runtime::locality::Locality;

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
    let flat = |pr: &mut Program, g: Grp<'_>, root: u32| match select::bcast(c, buf.len, g.size()) {
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
                allreduce::recursive_doubling(pr, g, output, output)
            }
            select::Allreduce::Rabenseifner => {
                allreduce::rabenseifner(pr, g, output, output, count, elem, true)
            }
            select::Allreduce::Ring => allreduce::ring(pr, g, output, output, count, elem),
        }
    }
    match select::bcast(c, output.len, local.size()) {
        select::Bcast::Binomial => tree::bcast_binomial(pr, local, li, output),
        select::Bcast::ScatterAllgather => {
            tree::bcast_scatter_allgather(pr, local, li, output, count, elem)
        }
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
