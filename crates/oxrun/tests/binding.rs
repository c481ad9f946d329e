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

/// Every CPU of a kernel CPU list, in order.
fn cpus_of(list: &str) -> Vec<usize> {
    let mut v = Vec::new();
    for part in list.split(',') {
        match part.split_once('-') {
            Some((a, b)) => v.extend(a.parse::<usize>().unwrap()..=b.parse::<usize>().unwrap()),
            None => v.push(part.parse().unwrap()),
        }
    }
    v
}

/// The package of `cpu`, from sysfs (0 when unknown).
fn package_of(cpu: usize) -> String {
    std::fs::read_to_string(format!(
        "/sys/devices/system/cpu/cpu{cpu}/topology/physical_package_id"
    ))
    .map(|s| s.trim().to_owned())
    .unwrap_or_else(|_| "0".into())
}

#[test]
fn bind_to_socket_gives_each_rank_its_whole_socket() {
    let mine = cpus_of(&my_cpus());
    let r = run(&[
        "--timeout",
        "20",
        "--map-by",
        "socket",
        "--bind-to",
        "socket",
        "--report-bindings",
        "-n",
        "2",
        "sh",
        "-c",
        SHOW,
    ]);
    assert_eq!(r.code, Some(0), "{r:?}");
    assert_eq!(r.oxrun_lines().len(), 2, "{r:?}");
    for (rank, cpus) in allowed_lists(&r.stdout) {
        let got = cpus_of(&cpus);
        // Exactly the allowed CPUs of one package.
        let pkg = package_of(got[0]);
        let want: Vec<usize> = mine
            .iter()
            .copied()
            .filter(|&c| package_of(c) == pkg)
            .collect();
        assert_eq!(got, want, "rank {rank}: {r:?}");
    }
}

#[test]
fn bind_to_numa_binds_within_a_numa_node() {
    let r = run(&[
        "--timeout",
        "20",
        "--map-by",
        "numa",
        "--bind-to",
        "numa",
        "--report-bindings",
        "-n",
        "2",
        "sh",
        "-c",
        SHOW,
    ]);
    assert_eq!(r.code, Some(0), "{r:?}");
    let reports = r.oxrun_lines();
    for (rank, cpus) in allowed_lists(&r.stdout) {
        let line = reports
            .iter()
            .find(|l| l.starts_with(&format!("oxrun: rank {rank} (pid ")))
            .unwrap_or_else(|| panic!("no report for rank {rank}: {r:?}"));
        assert!(line.ends_with(&format!(" {cpus}")), "{line} vs {cpus}");
    }
}

#[test]
fn rank_file_places_ranks_on_the_cpus_it_names() {
    let mine = cpus_of(&my_cpus());
    let last = *mine.last().unwrap();
    let dir = std::env::temp_dir().join(format!("oxrun-rf-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let rf = dir.join("ranks");
    std::fs::write(
        &rf,
        format!("# rank 0 on the last CPU\nrank 0=localhost slot={last}\n"),
    )
    .unwrap();
    let r = run(&[
        "--timeout",
        "20",
        "--rankfile",
        rf.to_str().unwrap(),
        "--report-bindings",
        "-n",
        "2",
        "sh",
        "-c",
        SHOW,
    ]);
    assert_eq!(r.code, Some(0), "{r:?}");
    let lists = allowed_lists(&r.stdout);
    assert_eq!(lists[0], (0, last.to_string()), "{r:?}");
    // A CPU oxrun may not use is a usage error.
    std::fs::write(&rf, "rank 0=localhost slot=100000\n").unwrap();
    let r = run(&["--rankfile", rf.to_str().unwrap(), "-n", "1", "true"]);
    assert_eq!(r.code, Some(2), "{r:?}");
    assert!(r.stderr.contains("CPU 100000"), "{r:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn binding_stays_inside_the_cpuset_oxrun_is_given() {
    // As under Slurm or taskset: oxrun limited to one CPU binds every rank there.
    let mine = cpus_of(&my_cpus());
    let cpu = mine[mine.len() - 1].to_string();
    let oxrun = env!("CARGO_BIN_EXE_oxrun");
    let out = std::process::Command::new("taskset")
        .args([
            "-c",
            &cpu,
            oxrun,
            "--timeout",
            "20",
            "--bind-to",
            "core",
            "-n",
            "2",
        ])
        .args(["sh", "-c", SHOW])
        .output();
    let Ok(out) = out else {
        eprintln!("skipping: taskset is not installed");
        return;
    };
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    for (_, cpus) in allowed_lists(&stdout) {
        assert_eq!(cpus, cpu, "{stdout}");
    }
}
