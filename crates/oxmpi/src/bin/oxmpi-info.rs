//! `oxmpi-info`: every tunable with its default and current value, and which protocol each
//! message size takes. `oxmpi-info --topology`: the machine as oxmpi sees it (packages, NUMA
//! nodes, cores, caches, NICs and their NUMA node, and the CPUs this process may use), with the
//! reader that saw it (hwloc, or sysfs and why: `OXMPI_TOPOLOGY`).

use oxmpi::coll::select::{algorithm_table, Crossovers, COLL_TUNABLES};
use oxmpi::config::{Config, Tunable, TUNABLES};

fn main() {
    match std::env::args().nth(1).as_deref() {
        None => {}
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
            eprintln!("oxmpi-info: unknown argument {other:?} (usage: oxmpi-info [--topology])");
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
    if let Err(e) = Crossovers::from_lookup(|k| std::env::var(k).ok()) {
        eprintln!("oxmpi-info: {e}");
        std::process::exit(2);
    }
    println!("Tunables (environment variables, read once at start-up):");
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
        "Shared memory per rank: {bytes} bytes ({cells} ring cells of 64 B + {blocks} pool blocks of {block} B), whatever the number of ranks"
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
        let value = match std::env::var(t.name) {
            Ok(v) => format!("{v} (default {})", t.default),
            Err(_) => t.default.to_owned(),
        };
        println!("  {:width$}  {value}", t.name);
        println!("  {:width$}    {}", "", t.help);
    }
}
