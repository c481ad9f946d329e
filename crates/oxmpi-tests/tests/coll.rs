//! Collectives and communicators through oxrun: every collective against serial references at
//! np 1–8 and on odd-sized sub-communicators, 1 MiB vectors, the node-aware paths (hosts
//! faked with `OXMPI_HOST_OVERRIDE`), the long-message algorithms forced at small sizes,
//! reduction operations, communicator management, nonblocking overlap, error classes, and user
//! code (reduction closures, attribute drops) that calls MPI.

use std::path::Path;

use oxmpi_tests::{oxrun_job, text};

/// Runs `prog` at `np` ranks and checks that it succeeded and that every rank printed its
/// `passed` line.
fn run(prog: &str, np: usize, args: &[&str], env: &[(&str, &str)]) {
    let out = oxrun_job(np, Path::new(prog), args, env);
    let (so, se) = text(&out);
    assert!(
        out.status.success(),
        "{prog} np {np} args {args:?} env {env:?} failed:\n{so}\n{se}"
    );
    let passed = so.lines().filter(|l| l.contains(" passed")).count();
    assert_eq!(
        passed, np,
        "{prog} np {np}: {passed} ranks reported success:\n{so}\n{se}"
    );
}

const CHECK: &str = env!("CARGO_BIN_EXE_coll_check");
const OPS: &str = env!("CARGO_BIN_EXE_coll_ops");
const COMM: &str = env!("CARGO_BIN_EXE_coll_comm");
const OVERLAP: &str = env!("CARGO_BIN_EXE_coll_overlap");
const ERRORS: &str = env!("CARGO_BIN_EXE_coll_errors");
const REENTRY: &str = env!("CARGO_BIN_EXE_coll_reentry");

#[test]
fn every_collective_matches_serial_references_np1_to_8() {
    for np in 1..=8 {
        run(CHECK, np, &["small"], &[]);
    }
}

#[test]
fn one_mebibyte_vectors_on_both_rendezvous_paths() {
    run(CHECK, 3, &["large"], &[]);
    run(CHECK, 8, &["large"], &[]);
    run(CHECK, 4, &["large"], &[("OXMPI_SINGLE_COPY", "0")]);
}

#[test]
fn node_aware_paths_with_forced_host_grouping() {
    run(CHECK, 4, &["small"], &[("OXMPI_HOST_OVERRIDE", "0,0,1,1")]);
    run(
        CHECK,
        7,
        &["small"],
        &[("OXMPI_HOST_OVERRIDE", "0,0,1,1,1,2,0")],
    );
    run(
        CHECK,
        8,
        &["large"],
        &[("OXMPI_HOST_OVERRIDE", "0,1,0,1,2,2,2,0")],
    );
    run(OPS, 6, &[], &[("OXMPI_HOST_OVERRIDE", "1,1,0,0,0,1")]);
}

#[test]
fn long_message_algorithms_forced_at_small_sizes() {
    let long = [
        ("OXMPI_COLL_BCAST_LONG", "64"),
        ("OXMPI_COLL_BCAST_LONG_OVERSUBSCRIBED", "64"),
        ("OXMPI_COLL_ALLREDUCE_LONG", "64"),
        ("OXMPI_COLL_GATHER_LONG", "64"),
        ("OXMPI_COLL_ALLGATHER_LONG", "64"),
        ("OXMPI_COLL_ALLGATHER_BRUCK", "0"),
        ("OXMPI_COLL_ALLTOALL_BRUCK", "0"),
        ("OXMPI_COLL_ALLTOALL_PAIRWISE", "1"),
        ("OXMPI_COLL_ALLTOALL_PAIRWISE_OVERSUBSCRIBED", "1"),
        ("OXMPI_COLL_REDUCE_SCATTER_LONG", "1"),
    ];
    for np in [4, 5, 6] {
        run(CHECK, np, &["small"], &long);
    }
    // Bruck everywhere (alltoall and allgather), and flat algorithms despite several hosts.
    let bruck = [
        ("OXMPI_COLL_ALLTOALL_BRUCK", "1M"),
        ("OXMPI_COLL_ALLGATHER_BRUCK", "1M"),
        ("OXMPI_COLL_ALLGATHER_LONG", "0"),
    ];
    run(CHECK, 8, &["small"], &bruck);
    run(
        CHECK,
        6,
        &["small"],
        &[
            ("OXMPI_HOST_OVERRIDE", "0,0,0,1,1,1"),
            ("OXMPI_COLL_HIERARCHICAL", "0"),
        ],
    );
}

