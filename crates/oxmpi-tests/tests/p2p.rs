//! Point-to-point through oxrun: random traffic verified byte for byte on both rendezvous
//! paths (single copy and forced two-copy), error classes, and a rank dying mid-transfer.

use oxmpi_tests::{oxrun_job, text};

fn props(np: usize, seed: &str, msgs: &str, max: &str, env: &[(&str, &str)]) {
    let prog = env!("CARGO_BIN_EXE_p2p_props");
    let out = oxrun_job(np, std::path::Path::new(prog), &[seed, msgs, max], env);
    let (so, se) = text(&out);
    assert!(
        out.status.success(),
        "np {np} seed {seed} env {env:?}:\n{so}\n{se}"
    );
    let verified: usize = so
        .lines()
        .filter_map(|l| {
            l.split("verified ")
                .nth(1)?
                .split(' ')
                .next()?
                .parse::<usize>()
                .ok()
        })
        .sum();
    assert_eq!(verified, msgs.parse::<usize>().unwrap(), "{so}");
}

#[test]
fn random_traffic_single_copy_np2_to_6() {
    for np in 2..=6 {
        props(
            np,
            &format!("{}", 10 + np),
            "400",
            &format!("{}", 8 << 20),
            &[],
        );
    }
}

#[test]
fn random_traffic_forced_two_copy_np2_to_6() {
    for np in 2..=6 {
        props(
            np,
            &format!("{}", 20 + np),
            "400",
            &format!("{}", 8 << 20),
            &[("OXMPI_SINGLE_COPY", "0")],
        );
    }
}

#[test]
fn random_small_messages_with_tiny_rings_exercise_backpressure() {
    props(
        4,
        "77",
        "3000",
        "20000",
        &[
            ("OXMPI_SHM_FIFO_CELLS", "256"),
            ("OXMPI_SHM_POOL_BLOCKS", "2"),
            ("OXMPI_SHM_BLOCK_SIZE", "4096"),
        ],
    );
}
