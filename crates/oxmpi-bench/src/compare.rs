//! The comparison procedure: prepare the implementations (install peers, build the C suite),
//! plan the jobs, run them interleaved, keep only trusted figures, and write the report, the
//! CSV and the plots.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::cli::Config;
use crate::impls::{Binding, Implementation, OxmpiCSource, OXMPI_C};
use crate::parse;
use crate::peers::{self, Peer};
use crate::plot::{self, Labels, Series};
use crate::report::{self, Failure, ImplInfo, Key, ReportInput, Sample};
use crate::run;
use crate::suite::{BenchOptions, Benchmark, IterClass, Kind, RankPolicy};

/// One benchmark at one rank count, with the options every implementation gets.
#[derive(Clone, Debug, PartialEq)]
pub struct Job {
    /// Benchmark.
    pub benchmark: Benchmark,
    /// Ranks.
    pub np: u32,
    /// Options passed to the program.
    pub options: BenchOptions,
    /// Binding for this rank count.
    pub binding: Binding,
    /// How many times to run it per implementation.
    pub repeats: u32,
}

impl Job {
    /// True when the job has more ranks than cores.
    pub fn oversubscribed(&self) -> bool {
        self.binding == Binding::Unbound
    }
}

/// Iteration counts and largest size for a benchmark class in a mode: `(iters, warmup, max)`.
/// `None` keeps the program's OSU default.
fn mode_options(
    class: IterClass,
    quick: bool,
    oversubscribed: bool,
) -> (Option<u64>, Option<u64>, Option<u64>) {
    match (quick, oversubscribed, class) {
        (false, false, _) => (None, None, None),
        // Oversubscribed ranks wait for the scheduler (a busy-polling rank holds its core for
        // a whole time slice): far fewer iterations, or one run takes many minutes.
        (false, true, IterClass::Latency) => (Some(100), Some(10), None),
        (false, true, IterClass::Bandwidth) => (Some(5), Some(1), None),
        (false, true, IterClass::Collective) => (Some(20), Some(2), None),
        (true, false, IterClass::Latency) => (Some(1000), Some(100), Some(1 << 20)),
        (true, false, IterClass::Bandwidth) => (Some(10), Some(2), None),
        (true, false, IterClass::Collective) => (Some(200), Some(20), Some(64 << 10)),
        (true, true, IterClass::Latency) => (Some(50), Some(5), Some(64 << 10)),
        (true, true, IterClass::Bandwidth) => (Some(4), Some(1), Some(1 << 20)),
        (true, true, IterClass::Collective) => (Some(10), Some(1), Some(64 << 10)),
    }
}

/// The options for `benchmark` under `cfg`'s mode and overrides.
pub fn options_for(cfg: &Config, benchmark: Benchmark, oversubscribed: bool) -> BenchOptions {
    if benchmark.kind() != Kind::Sized {
        return BenchOptions::default();
    }
    let (iters, warmup, max) = mode_options(benchmark.iter_class(), cfg.quick, oversubscribed);
    let (min_default, _) = benchmark.default_sizes();
    let max = cfg.max_size.or(max).map(|m| m.max(min_default));
    BenchOptions {
        min: None,
        max: if matches!(benchmark, Benchmark::Barrier | Benchmark::FopCounter) {
            None
        } else {
            max
        },
        iters: cfg.iters.or(iters),
        warmup: cfg.warmup.or(warmup),
        window: None,
    }
}

/// Plans the jobs in run order, with notes about what was skipped.
pub fn plan(cfg: &Config) -> (Vec<Job>, Vec<String>) {
    let mut jobs = Vec::new();
    let mut notes = Vec::new();
    for &b in &cfg.benchmarks {
        let nps: Vec<u32> = match b.rank_policy() {
            RankPolicy::Two => vec![2],
            RankPolicy::Any => cfg.nps.clone(),
            RankPolicy::Startup => cfg.startup_nps.clone(),
            RankPolicy::Pairs => {
                let (even, odd): (Vec<u32>, Vec<u32>) = cfg.nps.iter().partition(|n| *n % 2 == 0);
                if !odd.is_empty() {
                    notes.push(format!("{b} skipped at odd rank counts {odd:?}"));
                }
                even
            }
        };
        let repeats = cfg.repeats.unwrap_or(match (b, cfg.quick) {
            (Benchmark::Startup, false) => 10,
            (Benchmark::Startup, true) => 5,
            (Benchmark::Mem, false) => 3,
            (Benchmark::Mem, true) => 1,
            (_, false) => 5,
            (_, true) => 3,
        });
        for np in nps {
            let binding = Binding::for_ranks(np, cfg.cores);
            jobs.push(Job {
                benchmark: b,
                np,
                options: options_for(cfg, b, binding == Binding::Unbound),
                binding,
                repeats,
            });
        }
    }
    (jobs, notes)
}

