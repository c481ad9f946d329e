//! Tunables: every `OXMPI_*` environment variable, read once at start-up.
//!
//! The table is the single source of truth: `oxmpi-info` prints it, and [`Config::from_env`]
//! parses it. Adding a tunable means adding one line to `tunables!` below.

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
            /// Reads every tunable from the process environment.
            pub fn from_env() -> Result<Config> {
                Self::from_lookup(|k| std::env::var(k).ok())
            }

            /// Reads every tunable through `get` (the environment, or a map in tests).
            pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Config> {
                Ok(Config {
                    $( $field: match get($name) {
                        None => $default,
                        Some(v) => parse::<$ty>($name, &v)?,
                    }, )*
                })
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
    eager_limit: usize = 131072 => "131072", "OXMPI_EAGER_LIMIT",
        "largest message sent eagerly (in pool-block chunks above the block size); larger ones use rendezvous";
    single_copy: bool = true => "true", "OXMPI_SINGLE_COPY",
        "rendezvous pulls data with one process_vm_readv; 0 forces the pipelined two-copy path";
    recv_write: bool = true => "true", "OXMPI_RECV_WRITE",
        "a large receive posted before its message tells the sender where to write it (seed 002)";
    single_copy_min: usize = 4194304 => "4194304", "OXMPI_SINGLE_COPY_MIN",
        "smallest rendezvous message pulled with one copy when it arrives alone; a lone smaller one is pushed through the pool, its two copies on two cores at once (oxmpi-info --calibrate measures the crossover)";
    ddt_iov_min_block: usize = 1024 => "1024", "OXMPI_DDT_IOV_MIN_BLOCK",
        "a rendezvous-size message through a derived datatype whose contiguous pieces average at least this many bytes moves as iovec lists in one process_vm_readv copy on one host; smaller pieces are packed and unpacked";
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
    shm_inline_max: usize = 1024 => "1024", "OXMPI_SHM_INLINE_MAX",
        "largest payload carried inline in cells rather than in a pool block";
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
        "machine topology reader for oxrun and oxmpi-info: auto (hwloc, sysfs if hwloc is not built in or fails) or sysfs";
    host_override: String = String::new() => "(unset)", "OXMPI_HOST_OVERRIDE",
        "testing: comma-separated host index per rank, overriding the launcher's placement";
    rma_progress_thread: bool = false => "false", "OXMPI_RMA_PROGRESS_THREAD",
        "1: a thread drives progress while windows spanning hosts exist, so targets computing outside MPI answer (needs thread level SERIALIZED or MULTIPLE)";
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

/// Parses `123`, `64k`, `4M`, `1g` (binary multiples).
pub fn parse_size(s: &str) -> Option<u64> {
    let s = s.trim();
    let (digits, mult) = match s.char_indices().last()? {
        (i, 'k' | 'K') => (&s[..i], 1u64 << 10),
        (i, 'm' | 'M') => (&s[..i], 1 << 20),
        (i, 'g' | 'G') => (&s[..i], 1 << 30),
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
