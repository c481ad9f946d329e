//! Running one job: spawn a command in its own process group, capture its output, time it
//! from launch to exit, kill the whole group if it outlives its time limit, and judge whether
//! the run may be trusted.

use std::ffi::OsString;
use std::fmt;
use std::io::Read;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::PathBuf;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

/// A command to run: program and arguments, extra environment, working directory.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CommandSpec {
    /// `argv[0]` and the arguments.
    pub argv: Vec<OsString>,
    /// Variables added to the inherited environment.
    pub env: Vec<(OsString, OsString)>,
    /// Working directory (inherited when `None`).
    pub cwd: Option<PathBuf>,
}

impl CommandSpec {
    /// A command from its argv.
    pub fn new<I, S>(argv: I) -> CommandSpec
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        CommandSpec {
            argv: argv.into_iter().map(Into::into).collect(),
            ..CommandSpec::default()
        }
    }

    /// The command line as one string, for messages.
    pub fn display(&self) -> String {
        self.argv
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// What happened to a finished (or killed) command.
#[derive(Clone, Debug)]
pub struct RunOutcome {
    /// Exit status of the launched process.
    pub status: ExitStatus,
    /// Everything it wrote to stdout (lossily decoded).
    pub stdout: String,
    /// Everything it wrote to stderr (lossily decoded).
    pub stderr: String,
    /// Wall time from spawn to exit.
    pub wall: Duration,
    /// True when it was killed for exceeding its time limit.
    pub timed_out: bool,
}

/// A command that could not be run at all.
#[derive(Debug)]
pub enum RunError {
    /// The argv was empty.
    EmptyCommand,
    /// The program could not be started.
    Spawn {
        /// The command line.
        command: String,
        /// The OS error.
        source: std::io::Error,
    },
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunError::EmptyCommand => write!(f, "empty command"),
            RunError::Spawn { command, source } => write!(f, "cannot start '{command}': {source}"),
        }
    }
}

impl std::error::Error for RunError {}

/// Sends `signal` to process `pid` (or, if negative, to the process group `-pid`).
fn signal(pid: i64, sig: libc::c_int) {
    if let Ok(pid) = libc::pid_t::try_from(pid) {
        // SAFETY: kill(2) takes plain integers and touches no memory of ours.
        unsafe {
            libc::kill(pid, sig);
        }
    }
}

/// The parent pid from the text of `/proc/PID/stat` (`pid (comm) state ppid ...`; the command
/// name may itself contain spaces and parentheses).
pub fn parent_from_stat(stat: &str) -> Option<u32> {
    let after = &stat[stat.rfind(')')? + 1..];
    let mut fields = after.split_whitespace();
    fields.next()?; // state
    fields.next()?.parse().ok()
}

/// `root` and all its descendants, from a scan of /proc.
fn process_tree(root: u32) -> Vec<u32> {
    let mut parent_of: Vec<(u32, u32)> = Vec::new();
    if let Ok(entries) = std::fs::read_dir("/proc") {
        for e in entries.flatten() {
            let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
                continue;
            };
            if let Some(ppid) = std::fs::read_to_string(e.path().join("stat"))
                .ok()
                .as_deref()
                .and_then(parent_from_stat)
            {
                parent_of.push((pid, ppid));
            }
        }
    }
    let mut tree = vec![root];
    let mut i = 0;
    while i < tree.len() {
        let p = tree[i];
        tree.extend(parent_of.iter().filter(|(_, pp)| *pp == p).map(|(c, _)| *c));
        i += 1;
    }
    tree
}

/// Kills `root` (not yet reaped) and every process descended from it, even those that moved
/// to their own process group or session (MPI launchers' proxies and ranks do): the tree is
/// stopped first, rescanned until no new process appears, then killed; the process group
/// `pgid` is killed as well.
fn kill_tree(root: u32, pgid: u32) {
    let mut stopped: Vec<u32> = Vec::new();
    for _ in 0..8 {
        let fresh: Vec<u32> = process_tree(root)
            .into_iter()
            .filter(|p| !stopped.contains(p))
            .collect();
        if fresh.is_empty() {
            break;
        }
        for &p in &fresh {
            signal(i64::from(p), libc::SIGSTOP);
        }
        stopped.extend(fresh);
    }
    for &p in &stopped {
        signal(i64::from(p), libc::SIGKILL);
    }
    signal(-i64::from(pgid), libc::SIGKILL);
}

