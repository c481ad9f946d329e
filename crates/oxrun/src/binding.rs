//! Which CPUs each rank is bound to.
//!
//! A "core" is the set of hardware threads that share one physical core, as sysfs reports it;
//! only CPUs oxrun itself may run on (its affinity mask, which honours `taskset`, cgroup
//! cpusets and the cpuset Slurm gives a step) are used. Each core also knows its package
//! (socket) and NUMA node (`oxmpi_pmi::topology`).
//!
//! Policy ([`plan`]): ranks of a host are first mapped to cores, in core order (`--map-by
//! core`, the default), or dealt round-robin over the packages (`--map-by socket`) or NUMA
//! nodes (`--map-by numa`); rank `i` of a host takes the `i`-th core of that order (modulo the
//! cores). `--bind-to` then gives it that core's CPUs (`core`), every allowed CPU of the core's
//! package (`socket`) or NUMA node (`numa`), or nothing (`none`). By default ranks are bound
//! one per core when there are no more ranks than cores, and not bound at all otherwise
//! (oversubscribed ranks are better left to the scheduler). A rank file gives CPUs per rank.

use std::collections::BTreeMap;

use clap::ValueEnum;
use oxmpi_pmi::topology::Topology;

use crate::sys;

/// The `--bind-to` choices.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum BindTo {
    /// One core per rank (round-robin when there are more ranks than cores).
    Core,
    /// The whole package (socket) of the rank's core.
    Socket,
    /// The whole NUMA node of the rank's core.
    Numa,
    /// No binding: ranks may run on any CPU oxrun may use.
    None,
}

/// In which order a host's ranks take its cores (from `--map-by`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Within {
    /// Core after core.
    #[default]
    Core,
    /// Round-robin over packages.
    Socket,
    /// Round-robin over NUMA nodes.
    Numa,
}

/// One core oxrun may use: its allowed CPUs and where it sits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Core {
    /// Its allowed CPUs, in increasing order.
    pub cpus: Vec<usize>,
    /// Its package.
    pub package: u32,
    /// Its NUMA node.
    pub numa: u32,
}

/// The cores oxrun may use on this host, ordered by their first CPU (topology through hwloc,
/// or sysfs: `Topology::detect`; one core per CPU when neither says anything). For ranks that
/// talk to other hosts, `tcp_if` (`OXMPI_TCP_IF`'s value, possibly empty) puts the cores on
/// the NUMA node of the network interface TCP uses first, and that interface with its node is
/// returned (`None` when no interface's node is known).
pub fn host_cores_near(tcp_if: Option<&str>) -> (Vec<Core>, Option<(String, u32)>) {
    let allowed = sys::allowed_cpus().unwrap_or_default();
    let (topo, _) = Topology::detect(false);
    let cores = cores_of(&topo, &allowed);
    match tcp_if.and_then(|spec| nic_numa(&topo, spec)) {
        Some((nic, numa)) => (near_first(cores, numa), Some((nic, numa))),
        None => (cores, None),
    }
}

/// `OXMPI_TCP_IF` as a rank with environment `env` will see it (the agent's own otherwise).
pub fn tcp_if_of(env: &[(std::ffi::OsString, std::ffi::OsString)]) -> String {
    env.iter()
        .rev()
        .find(|(k, _)| k == "OXMPI_TCP_IF")
        .map(|(_, v)| v.to_string_lossy().into_owned())
        .or_else(|| std::env::var("OXMPI_TCP_IF").ok())
        .unwrap_or_default()
}

/// The interface TCP leaves by and its NUMA node: the first device-backed interface with a
/// known node among those `spec` names (comma-separated; CIDR blocks and an empty spec mean
/// any interface).
pub fn nic_numa(topo: &Topology, spec: &str) -> Option<(String, u32)> {
    let names: Vec<&str> = spec
        .split(',')
        .map(str::trim)
        .filter(|n| !n.is_empty() && !n.contains(['/', '.']))
        .collect();
    topo.nics
        .iter()
        .filter(|n| !n.virtual_ && (names.is_empty() || names.contains(&n.name.as_str())))
        .find_map(|n| Some((n.name.clone(), n.numa?)))
}

