//! The benchmark catalogue: which benchmarks exist, what they measure, in which unit, over
//! which sizes, and the command-line options every front end (the C program `bench/c/oxbench.c`
//! and oxmpi's native `oxmpi-bench` subcommands) accepts.
//!
//! The contract of a front end, which `oxmpi-bench compare` relies on: invoked as
//! `PROGRAM BENCHMARK [--min SIZE] [--max SIZE] [--iters N] [--warmup N] [--window W]` (or
//! `PROGRAM init [--report-mem]`) under a launcher, rank 0 prints [`header_line`] and then one
//! [`row_line`] per size of [`BenchOptions::sizes`], in the unit of [`Benchmark::unit`]; data is
//! verified, and a mismatch prints `verification failed` on stderr and exits non-zero.
//! `init --report-mem` prints the [`MEM_METRICS`] as `NAME VALUE` lines.

use std::fmt;

/// How a benchmark's figures are obtained and read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// An OSU-style program printing one `SIZE VALUE` line per message size.
    Sized,
    /// Wall time from launch to exit of the `init` program (measured by the harness).
    Startup,
    /// Memory per rank reported by `init --report-mem` (named metrics).
    Memory,
}

/// Which OSU iteration defaults a benchmark uses; decides the harness's reduced counts too.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IterClass {
    /// Ping-pong style (10 000 iterations, 1 000 above 8 KiB).
    Latency,
    /// Windowed streaming (100 windows, 20 above 8 KiB).
    Bandwidth,
    /// Collectives (1 000 calls, 100 above 8 KiB).
    Collective,
}

/// How many ranks a benchmark runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RankPolicy {
    /// Exactly two ranks, whatever `--np` says.
    Two,
    /// Pairs between the two halves of the ranks: any even count.
    Pairs,
    /// Any count of at least two.
    Any,
    /// The start-up/memory rank counts (`--startup-np`).
    Startup,
}

/// One benchmark of the suite.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Benchmark {
    /// One-way ping-pong latency, ranks 0 and 1.
    Latency,
    /// Ping-pong latency of data written just before each send (the copy is timed too): what
    /// a program sending newly computed data sees, which `Latency`'s unchanged buffer hides.
    LatencyFresh,
    /// Unidirectional windowed bandwidth.
    Bw,
    /// Bidirectional windowed bandwidth.
    Bibw,
    /// Aggregate message rate of np/2 pairs.
    Msgrate,
    /// Aggregate bandwidth of np/2 pairs between the two halves of the ranks.
    MultiBw,
    /// Latency while all np/2 pairs ping-pong at once.
    MultiLat,
    /// `MPI_Barrier`.
    Barrier,
    /// `MPI_Bcast`.
    Bcast,
    /// `MPI_Reduce` (int32 sum).
    Reduce,
    /// `MPI_Allreduce` (int32 sum).
    Allreduce,
    /// `MPI_Gather`.
    Gather,
    /// `MPI_Scatter`.
    Scatter,
    /// `MPI_Allgather`.
    Allgather,
    /// `MPI_Alltoall`.
    Alltoall,
    /// `MPI_Allreduce_init` once per size, then `MPI_Start` + `MPI_Wait` per call (int32
    /// sum): what a persistent start saves against [`Allreduce`](Benchmark::Allreduce).
    AllreduceInit,
    /// `MPI_Put` of a message to rank 1's window plus `MPI_Win_flush`, inside `lock_all`.
    PutLatency,
    /// `MPI_Get` from rank 1's window plus `MPI_Win_flush`.
    GetLatency,
    /// A window of `MPI_Put`s, then one flush.
    PutBw,
    /// A window of `MPI_Get`s, then one flush.
    GetBw,
    /// `MPI_Accumulate` (int32 sum) plus `MPI_Win_flush`.
    AccLatency,
    /// Every rank increments one counter on rank 0 with `MPI_Fetch_and_op` (int64 sum).
    FopCounter,
    /// Ping-pong bandwidth of contiguous doubles: the baseline of the datatype benchmarks.
    DdtContig,
    /// Ping-pong bandwidth of a stride-2 vector of doubles (blocks of one double).
    DdtVector,
    /// Ping-pong bandwidth of a stride-2 vector of 64 KiB blocks (one block below 64 KiB).
    DdtVector64k,
    /// Ping-pong bandwidth of an indexed type: blocks of 1, 2, 3, 4 doubles, one double apart.
    DdtIndexed,
    /// Ping-pong bandwidth of a struct {int32 @0, double @8, int32 @16} of extent 24.
    DdtStruct,
    /// `MPI_Pack` + `MPI_Unpack` throughput of the [`DdtVector`](Benchmark::DdtVector) type.
    DdtPackVector,
    /// `MPI_Pack` + `MPI_Unpack` throughput of the [`DdtIndexed`](Benchmark::DdtIndexed) type.
    DdtPackIndexed,
    /// `MPI_Pack` + `MPI_Unpack` throughput of the [`DdtStruct`](Benchmark::DdtStruct) type.
    DdtPackStruct,
    /// Launch-to-exit time of an init/finalize program.
    Startup,
    /// Peak RSS and shared memory per rank.
    Mem,
}

