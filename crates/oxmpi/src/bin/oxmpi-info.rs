//! `oxmpi-info`: every tunable with its default and current value, and which protocol each
//! message size takes. `oxmpi-info --topology`: the machine as oxmpi sees it (packages, NUMA
//! nodes, cores, caches, NICs and their NUMA node, and the CPUs this process may use), with the
//! reader that saw it (hwloc, or sysfs and why: `OXMPI_TOPOLOGY`). `oxmpi-info --calibrate`:
//! times each point-to-point protocol around its crossover on this host and writes the
//! crossovers to the tunables file.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use oxmpi::coll::select::{algorithm_table, Crossovers, COLL_TUNABLES};
use oxmpi::config::{Config, Source, Tunable, TunablesFile, TUNABLES};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        None => {}
        Some("--calibrate") => std::process::exit(match calibrate(&args[1..]) {
            Ok(()) => 0,
            Err(e) => {
                eprintln!("oxmpi-info --calibrate: {e}");
                1
            }
        }),
        Some("--topology") => {
            let (topo, backend) = oxmpi_pmi::topology::Topology::detect(true);
            println!("topology backend: {backend}");
            print!("{}", topo.report());
            // What a rank started here would get: taskset, cgroups and Slurm narrow it.
            let allowed = std::fs::read_to_string("/proc/self/status")
                .ok()
                .and_then(|s| {
                    s.lines()
                        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
                        .map(|l| l.trim().to_owned())
                })
                .unwrap_or_else(|| "unknown".into());
            println!("  this process may run on cpus {allowed}");
            return;
        }
        Some(other) => {
            eprintln!(
                "oxmpi-info: unknown argument {other:?} (usage: oxmpi-info [--topology | --calibrate [--quick] [--force] [--output FILE]])"
            );
            std::process::exit(2);
        }
    }
    let config = match Config::from_env() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("oxmpi-info: {e}");
            std::process::exit(2);
        }
    };
    println!("oxmpi {}", env!("CARGO_PKG_VERSION"));
    println!("transports: self, shm (same host), tcp (between hosts; OXMPI_TRANSPORT=tcp forces it); ofi is not built yet");
    println!("Fortran: mpif.h, and the mpi and mpi_f08 modules built by `cargo xtask install` with one compiler (OXMPI_FC, default gfortran); module files are compiler-specific, so install again for another compiler");
    println!();
    if let Err(e) = Crossovers::from_env() {
        eprintln!("oxmpi-info: {e}");
        std::process::exit(2);
    }
    match oxmpi::config::tunables_file_path(|k| std::env::var(k).ok()) {
        Some((p, true)) => println!("Tunables file: {} (OXMPI_TUNABLES_FILE)", p.display()),
        Some((p, false)) => println!("Tunables file: {}", p.display()),
        None => match oxmpi::config::default_tunables_path(|k| std::env::var(k).ok()) {
            Some(p) if std::env::var_os("OXMPI_TUNABLES_FILE").is_none() => {
                println!("Tunables file: none ({} does not exist)", p.display())
            }
            _ => println!("Tunables file: none"),
        },
    }
    println!();
    println!("Tunables (environment variables, then the tunables file, read once at start-up):");
    print_tunables(TUNABLES);
    println!();
    println!("Collective crossovers:");
    print_tunables(COLL_TUNABLES);
    println!();
    println!("Point-to-point protocol by message size (bytes), same host:");
    for line in oxmpi::info::shm_protocols(&config) {
        println!("  {line}");
    }
    println!();
    println!("Point-to-point protocol by message size (bytes), between hosts (TCP):");
    match oxmpi::info::tcp_protocols(&config) {
        Ok(lines) => lines.iter().for_each(|l| println!("  {l}")),
        Err(e) => {
            eprintln!("oxmpi-info: {e}");
            std::process::exit(2);
        }
    }
    println!();
    println!("Collective algorithms, in the order they are considered:");
    for a in algorithm_table() {
        println!("  {:<16} {:<44} {}", a.collective, a.algorithm, a.when);
    }
    let (bytes, cells, blocks, block) = oxmpi::info::shm_bytes_per_rank(&config);
    println!();
    println!(
        "Shared memory per rank: {bytes} bytes ({cells} ring cells of {} B + {blocks} pool blocks of {block} B), whatever the number of ranks",
        oxmpi::info::SHM_CELL_BYTES
    );
}