/// What a `--report-bindings` line adds about the NIC: `, near nic ib0 (numa node 1)` when
/// every CPU of `cpus` is on the node of `nic`, `, nic ib0 is on numa node 1` otherwise.
pub fn near_text(nic: &Option<(String, u32)>, cpus: &[usize], cores: &[Core]) -> String {
    let Some((name, numa)) = nic else {
        return String::new();
    };
    let near = cpus.iter().all(|cpu| {
        cores
            .iter()
            .any(|c| c.numa == *numa && c.cpus.contains(cpu))
    });
    if near {
        format!(", near nic {name} (numa node {numa})")
    } else {
        format!(", nic {name} is on numa node {numa}")
    }
}

/// `cores` with those on NUMA node `numa` first; each group keeps its order.
pub fn near_first(cores: Vec<Core>, numa: u32) -> Vec<Core> {
    let (mut near, far): (Vec<Core>, Vec<Core>) = cores.into_iter().partition(|c| c.numa == numa);
    near.extend(far);
    near
}

/// Groups `allowed` CPUs into cores using `topo` (CPUs it does not know are cores of their own
/// on package 0, NUMA node 0).
pub fn cores_of(topo: &Topology, allowed: &[usize]) -> Vec<Core> {
    let grouped = group_into_cores(allowed, |cpu| topo.cpu(cpu).map(|c| c.core_cpus.clone()));
    grouped
        .into_iter()
        .map(|cpus| {
            let first = topo.cpu(cpus[0]);
            Core {
                package: first.map_or(0, |c| c.package),
                numa: first.map_or(0, |c| c.numa),
                cpus,
            }
        })
        .collect()
}

/// The wire form of a binding policy (agents receive it in one byte): low 4 bits `--bind-to`
/// (0 default, 1 core, 2 none, 3 socket, 4 numa), high 4 bits the mapping within a host.
pub fn to_wire(bind: Option<BindTo>, within: Within) -> u8 {
    let b = match bind {
        None => 0,
        Some(BindTo::Core) => 1,
        Some(BindTo::None) => 2,
        Some(BindTo::Socket) => 3,
        Some(BindTo::Numa) => 4,
    };
    let w = match within {
        Within::Core => 0,
        Within::Socket => 1,
        Within::Numa => 2,
    };
    b | (w << 4)
}

/// The inverse of [`to_wire`]; unknown values mean the defaults.
pub fn from_wire(byte: u8) -> (Option<BindTo>, Within) {
    let bind = match byte & 15 {
        1 => Some(BindTo::Core),
        2 => Some(BindTo::None),
        3 => Some(BindTo::Socket),
        4 => Some(BindTo::Numa),
        _ => None,
    };
    let within = match byte >> 4 {
        1 => Within::Socket,
        2 => Within::Numa,
        _ => Within::Core,
    };
    (bind, within)
}

/// Groups `allowed` CPUs by the sibling list `siblings(cpu)` returns (CPUs with equal lists
/// share a core; `None` makes a CPU a core of its own).
pub fn group_into_cores(
    allowed: &[usize],
    siblings: impl Fn(usize) -> Option<Vec<usize>>,
) -> Vec<Vec<usize>> {
    let mut cores: Vec<(Option<Vec<usize>>, Vec<usize>)> = Vec::new();
    for &cpu in allowed {
        let key = siblings(cpu);
        match cores.iter_mut().find(|(k, _)| k.is_some() && *k == key) {
            Some((_, cpus)) => cpus.push(cpu),
            None => cores.push((key, vec![cpu])),
        }
    }
    let mut out: Vec<Vec<usize>> = cores.into_iter().map(|(_, cpus)| cpus).collect();
    for core in &mut out {
        core.sort_unstable();
    }
    out.sort();
    out
}

pub use oxmpi_pmi::topology::{format_cpu_list, parse_cpu_list};

/// The order in which a host's ranks take `cores`: indices into `cores`.
fn core_order(cores: &[Core], within: Within) -> Vec<usize> {
    let key = |c: &Core| match within {
        Within::Core => 0,
        Within::Socket => c.package,
        Within::Numa => c.numa,
    };
    let mut groups: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
    for (i, c) in cores.iter().enumerate() {
        groups.entry(key(c)).or_default().push(i);
    }
    let mut queues: Vec<std::vec::IntoIter<usize>> =
        groups.into_values().map(Vec::into_iter).collect();
    let mut order = Vec::with_capacity(cores.len());
    while order.len() < cores.len() {
        for q in &mut queues {
            order.extend(q.next());
        }
    }
    order
}

