//! The agent: one per remote host, `oxrun --agent PORT ADDR...` (not in `--help`), started by
//! the head through the launch command.
//!
//! It reads its host's token from stdin, connects back to the head (trying each address in
//! turn), says hello with the token, and receives the job. It then starts the host's ranks
//! (bound per host, killed by the kernel if the agent dies), and relays: each rank's PMI bytes
//! both ways, its stdout and stderr to the head, its exit status once it is reaped and its
//! output drained. It signals its ranks when the head says so. On `Finish` it removes the
//! job's files in `/dev/shm` and exits; if the head vanishes (the connection closes) or the
//! agent is told to stop by a signal, it kills its ranks, cleans up the same way and exits.
//!
//! A watchdog (`oxrun --watchdog JOBKEY`, its own process group) learns every rank's process
//! group on a pipe; if the agent dies without saying goodbye (kill -9), the pipe closes and
//! the watchdog kills those groups, so what the ranks started does not outlive them, and
//! removes the job's files.

use std::ffi::OsString;
use std::io::{self, BufRead, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

use oxmpi_pmi::launch::{shm_prefix, valid_jobkey, SHM_DIR};

use crate::binding::{self, format_cpu_list};
use crate::frame::{FrameReader, JobSpec, Msg};
use crate::program::{self, effective_path};
use crate::signals::SignalPipe;
use crate::spawn::{spawn_rank, JobEnv, RankSpec};
use crate::{shm, sys};

/// Time to connect to one of the head's addresses.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
/// Time to wait for the job after saying hello.
const JOB_TIMEOUT: Duration = Duration::from_secs(30);
/// Bytes queued for the head above which ranks' output is not read (backpressure).
const HIGH_WATER: usize = 4 << 20;
/// Size of one read from a rank's pipe or socket.
const READ_CHUNK: usize = 64 * 1024;
/// Reads per descriptor per turn.
const READS_PER_TURN: usize = 4;
/// Reads when draining an exited rank's pipes.
const READS_PER_DRAIN: usize = 256;
/// Time the agent waits for its ranks to die after `SIGKILL` when giving up.
const KILL_WAIT: Duration = Duration::from_secs(5);

fn say(msg: &str) {
    let _ = writeln!(io::stderr(), "oxrun --agent: {msg}");
}

/// Parses `PORT ADDR...`.
pub fn parse_args(args: &[OsString]) -> Result<(u16, Vec<IpAddr>), String> {
    let text: Vec<&str> = args
        .iter()
        .map(|a| a.to_str().ok_or("arguments must be text"))
        .collect::<Result<_, _>>()?;
    let (port, addrs) = text
        .split_first()
        .ok_or("usage: oxrun --agent PORT ADDR...")?;
    let port: u16 = port
        .parse()
        .ok()
        .filter(|&p| p != 0)
        .ok_or(format!("bad port {port:?}"))?;
    let addrs = addrs
        .iter()
        .map(|a| a.parse().map_err(|_| format!("bad address {a:?}")))
        .collect::<Result<Vec<IpAddr>, String>>()?;
    if addrs.is_empty() {
        return Err("no address of the head given".into());
    }
    Ok((port, addrs))
}

/// Runs the agent; returns its exit status.
pub fn main(args: Vec<OsString>) -> i32 {
    let (port, addrs) = match parse_args(&args) {
        Ok(x) => x,
        Err(e) => {
            say(&e);
            return 2;
        }
    };
    let mut token = String::new();
    let _ = io::stdin().lock().take(256).read_line(&mut token);
    let token = token.trim().to_owned();
    if token.is_empty() {
        say("no token on stdin (the agent is started by oxrun, not by hand)");
        return 2;
    }
    let mut conn = match connect(port, &addrs) {
        Ok(c) => c,
        Err(e) => {
            say(&e);
            return 1;
        }
    };
    let (job, reader) = match handshake(&mut conn, &token) {
        Ok(Some(j)) => j,
        // The job ended before this agent was needed.
        Ok(None) => return 0,
        Err(e) => {
            say(&format!("no job from the head: {e}"));
            return 1;
        }
    };
    let signals = match SignalPipe::install() {
        Ok(s) => s,
        Err(e) => {
            say(&format!("cannot set up signal handling: {e}"));
            return 1;
        }
    };
    let mut agent = Agent::new(conn, reader, job, signals);
    agent.start_ranks();
    agent.run()
}

/// Connects to the first of the head's addresses that answers.
fn connect(port: u16, addrs: &[IpAddr]) -> Result<TcpStream, String> {
    let mut errors = Vec::new();
    for &a in addrs {
        let sa = SocketAddr::new(a, port);
        match TcpStream::connect_timeout(&sa, CONNECT_TIMEOUT) {
            Ok(c) => return Ok(c),
            Err(e) => errors.push(format!("{sa}: {e}")),
        }
    }
    Err(format!("cannot reach the head ({})", errors.join("; ")))
}

/// Says hello and waits for the job; returns it with the reader holding any frames that
/// followed it.
fn handshake(conn: &mut TcpStream, token: &str) -> Result<Option<(JobSpec, FrameReader)>, String> {
    let mut hello = Vec::new();
    Msg::Hello(token.as_bytes().to_vec()).encode(&mut hello);
    conn.write_all(&hello).map_err(|e| e.to_string())?;
    conn.set_read_timeout(Some(JOB_TIMEOUT))
        .map_err(|e| e.to_string())?;
    let mut reader = FrameReader::default();
    let mut buf = vec![0u8; READ_CHUNK];
    loop {
        if let Some(m) = reader.next_msg()? {
            return match m {
                Msg::Job(j) => Ok(Some((j, reader))),
                Msg::Finish => Ok(None),
                other => Err(format!("unexpected first frame {other:?}")),
            };
        }
        match conn.read(&mut buf) {
            Ok(0) => return Err("the head closed the connection".into()),
            Ok(n) => reader.extend(&buf[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e.to_string()),
        }
    }
}

/// Takes `n` slots of this machine for the ranks of job `jobkey`, by creating the files
/// `<dir>/oxmpi.<jobkey>.slot<i>` (the job's prefix: removed with its other files). Hosts of
/// one job that share a machine (network-namespace hosts, containers sharing `/dev/shm`) then
/// take distinct slots; a host that is a machine of its own takes `0..n`. `None` if the
/// directory cannot be written.
pub fn claim_slots(dir: &Path, jobkey: &str, n: usize) -> Option<Vec<usize>> {
    if !valid_jobkey(jobkey) {
        return None;
    }
    let prefix = shm_prefix(jobkey);
    let mut slots = Vec::with_capacity(n);
    let mut i = 0;
    while slots.len() < n {
        let claim = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(dir.join(format!("{prefix}slot{i}")));
        match claim {
            Ok(_) => slots.push(i),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(_) => return None,
        }
        i += 1;
    }
    Some(slots)
}

/// CPU bindings of `n` ranks of this host whose machine may also run other hosts of the job:
/// the plan of the machine's slots so far, as if all of its ranks were one host's, so that
/// hosts sharing a machine get different cores (and none are bound once the machine is
/// oversubscribed, by the default policy). Falls back to this host alone without slots.
pub fn machine_bindings(
    dir: &Path,
    jobkey: &str,
    n: usize,
    (bind, within): (Option<binding::BindTo>, binding::Within),
    cores: &[binding::Core],
) -> Vec<Option<Vec<usize>>> {
    match claim_slots(dir, jobkey, n) {
        Some(slots) => {
            let total = slots.iter().max().map_or(0, |&m| m + 1);
            let all = binding::plan(total, bind, within, cores);
            slots.iter().map(|&s| all[s].clone()).collect()
        }
        None => binding::plan(n, bind, within, cores),
    }
}

/// One rank of this host.
#[derive(Debug)]
struct Rank {
    rank: u32,
    pid: libc::pid_t,
    pmi: Option<UnixStream>,
    pmi_out: Vec<u8>,
    stdout: Option<OwnedFd>,
    stderr: Option<OwnedFd>,
    reaped: bool,
}

#[derive(Debug, Clone, Copy)]
enum Src {
    Signals,
    Head,
    Pmi(usize),
    Out(usize, bool),
}

struct Agent {
    conn: TcpStream,
    reader: FrameReader,
    out: Vec<u8>,
    job: JobSpec,
    signals: SignalPipe,
    ranks: Vec<Rank>,
    watchdog: Option<(ChildStdin, libc::pid_t)>,
    buf: Vec<u8>,
}

impl Agent {
    fn new(conn: TcpStream, reader: FrameReader, job: JobSpec, signals: SignalPipe) -> Agent {
        let _ = conn.set_read_timeout(None);
        let _ = conn.set_nodelay(true);
        // A head whose host vanished sends no reset; keepalive notices it.
        let _ = sys::set_keepalive(conn.as_raw_fd());
        let _ = conn.set_nonblocking(true);
        Agent {
            conn,
            reader,
            out: Vec::new(),
            job,
            signals,
            ranks: Vec::new(),
            watchdog: None,
            buf: vec![0; READ_CHUNK],
        }
    }

    fn send(&mut self, m: &Msg) {
        m.encode(&mut self.out);
    }

    fn start_watchdog(&mut self) {
        let spawned = std::env::current_exe().and_then(|exe| {
            Command::new(exe)
                .arg("--watchdog")
                .arg(&self.job.jobkey)
                .stdin(Stdio::piped())
                .stdout(Stdio::null())
                .stderr(Stdio::inherit())
                .process_group(0)
                .spawn()
        });
        match spawned {
            Ok(mut child) => {
                if let Some(stdin) = child.stdin.take() {
                    self.watchdog = Some((stdin, child.id() as libc::pid_t));
                }
            }
            Err(e) => self.send(&Msg::Note(format!(
                "oxrun: on {}: no watchdog ({e}); if the agent is killed, what its ranks started may survive",
                self.job.host
            ))),
        }
    }

    /// Tells the watchdog about a rank's process group (`+`) or that it is gone (`-`).
    fn tell_watchdog(&mut self, sign: char, pid: libc::pid_t) {
        if let Some((w, _)) = &mut self.watchdog {
            let _ = w.write_all(format!("{sign}{pid}\n").as_bytes());
        }
    }

    fn start_ranks(&mut self) {
        self.start_watchdog();
        let (bind, within) = binding::from_wire(self.job.bind);
        // Ranks with peers on other hosts start on the cores next to the NIC; hosts sharing
        // this machine (namespace hosts) take distinct cores among those.
        let across = self.job.ranks.len() < self.job.size as usize;
        let tcp_if = self.job.ranks.first().map(|r| binding::tcp_if_of(&r.env));
        let (cores, nic) = binding::host_cores_near(tcp_if.as_deref().filter(|_| across));
        let bindings = machine_bindings(
            Path::new(SHM_DIR),
            &self.job.jobkey,
            self.job.ranks.len(),
            (bind, within),
            &cores,
        );
        let nofile = sys::raise_nofile_limit().ok().map(|(old, _)| old);
        let env = JobEnv {
            size: self.job.size,
            secret: self.job.secret.clone(),
            jobkey: self.job.jobkey.clone(),
            nofile,
        };
        let specs = self.job.ranks.clone();
        for (i, r) in specs.iter().enumerate() {
            let path = match program::resolve(&r.program, effective_path(&r.env).as_deref()) {
                Ok(p) => p,
                Err(e) => {
                    self.send(&Msg::SpawnFailed {
                        rank: r.rank,
                        code: e.status,
                        reason: format!(
                            "cannot execute {}: {}",
                            r.program.to_string_lossy(),
                            e.reason
                        ),
                    });
                    return;
                }
            };
            let spec = RankSpec {
                rank: r.rank,
                program: &path,
                argv0: &r.program,
                args: &r.args,
                env: &r.env,
                cpus: bindings[i].as_deref(),
                stdin: false,
                die_with_parent: true,
                cwd: None,
            };
            match spawn_rank(&spec, &env) {
                Ok(s) => {
                    self.tell_watchdog('+', s.pid);
                    self.send(&Msg::Started {
                        rank: r.rank,
                        pid: s.pid,
                    });
                    if self.job.report_bindings {
                        let line = match &bindings[i] {
                            Some(cpus) => format!(
                                "oxrun: rank {} (pid {} on {}) bound to cpu{} {}{}",
                                r.rank,
                                s.pid,
                                self.job.host,
                                if cpus.len() > 1 { "s" } else { "" },
                                format_cpu_list(cpus),
                                binding::near_text(&nic, cpus, &cores)
                            ),
                            None => format!(
                                "oxrun: rank {} (pid {} on {}) not bound",
                                r.rank, s.pid, self.job.host
                            ),
                        };
                        self.send(&Msg::Note(line));
                    }
                    self.ranks.push(Rank {
                        rank: r.rank,
                        pid: s.pid,
                        pmi: Some(s.pmi),
                        pmi_out: Vec::new(),
                        stdout: Some(s.stdout),
                        stderr: Some(s.stderr),
                        reaped: false,
                    });
                }
                Err(e) => {
                    let code = match e.raw_os_error() {
                        Some(libc::ENOENT) | Some(libc::ENOTDIR) => 127,
                        Some(libc::EACCES) | Some(libc::ENOEXEC) | Some(libc::EPERM) => 126,
                        _ => 1,
                    };
                    self.send(&Msg::SpawnFailed {
                        rank: r.rank,
                        code,
                        reason: format!("cannot start {}: {e}", r.program.to_string_lossy()),
                    });
                    return;
                }
            }
        }
    }

    fn poll_set(&self, fds: &mut Vec<libc::pollfd>, srcs: &mut Vec<Src>) {
        fds.clear();
        srcs.clear();
        let mut add = |fd: RawFd, events: libc::c_short, src: Src| {
            fds.push(libc::pollfd {
                fd,
                events,
                revents: 0,
            });
            srcs.push(src);
        };
        add(self.signals.fd(), libc::POLLIN, Src::Signals);
        let head_out = if self.out.is_empty() {
            0
        } else {
            libc::POLLOUT
        };
        add(self.conn.as_raw_fd(), libc::POLLIN | head_out, Src::Head);
        let room = self.out.len() < HIGH_WATER;
        for (i, r) in self.ranks.iter().enumerate() {
            if let Some(s) = &r.pmi {
                let w = if r.pmi_out.is_empty() {
                    0
                } else {
                    libc::POLLOUT
                };
                // Without room for the head, PMI requests wait too (replies still go out).
                let rd = if room { libc::POLLIN } else { 0 };
                if rd | w != 0 {
                    add(s.as_raw_fd(), rd | w, Src::Pmi(i));
                }
            }
            if room {
                if let Some(fd) = &r.stdout {
                    add(fd.as_raw_fd(), libc::POLLIN, Src::Out(i, false));
                }
                if let Some(fd) = &r.stderr {
                    add(fd.as_raw_fd(), libc::POLLIN, Src::Out(i, true));
                }
            }
        }
    }

    fn run(mut self) -> i32 {
        let mut fds = Vec::new();
        let mut srcs = Vec::new();
        // Frames that came with the job.
        match self.handle_frames() {
            Ok(Some(code)) => return code,
            Ok(None) => {}
            Err(()) => return self.abandon(),
        }
        loop {
            self.reap();
            match self.flush_head() {
                Ok(()) => {}
                Err(_) => return self.abandon(),
            }
            self.poll_set(&mut fds, &mut srcs);
            if sys::poll(&mut fds, -1).is_err() {
                return self.abandon();
            }
            for (p, &src) in fds.iter().zip(srcs.iter()) {
                if p.revents == 0 {
                    continue;
                }
                match src {
                    Src::Signals => {
                        for sig in self.signals.take() {
                            if sig != libc::SIGCHLD {
                                return self.abandon();
                            }
                        }
                    }
                    Src::Head => match self.read_head() {
                        Ok(Some(code)) => return code,
                        Ok(None) => {}
                        Err(()) => return self.abandon(),
                    },
                    Src::Pmi(i) => {
                        self.flush_pmi(i);
                        self.read_pmi(i, READS_PER_TURN);
                    }
                    Src::Out(i, err) => self.read_output(i, err, READS_PER_TURN),
                }
            }
        }
    }

    /// Writes what the head's connection accepts now; an error means the head is gone.
    fn flush_head(&mut self) -> io::Result<()> {
        while !self.out.is_empty() {
            match self.conn.write(&self.out) {
                Ok(n) => {
                    self.out.drain(..n);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Handles what the head sent; `Ok(Some(code))` when the agent is done, `Err` when the
    /// head is gone or broke the protocol.
    fn read_head(&mut self) -> Result<Option<i32>, ()> {
        for _ in 0..READS_PER_TURN {
            match self.conn.read(&mut self.buf) {
                Ok(0) => return Err(()),
                Ok(n) => self.reader.extend(&self.buf[..n]),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return Err(()),
            }
        }
        self.handle_frames()
    }

    /// Acts on every complete frame received from the head.
    fn handle_frames(&mut self) -> Result<Option<i32>, ()> {
        loop {
            let msg = match self.reader.next_msg() {
                Ok(Some(m)) => m,
                Ok(None) => return Ok(None),
                Err(e) => {
                    say(&format!("bad frame from the head: {e}"));
                    return Err(());
                }
            };
            match msg {
                Msg::Pmi { rank, data } => {
                    if let Some(i) = self.index_of(rank) {
                        self.ranks[i].pmi_out.extend_from_slice(&data);
                        self.flush_pmi(i);
                    }
                }
                Msg::PmiClose { rank } => {
                    if let Some(i) = self.index_of(rank) {
                        self.ranks[i].pmi = None;
                        self.ranks[i].pmi_out.clear();
                    }
                }
                Msg::Signal(sig) => {
                    for r in self.ranks.iter().filter(|r| !r.reaped) {
                        let _ = sys::kill_group(r.pid, sig);
                    }
                }
                Msg::Finish => return Ok(Some(self.finish())),
                other => {
                    say(&format!("unexpected frame from the head: {other:?}"));
                    return Err(());
                }
            }
        }
    }

    fn index_of(&self, rank: u32) -> Option<usize> {
        self.ranks.iter().position(|r| r.rank == rank)
    }

    fn flush_pmi(&mut self, i: usize) {
        let r = &mut self.ranks[i];
        let Some(s) = r.pmi.as_mut() else {
            r.pmi_out.clear();
            return;
        };
        while !r.pmi_out.is_empty() {
            match s.write(&r.pmi_out) {
                Ok(n) => {
                    r.pmi_out.drain(..n);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => {
                    // The rank is gone; what it sent is still read until end of file.
                    r.pmi_out.clear();
                    return;
                }
            }
        }
    }

    fn read_pmi(&mut self, i: usize, reads: usize) {
        for _ in 0..reads {
            let r = &mut self.ranks[i];
            let Some(s) = r.pmi.as_mut() else {
                return;
            };
            match s.read(&mut self.buf) {
                Ok(0) => {
                    r.pmi = None;
                    return;
                }
                Ok(n) => {
                    let m = Msg::Pmi {
                        rank: r.rank,
                        data: self.buf[..n].to_vec(),
                    };
                    m.encode(&mut self.out);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => {
                    r.pmi = None;
                    return;
                }
            }
        }
    }

    fn read_output(&mut self, i: usize, err: bool, reads: usize) {
        for _ in 0..reads {
            let r = &mut self.ranks[i];
            let slot = if err { &mut r.stderr } else { &mut r.stdout };
            let Some(fd) = slot.as_ref() else {
                return;
            };
            match sys::read(fd.as_raw_fd(), &mut self.buf) {
                Ok(n) if n > 0 => Msg::Output {
                    rank: r.rank,
                    err,
                    data: self.buf[..n].to_vec(),
                }
                .encode(&mut self.out),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                // End of file or a broken pipe.
                _ => {
                    *slot = None;
                    Msg::OutputEnd { rank: r.rank, err }.encode(&mut self.out);
                    return;
                }
            }
        }
    }

    /// Reaps exited ranks: kills the group while the rank is a zombie, relays what it sent
    /// and wrote, then its exit status.
    fn reap(&mut self) {
        loop {
            let pid = match sys::exited_child() {
                Ok(Some(pid)) => pid,
                _ => return,
            };
            let is_rank = self.ranks.iter().position(|r| r.pid == pid && !r.reaped);
            if is_rank.is_some() {
                let _ = sys::kill_group(pid, libc::SIGKILL);
            }
            let Ok(status) = sys::reap(pid) else {
                return;
            };
            let Some(i) = is_rank else {
                continue;
            };
            self.read_pmi(i, READS_PER_DRAIN);
            self.read_output(i, false, READS_PER_DRAIN);
            self.read_output(i, true, READS_PER_DRAIN);
            let r = &mut self.ranks[i];
            r.reaped = true;
            r.pmi = None;
            let rank = r.rank;
            self.tell_watchdog('-', pid);
            self.send(&Msg::Exit { rank, status });
        }
    }

    /// Kills every live rank and waits (boundedly) for them.
    fn kill_all(&mut self) {
        for r in self.ranks.iter().filter(|r| !r.reaped) {
            let _ = sys::kill_group(r.pid, libc::SIGKILL);
        }
        let end = Instant::now() + KILL_WAIT;
        while self.ranks.iter().any(|r| !r.reaped) && Instant::now() < end {
            self.reap();
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    fn cleanup(&mut self) {
        for (path, e) in shm::remove_job_files(&self.job.jobkey) {
            say(&format!("could not remove {}: {e}", path.display()));
        }
        if let Some((mut w, pid)) = self.watchdog.take() {
            // Told "done", the watchdog exits without touching anything.
            let _ = w.write_all(b"done\n");
            drop(w);
            let _ = sys::reap(pid);
        }
    }

    /// The head said the job is over.
    fn finish(&mut self) -> i32 {
        self.kill_all();
        self.cleanup();
        self.out.clear();
        Msg::Bye.encode(&mut self.out);
        let _ = self.conn.set_nonblocking(false);
        let _ = self.conn.write_all(&self.out);
        0
    }

    /// The head is gone (or we were told to stop): nobody is left to report to.
    fn abandon(&mut self) -> i32 {
        self.kill_all();
        self.cleanup();
        1
    }
}

/// The watchdog (`oxrun --watchdog JOBKEY`): reads `+PID`/`-PID` lines on stdin; at end of
/// file without a `done` line, kills every process group still listed and removes the job's
/// shared-memory files.
pub fn watchdog(args: Vec<OsString>) -> i32 {
    let jobkey = args
        .first()
        .and_then(|a| a.to_str())
        .unwrap_or_default()
        .to_owned();
    // Ctrl-C in a terminal or a hangup must not end the watchdog before the agent.
    sys::ignore_signal(libc::SIGINT);
    sys::ignore_signal(libc::SIGHUP);
    let mut groups: Vec<libc::pid_t> = Vec::new();
    for line in io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        let line = line.trim();
        if line == "done" {
            return 0;
        }
        let (sign, num) = line.split_at(line.len().min(1));
        let Ok(pid) = num.parse::<libc::pid_t>() else {
            continue;
        };
        match sign {
            "+" => groups.push(pid),
            "-" => groups.retain(|&g| g != pid),
            _ => {}
        }
    }
    for g in groups {
        let _ = sys::kill_group(g, libc::SIGKILL);
    }
    shm::remove_job_files(&jobkey);
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(s: &str) -> Vec<OsString> {
        s.split_whitespace().map(OsString::from).collect()
    }

    #[test]
    fn agent_arguments() {
        let (port, addrs) = parse_args(&os("4000 10.0.0.1 ::1")).unwrap();
        assert_eq!(port, 4000);
        assert_eq!(addrs.len(), 2);
        assert!(parse_args(&os("")).unwrap_err().contains("usage"));
        assert!(parse_args(&os("0 10.0.0.1")).unwrap_err().contains("port"));
        assert!(parse_args(&os("99999 10.0.0.1"))
            .unwrap_err()
            .contains("port"));
        assert!(parse_args(&os("4000")).unwrap_err().contains("no address"));
        assert!(parse_args(&os("4000 host.example"))
            .unwrap_err()
            .contains("address"));
    }

    #[test]
    fn hosts_sharing_a_machine_take_distinct_cores() {
        let dir = std::env::temp_dir().join(format!("oxrun-slots-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let cores: Vec<binding::Core> = (0..4)
            .map(|c| binding::Core {
                cpus: vec![c],
                package: 0,
                numa: 0,
            })
            .collect();
        let key = "00112233aabbccdd";
        let default = (None, binding::Within::Core);
        // Three hosts of one job on a 4-core machine: 2 + 1 ranks fit, the third host's 2 do not.
        let a = machine_bindings(&dir, key, 2, default, &cores);
        let b = machine_bindings(&dir, key, 1, default, &cores);
        let c = machine_bindings(&dir, key, 2, default, &cores);
        assert_eq!(a, vec![Some(vec![0]), Some(vec![1])]);
        assert_eq!(b, vec![Some(vec![2])]);
        assert_eq!(
            c,
            vec![None, None],
            "an oversubscribed machine binds no more"
        );
        // Asked for cores explicitly, the last host wraps around.
        let forced = (Some(binding::BindTo::Core), binding::Within::Core);
        let d = machine_bindings(&dir, key, 1, forced, &cores);
        assert_eq!(d, vec![Some(vec![1])]);
        // Another job, or a machine of its own, starts at the first core.
        let other = machine_bindings(&dir, "ffeeddccbbaa9988", 1, default, &cores);
        assert_eq!(other, vec![Some(vec![0])]);
        // The job's files go with the rest of its files.
        assert!(crate::shm::remove_job_files_in(&dir, key).is_empty());
        assert_eq!(claim_slots(&dir, key, 2), Some(vec![0, 1]));
        // A bad key or an unwritable directory: this host alone.
        assert_eq!(claim_slots(&dir, "../x", 1), None);
        let gone = dir.join("missing");
        assert_eq!(claim_slots(&gone, key, 1), None);
        assert_eq!(
            machine_bindings(&gone, key, 1, default, &cores),
            vec![Some(vec![0])]
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn unreachable_heads_are_reported_with_every_address() {
        // A port nobody listens on (bound, then released) refuses at once.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let e = connect(port, &["127.0.0.1".parse().unwrap()]).unwrap_err();
        assert!(e.contains(&format!("127.0.0.1:{port}")), "{e}");
    }
}
