//! Which algorithm each collective uses, by message size and group size.
//!
//! Every crossover is a tunable read once from an `OXMPI_COLL_*` environment variable (same
//! style as [`config`](crate::config)), and [`algorithm_table`] lists every choice with its
//! condition, for `oxmpi-info`.
//!
//! Defaults were chosen for shared memory on one host, where a message costs a few hundred
//! nanoseconds of latency and bandwidth is memory bandwidth: latency-bound algorithms
//! (⌈log₂ p⌉ rounds carrying the whole vector) win until the vector is a few pages long;
//! bandwidth-bound ones (about 2·n bytes per rank in total) win beyond.

use std::sync::OnceLock;

use crate::config::{parse_size, Tunable};
use crate::error::{Error, ErrorClass, Result};

macro_rules! coll_tunables {
    ($( $field:ident = $default:expr, $name:literal, $help:literal; )*) => {
        /// Crossover points of the collective algorithms (bytes unless noted).
        #[derive(Debug, Clone, PartialEq, Eq)]
        pub struct Crossovers {
            $( #[doc = $help] pub $field: usize, )*
        }

        /// Every collective tunable, for `oxmpi-info`.
        pub const COLL_TUNABLES: &[Tunable] = &[
            $( Tunable { name: $name, default: stringify!($default), help: $help }, )*
        ];

        impl Crossovers {
            /// Reads every crossover through `get` (the environment, or a map in tests).
            pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Crossovers> {
                Ok(Crossovers {
                    $( $field: match get($name) {
                        None => $default,
                        Some(v) => parse_size(&v).and_then(|v| usize::try_from(v).ok()).ok_or_else(|| {
                            Error::new(ErrorClass::Arg, format!("environment variable {}={v:?} is not a valid size", $name))
                        })?,
                    }, )*
                })
            }
        }

        impl Default for Crossovers {
            fn default() -> Self {
                Crossovers { $( $field: $default, )* }
            }
        }
    };
}

coll_tunables! {
    bcast_long = 131072, "OXMPI_COLL_BCAST_LONG",
        "bcast of at least this many bytes on 4+ ranks: scatter + ring allgather instead of a binomial tree";
    bcast_long_oversubscribed = 16777216, "OXMPI_COLL_BCAST_LONG_OVERSUBSCRIBED",
        "as OXMPI_COLL_BCAST_LONG on a communicator within one host that has more ranks than cores, where each of the more steps waits for the scheduler (np 4 on 2 cores, 4 interleaved rounds, binomial against scatter + allgather: 128 KiB 8.3 against 29 us, 1 MiB 78 against 165, 4 MiB 359 against 587; np 3 and 6 alike)";
    allreduce_long = 16384, "OXMPI_COLL_ALLREDUCE_LONG",
        "allreduce of at least this many bytes: Rabenseifner (power-of-two groups or non-commutative ops) or ring, instead of recursive doubling";
    reduce_scatter_long = 16384, "OXMPI_COLL_REDUCE_SCATTER_LONG",
        "reduce-scatter of at least this many bytes in total, commutative op: ring, instead of reduce + scatter";
    gather_long = 65536, "OXMPI_COLL_GATHER_LONG",
        "gather/scatter moving at least this many bytes in total: linear (root talks to every rank) instead of a binomial tree";
    allgather_long = 524288, "OXMPI_COLL_ALLGATHER_LONG",
        "allgather of at least this many bytes in total: ring, instead of recursive doubling (power-of-two groups)";
    allgather_bruck = 81920, "OXMPI_COLL_ALLGATHER_BRUCK",
        "allgather below this many bytes in total on a non-power-of-two group: Bruck (else ring)";
    alltoall_bruck = 256, "OXMPI_COLL_ALLTOALL_BRUCK",
        "alltoall blocks of at most this many bytes on 8+ ranks: Bruck";
    alltoall_pairwise = 32768, "OXMPI_COLL_ALLTOALL_PAIRWISE",
        "alltoall blocks of at least this many bytes: pairwise exchange (else everything posted at once)";
    alltoall_pairwise_oversubscribed = 262144, "OXMPI_COLL_ALLTOALL_PAIRWISE_OVERSUBSCRIBED",
        "OXMPI_COLL_ALLTOALL_PAIRWISE on a communicator within one host that has more ranks than cores, where each of the p - 1 exchanges waits for the scheduler (np 4 on 2 cores, 3-4 interleaved rounds, everything posted at once against pairwise: 32 KiB 13.7 against 52.7 us, 64 KiB 23 against 93, 128 KiB 59 against 207; 256 KiB 183 against 147)";
    shm_allreduce_long = 16777216, "OXMPI_COLL_SHM_ALLREDUCE_LONG",
        "allreduce of at least this many bytes on a communicator within one host: shared-memory reduce-scatter with single copies between processes, instead of messages (np 2, 8 interleaved rounds, messages against it: 256 KiB 14.6 against 27.0 us, 1 MiB 89 against 107, 8 MiB 1226 against 1452; np 4 on 2 cores 256 KiB 46 against 91, 4 MiB 1653 against 2112; but on cores 0.36 us apart single copies were 7-17% faster from 256 KiB: 1 MiB 111 against 126)";
    shm_allreduce_long_oversubscribed = 16777216, "OXMPI_COLL_SHM_ALLREDUCE_LONG_OVERSUBSCRIBED",
        "OXMPI_COLL_SHM_ALLREDUCE_LONG on a host that runs more ranks than it has cores (every member must be scheduled for each step of the single-copy form)";
    shm_reduce_long = 1099511627776, "OXMPI_COLL_SHM_REDUCE_LONG",
        "reduce of at least this many bytes on a communicator within one host: shared-memory reduce-scatter with single copies, each slice written to the root, instead of messages; by default never, as messages won at every size measured (np 2, 10 interleaved rounds, messages against it: 1 MiB 31 against 104 us, 8 MiB 350 against 1299; 2 rounds, 16 MiB 899-906 against 2614-2649, 32 MiB 2231-2335 against 5581-5875; np 3 and 4 on 2 cores 2.5-3x faster by messages from 256 KiB to 4 MiB)";
    shm_bcast_long = 4194304, "OXMPI_COLL_SHM_BCAST_LONG",
        "bcast of at least this many bytes on a communicator within one host: every rank pulls the root's buffer with one copy, instead of messages (np 2, messages against it: on cores 0.05 us apart, 15 rounds, 64 KiB 1.3 against 3.6 us, 1 MiB 21 against 40, 4 MiB 84 against 144; 0.38 us apart, 4 rounds, 64 KiB 4.0 against 4.6, 256 KiB 13.2 against 11.0, 1 MiB 41 against 49, 4 MiB 159 against 142)";
    shm_bcast_long_oversubscribed = 16777216, "OXMPI_COLL_SHM_BCAST_LONG_OVERSUBSCRIBED",
        "OXMPI_COLL_SHM_BCAST_LONG on a host that runs more ranks than it has cores (every member must be scheduled for each step of the single-copy form; np 4 on 2 cores, 4 interleaved rounds, a binomial tree of messages against it: 128 KiB 8.3 against 25-29 us, 1 MiB 78 against 141-165, 4 MiB 359 against 587, 8 MiB 650 against 1374; 16 MiB 4633 against 3315; np 3 and 6 alike)";
    shm_bcast_long_pair = 1073741824, "OXMPI_COLL_SHM_BCAST_LONG_PAIR",
        "OXMPI_COLL_SHM_BCAST_LONG on a communicator of two ranks (not oversubscribed), where the message program is one message, pushed through the pool on both cores at once (np 2, 2 interleaved rounds, messages against single copies: 4 MiB 94-96 against 143-186 us, 8 MiB 179-195 against 302-314, 16 MiB 497-508 against 811-923; 1-2 MiB a tie)";
    shm_bcast_split = 4, "OXMPI_COLL_SHM_BCAST_SPLIT",
        "single-copy bcast on at most this many ranks (count, not bytes): the root writes the last 1/p of every receiver's buffer while the receivers read the rest; on more ranks (or 0) the receivers read it all";
    shm_allgather_long_oversubscribed = 65536, "OXMPI_COLL_SHM_ALLGATHER_LONG_OVERSUBSCRIBED",
        "OXMPI_COLL_SHM_ALLGATHER_LONG on a host that runs more ranks than it has cores (np 4 on 2 cores, 4 interleaved rounds, single copies against messages: 16 KiB a rank 18.7 against 22.9 us, 32 KiB 25 against 40, 64 KiB 38 against 78; 8 KiB 16.1 against 13.4)";
    shm_allgather_long = 524288, "OXMPI_COLL_SHM_ALLGATHER_LONG",
        "allgather(v) of at least this many bytes in total on a communicator within one host: every rank reads every peer's block with one copy, instead of messages (np 2, 8 interleaved rounds, messages against it: 64 KiB a rank 3.5 against 6.5 us, 128 KiB 6.7 against 11.4, a tie from 256 KiB)";
    shm_gather_long = 1099511627776, "OXMPI_COLL_SHM_GATHER_LONG",
        "gather of at least this many bytes in total on a communicator within one host: the root reads every rank's block with one copy, instead of messages; by default never, as messages won at every size measured (np 2, 8 interleaved rounds, messages against it: 64 KiB a rank 1.7 against 6.5 us, 4 MiB 165 against 456; 2 rounds, 8 MiB 475-534 against 1134-1295, 16 MiB 1249-1306 against 2813-2845; np 4 on 2 cores 2-7x faster by messages up to 2 MiB)";
    shm_alltoall_long = 524288, "OXMPI_COLL_SHM_ALLTOALL_LONG",
        "alltoall (not in place) of at least this many bytes in total on a communicator within one host: every rank reads its block of every peer's buffer with one copy, instead of messages (np 2, as allgather: 64 KiB a rank 3.3 against 6.7 us, a tie from 256 KiB)";
    shm_rooted_early = 1, "OXMPI_COLL_SHM_ROOTED_EARLY",
        "1: small shared-memory bcast/reduce (slots): ranks that need nothing from the others leave once they have arrived (the bcast root, the reduce non-roots); 0: every rank waits for all";
    hier_bcast_long = 16384, "OXMPI_COLL_HIER_BCAST_LONG",
        "blocking bcast of at least this many bytes on a communicator spanning hosts: node-aware (across the host leaders, then within each host), instead of the flat message program (below it the host stage's shared-memory slots lost to messages: the root waits for every host member's arrival)";
    hierarchical = 1, "OXMPI_COLL_HIERARCHICAL",
        "1: node-aware two-level barrier/bcast/reduce/allreduce when a communicator spans several hosts; 0: flat only";
    hier_shm = 1, "OXMPI_COLL_HIER_SHM",
        "1: the blocking node-aware collectives do their intra-host stages on a host sub-communicator (shared memory where it can); 0: by messages on the whole communicator";
}

/// The crossovers in force (read from the environment, then the tunables file, once per
/// process; invalid values are reported once and the defaults used).
pub fn crossovers() -> &'static Crossovers {
    static C: OnceLock<Crossovers> = OnceLock::new();
    C.get_or_init(|| {
        Crossovers::from_env().unwrap_or_else(|e| {
            eprintln!("oxmpi: {e}; using the default collective crossovers");
            Crossovers::default()
        })
    })
}

