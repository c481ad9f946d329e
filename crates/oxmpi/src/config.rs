//! Tunables: every `OXMPI_*` environment variable, read once at start-up.
//!
//! The table is the single source of truth: `oxmpi-info` prints it, and [`Config::from_env`]
//! parses it. Adding a tunable means adding one line to `tunables!` below.
//!
//! Each value comes from the environment if set there, else from the host's tunables file
//! (`NAME = VALUE` lines, `#` comments; written by `oxmpi-info --calibrate`), else from the
//! built-in default. The file is `$OXMPI_TUNABLES_FILE` (empty: none), else
//! `$XDG_CONFIG_HOME/oxmpi/tunables` (`~/.config/oxmpi/tunables`) when it exists. A line that
//! is no `NAME = VALUE`, an unknown name or a bad value is an error naming the file and line.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::error::{Error, ErrorClass, Result};

/// One documented tunable.
#[derive(Debug, Clone, Copy)]
pub struct Tunable {
    /// Environment variable name.
    pub name: &'static str,
    /// Default value, as text.
    pub default: &'static str,
    /// One line saying what it changes.
    pub help: &'static str,
}

macro_rules! tunables {
    ($( $field:ident : $ty:ty = $default:expr => $shown:literal, $name:literal, $help:literal; )*) => {
        /// Run-time configuration, parsed from the environment once per process.
        #[derive(Debug, Clone)]
        pub struct Config {
            $( #[doc = $help] pub $field: $ty, )*
        }

        /// Every tunable, in the order `oxmpi-info` lists them.
        pub const TUNABLES: &[Tunable] = &[
            $( Tunable { name: $name, default: $shown, help: $help }, )*
        ];

        impl Config {
            /// Reads every tunable from the process environment, then the tunables file.
            pub fn from_env() -> Result<Config> {
                Self::from_layers(|k| std::env::var(k).ok(), tunables_file()?)
            }

            /// Reads every tunable through `get` (the environment, or a map in tests).
            pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Config> {
                Self::from_layers(get, None)
            }

            /// Reads every tunable from `env`, then `file`, then the default (first found wins).
            pub fn from_layers(
                env: impl Fn(&str) -> Option<String>,
                file: Option<&TunablesFile>,
            ) -> Result<Config> {
                Ok(Config {
                    $( $field: match env($name) {
                        Some(v) => parse::<$ty>($name, &v)?,
                        None => match file.and_then(|f| Some((f, f.entry($name)?))) {
                            Some((f, e)) => <$ty as ParseTunable>::parse_text(&e.value)
                                .ok_or_else(|| f.bad_value(e))?,
                            None => $default,
                        },
                    }, )*
                })
            }
        }

        /// Whether `value` is a valid value of the tunable `name` (`None`: no such tunable).
        fn valid_value(name: &str, value: &str) -> Option<bool> {
            match name {
                $( $name => Some(<$ty as ParseTunable>::parse_text(value).is_some()), )*
                _ => None,
            }
        }

        impl Default for Config {
            fn default() -> Self {
                Config { $( $field: $default, )* }
            }
        }
    };
}

tunables! {
    spin_count: u32 = 2000 => "2000", "OXMPI_SPIN_COUNT",
        "polls of the progress engine before a blocking wait yields the core (16 when ranks outnumber cores)";
    yield_count: u32 = 20000 => "20000", "OXMPI_YIELD_COUNT",
        "yields of the core before a waiting rank starts to sleep between polls";
    yield_sleep_us: u32 = 50 => "50", "OXMPI_YIELD_SLEEP_US",
        "longest sleep between polls once a waiting rank backs off (microseconds)";
    eager_limit: usize = 65536 => "65536", "OXMPI_EAGER_LIMIT",
        "largest message sent eagerly (in pool-block chunks above the block size); larger ones use rendezvous (np 2, 3-5 interleaved rounds, 16 KiB against 64 KiB: latency 32 KiB 1.19 against 0.92 us and 64 KiB 1.85 against 1.57 on cores 0.04 us apart, 3.46 against 2.52 and 5.46 against 4.70 on cores 0.3-0.4 us apart; latency-fresh 32 KiB 1.33 against 1.21; bw 32-64 KiB 10.0-11.7 against 45.5-47.1 GB/s, bibw 19.3-24.4 against 43.5-45.1. Earlier code on another host measured eager behind from 32 KiB: bibw 64 KiB 9.3-10.0 against 22.0-29.4 GB/s)";
    single_copy: bool = true => "true", "OXMPI_SINGLE_COPY",
        "rendezvous pulls data with one process_vm_readv; 0 forces the pipelined two-copy path";
    recv_write: bool = true => "true", "OXMPI_RECV_WRITE",
        "a large receive posted before its message, where a lone message is copied once (below OXMPI_PUSH_MIN or from OXMPI_SINGLE_COPY_MIN, by default at no size), tells the sender where to write it (seed 002)";
    coll_eager_limit: usize = 131072 => "131072", "OXMPI_COLL_EAGER_LIMIT",
        "largest message sent eagerly through shared memory (at least OXMPI_EAGER_LIMIT) of a collective's own point-to-point steps, whose sending rank then goes on at once so that back-to-back collectives overlap (np 2 reduce, eager against rendezvous: 32 KiB 7.6-8.2 against 12.2-13.6 us, 64 KiB 13.7-14.4 against 21.7-25.7), and of derived-datatype data packed as it is sent, which no single copy can read (ddt-vector 32-64 KiB 5.2-6.4 against 4.3-6.2 GB/s)";
    push_min: usize = 0 => "0", "OXMPI_PUSH_MIN",
        "smallest rendezvous message pushed through the pool when it arrives alone, its two copies on two cores at once; a smaller one is copied once, pulled by the receiver or written by the sender into a receive posted in time (oxmpi-info --calibrate measures the crossover; np 2, 4 interleaved rounds, latency copied once against pushed: 32 KiB 4.3 against 3.2 us, 64 KiB 6.4 against 4.6, 256 KiB 18.2 against 16.6, 1 MiB 71 against 67 on cores 0.3-0.4 us apart, and 64 KiB 5.8 against 1.7, 1 MiB 72 against 23 on cores 0.04 us apart; with fresh data each time, 64 KiB 9.9 against 5.2, 1 MiB 210 against 86; bw and bibw, whose windows are pulled, a tie)";
    single_copy_min: usize = 1 << 40 => "1T", "OXMPI_SINGLE_COPY_MIN",
        "smallest rendezvous message copied once again when it arrives alone, above the pushed band from OXMPI_PUSH_MIN; by default none is (oxmpi-info --calibrate measures the crossover up to 64 MiB; np 2 latency, pushed against pulled: 4 MiB 260-312 against 574-673 us, 16 MiB 1884-1992 against 3642-3994; ddt-contig ping-pong 16 MiB 27.0-27.1 against 8.0-9.0 GB/s, 64 MiB 22.8-22.9 against 7.9-8.1; bw 16 MiB 29.0-29.4 against 8.4-8.6)";
    ddt_iov_min_block: usize = 4096 => "4096", "OXMPI_DDT_IOV_MIN_BLOCK",
        "a derived-datatype message whose contiguous pieces average at least this many bytes moves as iovec lists in one process_vm_readv copy on one host: a receive from the rendezvous size on (a contiguous sender's data lands in one copy), a send too except in the pushed band (OXMPI_PUSH_MIN to OXMPI_SINGLE_COPY_MIN), where a sender packs its chunks into pool blocks as it pushes them, like a lone contiguous message (by default the band ends at OXMPI_SINGLE_COPY_MIN; np 2, 3 interleaved rounds on cores 0.3-0.4 us apart, ddt-vector64k packed against as pieces: 64 KiB 14.6 against 10.3 GB/s, 128 KiB 17.9 against 10.5, 256 KiB 16.1 against 12.3, 1 MiB 14.2 against 11.5, 2-4 MiB a tie); smaller pieces are always packed";
    ddt_direct_min: usize = 4096 => "4096", "OXMPI_DDT_DIRECT_MIN",
        "smallest derived-datatype message packed straight into the transport's cells or pool blocks (and unpacked straight out of the arriving fragment, or the stored unexpected bytes, into the receive buffer), up to the eager limit; a smaller one is packed whole into a buffer of its own first, which costs less than registering its packer there (interleaved, np 2, 6 rounds with every size packed straight against staged: ddt-vector 16-64 KiB 1.2-1.8x in 17 of 18, ddt-struct 1 KiB 0.85-1.3x, 16 B 0.6-0.9x); above OXMPI_EAGER_LIMIT: never";
    alloc_mem_bytes: usize = 1073741824 => "1073741824", "OXMPI_ALLOC_MEM_BYTES",
        "size of each rank's shared arena for alloc_mem (a sparse file: only used pages cost memory)";
    shm_coll_comms: bool = true => "true", "OXMPI_SHM_COLL_COMMS",
        "small collectives of any intra-host communicator (not only the world) meet in shared memory";
    shm_fifo_cells: usize = 1024 => "1024", "OXMPI_SHM_FIFO_CELLS",
        "64-byte cells in each rank's receive ring (power of two, at least 256)";
    shm_pool_blocks: u32 = 256 => "256", "OXMPI_SHM_POOL_BLOCKS",
        "blocks in each rank's send pool";
    shm_block_size: u32 = 8192 => "8192", "OXMPI_SHM_BLOCK_SIZE",
        "bytes per pool block: the largest fragment and the two-copy chunk size";
    shm_push_blocks: u32 = 4 => "4", "OXMPI_SHM_PUSH_BLOCKS",
        "adjacent pool blocks one fragment of a pushed rendezvous message takes when they are free (1: one block, as an eager fragment); each fragment is a hand-over between the cores, which costs more than copying a block when they are far apart (np 2, 3 interleaved rounds on cores 0.3-0.4 us apart, 1 against 4: latency 1 MiB 66 against 32 us, 4 MiB 275 against 129; latency-fresh 1 MiB 85 against 61; ddt-vector64k 256 KiB-4 MiB 12.0-13.6 against 20.2-25.4 GB/s; bibw 512 KiB-2 MiB, whose windows are pulled but for one pushed message each, 2-6% lower; on cores 0.04 us apart latency 64 KiB-4 MiB 0-10% lower, bibw 512 KiB-2 MiB 5-15% lower in 5 rounds)";
    shm_inline_max: usize = 512 => "512", "OXMPI_SHM_INLINE_MAX",
        "largest payload carried inline in cells rather than in a pool block (oxmpi-info --calibrate measures the crossover, which differs by host; np 2, 3 interleaved rounds, inline against pool: latency 128 B 0.28-0.33 against 0.38-0.43 us, 512 B 0.43-0.48 against 0.52-0.59, msgrate 128-512 B 5.4-8.8 against 3.0-4.5 M/s, bw and bibw 128-512 B 1.2-2x; 1 KiB a tie. An earlier host had the pool ahead from 256 B: 0.21 against 0.25 us)";
    transport: String = "auto".to_owned() => "auto", "OXMPI_TRANSPORT",
        "auto: shared memory within a host, TCP between hosts; tcp: TCP between every pair of ranks (tests, comparisons)";
    tcp_if: String = String::new() => "(unset)", "OXMPI_TCP_IF",
        "TCP interfaces, comma-separated names or CIDR blocks (default: every non-loopback IPv4 interface)";
    tcp_rails: usize = 1 => "1", "OXMPI_TCP_RAILS",
        "TCP connections per peer (at least; one per interface pair that reaches it); large fragments are striped over them";
    tcp_frag_size: usize = 262144 => "262144", "OXMPI_TCP_FRAG_SIZE",
        "largest TCP fragment payload: eager chunks and rendezvous pushes";
    tcp_eager_limit: usize = 65536 => "65536", "OXMPI_TCP_EAGER_LIMIT",
        "largest message sent eagerly over TCP; larger ones use rendezvous with pushed chunks";
    tcp_send_queue: usize = 4194304 => "4194304", "OXMPI_TCP_SEND_QUEUE",
        "bytes queued (or kept for retransmission over other rails) per TCP peer before sends wait";
    tcp_port: u32 = 0 => "0", "OXMPI_TCP_PORT",
        "first TCP listening port (rank r listens on port + r); 0 picks any free port";
    tcp_poll_every: u32 = 16 => "16", "OXMPI_TCP_POLL_EVERY",
        "progress calls per TCP socket poll in a rank that also has shared-memory peers";
    tcp_spin_count: u32 = 1000 => "1000", "OXMPI_TCP_SPIN_COUNT",
        "polls (up to as many at once, then each after yielding the core) before a rank with only TCP peers blocks in epoll until data arrives";
    tcp_handshake_ms: u32 = 5000 => "5000", "OXMPI_TCP_HANDSHAKE_MS",
        "milliseconds an incoming TCP connection has to prove it belongs to the job";
    tcp_log_routes: bool = false => "false", "OXMPI_TCP_LOG_ROUTES",
        "print each TCP rail's local and remote address as it connects (tests read it)";
    tcp_cut_rail: String = String::new() => "(unset)", "OXMPI_TCP_CUT_RAIL",
        "testing: RAIL:N makes rank 0 shut TCP rail RAIL to every peer down after N fragments";
    tcp_garbage_after: u32 = 0 => "0", "OXMPI_TCP_GARBAGE_AFTER",
        "testing: N > 0 makes rank 0 write bytes that are no frame into its TCP stream to every peer after N fragments";
    async_thread: bool = true => "true", "OXMPI_ASYNC_THREAD",
        "awaited requests are woken by a progress thread (at Serialized/Multiple); 0: an unfinished poll asks to be polled again";
    async_spin: u32 = 1000 => "1000", "OXMPI_ASYNC_SPIN",
        "progress passes a poll of an awaited request makes before it hands the request to the progress thread";
    topology: String = "auto".to_owned() => "auto", "OXMPI_TOPOLOGY",
        "machine topology reader for oxrun and oxmpi-info: auto (hwloc, sysfs if hwloc is not built in or fails) or sysfs (environment only, not the tunables file)";
    host_override: String = String::new() => "(unset)", "OXMPI_HOST_OVERRIDE",
        "testing: comma-separated host index per rank, overriding the launcher's placement";
    rma_progress_thread: bool = false => "false", "OXMPI_RMA_PROGRESS_THREAD",
        "1: a thread drives progress while windows spanning hosts exist, so targets computing outside MPI answer (needs thread level SERIALIZED or MULTIPLE)";
    tunables_file: String = String::new() => "(unset)", "OXMPI_TUNABLES_FILE",
        "file of NAME = VALUE lines read beneath the environment (oxmpi-info --calibrate writes one); unset: $XDG_CONFIG_HOME/oxmpi/tunables if it exists; empty: none";
}

/// Names in this namespace may appear in a tunables file; the collective layer checks them
/// against its own table (`coll::select`), since this leaf module cannot see it.
pub const COLL_PREFIX: &str = "OXMPI_COLL_";

/// Tunables a tunables file may not set: the file's own name, and the topology reader, which
/// oxrun and `oxmpi-info --topology` take from the environment alone.
const ENV_ONLY: &[&str] = &["OXMPI_TUNABLES_FILE", "OXMPI_TOPOLOGY"];

/// Where a tunable's value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// The process environment.
    Env,
    /// Line `line` of the tunables file `path`.
    File {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
    },
    /// Neither: the built-in default.
    Default,
}

