//! The comparison's outputs as text: every measurement as CSV, and the Markdown report with
//! per-size min/median/max of each implementation, ratios, noise marks and failures.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::stats::{self, Summary, NOISE_THRESHOLD};
use crate::suite::{format_size, Benchmark, Kind};

/// What a measurement is indexed by within one benchmark and rank count.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Key {
    /// A message size in bytes (sized benchmarks).
    Size(u64),
    /// A named metric (start-up wall time, memory metrics).
    Metric(String),
}

/// One measured value: one implementation × benchmark × rank count × key × repeat.
#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
    /// Implementation name.
    pub implementation: String,
    /// Benchmark.
    pub benchmark: Benchmark,
    /// Ranks.
    pub np: u32,
    /// True when the run had more ranks than cores.
    pub oversubscribed: bool,
    /// Size or metric.
    pub key: Key,
    /// Repeat index, from 0.
    pub repeat: u32,
    /// The figure, in `unit`.
    pub value: f64,
    /// Unit of `value`.
    pub unit: String,
}

/// An implementation × benchmark × rank count whose figures are withheld, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    /// Implementation name.
    pub implementation: String,
    /// Benchmark.
    pub benchmark: Benchmark,
    /// Ranks.
    pub np: u32,
    /// Why (as judged from the run).
    pub reason: String,
}

/// An implementation as listed in the report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImplInfo {
    /// Short name.
    pub name: String,
    /// Version and origin.
    pub description: String,
    /// `None` when it could run; otherwise why it could not run at all.
    pub unavailable: Option<String>,
}

/// Everything the Markdown report is made from.
#[derive(Clone, Debug, Default)]
pub struct ReportInput {
    /// When the run started (UTC, ISO 8601).
    pub started: String,
    /// Host description (cores, CPU, kernel).
    pub host: String,
    /// Usable cores (decides oversubscription).
    pub cores: u32,
    /// `quick` or `full`, with repeat counts and options.
    pub mode: String,
    /// Implementations in comparison order; the first with figures is the ratio subject.
    pub implementations: Vec<ImplInfo>,
    /// All trusted measurements.
    pub samples: Vec<Sample>,
    /// Withheld results.
    pub failures: Vec<Failure>,
    /// Plots made, as (benchmark, np, path relative to the report, without extension).
    pub plots: Vec<(Benchmark, u32, String)>,
}