/// Turns a finished, trusted run's stdout into samples, or says why its output is unusable.
pub fn samples_from_output(
    job: &Job,
    implementation: &str,
    repeat: u32,
    stdout: &str,
    wall: Duration,
) -> Result<Vec<Sample>, String> {
    let b = job.benchmark;
    let sample = |key: Key, value: f64| Sample {
        implementation: implementation.to_string(),
        benchmark: b,
        np: job.np,
        oversubscribed: job.oversubscribed(),
        key,
        repeat,
        value,
        unit: b.unit().to_string(),
    };
    match b.kind() {
        Kind::Startup => Ok(vec![sample(
            Key::Metric("wall-ms".to_string()),
            wall.as_secs_f64() * 1e3,
        )]),
        Kind::Memory => {
            let metrics = parse::parse_metrics(stdout)
                .map_err(|e| format!("unreadable memory report: {e}"))?;
            Ok(metrics
                .into_iter()
                .map(|(name, v)| sample(Key::Metric(name), v))
                .collect())
        }
        Kind::Sized => {
            let out = parse::parse_osu(stdout).map_err(|e| format!("unreadable output: {e}"))?;
            if let Some(name) = &out.benchmark {
                if name != b.name() {
                    return Err(format!("output is for benchmark '{name}', not '{b}'"));
                }
            }
            if let Some(np) = out.np {
                if np != job.np {
                    return Err(format!("output says np={np}, expected {}", job.np));
                }
            }
            if out.unit != b.unit() {
                return Err(format!(
                    "unit '{}' where '{}' was expected",
                    out.unit,
                    b.unit()
                ));
            }
            parse::check_sizes(&out, &job.options.sizes(b))?;
            Ok(out
                .rows
                .into_iter()
                .map(|(size, v)| sample(Key::Size(size), v))
                .collect())
        }
    }
}

