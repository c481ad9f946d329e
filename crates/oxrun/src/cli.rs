//! The command line: options, `-np`, and MPMD application contexts separated by `:`.
//!
//! `oxrun [OPTIONS] PROGRAM [ARGS]... [: [OPTIONS] PROGRAM [ARGS]...]...`
//!
//! The command line is first split at every standalone `:` into application contexts. In each
//! context, options come before the program; everything after the program name belongs to the
//! program. `-np N` (a single-dash long option, as in MPICH and Open MPI) is rewritten to
//! `--np N` in option position only, then each context is parsed by clap.
//!
//! Per-context options: `-n`/`-np` and `-x`. Job-wide options (`--timeout`, `--tag-output`,
//! `--bind-to`, `--report-bindings`, `--oversubscribe`, `--host`, `--hostfile`, `--map-by`,
//! `--launcher`) may be given in any context; giving one twice with different values is an
//! error.

use std::ffi::{OsStr, OsString};
use std::time::Duration;

use clap::error::ErrorKind;
use clap::Parser;

use std::collections::BTreeMap;

use crate::binding::{BindTo, Within};
use crate::hosts::{self, Host, MapBy};
use crate::slurm;

const AFTER_HELP: &str = "\
MPMD: separate application contexts with ':', e.g. `oxrun -n 1 server : -n 4 client`.
Ranks are numbered in the order of the contexts; each context has its own appnum (0, 1, ...).

Ranks inherit oxrun's environment, plus the -x variables of their context and PMI_FD,
PMI_RANK, PMI_SIZE, OXMPI_SECRET and OXMPI_JOBKEY. Standard input goes to rank 0 only.
Processes a rank starts with PMI spawn (MPI_Comm_spawn) run on this host as a new job of
the run, with PMI_SPAWNED=1; the run ends when every job's processes have ended.

Several hosts: `--host a:2,b:2` or `--hostfile FILE` (lines `NAME [slots=N]`, `#` comments).
Hosts other than `localhost` and this machine's name each get one agent (this oxrun binary,
at the same path there), started through the --launcher template: split at whitespace,
`{host}` replaced by the host's name, the agent's command appended. Map with --map-by.
Standard input is forwarded only when rank 0 runs on this host.

Inside a Slurm allocation (SLURM_JOB_ID set) without --host/--hostfile, the hosts are the
allocation's nodes with their task counts as slots, and agents start through
`srun --overlap --nodes=1 --ntasks=1 --nodelist={host} ...` (unless --launcher is given).

Exit status: 0 if every rank exited 0; else the first failing rank's exit status (128+N if it
was killed by signal N), the code given to abort (1 if that code is 0 modulo 256), 1 if a rank
broke the PMI protocol or the job could not start, 124 on --timeout, 128+N if oxrun received
signal N, 126/127 if PROGRAM cannot be executed or found, 2 for a bad command line.";

/// One application context as typed on the command line.
#[derive(Parser, Debug, Default)]
#[command(
    name = "oxrun",
    version,
    about = "Start an MPI job (or any program) as N ranks on this host",
    override_usage = "oxrun [OPTIONS] PROGRAM [ARGS]... [: [OPTIONS] PROGRAM [ARGS]...]...",
    after_help = AFTER_HELP
)]
struct ContextArgs {
    /// Number of ranks to start for this program (also `-np N`) [default: 1]
    #[arg(short = 'n', long = "np", value_name = "N", value_parser = parse_np, allow_negative_numbers = true)]
    np: Option<u32>,

    /// Set NAME=VALUE in the ranks' environment; `-x NAME` passes oxrun's own value of NAME
    /// (nothing if it is unset). Repeatable; applies to its application context
    #[arg(short = 'x', value_name = "NAME[=VALUE]")]
    env: Vec<OsString>,

    /// Stop the job and exit 124 if it runs longer than SECONDS
    #[arg(long, value_name = "SECONDS", value_parser = parse_timeout, allow_negative_numbers = true)]
    timeout: Option<Duration>,

    /// Prefix every line of output with the rank that wrote it, as `[RANK] `
    #[arg(long)]
    tag_output: bool,

    /// Bind each rank to its core, its core's socket or NUMA node, or not at all
    /// [default: core if ranks <= cores, else none]
    #[arg(long, value_enum, value_name = "core|socket|numa|none")]
    bind_to: Option<BindTo>,