impl Crossovers {
    /// Reads every crossover from the environment, then the tunables file (whose
    /// `OXMPI_COLL_*` names must all be known here).
    pub fn from_env() -> Result<Crossovers> {
        let file = crate::config::tunables_file()?;
        if let Some(f) = file {
            f.check_names(crate::config::COLL_PREFIX, COLL_TUNABLES)?;
        }
        Crossovers::from_lookup(|k| {
            std::env::var(k)
                .ok()
                .or_else(|| Some(file?.entry(k)?.value.clone()))
        })
    }

    /// The smallest bcast that goes by single-copy pulls on a communicator of `ranks` within
    /// one host, on a host that is `oversubscribed` or not (the same for every member).
    pub fn shm_bcast_min(&self, oversubscribed: bool, ranks: usize) -> usize {
        if oversubscribed {
            self.shm_bcast_long_oversubscribed
        } else if ranks == 2 {
            self.shm_bcast_long_pair
        } else {
            self.shm_bcast_long
        }
    }

    /// The smallest allgather(v) (bytes in total) done by single copies, as
    /// [`shm_bcast_min`](Self::shm_bcast_min).
    pub fn shm_allgather_min(&self, oversubscribed: bool) -> usize {
        if oversubscribed {
            self.shm_allgather_long_oversubscribed
        } else {
            self.shm_allgather_long
        }
    }