impl Benchmark {
    /// Every benchmark, in report order.
    pub const ALL: [Benchmark; 32] = [
        Benchmark::Latency,
        Benchmark::LatencyFresh,
        Benchmark::Bw,
        Benchmark::Bibw,
        Benchmark::Msgrate,
        Benchmark::MultiBw,
        Benchmark::MultiLat,
        Benchmark::Barrier,
        Benchmark::Bcast,
        Benchmark::Reduce,
        Benchmark::Allreduce,
        Benchmark::Gather,
        Benchmark::Scatter,
        Benchmark::Allgather,
        Benchmark::Alltoall,
        Benchmark::AllreduceInit,
        Benchmark::PutLatency,
        Benchmark::GetLatency,
        Benchmark::PutBw,
        Benchmark::GetBw,
        Benchmark::AccLatency,
        Benchmark::FopCounter,
        Benchmark::DdtContig,
        Benchmark::DdtVector,
        Benchmark::DdtVector64k,
        Benchmark::DdtIndexed,
        Benchmark::DdtStruct,
        Benchmark::DdtPackVector,
        Benchmark::DdtPackIndexed,
        Benchmark::DdtPackStruct,
        Benchmark::Startup,
        Benchmark::Mem,
    ];

    /// The name used on command lines, in output headers and in the CSV.
    pub fn name(self) -> &'static str {
        match self {
            Benchmark::Latency => "latency",
            Benchmark::LatencyFresh => "latency-fresh",
            Benchmark::Bw => "bw",
            Benchmark::Bibw => "bibw",
            Benchmark::Msgrate => "msgrate",
            Benchmark::MultiBw => "multi-bw",
            Benchmark::MultiLat => "multi-lat",
            Benchmark::Barrier => "barrier",
            Benchmark::Bcast => "bcast",
            Benchmark::Reduce => "reduce",
            Benchmark::Allreduce => "allreduce",
            Benchmark::Gather => "gather",
            Benchmark::Scatter => "scatter",
            Benchmark::Allgather => "allgather",
            Benchmark::Alltoall => "alltoall",
            Benchmark::AllreduceInit => "allreduce-init",
            Benchmark::PutLatency => "put_latency",
            Benchmark::GetLatency => "get_latency",
            Benchmark::PutBw => "put_bw",
            Benchmark::GetBw => "get_bw",
            Benchmark::AccLatency => "acc_latency",
            Benchmark::FopCounter => "fop_counter",
            Benchmark::DdtContig => "ddt-contig",
            Benchmark::DdtVector => "ddt-vector",
            Benchmark::DdtVector64k => "ddt-vector64k",
            Benchmark::DdtIndexed => "ddt-indexed",
            Benchmark::DdtStruct => "ddt-struct",
            Benchmark::DdtPackVector => "ddt-pack-vector",
            Benchmark::DdtPackIndexed => "ddt-pack-indexed",
            Benchmark::DdtPackStruct => "ddt-pack-struct",
            Benchmark::Startup => "startup",
            Benchmark::Mem => "mem",
        }
    }

    /// Looks a benchmark up by its [`name`](Self::name).
    pub fn from_name(name: &str) -> Option<Benchmark> {
        Benchmark::ALL.into_iter().find(|b| b.name() == name)
    }

    /// How the figures are obtained.
    pub fn kind(self) -> Kind {
        match self {
            Benchmark::Startup => Kind::Startup,
            Benchmark::Mem => Kind::Memory,
            _ => Kind::Sized,
        }
    }

    /// The unit of the figures.
    pub fn unit(self) -> &'static str {
        match self {
            Benchmark::Bw
            | Benchmark::Bibw
            | Benchmark::MultiBw
            | Benchmark::PutBw
            | Benchmark::GetBw => "MB/s",
            b if b.is_ddt() => "MB/s",
            Benchmark::Msgrate => "messages/s",
            Benchmark::Startup => "ms",
            Benchmark::Mem => "kB",
            _ => "us",
        }
    }

    /// What the figures measure, for titles and table headings.
    pub fn quantity(self) -> &'static str {
        match self {
            Benchmark::Latency => "one-way latency",
            Benchmark::LatencyFresh => {
                "one-way latency, each send of newly written data (its copy timed too)"
            }
            Benchmark::Bw => "bandwidth",
            Benchmark::Bibw => "bidirectional bandwidth",
            Benchmark::Msgrate => "aggregate message rate, np/2 pairs",
            Benchmark::MultiBw => "aggregate bandwidth, np/2 pairs",
            Benchmark::MultiLat => "latency under load, all pairs at once",
            Benchmark::Barrier => "barrier latency",
            Benchmark::Bcast => "bcast latency",
            Benchmark::Reduce => "reduce latency (int32 sum)",
            Benchmark::Allreduce => "allreduce latency (int32 sum)",
            Benchmark::Gather => "gather latency",
            Benchmark::Scatter => "scatter latency",
            Benchmark::Allgather => "allgather latency",
            Benchmark::Alltoall => "alltoall latency",
            Benchmark::AllreduceInit => {
                "persistent allreduce latency (int32 sum; MPI_Start + MPI_Wait)"
            }
            Benchmark::PutLatency => "put latency (MPI_Put + MPI_Win_flush)",
            Benchmark::GetLatency => "get latency (MPI_Get + MPI_Win_flush)",
            Benchmark::PutBw => "put bandwidth (a window of MPI_Put, one flush)",
            Benchmark::GetBw => "get bandwidth (a window of MPI_Get, one flush)",
            Benchmark::AccLatency => "accumulate latency (int32 sum + MPI_Win_flush)",
            Benchmark::FopCounter => {
                "contended counter: MPI_Fetch_and_op on rank 0 from every rank, time per increment"
            }
            Benchmark::DdtContig => "ping-pong bandwidth, contiguous doubles",
            Benchmark::DdtVector => "ping-pong bandwidth, vector of doubles, stride 2",
            Benchmark::DdtVector64k => "ping-pong bandwidth, vector of 64 KiB blocks, stride 2",
            Benchmark::DdtIndexed => "ping-pong bandwidth, indexed blocks of 1-4 doubles",
            Benchmark::DdtStruct => "ping-pong bandwidth, struct {int32, double, int32}",
            Benchmark::DdtPackVector => "pack + unpack throughput, vector of doubles, stride 2",
            Benchmark::DdtPackIndexed => "pack + unpack throughput, indexed blocks of 1-4 doubles",
            Benchmark::DdtPackStruct => "pack + unpack throughput, struct {int32, double, int32}",
            Benchmark::Startup => "launch-to-exit wall time of MPI_Init + MPI_Finalize",
            Benchmark::Mem => "memory per rank",
        }
    }

    /// True when a larger figure is better (bandwidth, message rate).
    pub fn higher_is_better(self) -> bool {
        matches!(
            self,
            Benchmark::Bw
                | Benchmark::Bibw
                | Benchmark::Msgrate
                | Benchmark::MultiBw
                | Benchmark::PutBw
                | Benchmark::GetBw
        ) || self.is_ddt()
    }

    /// True for the derived-datatype benchmarks (`ddt-*`; sizes count data bytes).
    pub fn is_ddt(self) -> bool {
        matches!(
            self,
            Benchmark::DdtContig
                | Benchmark::DdtVector
                | Benchmark::DdtVector64k
                | Benchmark::DdtIndexed
                | Benchmark::DdtStruct
                | Benchmark::DdtPackVector
                | Benchmark::DdtPackIndexed
                | Benchmark::DdtPackStruct
        )
    }

    /// The OSU iteration class of the benchmark.
    pub fn iter_class(self) -> IterClass {
        match self {
            Benchmark::Latency
            | Benchmark::LatencyFresh
            | Benchmark::MultiLat
            | Benchmark::PutLatency
            | Benchmark::GetLatency
            | Benchmark::AccLatency
            | Benchmark::FopCounter => IterClass::Latency,
            Benchmark::Bw
            | Benchmark::Bibw
            | Benchmark::Msgrate
            | Benchmark::MultiBw
            | Benchmark::PutBw
            | Benchmark::GetBw => IterClass::Bandwidth,
            b if b.is_ddt() => IterClass::Bandwidth,
            _ => IterClass::Collective,
        }
    }

    /// How many ranks the benchmark runs on.
    pub fn rank_policy(self) -> RankPolicy {
        match self {
            Benchmark::Latency
            | Benchmark::LatencyFresh
            | Benchmark::Bw
            | Benchmark::Bibw
            | Benchmark::PutLatency
            | Benchmark::GetLatency
            | Benchmark::PutBw
            | Benchmark::GetBw
            | Benchmark::AccLatency => RankPolicy::Two,
            b if b.is_ddt() => RankPolicy::Two,
            Benchmark::Msgrate | Benchmark::MultiBw | Benchmark::MultiLat => RankPolicy::Pairs,
            Benchmark::Startup | Benchmark::Mem => RankPolicy::Startup,
            _ => RankPolicy::Any,
        }
    }

    /// The default size range `(min, max)` in bytes, as in the C program.
    pub fn default_sizes(self) -> (u64, u64) {
        match self {
            Benchmark::Latency | Benchmark::LatencyFresh | Benchmark::MultiLat => (0, 4 << 20),
            Benchmark::Bw | Benchmark::Bibw | Benchmark::Msgrate | Benchmark::MultiBw => {
                (1, 4 << 20)
            }
            Benchmark::PutLatency | Benchmark::GetLatency | Benchmark::PutBw | Benchmark::GetBw => {
                (1, 4 << 20)
            }
            Benchmark::Barrier | Benchmark::FopCounter | Benchmark::Startup | Benchmark::Mem => {
                (0, 0)
            }
            b if b.is_ddt() => (1 << 10, 16 << 20),
            _ => (4, 1 << 20),
        }
    }

    /// True for benchmarks whose figures form a curve over message sizes (worth a plot).
    pub fn has_size_axis(self) -> bool {
        self.kind() == Kind::Sized && !matches!(self, Benchmark::Barrier | Benchmark::FopCounter)
    }

    /// The arguments after the program name: `[name, options...]` or `[init, ...]`.
    pub fn program_args(self, options: &BenchOptions) -> Vec<String> {
        match self {
            Benchmark::Startup => vec!["init".to_string()],
            Benchmark::Mem => vec!["init".to_string(), "--report-mem".to_string()],
            _ => {
                let mut args = vec![self.name().to_string()];
                args.extend(options.to_args());
                args
            }
        }
    }
}

