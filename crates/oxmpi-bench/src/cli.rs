//! The `oxmpi-bench` command line, and its translation into a checked [`Config`] for the
//! comparison.

use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

use crate::peers::{self, Peer};
use crate::suite::{self, Benchmark};

/// oxmpi's benchmark tool.
#[derive(Debug, Parser)]
#[command(
    name = "oxmpi-bench",
    version,
    about = "Benchmarks for oxmpi, side by side with Open MPI and MPICH"
)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run oxmpi, Open MPI and MPICH interleaved on the same benchmarks and write a report
    /// (report.md), every measurement (results.csv) and plots (plots/*.svg, *.png).
    Compare(CompareArgs),
    /// Raw TCP ping-pong latency and stream bandwidth (the floor under the TCP transport), over
    /// loopback or between two hosts (`--serve` / `--connect`).
    Rawtcp(crate::rawtcp::RawTcpArgs),
    /// The hardware floor under shared-memory latency: a cache-line ping-pong between two
    /// cores (one-way time, half the round trip).
    Floor(crate::floor::FloorArgs),
}

/// Options of `oxmpi-bench compare`.
#[derive(Debug, Args)]
pub struct CompareArgs {
    /// Peers to compare against, comma-separated (openmpi, mpich; `none` for none).
    #[arg(long, default_value = "openmpi,mpich")]
    pub peers: String,
    /// Output directory [default: <target>/oxmpi-bench/compare].
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Few repeats, fewer iterations and sizes: a run of a few minutes.
    #[arg(long)]
    pub quick: bool,
    /// Use an existing install of a peer instead of installing it: NAME=PATH, where PATH/bin
    /// holds mpicc and mpiexec. May be repeated.
    #[arg(long = "peer-prefix", value_name = "NAME=PATH")]
    pub peer_prefix: Vec<String>,
    /// Benchmarks to run, comma-separated, or `all`: latency latency-fresh bw bibw msgrate
    /// multi-bw multi-lat barrier bcast reduce allreduce gather scatter allgather alltoall
    /// allreduce-init put_latency get_latency put_bw get_bw acc_latency fop_counter ddt-contig
    /// ddt-vector ddt-vector64k ddt-indexed ddt-struct ddt-pack-vector ddt-pack-indexed
    /// ddt-pack-struct startup mem.
    #[arg(long, default_value = "all")]
    pub benchmarks: String,
    /// Rank counts, comma-separated, for msgrate, multi-bw, multi-lat and the collectives
    /// (latency, bw and bibw always use 2; odd counts are skipped for the pair benchmarks).
    #[arg(long, default_value = "2")]
    pub np: String,
    /// Rank counts for the start-up and memory rows.
    #[arg(long = "startup-np", default_value = "2,8")]
    pub startup_np: String,
    /// Repeats of every benchmark [default: 5, --quick 3; start-up 10/5; memory 3/1].
    #[arg(long)]
    pub repeats: Option<u32>,
    /// Time limit of one run in seconds; the job is killed after it [default: 600, --quick 180].
    #[arg(long)]
    pub timeout: Option<u64>,
    /// Timed iterations at every size, overriding the mode's choice.
    #[arg(long)]
    pub iters: Option<u64>,
    /// Warm-up iterations at every size, overriding the mode's choice.
    #[arg(long)]
    pub warmup: Option<u64>,
    /// Largest message size (K, M suffixes), overriding the mode's choice.
    #[arg(long = "max-size", value_parser = suite::parse_size)]
    pub max_size: Option<u64>,
    /// Where peers are installed [default: $OXMPI_PEERS_DIR or ~/.cache/oxmpi/peers].
    #[arg(long = "peers-dir")]
    pub peers_dir: Option<PathBuf>,
    /// Cargo target directory holding release/oxrun and release/oxmpi-bench [default: the one
    /// this program runs from].
    #[arg(long = "target-dir")]
    pub target_dir: Option<PathBuf>,
    /// Leave oxmpi out of the comparison (both its native and its C ABI rows).
    #[arg(long = "no-oxmpi")]
    pub no_oxmpi: bool,
    /// Leave out oxmpi-c (bench/c/oxbench.c on oxmpi's C ABI) and keep only the native rows.
    #[arg(long = "no-oxmpi-c")]
    pub no_oxmpi_c: bool,
    /// Build oxmpi-c with the `mpicc` of this install (`cargo xtask install --prefix DIR`) and
    /// run it with its `oxrun` [default: the build tree's libmpi_abi.so and oxrun].
    #[arg(long = "oxmpi-prefix", value_name = "DIR")]
    pub oxmpi_prefix: Option<PathBuf>,
}

