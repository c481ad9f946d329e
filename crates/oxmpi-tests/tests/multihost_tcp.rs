//! MPI traffic between real (namespace) hosts: three network namespaces joined by veth pairs
//! (`xtask::netns`; h1 and h2 joined by two rails), the head oxrun in h3 starting agents with
//! `--launcher 'ip netns exec {host}'`. Ranks on one host talk over shared memory, ranks on
//! different hosts over TCP: `OXMPI_TCP_LOG_ROUTES` prints every TCP rail as it connects, and
//! each run checks that TCP carries exactly the cross-host pairs it used. The programs verify
//! every byte. Faults: a rail's link taken down mid-stream, the last rail taken down, a
//! stranger from another host connecting to a rank's port, and a peer that passed the
//! handshake sending garbage.
//!
//! Without root or `ip`, each test prints one skip line and passes.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use oxmpi_tests::{run_with_deadline, text};
use xtask::netns::TestHosts;

mod common;
use common::netns::{job_from, run};

fn hosts() -> Option<TestHosts> {
    common::netns::hosts("multihost_tcp")
}

fn own_hosts() -> Option<TestHosts> {
    common::netns::own_hosts("multihost_tcp")
}

/// The head oxrun in h3 running `prog args` with `--host spec`, as a command.
fn job(
    h: &TestHosts,
    spec: &str,
    np: usize,
    prog: &str,
    args: &[&str],
    env: &[(&str, &str)],
) -> Command {
    job_from(3, h, spec, np, prog, args, env)
}

/// The (from, to) rank pairs of the logged TCP routes.
fn tcp_pairs(stderr: &str) -> BTreeSet<(u32, u32)> {
    stderr
        .lines()
        .filter_map(|l| {
            let rest = l.strip_prefix("oxmpi: rank ")?;
            let (from, rest) = rest.split_once(": TCP route to rank ")?;
            let to = rest.split_whitespace().next()?;
            Some((from.parse().ok()?, to.parse().ok()?))
        })
        .collect()
}

/// Runs and checks one program: success, `expect` lines matching `ok`, and TCP only between
/// ranks on different hosts (`host_of`), with at least one such route.
fn suite(
    h: &TestHosts,
    spec: &str,
    host_of: &[usize],
    prog: &str,
    args: &[&str],
    ok: &str,
    expect: usize,
) {
    let np = host_of.len();
    let out = run(h, spec, np, prog, args, &[]);
    let (so, se) = text(&out);
    assert!(
        out.status.success(),
        "{prog} {args:?} on {spec}:\n{so}\n{se}"
    );
    assert_eq!(
        so.matches(ok).count(),
        expect,
        "{prog} {args:?}:\n{so}\n{se}"
    );
    let pairs = tcp_pairs(&se);
    assert!(!pairs.is_empty(), "{prog}: no TCP route logged:\n{se}");
    for (a, b) in &pairs {
        assert_ne!(
            host_of[*a as usize], host_of[*b as usize],
            "{prog}: ranks {a} and {b} share a host but used TCP:\n{se}"
        );
    }
}

/// Messages `p2p_props` verified, summed over ranks.
fn verified(so: &str) -> usize {
    so.lines()
        .filter_map(|l| {
            l.split("verified ")
                .nth(1)?
                .split(' ')
                .next()?
                .parse::<usize>()
                .ok()
        })
        .sum()
}

fn all_suites(h: &TestHosts, spec: &str, host_of: &[usize]) {
    let np = host_of.len();
    let out = run(
        h,
        spec,
        np,
        env!("CARGO_BIN_EXE_p2p_props"),
        &["81", "400", &(4 << 20).to_string()],
        &[],
    );
    let (so, se) = text(&out);
    assert!(out.status.success(), "p2p_props on {spec}:\n{so}\n{se}");
    assert_eq!(verified(&so), 400, "{so}\n{se}");
    assert!(!tcp_pairs(&se).is_empty(), "{se}");
    suite(
        h,
        spec,
        host_of,
        env!("CARGO_BIN_EXE_p2p_semantics"),
        &[],
        "semantics OK",
        np,
    );
    suite(
        h,
        spec,
        host_of,
        env!("CARGO_BIN_EXE_coll_check"),
        &["small"],
        "coll_check passed",
        np,
    );
    suite(
        h,
        spec,
        host_of,
        env!("CARGO_BIN_EXE_coll_check"),
        &["large"],
        "coll_check passed",
        np,
    );
    suite(
        h,
        spec,
        host_of,
        env!("CARGO_BIN_EXE_coll_persistent"),
        &[],
        "coll_persistent passed",
        np,
    );
    suite(
        h,
        spec,
        host_of,
        env!("CARGO_BIN_EXE_topo_check"),
        &[],
        "topo_check passed",
        np,
    );
}

