//! Starting one rank: its pipes, its PMI socket, its environment, its process group and its
//! CPU binding.
//!
//! Each rank gets a `socketpair(AF_UNIX, SOCK_STREAM)`: oxrun keeps one end, the rank inherits
//! the other as `PMI_FD` (close-on-exec is cleared on it only in the child, so no other rank
//! inherits it). Each rank leads its own process group, so that ending the rank's group also
//! ends anything it started. Binding uses `sched_setaffinity` in the child before `exec`.

use std::ffi::{OsStr, OsString};
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};

use oxmpi_pmi::launch::JOBKEY_ENV;
use oxmpi_pmi::SECRET_ENV;

use crate::sys::{self, CpuMask};

/// What every rank of the job shares.
#[derive(Debug, Clone)]
pub struct JobEnv {
    /// Number of ranks (`PMI_SIZE`).
    pub size: u32,
    /// The job secret (`OXMPI_SECRET`).
    pub secret: String,
    /// The job key (`OXMPI_JOBKEY`).
    pub jobkey: String,
    /// The descriptor limit to restore in the ranks (oxrun raises its own).
    pub nofile: Option<libc::rlimit>,
}

/// One rank to start.
#[derive(Debug, Clone, Copy)]
pub struct RankSpec<'a> {
    /// Its rank.
    pub rank: u32,
    /// Resolved path of the program.
    pub program: &'a Path,
    /// `argv[0]`: the program as the user typed it.
    pub argv0: &'a OsStr,
    /// The program's arguments.
    pub args: &'a [OsString],
    /// Extra environment (`-x`) for its application context.
    pub env: &'a [(OsString, OsString)],
    /// CPUs to bind it to, if any.
    pub cpus: Option<&'a [usize]>,
    /// Whether its stdin is a pipe from oxrun (else `/dev/null`).
    pub stdin: bool,
    /// Whether the kernel kills it when its parent dies (ranks of an agent, so that a killed
    /// agent leaves no rank behind).
    pub die_with_parent: bool,
    /// Working directory, if not oxrun's (a spawned job's `wdir`).
    pub cwd: Option<&'a Path>,
}

/// A started rank and oxrun's ends of its pipes and PMI socket.
#[derive(Debug)]
pub struct Spawned {
    /// Process id, also its process-group id.
    pub pid: libc::pid_t,
    /// Write end of its stdin, if it reads from oxrun.
    pub stdin: Option<OwnedFd>,
    /// Read end of its stdout.
    pub stdout: OwnedFd,
    /// Read end of its stderr.
    pub stderr: OwnedFd,
    /// oxrun's end of its PMI socket.
    pub pmi: UnixStream,
}

/// Starts one rank. On error nothing is left running.
pub fn spawn_rank(spec: &RankSpec<'_>, job: &JobEnv) -> io::Result<Spawned> {
    let (server, child_end) = UnixStream::pair()?;
    let child_fd = child_end.as_raw_fd();

    let mut cmd = Command::new(spec.program);
    cmd.arg0(spec.argv0)
        .args(spec.args)
        .envs(spec.env.iter().map(|(k, v)| (k, v)))
        .env("PMI_FD", child_fd.to_string())
        .env("PMI_RANK", spec.rank.to_string())
        .env("PMI_SIZE", job.size.to_string())
        .env(SECRET_ENV, &job.secret)
        .env(JOBKEY_ENV, &job.jobkey)
        .stdin(if spec.stdin {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    if let Some(d) = spec.cwd {
        cmd.current_dir(d);
    }

    let mask: Option<CpuMask> = spec.cpus.map(sys::cpus_to_mask);
    let nofile = job.nofile;
    let die_with_parent = spec.die_with_parent;
    let child_setup = move || -> io::Result<()> {
        // This runs in the forked child before exec: only async-signal-safe syscalls, no
        // allocation (io::Error::last_os_error does not allocate).
        // SAFETY: fcntl on a descriptor we own in this (child) process.
        let flags = unsafe { libc::fcntl(child_fd, libc::F_GETFD) };
        // SAFETY: as above; clears close-on-exec so the program inherits PMI_FD.
        if flags == -1
            || unsafe { libc::fcntl(child_fd, libc::F_SETFD, flags & !libc::FD_CLOEXEC) } == -1
        {
            return Err(io::Error::last_os_error());
        }
        if let Some(mask) = &mask {
            // SAFETY: `mask` is a live buffer of the size passed, in cpu_set_t layout.
            let ret = unsafe {
                libc::sched_setaffinity(
                    0,
                    std::mem::size_of::<CpuMask>(),
                    mask.as_ptr().cast::<libc::cpu_set_t>(),
                )
            };
            if ret == -1 {
                return Err(io::Error::last_os_error());
            }
        }
        if die_with_parent {
            // SAFETY: prctl(PR_SET_PDEATHSIG) only sets a flag of this (child) process.
            if unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) } == -1 {
                return Err(io::Error::last_os_error());
            }
        }
        if let Some(limit) = &nofile {
            // Give the program the descriptor limit it would have had without oxrun. Failure
            // only leaves the higher limit in place, which is harmless.
            // SAFETY: `limit` is a valid rlimit.
            unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, limit) };
        }
        Ok(())
    };
    // SAFETY: the closure only makes async-signal-safe syscalls and does not allocate, lock
    // or touch state shared with other threads (oxrun is single-threaded anyway).
    unsafe { cmd.pre_exec(child_setup) };

    let mut child = cmd.spawn()?;
    drop(child_end);
    let pid = child.id() as libc::pid_t;
    let stdin = child.stdin.take().map(OwnedFd::from);
    let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
        // Cannot happen: both were requested as pipes. Leave nothing running.
        let _ = child.kill();
        let _ = child.wait();
        return Err(io::Error::other("child started without its output pipes"));
    };
    let (stdout, stderr) = (OwnedFd::from(stdout), OwnedFd::from(stderr));
    let make_nonblocking = || -> io::Result<()> {
        sys::set_nonblocking(stdout.as_raw_fd())?;
        sys::set_nonblocking(stderr.as_raw_fd())?;
        if let Some(fd) = &stdin {
            sys::set_nonblocking(fd.as_raw_fd())?;
        }
        server.set_nonblocking(true)
    };
    if let Err(e) = make_nonblocking() {
        let _ = sys::kill_group(pid, libc::SIGKILL);
        let _ = sys::reap(pid);
        return Err(e);
    }
    // `child` is dropped without waiting: oxrun reaps every rank itself with waitpid.
    Ok(Spawned {
        pid,
        stdin,
        stdout,
        stderr,
        pmi: server,
    })
}