/// The CPUs each of `nranks` ranks of a host is bound to (`None`: not bound), for the
/// `--bind-to` choice `policy` (`None`: the default) and mapping `within`, on `cores`.
pub fn plan(
    nranks: usize,
    policy: Option<BindTo>,
    within: Within,
    cores: &[Core],
) -> Vec<Option<Vec<usize>>> {
    let level = match policy {
        _ if cores.is_empty() => None,
        Some(BindTo::None) => None,
        Some(level) => Some(level),
        None => (nranks <= cores.len()).then_some(BindTo::Core),
    };
    let order = core_order(cores, within);
    (0..nranks)
        .map(|r| {
            let core = &cores[*order.get(r % order.len().max(1))?];
            let same = |keep: &dyn Fn(&Core) -> bool| -> Vec<usize> {
                let mut v: Vec<usize> = cores
                    .iter()
                    .filter(|c| keep(c))
                    .flat_map(|c| c.cpus.iter().copied())
                    .collect();
                v.sort_unstable();
                v
            };
            match level? {
                BindTo::Core => Some(core.cpus.clone()),
                BindTo::Socket => Some(same(&|c| c.package == core.package)),
                BindTo::Numa => Some(same(&|c| c.numa == core.numa)),
                BindTo::None => None,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flat(n: usize) -> Vec<Core> {
        (0..n)
            .map(|c| Core {
                cpus: vec![c],
                package: 0,
                numa: 0,
            })
            .collect()
    }

    /// 2 packages x 2 NUMA nodes each x 2 cores: core c has CPU c, package c / 4, numa c / 2.
    fn two_sockets() -> Vec<Core> {
        (0..8)
            .map(|c| Core {
                cpus: vec![c],
                package: c as u32 / 4,
                numa: c as u32 / 2,
            })
            .collect()
    }

    #[test]
    fn map_by_socket_and_numa_deal_ranks_round_robin() {
        let cores = two_sockets();
        let first = |p: Vec<Option<Vec<usize>>>| -> Vec<usize> {
            p.into_iter().map(|c| c.unwrap()[0]).collect()
        };
        let core = Some(BindTo::Core);
        assert_eq!(first(plan(4, core, Within::Core, &cores)), vec![0, 1, 2, 3]);
        assert_eq!(
            first(plan(4, core, Within::Socket, &cores)),
            vec![0, 4, 1, 5]
        );
        assert_eq!(
            first(plan(5, core, Within::Numa, &cores)),
            vec![0, 2, 4, 6, 1]
        );
    }

    #[test]
    fn bind_to_socket_and_numa_give_the_whole_domain() {
        let cores = two_sockets();
        let p = plan(2, Some(BindTo::Socket), Within::Socket, &cores);
        assert_eq!(p, vec![Some(vec![0, 1, 2, 3]), Some(vec![4, 5, 6, 7])]);
        let p = plan(3, Some(BindTo::Numa), Within::Core, &cores);
        assert_eq!(
            p,
            vec![Some(vec![0, 1]), Some(vec![0, 1]), Some(vec![2, 3])]
        );
    }

    #[test]
    fn policies_survive_the_wire() {
        for bind in [
            None,
            Some(BindTo::Core),
            Some(BindTo::Socket),
            Some(BindTo::Numa),
            Some(BindTo::None),
        ] {
            for within in [Within::Core, Within::Socket, Within::Numa] {
                assert_eq!(from_wire(to_wire(bind, within)), (bind, within));
            }
        }
        assert_eq!(from_wire(0xff), (None, Within::Core));
    }

    #[test]
    fn cores_carry_their_package_and_numa_node() {
        let t = Topology::host();
        let allowed: Vec<usize> = t.cpus.iter().map(|c| c.id).collect();
        let cores = cores_of(&t, &allowed);
        assert!(!cores.is_empty());
        for c in &cores {
            let cpu = t.cpu(c.cpus[0]).unwrap();
            assert_eq!((c.package, c.numa), (cpu.package, cpu.numa));
        }
    }

    fn nic(name: &str, numa: Option<u32>, virtual_: bool) -> oxmpi_pmi::topology::Nic {
        oxmpi_pmi::topology::Nic {
            name: name.into(),
            numa,
            virtual_,
        }
    }

    #[test]
    fn ranks_that_talk_across_hosts_start_on_the_nics_numa_node() {
        let topo = Topology {
            nics: vec![
                nic("eth0", None, false),
                nic("ib0", Some(1), false),
                nic("lo", None, true),
                nic("veth1", Some(0), true),
            ],
            ..Topology::default()
        };
        assert_eq!(nic_numa(&topo, ""), Some(("ib0".into(), 1)));
        assert_eq!(nic_numa(&topo, "10.0.0.0/8"), Some(("ib0".into(), 1)));
        assert_eq!(nic_numa(&topo, "eth0"), None, "eth0's node is unknown");
        assert_eq!(
            nic_numa(&topo, "lo,veth1"),
            None,
            "virtual interfaces have no node"
        );
        let cores = near_first(two_sockets(), 1);
        let first: Vec<usize> = cores.iter().map(|c| c.cpus[0]).collect();
        assert_eq!(first, vec![2, 3, 0, 1, 4, 5, 6, 7]);
        let p = plan(2, Some(BindTo::Core), Within::Core, &cores);
        assert_eq!(p, vec![Some(vec![2]), Some(vec![3])]);
        let ib0 = Some(("ib0".to_owned(), 1));
        assert_eq!(
            near_text(&ib0, &[2], &cores),
            ", near nic ib0 (numa node 1)"
        );
        assert_eq!(
            near_text(&ib0, &[0, 2], &cores),
            ", nic ib0 is on numa node 1"
        );
        assert_eq!(near_text(&None, &[0], &cores), "");
    }

    #[test]
    fn default_binds_one_core_per_rank_when_they_fit() {
        let p = plan(3, None, Within::Core, &flat(4));
        assert_eq!(p, vec![Some(vec![0]), Some(vec![1]), Some(vec![2])]);
        assert_eq!(
            plan(4, None, Within::Core, &flat(4))
                .iter()
                .flatten()
                .count(),
            4
        );
    }

    #[test]
    fn default_does_not_bind_oversubscribed_jobs() {
        assert_eq!(plan(5, None, Within::Core, &flat(4)), vec![None; 5]);
    }

    #[test]
    fn explicit_core_binding_wraps_around() {
        let p = plan(5, Some(BindTo::Core), Within::Core, &flat(2));
        let cpus: Vec<usize> = p.into_iter().map(|c| c.unwrap()[0]).collect();
        assert_eq!(cpus, vec![0, 1, 0, 1, 0]);
    }

    #[test]
    fn none_binds_nothing() {
        assert_eq!(
            plan(2, Some(BindTo::None), Within::Core, &flat(8)),
            vec![None; 2]
        );
        assert_eq!(
            plan(2, Some(BindTo::Core), Within::Core, &[]),
            vec![None; 2]
        );
    }

    #[test]
    fn hyperthreads_form_one_core() {
        // 2 cores x 2 threads, numbered the usual Linux way: core c has CPUs c and c+2.
        let siblings = |cpu: usize| Some(vec![cpu % 2, cpu % 2 + 2]);
        let cores = group_into_cores(&[0, 1, 2, 3], siblings);
        assert_eq!(cores, vec![vec![0, 2], vec![1, 3]]);
        // Only allowed CPUs count, even if sysfs lists more siblings.
        assert_eq!(group_into_cores(&[1, 3], siblings), vec![vec![1, 3]]);
        // Without topology each CPU is its own core.
        assert_eq!(group_into_cores(&[4, 2], |_| None), vec![vec![2], vec![4]]);
    }

    #[test]
    fn cpu_lists_parse_and_format() {
        assert_eq!(
            parse_cpu_list("0-3,8,10-11\n"),
            Some(vec![0, 1, 2, 3, 8, 10, 11])
        );
        assert_eq!(parse_cpu_list("5"), Some(vec![5]));
        assert_eq!(parse_cpu_list("3-1"), None);
        assert_eq!(parse_cpu_list("x"), None);
        assert_eq!(format_cpu_list(&[0, 1, 2, 3, 8, 10, 11]), "0-3,8,10-11");
        assert_eq!(format_cpu_list(&[7]), "7");
        assert_eq!(format_cpu_list(&[]), "");
    }

    #[test]
    fn host_has_at_least_one_core() {
        let (cores, nic) = host_cores_near(None);
        assert!(nic.is_none());
        assert!(!cores.is_empty());
        assert!(cores.iter().all(|c| !c.cpus.is_empty()));
    }
}
