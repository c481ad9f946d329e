//! Process topologies and neighbourhood collectives through oxrun: `topo_check` at np 1–6
//! (more ranks than cores is fine), Cartesian grids of 1 to 3 dimensions, graphs and
//! distributed graphs, every neighbourhood collective against serial references, bad inputs,
//! and host-aware reordering with hosts faked by `OXMPI_HOST_OVERRIDE`.

use std::path::Path;

use oxmpi_tests::{oxrun_job, text};

const CHECK: &str = env!("CARGO_BIN_EXE_topo_check");

/// Runs `topo_check` at `np` ranks and checks that it succeeded and that every rank printed
/// its `passed` line.
fn run(np: usize, env: &[(&str, &str)]) {
    let out = oxrun_job(np, Path::new(CHECK), &[], env);
    let (so, se) = text(&out);
    assert!(
        out.status.success(),
        "topo_check np {np} env {env:?} failed:\n{so}\n{se}"
    );
    let passed = so.lines().filter(|l| l.contains(" passed")).count();
    assert_eq!(
        passed, np,
        "np {np}: {passed} ranks reported success:\n{so}\n{se}"
    );
}

#[test]
fn topologies_and_neighbor_collectives_np1_to_6() {
    for np in 1..=6 {
        run(np, &[]);
    }
}

#[test]
fn reordered_grids_keep_neighbours_on_one_host() {
    run(4, &[("OXMPI_HOST_OVERRIDE", "0,1,0,1")]);
    run(5, &[("OXMPI_HOST_OVERRIDE", "0,1,0,1,2")]);
}