#[test]
fn two_hosts_by_two_ranks_shm_within_tcp_across() {
    let Some(h) = hosts() else { return };
    let spec = format!("{}:2,{}:2", h.name(1), h.name(2));
    all_suites(&h, &spec, &[1, 1, 2, 2]);
}

#[test]
fn three_hosts_by_one_rank_over_tcp() {
    let Some(h) = hosts() else { return };
    let spec = format!("{}:1,{}:1,{}:1", h.name(1), h.name(2), h.name(3));
    all_suites(&h, &spec, &[1, 2, 3]);
}

/// A running job whose stderr is read line by line as it comes.
struct Live {
    child: std::process::Child,
    lines: mpsc::Receiver<String>,
    err: Vec<String>,
    out: std::thread::JoinHandle<String>,
}

impl Live {
    fn start(mut cmd: Command) -> Live {
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("spawn oxrun");
        let mut so = child.stdout.take().unwrap();
        let se = child.stderr.take().unwrap();
        let out = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = so.read_to_string(&mut s);
            s
        });
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for l in BufReader::new(se).lines().map_while(Result::ok) {
                if tx.send(l).is_err() {
                    break;
                }
            }
        });
        Live {
            child,
            lines,
            err: Vec::new(),
            out,
        }
    }

    /// Waits (up to 60 s) for a stderr line containing `what`.
    fn wait_for(&mut self, what: &str) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            if let Ok(l) = self.lines.recv_timeout(Duration::from_millis(100)) {
                let hit = l.contains(what);
                self.err.push(l);
                if hit {
                    return;
                }
            }
        }
        let _ = self.child.kill();
        panic!("no line with {what:?}: {:?}", self.err);
    }

    /// Waits (up to 120 s) for the end: exit status, stdout, stderr.
    fn finish(mut self) -> (Option<i32>, String, String) {
        let deadline = Instant::now() + Duration::from_secs(120);
        let status = loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                break s;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                panic!("job did not end: {:?}", self.err);
            }
            while let Ok(l) = self.lines.try_recv() {
                self.err.push(l);
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let so = self.out.join().unwrap_or_default();
        while let Ok(l) = self.lines.recv_timeout(Duration::from_millis(500)) {
            self.err.push(l);
        }
        (status.code(), so, self.err.join("\n"))
    }
}

#[test]
fn taking_one_rail_down_mid_stream_loses_nothing() {
    let Some(h) = own_hosts() else { return };
    let spec = format!("{}:1,{}:1", h.name(1), h.name(2));
    let big = (4 << 20).to_string();
    let mut live = Live::start(job(
        &h,
        &spec,
        2,
        env!("CARGO_BIN_EXE_p2p_props"),
        &["82", "6000", &big],
        &[],
    ));
    // Rank 0 (h1) connects both rails to rank 1 at its first large message; then rail1 goes.
    live.wait_for("rank 0: TCP route to rank 1 rail 1");
    std::thread::sleep(Duration::from_millis(300));
    h.ip_in(1, &["link", "set", "rail1", "down"]).unwrap();
    let (code, so, se) = live.finish();
    assert_eq!(code, Some(0), "{so}\n{se}");
    assert_eq!(verified(&so), 6000, "{so}\n{se}");
    let warnings: Vec<&str> = se
        .lines()
        .filter(|l| l.contains("TCP rail 1 to rank") && l.contains("failed"))
        .collect();
    assert!(
        !warnings.is_empty() && warnings.len() <= 2,
        "one warning per side at most:\n{se}"
    );
    // Rail 0 stays up: no warning names it (the route log lines do, and are fine).
    assert!(
        !se.lines()
            .any(|l| l.contains("TCP rail 0") && l.contains("failed")),
        "{se}"
    );
}