fn print_tunables(table: &[Tunable]) {
    let width = TUNABLES
        .iter()
        .chain(COLL_TUNABLES)
        .map(|t| t.name.len())
        .max()
        .unwrap_or(0);
    for t in table {
        // main() has checked that the file reads.
        let value = match oxmpi::config::lookup(t.name).ok().flatten() {
            Some((v, Source::Env)) => format!("{v} (environment; default {})", t.default),
            Some((v, Source::File { path, line })) => {
                format!("{v} ({}:{line}; default {})", path.display(), t.default)
            }
            _ => t.default.to_owned(),
        };
        println!("  {:width$}  {value}", t.name);
        println!("  {:width$}    {}", "", t.help);
    }
}

/// One protocol a probe can force through the tunables.
struct Candidate {
    label: &'static str,
    env: Vec<(&'static str, String)>,
}

/// A crossover to measure: the tunable it sets, the sizes timed, and the protocol used below
/// (`small`) and above (`large`) it.
struct Probe {
    tunable: &'static str,
    /// The `oxmpi-bench` benchmark timed and the ranks it runs on.
    bench: &'static str,
    np: usize,
    sizes: Vec<usize>,
    iters: u32,
    small: Candidate,
    large: Candidate,
    /// Whether the tunable names the smallest size of `large` (else the largest of `small`).
    names_large: bool,
    /// The value when `large` wins at no size measured, where that means it never does
    /// (else twice the largest size).
    never: Option<usize>,
}

/// Where the crossover falls: the index `k` (sizes below it take `small`, the rest `large`)
/// that makes the product of the chosen times over every size smallest — the sum of log
/// ratios, so each size counts by how much it gains, and one noisy size cannot move the
/// crossover against several clear ones. Ties take the smaller `k`.
fn crossover_index(small: &[f64], large: &[f64]) -> usize {
    let (mut best, mut best_cost, mut cost) = (0, 0.0, 0.0);
    for i in 0..small.len() {
        // Cost of taking `small` at size i instead of `large`.
        cost += (small[i] / large[i]).ln();
        if cost < best_cost {
            (best, best_cost) = (i + 1, cost);
        }
    }
    best
}

/// Prints the line a calibration ends each tunable with, naming the value it replaces.
fn report_choice(tunable: &str, value: usize, why: &str) {
    let was = match oxmpi::config::lookup(tunable).ok().flatten() {
        Some((v, _)) => v,
        None => TUNABLES
            .iter()
            .chain(COLL_TUNABLES)
            .find(|t| t.name == tunable)
            .map_or("?", |t| t.default)
            .to_owned(),
    };
    println!("  chosen: {tunable} = {value}{why} (in force before: {was})");
}

/// The tunable's value for crossover index `k` over `sizes`; outside the range measured it
/// is half the smallest or twice the largest size.
fn crossover_value(sizes: &[usize], k: usize, names_large: bool) -> usize {
    let n = sizes.len();
    let (last_small, first_large) = (
        if k == 0 { sizes[0] / 2 } else { sizes[k - 1] },
        if k == n { sizes[n - 1] * 2 } else { sizes[k] },
    );
    if names_large {
        first_large
    } else {
        last_small
    }
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Rows `SIZE VALUE` of an `oxmpi-bench` report (comment lines skipped).
fn parse_rows(out: &str) -> Result<Vec<(usize, f64)>, String> {
    out.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| {
            let mut f = l.split_whitespace();
            match (
                f.next().and_then(|s| s.parse().ok()),
                f.next().and_then(|s| s.parse::<f64>().ok()),
            ) {
                (Some(size), Some(v)) if v.is_finite() => Ok((size, v)),
                _ => Err(format!("unexpected benchmark line {l:?}")),
            }
        })
        .collect()
}

/// `NAME = VALUE` lines for `chosen`, keeping every other setting of the `previous` file.
fn tunables_text(
    header: &str,
    chosen: &[(&str, usize)],
    previous: Option<&TunablesFile>,
) -> String {
    let mut text = String::new();
    for l in header.lines() {
        text.push_str(&format!("# {l}\n"));
    }
    for (name, value) in chosen {
        text.push_str(&format!("{name} = {value}\n"));
    }
    for e in previous.map_or(&[][..], |f| &f.entries) {
        if !chosen.iter().any(|(n, _)| *n == e.name) {
            text.push_str(&format!("{} = {}\n", e.name, e.value));
        }
    }
    text
}

/// The CPUs this process may run on (`Cpus_allowed_list`, e.g. `0-3,8`).
fn allowed_cpus() -> Option<Vec<usize>> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let list = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))?;
    let mut cpus = Vec::new();
    for part in list.trim().split(',') {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        cpus.extend(a.trim().parse::<usize>().ok()?..=b.trim().parse::<usize>().ok()?);
    }
    Some(cpus)
}