    /// Bind ranks as FILE says: lines `rank N=HOST slot=CPULIST` (CPULIST as in `0-3,8`);
    /// only ranks on this host; other ranks follow --bind-to
    #[arg(long, value_name = "FILE")]
    rankfile: Option<OsString>,

    /// Print on stderr, for each rank, the CPUs it is bound to
    #[arg(long)]
    report_bindings: bool,

    /// Allow more ranks than the hosts' slots (always allowed without --host/--hostfile)
    #[arg(long)]
    oversubscribe: bool,

    /// Run on these hosts: NAME[:SLOTS],... (a host without :SLOTS has one slot)
    #[arg(long, value_name = "HOSTS")]
    host: Option<String>,

    /// Run on the hosts listed in FILE, one per line: NAME [slots=N]; `#` starts a comment
    #[arg(long, value_name = "FILE")]
    hostfile: Option<OsString>,

    /// Place ranks filling each host's slots in order (slot) or round-robin over hosts (node);
    /// core, socket and numa fill hosts like slot and, on each host, take cores in order or
    /// deal ranks round-robin over its sockets or NUMA nodes
    #[arg(long, value_enum, value_name = "slot|node|core|socket|numa")]
    map_by: Option<MapBy>,

    /// Command that runs a command on a host, `{host}` replaced by its name
    /// [default: ssh -o BatchMode=yes {host}]
    #[arg(long, value_name = "TEMPLATE")]
    launcher: Option<String>,

    /// The program to run and its arguments
    #[arg(value_name = "PROGRAM", trailing_var_arg = true, num_args = 1..)]
    command: Vec<OsString>,
}

fn parse_np(s: &str) -> Result<u32, String> {
    match s.trim().parse::<u32>() {
        Ok(0) => Err("the number of ranks must be at least 1".into()),
        Ok(n) => Ok(n),
        Err(_) => Err("expected a positive whole number of ranks".into()),
    }
}

fn parse_timeout(s: &str) -> Result<Duration, String> {
    match s.trim().parse::<f64>() {
        Ok(x) if x.is_finite() && x > 0.0 && x < 1e9 => Ok(Duration::from_secs_f64(x)),
        _ => Err("expected a positive number of seconds".into()),
    }
}

/// Options that take a value as the next argument; used to find where options end.
const VALUE_OPTIONS: [&str; 10] = [
    "--rankfile",
    "-n",
    "--np",
    "-x",
    "--timeout",
    "--bind-to",
    "--host",
    "--hostfile",
    "--map-by",
    "--launcher",
];

/// The launch command used when `--launcher` is not given.
pub const DEFAULT_LAUNCHER: &str = "ssh -o BatchMode=yes {host}";

/// One application context: a program started as `np` consecutive ranks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct App {
    /// Number of ranks.
    pub np: u32,
    /// The program as typed (resolved through `PATH` at launch).
    pub program: OsString,
    /// Its arguments.
    pub args: Vec<OsString>,
    /// Extra environment from `-x`, in command-line order.
    pub env: Vec<(OsString, OsString)>,
}

/// Everything the command line asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// Application contexts in rank order.
    pub apps: Vec<App>,
    /// `--timeout`.
    pub timeout: Option<Duration>,
    /// `--tag-output`.
    pub tag_output: bool,
    /// `--bind-to` (`None`: the default policy).
    pub bind_to: Option<BindTo>,
    /// `--report-bindings`.
    pub report_bindings: bool,
    /// How a host's ranks take its cores (from `--map-by`).
    pub within: Within,
    /// `--rankfile`: the CPUs of the ranks it names.
    pub rankfile: Option<BTreeMap<u32, Vec<usize>>>,
    /// The hosts and the host index of every rank; `None`: every rank on this host.
    pub placement: Option<Placement>,
}

/// Where the ranks of a multi-host job run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    /// The hosts, in the order given.
    pub hosts: Vec<Host>,
    /// Host index of each rank.
    pub node_of: Vec<u32>,
    /// The launch command template's words (each may contain `{host}`).
    pub launcher: Vec<String>,
}