impl fmt::Display for Benchmark {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The metrics printed by `init --report-mem`, in order (see `bench/c/oxbench.c`).
pub const MEM_METRICS: [&str; 4] = [
    "vmhwm-max-kB",
    "vmhwm-mean-kB",
    "shm-mapped-per-rank-kB",
    "rss-shmem-mean-kB",
];

/// The header line every front end prints before its rows (without the newline), e.g.
/// `# oxbench latency np=2: one-way latency (us)`.
pub fn header_line(benchmark: Benchmark, np: u32) -> String {
    format!(
        "# oxbench {} np={np}: {} ({})",
        benchmark.name(),
        benchmark.quantity(),
        benchmark.unit()
    )
}

/// One result line (without the newline): `SIZE VALUE`, as the C program prints it.
pub fn row_line(size: u64, value: f64) -> String {
    format!("{size:<10} {value:.3}")
}

/// Parses a comma-separated benchmark list (`all` selects every benchmark).
pub fn parse_benchmark_list(list: &str) -> Result<Vec<Benchmark>, String> {
    let mut out = Vec::new();
    for item in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        if item == "all" {
            out.extend(Benchmark::ALL);
            continue;
        }
        let b = Benchmark::from_name(item).ok_or_else(|| {
            let known: Vec<&str> = Benchmark::ALL.iter().map(|b| b.name()).collect();
            format!(
                "unknown benchmark '{item}' (known: {}, all)",
                known.join(", ")
            )
        })?;
        out.push(b);
    }
    if out.is_empty() {
        return Err("the benchmark list is empty".to_string());
    }
    out.sort();
    out.dedup();
    Ok(out)
}

