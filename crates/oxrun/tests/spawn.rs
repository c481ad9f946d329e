//! PMI `spawn` as ranks see it: a running job starts another (one command or several), whose
//! ranks get their own key-value space, the spawner's preput keys, their arguments and
//! working directory; refusals; a failing spawned rank ends the run with its status.

mod common;

use std::path::PathBuf;
use std::process::Command;

use common::{probe, run, run_command, run_with, values_of, Run};

/// The spawned ranks' lines.
fn children(stdout: &str) -> Vec<&str> {
    let mut l: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("probe child "))
        .collect();
    l.sort_unstable();
    l
}

fn spawn_ok(np: usize, counts: &[u32]) {
    let n = np.to_string();
    let list = count_list(counts);
    let r = run(&[
        "--timeout",
        "25",
        "-n",
        &n,
        probe(),
        "spawn",
        &list,
        "child",
        "two words",
    ]);
    assert!(r.stderr.is_empty(), "{r:?}");
    check_spawn(&r, np, counts);
}

fn count_list(counts: &[u32]) -> String {
    let list: Vec<String> = counts.iter().map(u32::to_string).collect();
    list.join(",")
}

/// Checks a run of `np` probes in `spawn` mode whose rank 0 spawned `counts`.
fn check_spawn(r: &Run, np: usize, counts: &[u32]) {
    assert_eq!(r.code, Some(0), "np {np} {counts:?}: {r:?}");
    let total: u32 = counts.iter().sum();
    let kids = children(&r.stdout);
    assert_eq!(kids.len(), total as usize, "{r:?}");
    let mut ranks: Vec<i32> = kids.iter().map(|l| values_of(l, "rank=")[0]).collect();
    ranks.sort_unstable();
    assert_eq!(ranks, (0..total as i32).collect::<Vec<_>>(), "{r:?}");
    // Appnum: index of the command, ranks in command order.
    let mut expect_app = Vec::new();
    for (i, &c) in counts.iter().enumerate() {
        expect_app.extend(std::iter::repeat(i as i32).take(c as usize));
    }
    for l in &kids {
        let rank = values_of(l, "rank=")[0] as usize;
        assert_eq!(values_of(l, "appnum=")[0], expect_app[rank], "{l}");
        assert!(l.contains(&format!("size={total} ")), "{l}");
        assert!(l.ends_with("arg=[two words]"), "{l}");
        let kvs = l
            .split_whitespace()
            .find(|w| w.starts_with("kvsname="))
            .unwrap();
        let parent = l
            .split_whitespace()
            .find(|w| w.starts_with("parent="))
            .unwrap();
        assert_ne!(kvs["kvsname=".len()..], parent["parent=".len()..], "{l}");
    }
    let parents = r
        .out_lines()
        .iter()
        .filter(|l| l.ends_with("parent=ok"))
        .count();
    assert_eq!(parents, np, "{r:?}");
    assert!(r.stdout.contains("probe rank=0 spawned=ok"), "{r:?}");
}

/// MPICH's Hydra `mpiexec`, installed from PyPI by the project's script when absent.
fn hydra() -> PathBuf {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let dir = std::env::var("OXMPI_PEERS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|_| {
            PathBuf::from(std::env::var("HOME").unwrap_or_else(|_| "/root".into()))
                .join(".cache/oxmpi/peers")
        });
    let mpiexec = dir.join("mpich/bin/mpiexec");
    if !mpiexec.exists() {
        let st = Command::new("bash")
            .arg(root.join("scripts/install-peers.sh"))
            .arg(&dir)
            .status()
            .expect("run scripts/install-peers.sh");
        assert!(st.success(), "installing MPICH from PyPI failed");
    }
    mpiexec
}

/// The client's spawn is what MPICH's own PMI server expects: Hydra starts the same jobs.
#[test]
fn the_client_spawns_under_mpich_hydra() {
    let mpiexec = hydra();
    for (np, counts) in [(1, &[2][..]), (2, &[2, 1][..])] {
        let mut cmd = Command::new(&mpiexec);
        cmd.args(["-n", &np.to_string(), probe(), "spawn", &count_list(counts)])
            .args(["child", "two words"]);
        let r = run_command(cmd, "mpiexec spawn");
        check_spawn(&r, np, counts);
    }
}

#[test]
fn one_parent_spawns_one() {
    spawn_ok(1, &[1]);
}

#[test]
fn two_parents_spawn_three() {
    spawn_ok(2, &[3]);
}

#[test]
fn spawn_multiple_has_appnums_per_command() {
    spawn_ok(2, &[2, 1]);
}

#[test]
fn wdir_and_host_info_are_honoured() {
    let r = run_with(
        &["--timeout", "25", "-n", "1", probe(), "spawn", "2"],
        None,
        &[("PROBE_WDIR", "/usr"), ("PROBE_HOST", "localhost")],
    );
    assert_eq!(r.code, Some(0), "{r:?}");
    let kids = children(&r.stdout);
    assert_eq!(kids.len(), 2, "{r:?}");
    assert!(kids.iter().all(|l| l.contains(" cwd=/usr ")), "{r:?}");
}