/// One `NAME = VALUE` line of a tunables file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileEntry {
    /// The tunable's name.
    pub name: String,
    /// Its value, as text (trimmed).
    pub value: String,
    /// 1-based line number.
    pub line: usize,
}

/// A parsed, validated tunables file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TunablesFile {
    /// Where it was read from (for messages).
    pub path: PathBuf,
    /// Its settings, in file order, each name once.
    pub entries: Vec<FileEntry>,
}

impl TunablesFile {
    /// Parses `text` read from `path`: blank lines and `#` comments are skipped; every other
    /// line must be `NAME = VALUE` with a known name (each at most once) and a valid value.
    pub fn parse(path: &Path, text: &str) -> Result<TunablesFile> {
        let err = |line: usize, what: String| {
            Error::new(
                ErrorClass::Arg,
                format!("tunables file {}:{line}: {what}", path.display()),
            )
        };
        let mut entries: Vec<FileEntry> = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            let line = i + 1;
            let body = raw.split('#').next().unwrap_or("").trim();
            if body.is_empty() {
                continue;
            }
            let Some((name, value)) = body.split_once('=') else {
                return Err(err(line, format!("{body:?} is not NAME = VALUE")));
            };
            let (name, value) = (name.trim(), value.trim());
            if ENV_ONLY.contains(&name) {
                return Err(err(
                    line,
                    format!("{name} can only be set in the environment"),
                ));
            }
            let valid = match valid_value(name, value) {
                Some(v) => v,
                None if name.starts_with(COLL_PREFIX) && name.len() > COLL_PREFIX.len() => {
                    parse_size(value).is_some_and(|v| usize::try_from(v).is_ok())
                }
                None => return Err(err(line, format!("unknown tunable {name:?}"))),
            };
            if !valid {
                return Err(err(
                    line,
                    format!("{name} = {value:?} is not a valid value"),
                ));
            }
            if let Some(first) = entries.iter().find(|e| e.name == name) {
                return Err(err(
                    line,
                    format!("{name} is set again (first on line {})", first.line),
                ));
            }
            entries.push(FileEntry {
                name: name.to_owned(),
                value: value.to_owned(),
                line,
            });
        }
        Ok(TunablesFile {
            path: path.to_owned(),
            entries,
        })
    }

    /// Reads and parses the file at `path`.
    pub fn load(path: &Path) -> Result<TunablesFile> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            Error::new(
                ErrorClass::Arg,
                format!("tunables file {} cannot be read: {e}", path.display()),
            )
        })?;
        Self::parse(path, &text)
    }

    /// The line setting `name`, if any.
    pub fn entry(&self, name: &str) -> Option<&FileEntry> {
        self.entries.iter().find(|e| e.name == name)
    }

    /// Every name of the collective namespace that `known` does not contain, as an error
    /// naming the file and line (for the layer that owns those names).
    pub fn check_names(&self, prefix: &str, known: &[Tunable]) -> Result<()> {
        match self
            .entries
            .iter()
            .find(|e| e.name.starts_with(prefix) && !known.iter().any(|t| t.name == e.name))
        {
            Some(e) => Err(Error::new(
                ErrorClass::Arg,
                format!(
                    "tunables file {}:{}: unknown tunable {:?}",
                    self.path.display(),
                    e.line,
                    e.name
                ),
            )),
            None => Ok(()),
        }
    }

    fn bad_value(&self, e: &FileEntry) -> Error {
        Error::new(
            ErrorClass::Arg,
            format!(
                "tunables file {}:{}: {} = {:?} is not a valid value",
                self.path.display(),
                e.line,
                e.name,
                e.value
            ),
        )
    }
}