fn reader<R: Read + Send + 'static>(mut pipe: R) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let mut buf = Vec::new();
        // A read error ends the capture; what was read so far is kept.
        let _ = pipe.read_to_end(&mut buf);
        let _ = tx.send(String::from_utf8_lossy(&buf).into_owned());
    });
    rx
}

/// Runs `spec` with stdin closed, in a new process group, for at most `limit`. On timeout the
/// launcher and all its descendants are killed. Processes of its group still holding the output
/// pipes a few seconds after the launcher exited are killed as well.
pub fn run(spec: &CommandSpec, limit: Duration) -> Result<RunOutcome, RunError> {
    let (program, args) = spec.argv.split_first().ok_or(RunError::EmptyCommand)?;
    let mut cmd = Command::new(program);
    cmd.args(args)
        .envs(spec.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    if let Some(dir) = &spec.cwd {
        cmd.current_dir(dir);
    }
    let start = Instant::now();
    let mut child = cmd.spawn().map_err(|source| RunError::Spawn {
        command: spec.display(),
        source,
    })?;
    let pgid = child.id();
    let out_rx = child.stdout.take().map(reader);
    let err_rx = child.stderr.take().map(reader);

    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let status = child.wait();
        let _ = tx.send((status, Instant::now()));
    });
    let mut timed_out = false;
    let (status, end) = match rx.recv_timeout(limit) {
        Ok(done) => done,
        Err(_) => {
            timed_out = true;
            kill_tree(pgid, pgid);
            rx.recv().unwrap_or_else(|_| {
                (
                    Err(std::io::Error::other("waiter thread ended")),
                    Instant::now(),
                )
            })
        }
    };
    let status = status.unwrap_or_else(|_| ExitStatus::from_raw(libc::SIGKILL));

    // Collect output; if a straggler keeps a pipe open, kill the group and take what came.
    let grace = Duration::from_secs(3);
    let collect = |rx: Option<mpsc::Receiver<String>>| -> String {
        let Some(rx) = rx else {
            return String::new();
        };
        match rx.recv_timeout(grace) {
            Ok(s) => s,
            Err(_) => {
                signal(-i64::from(pgid), libc::SIGKILL);
                rx.recv_timeout(grace).unwrap_or_default()
            }
        }
    };
    let stdout = collect(out_rx);
    let stderr = collect(err_rx);
    Ok(RunOutcome {
        status,
        stdout,
        stderr,
        wall: end.duration_since(start),
        timed_out,
    })
}

/// The last few non-empty lines of `text`, joined with " | ", for failure messages.
pub fn tail(text: &str, lines: usize) -> String {
    let v: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let start = v.len().saturating_sub(lines);
    let mut s = v[start..].join(" | ");
    if s.len() > 400 {
        let mut cut = 400;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        s.truncate(cut);
        s.push_str("...");
    }
    s
}

/// Judges a finished run: `Ok(())` when it may be trusted, or the reason it may not — killed
/// for time, a non-zero exit or death by signal, or a verification failure reported by the
/// benchmark (even with exit status 0).
pub fn judge(outcome: &RunOutcome, limit: Duration) -> Result<(), String> {
    if outcome.timed_out {
        return Err(format!(
            "timed out after {} s{}",
            limit.as_secs(),
            with_detail(&outcome.stderr)
        ));
    }
    let combined = format!("{}\n{}", outcome.stdout, outcome.stderr);
    if let Some(line) = combined.lines().find(|l| l.contains("verification failed")) {
        return Err(format!("wrong data: {}", line.trim()));
    }
    if let Some(sig) = outcome.status.signal() {
        return Err(format!(
            "killed by signal {sig}{}",
            with_detail(&outcome.stderr)
        ));
    }
    match outcome.status.code() {
        Some(0) => Ok(()),
        Some(code) => Err(format!(
            "exit status {code}{}",
            with_detail(&outcome.stderr)
        )),
        None => Err("ended without an exit status".to_string()),
    }
}