/// Renders samples as CSV, one row per implementation × benchmark × np × size/metric × repeat.
pub fn to_csv(samples: &[Sample]) -> String {
    let mut out =
        String::from("implementation,benchmark,np,oversubscribed,repeat,size,metric,value,unit\n");
    for s in samples {
        let (size, metric) = match &s.key {
            Key::Size(b) => (b.to_string(), String::new()),
            Key::Metric(m) => (String::new(), m.clone()),
        };
        let fields = [
            csv_field(&s.implementation),
            s.benchmark.name().to_string(),
            s.np.to_string(),
            s.oversubscribed.to_string(),
            s.repeat.to_string(),
            size,
            csv_field(&metric),
            format!("{}", s.value),
            csv_field(&s.unit),
        ];
        out.push_str(&fields.join(","));
        out.push('\n');
    }
    out
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// Formats a figure with about four significant digits, without exponents.
pub fn format_value(v: f64) -> String {
    let a = v.abs();
    if v == 0.0 {
        "0".to_string()
    } else if a >= 10_000.0 {
        format!("{v:.0}")
    } else if a >= 100.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

type Group = BTreeMap<Key, BTreeMap<String, Vec<f64>>>;

/// Groups samples by (benchmark, np), then key, then implementation.
fn group(samples: &[Sample]) -> BTreeMap<(Benchmark, u32), Group> {
    let mut g: BTreeMap<(Benchmark, u32), Group> = BTreeMap::new();
    for s in samples {
        g.entry((s.benchmark, s.np))
            .or_default()
            .entry(s.key.clone())
            .or_default()
            .entry(s.implementation.clone())
            .or_default()
            .push(s.value);
    }
    g
}

/// Summaries per implementation for each key of one benchmark and np.
pub fn summarize(
    samples: &[Sample],
    benchmark: Benchmark,
    np: u32,
) -> BTreeMap<Key, BTreeMap<String, Summary>> {
    let groups = group(samples);
    let mut out = BTreeMap::new();
    if let Some(g) = groups.get(&(benchmark, np)) {
        for (key, per_impl) in g {
            let m: BTreeMap<String, Summary> = per_impl
                .iter()
                .filter_map(|(name, v)| Summary::of(v).map(|s| (name.clone(), s)))
                .collect();
            out.insert(key.clone(), m);
        }
    }
    out
}

fn key_label(key: &Key) -> String {
    match key {
        Key::Size(b) => format_size(*b),
        Key::Metric(m) => m.clone(),
    }
}

/// The implementations that have figures, in comparison order; the first is the subject of
/// the ratios (oxmpi when it has figures, else the first peer).
fn with_figures(input: &ReportInput) -> Vec<String> {
    input
        .implementations
        .iter()
        .filter(|i| input.samples.iter().any(|s| s.implementation == i.name))
        .map(|i| i.name.clone())
        .collect()
}

/// One table: rows are keys; for each implementation its median and min–max; ratio columns
/// subject/other; a column naming the noisy implementations.
fn table(
    out: &mut String,
    first_col: &str,
    rows: &[(String, BTreeMap<String, Summary>)],
    names: &[String],
) {
    let subject = names.first();
    let others: Vec<&String> = names.iter().skip(1).collect();
    let mut head = format!("| {first_col} |");
    let mut rule = String::from("|---|");
    for n in names {
        let _ = write!(head, " {n} median | {n} min–max |");
        rule.push_str("---:|---:|");
    }
    if let Some(s) = subject {
        for o in &others {
            let _ = write!(head, " {s}/{o} |");
            rule.push_str("---:|");
        }
    }
    head.push_str(" noisy |");
    rule.push_str("---|");
    let _ = writeln!(out, "{head}\n{rule}");
    for (label, per_impl) in rows {
        let mut line = format!("| {label} |");
        for n in names {
            match per_impl.get(n) {
                Some(s) => {
                    let _ = write!(
                        line,
                        " {} | {}–{} |",
                        format_value(s.median),
                        format_value(s.min),
                        format_value(s.max)
                    );
                }
                None => line.push_str(" – | – |"),
            }
        }
        if let Some(s) = subject {
            for o in &others {
                let r = per_impl
                    .get(s)
                    .zip(per_impl.get(*o))
                    .and_then(|(a, b)| stats::ratio(a.median, b.median));
                match r {
                    Some(r) => {
                        let _ = write!(line, " {r:.2} |");
                    }
                    None => line.push_str(" – |"),
                }
            }
        }
        let noisy: Vec<&str> = names
            .iter()
            .filter(|n| per_impl.get(*n).is_some_and(Summary::is_noisy))
            .map(String::as_str)
            .collect();
        let _ = writeln!(line, " {} |", noisy.join(", "));
        out.push_str(&line);
    }
    out.push('\n');
}

/// The rows of the summary table: (benchmark, np, key).
fn summary_rows() -> Vec<(Benchmark, u32, Key)> {
    let mut v = vec![];
    for s in [0, 8, 4096, 65536, 4 << 20] {
        v.push((Benchmark::Latency, 2, Key::Size(s)));
    }
    for s in [65536, 4 << 20] {
        v.push((Benchmark::Bw, 2, Key::Size(s)));
    }
    v.push((Benchmark::Bibw, 2, Key::Size(4 << 20)));
    v.push((Benchmark::Msgrate, 2, Key::Size(8)));
    v.push((Benchmark::Barrier, 2, Key::Size(0)));
    for s in [8, 4096] {
        v.push((Benchmark::Allreduce, 2, Key::Size(s)));
    }
    for b in [Benchmark::PutLatency, Benchmark::GetLatency] {
        for s in [8, 1 << 20] {
            v.push((b, 2, Key::Size(s)));
        }
    }
    v.push((Benchmark::FopCounter, 2, Key::Size(0)));
    v
}

fn direction(b: Benchmark) -> &'static str {
    if b.higher_is_better() {
        "higher is better"
    } else {
        "lower is better"
    }
}

/// Renders the Markdown report.
pub fn markdown(input: &ReportInput) -> String {
    let mut out = String::new();
    let names = with_figures(input);
    let _ = writeln!(out, "# oxmpi-bench compare\n");
    let _ = writeln!(
        out,
        "Started {}; host: {}. Mode: {}.\n",
        input.started, input.host, input.mode
    );
    let _ = writeln!(
        out,
        "Implementations ran interleaved (A B A B …, one run of each per benchmark and repeat), \
         with the same sizes, options and core binding: one core per rank when ranks ≤ {} cores, \
         unbound (and said so) when oversubscribed. Figures are medians over repeats with the \
         min–max range; a row is noisy for an implementation when (max−min)/median > {:.0}%. \
         Ratios are {} — figures from failed runs or runs that reported wrong data are never shown.\n",
        input.cores,
        NOISE_THRESHOLD * 100.0,
        match names.as_slice() {
            [] | [_] => "shown when at least two implementations have figures".to_string(),
            [s, ..] => format!("{s}/other of the medians"),
        }
    );

    out.push_str("## Implementations\n\n| name | what | status |\n|---|---|---|\n");
    for i in &input.implementations {
        let status = match &i.unavailable {
            Some(why) => format!("failed: {why}"),
            None if names.contains(&i.name) => {
                let n = input
                    .failures
                    .iter()
                    .filter(|f| f.implementation == i.name)
                    .count();
                if n == 0 {
                    "ok".to_string()
                } else {
                    format!("ok, {n} benchmark(s) failed (see Failures)")
                }
            }
            None => "failed: no benchmark produced trusted figures (see Failures)".to_string(),
        };
        let _ = writeln!(out, "| {} | {} | {} |", i.name, i.description, status);
    }
    out.push('\n');

    // Summary.
    let mut rows = Vec::new();
    for (b, np, key) in summary_rows() {
        let per = summarize(&input.samples, b, np);
        if let Some(m) = per.get(&key) {
            if !m.is_empty() {
                let label = format!("{b} {} ({}, {})", key_label(&key), b.unit(), direction(b));
                rows.push((label, m.clone()));
            }
        }
    }
    if !rows.is_empty() {
        out.push_str("## Summary, np=2\n\n");
        table(&mut out, "benchmark, size", &rows, &names);
    }
    c_path_section(&mut out, input);
    for b in [Benchmark::Startup, Benchmark::Mem] {
        let mut rows = Vec::new();
        let nps: Vec<u32> = {
            let mut v: Vec<u32> = input
                .samples
                .iter()
                .filter(|s| s.benchmark == b)
                .map(|s| s.np)
                .collect();
            v.sort_unstable();
            v.dedup();
            v
        };
        for np in nps {
            for (key, m) in summarize(&input.samples, b, np) {
                let over = if np > input.cores {
                    ", oversubscribed"
                } else {
                    ""
                };
                rows.push((format!("np={np}{over} {}", key_label(&key)), m));
            }
        }
        if !rows.is_empty() {
            let title = match b {
                Benchmark::Startup => "Start-up: launch to exit of MPI_Init + MPI_Finalize (ms)",
                _ => "Memory per rank (kB), after an all-to-all has connected every pair",
            };
            let _ = writeln!(out, "## {title}\n");
            table(&mut out, "np, metric", &rows, &names);
        }
    }

    if !input.failures.is_empty() {
        out.push_str("## Failures\n\nNo figures are reported for these.\n\n");
        for f in &input.failures {
            let _ = writeln!(
                out,
                "- {} {} np={}: failed: {}",
                f.implementation, f.benchmark, f.np, f.reason
            );
        }
        out.push('\n');
    }

    out.push_str("## Results by benchmark\n\n");
    for ((b, np), _) in group(&input.samples) {
        if b.kind() != Kind::Sized {
            continue;
        }
        let binding = if np > input.cores {
            format!(
                "oversubscribed: {np} ranks on {} cores, unbound",
                input.cores
            )
        } else {
            "one core per rank".to_string()
        };
        let _ = writeln!(
            out,
            "### {b}, np={np}: {} ({}, {}; {binding})\n",
            b.quantity(),
            b.unit(),
            direction(b)
        );
        if let Some((_, _, path)) = input.plots.iter().find(|(pb, pn, _)| *pb == b && *pn == np) {
            let _ = writeln!(out, "![{b} np={np}]({path}.png) ([SVG]({path}.svg))\n");
        }
        let rows: Vec<(String, BTreeMap<String, Summary>)> = summarize(&input.samples, b, np)
            .into_iter()
            .map(|(k, m)| (key_label(&k), m))
            .collect();
        table(&mut out, "size (B)", &rows, &names);
    }

    out.push_str(METHOD);
    out
}

/// The native implementation and the same library through its C ABI, as named in reports.
const NATIVE: &str = "oxmpi";
const C_PATH: &str = "oxmpi-c";

/// The C ABI's cost: oxmpi-c (bench/c/oxbench.c on libmpi_abi) against oxmpi's native
/// benchmarks at the small sizes where a per-call overhead shows, when both have figures.
fn c_path_section(out: &mut String, input: &ReportInput) {
    let mut lines = Vec::new();
    for (b, size) in [
        (Benchmark::Latency, 0),
        (Benchmark::Latency, 8),
        (Benchmark::Msgrate, 8),
    ] {
        let per = summarize(&input.samples, b, 2);
        let Some((native, c)) = per
            .get(&Key::Size(size))
            .and_then(|m| m.get(NATIVE).zip(m.get(C_PATH)))
        else {
            continue;
        };
        let ratio = stats::ratio(c.median, native.median)
            .map_or_else(|| "–".to_string(), |r| format!("{r:.2}"));
        lines.push(format!(
            "| {b} {} ({}, {}) | {} | {} | {ratio} |",
            format_size(size),
            b.unit(),
            direction(b),
            format_value(native.median),
            format_value(c.median)
        ));
    }
    if lines.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "## The C ABI against the native path, np=2

\
         {C_PATH} is bench/c/oxbench.c built with oxmpi's mpicc on libmpi_abi; {NATIVE} is the same \
         benchmark on the native Rust API. Ratio = {C_PATH}/{NATIVE} of the medians.

\
         | benchmark, size | {NATIVE} median | {C_PATH} median | {C_PATH}/{NATIVE} |\n|---|---:|---:|---:|"
    );
    for l in lines {
        let _ = writeln!(out, "{l}");
    }
    out.push('\n');
}