#[test]
fn a_missing_program_is_refused_and_the_job_goes_on() {
    let r = run_with(
        &["--timeout", "25", "-n", "2", probe(), "spawn", "1"],
        None,
        &[("PROBE_EXEC", "/nonexistent/program")],
    );
    assert_eq!(r.code, Some(0), "{r:?}");
    assert!(children(&r.stdout).is_empty(), "{r:?}");
    assert!(
        r.stdout
            .contains("refused=PMI server refused spawn: cannot execute /nonexistent/program"),
        "{r:?}"
    );
    assert_eq!(
        r.out_lines()
            .iter()
            .filter(|l| l.ends_with("parent=ok"))
            .count(),
        2,
        "{r:?}"
    );
}

#[test]
fn another_host_and_a_bad_wdir_are_refused() {
    for (var, val, needle) in [
        ("PROBE_HOST", "no-such-host.invalid", "is not this host"),
        ("PROBE_WDIR", "/nonexistent/dir", "is not a directory"),
    ] {
        let r = run_with(
            &["--timeout", "25", "-n", "1", probe(), "spawn", "1"],
            None,
            &[(var, val)],
        );
        assert_eq!(r.code, Some(0), "{r:?}");
        assert!(children(&r.stdout).is_empty(), "{r:?}");
        assert!(r.stdout.contains(needle), "{needle}: {r:?}");
    }
}

#[test]
fn a_failing_spawned_rank_ends_the_run_with_its_status() {
    let r = run(&[
        "--timeout",
        "25",
        "-n",
        "2",
        probe(),
        "spawn",
        "2",
        "exit",
        "3",
    ]);
    assert_eq!(r.code, Some(3), "{r:?}");
    let ours = r.oxrun_lines();
    assert!(
        ours.iter()
            .any(|l| l.contains("of spawned job 1") && l.contains("exited with status 3")),
        "{r:?}"
    );
}

#[test]
fn a_spawned_job_can_spawn_again() {
    let r = run(&[
        "--timeout",
        "25",
        "-n",
        "2",
        probe(),
        "spawn",
        "1",
        "spawn",
        "2",
    ]);
    assert_eq!(r.code, Some(0), "{r:?}");
    // The spawned job (one rank) spawned two more, whose parent is the spawned job's KVS.
    let kids = children(&r.stdout);
    assert_eq!(kids.len(), 2, "{r:?}");
    assert!(
        kids.iter()
            .all(|l| l.contains("_spawn2 ") && l.contains("parent=kvs_") && l.contains("_spawn1 ")),
        "{r:?}"
    );
    assert_eq!(
        r.out_lines()
            .iter()
            .filter(|l| l.contains("spawned=ok"))
            .count(),
        2,
        "{r:?}"
    );
}

#[test]
fn an_abort_in_a_spawned_job_ends_the_run_with_its_code() {
    let r = run(&[
        "--timeout",
        "25",
        "-n",
        "2",
        probe(),
        "spawn",
        "2",
        "abort",
        "1",
        "9",
        "bye",
    ]);
    assert_eq!(r.code, Some(9), "{r:?}");
    let ours = r.oxrun_lines();
    assert_eq!(ours.len(), 1, "{r:?}");
    assert!(
        ours[0].contains("rank 1 of spawned job 1") && ours[0].contains("abort with code 9: bye"),
        "{r:?}"
    );
}

#[test]
fn spawned_processes_are_bound_after_the_launch_ranks() {
    let r = run(&[
        "--timeout",
        "25",
        "--report-bindings",
        "-n",
        "1",
        probe(),
        "spawn",
        "1",
    ]);
    assert_eq!(r.code, Some(0), "{r:?}");
    let ours = r.oxrun_lines();
    let parent = ours.iter().find(|l| l.starts_with("oxrun: rank 0 (pid"));
    let child = ours
        .iter()
        .find(|l| l.contains("rank 0 of spawned job 1 (pid"));
    let (Some(parent), Some(child)) = (parent, child) else {
        panic!("no binding report for the launch's or the spawned rank: {r:?}");
    };
    // A machine with one core leaves the spawned rank unbound; otherwise it gets a core of
    // its own, not the launch rank's.
    let cpus = |l: &str| l.split(" bound to ").nth(1).map(str::to_owned);
    match (cpus(parent), cpus(child)) {
        (Some(p), Some(c)) => assert_ne!(p, c, "{r:?}"),
        (_, None) => assert!(child.ends_with("not bound"), "{r:?}"),
        (None, Some(_)) => panic!("unbound launch rank, bound spawned rank: {r:?}"),
    }
}