fn with_detail(stderr: &str) -> String {
    let t = tail(stderr, 3);
    if t.is_empty() {
        String::new()
    } else {
        format!(": {t}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(code: i32, stdout: &str, stderr: &str) -> RunOutcome {
        RunOutcome {
            status: ExitStatus::from_raw(code << 8),
            stdout: stdout.to_string(),
            stderr: stderr.to_string(),
            wall: Duration::from_millis(5),
            timed_out: false,
        }
    }

    #[test]
    fn runs_and_captures() {
        let spec = CommandSpec::new(["sh", "-c", "echo out; echo err >&2; exit 3"]);
        let o = run(&spec, Duration::from_secs(30)).unwrap();
        assert_eq!(o.stdout, "out\n");
        assert_eq!(o.stderr, "err\n");
        assert_eq!(o.status.code(), Some(3));
        assert!(!o.timed_out);
        let e = judge(&o, Duration::from_secs(30)).unwrap_err();
        assert_eq!(e, "exit status 3: err");
    }

    #[test]
    fn kills_the_whole_group_on_timeout() {
        // The shell's background child keeps stdout open: both must die.
        let spec = CommandSpec::new(["sh", "-c", "sleep 100 & sleep 100; echo never"]);
        let limit = Duration::from_millis(300);
        let o = run(&spec, limit).unwrap();
        assert!(o.timed_out);
        assert!(o.wall < Duration::from_secs(20));
        assert!(!o.stdout.contains("never"));
        assert!(judge(&o, limit).unwrap_err().starts_with("timed out"));
    }

    #[test]
    fn timeout_kills_descendants_that_left_the_group() {
        // setsid puts the sleeper in its own session and group, as MPI launchers do with ranks.
        let marker = format!("100.{}", std::process::id());
        let script = format!("setsid sleep {marker} & wait");
        let spec = CommandSpec::new(["sh", "-c", script.as_str()]);
        let o = run(&spec, Duration::from_millis(500)).unwrap();
        assert!(o.timed_out);
        std::thread::sleep(Duration::from_millis(200));
        let alive = std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
            .any(|c| String::from_utf8_lossy(&c).contains(&marker));
        assert!(!alive, "a descendant outlived the timeout");
    }

    #[test]
    fn parent_pid_from_stat() {
        assert_eq!(parent_from_stat("12 (sh) S 7 12 12 0"), Some(7));
        assert_eq!(parent_from_stat("13 (a b) c)) R 9 1"), Some(9));
        assert_eq!(parent_from_stat("garbage"), None);
    }

    #[test]
    fn stragglers_holding_pipes_do_not_hang_the_run() {
        let spec = CommandSpec::new(["sh", "-c", "sleep 100 & echo started"]);
        let o = run(&spec, Duration::from_secs(30)).unwrap();
        assert_eq!(o.stdout, "started\n");
        assert_eq!(o.status.code(), Some(0));
    }

    #[test]
    fn environment_and_spawn_errors() {
        let mut spec = CommandSpec::new(["sh", "-c", "echo $OXMPI_BENCH_TEST_VAR"]);
        spec.env.push(("OXMPI_BENCH_TEST_VAR".into(), "42".into()));
        let o = run(&spec, Duration::from_secs(30)).unwrap();
        assert_eq!(o.stdout, "42\n");
        let missing = CommandSpec::new(["/nonexistent/oxmpi-bench-no-such-program"]);
        let e = run(&missing, Duration::from_secs(5)).unwrap_err();
        assert!(e.to_string().contains("cannot start"), "{e}");
        assert!(matches!(
            run(&CommandSpec::default(), Duration::from_secs(1)),
            Err(RunError::EmptyCommand)
        ));
    }

    #[test]
    fn judge_rejects_verification_failures_even_with_status_zero() {
        let ok = outcome(0, "# h (us)\n1 1\n", "");
        assert_eq!(judge(&ok, Duration::from_secs(1)), Ok(()));
        let wrong = outcome(
            0,
            "",
            "oxbench: bw: rank 1: verification failed: size 8, data from rank 0, byte 3\n",
        );
        let e = judge(&wrong, Duration::from_secs(1)).unwrap_err();
        assert!(e.starts_with("wrong data: oxbench: bw"), "{e}");
        let signalled = RunOutcome {
            status: ExitStatus::from_raw(libc::SIGSEGV),
            ..outcome(0, "", "")
        };
        assert_eq!(
            judge(&signalled, Duration::from_secs(1)).unwrap_err(),
            format!("killed by signal {}", libc::SIGSEGV)
        );
    }

    #[test]
    fn tail_keeps_last_lines_and_bounds_length() {
        assert_eq!(tail("a\n\nb\nc\n", 2), "b | c");
        assert_eq!(tail("", 3), "");
        let long = "é".repeat(500);
        let t = tail(&long, 1);
        assert!(t.len() <= 403 && t.ends_with("..."));
    }
}
