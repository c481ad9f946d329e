//! Integration tests against a real peer: builds `bench/c/oxbench.c` with MPICH (installing
//! it with `scripts/install-peers.sh` when absent), runs every benchmark with tiny iteration
//! counts and checks that each exits 0 and prints well-formed, complete output; checks that
//! wrong data is caught; and runs `oxmpi-bench compare` end to end. Every spawned process has a
//! time limit. No test looks at timing figures.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use oxmpi_bench::compare::{samples_from_output, Job};
use oxmpi_bench::impls::{Binding, Implementation};
use oxmpi_bench::peers::{self, Peer};
use oxmpi_bench::report::Key;
use oxmpi_bench::run::{self, CommandSpec};
use oxmpi_bench::suite::{BenchOptions, Benchmark};

const LIMIT: Duration = Duration::from_secs(120);

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("oxmpi-bench-it-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("create scratch dir");
    dir
}

/// MPICH's prefix, installed on first use.
fn mpich() -> &'static Path {
    static PREFIX: OnceLock<PathBuf> = OnceLock::new();
    PREFIX.get_or_init(|| {
        let dir = peers::default_peers_dir();
        let prefix = dir.join("mpich");
        if peers::prefix_is_complete(&prefix) {
            return prefix;
        }
        let script = peers::repo_root().join("scripts/install-peers.sh");
        let got = peers::install(&script, &dir, &[Peer::Mpich], Duration::from_secs(900))
            .unwrap_or_else(|e| panic!("installing MPICH failed: {e}"));
        got.into_iter().next().expect("one prefix").1
    })
}

/// The C suite built with MPICH.
fn suite() -> &'static Path {
    static EXE: OnceLock<PathBuf> = OnceLock::new();
    EXE.get_or_init(|| {
        let exe = scratch("build").join("oxbench-mpich");
        let source = peers::repo_root().join("bench/c/oxbench.c");
        peers::build_suite(mpich(), &source, &exe, LIMIT)
            .unwrap_or_else(|e| panic!("building oxbench.c failed: {e}"));
        exe
    })
}

fn implementation(program: &Path) -> Implementation {
    peers::implementation(Peer::Mpich, mpich(), program)
}

fn cores() -> u32 {
    std::thread::available_parallelism().map_or(1, |n| n.get() as u32)
}

fn tiny_job(benchmark: Benchmark, np: u32) -> Job {
    Job {
        benchmark,
        np,
        options: BenchOptions {
            min: None,
            max: if benchmark == Benchmark::Barrier {
                None
            } else {
                Some(4096)
            },
            iters: Some(3),
            warmup: Some(1),
            window: Some(4),
        },
        binding: Binding::for_ranks(np, cores()),
        repeats: 1,
    }
}

/// Runs one job and returns its outcome after checking the run was clean.
fn run_job(imp: &Implementation, job: &Job) -> run::RunOutcome {
    let spec = imp.command(
        job.np,
        job.binding,
        &job.benchmark.program_args(&job.options),
    );
    let out = run::run(&spec, LIMIT).expect("spawn");
    if let Err(why) = run::judge(&out, LIMIT) {
        panic!("{}: {why}\nstdout:\n{}", spec.display(), out.stdout);
    }
    out
}

#[test]
fn every_benchmark_runs_and_verifies_its_data_at_np2() {
    let imp = implementation(suite());
    for b in Benchmark::ALL {
        let job = tiny_job(b, 2);
        let out = run_job(&imp, &job);
        let samples = samples_from_output(&job, "mpich", 0, &out.stdout, out.wall)
            .unwrap_or_else(|e| panic!("{b}: {e}\n{}", out.stdout));
        match b {
            Benchmark::Startup => assert_eq!(samples.len(), 1),
            Benchmark::Mem => {
                assert_eq!(samples.len(), 4, "{samples:?}");
                let hwm = samples
                    .iter()
                    .find(|s| s.key == Key::Metric("vmhwm-max-kB".to_string()))
                    .expect("vmhwm-max-kB");
                assert!(hwm.value > 0.0, "{hwm:?}");
            }
            _ => assert_eq!(samples.len(), job.options.sizes(b).len(), "{b}"),
        }
    }
}