const METHOD: &str = "## What is measured\n\n\
- Point-to-point and collectives: `bench/c/oxbench.c` (OSU method: warm-up, then timed \
iterations; bandwidth with a window of 64 nonblocking messages and an acknowledgement per \
window; one-way latency is half the round trip; collectives time each call, a barrier between \
calls, mean over ranks). MB = 10^6 bytes. Every size's data is checked after the last timed \
iteration; the barrier is checked for ordering with a marker file.\n\
- msgrate / multi-bw / multi-lat: np/2 pairs, rank i with rank i+np/2, all pairs at once \
(aggregate rate and bandwidth; latency is the mean over pairs).\n\
- Start-up: wall time from spawning the launcher to its exit for a program that only calls \
MPI_Init and MPI_Finalize.\n\
- Memory: `init --report-mem` after an all-to-all: `vmhwm-max-kB`/`vmhwm-mean-kB` are the \
largest and mean peak resident set (VmHWM) of the ranks; `shm-mapped-per-rank-kB` is the size of \
all distinct shared mappings (MAP_SHARED: /dev/shm files, SysV segments, shared files) of the \
job, each counted once by device and inode, divided by np; `rss-shmem-mean-kB` is the mean \
resident shared memory (RssShmem) of a rank. Launcher processes are not counted.\n";

