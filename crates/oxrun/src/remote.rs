//! The head's side of other hosts: the listening socket, starting one agent per host through
//! the launch command, authenticating the agents that connect back, and their connections.
//!
//! The head listens on every interface (`[::]` or `0.0.0.0`, port chosen by the kernel) and
//! gives each agent, on its command line, the port and every address this host has: a host
//! name (like a network namespace's) may not resolve, so the agent tries each address. Each
//! host gets a random token, written to the launch command's stdin (never on a command line,
//! where `ps` shows it); an agent's first frame must carry its host's token, which both proves
//! it belongs to this job and says which host it is. A stranger that connects is dropped
//! without a byte sent, and the first one is logged.
//!
//! This module only moves frames; `job` decides what they mean.

use std::io::{self, Read, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::frame::{FrameReader, JobSpec, Msg};
use crate::sys;

/// Time an agent has to connect and say hello after oxrun starts its launch command.
pub const CONNECT_LIMIT: Duration = Duration::from_secs(30);
/// Time a connection that has not proved itself may stay open.
const HELLO_LIMIT: Duration = Duration::from_secs(10);
/// Most unauthenticated connections held at once; more are dropped at once.
const MAX_PENDING: usize = 16;
/// Time oxrun waits for agents to clean up after the job.
const FINISH_LIMIT: Duration = Duration::from_secs(5);
/// Size of one read from an agent's connection.
const READ_CHUNK: usize = 64 * 1024;
/// Reads per connection per event-loop turn.
const READS_PER_TURN: usize = 8;

/// Where an agent is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkState {
    /// Launch command started; no agent has connected yet.
    Starting,
    /// Connected and authenticated.
    Up,
    /// Its connection closed (or it never came).
    Gone,
}

/// One host's agent as the head sees it.
#[derive(Debug)]
pub struct Link {
    /// The host's name as given.
    pub host: String,
    /// The launch command's pid (its own process group), until reaped.
    pub launcher: Option<libc::pid_t>,
    /// Where the agent is in its life.
    pub state: LinkState,
    token: String,
    job: Option<JobSpec>,
    conn: Option<TcpStream>,
    reader: FrameReader,
    out: Vec<u8>,
    said_bye: bool,
}

/// A connection that has not said hello yet.
#[derive(Debug)]
struct Pending {
    conn: TcpStream,
    peer: SocketAddr,
    reader: FrameReader,
    since: Instant,
}

/// What happened on the agents' side.
#[derive(Debug)]
pub enum AgentEvent {
    /// Host `host`'s agent sent `msg`.
    Msg(usize, Msg),
    /// Host `host`'s agent connection ended, for the reason given.
    Lost(usize, String),
    /// A connection that is not one of our agents was refused (reported once).
    Refused(String),
}

/// What a poll entry of the agents stands for.
#[derive(Debug, Clone, Copy)]
pub enum Source {
    /// The listening socket.
    Listener,
    /// An unauthenticated connection.
    Pending(usize),
    /// Host `n`'s agent.
    Link(usize),
}

/// The listener and every host's agent.
#[derive(Debug)]
pub struct Agents {
    listener: TcpListener,
    /// Unauthenticated connections; a slot is emptied when its connection is settled and
    /// compacted only in `check_deadlines`, so poll indices stay valid for a whole turn.
    pending: Vec<Option<Pending>>,
    /// One per remote host, in host order of the plan's remote hosts.
    pub links: Vec<Link>,
    refused_reported: bool,
    started_at: Instant,
}

/// The words of the command that starts the agent for `host`: the template with `{host}`
/// replaced, then oxrun's own path with `--agent PORT ADDR...`.
pub fn agent_command(
    template: &[String],
    host: &str,
    exe: &Path,
    port: u16,
    addrs: &[IpAddr],
) -> Vec<String> {
    let mut words: Vec<String> = template.iter().map(|w| w.replace("{host}", host)).collect();
    words.push(exe.display().to_string());
    words.push("--agent".into());
    words.push(port.to_string());
    words.extend(addrs.iter().map(|a| a.to_string()));
    words
}

