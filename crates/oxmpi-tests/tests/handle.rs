//! The handle layer through oxrun: communicators, groups, ops and keyvals as ids, the thread
//! level chosen at run time, attribute callbacks, byte-level user operations in every
//! reduction collective, and buffered sends into a raw attached region (see
//! `src/bin/handle_layer.rs`), at more ranks than cores.

use std::path::Path;

use std::process::Command;
use std::time::Duration;

use oxmpi_tests::{oxrun_job, run_with_deadline, text};

const PROG: &str = env!("CARGO_BIN_EXE_handle_layer");

/// Runs the program at `np` ranks with thread level `level`; every rank must report success.
fn run(np: usize, level: &str) {
    let out = oxrun_job(np, Path::new(PROG), &[level], &[]);
    let (so, se) = text(&out);
    assert!(
        out.status.success(),
        "handle_layer np {np} {level} failed:\n{so}\n{se}"
    );
    let passed = so.lines().filter(|l| l.contains(" passed")).count();
    assert_eq!(
        passed, np,
        "np {np} {level}: {passed} ranks passed:\n{so}\n{se}"
    );
}

#[test]
fn handle_layer_at_thread_level_single() {
    for np in [1, 2, 5] {
        run(np, "single");
    }
}

#[test]
fn handle_layer_at_thread_level_multiple() {
    for np in [3, 4] {
        run(np, "multiple");
    }
}

#[test]
fn handle_layer_as_a_singleton_without_launcher() {
    let mut cmd = Command::new(PROG);
    cmd.args(["single", "singleton"]);
    oxmpi_tests::without_launcher(&mut cmd);
    let out = run_with_deadline(cmd, Duration::from_secs(60));
    let (so, se) = text(&out);
    assert!(out.status.success(), "singleton failed:\n{so}\n{se}");
    assert!(so.contains("rank 0 handle_layer passed"), "{so}\n{se}");
}