#[test]
fn taking_the_last_rail_down_ends_the_job_naming_the_peer() {
    let Some(h) = own_hosts() else { return };
    // h1 and h3 share one link only. oxrun runs in h2, so that cutting that link leaves the
    // agents' connections to it alone and only the ranks' TCP rail breaks.
    let spec = format!("{}:1,{}:1", h.name(1), h.name(3));
    let big = (4 << 20).to_string();
    let mut live = Live::start(job_from(
        2,
        &h,
        &spec,
        2,
        env!("CARGO_BIN_EXE_p2p_props"),
        &["83", "6000", &big],
        &[],
    ));
    live.wait_for("rank 0: TCP route to rank 1 rail 0");
    std::thread::sleep(Duration::from_millis(300));
    h.ip_in(1, &["link", "set", "to-h3", "down"]).unwrap();
    let (code, so, se) = live.finish();
    assert_ne!(code, Some(0), "{so}\n{se}");
    assert!(
        se.contains("lost rank 1") || se.contains("lost rank 0"),
        "{se}"
    );
}

/// Runs traffic between h1 and h2 while a stranger in h3 connects to rank 0's port and does
/// `act` (a shell snippet on fd 3); the job must finish correctly and log the stranger once.
fn stranger_from_h3(offset: u16, act: &str) {
    let Some(h) = hosts() else { return };
    let port = 40000 + (std::process::id() % 5000) as u16 * 4 + offset;
    let spec = format!("{}:1,{}:1", h.name(1), h.name(2));
    let big = (4 << 20).to_string();
    let port_s = port.to_string();
    let env = [
        ("OXMPI_TCP_PORT", port_s.as_str()),
        ("OXMPI_TCP_HANDSHAKE_MS", "200"),
    ];
    let live = Live::start(job(
        &h,
        &spec,
        2,
        env!("CARGO_BIN_EXE_p2p_props"),
        &["84", "1500", &big],
        &env,
    ));
    // Rank 0 listens on every address of h1; h3 reaches it on 10.77.13.1.
    let script = format!(
        "for i in $(seq 1 3000); do if exec 3<>/dev/tcp/10.77.13.1/{port}; then {act}; sleep 1; exit 0; fi 2>/dev/null; sleep 0.01; done; exit 1"
    );
    let mut stranger = h.command_in(3, "bash");
    stranger.args(["-c", &script]);
    let s = run_with_deadline(stranger, Duration::from_secs(60));
    let (code, so, se) = live.finish();
    assert!(s.status.success(), "the stranger never connected: {s:?}");
    assert_eq!(code, Some(0), "{so}\n{se}");
    assert_eq!(verified(&so), 1500, "{so}\n{se}");
    assert_eq!(se.matches("refused a TCP connection").count(), 1, "{se}");
}

#[test]
fn a_stranger_on_another_host_sending_garbage_is_refused_once() {
    stranger_from_h3(0, "printf 'GARBAGE%.0s' $(seq 1 20) >&3");
}

#[test]
fn a_silent_stranger_on_another_host_is_refused_once() {
    stranger_from_h3(2, "true");
}

#[test]
fn a_peer_sending_garbage_after_the_handshake_ends_the_job_naming_it() {
    let Some(h) = hosts() else { return };
    let spec = format!("{}:1,{}:1", h.name(1), h.name(2));
    let out = run(
        &h,
        &spec,
        2,
        env!("CARGO_BIN_EXE_p2p_props"),
        &["85", "2000", "65536"],
        &[("OXMPI_TCP_GARBAGE_AFTER", "50")],
    );
    let (so, se) = text(&out);
    assert!(!out.status.success(), "{so}\n{se}");
    assert!(se.contains("test hook: writing garbage to rank 1"), "{se}");
    // One fatal error, from the rank that received it, naming the sender.
    let faults: Vec<&str> = se
        .lines()
        .filter(|l| l.contains("rank 0 sent a corrupt frame"))
        .collect();
    assert_eq!(faults.len(), 1, "{se}");
    assert!(faults[0].contains("rank 1"), "{se}");
}
