//! The PMI-1 server as ranks see it: card exchange at several sizes, MPMD appnums, abort, and
//! every way a rank can break the protocol.

mod common;

use common::{probe, run, values_of};

fn cards(np: usize) {
    let n = np.to_string();
    let r = run(&["--timeout", "25", "-n", &n, probe()]);
    assert_eq!(r.code, Some(0), "np {np}: {r:?}");
    let mut ranks = values_of(&r.stdout, "rank=");
    ranks.sort_unstable();
    assert_eq!(ranks, (0..np as i32).collect::<Vec<_>>(), "{r:?}");
    assert!(r
        .out_lines()
        .iter()
        .all(|l| l.contains(&format!("size={np}")) && l.ends_with("cards=ok")));
    // One KVS name for the whole job.
    let names: std::collections::BTreeSet<&str> = r
        .stdout
        .split_whitespace()
        .filter(|w| w.starts_with("kvsname="))
        .collect();
    assert_eq!(names.len(), 1, "{r:?}");
    assert!(r.stderr.is_empty(), "{r:?}");
}

#[test]
fn cards_np1() {
    cards(1);
}

#[test]
fn cards_np2() {
    cards(2);
}

#[test]
fn cards_np4() {
    cards(4);
}

#[test]
fn cards_np8() {
    cards(8);
}

#[test]
fn cards_np16() {
    cards(16);
}

#[test]
fn cards_np64() {
    cards(64);
}

#[test]
fn mpmd_contexts_have_their_appnums() {
    let r = run(&[
        "--timeout",
        "25",
        "-n",
        "1",
        probe(),
        ":",
        "-np",
        "3",
        probe(),
        "cards",
        ":",
        probe(),
    ]);
    assert_eq!(r.code, Some(0), "{r:?}");
    let mut seen: Vec<(i32, i32)> = r
        .out_lines()
        .iter()
        .map(|l| (values_of(l, "rank=")[0], values_of(l, "appnum=")[0]))
        .collect();
    seen.sort_unstable();
    assert_eq!(seen, vec![(0, 0), (1, 1), (2, 1), (3, 1), (4, 2)]);
    assert!(r.out_lines().iter().all(|l| l.contains("size=5")));
}

#[test]
fn mpmd_runs_different_programs() {
    let r = run(&[
        "--timeout",
        "25",
        "-n",
        "1",
        "sh",
        "-c",
        "echo A$PMI_RANK",
        ":",
        "-n",
        "2",
        "sh",
        "-c",
        "echo B$PMI_RANK",
    ]);
    assert_eq!(r.code, Some(0), "{r:?}");
    let lines = r.sorted_out_lines();
    assert_eq!(lines, vec!["A0", "B1", "B2"]);
}

#[test]
fn abort_ends_the_job_with_its_code() {
    let r = run(&[
        "--timeout",
        "25",
        "-n",
        "4",
        probe(),
        "abort",
        "2",
        "7",
        "out of cheese",
    ]);
    assert_eq!(r.code, Some(7), "{r:?}");
    let ours = r.oxrun_lines();
    assert_eq!(ours.len(), 1, "{r:?}");
    assert!(ours[0].contains("rank 2"), "{r:?}");
    assert!(ours[0].contains("abort with code 7"), "{r:?}");
    assert!(ours[0].contains("out of cheese"), "{r:?}");
    assert!(r.elapsed.as_secs() < 10, "{r:?}");
}

fn assert_protocol_error(mode: &str, needle: &str) {
    let r = run(&["--timeout", "25", "-n", "3", probe(), mode, "1"]);
    assert_eq!(r.code, Some(1), "{mode}: {r:?}");
    let ours = r.oxrun_lines();
    assert_eq!(ours.len(), 1, "{mode}: {r:?}");
    assert!(
        ours[0].starts_with("oxrun: rank 1 broke the PMI protocol: "),
        "{mode}: {r:?}"
    );
    assert!(ours[0].contains(needle), "{mode}: {needle:?} not in {r:?}");
    assert!(ours[0].ends_with("; aborting the job"), "{mode}: {r:?}");
    assert!(r.elapsed.as_secs() < 10, "{mode}: {r:?}");
}

#[test]
fn malformed_lines_abort_the_job() {
    assert_protocol_error("badline", "cmd=");
}

#[test]
fn oversized_lines_abort_the_job() {
    assert_protocol_error("hugeline", "too long");
}

#[test]
fn a_wrong_secret_is_refused() {
    assert_protocol_error("badsecret", "secret");
}

#[test]
fn a_clean_exit_code_after_finalize_is_propagated() {
    let r = run(&["--timeout", "25", "-n", "2", probe(), "exit", "5"]);
    assert_eq!(r.code, Some(5), "{r:?}");
    assert!(r.oxrun_lines()[0].contains("exited with status 5"), "{r:?}");
}