/// Options shared by every front end of the suite (C program and oxmpi-native), with the same
/// names and meanings: `--min SIZE --max SIZE --iters N --warmup N --window W`.
///
/// `None` leaves the program's own (OSU) default in force.
#[derive(Clone, Debug, Default, PartialEq, Eq, clap::Args)]
pub struct BenchOptions {
    /// Smallest message size in bytes.
    #[arg(long, value_parser = parse_size)]
    pub min: Option<u64>,
    /// Largest message size in bytes (K, M, G suffixes accepted).
    #[arg(long, value_parser = parse_size)]
    pub max: Option<u64>,
    /// Timed iterations at every size (default: OSU's, fewer above 8 KiB).
    #[arg(long)]
    pub iters: Option<u64>,
    /// Untimed warm-up iterations at every size.
    #[arg(long)]
    pub warmup: Option<u64>,
    /// Messages in flight per window for the bandwidth benchmarks (default 64).
    #[arg(long)]
    pub window: Option<u32>,
}

impl BenchOptions {
    /// Renders the options as command-line arguments, omitting unset ones.
    pub fn to_args(&self) -> Vec<String> {
        let mut args = Vec::new();
        let mut push = |flag: &str, v: Option<u64>| {
            if let Some(v) = v {
                args.push(flag.to_string());
                args.push(v.to_string());
            }
        };
        push("--min", self.min);
        push("--max", self.max);
        push("--iters", self.iters);
        push("--warmup", self.warmup);
        push("--window", self.window.map(u64::from));
        args
    }