#[test]
fn reduction_operations_user_ops_and_bit_identical_results() {
    for np in [1, 2, 3, 5, 8] {
        run(OPS, np, &[], &[]);
    }
}

#[test]
fn communicators_groups_attributes_and_intercommunicators() {
    for np in [1, 2, 3, 4, 5, 7] {
        run(COMM, np, &[], &[]);
    }
}

#[test]
fn nonblocking_collectives_overlap_point_to_point_and_each_other() {
    for np in [1, 2, 3, 4, 8] {
        run(OVERLAP, np, &["40"], &[]);
    }
    run(
        OVERLAP,
        5,
        &["20"],
        &[
            ("OXMPI_HOST_OVERRIDE", "0,1,0,1,0"),
            ("OXMPI_EAGER_LIMIT", "512"),
        ],
    );
}

/// User reductions and drops (of a captured value, of an attribute) that call MPI must not
/// run inside the engine: they deadlocked at MULTIPLE and aliased it at SINGLE. Also reduces
/// from `static` (read-only) send buffers. More ranks than cores at np 5.
#[test]
fn user_code_calling_mpi_from_reductions_and_drops() {
    for np in [1, 2, 3, 5] {
        run(REENTRY, np, &["single"], &[]);
        run(REENTRY, np, &["multiple"], &[]);
    }
    run(
        REENTRY,
        4,
        &["single"],
        &[
            ("OXMPI_HOST_OVERRIDE", "0,0,1,1"),
            ("OXMPI_EAGER_LIMIT", "512"),
        ],
    );
    // Long-message algorithms (Rabenseifner allreduce reads the static input) at every size.
    run(
        REENTRY,
        6,
        &["multiple"],
        &[
            ("OXMPI_COLL_ALLREDUCE_LONG", "64"),
            ("OXMPI_COLL_REDUCE_SCATTER_LONG", "1"),
        ],
    );
}

#[test]
fn bad_arguments_return_error_classes() {
    for np in [1, 2, 3, 4, 5] {
        run(ERRORS, np, &[], &[]);
    }
}

const PERSISTENT: &str = env!("CARGO_BIN_EXE_coll_persistent");
const PERSIST_ALLOC: &str = env!("CARGO_BIN_EXE_coll_persist_alloc");

/// Restarts allocate nothing (see the program's doc): np 1–6 on one host (shared-memory
/// channels, single copies, message programs past the channels' sizes), and at np 4 with
/// hosts faked apart two ways (node-aware and flat message programs).
#[test]
fn persistent_collective_restarts_allocate_nothing_np1_to_6() {
    for np in 1..=6 {
        run(PERSIST_ALLOC, np, &["20"], &[]);
    }
    for hosts in ["0,0,1,1", "0,1,0,1"] {
        run(PERSIST_ALLOC, 4, &["20"], &[("OXMPI_HOST_OVERRIDE", hosts)]);
    }
}

#[test]
fn persistent_collectives_restarted_with_changing_contents_np1_to_6() {
    for np in 1..=6 {
        run(PERSISTENT, np, &["20"], &[]);
    }
    run(PERSISTENT, 4, &["5"], &[("OXMPI_HOST_OVERRIDE", "0,0,1,1")]);
    let long = [
        ("OXMPI_COLL_ALLREDUCE_LONG", "64"),
        ("OXMPI_COLL_BCAST_LONG", "64"),
        ("OXMPI_COLL_BCAST_LONG_OVERSUBSCRIBED", "64"),
        ("OXMPI_COLL_ALLTOALL_PAIRWISE", "1"),
        ("OXMPI_COLL_ALLTOALL_PAIRWISE_OVERSUBSCRIBED", "1"),
        ("OXMPI_COLL_REDUCE_SCATTER_LONG", "1"),
    ];
    run(PERSISTENT, 5, &["5"], &long);
}