/// Formats seconds since the Unix epoch as `YYYY-MM-DDTHH:MM:SSZ`.
pub fn format_utc(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Howard Hinnant's civil-from-days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(imp: &str, b: Benchmark, np: u32, key: Key, repeat: u32, value: f64) -> Sample {
        Sample {
            implementation: imp.to_string(),
            benchmark: b,
            np,
            oversubscribed: np > 2,
            key,
            repeat,
            value,
            unit: b.unit().to_string(),
        }
    }

    fn input() -> ReportInput {
        let mut samples = Vec::new();
        for (r, (a, b)) in [(1.0, 2.0), (1.1, 2.2), (1.05, 3.0)].iter().enumerate() {
            samples.push(sample(
                "openmpi",
                Benchmark::Latency,
                2,
                Key::Size(8),
                r as u32,
                *a,
            ));
            samples.push(sample(
                "mpich",
                Benchmark::Latency,
                2,
                Key::Size(8),
                r as u32,
                *b,
            ));
        }
        samples.push(sample(
            "openmpi",
            Benchmark::Bw,
            2,
            Key::Size(4 << 20),
            0,
            15000.0,
        ));
        samples.push(sample(
            "mpich",
            Benchmark::Startup,
            8,
            Key::Metric("wall-ms".into()),
            0,
            420.0,
        ));
        ReportInput {
            started: "2026-01-01T00:00:00Z".into(),
            host: "test".into(),
            cores: 2,
            mode: "quick".into(),
            implementations: vec![
                ImplInfo {
                    name: "oxmpi".into(),
                    description: "native".into(),
                    unavailable: Some("oxrun not found".into()),
                },
                ImplInfo {
                    name: "openmpi".into(),
                    description: "5.0".into(),
                    unavailable: None,
                },
                ImplInfo {
                    name: "mpich".into(),
                    description: "5.0".into(),
                    unavailable: None,
                },
            ],
            samples,
            failures: vec![Failure {
                implementation: "mpich".into(),
                benchmark: Benchmark::Bw,
                np: 2,
                reason: "wrong data: oxbench: bw: verification failed".into(),
            }],
            plots: vec![(Benchmark::Latency, 2, "plots/latency-np2".into())],
        }
    }

    #[test]
    fn csv_has_one_row_per_sample() {
        let inp = input();
        let csv = to_csv(&inp.samples);
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines.len(), 1 + inp.samples.len());
        assert_eq!(
            lines[0],
            "implementation,benchmark,np,oversubscribed,repeat,size,metric,value,unit"
        );
        assert_eq!(lines[1], "openmpi,latency,2,false,0,8,,1,us");
        assert!(lines.contains(&"mpich,startup,8,true,0,,wall-ms,420,ms"));
        assert_eq!(csv_field("a,\"b\""), "\"a,\"\"b\"\"\"");
    }

    #[test]
    fn report_shows_spread_ratio_noise_and_failures() {
        let md = markdown(&input());
        // Latency 8 B: openmpi 1.05 [1.0, 1.1], mpich 2.2 [2.0, 3.0] (noisy), ratio 0.48.
        let row = md
            .lines()
            .find(|l| l.starts_with("| latency 8 "))
            .expect("summary row");
        assert!(row.contains("| 1.05 | 1.00–1.10 |"), "{row}");
        assert!(row.contains("| 2.20 | 2.00–3.00 |"), "{row}");
        assert!(row.contains("| 0.48 |"), "{row}");
        assert!(row.trim_end().ends_with("| mpich |"), "{row}");
        assert!(md.contains("| openmpi/mpich |"));
        assert!(md.contains("| oxmpi | native | failed: oxrun not found |"));
        assert!(md.contains("- mpich bw np=2: failed: wrong data"));
        assert!(md.contains("np=8, oversubscribed wall-ms"));
        assert!(md.contains("![latency np=2](plots/latency-np2.png)"));
        // Bandwidth only from openmpi: the mpich cells are empty, no ratio.
        let bw = md.lines().find(|l| l.starts_with("| bw 4M ")).unwrap();
        assert!(bw.contains("| 15000 | 15000–15000 | – | – | – |"), "{bw}");
    }

    #[test]
    fn ratio_subject_is_oxmpi_once_it_has_figures() {
        let mut inp = input();
        inp.implementations[0].unavailable = None;
        inp.samples
            .push(sample("oxmpi", Benchmark::Latency, 2, Key::Size(8), 0, 0.5));
        let md = markdown(&inp);
        assert!(md.contains("| oxmpi/openmpi | oxmpi/mpich |"));
        let row = md.lines().find(|l| l.starts_with("| latency 8 ")).unwrap();
        assert!(row.contains("| 0.48 | 0.23 |"), "{row}");
    }

    #[test]
    fn c_path_is_set_beside_the_native_path() {
        let mut inp = input();
        assert!(!markdown(&inp).contains("C ABI against the native"));
        inp.implementations[0].unavailable = None;
        inp.implementations.insert(
            1,
            ImplInfo {
                name: "oxmpi-c".into(),
                description: "C".into(),
                unavailable: None,
            },
        );
        for (imp, size, v) in [
            ("oxmpi", 0, 0.2),
            ("oxmpi-c", 0, 0.25),
            ("oxmpi", 8, 0.4),
            ("oxmpi-c", 8, 0.42),
        ] {
            inp.samples
                .push(sample(imp, Benchmark::Latency, 2, Key::Size(size), 0, v));
        }
        let md = markdown(&inp);
        let (_, section) = md
            .split_once("## The C ABI against the native path, np=2")
            .expect("C path section");
        let row0 = section
            .lines()
            .find(|l| l.starts_with("| latency 0 ("))
            .unwrap();
        assert!(row0.ends_with("| 0.200 | 0.250 | 1.25 |"), "{row0}");
        let row8 = section
            .lines()
            .find(|l| l.starts_with("| latency 8 ("))
            .unwrap();
        assert!(row8.ends_with("| 0.400 | 0.420 | 1.05 |"), "{row8}");
        // The native rows stay, and oxmpi-c is a column of the summary like any peer.
        assert!(
            md.contains("| oxmpi/oxmpi-c | oxmpi/openmpi | oxmpi/mpich |"),
            "{md}"
        );
    }

    #[test]
    fn summaries_by_key() {
        let inp = input();
        let s = summarize(&inp.samples, Benchmark::Latency, 2);
        let m = &s[&Key::Size(8)];
        assert_eq!(m["mpich"].median, 2.2);
        assert!(summarize(&inp.samples, Benchmark::Latency, 4).is_empty());
    }

    #[test]
    fn value_formatting() {
        assert_eq!(format_value(0.0), "0");
        assert_eq!(format_value(0.1234), "0.123");
        assert_eq!(format_value(12.345), "12.35");
        assert_eq!(format_value(123.45), "123.5");
        assert_eq!(format_value(12345.6), "12346");
    }

    #[test]
    fn utc_formatting() {
        assert_eq!(format_utc(0), "1970-01-01T00:00:00Z");
        assert_eq!(format_utc(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(format_utc(1_767_225_599), "2025-12-31T23:59:59Z");
    }
}
