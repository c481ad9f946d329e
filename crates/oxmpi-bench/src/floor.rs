//! `oxmpi-bench floor`: the hardware floor under shared-memory latency. Two threads pinned to
//! two cores (those `oxrun --bind-to core` gives ranks 0 and 1) bounce one cache line: one
//! writes an odd count and waits for the next even one, the other answers each odd count with
//! the even one after it. The one-way time (half the round trip) is one line transfer; no
//! message library delivers a message between those cores faster.
//!
//! With `--barrier`, the floor under a barrier instead: each thread announces its arrival
//! in a line of its own and waits until it sees the other's (the shape of oxmpi's
//! shared-memory barrier), back to back; the time per barrier is printed.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use clap::Args;

/// Options of `oxmpi-bench floor`.
#[derive(Debug, Args, Clone)]
pub struct FloorArgs {
    /// The two cores, comma-separated.
    #[arg(long, default_value = "0,1", value_delimiter = ',')]
    pub cores: Vec<usize>,
    /// Round trips per repeat (after as many warm-up ones).
    #[arg(long, default_value_t = 200_000)]
    pub iters: u64,
    /// Repeats; each prints a line (the spread shows how steady the machine is).
    #[arg(long, default_value_t = 5)]
    pub repeats: u32,
    /// Time a two-thread barrier on arrival counters (one line each) instead of the
    /// one-way ping-pong.
    #[arg(long)]
    pub barrier: bool,
}

/// The counter, alone on its line (and on the adjacent-line prefetcher's pair).
#[repr(C, align(128))]
struct Line {
    count: AtomicU64,
}

/// An arrival counter alone on its page.
#[repr(C, align(4096))]
struct Page {
    count: AtomicU64,
}

/// Pins the calling thread to `core`.
fn pin(core: usize) -> std::io::Result<()> {
    // SAFETY: a zeroed cpu_set_t is the empty set; CPU_SET writes inside it (core is checked
    // against its capacity first); sched_setaffinity reads it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if core >= 8 * std::mem::size_of::<libc::cpu_set_t>() {
            return Err(std::io::Error::other(format!("core {core} out of range")));
        }
        libc::CPU_SET(core, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Spins until `line` holds `v`, yielding now and then (both threads may share one core).
#[inline]
fn wait_for(line: &AtomicU64, v: u64) {
    let mut k = 0u32;
    while line.load(Ordering::Acquire) != v {
        k = k.wrapping_add(1);
        if k % 4096 == 0 {
            std::thread::yield_now();
        } else {
            std::hint::spin_loop();
        }
    }
}

/// Spins until `line` holds at least `v`, yielding now and then. No `pause` between loads,
/// as in oxmpi's barrier: on this Xeon one costs more than a tenth of the barrier.
#[inline]
fn wait_at_least(line: &AtomicU64, v: u64) {
    let mut k = 0u32;
    while line.load(Ordering::Acquire) < v {
        k = k.wrapping_add(1);
        if k % 4096 == 0 {
            std::thread::yield_now();
        }
    }
}

/// The two cores of `args`.
fn cores(args: &FloorArgs) -> std::io::Result<(usize, usize)> {
    match args.cores[..] {
        [a, b] => Ok((a, b)),
        _ => Err(std::io::Error::other("--cores takes two cores, as A,B")),
    }
}

/// Microseconds per barrier between two threads, one per repeat.
pub fn measure_barrier(args: &FloorArgs) -> std::io::Result<Vec<f64>> {
    let (a, b) = cores(args)?;
    // Each counter on a page of its own, as each rank's lies in its own segment: lines of
    // one page draw the neighbouring line's prefetches.
    let lines = Arc::new([
        Page {
            count: AtomicU64::new(0),
        },
        Page {
            count: AtomicU64::new(0),
        },
    ]);
    let total = 2 * args.iters * u64::from(args.repeats);
    let barrier = |lines: &[Page; 2], me: usize, n: u64| {
        lines[me].count.store(n, Ordering::Release);
        wait_at_least(&lines[1 - me].count, n);
    };
    let other = {
        let lines = lines.clone();
        std::thread::spawn(move || -> std::io::Result<()> {
            pin(b)?;
            for n in 1..=total {
                barrier(&lines, 1, n);
            }
            Ok(())
        })
    };
    pin(a)?;
    let mut out = Vec::new();
    let mut n = 0u64;
    for _ in 0..args.repeats {
        for _ in 0..args.iters {
            n += 1;
            barrier(&lines, 0, n);
        }
        let t0 = Instant::now();
        for _ in 0..args.iters {
            n += 1;
            barrier(&lines, 0, n);
        }
        out.push(t0.elapsed().as_secs_f64() * 1e6 / args.iters as f64);
    }
    other
        .join()
        .map_err(|_| std::io::Error::other("barrier thread panicked"))??;
    Ok(out)
}

/// One-way times in microseconds, one per repeat.
pub fn measure(args: &FloorArgs) -> std::io::Result<Vec<f64>> {
    let (a, b) = cores(args)?;
    let line = Arc::new(Line {
        count: AtomicU64::new(0),
    });
    let total = (args.iters * 2) * u64::from(args.repeats);
    let echo = {
        let line = line.clone();
        std::thread::spawn(move || -> std::io::Result<()> {
            pin(b)?;
            for i in 1..=total {
                wait_for(&line.count, 2 * i - 1);
                line.count.store(2 * i, Ordering::Release);
            }
            Ok(())
        })
    };
    pin(a)?;
    let mut out = Vec::new();
    let mut i = 0u64;
    let mut round = |n: u64| {
        for _ in 0..n {
            i += 1;
            line.count.store(2 * i - 1, Ordering::Release);
            wait_for(&line.count, 2 * i);
        }
    };
    for _ in 0..args.repeats {
        round(args.iters);
        let t0 = Instant::now();
        round(args.iters);
        out.push(t0.elapsed().as_secs_f64() * 1e6 / (2.0 * args.iters as f64));
    }
    echo.join()
        .map_err(|_| std::io::Error::other("echo thread panicked"))??;
    Ok(out)
}

/// Prints one line per repeat.
pub fn run(args: &FloorArgs) -> std::io::Result<()> {
    let (a, b) = cores(args)?;
    let times = if args.barrier {
        println!("# oxmpi-bench floor: arrival-counter barrier between cores {a} and {b}, per barrier (us)");
        measure_barrier(args)?
    } else {
        println!(
            "# oxmpi-bench floor: cache-line ping-pong between cores {a} and {b}, one-way (us)"
        );
        measure(args)?
    };
    for t in times {
        println!("{t:.3}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn it_needs_two_cores() {
        let args = FloorArgs {
            cores: vec![0],
            iters: 10,
            repeats: 1,
            barrier: false,
        };
        assert!(measure(&args).is_err());
        assert!(measure_barrier(&args).is_err());
    }

    #[test]
    fn the_floor_is_a_positive_time_per_repeat() {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let args = FloorArgs {
            cores: vec![0, (cores > 1) as usize],
            iters: 1000,
            repeats: 2,
            barrier: false,
        };
        for t in [measure(&args).unwrap(), measure_barrier(&args).unwrap()] {
            assert_eq!(t.len(), 2);
            assert!(t.iter().all(|&x| x > 0.0 && x.is_finite()), "{t:?}");
        }
    }
}
