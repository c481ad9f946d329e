//! Ending the job: exit codes, a rank killed by a signal, --timeout, signals to oxrun, and
//! the guarantees after any ending (no process left, no /dev/shm file left).

mod common;

use common::{assert_all_gone, probe, run, run_with, values_of};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The job key the ranks of a run printed as `key=...`.
fn printed_jobkey(stdout: &str) -> String {
    let keys: std::collections::BTreeSet<&str> = stdout
        .split_whitespace()
        .filter_map(|w| w.strip_prefix("key="))
        .collect();
    assert_eq!(keys.len(), 1, "one job key expected: {stdout}");
    keys.into_iter().next().unwrap().to_owned()
}

fn shm_files_of(jobkey: &str) -> Vec<String> {
    let prefix = format!("oxmpi.{jobkey}.");
    std::fs::read_dir("/dev/shm")
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with(&prefix))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn a_failing_rank_sets_the_exit_code_and_is_named() {
    let r = run(&[
        "--timeout",
        "25",
        "-n",
        "3",
        "sh",
        "-c",
        "[ $PMI_RANK = 1 ] && exit 3; exec sleep 60",
    ]);
    assert_eq!(r.code, Some(3), "{r:?}");
    let ours = r.oxrun_lines();
    assert_eq!(ours.len(), 1, "{r:?}");
    assert!(ours[0].starts_with("oxrun: rank 1 (pid "), "{r:?}");
    assert!(
        ours[0].ends_with(") exited with status 3; stopping the job"),
        "{r:?}"
    );
    assert!(r.elapsed < Duration::from_secs(10), "{r:?}");
}

#[test]
fn all_ranks_succeeding_is_success() {
    let r = run(&["--timeout", "25", "-n", "4", "sh", "-c", "exit 0"]);
    assert_eq!(r.code, Some(0), "{r:?}");
    assert!(r.stderr.is_empty(), "{r:?}");
}

#[test]
fn a_rank_killed_by_sigkill_stops_everything_and_cleans_up() {
    // Every rank records its pid and the pid of a grandchild; rank 1 creates a shared-memory
    // file of the job and kills itself, the others wait (in a child process) for 60 s.
    let script = "sleep 60 & echo \"rank=$PMI_RANK pid=$$ pid=$! key=$OXMPI_JOBKEY\"; \
                  if [ $PMI_RANK = 1 ]; then sleep 0.3; : > /dev/shm/oxmpi.$OXMPI_JOBKEY.x; kill -9 $$; fi; wait";
    let r = run(&["--timeout", "25", "-n", "4", "sh", "-c", script]);
    assert_eq!(r.code, Some(137), "{r:?}");
    let ours = r.oxrun_lines();
    assert_eq!(ours.len(), 1, "{r:?}");
    assert!(ours[0].starts_with("oxrun: rank 1 (pid "), "{r:?}");
    assert!(
        ours[0].ends_with("was killed by signal 9 (SIGKILL); stopping the job"),
        "{r:?}"
    );
    eprintln!("kill -9 of one rank: job ended after {:?}", r.elapsed);
    assert!(r.elapsed < Duration::from_secs(10), "took {:?}", r.elapsed);
    let pids = values_of(&r.stdout, "pid=");
    assert_eq!(pids.len(), 8, "{r:?}");
    assert_all_gone(&pids);
    let key = printed_jobkey(&r.stdout);
    assert!(shm_files_of(&key).is_empty(), "/dev/shm not cleaned");
    assert!(Path::new("/dev/shm").exists());
}

#[test]
fn shm_files_are_removed_after_success_and_leftover_children_are_killed() {
    let script = "sleep 60 & echo \"pid=$! key=$OXMPI_JOBKEY\"; : > /dev/shm/oxmpi.$OXMPI_JOBKEY.seg$PMI_RANK";
    let r = run(&["--timeout", "25", "-n", "2", "sh", "-c", script]);
    assert_eq!(r.code, Some(0), "{r:?}");
    assert!(shm_files_of(&printed_jobkey(&r.stdout)).is_empty());
    let pids = values_of(&r.stdout, "pid=");
    assert_eq!(pids.len(), 2);
    assert_all_gone(&pids);
}

#[test]
fn timeout_stops_the_job_with_124() {
    let r = run(&["--timeout", "1", "-n", "2", "sleep", "60"]);
    assert_eq!(r.code, Some(124), "{r:?}");
    assert_eq!(
        r.oxrun_lines(),
        vec!["oxrun: job exceeded --timeout of 1 s; stopping it"]
    );
    assert!(r.elapsed < Duration::from_secs(10), "{r:?}");
}

#[test]
fn ranks_ignoring_sigterm_are_killed_after_the_grace_period() {
    let script =
        "trap '' TERM; echo pid=$$; [ $PMI_RANK = 0 ] && exit 4; while :; do sleep 1; done";
    let r = run(&["--timeout", "25", "-n", "2", "sh", "-c", script]);
    assert_eq!(r.code, Some(4), "{r:?}");
    // Bounded by the 1 s grace period plus scheduling noise.
    assert!(r.elapsed < Duration::from_secs(10), "{r:?}");
    assert_all_gone(&values_of(&r.stdout, "pid="));
}

#[test]
fn sigterm_to_oxrun_stops_the_job() {
    let start = Instant::now();
    let mut child = Command::new(common::oxrun())
        .args(["--timeout", "25", "-n", "3", probe(), "sleep", "60"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut pids = Vec::new();
    let mut line = String::new();
    while pids.len() < 3 && out.read_line(&mut line).unwrap() > 0 {
        pids.extend(values_of(&line, "pid="));
        line.clear();
        assert!(start.elapsed() < common::DEADLINE, "ranks did not start");
    }
    assert_eq!(pids.len(), 3);
    // The pid is our own child's, so it cannot have been reused.
    let st = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(st.success());
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > common::DEADLINE {
            let _ = child.kill();
            panic!("oxrun did not stop on SIGTERM");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert_eq!(status.code(), Some(143), "{err}");
    assert!(
        err.contains("oxrun: received SIGTERM; stopping the job"),
        "{err}"
    );
    assert_all_gone(&pids);
}

#[test]
fn stdin_eof_does_not_end_the_job() {
    let r = run_with(
        &[
            "--timeout",
            "25",
            "-n",
            "2",
            "sh",
            "-c",
            "cat; echo done$PMI_RANK",
        ],
        Some(b""),
        &[],
    );
    assert_eq!(r.code, Some(0), "{r:?}");
    let lines = r.sorted_out_lines();
    assert_eq!(lines, vec!["done0", "done1"]);
}

#[test]
fn a_rank_leaving_without_finalize_ends_the_job_instead_of_hanging_its_peers() {
    let r = run(&["--timeout", "25", "-n", "3", probe(), "leave", "1"]);
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    assert!(
        r.stderr.contains("rank 1") && r.stderr.contains("without finalizing"),
        "{}",
        r.stderr
    );
    assert!(!r.stderr.contains("--timeout"), "{}", r.stderr);
}