    /// The smallest alltoall(v) block sent by pairwise exchange; `crowded`: every rank on
    /// one host with more ranks than cores.
    pub fn alltoall_pairwise_min(&self, crowded: bool) -> usize {
        if crowded {
            self.alltoall_pairwise_oversubscribed
        } else {
            self.alltoall_pairwise
        }
    }

    /// The smallest allreduce done as a shared-memory reduce-scatter, as
    /// [`shm_bcast_min`](Self::shm_bcast_min).
    pub fn shm_allreduce_min(&self, oversubscribed: bool) -> usize {
        if oversubscribed {
            self.shm_allreduce_long_oversubscribed
        } else {
            self.shm_allreduce_long
        }
    }
}

/// Broadcast algorithms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Bcast {
    Binomial,
    ScatterAllgather,
}

/// The bcast of `bytes` among `p` ranks; `crowded`: all on one oversubscribed host.
pub(crate) fn bcast(c: &Crossovers, bytes: usize, p: u32, crowded: bool) -> Bcast {
    let long = if crowded {
        c.bcast_long_oversubscribed
    } else {
        c.bcast_long
    };
    if bytes >= long && p >= 4 {
        Bcast::ScatterAllgather
    } else {
        Bcast::Binomial
    }
}

/// Allreduce algorithms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Allreduce {
    RecursiveDoubling,
    Rabenseifner,
    Ring,
}