/// Splits a launch command template into words, checking it names `{host}`.
pub fn parse_launcher(template: &str) -> Result<Vec<String>, String> {
    let words: Vec<String> = template.split_whitespace().map(str::to_owned).collect();
    if words.is_empty() {
        return Err("--launcher: empty launch command".into());
    }
    if !words.iter().any(|w| w.contains("{host}")) {
        return Err(format!(
            "--launcher {template:?}: the template must contain {{host}}"
        ));
    }
    Ok(words)
}

impl Plan {
    /// Total number of ranks.
    pub fn size(&self) -> u32 {
        self.apps.iter().map(|a| a.np).sum()
    }

    /// The appnum (index of its application context) of every rank, in rank order.
    pub fn appnums(&self) -> Vec<u32> {
        self.apps
            .iter()
            .enumerate()
            .flat_map(|(i, a)| (0..a.np).map(move |_| i as u32))
            .collect()
    }
}

/// Why parsing stopped without a plan.
#[derive(Debug)]
pub enum Stop {
    /// `--help` or `--version`: print this (to stdout) and exit 0.
    Info(String),
    /// A bad command line: print this one-line message and exit 2.
    Usage(String),
}

/// Most ranks one job may have; far beyond what one host can run, but keeps sizes sane.
pub const MAX_RANKS: u32 = 1 << 20;

/// Splits `args` (without argv\[0\]) at standalone `:` into application contexts.
pub fn split_contexts(args: Vec<OsString>) -> Vec<Vec<OsString>> {
    let mut out = vec![Vec::new()];
    for a in args {
        if a == ":" {
            out.push(Vec::new());
        } else if let Some(last) = out.last_mut() {
            last.push(a);
        }
    }
    out
}

/// Rewrites `-np` to `--np` wherever it stands in option position, i.e. before the program
/// name (and before any `--`).
pub fn rewrite_np(args: Vec<OsString>) -> Vec<OsString> {
    let mut out = Vec::with_capacity(args.len());
    let mut it = args.into_iter();
    while let Some(a) = it.next() {
        let bytes = a.as_encoded_bytes();
        if a == "-np" {
            out.push("--np".into());
            out.extend(it.next());
        } else if bytes.starts_with(b"-np=") {
            let mut s = OsString::from("-");
            s.push(&a);
            out.push(s);
        } else if VALUE_OPTIONS.iter().any(|o| a == *o) {
            out.push(a);
            out.extend(it.next());
        } else if a == "--" || !bytes.starts_with(b"-") || a == "-" {
            // The program (or the end of options): the rest is the program's.
            out.push(a);
            out.extend(it);
            break;
        } else {
            out.push(a);
        }
    }
    out
}

/// Parses a rank file: lines `rank N=HOST slot=CPULIST`, `#` comments; every rank below
/// `size` at most once, every CPU one oxrun may use (`allowed`).
pub fn parse_rankfile(
    text: &str,
    file: &str,
    size: u32,
    allowed: &[usize],
) -> Result<BTreeMap<u32, (String, Vec<usize>)>, String> {
    let mut out = BTreeMap::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let what = format!("{file} line {}", i + 1);
        let bad = || format!("{what}: expected `rank N=HOST slot=CPULIST`, got {line:?}");
        let mut words = line.split_whitespace();
        if words.next() != Some("rank") {
            return Err(bad());
        }
        let (rank, host) = words
            .next()
            .and_then(|w| w.split_once('='))
            .ok_or_else(bad)?;
        let cpus = words
            .next()
            .and_then(|w| w.strip_prefix("slot="))
            .ok_or_else(bad)?;
        if words.next().is_some() || host.is_empty() {
            return Err(bad());
        }
        let rank: u32 = rank.parse().map_err(|_| bad())?;
        if rank >= size {
            return Err(format!("{what}: rank {rank}, but the job has {size} ranks"));
        }
        let mut cpus = crate::binding::parse_cpu_list(cpus)
            .filter(|c| !c.is_empty())
            .ok_or_else(|| format!("{what}: {cpus:?} is not a CPU list"))?;
        cpus.sort_unstable();
        cpus.dedup();
        if let Some(c) = cpus.iter().find(|c| !allowed.contains(c)) {
            return Err(format!("{what}: CPU {c} is not one oxrun may use"));
        }
        if out.insert(rank, (host.to_owned(), cpus)).is_some() {
            return Err(format!("{what}: rank {rank} given twice"));
        }
    }
    Ok(out)
}

