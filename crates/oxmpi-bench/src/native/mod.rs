//! oxmpi's native front end of the suite: `oxmpi-bench BENCHMARK [OPTIONS]` run under `oxrun`,
//! the same method, options and output as `bench/c/oxbench.c` (see [`crate::suite`]), written
//! against the oxmpi Rust API.

mod coll;
mod ddt;
mod mem;
mod p2p;
pub mod pattern;
mod rma;

use std::process::ExitCode;

use clap::Parser;

use crate::suite::{header_line, row_line, BenchOptions, Benchmark, IterClass};

/// Command line of a native benchmark run.
#[derive(Debug, Parser)]
#[command(
    name = "oxmpi-bench",
    about = "oxmpi's native benchmarks (run under oxrun)"
)]
pub struct NativeArgs {
    /// Benchmark name (latency, bw, bibw, msgrate, multi-bw, multi-lat, barrier, bcast, reduce,
    /// allreduce, gather, scatter, allgather, alltoall, put_latency, get_latency, put_bw,
    /// get_bw, acc_latency, fop_counter, ddt-contig, ddt-vector, ddt-vector64k, ddt-indexed,
    /// ddt-struct, ddt-pack-vector, ddt-pack-indexed, ddt-pack-struct, init).
    pub benchmark: String,
    /// Shared options.
    #[command(flatten)]
    pub options: BenchOptions,
    /// `init` only: report memory per rank.
    #[arg(long = "report-mem")]
    pub report_mem: bool,
    /// Send and receive from `alloc_mem` buffers (message memory in shared memory).
    #[arg(long = "alloc-mem")]
    pub alloc_mem: bool,
}

/// Whether `name` is a benchmark this front end runs (and so not another subcommand).
pub fn is_benchmark(name: &str) -> bool {
    name == "init" || Benchmark::from_name(name).is_some()
}

/// OSU's iteration counts, as in the C program.
const LARGE_MESSAGE_SIZE: usize = 8192;

/// Everything a benchmark needs while it runs.
pub(crate) struct Ctx<'u> {
    pub universe: &'u oxmpi::Universe,
    pub world: oxmpi::Communicator,
    pub rank: i32,
    pub np: i32,
    pub benchmark: Benchmark,
    pub opts: BenchOptions,
    pub alloc_mem: bool,
}

impl Ctx<'_> {
    /// Timed iterations at `size`.
    pub fn iters(&self, class: IterClass, size: usize) -> u64 {
        let large = size > LARGE_MESSAGE_SIZE;
        self.opts.iters.unwrap_or(match (class, large) {
            (IterClass::Latency, false) => 10_000,
            (IterClass::Latency, true) => 1_000,
            (IterClass::Bandwidth, false) => 100,
            (IterClass::Bandwidth, true) => 20,
            (IterClass::Collective, false) => 1_000,
            (IterClass::Collective, true) => 100,
        })
    }

    /// Untimed warm-up iterations at `size`.
    pub fn warmup(&self, class: IterClass, size: usize) -> u64 {
        let large = size > LARGE_MESSAGE_SIZE;
        self.opts.warmup.unwrap_or(match (class, large) {
            (IterClass::Latency, false) => 100,
            (IterClass::Latency, true) => 10,
            (IterClass::Bandwidth, false) => 10,
            (IterClass::Bandwidth, true) => 2,
            (IterClass::Collective, false) => 100,
            (IterClass::Collective, true) => 10,
        })
    }

    /// The sizes to measure.
    pub fn sizes(&self) -> Vec<usize> {
        self.opts
            .sizes(self.benchmark)
            .into_iter()
            .map(|s| s as usize)
            .collect()
    }

    /// Prints the header on rank 0.
    pub fn header(&self) {
        if self.rank == 0 {
            println!("{}", header_line(self.benchmark, self.np as u32));
        }
    }

    /// Prints one result row on rank 0.
    pub fn row(&self, size: usize, value: f64) {
        if self.rank == 0 {
            println!("{}", row_line(size as u64, value));
        }
    }

    /// A zeroed byte buffer, from message memory with `--alloc-mem`.
    pub fn buffer(&self, len: usize) -> oxmpi::Result<Buf> {
        Ok(if self.alloc_mem {
            Buf::Shared(self.universe.alloc_mem::<u8>(len)?)
        } else {
            Buf::Heap(vec![0u8; len])
        })
    }

    /// Ends the run: wrong data is never reported as a figure.
    pub fn verification_failed(&self, what: String) -> ! {
        eprintln!(
            "oxmpi-bench: rank {}: verification failed: {what}",
            self.rank
        );
        self.universe.abort(3)
    }
}