pub(crate) fn allreduce(
    c: &Crossovers,
    bytes: usize,
    count: usize,
    p: u32,
    commutative: bool,
) -> Allreduce {
    if bytes < c.allreduce_long || count < p as usize || p == 1 {
        Allreduce::RecursiveDoubling
    } else if p.is_power_of_two() || !commutative {
        Allreduce::Rabenseifner
    } else {
        Allreduce::Ring
    }
}

/// Allgather algorithms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Allgather {
    RecursiveDoubling,
    Bruck,
    Ring,
}

pub(crate) fn allgather(c: &Crossovers, total: usize, p: u32) -> Allgather {
    if p.is_power_of_two() && total < c.allgather_long {
        Allgather::RecursiveDoubling
    } else if total < c.allgather_bruck {
        Allgather::Bruck
    } else {
        Allgather::Ring
    }
}

/// All-to-all algorithms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Alltoall {
    Bruck,
    Linear,
    Pairwise,
}

/// The alltoall of `block` bytes a pair among `p` ranks; `crowded` as for [`bcast`].
pub(crate) fn alltoall(c: &Crossovers, block: usize, p: u32, crowded: bool) -> Alltoall {
    if block <= c.alltoall_bruck && p >= 8 {
        Alltoall::Bruck
    } else if block < c.alltoall_pairwise_min(crowded) {
        Alltoall::Linear
    } else {
        Alltoall::Pairwise
    }
}

/// Whether gather/scatter moving `total` bytes use the binomial tree (else linear).
pub(crate) fn gather_tree(c: &Crossovers, total: usize) -> bool {
    total < c.gather_long
}

/// Whether reduce-scatter of `total` bytes uses the ring (else reduce + scatter).
pub(crate) fn reduce_scatter_ring(c: &Crossovers, total: usize, p: u32, commutative: bool) -> bool {
    commutative && total >= c.reduce_scatter_long && p > 2
}

/// One line of the algorithm table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AlgorithmChoice {
    /// The collective.
    pub collective: &'static str,
    /// The algorithm.
    pub algorithm: &'static str,
    /// When it is chosen.
    pub when: &'static str,
}