#[test]
fn pair_and_collective_benchmarks_run_with_four_ranks() {
    let imp = implementation(suite());
    for b in [
        Benchmark::Msgrate,
        Benchmark::MultiBw,
        Benchmark::MultiLat,
        Benchmark::Barrier,
        Benchmark::Reduce,
        Benchmark::Scatter,
        Benchmark::Allgather,
        Benchmark::Alltoall,
    ] {
        let mut job = tiny_job(b, 4);
        if b != Benchmark::Barrier {
            job.options.max = Some(256);
        }
        let out = run_job(&imp, &job);
        samples_from_output(&job, "mpich", 0, &out.stdout, out.wall)
            .unwrap_or_else(|e| panic!("{b} np=4: {e}\n{}", out.stdout));
    }
}

#[test]
fn wrong_data_is_caught() {
    // Build the suite with an interposer that corrupts received bytes.
    let exe = scratch("corrupt").join("oxbench-corrupt");
    let mpicc = mpich().join("bin/mpicc");
    let spec = CommandSpec::new([
        mpicc.as_os_str(),
        "-O2".as_ref(),
        "-o".as_ref(),
        exe.as_os_str(),
        peers::repo_root().join("bench/c/oxbench.c").as_os_str(),
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/corrupt_recv.c")
            .as_os_str(),
    ]);
    let out = run::run(&spec, LIMIT).expect("spawn mpicc");
    run::judge(&out, LIMIT).unwrap_or_else(|e| panic!("{}: {e}", spec.display()));
    let imp = implementation(&exe);
    for b in [Benchmark::Latency, Benchmark::Bcast, Benchmark::DdtVector] {
        let job = tiny_job(b, 2);
        let spec = imp.command(2, job.binding, &b.program_args(&job.options));
        let out = run::run(&spec, LIMIT).expect("spawn");
        let why = run::judge(&out, LIMIT).expect_err("corrupted data must fail the run");
        assert!(why.starts_with("wrong data:"), "{b}: {why}");
        assert!(why.contains("verification failed"), "{b}: {why}");
    }
}