/// A checked comparison configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// Peers, in order.
    pub peers: Vec<Peer>,
    /// Existing peer installs.
    pub peer_prefixes: Vec<(Peer, PathBuf)>,
    /// Output directory.
    pub out: PathBuf,
    /// Quick mode.
    pub quick: bool,
    /// Benchmarks, in catalogue order.
    pub benchmarks: Vec<Benchmark>,
    /// Rank counts for the pair and collective benchmarks.
    pub nps: Vec<u32>,
    /// Rank counts for start-up and memory.
    pub startup_nps: Vec<u32>,
    /// Repeats override.
    pub repeats: Option<u32>,
    /// Time limit of one run.
    pub timeout: Duration,
    /// Iterations override.
    pub iters: Option<u64>,
    /// Warm-up override.
    pub warmup: Option<u64>,
    /// Largest size override.
    pub max_size: Option<u64>,
    /// Peer install directory.
    pub peers_dir: PathBuf,
    /// Directory holding oxmpi's release binaries.
    pub release_dir: PathBuf,
    /// Whether oxmpi takes part.
    pub include_oxmpi: bool,
    /// Whether oxmpi also takes part through its C ABI (oxmpi-c).
    pub include_oxmpi_c: bool,
    /// An oxmpi install to build and run oxmpi-c with, instead of the build tree.
    pub oxmpi_prefix: Option<PathBuf>,
    /// Usable cores.
    pub cores: u32,
}

/// Parses a comma-separated list of rank counts, each at least `min`.
pub fn parse_np_list(list: &str, min: u32) -> Result<Vec<u32>, String> {
    let mut out = Vec::new();
    for item in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let n: u32 = item
            .parse()
            .map_err(|_| format!("'{item}' is not a rank count"))?;
        if n < min || n > 4096 {
            return Err(format!("rank count {n} is outside {min}..=4096"));
        }
        if !out.contains(&n) {
            out.push(n);
        }
    }
    if out.is_empty() {
        return Err("the rank-count list is empty".to_string());
    }
    Ok(out)
}

/// The Cargo target directory an executable at `exe` was built into: the parent of its
/// nearest `debug` or `release` ancestor directory.
pub fn target_dir_of(exe: &Path) -> Option<PathBuf> {
    exe.ancestors()
        .skip(1)
        .find(|a| {
            matches!(
                a.file_name().and_then(|n| n.to_str()),
                Some("debug" | "release")
            )
        })
        .and_then(Path::parent)
        .map(Path::to_path_buf)
}

/// The target directory to use when none is given.
pub fn default_target_dir() -> PathBuf {
    if let Some(t) = std::env::current_exe()
        .ok()
        .as_deref()
        .and_then(target_dir_of)
    {
        return t;
    }
    if let Some(t) = std::env::var_os("CARGO_TARGET_DIR").filter(|t| !t.is_empty()) {
        return PathBuf::from(t);
    }
    peers::repo_root().join("target")
}