/// Every algorithm choice with its condition, in the order they are tested (`oxmpi-info`).
pub fn algorithm_table() -> &'static [AlgorithmChoice] {
    macro_rules! t {
        ($($c:literal, $a:literal, $w:literal;)*) => {
            &[$(AlgorithmChoice { collective: $c, algorithm: $a, when: $w },)*]
        };
    }
    t! {
        "bcast", "single-copy pulls (shared memory)", "bytes >= OXMPI_COLL_SHM_BCAST_LONG (_OVERSUBSCRIBED with more ranks than cores), every rank on this host, single copy allowed: each rank reads the root's buffer once (on at most OXMPI_COLL_SHM_BCAST_SPLIT ranks the root writes the last 1/p of each receiver's buffer meanwhile)";
        "reduce/allreduce", "shared-memory reduce-scatter", "bytes >= OXMPI_COLL_SHM_REDUCE_LONG (reduce) or OXMPI_COLL_SHM_ALLREDUCE_LONG (allreduce; _OVERSUBSCRIBED with more ranks than cores), every rank on this host, single copy allowed: each rank combines its slice from every rank's buffer in rank order and writes it to the receivers";
        "bcast/reduce/allreduce", "shared-memory slots", "bytes fit a slot (8 KiB; a reduction at most 1 KiB, or the other p - 1 ranks' inputs together at most 8 KiB for a reduce, 4 KiB for an allreduce), every rank on this host: each rank publishes its data with its arrival; with OXMPI_COLL_SHM_ROOTED_EARLY=1 the bcast root and the reduce non-roots leave once they have arrived";
        "allgather(v)", "shared-memory slots", "every block fits a slot (8 KiB), every rank on this host: each rank publishes its block and copies every other";
        "alltoall", "shared-memory slots", "the p-1 blocks for the other ranks fit a slot (8 KiB) together, every rank on this host: each rank publishes them and copies its own block out of every peer's slot";
        "allgather(v)", "single-copy pulls (shared memory)", "total bytes >= OXMPI_COLL_SHM_ALLGATHER_LONG, every rank on this host, single copy allowed: each rank reads every peer's block into place";
        "gather", "single-copy pulls (shared memory)", "total bytes >= OXMPI_COLL_SHM_GATHER_LONG, every rank on this host, single copy allowed: the root reads every rank's block into place";
        "alltoall", "single-copy pulls (shared memory)", "not in place, total bytes >= OXMPI_COLL_SHM_ALLTOALL_LONG, every rank on this host, single copy allowed: each rank reads its block of every peer's buffer into place";
        "any", "node-aware (hierarchical)", "barrier/bcast/reduce/allreduce when the communicator spans 2+ hosts and some host has 2+ of its ranks, OXMPI_COLL_HIERARCHICAL=1, commutative op: across host leaders, then within each host";
        "any", "node-aware, intra-host stage on a host sub-communicator", "blocking node-aware barrier, reduce/allreduce, bcast of at least OXMPI_COLL_HIER_BCAST_LONG bytes, OXMPI_COLL_HIER_SHM=1: the stages within each host are that host's collectives (shared memory where they can), the stage across hosts messages among the leaders";
        "barrier", "dissemination", "always (flat); ceil(log2 p) rounds";
        "bcast", "scatter + ring allgather", "bytes >= OXMPI_COLL_BCAST_LONG (_OVERSUBSCRIBED when every rank is on one host with more ranks than cores) and p >= 4";
        "bcast", "binomial tree", "otherwise";
        "reduce", "binomial tree", "always; rooted at rank 0 then forwarded for non-commutative ops";
        "allreduce", "recursive doubling", "bytes < OXMPI_COLL_ALLREDUCE_LONG, or count < p, or p = 1";
        "allreduce", "Rabenseifner (recursive halving + doubling)", "long, and p a power of two or op non-commutative";
        "allreduce", "ring (reduce-scatter + allgather)", "long, commutative op, p not a power of two";
        "gather/scatter", "binomial tree", "p*block bytes < OXMPI_COLL_GATHER_LONG";
        "gather/scatter", "linear", "otherwise, and all v-variants";
        "allgather", "recursive doubling", "p a power of two and p*block < OXMPI_COLL_ALLGATHER_LONG";
        "allgather", "Bruck", "p*block < OXMPI_COLL_ALLGATHER_BRUCK";
        "allgather", "ring", "otherwise";
        "allgatherv", "ring", "always (blocks in rank order), linear when displacements are not in rank order";
        "alltoall", "Bruck", "block <= OXMPI_COLL_ALLTOALL_BRUCK bytes and p >= 8";
        "alltoall", "linear (all posted at once)", "block < OXMPI_COLL_ALLTOALL_PAIRWISE";
        "alltoall", "pairwise exchange", "otherwise; alltoallv/w: pairwise when the largest block >= OXMPI_COLL_ALLTOALL_PAIRWISE, else linear";
        "reduce_scatter(_block)", "ring", "commutative op, total bytes >= OXMPI_COLL_REDUCE_SCATTER_LONG, p > 2";
        "reduce_scatter(_block)", "reduce + scatter", "otherwise (rank order kept for non-commutative ops)";
        "scan/exscan", "recursive doubling", "always";
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crossovers_parse_and_choose() {
        let c =
            Crossovers::from_lookup(|k| (k == "OXMPI_COLL_BCAST_LONG").then(|| "1k".to_string()))
                .unwrap();
        assert_eq!(c.bcast_long, 1024);
        assert_eq!(bcast(&c, 1024, 4, false), Bcast::ScatterAllgather);
        assert_eq!(bcast(&c, 1024, 3, false), Bcast::Binomial);
        // A crowded host keeps the tree up to its own crossover.
        assert_eq!(bcast(&c, 1024, 4, true), Bcast::Binomial);
        assert_eq!(bcast(&c, 16 << 20, 4, true), Bcast::ScatterAllgather);
        let bad = Crossovers::from_lookup(|k| {
            (k == "OXMPI_COLL_ALLREDUCE_LONG").then(|| "big".to_string())
        });
        assert_eq!(bad.unwrap_err().class(), ErrorClass::Arg);
        let d = Crossovers::default();
        assert_eq!(allreduce(&d, 8, 1, 8, true), Allreduce::RecursiveDoubling);
        assert_eq!(
            allreduce(&d, 1 << 20, 1 << 18, 8, true),
            Allreduce::Rabenseifner
        );
        assert_eq!(allreduce(&d, 1 << 20, 1 << 18, 6, true), Allreduce::Ring);
        assert_eq!(
            allreduce(&d, 1 << 20, 1 << 18, 6, false),
            Allreduce::Rabenseifner
        );
        assert_eq!(allgather(&d, 64, 6), Allgather::Bruck);
        assert_eq!(alltoall(&d, 8, 8, false), Alltoall::Bruck);
        assert_eq!(alltoall(&d, 1 << 20, 8, false), Alltoall::Pairwise);
        assert_eq!(alltoall(&d, 64 << 10, 4, false), Alltoall::Pairwise);
        assert_eq!(alltoall(&d, 64 << 10, 4, true), Alltoall::Linear);
        assert!(algorithm_table().iter().all(|a| !a.when.is_empty()));
        let names: Vec<_> = COLL_TUNABLES.iter().map(|t| t.name).collect();
        assert!(names.iter().all(|n| n.starts_with("OXMPI_COLL_")));
    }

    #[test]
    fn an_oversubscribed_host_takes_its_own_single_copy_crossovers() {
        let c = Crossovers::from_lookup(|k| match k {
            "OXMPI_COLL_SHM_BCAST_LONG" => Some("8k".into()),
            "OXMPI_COLL_SHM_BCAST_LONG_OVERSUBSCRIBED" => Some("1m".into()),
            "OXMPI_COLL_SHM_ALLREDUCE_LONG_OVERSUBSCRIBED" => Some("3".into()),
            _ => None,
        })
        .unwrap();
        assert_eq!(c.shm_bcast_min(false, 3), 8192);
        assert_eq!(c.shm_bcast_min(true, 3), 1 << 20);
        assert_eq!(c.shm_bcast_min(true, 2), 1 << 20);
        assert_eq!(c.shm_bcast_min(false, 2), c.shm_bcast_long_pair);
        assert_eq!(c.shm_allgather_min(false), c.shm_allgather_long);
        assert_eq!(
            c.shm_allgather_min(true),
            c.shm_allgather_long_oversubscribed
        );
        assert_eq!(
            c.shm_allreduce_min(false),
            Crossovers::default().shm_allreduce_long
        );
        assert_eq!(c.shm_allreduce_min(true), 3);
    }
}
