//! Which CPUs each rank is bound to.
//!
//! A "core" is the set of hardware threads that share one physical core, as sysfs reports it;
//! only CPUs oxrun itself may run on (its affinity mask, which honours `taskset` and cgroup
//! cpusets) are used. Binding one rank per core keeps busy-polling ranks from competing for a
//! core and keeps each rank's caches warm.
//!
//! Policy ([`plan`]): `--bind-to core` gives rank `i` core `i mod cores`; `--bind-to none`
//! binds nothing; by default ranks are bound one per core when there are no more ranks than
//! cores, and not bound at all otherwise (oversubscribed ranks are better left to the
//! scheduler).

use std::fs;

use clap::ValueEnum;

use crate::sys;

/// The `--bind-to` choices.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum BindTo {
    /// One core per rank (round-robin when there are more ranks than cores).
    Core,
    /// No binding: ranks may run on any CPU oxrun may use.
    None,
}

/// The CPUs oxrun may use, grouped into cores, each core's CPUs in increasing order and the
/// cores ordered by their first CPU. Falls back to one core per CPU when sysfs says nothing.
pub fn host_cores() -> Vec<Vec<usize>> {
    let allowed = sys::allowed_cpus().unwrap_or_default();
    group_into_cores(&allowed, |cpu| {
        let dir = format!("/sys/devices/system/cpu/cpu{cpu}/topology");
        fs::read_to_string(format!("{dir}/core_cpus_list"))
            .or_else(|_| fs::read_to_string(format!("{dir}/thread_siblings_list")))
            .ok()
            .and_then(|s| parse_cpu_list(&s))
    })
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

/// Parses a kernel CPU list such as `0-3,8,10-11`.
pub fn parse_cpu_list(text: &str) -> Option<Vec<usize>> {
    let mut cpus = Vec::new();
    for part in text.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (usize, usize) = (a.parse().ok()?, b.parse().ok()?);
                if a > b || b - a > 1 << 16 {
                    return None;
                }
                cpus.extend(a..=b);
            }
            None => cpus.push(part.parse().ok()?),
        }
    }
    Some(cpus)
}

/// Formats CPUs (in increasing order) as a kernel CPU list, e.g. `0-3,8`.
pub fn format_cpu_list(cpus: &[usize]) -> String {
    let mut parts = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let mut j = i;
        while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
            j += 1;
        }
        parts.push(if i == j {
            cpus[i].to_string()
        } else {
            format!("{}-{}", cpus[i], cpus[j])
        });
        i = j + 1;
    }
    parts.join(",")
}

/// The CPUs each of `nranks` ranks is bound to (`None`: not bound), for the `--bind-to`
/// choice `policy` (`None`: the default) on a host with `cores`.
pub fn plan(
    nranks: usize,
    policy: Option<BindTo>,
    cores: &[Vec<usize>],
) -> Vec<Option<Vec<usize>>> {
    let bind = !cores.is_empty()
        && match policy {
            Some(BindTo::Core) => true,
            Some(BindTo::None) => false,
            None => nranks <= cores.len(),
        };
    (0..nranks)
        .map(|r| bind.then(|| cores[r % cores.len()].clone()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flat(n: usize) -> Vec<Vec<usize>> {
        (0..n).map(|c| vec![c]).collect()
    }

    #[test]
    fn default_binds_one_core_per_rank_when_they_fit() {
        let p = plan(3, None, &flat(4));
        assert_eq!(p, vec![Some(vec![0]), Some(vec![1]), Some(vec![2])]);
        assert_eq!(plan(4, None, &flat(4)).iter().flatten().count(), 4);
    }

    #[test]
    fn default_does_not_bind_oversubscribed_jobs() {
        assert_eq!(plan(5, None, &flat(4)), vec![None; 5]);
    }

    #[test]
    fn explicit_core_binding_wraps_around() {
        let p = plan(5, Some(BindTo::Core), &flat(2));
        let cpus: Vec<usize> = p.into_iter().map(|c| c.unwrap()[0]).collect();
        assert_eq!(cpus, vec![0, 1, 0, 1, 0]);
    }

    #[test]
    fn none_binds_nothing() {
        assert_eq!(plan(2, Some(BindTo::None), &flat(8)), vec![None; 2]);
        assert_eq!(plan(2, Some(BindTo::Core), &[]), vec![None; 2]);
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
        let cores = host_cores();
        assert!(!cores.is_empty());
        assert!(cores.iter().all(|c| !c.is_empty()));
    }
}