/// The default place of the tunables file: `$XDG_CONFIG_HOME/oxmpi/tunables`, else
/// `$HOME/.config/oxmpi/tunables` (`None` when neither variable is set).
pub fn default_tunables_path(env: impl Fn(&str) -> Option<String>) -> Option<PathBuf> {
    let absolute = |v: String| Some(PathBuf::from(v)).filter(|p| p.is_absolute());
    env("XDG_CONFIG_HOME")
        .and_then(absolute)
        .or_else(|| env("HOME").and_then(absolute).map(|h| h.join(".config")))
        .map(|d| d.join("oxmpi").join("tunables"))
}

/// The tunables file to read, if any, and whether `OXMPI_TUNABLES_FILE` named it (then it
/// must exist; the default place is read only when something is there).
pub fn tunables_file_path(env: impl Fn(&str) -> Option<String>) -> Option<(PathBuf, bool)> {
    match env("OXMPI_TUNABLES_FILE") {
        Some(p) if p.is_empty() => None,
        Some(p) => Some((PathBuf::from(p), true)),
        None => default_tunables_path(env)
            .filter(|p| p.exists())
            .map(|p| (p, false)),
    }
}

/// The process's tunables file (read once; `None` when there is none).
pub fn tunables_file() -> Result<Option<&'static TunablesFile>> {
    static FILE: OnceLock<Result<Option<TunablesFile>>> = OnceLock::new();
    FILE.get_or_init(|| {
        tunables_file_path(|k| std::env::var(k).ok())
            .map(|(p, _)| TunablesFile::load(&p))
            .transpose()
    })
    .as_ref()
    .map(Option::as_ref)
    .map_err(Clone::clone)
}