/// A benchmark buffer: heap or message memory.
pub(crate) enum Buf {
    Heap(Vec<u8>),
    Shared(oxmpi::SharedBuffer<u8>),
}

impl std::ops::Deref for Buf {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Buf::Heap(v) => v,
            Buf::Shared(s) => s,
        }
    }
}

impl std::ops::DerefMut for Buf {
    fn deref_mut(&mut self) -> &mut [u8] {
        match self {
            Buf::Heap(v) => v,
            Buf::Shared(s) => s,
        }
    }
}

/// Runs a native benchmark from `args` (the whole command line).
pub fn run(args: &[String]) -> ExitCode {
    let parsed = match NativeArgs::try_parse_from(args) {
        Ok(a) => a,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(2);
        }
    };
    let universe = match oxmpi::init() {
        Ok(u) => u,
        Err(e) => {
            eprintln!("oxmpi-bench: init failed: {e}");
            return ExitCode::FAILURE;
        }
    };
    let world = universe.world();
    let (rank, np) = (world.rank(), world.size());
    let benchmark = if parsed.benchmark == "init" {
        Benchmark::Startup
    } else {
        Benchmark::from_name(&parsed.benchmark).expect("checked by is_benchmark")
    };
    let ctx = Ctx {
        universe: &universe,
        world,
        rank,
        np,
        benchmark,
        opts: parsed.options.clone(),
        alloc_mem: parsed.alloc_mem,
    };
    let result = match benchmark {
        Benchmark::Startup if parsed.report_mem => mem::report(&ctx),
        Benchmark::Startup | Benchmark::Mem => Ok(()),
        Benchmark::Latency => p2p::latency(&ctx, false, false),
        Benchmark::LatencyFresh => p2p::latency(&ctx, false, true),
        Benchmark::MultiLat => p2p::latency(&ctx, true, false),
        Benchmark::Bw | Benchmark::Bibw | Benchmark::Msgrate | Benchmark::MultiBw => {
            p2p::bandwidth(&ctx)
        }
        Benchmark::PutLatency
        | Benchmark::GetLatency
        | Benchmark::PutBw
        | Benchmark::GetBw
        | Benchmark::AccLatency => rma::transfer(&ctx),
        Benchmark::FopCounter => rma::counter(&ctx),
        b if b.is_ddt() => ddt::run(&ctx),
        _ => coll::run(&ctx),
    };
    match result.and_then(|()| universe.finalize()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("oxmpi-bench: rank {rank}: {} failed: {e}", parsed.benchmark);
            ExitCode::FAILURE
        }
    }
}

/// Refuses to run with the wrong number of ranks, as the C program does.
pub(crate) fn require_np(ctx: &Ctx<'_>, exactly: Option<i32>, even: bool) -> oxmpi::Result<()> {
    let ok = match exactly {
        Some(n) => ctx.np == n,
        None => !even || (ctx.np >= 2 && ctx.np % 2 == 0),
    };
    if ok {
        return Ok(());
    }
    let need = match exactly {
        Some(n) => format!("exactly {n} ranks"),
        None => "an even number of ranks".to_string(),
    };
    Err(oxmpi::Error::new(
        oxmpi::ErrorClass::Arg,
        format!("{} needs {need}, got {}", ctx.benchmark.name(), ctx.np),
    ))
}