/// Turns a clap error into the message we print.
fn clap_stop(err: clap::Error) -> Stop {
    match err.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => Stop::Info(err.to_string()),
        _ => {
            let text = err.to_string();
            let first = text.lines().next().unwrap_or("invalid command line");
            let first = first.strip_prefix("error: ").unwrap_or(first);
            Stop::Usage(format!("{first} (try 'oxrun --help')"))
        }
    }
}

/// Parses `-x` values into environment assignments; `NAME` alone takes oxrun's value via
/// `lookup` and is skipped if that is unset.
fn parse_env(
    items: &[OsString],
    lookup: &dyn Fn(&OsStr) -> Option<OsString>,
) -> Result<Vec<(OsString, OsString)>, Stop> {
    let mut out = Vec::new();
    for item in items {
        let bytes = item.as_encoded_bytes();
        let (name, value) = match bytes.iter().position(|&b| b == b'=') {
            // Cutting at an ASCII '=' leaves both halves valid OS strings.
            Some(i) => (
                os_from_bytes(&bytes[..i]),
                Some(os_from_bytes(&bytes[i + 1..])),
            ),
            None => (item.clone(), None),
        };
        if name.is_empty() {
            return Err(Stop::Usage(format!(
                "-x {}: empty variable name",
                item.to_string_lossy()
            )));
        }
        if let Some(v) = value.or_else(|| lookup(&name)) {
            out.push((name, v));
        }
    }
    Ok(out)
}

fn os_from_bytes(bytes: &[u8]) -> OsString {
    use std::os::unix::ffi::OsStrExt;
    OsStr::from_bytes(bytes).to_owned()
}

/// Records a job-wide option seen in one context, refusing conflicting repeats.
fn merge<T: PartialEq>(slot: &mut Option<T>, new: Option<T>, name: &str) -> Result<(), Stop> {
    match (slot.as_ref(), new) {
        (Some(a), Some(b)) if *a != b => Err(Stop::Usage(format!(
            "{name} given twice with different values"
        ))),
        (None, Some(b)) => {
            *slot = Some(b);
            Ok(())
        }
        _ => Ok(()),
    }
}

/// Parses the command line (without argv\[0\]) into a [`Plan`].
pub fn parse(args: Vec<OsString>) -> Result<Plan, Stop> {
    parse_with_env(args, &|name| std::env::var_os(name))
}

