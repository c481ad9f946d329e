//! Shared-memory collectives on communicators other than the world, through oxrun (each job
//! bounded by oxrun's timeout and the harness deadline): every shared-memory collective on
//! dup'd, split, split-type and Cartesian communicators at np 1–6 against serial references,
//! interleaved use of two communicators, communicators created and freed in a loop, more
//! live communicators than channels, and hosts faked apart (channels only within a host).
//! The channels live in each rank's existing segment, so they add no files to /dev/shm.

use std::path::Path;

use oxmpi_tests::{oxrun_job, text};

const PROG: &str = env!("CARGO_BIN_EXE_coll_shm");

fn run(np: usize, mode: &str, env: &[(&str, &str)]) {
    let out = oxrun_job(np, Path::new(PROG), &[mode], env);
    let (so, se) = text(&out);
    assert!(
        out.status.success(),
        "coll_shm np {np} {mode} env {env:?} failed:\n{so}\n{se}"
    );
    let passed = so.lines().filter(|l| l.contains(" passed")).count();
    assert_eq!(passed, np, "np {np}: {passed} ranks passed:\n{so}\n{se}");
}

#[test]
fn shm_collectives_on_derived_communicators_np1_to_6() {
    for np in 1..=6 {
        run(np, "expect", &[]);
    }
}

/// The same with every rank waiting for all in small bcast/reduce (the early leavers of
/// `OXMPI_COLL_SHM_ROOTED_EARLY` off), and with single copies off.
#[test]
fn shm_collectives_with_rooted_early_off_and_single_copy_off() {
    for np in [2, 3, 5] {
        run(np, "expect", &[("OXMPI_COLL_SHM_ROOTED_EARLY", "0")]);
    }
    run(4, "expect", &[("OXMPI_SINGLE_COPY", "0")]);
}

#[test]
fn shm_collectives_with_hosts_faked_apart() {
    run(4, "any", &[("OXMPI_HOST_OVERRIDE", "0,0,1,1")]);
    run(5, "any", &[("OXMPI_HOST_OVERRIDE", "0,1,0,1,0")]);
}

/// The node-aware collectives' intra-host stages on host sub-communicators (hosts faked
/// apart: 2×2, 2×3, 3×1, uneven), checked against serial references by the same program,
/// which also checks that each communicator spanning hosts split off its host communicator
/// with a channel; then 2×3 with every single-copy crossover at 1 byte, with single copies off,
/// and with the host stage off (the message program).
#[test]
fn node_aware_intra_host_stages_through_host_communicators() {
    for hosts in ["0,0,1,1", "0,1,2", "1,0,0"] {
        let np = hosts.split(',').count();
        run(np, "any", &[("OXMPI_HOST_OVERRIDE", hosts)]);
    }
    let forced = [
        ("OXMPI_HOST_OVERRIDE", "0,0,0,1,1,1"),
        ("OXMPI_COLL_SHM_ALLREDUCE_LONG", "1"),
        ("OXMPI_COLL_SHM_ALLREDUCE_LONG_OVERSUBSCRIBED", "1"),
        ("OXMPI_COLL_SHM_REDUCE_LONG", "1"),
        ("OXMPI_COLL_SHM_BCAST_LONG", "1"),
        ("OXMPI_COLL_SHM_BCAST_LONG_PAIR", "1"),
        ("OXMPI_COLL_SHM_BCAST_LONG_OVERSUBSCRIBED", "1"),
        ("OXMPI_COLL_HIER_BCAST_LONG", "1"),
    ];
    run(6, "any", &forced);
    run(
        4,
        "any",
        &[
            ("OXMPI_HOST_OVERRIDE", "0,0,1,1"),
            ("OXMPI_SINGLE_COPY", "0"),
        ],
    );
    run(
        4,
        "any",
        &[
            ("OXMPI_HOST_OVERRIDE", "0,1,1,0"),
            ("OXMPI_COLL_HIER_SHM", "0"),
        ],
    );
}