/// CPU time counters (busy, total) of `cpus`, from `/proc/stat`.
fn cpu_times(cpus: &[usize]) -> Option<(u64, u64)> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let (mut busy, mut total) = (0, 0);
    for line in stat.lines() {
        let mut f = line.split_whitespace();
        let Some(n) = f.next()?.strip_prefix("cpu").and_then(|n| n.parse().ok()) else {
            continue;
        };
        if !cpus.contains(&n) {
            continue;
        }
        let fields: Vec<u64> = f.filter_map(|x| x.parse().ok()).collect();
        // idle and iowait
        let idle = fields.get(3)? + fields.get(4).copied().unwrap_or(0);
        total += fields.iter().sum::<u64>();
        busy += fields.iter().sum::<u64>() - idle;
    }
    Some((busy, total))
}

/// How busy the CPUs this process may use are over half a second, as text, when more than a
/// quarter of their time goes to other work (the load average lags, and counts our own
/// previous run).
fn busy() -> Option<String> {
    let cpus = allowed_cpus()?;
    let (b0, t0) = cpu_times(&cpus)?;
    std::thread::sleep(std::time::Duration::from_millis(500));
    let (b1, t1) = cpu_times(&cpus)?;
    let share = (b1 - b0) as f64 / (t1 - t0).max(1) as f64;
    (share > 0.25).then(|| format!("{:.0}% of CPU time in use before it started", share * 100.0))
}

/// The installed (or built) binary `name` beside this one.
fn sibling(name: &str) -> Result<PathBuf, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this program: {e}"))?;
    let p = exe.with_file_name(name);
    if p.exists() {
        Ok(p)
    } else {
        Err(format!(
            "{} not found (it is installed beside oxmpi-info)",
            p.display()
        ))
    }
}