/// [`parse`] with an explicit environment lookup for `-x NAME`.
pub fn parse_with_env(
    args: Vec<OsString>,
    lookup: &dyn Fn(&OsStr) -> Option<OsString>,
) -> Result<Plan, Stop> {
    let contexts = split_contexts(args);
    let many = contexts.len() > 1;
    let mut plan = Plan {
        apps: Vec::new(),
        timeout: None,
        tag_output: false,
        bind_to: None,
        report_bindings: false,
        within: Within::Core,
        rankfile: None,
        placement: None,
    };
    let mut rankfile = None;
    let (mut host, mut hostfile, mut map_by, mut launcher) = (None, None, None, None);
    let mut oversubscribe = false;
    for (i, ctx) in contexts.into_iter().enumerate() {
        let where_ = if many {
            format!(" in application context {}", i + 1)
        } else {
            String::new()
        };
        if ctx.is_empty() && many {
            return Err(Stop::Usage(format!(
                "empty application context {} (nothing between ':' separators)",
                i + 1
            )));
        }
        let argv = std::iter::once(OsString::from("oxrun")).chain(rewrite_np(ctx));
        let c = ContextArgs::try_parse_from(argv).map_err(clap_stop)?;
        merge(&mut plan.timeout, c.timeout, "--timeout")?;
        merge(&mut plan.bind_to, c.bind_to, "--bind-to")?;
        plan.tag_output |= c.tag_output;
        plan.report_bindings |= c.report_bindings;
        merge(&mut host, c.host, "--host")?;
        merge(&mut hostfile, c.hostfile, "--hostfile")?;
        merge(&mut map_by, c.map_by, "--map-by")?;
        merge(&mut rankfile, c.rankfile, "--rankfile")?;
        merge(&mut launcher, c.launcher, "--launcher")?;
        oversubscribe |= c.oversubscribe;
        let mut command = c.command.into_iter();
        let Some(program) = command.next() else {
            return Err(Stop::Usage(format!(
                "no program given{where_} (usage: oxrun [OPTIONS] -n N PROGRAM [ARGS]...)"
            )));
        };
        plan.apps.push(App {
            np: c.np.unwrap_or(1),
            program,
            args: command.collect(),
            env: parse_env(&c.env, lookup)?,
        });
    }
    let total: u64 = plan.apps.iter().map(|a| u64::from(a.np)).sum();
    if total > u64::from(MAX_RANKS) {
        return Err(Stop::Usage(format!(
            "{total} ranks requested; at most {MAX_RANKS} are supported"
        )));
    }
    let hosts = match (host, hostfile) {
        (Some(_), Some(_)) => {
            return Err(Stop::Usage(
                "--host and --hostfile cannot be used together".into(),
            ))
        }
        (Some(h), None) => Some(hosts::parse_host_list(&h).map_err(Stop::Usage)?),
        (None, Some(f)) => {
            Some(hosts::read_hostfile(std::path::Path::new(&f)).map_err(Stop::Usage)?)
        }
        (None, None) => {
            let env = |k: &str| lookup(OsStr::new(k)).and_then(|v| v.into_string().ok());
            let alloc = slurm::allocation(&env).map_err(Stop::Usage)?;
            if alloc.is_some() && launcher.is_none() {
                launcher = Some(slurm::SRUN_LAUNCHER.to_owned());
            }
            alloc
        }
    };
    match hosts {
        Some(hosts) => {
            let node_of = hosts::map_ranks(
                &hosts,
                plan.size(),
                map_by.unwrap_or_default(),
                oversubscribe,
            )
            .map_err(Stop::Usage)?;
            let launcher = parse_launcher(launcher.as_deref().unwrap_or(DEFAULT_LAUNCHER))
                .map_err(Stop::Usage)?;
            plan.placement = Some(Placement {
                hosts,
                node_of,
                launcher,
            });
        }
        None if matches!(map_by, Some(MapBy::Slot | MapBy::Node)) || launcher.is_some() => {
            return Err(Stop::Usage(
                "--map-by and --launcher need --host, --hostfile or a Slurm allocation".into(),
            ))
        }
        None => {}
    }
    plan.within = map_by.unwrap_or_default().within();
    if let Some(file) = rankfile {
        let name = std::path::Path::new(&file).display().to_string();
        let text = std::fs::read_to_string(&file)
            .map_err(|e| Stop::Usage(format!("--rankfile {name}: {e}")))?;
        let own = hosts::own_hostname();
        let host_of = |r: u32| -> Option<&str> {
            match &plan.placement {
                None => None,
                Some(p) => Some(p.hosts[p.node_of[r as usize] as usize].name.as_str()),
            }
        };
        let allowed = crate::sys::allowed_cpus().unwrap_or_default();
        let entries = parse_rankfile(&text, &name, plan.size(), &allowed).map_err(Stop::Usage)?;
        for (r, (host, _)) in &entries {
            let placed = host_of(*r).unwrap_or("localhost");
            let here =
                hosts::is_local(host, own.as_deref()) && hosts::is_local(placed, own.as_deref());
            if !here && host != placed {
                return Err(Stop::Usage(format!(
                    "--rankfile {name}: rank {r} is placed on {placed}, not {host}"
                )));
            }
            if !hosts::is_local(placed, own.as_deref()) {
                return Err(Stop::Usage(format!(
                    "--rankfile {name}: rank {r} runs on {placed}; rank files bind only ranks on this host"
                )));
            }
        }
        plan.rankfile = Some(
            entries
                .into_iter()
                .map(|(r, (_, cpus))| (r, cpus))
                .collect(),
        );
    }
    Ok(plan)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<OsString> {
        s.split_whitespace().map(OsString::from).collect()
    }

    fn no_env(_: &OsStr) -> Option<OsString> {
        None
    }

    fn ok(s: &str) -> Plan {
        match parse_with_env(args(s), &no_env) {
            Ok(p) => p,
            Err(e) => panic!("{s:?} did not parse: {e:?}"),
        }
    }

    fn usage(s: &str) -> String {
        match parse_with_env(args(s), &no_env) {
            Err(Stop::Usage(m)) => m,
            other => panic!("{s:?} should be a usage error, got {other:?}"),
        }
    }

    #[test]
    fn rank_files_parse_and_are_checked() {
        let allowed = [0, 1, 2, 3];
        let rf = parse_rankfile(
            "# two ranks\nrank 0=localhost slot=1\nrank 1=a slot=2-3\n",
            "rf",
            2,
            &allowed,
        )
        .unwrap();
        assert_eq!(rf[&0], ("localhost".to_owned(), vec![1]));
        assert_eq!(rf[&1], ("a".to_owned(), vec![2, 3]));
        for (bad, why) in [
            ("rank 2=localhost slot=0", "2 ranks"),
            ("rank 0=localhost slot=9", "CPU 9"),
            ("rank 0=localhost slot=x", "not a CPU list"),
            ("rank 0=localhost", "expected"),
            ("rnk 0=localhost slot=0", "expected"),
            ("rank 0=localhost slot=0\nrank 0=localhost slot=1", "twice"),
        ] {
            let err = parse_rankfile(bad, "rf", 2, &allowed).unwrap_err();
            assert!(err.contains(why), "{bad:?}: {err}");
        }
    }

    #[test]
    fn np_is_rewritten_only_in_option_position() {
        assert_eq!(
            rewrite_np(args("-np 4 prog -np 2")),
            args("--np 4 prog -np 2")
        );
        assert_eq!(
            rewrite_np(args("-x A -np 4 prog")),
            args("-x A --np 4 prog")
        );
        assert_eq!(rewrite_np(args("-x -np prog -np")), args("-x -np prog -np"));
        assert_eq!(rewrite_np(args("-np=3 prog")), args("--np=3 prog"));
        assert_eq!(rewrite_np(args("-- -np")), args("-- -np"));
        assert_eq!(
            rewrite_np(args("--tag-output -np 2 a")),
            args("--tag-output --np 2 a")
        );
    }

    #[test]
    fn simple_job() {
        let p = ok("-n 4 prog a b");
        assert_eq!(p.size(), 4);
        assert_eq!(p.apps.len(), 1);
        assert_eq!(p.apps[0].program, "prog");
        assert_eq!(p.apps[0].args, args("a b"));
        assert_eq!(p.timeout, None);
        assert!(!p.tag_output);
    }

    #[test]
    fn np_synonym_and_default() {
        assert_eq!(ok("-np 3 prog").size(), 3);
        assert_eq!(ok("--np 2 prog").size(), 2);
        assert_eq!(ok("-n5 prog").size(), 5);
        assert_eq!(ok("prog").size(), 1);
    }

    #[test]
    fn options_after_the_program_belong_to_it() {
        let p = ok("-n 2 prog -n 7 --timeout x --bogus -np 3");
        assert_eq!(p.size(), 2);
        assert_eq!(p.apps[0].args, args("-n 7 --timeout x --bogus -np 3"));
        assert_eq!(p.timeout, None);
        let p = ok("-n 1 -- -weird-name arg");
        assert_eq!(p.apps[0].program, "-weird-name");
    }

    #[test]
    fn mpmd_contexts_get_appnums_in_order() {
        let p = ok("--timeout 5 -n 1 a x : -n 3 b y z");
        assert_eq!(p.apps.len(), 2);
        assert_eq!(p.apps[0].program, "a");
        assert_eq!(p.apps[1].program, "b");
        assert_eq!(p.apps[1].args, args("y z"));
        assert_eq!(p.appnums(), vec![0, 1, 1, 1]);
        assert_eq!(p.timeout, Some(Duration::from_secs(5)));
        assert_eq!(ok("a : b : c").appnums(), vec![0, 1, 2]);
    }

    #[test]
    fn job_wide_options_merge_across_contexts() {
        let p = ok("-n 1 a : --tag-output --bind-to none -n 1 b");
        assert!(p.tag_output);
        assert_eq!(p.bind_to, Some(BindTo::None));
        assert!(usage("--timeout 1 a : --timeout 2 b").contains("--timeout"));
        assert_eq!(
            ok("--timeout 1 a : --timeout 1 b").timeout,
            Some(Duration::from_secs(1))
        );
    }

    #[test]
    fn env_options() {
        let lookup = |n: &OsStr| (n == "HOME").then(|| OsString::from("/home/me"));
        let p = parse_with_env(args("-x A=1 -x HOME -x UNSET -x B=x=y prog"), &lookup).unwrap();
        let env: Vec<(String, String)> = p.apps[0]
            .env
            .iter()
            .map(|(k, v)| (k.to_string_lossy().into(), v.to_string_lossy().into()))
            .collect();
        assert_eq!(
            env,
            vec![
                ("A".into(), "1".into()),
                ("HOME".into(), "/home/me".into()),
                ("B".into(), "x=y".into())
            ]
        );
        assert!(usage("-x =v prog").contains("empty variable name"));
    }

    #[test]
    fn timeout_and_bind_values() {
        assert_eq!(
            ok("--timeout 0.5 p").timeout,
            Some(Duration::from_millis(500))
        );
        assert!(usage("--timeout abc p").contains("--timeout"));
        assert!(usage("--timeout 0 p").contains("positive"));
        assert!(usage("--timeout -1 p").contains("positive"));
        assert_eq!(ok("--bind-to core p").bind_to, Some(BindTo::Core));
        assert!(usage("--bind-to board p").contains("board"));
    }

    #[test]
    fn bad_command_lines_are_one_line_errors() {
        for bad in [
            "--bogus -n 1 true",
            "-n 0 true",
            "-n -3 true",
            "-n x true",
            "-n 2",
            "",
            "-n 1 a :",
            ": a",
            "a : : b",
        ] {
            let m = usage(bad);
            assert!(!m.contains('\n'), "{bad:?}: {m:?}");
            assert!(!m.is_empty());
        }
        assert!(usage("-n 0 true").contains("at least 1"));
        assert!(usage("-n -3 true").contains("positive"));
        assert!(usage("--bogus true").contains("--bogus"));
        assert!(usage("-n 2").contains("no program"));
        assert!(usage("-n 1 a : -n 2").contains("application context 2"));
        assert!(usage("-n 4294967295 a : -n 4294967295 b").contains("at most"));
    }

    #[test]
    fn hosts_and_mapping() {
        let p = ok("--host a:2,b:2 -n 4 prog");
        let pl = p.placement.unwrap();
        assert_eq!(pl.node_of, vec![0, 0, 1, 1]);
        assert_eq!(pl.launcher, ["ssh", "-o", "BatchMode=yes", "{host}"]);
        let p = ok("--host a:2,b:2 --map-by node -n 4 prog");
        assert_eq!(p.placement.unwrap().node_of, vec![0, 1, 0, 1]);
        let p = parse_with_env(
            vec![
                "--launcher".into(),
                "ip netns exec {host}".into(),
                "--host".into(),
                "a,b".into(),
                "-n".into(),
                "2".into(),
                "p".into(),
            ],
            &no_env,
        )
        .unwrap();
        assert_eq!(
            p.placement.unwrap().launcher,
            ["ip", "netns", "exec", "{host}"]
        );
        assert!(usage("--host a:2 -n 3 p").contains("--oversubscribe"));
        assert_eq!(
            ok("--host a:2 --oversubscribe -n 3 p")
                .placement
                .unwrap()
                .node_of,
            vec![0, 0, 0]
        );
        assert!(usage("--host a --hostfile f p").contains("together"));
        assert!(usage("--map-by node p").contains("need --host"));
        assert_eq!(ok("--map-by socket -n 2 p").within, Within::Socket);
        assert_eq!(ok("--map-by numa -n 2 p").within, Within::Numa);
        assert_eq!(ok("--bind-to socket p").bind_to, Some(BindTo::Socket));
        assert!(usage("--rankfile /nonexistent/rf p").contains("/nonexistent/rf"));
        assert!(usage("--host a --map-by board p").contains("board"));
        assert!(usage("--host a --launcher ssh p").contains("{host}"));
        assert!(usage("--hostfile /nonexistent/hf p").contains("/nonexistent/hf"));
        assert!(usage("--host a:1 -n 1 a : --host b -n 1 b").contains("--host"));
        // Without hosts, any number of ranks runs here, as before.
        assert_eq!(ok("-n 64 p").placement, None);
    }

    #[test]
    fn help_and_version_are_info() {
        match parse_with_env(args("--help"), &no_env) {
            Err(Stop::Info(t)) => {
                assert!(t.contains("Usage"));
                assert!(t.contains("-np"));
                assert!(t.contains("--tag-output"));
            }
            other => panic!("{other:?}"),
        }
        match parse_with_env(args("--version"), &no_env) {
            Err(Stop::Info(t)) => assert!(t.starts_with("oxrun ")),
            other => panic!("{other:?}"),
        }
    }
}
