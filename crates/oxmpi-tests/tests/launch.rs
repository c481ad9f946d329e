//! Start-up under each launcher: oxrun at several sizes, Hydra (MPICH's mpiexec), singleton.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use oxmpi_tests::{example, oxrun_job, run_with_deadline, text};

fn check_hello(stdout: &str, np: usize) {
    let mut ranks: Vec<usize> = stdout
        .lines()
        .filter_map(|l| {
            let rest = l.strip_prefix("rank ")?;
            let (r, rest) = rest.split_once(" of ")?;
            let (n, host) = rest.split_once(" on ")?;
            assert_eq!(n.parse::<usize>().ok(), Some(np), "line {l:?}");
            assert!(!host.is_empty());
            r.parse().ok()
        })
        .collect();
    ranks.sort_unstable();
    assert_eq!(ranks, (0..np).collect::<Vec<_>>(), "output:\n{stdout}");
}

#[test]
fn hello_under_oxrun_at_1_2_4_8_16_ranks() {
    for np in [1, 2, 4, 8, 16] {
        let out = oxrun_job(np, &example("hello"), &[], &[]);
        let (so, se) = text(&out);
        assert!(out.status.success(), "np {np}: {se}");
        check_hello(&so, np);
    }
}

#[test]
fn ring_passes_a_token_through_every_rank() {
    for np in [1, 3, 8] {
        let out = oxrun_job(np, &example("ring"), &[], &[]);
        let (so, se) = text(&out);
        assert!(out.status.success(), "np {np}: {se}");
        let expected: usize = (0..np).sum();
        assert!(
            so.contains(&format!(
                "token came back as {expected} (expected {expected}) OK"
            )),
            "{so}"
        );
    }
}

#[test]
fn singleton_runs_without_a_launcher() {
    let mut cmd = Command::new(example("hello"));
    oxmpi_tests::without_launcher(&mut cmd);
    let out = run_with_deadline(cmd, Duration::from_secs(30));
    let (so, se) = text(&out);
    assert!(out.status.success(), "{se}");
    check_hello(&so, 1);
}

#[test]
fn inconsistent_launcher_environment_is_a_clear_error() {
    let mut cmd = Command::new(example("hello"));
    cmd.env("PMI_FD", "99")
        .env_remove("PMI_RANK")
        .env("PMI_SIZE", "2");
    let out = run_with_deadline(cmd, Duration::from_secs(30));
    let (_, se) = text(&out);
    assert!(!out.status.success());
    assert!(se.contains("PMI_RANK"), "{se}");
}

/// MPICH's Hydra `mpiexec`, installed from PyPI by the project's script when absent.
fn hydra() -> PathBuf {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let dir = std::env::var("OXMPI_PEERS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|_| {
            PathBuf::from(std::env::var("HOME").unwrap_or_else(|_| "/root".into()))
                .join(".cache/oxmpi/peers")
        });
    let mpiexec = dir.join("mpich/bin/mpiexec");
    if !mpiexec.exists() {
        let st = Command::new("bash")
            .arg(root.join("scripts/install-peers.sh"))
            .arg(&dir)
            .status()
            .expect("run scripts/install-peers.sh");
        assert!(st.success(), "installing MPICH from PyPI failed");
    }
    assert!(
        mpiexec.exists(),
        "{} missing after install",
        mpiexec.display()
    );
    mpiexec
}

#[test]
fn hello_and_ring_under_mpich_hydra() {
    let mpiexec = hydra();
    for np in [2, 4] {
        for prog in ["hello", "ring"] {
            let mut cmd = Command::new(&mpiexec);
            cmd.args(["-n", &np.to_string()]).arg(example(prog));
            let out = run_with_deadline(cmd, Duration::from_secs(120));
            let (so, se) = text(&out);
            assert!(out.status.success(), "hydra np {np} {prog}: {se}");
            if prog == "hello" {
                check_hello(&so, np);
            } else {
                assert!(so.contains("OK"), "{so}");
            }
        }
    }
}