/// Pids of live processes whose command line mentions `needle`.
fn processes_running(needle: &str) -> Vec<String> {
    std::fs::read_dir("/proc")
        .expect("/proc")
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().parse::<u32>().is_ok())
        .filter(|e| {
            std::fs::read(e.path().join("cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains(needle))
        })
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect()
}

#[test]
fn a_timed_out_job_leaves_no_process_behind() {
    // A private copy of the suite, so that other tests' jobs are not mistaken for leftovers.
    let exe = scratch("timeout").join("oxbench-timeout");
    std::fs::copy(suite(), &exe).expect("copy suite");
    let imp = implementation(&exe);
    // Full OSU iteration counts up to 4 MiB take seconds; stop it after one.
    let spec = imp.command(2, Binding::for_ranks(2, cores()), &["latency".to_string()]);
    let limit = Duration::from_secs(1);
    let out = run::run(&spec, limit).expect("spawn");
    assert!(out.timed_out, "expected the run to be stopped");
    assert!(run::judge(&out, limit)
        .unwrap_err()
        .starts_with("timed out"));
    std::thread::sleep(Duration::from_millis(500));
    let left = processes_running(&exe.to_string_lossy());
    assert!(left.is_empty(), "processes left behind: {left:?}");
}

#[test]
fn bad_arguments_are_refused_with_a_message() {
    let imp = implementation(suite());
    for args in [
        vec!["nope"],
        vec!["latency", "--iters", "0"],
        vec!["bw", "--max", "1", "--min", "8"],
        vec!["latency", "--bogus", "1"],
        vec!["barrier", "--report-mem"],
    ] {
        let args: Vec<String> = args.into_iter().map(String::from).collect();
        let spec = imp.command(2, Binding::for_ranks(2, cores()), &args);
        let out = run::run(&spec, LIMIT).expect("spawn");
        assert!(!out.timed_out);
        assert_ne!(out.status.code(), Some(0), "{args:?} must fail");
        assert!(out.stderr.contains("oxbench:"), "{args:?}: {}", out.stderr);
    }
    // Latency needs exactly two ranks.
    let spec = imp.command(3, Binding::Unbound, &["latency".to_string()]);
    let out = run::run(&spec, LIMIT).expect("spawn");
    assert_ne!(out.status.code(), Some(0));
    assert!(
        out.stderr.contains("needs exactly 2 ranks"),
        "{}",
        out.stderr
    );
}

#[test]
fn compare_runs_end_to_end_and_reports_a_missing_oxmpi_as_failed() {
    let out_dir = scratch("compare");
    let empty_target = scratch("empty-target");
    let prefix = format!("mpich={}", mpich().display());
    let spec = CommandSpec::new([
        env!("CARGO_BIN_EXE_oxmpi-bench").as_ref(),
        "compare".as_ref(),
        "--peers".as_ref(),
        "mpich".as_ref(),
        "--peer-prefix".as_ref(),
        prefix.as_ref(),
        "--benchmarks".as_ref(),
        "latency,bw,barrier,allreduce,startup,mem".as_ref(),
        "--repeats".as_ref(),
        "2".as_ref(),
        "--iters".as_ref(),
        "3".as_ref(),
        "--warmup".as_ref(),
        "1".as_ref(),
        "--max-size".as_ref(),
        "1K".as_ref(),
        "--startup-np".as_ref(),
        "2".as_ref(),
        "--timeout".as_ref(),
        "120".as_ref(),
        "--target-dir".as_ref(),
        empty_target.as_os_str(),
        "--out".as_ref(),
        out_dir.as_os_str(),
    ]);
    let out = run::run(&spec, Duration::from_secs(600)).expect("spawn oxmpi-bench");
    run::judge(&out, Duration::from_secs(600))
        .unwrap_or_else(|e| panic!("{e}\nstderr:\n{}", out.stderr));

    let report = std::fs::read_to_string(out_dir.join("report.md")).expect("report.md");
    assert!(
        report.contains("| oxmpi |")
            && report.contains("failed: ")
            && report.contains("oxrun not found"),
        "{report}"
    );
    assert!(report.contains("## Summary, np=2"), "{report}");
    assert!(report.contains("## Start-up"), "{report}");
    assert!(report.contains("## Memory per rank"), "{report}");
    assert!(
        report.contains("![latency np=2](plots/latency-np2.png)"),
        "{report}"
    );

    let csv = std::fs::read_to_string(out_dir.join("results.csv")).expect("results.csv");
    let rows: Vec<&str> = csv.lines().skip(1).collect();
    let latency_rows = rows
        .iter()
        .filter(|r| r.starts_with("mpich,latency,2,false,"))
        .count();
    assert_eq!(latency_rows, 2 * 12, "sizes 0..1K, two repeats:\n{csv}");
    assert!(rows.iter().all(|r| r.starts_with("mpich,")), "{csv}");
    assert!(rows
        .iter()
        .any(|r| r.starts_with("mpich,startup,2,false,1,,wall-ms,")));
    for plot in ["latency-np2", "bw-np2", "allreduce-np2"] {
        for ext in ["svg", "png"] {
            let p = out_dir.join("plots").join(format!("{plot}.{ext}"));
            assert!(p.is_file(), "{} missing", p.display());
        }
    }
    let _ = std::fs::remove_dir_all(&out_dir);
    let _ = std::fs::remove_dir_all(&empty_target);
}
