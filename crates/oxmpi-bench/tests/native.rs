//! oxmpi's native benchmarks under oxrun: every benchmark runs with tiny iteration counts,
//! verifies its data and prints complete, well-formed output in the suite's format. No test
//! looks at the figures.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use oxmpi_bench::parse::parse_osu;
use oxmpi_bench::suite::{BenchOptions, Benchmark};

fn oxrun() -> PathBuf {
    let exe = PathBuf::from(env!("CARGO_BIN_EXE_oxmpi-bench"));
    let p = exe.parent().expect("target dir").join("oxrun");
    assert!(
        p.exists(),
        "{} not found: run `cargo test --workspace`",
        p.display()
    );
    p
}

/// Runs `oxrun -n np oxmpi-bench ARGS` with a deadline; returns (success, stdout, stderr).
fn run(np: u32, args: &[&str]) -> (bool, String, String) {
    let mut child = Command::new(oxrun())
        .args(["--timeout", "100", "-n", &np.to_string()])
        .arg(env!("CARGO_BIN_EXE_oxmpi-bench"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn oxrun");
    let start = Instant::now();
    loop {
        if child.try_wait().expect("wait").is_some() {
            break;
        }
        if start.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            panic!("oxmpi-bench {args:?} did not finish");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().expect("output");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn check(benchmark: Benchmark, np: u32, extra: &[&str]) {
    let opts = BenchOptions {
        max: Some(8192),
        iters: Some(3),
        warmup: Some(1),
        window: Some(4),
        min: None,
    };
    let mut args = vec![benchmark.name().to_string()];
    args.extend(opts.to_args());
    args.extend(extra.iter().map(|s| s.to_string()));
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let (ok, so, se) = run(np, &argv);
    assert!(ok, "{argv:?} failed:\n{so}\n{se}");
    let parsed = parse_osu(&so).unwrap_or_else(|e| panic!("{argv:?}: {e:?}\n{so}"));
    assert_eq!(parsed.benchmark.as_deref(), Some(benchmark.name()), "{so}");
    assert_eq!(parsed.np, Some(np));
    let sizes: Vec<u64> = parsed.rows.iter().map(|r| r.0).collect();
    assert_eq!(sizes, opts.sizes(benchmark), "{so}");
    assert!(
        parsed.rows.iter().all(|r| r.1.is_finite() && r.1 >= 0.0),
        "{so}"
    );
}

#[test]
fn point_to_point_benchmarks_run_and_verify() {
    for b in [
        Benchmark::Latency,
        Benchmark::Bw,
        Benchmark::Bibw,
        Benchmark::Msgrate,
    ] {
        check(b, 2, &[]);
    }
    check(Benchmark::Bw, 2, &["--alloc-mem"]);
    for b in [Benchmark::MultiBw, Benchmark::MultiLat, Benchmark::Msgrate] {
        check(b, 4, &[]);
    }
}

#[test]
fn collective_benchmarks_run_and_verify() {
    for b in [
        Benchmark::Barrier,
        Benchmark::Bcast,
        Benchmark::Reduce,
        Benchmark::Allreduce,
        Benchmark::Gather,
        Benchmark::Scatter,
        Benchmark::Allgather,
        Benchmark::Alltoall,
    ] {
        check(b, 3, &[]);
    }
}

#[test]
fn datatype_benchmarks_run_and_verify() {
    for b in Benchmark::ALL.into_iter().filter(|b| b.is_ddt()) {
        check(b, 2, &[]);
    }
    let (ok, _, se) = run(3, &["ddt-vector", "--iters", "1"]);
    assert!(!ok && se.contains("exactly 2 ranks"), "{se}");
    let (ok, _, se) = run(2, &["ddt-struct", "--min", "1000", "--max", "1000"]);
    assert!(!ok && se.contains("multiples of 16"), "{se}");
}

#[test]
fn one_sided_benchmarks_run_and_verify() {
    for b in [
        Benchmark::PutLatency,
        Benchmark::GetLatency,
        Benchmark::PutBw,
        Benchmark::GetBw,
        Benchmark::AccLatency,
        Benchmark::FopCounter,
    ] {
        check(b, 2, &[]);
    }
    check(Benchmark::FopCounter, 3, &[]);
    let (ok, _, se) = run(3, &["put_latency", "--iters", "1"]);
    assert!(!ok && se.contains("exactly 2 ranks"), "{se}");
}

#[test]
fn init_reports_memory_per_rank() {
    let (ok, so, se) = run(2, &["init", "--report-mem"]);
    assert!(ok, "{so}\n{se}");
    for m in oxmpi_bench::suite::MEM_METRICS {
        let v: f64 = so
            .lines()
            .find_map(|l| l.strip_prefix(m)?.trim().parse().ok())
            .unwrap_or_else(|| panic!("{m} missing: {so}"));
        assert!(v >= 0.0, "{m} = {v}");
    }
}

#[test]
fn wrong_rank_counts_and_bad_options_are_refused() {
    let (ok, _, se) = run(3, &["bw", "--iters", "1"]);
    assert!(!ok && se.contains("exactly 2 ranks"), "{se}");
    let (ok, _, se) = run(1, &["latency", "--max", "lots"]);
    assert!(!ok && se.contains("lots"), "{se}");
}