/// The value of tunable `name` in force for this process and where it came from
/// (`None`: the default). Errors only when the tunables file is unreadable or malformed.
pub fn lookup(name: &str) -> Result<Option<(String, Source)>> {
    if let Ok(v) = std::env::var(name) {
        return Ok(Some((v, Source::Env)));
    }
    Ok(tunables_file()?.and_then(|f| {
        f.entry(name).map(|e| {
            (
                e.value.clone(),
                Source::File {
                    path: f.path.clone(),
                    line: e.line,
                },
            )
        })
    }))
}

/// Text forms a tunable value can be parsed from.
trait ParseTunable: Sized {
    fn parse_text(s: &str) -> Option<Self>;
}

impl ParseTunable for u32 {
    fn parse_text(s: &str) -> Option<Self> {
        parse_size(s).and_then(|v| u32::try_from(v).ok())
    }
}

impl ParseTunable for usize {
    fn parse_text(s: &str) -> Option<Self> {
        parse_size(s).and_then(|v| usize::try_from(v).ok())
    }
}

impl ParseTunable for bool {
    fn parse_text(s: &str) -> Option<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "1" | "true" | "yes" | "on" => Some(true),
            "0" | "false" | "no" | "off" => Some(false),
            _ => None,
        }
    }
}

impl ParseTunable for String {
    fn parse_text(s: &str) -> Option<Self> {
        Some(s.trim().to_owned())
    }
}