    /// The sizes the program will print for `benchmark`: powers of two (after 0) from the
    /// effective minimum to the effective maximum.
    pub fn sizes(&self, benchmark: Benchmark) -> Vec<u64> {
        let (dmin, dmax) = benchmark.default_sizes();
        if matches!(benchmark, Benchmark::Barrier | Benchmark::FopCounter) {
            return vec![0];
        }
        let mut min = self.min.unwrap_or(dmin);
        let max = self.max.unwrap_or(dmax);
        if matches!(
            benchmark,
            Benchmark::Reduce
                | Benchmark::Allreduce
                | Benchmark::AllreduceInit
                | Benchmark::AccLatency
        ) {
            min = min.max(4);
        }
        size_sequence(min, max)
    }
}

/// Sizes from `min` to `max` inclusive, each the double of the previous (0 is followed by 1).
pub fn size_sequence(min: u64, max: u64) -> Vec<u64> {
    let mut out = Vec::new();
    let mut s = min;
    while s <= max {
        out.push(s);
        s = match s {
            0 => 1,
            _ => match s.checked_mul(2) {
                Some(next) => next,
                None => break,
            },
        };
    }
    out
}

/// Parses a byte count with an optional K, M or G suffix (powers of 1024).
pub fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let (digits, shift) = match t.char_indices().last() {
        Some((i, 'K' | 'k')) => (&t[..i], 10),
        Some((i, 'M' | 'm')) => (&t[..i], 20),
        Some((i, 'G' | 'g')) => (&t[..i], 30),
        _ => (t, 0),
    };
    let v: u64 = digits
        .parse()
        .map_err(|_| format!("'{text}' is not a size (bytes, optionally with K, M or G)"))?;
    v.checked_mul(1u64 << shift)
        .ok_or_else(|| format!("size '{text}' is too large"))
}

