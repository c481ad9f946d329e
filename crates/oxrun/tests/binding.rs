//! CPU binding: the report matches what the ranks really get.

mod common;

use common::run;

/// The CPU list a rank reports from /proc/self/status (inherited by its `grep`).
fn allowed_lists(stdout: &str) -> Vec<(u32, String)> {
    let mut v: Vec<(u32, String)> = stdout
        .lines()
        .map(|l| {
            let (rank, rest) = l.split_once(' ').unwrap();
            (
                rank.parse().unwrap(),
                rest.split_whitespace().last().unwrap().to_owned(),
            )
        })
        .collect();
    v.sort();
    v
}

/// This process's allowed CPUs as a kernel CPU list.
fn my_cpus() -> String {
    std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find_map(|l| {
            l.strip_prefix("Cpus_allowed_list:")
                .map(|s| s.trim().to_owned())
        })
        .unwrap()
}

/// Number of CPUs in a kernel CPU list such as `0-3,8`.
fn cpu_count(list: &str) -> usize {
    list.split(',')
        .map(|part| match part.split_once('-') {
            Some((a, b)) => b.parse::<usize>().unwrap() - a.parse::<usize>().unwrap() + 1,
            None => 1,
        })
        .sum()
}

const SHOW: &str = "echo $PMI_RANK $(grep Cpus_allowed_list /proc/self/status)";

#[test]
fn bind_to_core_binds_and_reports() {
    let r = run(&[
        "--timeout",
        "20",
        "--bind-to",
        "core",
        "--report-bindings",
        "-n",
        "2",
        "sh",
        "-c",
        SHOW,
    ]);
    assert_eq!(r.code, Some(0), "{r:?}");
    let reports = r.oxrun_lines();
    assert_eq!(reports.len(), 2, "{r:?}");
    for (rank, cpus) in allowed_lists(&r.stdout) {
        let line = reports
            .iter()
            .find(|l| l.starts_with(&format!("oxrun: rank {rank} (pid ")))
            .unwrap_or_else(|| panic!("no report for rank {rank}: {r:?}"));
        assert!(line.contains(" bound to cpu"), "{line}");
        assert!(
            line.ends_with(&format!(" {cpus}")),
            "report {line:?} but rank runs on {cpus}"
        );
    }
}

#[test]
fn bind_to_none_leaves_ranks_free() {
    let mine = my_cpus();
    let r = run(&[
        "--timeout",
        "20",
        "--bind-to",
        "none",
        "--report-bindings",
        "-n",
        "3",
        "sh",
        "-c",
        SHOW,
    ]);
    assert_eq!(r.code, Some(0), "{r:?}");
    let reports = r.oxrun_lines();
    assert_eq!(reports.len(), 3, "{r:?}");
    assert!(reports.iter().all(|l| l.contains("not bound")), "{r:?}");
    for (_, cpus) in allowed_lists(&r.stdout) {
        assert_eq!(cpus, mine);
    }
}

#[test]
fn oversubscribed_jobs_are_not_bound_by_default() {
    // More ranks than CPUs is more ranks than cores.
    let n = cpu_count(&my_cpus()) + 1;
    let r = run(&[
        "--timeout",
        "20",
        "--report-bindings",
        "-n",
        &n.to_string(),
        "true",
    ]);
    assert_eq!(r.code, Some(0), "{r:?}");
    let reports = r.oxrun_lines();
    assert_eq!(reports.len(), n, "{r:?}");
    assert!(reports.iter().all(|l| l.contains("not bound")), "{r:?}");
}