fn parse<T: ParseTunable>(name: &str, value: &str) -> Result<T> {
    T::parse_text(value).ok_or_else(|| {
        Error::new(
            ErrorClass::Arg,
            format!("environment variable {name}={value:?} is not a valid value"),
        )
    })
}

/// Parses `123`, `64k`, `4M`, `1g`, `1T` (binary multiples).
pub fn parse_size(s: &str) -> Option<u64> {
    let s = s.trim();
    let (digits, mult) = match s.char_indices().last()? {
        (i, 'k' | 'K') => (&s[..i], 1u64 << 10),
        (i, 'm' | 'M') => (&s[..i], 1 << 20),
        (i, 'g' | 'G') => (&s[..i], 1 << 30),
        (i, 't' | 'T') => (&s[..i], 1 << 40),
        _ => (s, 1),
    };
    digits.trim().parse::<u64>().ok()?.checked_mul(mult)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn sizes_parse_with_suffixes() {
        assert_eq!(parse_size("4096"), Some(4096));
        assert_eq!(parse_size("64k"), Some(65536));
        assert_eq!(parse_size("4M"), Some(4 << 20));
        assert_eq!(parse_size(" 1g "), Some(1 << 30));
        assert_eq!(parse_size("1T"), Some(1 << 40));
        assert_eq!(parse_size("k"), None);
        assert_eq!(parse_size("-1"), None);
        assert_eq!(parse_size("99999999999999999999g"), None);
    }

    #[test]
    fn environment_overrides_defaults_and_bad_values_are_errors() {
        let env: HashMap<&str, &str> = [("OXMPI_SPIN_COUNT", "10")].into();
        let c = Config::from_lookup(|k| env.get(k).map(|v| v.to_string())).unwrap();
        assert_eq!(c.spin_count, 10);
        assert_eq!(c.yield_sleep_us, Config::default().yield_sleep_us);
        let bad: HashMap<&str, &str> = [("OXMPI_SPIN_COUNT", "lots")].into();
        let err = Config::from_lookup(|k| bad.get(k).map(|v| v.to_string())).unwrap_err();
        assert_eq!(err.class(), ErrorClass::Arg);
        assert!(err.message().contains("OXMPI_SPIN_COUNT"));
    }

    #[test]
    fn shown_defaults_are_the_real_defaults() {
        for t in TUNABLES.iter().filter(|t| t.default != "(unset)") {
            let c = Config::from_lookup(|k| (k == t.name).then(|| t.default.to_owned())).unwrap();
            assert_eq!(
                format!("{c:?}"),
                format!("{:?}", Config::default()),
                "{}",
                t.name
            );
        }
    }

    fn file(text: &str) -> Result<TunablesFile> {
        TunablesFile::parse(Path::new("/etc/t"), text)
    }

    #[test]
    fn environment_overrides_the_file_which_overrides_defaults() {
        let f = file(
            "# calibrated\n\nOXMPI_EAGER_LIMIT = 64k  # eager up to here\nOXMPI_SPIN_COUNT=7\nOXMPI_COLL_BCAST_LONG = 1M\n",
        )
        .unwrap();
        assert_eq!(f.entry("OXMPI_SPIN_COUNT").map(|e| e.line), Some(4));
        assert_eq!(f.entry("OXMPI_EAGER_LIMIT").unwrap().value, "64k");
        let env: HashMap<&str, &str> = [("OXMPI_SPIN_COUNT", "10")].into();
        let c = Config::from_layers(|k| env.get(k).map(|v| v.to_string()), Some(&f)).unwrap();
        assert_eq!(c.spin_count, 10, "environment beats file");
        assert_eq!(c.eager_limit, 65536, "file beats default");
        assert_eq!(c.yield_count, Config::default().yield_count, "default");
        assert!(f.check_names(COLL_PREFIX, &[]).is_err());
        let known = [Tunable {
            name: "OXMPI_COLL_BCAST_LONG",
            default: "0",
            help: "x",
        }];
        assert!(f.check_names(COLL_PREFIX, &known).is_ok());
    }

    #[test]
    fn malformed_files_name_the_file_and_line() {
        for (text, line, what) in [
            (
                "OXMPI_SPIN_COUNT = 1\nOXMPI_SPIN_COUNT 2\n",
                2,
                "is not NAME = VALUE",
            ),
            (
                "\n# c\nOXMPI_SPIN_COUNTS = 2\n",
                3,
                "unknown tunable \"OXMPI_SPIN_COUNTS\"",
            ),
            ("OXMPI_SPIN_COUNT = lots\n", 1, "is not a valid value"),
            ("OXMPI_SINGLE_COPY = maybe\n", 1, "is not a valid value"),
            ("OXMPI_COLL_BCAST_LONG = big\n", 1, "is not a valid value"),
            ("OXMPI_COLL_ = 1\n", 1, "unknown tunable"),
            ("= 1\n", 1, "unknown tunable"),
            (
                "OXMPI_TUNABLES_FILE = /x\n",
                1,
                "only be set in the environment",
            ),
            (
                "OXMPI_TOPOLOGY = sysfs\n",
                1,
                "only be set in the environment",
            ),
            (
                "OXMPI_SPIN_COUNT = 1\nOXMPI_SPIN_COUNT = 2\n",
                2,
                "set again (first on line 1)",
            ),
        ] {
            let e = file(text).unwrap_err();
            assert_eq!(e.class(), ErrorClass::Arg);
            let prefix = format!("tunables file /etc/t:{line}: ");
            assert!(e.message().starts_with(&prefix), "{text:?}: {e}");
            assert!(e.message().contains(what), "{text:?}: {e}");
        }
        let e = TunablesFile::load(Path::new("/nonexistent/oxmpi/tunables")).unwrap_err();
        assert!(e.message().contains("/nonexistent/oxmpi/tunables"), "{e}");
    }

    #[test]
    fn the_file_is_found_where_documented() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| pairs.iter().find(|p| p.0 == k).map(|p| p.1.to_owned())
        };
        assert_eq!(
            tunables_file_path(env(&[("OXMPI_TUNABLES_FILE", "/a/b"), ("HOME", "/h")])),
            Some((PathBuf::from("/a/b"), true))
        );
        assert_eq!(
            tunables_file_path(env(&[("OXMPI_TUNABLES_FILE", "")])),
            None
        );
        assert_eq!(
            default_tunables_path(env(&[("XDG_CONFIG_HOME", "/x"), ("HOME", "/h")])),
            Some(PathBuf::from("/x/oxmpi/tunables"))
        );
        assert_eq!(
            default_tunables_path(env(&[("XDG_CONFIG_HOME", "rel"), ("HOME", "/h")])),
            Some(PathBuf::from("/h/.config/oxmpi/tunables"))
        );
        assert_eq!(default_tunables_path(env(&[])), None);
    }

    #[test]
    fn every_tunable_is_documented_once() {
        let mut names: Vec<_> = TUNABLES.iter().map(|t| t.name).collect();
        assert!(names.iter().all(|n| n.starts_with("OXMPI_")));
        assert!(TUNABLES.iter().all(|t| !t.help.is_empty()));
        names.sort();
        names.dedup();
        assert_eq!(names.len(), TUNABLES.len());
    }
}