/// Formats a byte count compactly: `512`, `4K`, `1M`.
pub fn format_size(bytes: u64) -> String {
    if bytes >= 1 << 20 && bytes.trailing_zeros() >= 20 {
        format!("{}M", bytes >> 20)
    } else if bytes >= 1 << 10 && bytes.trailing_zeros() >= 10 {
        format!("{}K", bytes >> 10)
    } else {
        bytes.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for b in Benchmark::ALL {
            assert_eq!(Benchmark::from_name(b.name()), Some(b));
        }
        assert_eq!(Benchmark::from_name("pingpong"), None);
    }

    #[test]
    fn benchmark_list_parses_dedups_and_rejects_unknown() {
        assert_eq!(
            parse_benchmark_list("bw, latency,bw").unwrap(),
            vec![Benchmark::Latency, Benchmark::Bw]
        );
        assert_eq!(parse_benchmark_list("all").unwrap().len(), 32);
        let err = parse_benchmark_list("latency,nope").unwrap_err();
        assert!(err.contains("unknown benchmark 'nope'"), "{err}");
        assert!(parse_benchmark_list(" , ").is_err());
    }

    #[test]
    fn sizes_follow_the_c_program() {
        let o = BenchOptions::default();
        let lat = o.sizes(Benchmark::Latency);
        assert_eq!(lat.len(), 24);
        assert_eq!(&lat[..4], &[0, 1, 2, 4]);
        assert_eq!(*lat.last().unwrap(), 4 << 20);
        let bw = o.sizes(Benchmark::Bw);
        assert_eq!((bw[0], bw.len()), (1, 23));
        let coll = o.sizes(Benchmark::Allreduce);
        assert_eq!((coll[0], *coll.last().unwrap()), (4, 1 << 20));
        assert_eq!(o.sizes(Benchmark::Barrier), vec![0]);
        let small = BenchOptions {
            min: Some(1),
            max: Some(16),
            ..Default::default()
        };
        assert_eq!(small.sizes(Benchmark::Reduce), vec![4, 8, 16]);
        assert_eq!(small.sizes(Benchmark::Gather), vec![1, 2, 4, 8, 16]);
    }

    #[test]
    fn options_render_only_what_is_set() {
        let o = BenchOptions {
            max: Some(64),
            iters: Some(5),
            ..Default::default()
        };
        assert_eq!(o.to_args(), ["--max", "64", "--iters", "5"]);
        assert_eq!(Benchmark::Mem.program_args(&o), ["init", "--report-mem"]);
        assert_eq!(
            Benchmark::Bw.program_args(&o),
            ["bw", "--max", "64", "--iters", "5"]
        );
    }

    #[test]
    fn header_and_rows_parse_back() {
        let text = format!(
            "{}\n{}\n{}\n",
            header_line(Benchmark::Bw, 2),
            row_line(1, 2.5),
            row_line(2, 5.0)
        );
        assert!(text.starts_with("# oxbench bw np=2: bandwidth (MB/s)\n1          2.500\n"));
        let out = crate::parse::parse_osu(&text).unwrap();
        assert_eq!(out.benchmark.as_deref(), Some("bw"));
        assert_eq!(out.np, Some(2));
        assert_eq!(out.unit, "MB/s");
        assert_eq!(out.rows, vec![(1, 2.5), (2, 5.0)]);
    }

    #[test]
    fn size_parsing_and_formatting() {
        assert_eq!(parse_size("4M"), Ok(4 << 20));
        assert_eq!(parse_size("64k"), Ok(65536));
        assert_eq!(parse_size("17"), Ok(17));
        assert!(parse_size("x").is_err());
        assert!(parse_size("-1").is_err());
        assert!(parse_size("99999999999G").is_err());
        assert_eq!(format_size(0), "0");
        assert_eq!(format_size(4096), "4K");
        assert_eq!(format_size(4 << 20), "4M");
        assert_eq!(format_size(1536), "1536");
        assert_eq!(size_sequence(0, 4), vec![0, 1, 2, 4]);
        assert_eq!(size_sequence(3, 20), vec![3, 6, 12]);
        assert!(size_sequence(8, 4).is_empty());
    }
}