impl CompareArgs {
    /// Checks the arguments and fills in defaults; `cores` is the number of usable cores.
    pub fn resolve(&self, cores: u32) -> Result<Config, String> {
        let peers = peers::parse_peer_list(&self.peers)?;
        let peer_prefixes = self
            .peer_prefix
            .iter()
            .map(|p| peers::parse_peer_prefix(p))
            .collect::<Result<Vec<_>, _>>()?;
        for (p, _) in &peer_prefixes {
            if !peers.contains(p) {
                return Err(format!("--peer-prefix names {p}, which is not in --peers"));
            }
        }
        if self.repeats == Some(0) {
            return Err("--repeats must be at least 1".to_string());
        }
        if self.timeout == Some(0) {
            return Err("--timeout must be at least 1 second".to_string());
        }
        if self.iters == Some(0) {
            return Err("--iters must be at least 1".to_string());
        }
        if self.oxmpi_prefix.is_some() && (self.no_oxmpi || self.no_oxmpi_c) {
            return Err(
                "--oxmpi-prefix is for oxmpi-c, which --no-oxmpi/--no-oxmpi-c leave out".into(),
            );
        }
        let target = self.target_dir.clone().unwrap_or_else(default_target_dir);
        let timeout = self.timeout.unwrap_or(if self.quick { 180 } else { 600 });
        Ok(Config {
            peers,
            peer_prefixes,
            out: self
                .out
                .clone()
                .unwrap_or_else(|| target.join("oxmpi-bench").join("compare")),
            quick: self.quick,
            benchmarks: suite::parse_benchmark_list(&self.benchmarks)?,
            nps: parse_np_list(&self.np, 2)?,
            startup_nps: parse_np_list(&self.startup_np, 1)?,
            repeats: self.repeats,
            timeout: Duration::from_secs(timeout),
            iters: self.iters,
            warmup: self.warmup,
            max_size: self.max_size,
            peers_dir: self
                .peers_dir
                .clone()
                .unwrap_or_else(peers::default_peers_dir),
            release_dir: target.join("release"),
            include_oxmpi: !self.no_oxmpi,
            include_oxmpi_c: !self.no_oxmpi && !self.no_oxmpi_c,
            oxmpi_prefix: self.oxmpi_prefix.clone(),
            cores: cores.max(1),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(extra: &[&str]) -> CompareArgs {
        let mut argv = vec!["oxmpi-bench", "compare"];
        argv.extend_from_slice(extra);
        match Cli::try_parse_from(argv).unwrap().command {
            Command::Compare(a) => a,
            Command::Rawtcp(_) | Command::Floor(_) => unreachable!("parsed `compare`"),
        }
    }

    /// The help of `--benchmarks` names every benchmark a user can ask for.
    #[test]
    fn benchmarks_help_lists_every_benchmark() {
        use clap::CommandFactory;
        let mut cmd = Cli::command();
        let compare = cmd.find_subcommand_mut("compare").expect("compare");
        let arg = compare
            .get_arguments()
            .find(|a| a.get_id() == "benchmarks")
            .expect("--benchmarks");
        let help = arg
            .get_long_help()
            .or(arg.get_help())
            .expect("help")
            .to_string();
        let words: Vec<&str> = help
            .split(|c: char| c.is_whitespace() || c == ':' || c == ',' || c == '.')
            .collect();
        for b in crate::suite::Benchmark::ALL {
            assert!(
                words.contains(&b.name()),
                "{} missing from: {help}",
                b.name()
            );
        }
    }

    #[test]
    fn floor_takes_a_pair_of_cores() {
        let c = Cli::try_parse_from(["oxmpi-bench", "floor", "--cores", "2,3"]).unwrap();
        let Command::Floor(f) = c.command else {
            panic!("parsed `floor`")
        };
        assert_eq!(f.cores, [2, 3]);
    }

    #[test]
    fn defaults() {
        let c = args(&["--target-dir", "/t"]).resolve(2).unwrap();
        assert_eq!(c.peers, vec![Peer::OpenMpi, Peer::Mpich]);
        assert_eq!(c.benchmarks.len(), Benchmark::ALL.len());
        assert_eq!(c.nps, vec![2]);
        assert_eq!(c.startup_nps, vec![2, 8]);
        assert_eq!(c.out, PathBuf::from("/t/oxmpi-bench/compare"));
        assert_eq!(c.release_dir, PathBuf::from("/t/release"));
        assert_eq!(c.timeout, Duration::from_secs(600));
        assert!(c.include_oxmpi && c.include_oxmpi_c && !c.quick);
        assert_eq!(c.oxmpi_prefix, None);
        let c = args(&["--no-oxmpi-c", "--target-dir", "/t"])
            .resolve(2)
            .unwrap();
        assert!(c.include_oxmpi && !c.include_oxmpi_c);
        let c = args(&["--oxmpi-prefix", "/opt/oxmpi"]).resolve(2).unwrap();
        assert_eq!(c.oxmpi_prefix, Some(PathBuf::from("/opt/oxmpi")));
    }

    #[test]
    fn full_option_set() {
        let c = args(&[
            "--peers",
            "mpich",
            "--quick",
            "--peer-prefix",
            "mpich=/opt/m",
            "--benchmarks",
            "latency,startup",
            "--np",
            "2,4",
            "--repeats",
            "2",
            "--max-size",
            "64K",
            "--no-oxmpi",
            "--out",
            "/o",
        ])
        .resolve(2)
        .unwrap();
        assert_eq!(c.peers, vec![Peer::Mpich]);
        assert_eq!(
            c.peer_prefixes,
            vec![(Peer::Mpich, PathBuf::from("/opt/m"))]
        );
        assert_eq!(c.benchmarks, vec![Benchmark::Latency, Benchmark::Startup]);
        assert_eq!(c.nps, vec![2, 4]);
        assert_eq!(c.repeats, Some(2));
        assert_eq!(c.max_size, Some(65536));
        assert_eq!(c.timeout, Duration::from_secs(180));
        assert!(!c.include_oxmpi && !c.include_oxmpi_c && c.quick);
        assert_eq!(c.out, PathBuf::from("/o"));
    }

    #[test]
    fn bad_arguments_are_errors() {
        let bad: [&[&str]; 8] = [
            &["--no-oxmpi", "--oxmpi-prefix", "/x"],
            &["--peers", "lam"],
            &["--benchmarks", "pingpong"],
            &["--np", "1"],
            &["--np", "two"],
            &["--repeats", "0"],
            &["--peers", "mpich", "--peer-prefix", "openmpi=/x"],
            &["--peer-prefix", "mpich"],
        ];
        for b in bad {
            assert!(args(b).resolve(2).is_err(), "{b:?}");
        }
        let mut argv = vec!["oxmpi-bench", "compare", "--max-size", "lots"];
        assert!(Cli::try_parse_from(&argv).is_err());
        argv.truncate(1);
        assert!(Cli::try_parse_from(&argv).is_err());
    }

    #[test]
    fn np_lists_and_target_dirs() {
        assert_eq!(parse_np_list("8, 2,8", 1).unwrap(), vec![8, 2]);
        assert!(parse_np_list("", 1).is_err());
        assert!(parse_np_list("0", 1).is_err());
        assert_eq!(
            target_dir_of(Path::new("/w/target/release/oxmpi-bench")),
            Some(PathBuf::from("/w/target"))
        );
        assert_eq!(
            target_dir_of(Path::new("/w/target/debug/deps/compare-1234")),
            Some(PathBuf::from("/w/target"))
        );
        assert_eq!(target_dir_of(Path::new("/usr/bin/oxmpi-bench")), None);
    }
}