/// A description of this machine for the report.
pub fn host_description(cores: u32) -> String {
    let read = |p: &str| {
        std::fs::read_to_string(p)
            .map(|s| s.trim().to_string())
            .ok()
    };
    let cpu = read("/proc/cpuinfo")
        .and_then(|c| {
            c.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".to_string());
    let kernel = read("/proc/sys/kernel/osrelease").unwrap_or_else(|| "unknown".to_string());
    format!(
        "{cores} usable cores, {cpu}, Linux {kernel}, load average at start {}",
        load_average()
    )
}

/// The 1, 5 and 15 minute load averages from /proc/loadavg (other work on the machine shows
/// here, and in the noise of the figures).
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .filter(|l| !l.is_empty())
        .unwrap_or_else(|| "unknown".to_string())
}

/// Prepares the peers: prefixes given or installed (installing the missing ones with the
/// script), and the C suite built with each. Peers that cannot be prepared come back
/// unavailable, with the reason.
fn prepare_peers(cfg: &Config, progress: &mut dyn FnMut(&str)) -> Vec<Implementation> {
    let mut prefixes: Vec<(Peer, Result<PathBuf, String>)> = Vec::new();
    let mut to_install = Vec::new();
    for &p in &cfg.peers {
        if let Some((_, path)) = cfg.peer_prefixes.iter().find(|(q, _)| *q == p) {
            let r = if peers::prefix_is_complete(path) {
                Ok(path.clone())
            } else {
                Err(format!(
                    "{} has no bin/mpicc and bin/mpiexec",
                    path.display()
                ))
            };
            prefixes.push((p, r));
        } else if peers::prefix_is_complete(&cfg.peers_dir.join(p.name())) {
            prefixes.push((p, Ok(cfg.peers_dir.join(p.name()))));
        } else {
            to_install.push(p);
        }
    }
    if !to_install.is_empty() {
        let names: Vec<&str> = to_install.iter().map(|p| p.name()).collect();
        progress(&format!(
            "installing {} into {} (pip, from PyPI)",
            names.join(", "),
            cfg.peers_dir.display()
        ));
        let script = peers::repo_root().join("scripts").join("install-peers.sh");
        match peers::install(
            &script,
            &cfg.peers_dir,
            &to_install,
            Duration::from_secs(1800),
        ) {
            Ok(got) => {
                for p in &to_install {
                    let r = got
                        .iter()
                        .find(|(q, _)| q == p)
                        .map(|(_, path)| path.clone())
                        .ok_or_else(|| format!("install script did not report {p}"));
                    prefixes.push((*p, r));
                }
            }
            Err(why) => {
                for p in &to_install {
                    prefixes.push((*p, Err(format!("installation failed: {why}"))));
                }
            }
        }
    }
    let source = peers::repo_root().join("bench").join("c").join("oxbench.c");
    let mut out = Vec::new();
    for &p in &cfg.peers {
        let Some((_, prefix)) = prefixes.iter().find(|(q, _)| *q == p) else {
            continue;
        };
        let exe = cfg.out.join("bin").join(format!("oxbench-{}", p.name()));
        let imp = match prefix {
            Ok(prefix) => {
                progress(&format!("building {} with {} mpicc", source.display(), p));
                let mut imp = peers::implementation(p, prefix, &exe);
                if let Err(why) =
                    peers::build_suite(prefix, &source, &exe, Duration::from_secs(300))
                {
                    imp.unavailable = Some(why);
                }
                imp
            }
            Err(why) => {
                let mut imp = peers::implementation(p, &cfg.peers_dir.join(p.name()), &exe);
                imp.unavailable = Some(why.clone());
                imp
            }
        };
        out.push(imp);
    }
    out
}

/// Prepares oxmpi-c: `bench/c/oxbench.c` built with oxmpi's `mpicc` (from `--oxmpi-prefix`, or
/// a small prefix laid out from the build tree in the output directory). Comes back
/// unavailable, with the reason, when a file is missing or the build fails.
fn prepare_oxmpi_c(cfg: &Config, progress: &mut dyn FnMut(&str)) -> Implementation {
    let source = match &cfg.oxmpi_prefix {
        Some(prefix) => OxmpiCSource::Installed {
            prefix: prefix.clone(),
        },
        None => OxmpiCSource::BuildTree {
            release_dir: cfg.release_dir.clone(),
            prefix: cfg.out.join("oxmpi-c-prefix"),
        },
    };
    let exe = cfg.out.join("bin").join(format!("oxbench-{OXMPI_C}"));
    let mut imp = Implementation::oxmpi_c(&source, &exe);
    if imp.unavailable.is_some() {
        return imp;
    }
    let capi = peers::repo_root().join("crates").join("oxmpi-capi");
    let bench_source = peers::repo_root().join("bench").join("c").join("oxbench.c");
    progress(&format!(
        "building {} with oxmpi's mpicc ({})",
        bench_source.display(),
        source.prefix().display()
    ));
    let built = source.lay_out(&capi).and_then(|()| {
        peers::build_suite(
            source.prefix(),
            &bench_source,
            &exe,
            Duration::from_secs(300),
        )
    });
    if let Err(why) = built {
        imp.unavailable = Some(why);
    }
    imp
}

/// What a comparison produced.
#[derive(Debug)]
pub struct Outcome {
    /// Path of report.md.
    pub report: PathBuf,
    /// Path of results.csv.
    pub csv: PathBuf,
    /// Plot files written (base paths, without extension).
    pub plots: Vec<PathBuf>,
    /// The report's input (samples, failures, ...).
    pub input: ReportInput,
}

/// The one-way time of a cache line bounced between cores 0 and 1 (`oxmpi-bench floor`, one
/// short repeat), when oxmpi is compared and the machine has two cores. On a virtual machine it
/// can change between runs (the host moves the vCPUs), and every implementation's small-message
/// figures move with it.
fn measure_floor(cfg: &Config) -> Option<f64> {
    let bench = cfg.release_dir.join("oxmpi-bench");
    if !cfg.include_oxmpi || cfg.cores < 2 || !bench.is_file() {
        return None;
    }
    let spec = run::CommandSpec::new([
        bench.into_os_string(),
        "floor".into(),
        "--repeats".into(),
        "1".into(),
        "--iters".into(),
        "50000".into(),
    ]);
    let out = run::run(&spec, Duration::from_secs(30)).ok()?;
    if !out.status.success() {
        return None;
    }
    parse_floor(&out.stdout)
}

/// The figure of `oxmpi-bench floor`'s last line.
fn parse_floor(stdout: &str) -> Option<f64> {
    let v: f64 = stdout.lines().last()?.trim().parse().ok()?;
    (v.is_finite() && v > 0.0).then_some(v)
}

/// Runs the whole comparison; `progress` receives one line per step.
pub fn compare(cfg: &Config, progress: &mut dyn FnMut(&str)) -> Result<Outcome, String> {
    std::fs::create_dir_all(&cfg.out)
        .map_err(|e| format!("cannot create {}: {e}", cfg.out.display()))?;
    let started = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);

    let mut impls = Vec::new();
    if cfg.include_oxmpi {
        impls.push(Implementation::oxmpi_native(&cfg.release_dir));
    }
    if cfg.include_oxmpi_c {
        impls.push(prepare_oxmpi_c(cfg, progress));
    }
    impls.extend(prepare_peers(cfg, progress));
    for i in &impls {
        if let Some(why) = &i.unavailable {
            progress(&format!("{}: failed: {why}", i.name));
        }
    }

    let host = host_description(cfg.cores);
    let (jobs, notes) = plan(cfg);
    for n in &notes {
        progress(n);
    }
    let runnable: Vec<&Implementation> = impls.iter().filter(|i| i.unavailable.is_none()).collect();
    let max_repeats = jobs.iter().map(|j| j.repeats).max().unwrap_or(0);
    let total: u32 = jobs.iter().map(|j| j.repeats).sum::<u32>() * runnable.len() as u32;
    let mut samples = Vec::new();
    let mut failures: Vec<Failure> = Vec::new();
    let mut failed: BTreeSet<(String, Benchmark, u32)> = BTreeSet::new();
    let mut done = 0u32;

    // Interleaved: for each repeat, for each job, every implementation once (A B A B ...).
    let mut floors = Vec::new();
    for repeat in 0..max_repeats {
        if let Some(f) = measure_floor(cfg) {
            progress(&format!("repeat {}: hardware floor {f:.3} us", repeat + 1));
            floors.push(format!("{f:.3}"));
        }
        for job in jobs.iter().filter(|j| repeat < j.repeats) {
            for imp in &runnable {
                done += 1;
                let id = (imp.name.clone(), job.benchmark, job.np);
                if failed.contains(&id) {
                    continue;
                }
                let args = job.benchmark.program_args(&job.options);
                let spec = imp.command(job.np, job.binding, &args);
                let label = format!(
                    "[{done}/{total}] {} {} np={} repeat {}/{}",
                    imp.name,
                    job.benchmark,
                    job.np,
                    repeat + 1,
                    job.repeats
                );
                let result = run::run(&spec, cfg.timeout)
                    .map_err(|e| e.to_string())
                    .and_then(|o| {
                        run::judge(&o, cfg.timeout)?;
                        samples_from_output(job, &imp.name, repeat, &o.stdout, o.wall)
                            .map(|s| (s, o.wall))
                    });
                match result {
                    Ok((s, wall)) => {
                        progress(&format!("{label}: ok, {:.2} s", wall.as_secs_f64()));
                        samples.extend(s);
                    }
                    Err(reason) => {
                        progress(&format!("{label}: failed: {reason}"));
                        // Never report figures from an implementation × benchmark that failed.
                        samples.retain(|s: &Sample| {
                            !(s.implementation == imp.name
                                && s.benchmark == job.benchmark
                                && s.np == job.np)
                        });
                        failed.insert(id);
                        failures.push(Failure {
                            implementation: imp.name.clone(),
                            benchmark: job.benchmark,
                            np: job.np,
                            reason: format!("{reason} (command: {})", spec.display()),
                        });
                    }
                }
            }
        }
    }

    // Plots.
    let mut plots = Vec::new();
    let mut plot_refs = Vec::new();
    for job in jobs.iter().filter(|j| j.benchmark.has_size_axis()) {
        let b = job.benchmark;
        let by_key = report::summarize(&samples, b, job.np);
        let series: Vec<Series> = impls
            .iter()
            .map(|i| Series {
                name: i.name.clone(),
                points: by_key
                    .iter()
                    .filter_map(|(k, m)| match k {
                        Key::Size(s) => m.get(&i.name).map(|v| (*s, *v)),
                        Key::Metric(_) => None,
                    })
                    .collect(),
            })
            .filter(|s| !s.points.is_empty())
            .collect();
        if series.is_empty() {
            continue;
        }
        let rel = format!("plots/{b}-np{}", job.np);
        let base = cfg.out.join(&rel);
        let over = if job.oversubscribed() {
            format!(", oversubscribed on {} cores", cfg.cores)
        } else {
            String::new()
        };
        let labels = Labels {
            title: format!("{b}, np={}{over}: median and min–max of repeats", job.np),
            y: format!("{} ({})", b.quantity(), b.unit()),
        };
        match plot::plot(&base, &labels, &series) {
            Ok(()) => {
                plots.push(base);
                plot_refs.push((b, job.np, rel));
            }
            Err(e) => progress(&format!("plot {rel} failed: {e}")),
        }
    }

    let mode = format!(
        "{}; repeats per benchmark {}; per-run time limit {} s{}",
        if cfg.quick { "quick" } else { "full" },
        jobs.iter()
            .map(|j| format!("{}@{}:{}", j.benchmark, j.np, j.repeats))
            .collect::<Vec<_>>()
            .join(" "),
        cfg.timeout.as_secs(),
        if notes.is_empty() {
            String::new()
        } else {
            format!("; {}", notes.join("; "))
        }
    );
    let input = ReportInput {
        started: report::format_utc(started),
        host: if floors.is_empty() {
            format!("{host}, at end {}", load_average())
        } else {
            format!(
                "{host}, at end {}; hardware floor before each repeat (`oxmpi-bench floor`, \
                 one-way µs): {} — small-message ratios hold only between repeats whose floor agrees",
                load_average(),
                floors.join(", ")
            )
        },
        cores: cfg.cores,
        mode,
        implementations: impls
            .iter()
            .map(|i| ImplInfo {
                name: i.name.clone(),
                description: i.description.clone(),
                unavailable: i.unavailable.clone(),
            })
            .collect(),
        samples,
        failures,
        plots: plot_refs,
    };
    let report_path = cfg.out.join("report.md");
    let csv_path = cfg.out.join("results.csv");
    write(&report_path, &report::markdown(&input))?;
    write(&csv_path, &report::to_csv(&input.samples))?;
    Ok(Outcome {
        report: report_path,
        csv: csv_path,
        plots,
        input,
    })
}

