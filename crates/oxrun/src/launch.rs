//! Preparing and starting a job from a [`Plan`]: checking the programs, raising the descriptor
//! limit, drawing the job key and secret, planning CPU bindings, and spawning every rank.
//!
//! All ranks run on this host for now. Placement is one function ([`node_of`]); a host list
//! would map ranks to node indices there, and the PMI server already answers
//! `PMI_process_mapping` from it.

use std::io;

use oxmpi_pmi::JobInfo;

use crate::binding::{self, format_cpu_list};
use crate::cli::Plan;
use crate::job::{RunningJob, EXIT_FAILURE};
use crate::program::{self, effective_path};
use crate::signals::SignalPipe;
use crate::spawn::{spawn_rank, JobEnv, RankSpec};
use crate::sys;

/// Descriptors oxrun needs per rank (stdout, stderr, PMI socket) and in total besides.
const FDS_PER_RANK: u64 = 3;
const FDS_SPARE: u64 = 32;

/// The host index of each of `size` ranks: all on this host.
pub fn node_of(size: u32) -> Vec<u32> {
    vec![0; size as usize]
}

/// `len` random bytes as lowercase hex.
fn random_hex(len: usize) -> io::Result<String> {
    let mut bytes = vec![0u8; len];
    getrandom::getrandom(&mut bytes).map_err(|e| io::Error::other(e.to_string()))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// oxrun's exit status when a rank cannot be started, shell style.
fn spawn_exit_status(e: &io::Error) -> i32 {
    match e.raw_os_error() {
        Some(libc::ENOENT) | Some(libc::ENOTDIR) => 127,
        Some(libc::EACCES) | Some(libc::ENOEXEC) | Some(libc::EISDIR) | Some(libc::EPERM) => 126,
        _ => EXIT_FAILURE,
    }
}

/// Runs the job described by `plan` to its end and returns oxrun's exit status.
pub fn run(plan: &Plan) -> i32 {
    let mut programs = Vec::with_capacity(plan.apps.len());
    for app in &plan.apps {
        match program::resolve(&app.program, effective_path(&app.env).as_deref()) {
            Ok(p) => programs.push(p),
            Err(e) => {
                eprintln!(
                    "oxrun: cannot execute {}: {}",
                    app.program.to_string_lossy(),
                    e.reason
                );
                return e.status;
            }
        }
    }

    let size = plan.size();
    let (nofile, soft_limit) = match sys::raise_nofile_limit() {
        Ok((old, soft)) => (Some(old), soft),
        Err(_) => (None, 1024),
    };
    let needed = FDS_PER_RANK * u64::from(size) + FDS_SPARE;
    if needed > soft_limit {
        eprintln!(
            "oxrun: {size} ranks need about {needed} open files, but the limit is {soft_limit} (see ulimit -n)"
        );
        return EXIT_FAILURE;
    }

    let (jobkey, secret) = match (random_hex(8), random_hex(32)) {
        (Ok(k), Ok(s)) => (k, s),
        (Err(e), _) | (_, Err(e)) => {
            eprintln!("oxrun: cannot draw the job's random key: {e}");
            return EXIT_FAILURE;
        }
    };
    let signals = match SignalPipe::install() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("oxrun: cannot set up signal handling: {e}");
            return EXIT_FAILURE;
        }
    };

    let cores = binding::host_cores();
    let bindings = binding::plan(size as usize, plan.bind_to, &cores);
    let info = JobInfo {
        kvsname: format!("kvs_{}_{}", std::process::id(), &jobkey[..8]),
        size,
        appnum: plan.appnums(),
        node_of: node_of(size),
        secret: Some(secret.clone()),
    };
    let mut job = RunningJob::new(info, jobkey.clone(), signals, plan.tag_output, plan.timeout);
    let env = JobEnv {
        size,
        secret,
        jobkey,
        nofile,
    };
    let forward_stdin = !sys::stdin_is_background_tty();

    let mut rank = 0u32;
    'apps: for (app, path) in plan.apps.iter().zip(&programs) {
        for _ in 0..app.np {
            let spec = RankSpec {
                rank,
                program: path,
                argv0: &app.program,
                args: &app.args,
                env: &app.env,
                cpus: bindings[rank as usize].as_deref(),
                stdin: rank == 0 && forward_stdin,
            };
            match spawn_rank(&spec, &env) {
                Ok(s) => job.add_rank(s),
                Err(e) => {
                    job.say(&format!(
                        "oxrun: cannot start rank {rank} ({}): {e}; stopping the job",
                        app.program.to_string_lossy()
                    ));
                    job.stop(spawn_exit_status(&e));
                    break 'apps;
                }
            }
            rank += 1;
        }
    }

    if plan.report_bindings {
        let all: Vec<usize> = cores.iter().flatten().copied().collect();
        let mut all_sorted = all.clone();
        all_sorted.sort_unstable();
        for r in 0..job.started() {
            let pid = job.pid(r);
            let line = match &bindings[r as usize] {
                Some(cpus) => format!(
                    "oxrun: rank {r} (pid {pid}) bound to cpu{} {}",
                    if cpus.len() > 1 { "s" } else { "" },
                    format_cpu_list(cpus)
                ),
                None => format!(
                    "oxrun: rank {r} (pid {pid}) not bound (may run on cpus {})",
                    format_cpu_list(&all_sorted)
                ),
            };
            job.say(&line);
        }
    }
    job.run()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_hex_of_the_right_length() {
        let k = random_hex(8).unwrap();
        assert_eq!(k.len(), 16);
        assert!(oxmpi_pmi::launch::valid_jobkey(&k));
        assert_ne!(k, random_hex(8).unwrap());
    }

    #[test]
    fn spawn_errors_map_like_a_shell() {
        assert_eq!(
            spawn_exit_status(&io::Error::from_raw_os_error(libc::ENOENT)),
            127
        );
        assert_eq!(
            spawn_exit_status(&io::Error::from_raw_os_error(libc::EACCES)),
            126
        );
        assert_eq!(
            spawn_exit_status(&io::Error::from_raw_os_error(libc::EAGAIN)),
            1
        );
    }
}
