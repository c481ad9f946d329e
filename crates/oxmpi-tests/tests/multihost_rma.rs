//! One-sided communication between real (namespace) hosts (`xtask::netns`, the head oxrun
//! in h3 starting agents with `--launcher 'ip netns exec {host}'`): windows whose members
//! span hosts reach the targets elsewhere by active messages over TCP and those on their
//! own host through the host's window segment. `rma_check multihost` (every flavor but the
//! shared one × every synchronization mode × operation, checked against expected memory;
//! contended fetch_and_op and CAS counters from every rank to one location; dynamic
//! windows; transfers of several message chunks) at 2 hosts × 2 ranks and 3 × 1, and
//! `rma_busy` (a target computing outside MPI, answered by `OXMPI_RMA_PROGRESS_THREAD=1`)
//! at 2 × 2. The C ABI's window calls sit on the same core: `rma_ddt.c` runs at 2 × 2.
//!
//! Without root or `ip`, each test prints one skip line and passes.

use oxmpi_tests::text;
use xtask::netns::TestHosts;

mod common;
use common::netns::run;

fn hosts() -> Option<TestHosts> {
    common::netns::hosts("multihost_rma")
}

/// Runs `prog` and checks that every rank passed and that TCP carried traffic.
fn passes(h: &TestHosts, spec: &str, np: usize, prog: &str, args: &[&str], env: &[(&str, &str)]) {
    let out = run(h, spec, np, prog, args, env);
    let (so, se) = text(&out);
    assert!(
        out.status.success(),
        "{prog} {args:?} on {spec}:\n{so}\n{se}"
    );
    let passed = so.lines().filter(|l| l.contains(" passed")).count();
    assert_eq!(
        passed, np,
        "{prog} on {spec}: {passed} ranks passed:\n{so}\n{se}"
    );
    assert!(
        se.contains(": TCP route to rank "),
        "{prog} on {spec}: no TCP route logged:\n{se}"
    );
}

#[test]
fn windows_on_two_hosts_by_two_ranks() {
    let Some(h) = hosts() else { return };
    let spec = format!("{}:2,{}:2", h.name(1), h.name(2));
    passes(
        &h,
        &spec,
        4,
        env!("CARGO_BIN_EXE_rma_check"),
        &["multihost"],
        &[],
    );
}

#[test]
fn windows_on_three_hosts_by_one_rank() {
    let Some(h) = hosts() else { return };
    let spec = format!("{}:1,{}:1,{}:1", h.name(1), h.name(2), h.name(3));
    passes(
        &h,
        &spec,
        3,
        env!("CARGO_BIN_EXE_rma_check"),
        &["multihost"],
        &[],
    );
}

#[test]
fn a_computing_target_answers_through_the_progress_thread_across_hosts() {
    let Some(h) = hosts() else { return };
    let spec = format!("{}:2,{}:2", h.name(1), h.name(2));
    passes(
        &h,
        &spec,
        4,
        env!("CARGO_BIN_EXE_rma_busy"),
        &[],
        &[("OXMPI_RMA_PROGRESS_THREAD", "1")],
    );
}
