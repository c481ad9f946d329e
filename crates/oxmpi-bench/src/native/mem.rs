//! `init --report-mem`: memory per rank after every pair has exchanged a message.

use oxmpi::op::Op;

use super::Ctx;

/// A `Key: N kB` value of /proc/self/status, -1 if absent.
fn status_kb(key: &str) -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix(key)?.strip_prefix(':').map(str::to_owned))
        })
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(-1.0)
}

/// This process's shared mappings as (device, inode, extent) triples.
fn shared_segments() -> Vec<u64> {
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
    let mut out = Vec::new();
    for line in maps.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 5 || f[1].as_bytes().get(3) != Some(&b's') {
            continue;
        }
        let Some((start, end)) = f[0].split_once('-') else {
            continue;
        };
        let (Ok(start), Ok(end), Ok(offset)) = (
            u64::from_str_radix(start, 16),
            u64::from_str_radix(end, 16),
            u64::from_str_radix(f[2], 16),
        ) else {
            continue;
        };
        let dev = f[3]
            .bytes()
            .fold(0u64, |a, b| a.wrapping_mul(31).wrapping_add(b as u64));
        let inode: u64 = f[4].parse().unwrap_or(0);
        out.extend([dev, inode, offset + (end - start)]);
    }
    out
}

/// Prints the memory metrics at rank 0.
pub fn report(ctx: &Ctx<'_>) -> oxmpi::Result<()> {
    let np = ctx.np as usize;
    // Connect every pair, so lazily created per-pair resources exist.
    let s: Vec<i32> = (0..np as i32).map(|j| ctx.rank * ctx.np + j).collect();
    let mut r = vec![0i32; np];
    ctx.world.all_to_all_into(&s, &mut r)?;
    if let Some(j) = (0..np).find(|&j| r[j] != j as i32 * ctx.np + ctx.rank) {
        ctx.verification_failed(format!("alltoall from rank {j} delivered {}", r[j]));
    }
    ctx.world.barrier()?;
    let mine = [status_kb("VmHWM"), status_kb("RssShmem")];
    let mut sum = [0.0; 2];
    ctx.world.reduce_into(0, &mine, &mut sum, Op::Sum)?;
    let mut max_hwm = [0.0];
    ctx.world
        .reduce_into(0, &mine[..1], &mut max_hwm, Op::Max)?;
    let segs = shared_segments();
    let mut counts = vec![0u64; np];
    ctx.world
        .gather_into(0, &[segs.len() as u64], &mut counts)?;
    let counts: Vec<usize> = counts.iter().map(|&c| c as usize).collect();
    let displs: Vec<usize> = counts
        .iter()
        .scan(0, |acc, &c| {
            let d = *acc;
            *acc += c;
            Some(d)
        })
        .collect();
    let mut all = vec![
        0u64;
        if ctx.rank == 0 {
            counts.iter().sum()
        } else {
            0
        }
    ];
    ctx.world
        .gather_varcount_into(0, &segs, &mut all, &counts, &displs)?;
    if ctx.rank == 0 {
        // Each shared file counted once, at its largest mapped extent.
        let mut files: std::collections::BTreeMap<(u64, u64), u64> = Default::default();
        for t in all.chunks_exact(3) {
            let e = files.entry((t[0], t[1])).or_default();
            *e = (*e).max(t[2]);
        }
        let bytes: u64 = files.values().sum();
        println!("# oxbench init np={np}: memory per rank (kB)");
        println!("vmhwm-max-kB {:.0}", max_hwm[0]);
        println!("vmhwm-mean-kB {:.1}", sum[0] / np as f64);
        println!(
            "shm-mapped-per-rank-kB {:.1}",
            bytes as f64 / 1024.0 / np as f64
        );
        println!("rss-shmem-mean-kB {:.1}", sum[1] / np as f64);
    }
    Ok(())
}
