//! `oxmpi-bench compare --quick` with oxmpi measured both ways: its native benchmarks and
//! bench/c/oxbench.c built with oxmpi's own `mpicc` against the build tree's libmpi_abi.so,
//! both under oxrun, with no peer. Checks that both produce rows and that the report sets the
//! C path beside the native one. No figure is looked at.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use oxmpi_bench::run::{self, CommandSpec};

#[test]
fn compare_quick_runs_oxbench_c_on_oxmpi_beside_the_native_rows() {
    let target = PathBuf::from(env!("CARGO_BIN_EXE_oxmpi-bench"));
    let release = target.parent().expect("release dir");
    // `cargo test` compiles the C ABI library for its own tests but does not refresh
    // target/release/libmpi_abi.so, which oxmpi-c links; a build does (quick when it is fresh).
    let build = Command::new(env!("CARGO"))
        .args(["build", "--release", "-p", "oxmpi-capi", "--lib"])
        .output()
        .expect("run cargo build");
    assert!(
        build.status.success(),
        "cargo build -p oxmpi-capi failed: {}",
        String::from_utf8_lossy(&build.stderr)
    );
    assert!(
        release.join("oxrun").is_file(),
        "{} not found: run `cargo test --workspace`",
        release.join("oxrun").display()
    );

    let out_dir = std::env::temp_dir().join(format!("oxmpi-bench-c-{}", std::process::id()));
    let spec = CommandSpec::new([
        target.as_os_str(),
        "compare".as_ref(),
        "--quick".as_ref(),
        "--peers".as_ref(),
        "none".as_ref(),
        "--benchmarks".as_ref(),
        "latency,msgrate".as_ref(),
        "--repeats".as_ref(),
        "2".as_ref(),
        "--iters".as_ref(),
        "20".as_ref(),
        "--warmup".as_ref(),
        "2".as_ref(),
        "--max-size".as_ref(),
        "64".as_ref(),
        "--timeout".as_ref(),
        "60".as_ref(),
        "--out".as_ref(),
        out_dir.as_os_str(),
    ]);
    let limit = Duration::from_secs(300);
    let out = run::run(&spec, limit).expect("spawn oxmpi-bench compare");
    run::judge(&out, limit).unwrap_or_else(|e| panic!("{e}\nstderr:\n{}", out.stderr));

    let csv = std::fs::read_to_string(out_dir.join("results.csv")).expect("results.csv");
    // Sizes 0, 1, 2, ..., 64: eight rows per repeat, two repeats, for each implementation.
    for imp in ["oxmpi", "oxmpi-c"] {
        let latency = csv
            .lines()
            .filter(|r| r.starts_with(&format!("{imp},latency,2,false,")))
            .count();
        assert_eq!(latency, 2 * 8, "{imp} latency rows:\n{csv}");
        assert!(
            csv.lines()
                .any(|r| r.starts_with(&format!("{imp},msgrate,2,false,1,8,"))),
            "{imp} msgrate rows:\n{csv}"
        );
    }
    let report = std::fs::read_to_string(out_dir.join("report.md")).expect("report.md");
    assert!(
        report.contains("| oxmpi-c | oxmpi through its C ABI"),
        "{report}"
    );
    let (_, section) = report
        .split_once("## The C ABI against the native path, np=2")
        .unwrap_or_else(|| panic!("no C path section:\n{report}"));
    for row in ["| latency 0 (", "| latency 8 (", "| msgrate 8 ("] {
        assert!(
            section.lines().any(|l| l.starts_with(row)),
            "{row}:\n{report}"
        );
    }
    assert!(!report.contains("## Failures"), "{report}");
    let _ = std::fs::remove_dir_all(&out_dir);
}
