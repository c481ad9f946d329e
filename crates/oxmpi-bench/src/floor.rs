//! `oxmpi-bench floor`: the hardware floor under shared-memory latency. Two threads pinned to
//! two cores (those `oxrun --bind-to core` gives ranks 0 and 1) bounce one cache line: one
//! writes an odd count and waits for the next even one, the other answers each odd count with
//! the even one after it. The one-way time (half the round trip) is one line transfer; no
//! message library delivers a message between those cores faster.

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
}

/// The counter, alone on its line (and on the adjacent-line prefetcher's pair).
#[repr(C, align(128))]
struct Line {
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

/// One-way times in microseconds, one per repeat.
pub fn measure(args: &FloorArgs) -> std::io::Result<Vec<f64>> {
    let &[a, b] = &args.cores[..] else {
        return Err(std::io::Error::other("--cores takes two cores, as A,B"));
    };
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
    println!(
        "# oxmpi-bench floor: cache-line ping-pong between cores {} and {}, one-way (us)",
        args.cores[0], args.cores[1]
    );
    for t in measure(args)? {
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
        };
        assert!(measure(&args).is_err());
    }

    #[test]
    fn the_floor_is_a_positive_time_per_repeat() {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let args = FloorArgs {
            cores: vec![0, (cores > 1) as usize],
            iters: 1000,
            repeats: 2,
        };
        let t = measure(&args).unwrap();
        assert_eq!(t.len(), 2);
        assert!(t.iter().all(|&x| x > 0.0 && x.is_finite()), "{t:?}");
    }
}