/// One two-rank `oxmpi-bench latency` job with `env` forced and no tunables file.
fn run_job(
    bins: &(PathBuf, PathBuf),
    p: &Probe,
    env: &[(&str, String)],
) -> Result<Vec<f64>, String> {
    let (sizes, iters) = (&p.sizes, p.iters);
    let (min, max) = (sizes[0], sizes[sizes.len() - 1]);
    let mut cmd = Command::new(&bins.0);
    cmd.args([
        "--timeout",
        "60",
        "-n",
        &p.np.to_string(),
        "--bind-to",
        "core",
    ])
    .arg(&bins.1)
    .args([
        p.bench,
        "--min",
        &min.to_string(),
        "--max",
        &max.to_string(),
    ])
    .args([
        "--iters",
        &iters.to_string(),
        "--warmup",
        &(iters / 5 + 1).to_string(),
    ])
    .env("OXMPI_TUNABLES_FILE", "")
    .stdin(Stdio::null());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let what = format!(
        "{} {}",
        env.iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(" "),
        format_args!("oxrun -n {} oxmpi-bench {}", p.np, p.bench)
    );
    let out = cmd.output().map_err(|e| format!("{what}: {e}"))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(format!(
            "{what} failed ({}):\n{stdout}{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let rows = parse_rows(&stdout).map_err(|e| format!("{what}: {e}"))?;
    sizes
        .iter()
        .map(|s| {
            rows.iter()
                .find(|r| r.0 == *s)
                .map(|r| r.1)
                .ok_or_else(|| format!("{what}: no row for size {s}:\n{stdout}"))
        })
        .collect()
}

/// `oxmpi-info --calibrate`: measures every probe, prints the tables, writes the file.
fn calibrate(args: &[String]) -> Result<(), String> {
    let mut quick = false;
    let mut force = false;
    let mut output: Option<PathBuf> = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--quick" => quick = true,
            "--force" => force = true,
            "--output" => {
                output = Some(it.next().ok_or("--output needs a file name")?.into());
            }
            other => return Err(format!("unknown argument {other:?} (usage: oxmpi-info --calibrate [--quick] [--force] [--output FILE])")),
        }
    }
    let env = |k: &str| std::env::var(k).ok();
    let output = match output {
        Some(p) => p,
        None => env("OXMPI_TUNABLES_FILE")
            .filter(|p| !p.is_empty())
            .map(PathBuf::from)
            .or_else(|| oxmpi::config::default_tunables_path(env))
            .ok_or("no place for the tunables file (HOME unset): give --output FILE")?,
    };
    // Refuse to overwrite a file that does not parse: it may hold settings made by hand.
    let previous = if output.exists() {
        Some(TunablesFile::load(&output).map_err(|e| e.message().to_owned())?)
    } else {
        None
    };
    let bins = (sibling("oxrun")?, sibling("oxmpi-bench")?);
    let start = Instant::now();
    let repeats = if quick { 1 } else { 5 };
    let sizes = |full: &[usize], q: &[usize]| if quick { q.to_vec() } else { full.to_vec() };
    let k = 1024;
    let mut chosen: Vec<(&str, usize)> = Vec::new();
    println!(
        "Calibrating on this host: ranks bound to cores, time per operation (latency: one-way), median of {repeats} interleaved run{} per protocol",
        if repeats == 1 { "" } else { "s" }
    );

    match (busy(), force) {
        (Some(load), false) => {
            return Err(format!(
                "the machine is busy ({load}): not calibrating, {} not written; run again on a quiet machine, or add --force",
                output.display()
            ))
        }
        (Some(load), true) => println!(
            "warning: the machine is busy ({load}); the figures, and so the crossovers, may not be those of a quiet machine"
        ),
        (None, _) => {}
    }
    let measure = |p: &Probe| -> Result<usize, String> {
        let n = p.sizes.len();
        let (mut small, mut large) = (vec![Vec::new(); n], vec![Vec::new(); n]);
        for r in 0..repeats {
            // Alternate which protocol runs first, so drift in the machine hits both alike.
            let order = if r % 2 == 0 {
                [false, true]
            } else {
                [true, false]
            };
            for is_large in order {
                let (c, into) = if is_large {
                    (&p.large, &mut large)
                } else {
                    (&p.small, &mut small)
                };
                let v = run_job(&bins, p, &c.env)?;
                for (i, x) in v.into_iter().enumerate() {
                    into[i].push(x);
                }
            }
        }
        let small: Vec<f64> = small.iter_mut().map(|v| median(v)).collect();
        let large: Vec<f64> = large.iter_mut().map(|v| median(v)).collect();
        let k = crossover_index(&small, &large);
        let value = match p.never {
            Some(v) if k == n => v,
            _ => crossover_value(&p.sizes, k, p.names_large),
        };
        println!();
        println!(
            "{}: {} below, {} from the crossover ({} at np {}, us)",
            p.tunable, p.small.label, p.large.label, p.bench, p.np
        );
        println!(
            "  {:>10}  {:>28}  {:>28}  faster",
            "bytes", p.small.label, p.large.label
        );
        for i in 0..n {
            let faster = if large[i] <= small[i] {
                p.large.label
            } else {
                p.small.label
            };
            println!(
                "  {:>10}  {:>28.2}  {:>28.2}  {faster}",
                p.sizes[i], small[i], large[i]
            );
        }
        let why = match k {
            0 => format!(" ({} for every size measured)", p.large.label),
            k if k == n => format!(" ({} for every size measured)", p.small.label),
            _ => String::new(),
        };
        report_choice(p.tunable, value, &why);
        Ok(value)
    };
    let big = |v: usize| v.to_string();
    // A lone rendezvous message is copied once (pulled, or written by its sender) below
    // OXMPI_PUSH_MIN, pushed through the pool from there, and copied once again from
    // OXMPI_SINGLE_COPY_MIN. Which costs less differs by hosts and by how near the two
    // cores are (the kernel's cost per process_vm_readv against two copies on two cores),
    // from a few KiB to beyond 8 MiB. Eager below every size timed, so each message is a
    // lone rendezvous.
    let lone_sizes = sizes(
        &[
            16 * k,
            64 * k,
            256 * k,
            k * k,
            2 * k * k,
            4 * k * k,
            8 * k * k,
            16 * k * k,
            64 * k * k,
        ],
        &[16 * k, 256 * k, 4 * k * k],
    );
    let lone = |push_min: usize, single_copy_min: usize| {
        vec![
            ("OXMPI_PUSH_MIN", big(push_min)),
            ("OXMPI_SINGLE_COPY_MIN", big(single_copy_min)),
            ("OXMPI_EAGER_LIMIT", big(2 * k)),
        ]
    };
    let push = Probe {
        tunable: "OXMPI_PUSH_MIN",
        bench: "latency",
        np: 2,
        sizes: lone_sizes.clone(),
        iters: if quick { 20 } else { 200 },
        small: Candidate {
            label: "single copy",
            env: lone(1 << 40, 1 << 40),
        },
        large: Candidate {
            label: "pushed (two copies)",
            env: lone(0, 1 << 40),
        },
        names_large: true,
        never: None,
    };
    let push_min = measure(&push)?;
    chosen.push((push.tunable, push_min));
    // Above the pushed band's start, where copying once wins again (if it does).
    let single_copy = Probe {
        tunable: "OXMPI_SINGLE_COPY_MIN",
        sizes: lone_sizes.into_iter().filter(|&s| s >= push_min).collect(),
        small: Candidate {
            label: "pushed (two copies)",
            env: lone(0, 1 << 40),
        },
        large: Candidate {
            label: "single copy",
            env: lone(0, 0),
        },
        never: Some(1 << 40),
        ..push
    };
    let single_copy_min = if single_copy.sizes.is_empty() {
        // Copying once won at every size measured: no pushed band, nothing left to time.
        println!();
        println!(
            "{}: not timed, single copy won at every size above",
            single_copy.tunable
        );
        report_choice(single_copy.tunable, push_min, " (no pushed band)");
        push_min
    } else {
        measure(&single_copy)?
    };
    chosen.push((single_copy.tunable, single_copy_min));
    // Rendezvous copies once or pushes as the crossovers just chosen say, as it will.
    let eager = Probe {
        tunable: "OXMPI_EAGER_LIMIT",
        bench: "latency",
        np: 2,
        sizes: sizes(
            &[
                4 * k,
                8 * k,
                16 * k,
                32 * k,
                64 * k,
                128 * k,
                256 * k,
                512 * k,
            ],
            &[8 * k, 64 * k, 256 * k],
        ),
        iters: if quick { 10 } else { 100 },
        small: Candidate {
            label: "eager",
            env: vec![
                ("OXMPI_EAGER_LIMIT", big(1 << 30)),
                ("OXMPI_PUSH_MIN", big(push_min)),
                ("OXMPI_SINGLE_COPY_MIN", big(single_copy_min)),
            ],
        },
        large: Candidate {
            label: "rendezvous",
            env: vec![
                ("OXMPI_EAGER_LIMIT", big(2 * k)),
                ("OXMPI_PUSH_MIN", big(push_min)),
                ("OXMPI_SINGLE_COPY_MIN", big(single_copy_min)),
            ],
        },
        names_large: false,
        never: None,
    };
    chosen.push((eager.tunable, measure(&eager)?));
    let inline = Probe {
        tunable: "OXMPI_SHM_INLINE_MAX",
        bench: "latency",
        np: 2,
        sizes: sizes(&[16, 32, 64, 128, 256, 512, k, 4 * k], &[32, 64, 256, k]),
        iters: if quick { 100 } else { 2000 },
        small: Candidate {
            label: "inline in cells",
            env: vec![("OXMPI_SHM_INLINE_MAX", big(4 * k))],
        },
        large: Candidate {
            label: "pool block",
            env: vec![("OXMPI_SHM_INLINE_MAX", big(0))],
        },
        names_large: false,
        never: None,
    };
    chosen.push((inline.tunable, measure(&inline)?));
    // The shared-memory collectives against message-based ones, on as many ranks as this
    // host has cores (up to 8): single-host jobs usually fill the host. A bcast between two
    // ranks has a crossover of its own (one message against single copies), timed at np 2;
    // the general one only where the host has more cores.
    let np = std::thread::available_parallelism().map_or(2, |n| n.get().clamp(2, 8));
    let mut colls = vec![(
        "OXMPI_COLL_SHM_BCAST_LONG_PAIR",
        "bcast",
        "single-copy pulls",
        2,
    )];
    if np > 2 {
        colls.push((
            "OXMPI_COLL_SHM_BCAST_LONG",
            "bcast",
            "single-copy pulls",
            np,
        ));
    }
    colls.push((
        "OXMPI_COLL_SHM_ALLREDUCE_LONG",
        "allreduce",
        "shared-memory reduce-scatter",
        np,
    ));
    colls.push((
        "OXMPI_COLL_SHM_REDUCE_LONG",
        "reduce",
        "shared-memory reduce-scatter",
        np,
    ));
    for (tunable, bench, label, np) in colls {
        let probe = Probe {
            tunable,
            bench,
            np,
            sizes: sizes(
                &[
                    8 * k,
                    16 * k,
                    32 * k,
                    64 * k,
                    128 * k,
                    256 * k,
                    512 * k,
                    1024 * k,
                    4096 * k,
                ],
                &[8 * k, 64 * k, 512 * k, 4096 * k],
            ),
            iters: if quick { 5 } else { 50 },
            small: Candidate {
                label: "messages",
                env: vec![(tunable, big(1 << 40))],
            },
            large: Candidate {
                label,
                env: vec![(tunable, big(0))],
            },
            names_large: true,
            // Single copies winning at no size measured keeps the default, which knows
            // the sizes beyond (for some it is "never").
            never: COLL_TUNABLES
                .iter()
                .find(|t| t.name == tunable)
                .and_then(|t| oxmpi::config::parse_size(t.default))
                .and_then(|v| usize::try_from(v).ok()),
        };
        chosen.push((tunable, measure(&probe)?));
    }

    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    let when = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let header = format!(
        "Written by `oxmpi-info --calibrate{}` on {} at {when} (seconds since 1970, UTC).\nThe environment overrides every value here; oxmpi-info shows which is in force.",
        if quick { " --quick" } else { "" },
        host.trim()
    );
    let text = tunables_text(&header, &chosen, previous.as_ref());
    write_file(&output, &text)?;
    println!();
    println!(
        "Wrote {} in {:.1} s (the other collective crossovers keep their values).",
        output.display(),
        start.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Writes `text` to `path` through a temporary file, so a reader never sees half of it.
fn write_file(path: &Path, text: &str) -> Result<(), String> {
    let fail = |e: std::io::Error| format!("cannot write {}: {e}", path.display());
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(fail)?;
    }
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&tmp, text).map_err(fail)?;
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        fail(e)
    })?;
    // What was written must be what the runtime accepts.
    TunablesFile::load(path)
        .map(|_| ())
        .map_err(|e| e.message().to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_crossover_minimises_the_relative_time_over_all_sizes() {
        let sizes = [1, 2, 4, 8];
        // Small wins clearly below size 4, large from there on; one noisy size (8) where
        // small looks slightly faster does not push the crossover past the range.
        let k = crossover_index(&[1.0, 1.0, 5.0, 5.0], &[2.0, 2.0, 4.0, 5.5]);
        assert_eq!(k, 2);
        assert_eq!(crossover_value(&sizes, k, true), 4);
        assert_eq!(crossover_value(&sizes, k, false), 2);
        // Small protocol everywhere: beyond the range.
        let k = crossover_index(&[1.0; 4], &[2.0; 4]);
        assert_eq!((k, crossover_value(&sizes, k, true)), (4, 16));
        assert_eq!(crossover_value(&sizes, k, false), 8);
        // Large protocol everywhere: below the range.
        let k = crossover_index(&[2.0; 4], &[1.0; 4]);
        assert_eq!((k, crossover_value(&sizes, k, false)), (0, 0));
        assert_eq!(crossover_value(&sizes, k, true), 1);
        // Equal times: the larger-message protocol from the start.
        assert_eq!(crossover_index(&[1.0; 4], &[1.0; 4]), 0);
    }

    #[test]
    fn medians_and_benchmark_rows() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut [4.0, 1.0, 2.0, 3.0]), 2.5);
        let rows = parse_rows("# oxbench latency np=2\n262144     144.850\n524288 1e3\n").unwrap();
        assert_eq!(rows, vec![(262144, 144.85), (524288, 1000.0)]);
        assert!(parse_rows("262144 x\n").is_err());
        assert!(parse_rows("oops\n").is_err());
    }

    #[test]
    fn the_written_file_parses_and_keeps_other_settings() {
        let previous = TunablesFile::parse(
            Path::new("/t"),
            "OXMPI_EAGER_LIMIT = 1\nOXMPI_SPIN_COUNT = 9\n",
        )
        .unwrap();
        let text = tunables_text(
            "line one\nline two",
            &[
                ("OXMPI_EAGER_LIMIT", 65536),
                ("OXMPI_SINGLE_COPY_MIN", 1 << 20),
            ],
            Some(&previous),
        );
        let f = TunablesFile::parse(Path::new("/t"), &text).unwrap();
        let got: Vec<_> = f
            .entries
            .iter()
            .map(|e| (e.name.as_str(), e.value.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("OXMPI_EAGER_LIMIT", "65536"),
                ("OXMPI_SINGLE_COPY_MIN", "1048576"),
                ("OXMPI_SPIN_COUNT", "9")
            ]
        );
        assert!(text.starts_with("# line one\n# line two\n"));
    }
}