fn random_token() -> io::Result<String> {
    let mut bytes = [0u8; 24];
    getrandom::getrandom(&mut bytes).map_err(|e| io::Error::other(e.to_string()))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Compares without stopping at the first difference, so timing tells a stranger nothing.
fn same_token(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

impl Agents {
    /// Listens on every interface: IPv6 and IPv4 on one socket where the system maps IPv4
    /// onto IPv6 sockets (the Linux default), else IPv4 only.
    pub fn listen() -> io::Result<Agents> {
        let dual = std::fs::read_to_string("/proc/sys/net/ipv6/bindv6only")
            .map(|v| v.trim() == "0")
            .unwrap_or(false);
        let v4 = || TcpListener::bind(SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), 0));
        let listener = if dual {
            TcpListener::bind(SocketAddr::new(IpAddr::V6(Ipv6Addr::UNSPECIFIED), 0))
                .or_else(|_| v4())?
        } else {
            v4()?
        };
        listener.set_nonblocking(true)?;
        Ok(Agents {
            listener,
            pending: Vec::new(),
            links: Vec::new(),
            refused_reported: false,
            started_at: Instant::now(),
        })
    }

    /// Whether agents can reach the listener at `addr` (IPv6 addresses need an IPv6 socket).
    pub fn reachable_at(&self, addr: &IpAddr) -> bool {
        addr.is_ipv4() || self.listener.local_addr().is_ok_and(|a| a.is_ipv6())
    }

    /// The port agents connect to.
    pub fn port(&self) -> io::Result<u16> {
        Ok(self.listener.local_addr()?.port())
    }

    /// Starts the agent of `host` through `template` (its own process group, the token on its
    /// stdin); `job` is sent once it has proved itself. Returns the host's link index.
    pub fn start(
        &mut self,
        host: &str,
        template: &[String],
        addrs: &[IpAddr],
        job: JobSpec,
    ) -> io::Result<usize> {
        let exe = std::env::current_exe()?;
        let words = agent_command(template, host, &exe, self.port()?, addrs);
        let token = random_token()?;
        let mut cmd = Command::new(&words[0]);
        cmd.args(&words[1..])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .process_group(0);
        let mut child = cmd.spawn().map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("cannot run the launch command {}: {e}", words[0]),
            )
        })?;
        if let Some(mut stdin) = child.stdin.take() {
            // A few dozen bytes always fit in a fresh pipe; closing it tells the agent that
            // the token is complete.
            let _ = stdin.write_all(format!("{token}\n").as_bytes());
        }
        self.links.push(Link {
            host: host.to_owned(),
            launcher: Some(child.id() as libc::pid_t),
            state: LinkState::Starting,
            token,
            job: Some(job),
            conn: None,
            reader: FrameReader::default(),
            out: Vec::new(),
            said_bye: false,
        });
        Ok(self.links.len() - 1)
    }

    /// The poll entries: `(fd, events, source)`.
    pub fn poll_set(&self, mut add: impl FnMut(RawFd, libc::c_short, Source)) {
        if self.links.iter().any(|l| l.state == LinkState::Starting) {
            add(self.listener.as_raw_fd(), libc::POLLIN, Source::Listener);
        }
        for (i, p) in self.pending.iter().enumerate() {
            if let Some(p) = p {
                add(p.conn.as_raw_fd(), libc::POLLIN, Source::Pending(i));
            }
        }
        for (i, l) in self.links.iter().enumerate() {
            if let Some(c) = &l.conn {
                let out = if l.out.is_empty() { 0 } else { libc::POLLOUT };
                add(c.as_raw_fd(), libc::POLLIN | out, Source::Link(i));
            }
        }
    }

    /// The nearest instant at which [`check_deadlines`](Self::check_deadlines) has work.
    pub fn next_deadline(&self) -> Option<Instant> {
        let starting = self
            .links
            .iter()
            .any(|l| l.state == LinkState::Starting)
            .then_some(self.started_at + CONNECT_LIMIT);
        let pending = self
            .pending
            .iter()
            .flatten()
            .map(|p| p.since + HELLO_LIMIT)
            .min();
        starting.into_iter().chain(pending).min()
    }

    /// Drops connections that took too long to say hello, and reports agents that never
    /// connected.
    pub fn check_deadlines(&mut self, now: Instant, events: &mut Vec<AgentEvent>) {
        self.pending.retain(Option::is_some);
        let before = self.pending.len();
        self.pending
            .retain(|p| p.as_ref().is_some_and(|p| now < p.since + HELLO_LIMIT));
        if self.pending.len() < before {
            self.refuse("a connection that never proved itself".into(), events);
        }
        if now >= self.started_at + CONNECT_LIMIT {
            for (i, l) in self.links.iter_mut().enumerate() {
                if l.state == LinkState::Starting {
                    l.state = LinkState::Gone;
                    events.push(AgentEvent::Lost(
                        i,
                        format!(
                            "its agent did not connect within {} s",
                            CONNECT_LIMIT.as_secs()
                        ),
                    ));
                }
            }
        }
    }

    fn refuse(&mut self, what: String, events: &mut Vec<AgentEvent>) {
        if !self.refused_reported {
            self.refused_reported = true;
            events.push(AgentEvent::Refused(what));
        }
    }

    /// Handles readiness of one of the agents' descriptors.
    pub fn on_ready(&mut self, src: Source, events: &mut Vec<AgentEvent>) {
        match src {
            Source::Listener => self.accept(events),
            Source::Pending(i) => self.read_pending(i, events),
            Source::Link(i) => {
                self.flush(i, events);
                self.read_link(i, events);
            }
        }
    }

    fn accept(&mut self, events: &mut Vec<AgentEvent>) {
        loop {
            match self.listener.accept() {
                Ok((conn, peer)) => {
                    let open = self.pending.iter().flatten().count();
                    if open >= MAX_PENDING || conn.set_nonblocking(true).is_err() {
                        self.refuse(
                            format!("a connection from {peer} (too many at once)"),
                            events,
                        );
                        continue;
                    }
                    self.pending.push(Some(Pending {
                        conn,
                        peer,
                        reader: FrameReader::default(),
                        since: Instant::now(),
                    }));
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return,
            }
        }
    }

    fn read_pending(&mut self, i: usize, events: &mut Vec<AgentEvent>) {
        let mut buf = [0u8; 4096];
        let Some(p) = self.pending.get_mut(i).and_then(Option::as_mut) else {
            return;
        };
        let res = match p.conn.read(&mut buf) {
            Ok(0) => Err("closed before saying hello".to_string()),
            Ok(n) => {
                p.reader.extend(&buf[..n]);
                p.reader.next_msg()
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(None),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => Ok(None),
            Err(e) => Err(e.to_string()),
        };
        let peer = p.peer;
        match res {
            Ok(None) => {}
            Ok(Some(Msg::Hello(token))) => {
                let Some(p) = self.pending[i].take() else {
                    return;
                };
                let found = self.links.iter().position(|l| {
                    l.state == LinkState::Starting && same_token(l.token.as_bytes(), &token)
                });
                match found {
                    Some(h) => self.connected(h, p, events),
                    None => self.refuse(
                        format!("a connection from {peer} with a wrong token"),
                        events,
                    ),
                }
            }
            Ok(Some(_)) | Err(_) => {
                self.pending[i] = None;
                self.refuse(
                    format!("a connection from {peer} that is not an agent of this job"),
                    events,
                );
            }
        }
    }

    fn connected(&mut self, h: usize, p: Pending, events: &mut Vec<AgentEvent>) {
        let link = &mut self.links[h];
        link.state = LinkState::Up;
        let _ = p.conn.set_nodelay(true);
        let _ = sys::set_keepalive(p.conn.as_raw_fd());
        link.conn = Some(p.conn);
        // Frames after the hello that arrived in the same read stay in the reader.
        link.reader = p.reader;
        if let Some(job) = link.job.take() {
            Msg::Job(job).encode(&mut link.out);
        }
        // Nothing is lost if this write would block: the loop flushes on POLLOUT.
        self.flush(h, events);
        // Frames after the hello that came in the same read.
        self.take_msgs(h, events);
    }

    /// Queues `msg` for host `h`'s agent (dropped if it is not connected).
    pub fn send(&mut self, h: usize, msg: &Msg) {
        let link = &mut self.links[h];
        if link.state == LinkState::Up {
            msg.encode(&mut link.out);
        }
    }

    /// Writes what host `h`'s connection accepts now.
    pub fn flush(&mut self, h: usize, events: &mut Vec<AgentEvent>) {
        let link = &mut self.links[h];
        let Some(conn) = link.conn.as_mut() else {
            return;
        };
        while !link.out.is_empty() {
            match conn.write(&link.out) {
                Ok(n) => {
                    link.out.drain(..n);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    self.lose(h, format!("writing to its agent failed: {e}"), events);
                    return;
                }
            }
        }
    }

    /// Flushes every connection.
    pub fn flush_all(&mut self, events: &mut Vec<AgentEvent>) {
        for h in 0..self.links.len() {
            self.flush(h, events);
        }
    }

    fn lose(&mut self, h: usize, why: String, events: &mut Vec<AgentEvent>) {
        let link = &mut self.links[h];
        if link.state == LinkState::Gone {
            return;
        }
        link.state = LinkState::Gone;
        link.conn = None;
        link.out.clear();
        if !link.said_bye {
            events.push(AgentEvent::Lost(h, why));
        }
    }

    fn read_link(&mut self, h: usize, events: &mut Vec<AgentEvent>) {
        let mut buf = vec![0u8; READ_CHUNK];
        for _ in 0..READS_PER_TURN {
            let link = &mut self.links[h];
            let Some(conn) = link.conn.as_mut() else {
                return;
            };
            match conn.read(&mut buf) {
                Ok(0) => {
                    self.take_msgs(h, events);
                    self.lose(h, "its agent's connection closed".into(), events);
                    return;
                }
                Ok(n) => link.reader.extend(&buf[..n]),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    self.take_msgs(h, events);
                    self.lose(h, format!("its agent's connection failed: {e}"), events);
                    return;
                }
            }
            self.take_msgs(h, events);
        }
    }

    fn take_msgs(&mut self, h: usize, events: &mut Vec<AgentEvent>) {
        loop {
            let link = &mut self.links[h];
            match link.reader.next_msg() {
                Ok(Some(Msg::Bye)) => link.said_bye = true,
                Ok(Some(m)) => events.push(AgentEvent::Msg(h, m)),
                Ok(None) => return,
                Err(e) => {
                    self.lose(h, format!("its agent sent a bad frame: {e}"), events);
                    return;
                }
            }
        }
    }

    /// The job is ending: agents that have not connected yet are not waited for; their
    /// launch commands are killed. Returns their hosts.
    pub fn abandon_starting(&mut self) -> Vec<usize> {
        let mut out = Vec::new();
        for (h, l) in self.links.iter_mut().enumerate() {
            if l.state == LinkState::Starting {
                l.state = LinkState::Gone;
                if let Some(pid) = l.launcher {
                    let _ = sys::kill_group(pid, libc::SIGKILL);
                }
                out.push(h);
            }
        }
        out
    }

    /// A child of oxrun exited: if it is a launch command, notes it. Returns the host whose
    /// launch command it was, if its agent had not connected yet.
    pub fn on_child_exit(&mut self, pid: libc::pid_t) -> Option<usize> {
        let h = self.links.iter().position(|l| l.launcher == Some(pid))?;
        let link = &mut self.links[h];
        link.launcher = None;
        (link.state == LinkState::Starting).then(|| {
            link.state = LinkState::Gone;
            h
        })
    }

    /// At the end of the job: tells every agent to clean up, waits (boundedly) for each to
    /// say goodbye or hang up, then ends and reaps every launch command.
    pub fn finish(&mut self) {
        for h in 0..self.links.len() {
            self.send(h, &Msg::Finish);
        }
        let deadline = Instant::now() + FINISH_LIMIT;
        let mut events = Vec::new();
        loop {
            self.flush_all(&mut events);
            let live: Vec<usize> = (0..self.links.len())
                .filter(|&h| self.links[h].state == LinkState::Up && !self.links[h].said_bye)
                .collect();
            let now = Instant::now();
            if live.is_empty() || now >= deadline {
                break;
            }
            let mut fds: Vec<libc::pollfd> = Vec::new();
            let mut srcs = Vec::new();
            self.poll_set(|fd, ev, src| {
                if matches!(src, Source::Link(_)) {
                    fds.push(libc::pollfd {
                        fd,
                        events: ev,
                        revents: 0,
                    });
                    srcs.push(src);
                }
            });
            let ms = deadline
                .saturating_duration_since(now)
                .as_millis()
                .min(1000) as i32;
            if sys::poll(&mut fds, ms.max(1)).is_err() {
                break;
            }
            for (p, src) in fds.iter().zip(srcs) {
                if p.revents != 0 {
                    self.on_ready(src, &mut events);
                }
            }
        }
        for link in &mut self.links {
            link.conn = None;
            if let Some(pid) = link.launcher.take() {
                // The agent has cleaned up (or is gone); its launch command (ssh) may linger.
                let _ = sys::kill_group(pid, libc::SIGTERM);
                let _ = sys::reap_within(pid, Duration::from_secs(2));
                let _ = sys::kill_group(pid, libc::SIGKILL);
                let _ = sys::reap(pid);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agent_commands_substitute_the_host() {
        let t: Vec<String> = ["ip", "netns", "exec", "{host}"].map(String::from).to_vec();
        let w = agent_command(
            &t,
            "oxh1",
            Path::new("/bin/oxrun"),
            4000,
            &["10.0.0.1".parse().unwrap(), "::1".parse().unwrap()],
        );
        assert_eq!(
            w,
            [
                "ip",
                "netns",
                "exec",
                "oxh1",
                "/bin/oxrun",
                "--agent",
                "4000",
                "10.0.0.1",
                "::1"
            ]
        );
        let t: Vec<String> = ["ssh", "-p", "2222", "user@{host}"]
            .map(String::from)
            .to_vec();
        assert_eq!(agent_command(&t, "b", Path::new("/x"), 1, &[])[3], "user@b");
    }

    #[test]
    fn tokens_compare_exactly() {
        assert!(same_token(b"abc", b"abc"));
        assert!(!same_token(b"abc", b"abd"));
        assert!(!same_token(b"abc", b"ab"));
        let t = random_token().unwrap();
        assert_eq!(t.len(), 48);
        assert_ne!(t, random_token().unwrap());
    }

    #[test]
    fn strangers_are_refused_and_reported_once() {
        let mut agents = Agents::listen().unwrap();
        agents.links.push(Link {
            host: "h".into(),
            launcher: None,
            state: LinkState::Starting,
            token: "right".into(),
            job: None,
            conn: None,
            reader: FrameReader::default(),
            out: Vec::new(),
            said_bye: false,
        });
        let port = agents.port().unwrap();
        let mut events = Vec::new();
        let send = |bytes: &[u8]| {
            let mut c = TcpStream::connect(("127.0.0.1", port)).unwrap();
            c.write_all(bytes).unwrap();
            c
        };
        let mut hello = Vec::new();
        Msg::Hello(b"wrong".to_vec()).encode(&mut hello);
        let _a = send(&hello);
        let _b = send(b"GET / HTTP/1.0\r\n\r\n");
        let turn = |agents: &mut Agents, events: &mut Vec<AgentEvent>| {
            agents.on_ready(Source::Listener, events);
            for i in (0..agents.pending.len()).rev() {
                agents.on_ready(Source::Pending(i), events);
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        // Both strangers are accepted and dropped within a few turns.
        for _ in 0..100 {
            turn(&mut agents, &mut events);
        }
        assert!(agents.pending.iter().all(Option::is_none));
        assert_eq!(events.len(), 1, "{events:?}");
        assert!(matches!(&events[0], AgentEvent::Refused(_)));
        assert_eq!(agents.links[0].state, LinkState::Starting);
        // The right token connects the host.
        let mut hello = Vec::new();
        Msg::Hello(b"right".to_vec()).encode(&mut hello);
        let _c = send(&hello);
        for _ in 0..500 {
            if agents.links[0].state == LinkState::Up {
                break;
            }
            turn(&mut agents, &mut events);
        }
        assert_eq!(agents.links[0].state, LinkState::Up);
        assert_eq!(events.len(), 1, "refusals are reported once: {events:?}");
    }
}
