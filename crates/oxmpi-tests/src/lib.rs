//! Helpers for multi-process tests: find the launchers and run jobs under a deadline.
#![deny(missing_docs)]

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// `target/<profile>`, derived from the running test executable (`target/<profile>/deps/..`).
pub fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    let mut dir = exe.parent().expect("exe dir").to_path_buf();
    if dir.ends_with("deps") {
        dir.pop();
    }
    dir
}

/// The oxrun binary of this build (built by `cargo test --workspace`).
pub fn oxrun() -> PathBuf {
    let p = target_dir().join("oxrun");
    assert!(
        p.exists(),
        "{} not found: run the whole workspace's tests (`cargo test --workspace`)",
        p.display()
    );
    p
}

/// An example program of the `oxmpi` crate (built by `cargo test --workspace`).
pub fn example(name: &str) -> PathBuf {
    let p = target_dir().join("examples").join(name);
    assert!(p.exists(), "{} not found", p.display());
    p
}

/// Runs `cmd` to completion, killing it after `limit`; panics on timeout.
pub fn run_with_deadline(mut cmd: Command, limit: Duration) -> Output {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn");
    let start = Instant::now();
    // Drain pipes on threads so a chatty job cannot block on a full pipe.
    let mut out = child.stdout.take().expect("stdout");
    let mut err = child.stderr.take().expect("stderr");
    let t_out = std::thread::spawn(move || {
        let mut v = Vec::new();
        std::io::Read::read_to_end(&mut out, &mut v).ok();
        v
    });
    let t_err = std::thread::spawn(move || {
        let mut v = Vec::new();
        std::io::Read::read_to_end(&mut err, &mut v).ok();
        v
    });
    let status = loop {
        if let Some(s) = child.try_wait().expect("try_wait") {
            break s;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{cmd:?} did not finish within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Output {
        status,
        stdout: t_out.join().unwrap_or_default(),
        stderr: t_err.join().unwrap_or_default(),
    }
}

/// `oxrun --timeout T -n np prog args...` with extra environment, under a deadline.
pub fn oxrun_job(np: usize, prog: &std::path::Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(oxrun());
    cmd.args(["--timeout", "120", "-n", &np.to_string()])
        .arg(prog)
        .args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    run_with_deadline(cmd, Duration::from_secs(150))
}

/// Lossy stdout and stderr of a finished job, for assertions and messages.
pub fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// Files of oxmpi jobs currently in /dev/shm.
pub fn shm_files() -> Vec<String> {
    std::fs::read_dir("/dev/shm")
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("oxmpi."))
                .collect()
        })
        .unwrap_or_default()
}

/// In an MPI test program: ends the process with status 1 and a message when `$cond` is
/// false (the tests that run the program through oxrun see the failed rank).
#[macro_export]
macro_rules! check {
    ($cond:expr, $($msg:tt)*) => {{
        let ok: bool = $cond;
        if !ok {
            eprintln!("MISMATCH {}", format!($($msg)*));
            std::process::exit(1);
        }
    }};
}

/// In an MPI test program: the value of `r`, or the end of the process with a message naming
/// `what` and the error.
pub fn must<T, E: std::fmt::Display>(what: &str, r: Result<T, E>) -> T {
    r.unwrap_or_else(|e| {
        eprintln!("ERROR {what}: {e}");
        std::process::exit(1)
    })
}

/// In an MPI test program: MPI started through the handle layer, the C layer's way in (as
/// `MPI_Init` does), and the world communicator it gives; the arguments after the program's
/// name.
pub fn handle_layer_world() -> (oxmpi::Communicator, Vec<String>) {
    must(
        "init_thread",
        oxmpi::handle::env::init_thread(oxmpi::threading::Threading::Single),
    );
    let world = must(
        "world",
        oxmpi::handle::comm::comm_typed(oxmpi::handle::comm::CommHandle::WORLD),
    );
    (world, std::env::args().skip(1).collect())
}

/// `cmd` without the launcher's environment (PMI and job variables), so the program starts
/// as a singleton even when the tests themselves run under a launcher.
pub fn without_launcher(cmd: &mut std::process::Command) -> &mut std::process::Command {
    for v in [
        "PMI_FD",
        "PMI_RANK",
        "PMI_SIZE",
        "PMI_PORT",
        "OXMPI_SECRET",
        "OXMPI_JOBKEY",
    ] {
        cmd.env_remove(v);
    }
    cmd
}