#[test]
fn large_shm_paths_forced_at_every_size_and_switched_off() {
    // Every size past the slots through single copies (crossovers at 1 byte), then single
    // copies off: every member must fall back to messages together.
    let low = [
        ("OXMPI_COLL_SHM_ALLREDUCE_LONG", "1"),
        ("OXMPI_COLL_SHM_ALLREDUCE_LONG_OVERSUBSCRIBED", "1"),
        ("OXMPI_COLL_SHM_REDUCE_LONG", "1"),
        ("OXMPI_COLL_SHM_BCAST_LONG", "1"),
        ("OXMPI_COLL_SHM_BCAST_LONG_PAIR", "1"),
        ("OXMPI_COLL_SHM_BCAST_LONG_OVERSUBSCRIBED", "1"),
        ("OXMPI_COLL_SHM_ALLGATHER_LONG", "1"),
        ("OXMPI_COLL_SHM_ALLGATHER_LONG_OVERSUBSCRIBED", "1"),
        ("OXMPI_COLL_SHM_GATHER_LONG", "1"),
        ("OXMPI_COLL_SHM_ALLTOALL_LONG", "1"),
    ];
    // np 2 and 3 split each broadcast between the root's writes and the receivers' reads
    // (the default up to 4 ranks), np 3 does not with splitting off, np 5 does with the
    // limit raised.
    for np in [2, 3] {
        run(np, "expect", &low);
    }
    let no_split = [("OXMPI_COLL_SHM_BCAST_SPLIT", "0")];
    run(3, "expect", &[&low[..], &no_split[..]].concat());
    let split = [("OXMPI_COLL_SHM_BCAST_SPLIT", "8")];
    run(5, "expect", &[&low[..], &split[..]].concat());
    run(3, "expect", &[("OXMPI_SINGLE_COPY", "0")]);
}

const PERSIST: &str = env!("CARGO_BIN_EXE_coll_persist_shm");

fn run_persist(np: usize, mode: &str, env: &[(&str, &str)]) {
    let out = oxrun_job(np, Path::new(PERSIST), &[mode, "12"], env);
    let (so, se) = text(&out);
    assert!(
        out.status.success(),
        "coll_persist_shm np {np} {mode} env {env:?} failed:\n{so}\n{se}"
    );
    let passed = so.lines().filter(|l| l.contains(" passed")).count();
    assert_eq!(passed, np, "np {np}: {passed} ranks passed:\n{so}\n{se}");
}

/// Persistent collectives on channels of their own (see the program's doc): np 1–6, with
/// early leavers off, and with hosts faked apart (message programs across hosts).
#[test]
fn persistent_collectives_on_shm_channels_np1_to_6() {
    for np in 1..=6 {
        run_persist(np, "expect", &[]);
    }
    run_persist(3, "expect", &[("OXMPI_COLL_SHM_ROOTED_EARLY", "0")]);
    run_persist(4, "any", &[("OXMPI_HOST_OVERRIDE", "0,0,1,1")]);
    // The single-copy crossovers below the largest counts, so that persistent bcasts,
    // reduces and allreduces copy between the members' buffers too.
    let low = [
        ("OXMPI_COLL_SHM_BCAST_LONG", "16k"),
        ("OXMPI_COLL_SHM_BCAST_LONG_PAIR", "16k"),
        ("OXMPI_COLL_SHM_BCAST_LONG_OVERSUBSCRIBED", "128k"),
        ("OXMPI_COLL_SHM_REDUCE_LONG", "256k"),
        ("OXMPI_COLL_SHM_ALLREDUCE_LONG", "16k"),
        ("OXMPI_COLL_SHM_ALLREDUCE_LONG_OVERSUBSCRIBED", "32k"),
    ];
    for np in [2, 3, 5] {
        run_persist(np, "expect", &low);
    }
}
