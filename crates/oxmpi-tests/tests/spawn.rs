//! Dynamic processes through oxrun: `Communicator::spawn` of 1-3 children from 1 and 2
//! parents (p2p both ways at eager and rendezvous sizes, intercommunicator broadcast and
//! allreduce, a merge with collectives and a ring over the merged communicator), over shared
//! memory plus TCP between the jobs and with TCP everywhere, and the refusals of a missing
//! program and of a command without processes (`spawn_check`).

use oxmpi_tests::{oxrun_job, text};

fn spawn_check(np: usize, children: usize, env: &[(&str, &str)]) {
    spawn_check_args(np, children, &[], env);
}

/// Runs `spawn_check` and checks every process's OK line; its stdout.
fn spawn_check_args(np: usize, children: usize, more: &[&str], env: &[(&str, &str)]) -> String {
    let prog = env!("CARGO_BIN_EXE_spawn_check");
    let n = children.to_string();
    let mut args = vec![n.as_str()];
    args.extend_from_slice(more);
    let out = oxrun_job(np, std::path::Path::new(prog), &args, env);
    let (so, se) = text(&out);
    let ctx = format!("np {np} children {children} env {env:?}:\n{so}\n{se}");
    assert!(out.status.success(), "{ctx}");
    for p in 0..np {
        assert!(
            so.contains(&format!("spawn_check parent {p} of {np} OK")),
            "{ctx}"
        );
    }
    for c in 0..children {
        assert!(
            so.contains(&format!("spawn_check child {c} of {children} OK")),
            "{ctx}"
        );
    }
    // Jobs that end apart close their connections to each other without a fault.
    assert!(
        !se.contains("lost rank") && !se.contains("refused"),
        "{ctx}"
    );
    so
}

#[test]
fn one_parent_spawns_one_to_three_children() {
    for children in 1..=3 {
        spawn_check(1, children, &[]);
    }
}

#[test]
fn two_parents_spawn_one_to_three_children() {
    for children in 1..=3 {
        spawn_check(2, children, &[]);
    }
}

#[test]
fn spawned_jobs_work_when_every_pair_uses_tcp() {
    spawn_check(2, 2, &[("OXMPI_TRANSPORT", "tcp")]);
}

#[test]
fn a_spawned_job_spawns_in_turn() {
    let so = spawn_check_args(1, 2, &["nested"], &[]);
    assert!(so.contains("spawn_check grandchild 0 of 1 OK"), "{so}");
}
