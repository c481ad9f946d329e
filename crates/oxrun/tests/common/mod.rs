//! Running `oxrun` from tests, always with a deadline.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

/// Longest any single oxrun invocation may take in a test before it counts as hung.
pub const DEADLINE: Duration = Duration::from_secs(30);

/// What one oxrun run produced.
#[derive(Debug)]
pub struct Run {
    /// Exit code (None if oxrun itself died by a signal).
    pub code: Option<i32>,
    /// Its stdout.
    pub stdout: String,
    /// Its stderr.
    pub stderr: String,
    /// Wall time.
    pub elapsed: Duration,
}

impl Run {
    /// stdout lines.
    pub fn out_lines(&self) -> Vec<&str> {
        self.stdout.lines().collect()
    }

    /// stdout lines in sorted order (ranks print in any order).
    pub fn sorted_out_lines(&self) -> Vec<&str> {
        let mut lines = self.out_lines();
        lines.sort_unstable();
        lines
    }

    /// stderr lines that oxrun itself wrote.
    pub fn oxrun_lines(&self) -> Vec<&str> {
        self.stderr
            .lines()
            .filter(|l| l.starts_with("oxrun:"))
            .collect()
    }
}

pub fn oxrun() -> &'static str {
    env!("CARGO_BIN_EXE_oxrun")
}

pub fn probe() -> &'static str {
    env!("CARGO_BIN_EXE_oxrun-pmi-probe")
}

/// Runs oxrun with `args`, feeding `stdin` (or /dev/null) and extra environment `env`;
/// kills it and fails the test if it does not finish within [`DEADLINE`].
pub fn run_with(args: &[&str], stdin: Option<&[u8]>, env: &[(&str, &str)]) -> Run {
    let mut cmd = Command::new(oxrun());
    cmd.args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    finish(cmd, stdin, &format!("oxrun {args:?}"))
}

/// Runs `script` with `shell -c`, under the same deadline.
pub fn run_shell(shell: &str, script: &str) -> Run {
    let mut cmd = Command::new(shell);
    cmd.arg("-c").arg(script);
    finish(cmd, None, script)
}

/// Runs `cmd` (with no stdin) under the same deadline; `what` names it in a failure.
pub fn run_command(cmd: Command, what: &str) -> Run {
    finish(cmd, None, what)
}

/// Starts `cmd` with piped output, feeds it `stdin`, and collects everything it writes until
/// it exits; kills it and fails the test after [`DEADLINE`].
fn finish(mut cmd: Command, stdin: Option<&[u8]>, what: &str) -> Run {
    let start = Instant::now();
    cmd.stdin(if stdin.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("start the command");
    let feeder = stdin.map(|data| {
        let data = data.to_vec();
        let mut pipe = child.stdin.take().unwrap();
        thread::spawn(move || {
            let _ = pipe.write_all(&data);
        })
    });
    let out_reader = reader(child.stdout.take().unwrap());
    let err_reader = reader(child.stderr.take().unwrap());
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait for the command") {
            break s;
        }
        if start.elapsed() > DEADLINE {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what} did not finish within {DEADLINE:?}");
        }
        thread::sleep(Duration::from_millis(5));
    };
    let elapsed = start.elapsed();
    if let Some(f) = feeder {
        let _ = f.join();
    }
    Run {
        code: status.code(),
        stdout: String::from_utf8_lossy(&out_reader.join().unwrap()).into_owned(),
        stderr: String::from_utf8_lossy(&err_reader.join().unwrap()).into_owned(),
        elapsed,
    }
}

/// Reads `r` to its end on a thread of its own.
fn reader(mut r: impl Read + Send + 'static) -> thread::JoinHandle<Vec<u8>> {
    thread::spawn(move || {
        let mut v = Vec::new();
        let _ = r.read_to_end(&mut v);
        v
    })
}

/// Runs oxrun with `args` and no stdin.
pub fn run(args: &[&str]) -> Run {
    run_with(args, None, &[])
}

/// Whether process `pid` still exists (zombies awaiting their parent count as gone).
pub fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => false,
        Ok(stat) => {
            // The state follows the parenthesized command name.
            let state = stat.rsplit(')').next().unwrap_or("").trim_start();
            !state.starts_with('Z') && !state.starts_with('X')
        }
    }
}

/// Waits up to 5 s for every pid to be gone (orphans are reaped by init asynchronously).
pub fn assert_all_gone(pids: &[i32]) {
    let start = Instant::now();
    while pids.iter().any(|&p| alive(p)) {
        if start.elapsed() > Duration::from_secs(5) {
            let left: Vec<i32> = pids.iter().copied().filter(|&p| alive(p)).collect();
            panic!("processes still alive after the job ended: {left:?}");
        }
        thread::sleep(Duration::from_millis(20));
    }
}

/// Numbers following `key=` in `text`, e.g. all `pid=123` values.
pub fn values_of(text: &str, key: &str) -> Vec<i32> {
    text.split_whitespace()
        .filter_map(|w| w.strip_prefix(key))
        .filter_map(|v| v.parse().ok())
        .collect()
}