fn write(path: &Path, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(quick: bool) -> Config {
        Config {
            peers: vec![Peer::Mpich],
            peer_prefixes: vec![],
            out: "/o".into(),
            quick,
            benchmarks: Benchmark::ALL.to_vec(),
            nps: vec![2, 3, 4],
            startup_nps: vec![2, 8],
            repeats: None,
            timeout: Duration::from_secs(10),
            iters: None,
            warmup: None,
            max_size: None,
            peers_dir: "/p".into(),
            release_dir: "/t/release".into(),
            include_oxmpi: true,
            include_oxmpi_c: true,
            oxmpi_prefix: None,
            cores: 2,
        }
    }

    #[test]
    fn plan_respects_rank_policies_and_oversubscription() {
        let (jobs, notes) = plan(&cfg(false));
        let at = |b: Benchmark| -> Vec<u32> {
            jobs.iter()
                .filter(|j| j.benchmark == b)
                .map(|j| j.np)
                .collect()
        };
        assert_eq!(at(Benchmark::Latency), vec![2]);
        assert_eq!(at(Benchmark::MultiBw), vec![2, 4]);
        assert_eq!(at(Benchmark::Allreduce), vec![2, 3, 4]);
        assert_eq!(at(Benchmark::Startup), vec![2, 8]);
        assert!(notes
            .iter()
            .any(|n| n.contains("multi-bw skipped at odd rank counts [3]")));
        let j = jobs
            .iter()
            .find(|j| j.benchmark == Benchmark::Allreduce && j.np == 4)
            .unwrap();
        assert!(j.oversubscribed());
        assert_eq!(j.options.iters, Some(20));
        let j2 = jobs
            .iter()
            .find(|j| j.benchmark == Benchmark::Allreduce && j.np == 2)
            .unwrap();
        assert!(!j2.oversubscribed());
        assert_eq!(j2.options, BenchOptions::default());
        assert_eq!(j2.repeats, 5);
        let s = jobs
            .iter()
            .find(|j| j.benchmark == Benchmark::Startup)
            .unwrap();
        assert_eq!(s.repeats, 10);
    }

    #[test]
    fn the_floor_is_the_last_line_of_the_probe() {
        assert_eq!(parse_floor("0.239\n0.041\n"), Some(0.041));
        assert_eq!(parse_floor(""), None);
        assert_eq!(parse_floor("error: one core\n"), None);
        assert_eq!(parse_floor("0\n"), None);
    }

    #[test]
    fn quick_mode_and_overrides() {
        let mut c = cfg(true);
        let o = options_for(&c, Benchmark::Latency, false);
        assert_eq!(
            (o.iters, o.warmup, o.max),
            (Some(1000), Some(100), Some(1 << 20))
        );
        assert_eq!(options_for(&c, Benchmark::Bw, false).max, None);
        assert_eq!(options_for(&c, Benchmark::Barrier, false).max, None);
        c.iters = Some(3);
        c.max_size = Some(2);
        let o = options_for(&c, Benchmark::Gather, false);
        assert_eq!(
            (o.iters, o.max),
            (Some(3), Some(4)),
            "max never below the smallest size"
        );
        assert_eq!(
            options_for(&c, Benchmark::Startup, false),
            BenchOptions::default()
        );
        c.repeats = Some(2);
        assert!(plan(&c).0.iter().all(|j| j.repeats == 2));
    }

    fn job(b: Benchmark, max: u64) -> Job {
        Job {
            benchmark: b,
            np: 2,
            options: BenchOptions {
                max: Some(max),
                ..Default::default()
            },
            binding: Binding::DistinctCores,
            repeats: 1,
        }
    }

    #[test]
    fn output_becomes_samples_only_when_complete() {
        let j = job(Benchmark::Latency, 2);
        let good = "# oxbench latency np=2: one-way latency (us)\n0 0.2\n1 0.3\n2 0.3\n";
        let s = samples_from_output(&j, "mpich", 1, good, Duration::ZERO).unwrap();
        assert_eq!(s.len(), 3);
        assert_eq!(
            (s[2].key.clone(), s[2].value, s[2].repeat),
            (Key::Size(2), 0.3, 1)
        );
        let short = "# oxbench latency np=2: one-way latency (us)\n0 0.2\n1 0.3\n";
        assert!(samples_from_output(&j, "m", 0, short, Duration::ZERO)
            .unwrap_err()
            .contains("missing: [2]"));
        let other = good.replace("latency np", "bw np");
        assert!(samples_from_output(&j, "m", 0, &other, Duration::ZERO).is_err());
        let np4 = good.replace("np=2", "np=4");
        assert!(samples_from_output(&j, "m", 0, &np4, Duration::ZERO).is_err());
        let unit = good.replace("(us)", "(ms)");
        assert!(samples_from_output(&j, "m", 0, &unit, Duration::ZERO).is_err());
        assert!(samples_from_output(&j, "m", 0, "", Duration::ZERO)
            .unwrap_err()
            .contains("unreadable output"));
    }

    #[test]
    fn startup_and_memory_samples() {
        let j = job(Benchmark::Startup, 0);
        let s = samples_from_output(&j, "m", 0, "", Duration::from_millis(250)).unwrap();
        assert_eq!(s[0].key, Key::Metric("wall-ms".into()));
        assert!((s[0].value - 250.0).abs() < 1e-9);
        let j = job(Benchmark::Mem, 0);
        let s = samples_from_output(&j, "m", 0, "# x\nvmhwm-max-kB 10\nshm 2\n", Duration::ZERO)
            .unwrap();
        assert_eq!(s.len(), 2);
        assert!(samples_from_output(&j, "m", 0, "", Duration::ZERO).is_err());
    }
}
