//! One-sided communication through oxrun: `rma_check` at np 1–4 (every window flavor ×
//! synchronization mode × operation, contended counters, shared and dynamic windows, error
//! classes), `rma_views` at np 2–4 (the Rust API's datatype and request forms against a serial
//! model, and their bad inputs), and windows spanning hosts faked by `OXMPI_HOST_OVERRIDE`
//! (active messages between the fake hosts; `multihost_rma` runs the same across namespace
//! hosts): `rma_check multihost` at 2 hosts × 2 ranks and 3 × 1, and `rma_busy` (a target
//! computing outside MPI, answered by `OXMPI_RMA_PROGRESS_THREAD`).

use std::path::Path;

use oxmpi_tests::{oxrun_job, text};

const CHECK: &str = env!("CARGO_BIN_EXE_rma_check");
const VIEWS: &str = env!("CARGO_BIN_EXE_rma_views");
const BUSY: &str = env!("CARGO_BIN_EXE_rma_busy");

fn run(np: usize, args: &[&str], env: &[(&str, &str)]) {
    run_prog(CHECK, np, args, env);
}

fn run_prog(prog: &str, np: usize, args: &[&str], env: &[(&str, &str)]) {
    let out = oxrun_job(np, Path::new(prog), args, env);
    let (so, se) = text(&out);
    assert!(
        out.status.success(),
        "{prog} np {np} {args:?} {env:?} failed:\n{so}\n{se}"
    );
    let passed = so.lines().filter(|l| l.contains(" passed")).count();
    assert_eq!(passed, np, "np {np}: {passed} ranks passed:\n{so}\n{se}");
}

#[test]
fn windows_operations_and_epochs_np1_to_4() {
    for np in 1..=4 {
        run(np, &[], &[]);
    }
}

#[test]
fn datatypes_and_requests_in_the_rust_api_np2_to_4() {
    for np in 2..=4 {
        run_prog(VIEWS, np, &[], &[]);
    }
}

#[test]
fn windows_across_faked_hosts_2x2_and_3x1() {
    run(4, &["multihost"], &[("OXMPI_HOST_OVERRIDE", "0,0,1,1")]);
    run(3, &["multihost"], &[("OXMPI_HOST_OVERRIDE", "0,1,2")]);
}

#[test]
fn a_computing_target_answers_through_the_progress_thread() {
    run_prog(
        BUSY,
        4,
        &[],
        &[
            ("OXMPI_HOST_OVERRIDE", "0,0,1,1"),
            ("OXMPI_RMA_PROGRESS_THREAD", "1"),
        ],
    );
}
