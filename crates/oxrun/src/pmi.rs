//! The PMI-1 server's connections: one non-blocking socket per rank, framed into lines and
//! fed to [`oxmpi_pmi::Job`], whose replies are queued and written back.
//!
//! The protocol state lives in `oxmpi_pmi::server`; this module owns only the I/O. A rank
//! that closes its socket (or never uses it, like any non-MPI program) simply drops out; its
//! exit status decides whether the job failed. Replies go through a per-rank outbox, written
//! as the socket accepts them, so a rank that does not read its replies cannot block the
//! launcher; if its outbox grows beyond [`MAX_OUTBOX`] that rank is declared broken.
//!
//! A rank on another host has no socket here: its agent relays the bytes. Such a connection
//! is fed with [`PmiServer::feed`], and its replies and closing are collected with
//! [`PmiServer::take_remote`] for the agent.
//!
//! Jobs started by a rank's `spawn` are served here too, each with its own key-value space
//! ([`PmiServer::add_job`]). Connections are numbered across jobs: the launch's ranks first,
//! then each spawned job's ranks after all that came before (`process` below), which is how
//! the event loop numbers them too.

use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::UnixStream;

use oxmpi_pmi::wire::{LineBuffer, MAX_SERVER_LINE};
use oxmpi_pmi::{Action, Job, JobInfo, SpawnRequest};

/// Most reply bytes queued for one rank before it counts as not following the protocol.
pub const MAX_OUTBOX: usize = 1 << 20;
/// Size of one read from a PMI socket.
const READ_CHUNK: usize = 4096;
/// Reads per socket per event-loop turn.
const READS_PER_TURN: usize = 16;
/// Reads when draining a dead rank's socket; bounded in case a descendant that escaped the
/// rank's process group still holds the socket and keeps writing.
const READS_PER_DRAIN: usize = 256;

/// Something the job as a whole must react to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PmiEvent {
    /// A rank called abort.
    Abort {
        /// Who.
        rank: u32,
        /// The exit code it asked for.
        code: i32,
        /// Its message (may be empty).
        message: String,
    },
    /// A rank broke the protocol.
    ProtocolError {
        /// Who.
        rank: u32,
        /// What it did wrong.
        reason: String,
    },
    /// A rank asked for a new job; answer with [`PmiServer::spawn_result`].
    Spawn {
        /// Who.
        rank: u32,
        /// What to start.
        request: SpawnRequest,
    },
}

/// What must be relayed to a remote rank's agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RemoteOut {
    /// Reply bytes for the rank.
    Data(u32, Vec<u8>),
    /// Close the rank's PMI connection.
    Close(u32),
}

#[derive(Debug)]
struct Conn {
    /// The socket, or `None` for a rank whose agent relays its bytes.
    sock: Option<UnixStream>,
    inbox: LineBuffer,
    outbox: Vec<u8>,
    /// Writing failed (the rank is gone); what it sent is still read and handled.
    write_failed: bool,
}

/// All processes' PMI connections and each job's key-value state.
#[derive(Debug)]
pub struct PmiServer {
    jobs: Vec<Job>,
    /// First process number of each job.
    base: Vec<u32>,
    /// Job and rank in it of each process number.
    owner: Vec<(u32, u32)>,
    conns: Vec<Option<Conn>>,
    remote_out: Vec<RemoteOut>,
}

impl PmiServer {
    /// A server for the job described by `info`; connections are added with
    /// [`attach`](Self::attach) as ranks start.
    pub fn new(info: JobInfo) -> PmiServer {
        let mut s = PmiServer {
            jobs: Vec::new(),
            base: Vec::new(),
            owner: Vec::new(),
            conns: Vec::new(),
            remote_out: Vec::new(),
        };
        s.add_job(info, &[]);
        s
    }

    /// Adds a spawned job, its key-value space holding `preput`; returns its number and the
    /// process number of its rank 0 (its ranks follow).
    pub fn add_job(&mut self, info: JobInfo, preput: &[(String, String)]) -> (u32, u32) {
        let j = self.jobs.len() as u32;
        let base = self.conns.len() as u32;
        let n = info.size;
        let mut job = Job::new(info);
        job.preput(preput);
        self.jobs.push(job);
        self.base.push(base);
        for r in 0..n {
            self.owner.push((j, r));
            self.conns.push(None);
        }
        (j, base)
    }

    /// Jobs so far (the launch's and every spawned one).
    pub fn jobs(&self) -> u32 {
        self.jobs.len() as u32
    }

    /// Processes of every job so far.
    pub fn processes(&self) -> u32 {
        self.conns.len() as u32
    }

    /// The job of process `p` and its rank there.
    pub fn job_of(&self, p: u32) -> (u32, u32) {
        self.owner[p as usize]
    }

    /// Answers process `p`'s spawn: started, or refused with a message.
    pub fn spawn_result(&mut self, p: u32, result: Result<(), String>, events: &mut Vec<PmiEvent>) {
        let (j, r) = self.job_of(p);
        if let Action::Reply { line, .. } = self.jobs[j as usize].spawn_result(r, result) {
            self.send(p, line.as_bytes(), events);
        }
    }

    /// Adds rank `rank`, which runs on another host and whose agent relays its bytes.
    pub fn attach_remote(&mut self, rank: u32) {
        self.conns[rank as usize] = Some(Conn {
            sock: None,
            inbox: LineBuffer::new(MAX_SERVER_LINE),
            outbox: Vec::new(),
            write_failed: false,
        });
    }

    /// Handles bytes a remote rank sent (relayed by its agent).
    pub fn feed(&mut self, rank: u32, data: &[u8], events: &mut Vec<PmiEvent>) {
        let Some(conn) = self.conns.get_mut(rank as usize).and_then(Option::as_mut) else {
            return;
        };
        conn.inbox.extend(data);
        self.handle_lines(rank, events);
    }

    /// Replies and closings to relay to remote ranks' agents, in order.
    pub fn take_remote(&mut self) -> Vec<RemoteOut> {
        std::mem::take(&mut self.remote_out)
    }

    /// Whether `rank` initialized PMI and has not finalized it.
    pub fn in_session(&self, rank: u32) -> bool {
        let (j, r) = self.job_of(rank);
        self.jobs[j as usize].in_session(r)
    }

    /// Adds rank `rank`'s socket (already non-blocking).
    pub fn attach(&mut self, rank: u32, sock: UnixStream) {
        self.conns[rank as usize] = Some(Conn {
            sock: Some(sock),
            inbox: LineBuffer::new(MAX_SERVER_LINE),
            outbox: Vec::new(),
            write_failed: false,
        });
    }

    /// Open connections as `(rank, fd, wants_write)`, for polling.
    pub fn poll_set(&self) -> impl Iterator<Item = (u32, RawFd, bool)> + '_ {
        self.conns.iter().enumerate().filter_map(|(r, c)| {
            let c = c.as_ref()?;
            let sock = c.sock.as_ref()?;
            Some((r as u32, sock.as_raw_fd(), !c.outbox.is_empty()))
        })
    }

    /// Closes rank `rank`'s connection; it gets end of file on its next read.
    pub fn close(&mut self, rank: u32) {
        if let Some(c) = self.conns[rank as usize].take() {
            if c.sock.is_none() {
                self.remote_out.push(RemoteOut::Close(rank));
            }
        }
    }

    /// Closes every connection.
    pub fn close_all(&mut self) {
        for r in 0..self.conns.len() {
            self.close(r as u32);
        }
    }

    /// Rank `rank`'s socket is ready: writes pending replies, then reads and handles a
    /// bounded number of requests.
    pub fn on_ready(&mut self, rank: u32, events: &mut Vec<PmiEvent>) {
        self.flush(rank);
        self.read(rank, READS_PER_TURN, events);
    }

    /// Handles everything rank `rank` sent before it exited, so that, say, an abort that
    /// raced with the rank's exit is still seen.
    pub fn drain(&mut self, rank: u32, events: &mut Vec<PmiEvent>) {
        self.read(rank, READS_PER_DRAIN, events);
        self.close(rank);
    }

    fn read(&mut self, rank: u32, reads: usize, events: &mut Vec<PmiEvent>) {
        let mut buf = [0u8; READ_CHUNK];
        for _ in 0..reads {
            let Some(conn) = self.conns[rank as usize].as_mut() else {
                return;
            };
            let Some(sock) = conn.sock.as_mut() else {
                return;
            };
            let n = match sock.read(&mut buf) {
                Ok(0) => {
                    // Closing without finalize is not an error by itself: non-MPI programs
                    // never speak PMI. The rank's exit status decides.
                    self.close(rank);
                    return;
                }
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => {
                    self.close(rank);
                    return;
                }
            };
            conn.inbox.extend(&buf[..n]);
            self.handle_lines(rank, events);
        }
    }

    /// Feeds every complete line rank `rank` sent to the job state and acts on the result.
    fn handle_lines(&mut self, rank: u32, events: &mut Vec<PmiEvent>) {
        loop {
            let Some(conn) = self.conns[rank as usize].as_mut() else {
                return;
            };
            let (j, local) = self.owner[rank as usize];
            let job = &mut self.jobs[j as usize];
            let actions = match conn.inbox.next_line() {
                Ok(Some(line)) => job.handle(local, &line),
                Ok(None) => return,
                Err(e) => vec![job.framing_error(local, &e)],
            };
            // The job numbers its own ranks; connections are numbered across jobs.
            let base = self.base[j as usize];
            for action in actions {
                match action {
                    Action::Reply { rank: to, line } => {
                        self.send(base + to, line.as_bytes(), events)
                    }
                    Action::Abort {
                        rank,
                        code,
                        message,
                    } => events.push(PmiEvent::Abort {
                        rank: base + rank,
                        code,
                        message,
                    }),
                    Action::Spawn { rank, request } => events.push(PmiEvent::Spawn {
                        rank: base + rank,
                        request,
                    }),
                    Action::ProtocolError { rank: bad, reason } => {
                        self.close(base + bad);
                        events.push(PmiEvent::ProtocolError {
                            rank: base + bad,
                            reason,
                        });
                    }
                }
            }
        }
    }

    /// Queues `bytes` for rank `to` and writes what the socket accepts now.
    fn send(&mut self, to: u32, bytes: &[u8], events: &mut Vec<PmiEvent>) {
        let Some(conn) = self.conns.get_mut(to as usize).and_then(Option::as_mut) else {
            // The rank is gone; nobody is left to read the reply.
            return;
        };
        if conn.write_failed {
            return;
        }
        if conn.sock.is_none() {
            // The agent's connection has its own bounded buffering.
            self.remote_out.push(RemoteOut::Data(to, bytes.to_vec()));
            return;
        }
        conn.outbox.extend_from_slice(bytes);
        if conn.outbox.len() > MAX_OUTBOX {
            self.close(to);
            events.push(PmiEvent::ProtocolError {
                rank: to,
                reason: format!("it does not read its PMI replies ({MAX_OUTBOX} bytes queued)"),
            });
            return;
        }
        self.flush(to);
    }

    /// Writes as much of rank `rank`'s outbox as its socket accepts.
    fn flush(&mut self, rank: u32) {
        let Some(conn) = self.conns[rank as usize].as_mut() else {
            return;
        };
        let Some(sock) = conn.sock.as_mut() else {
            return;
        };
        while !conn.outbox.is_empty() {
            match sock.write(&conn.outbox) {
                Ok(n) => {
                    conn.outbox.drain(..n);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                // The rank closed its end (exited). Keep reading what it sent before.
                Err(_) => {
                    conn.write_failed = true;
                    conn.outbox.clear();
                    return;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxmpi_pmi::Client;
    use std::thread;

    fn info(n: u32) -> JobInfo {
        JobInfo {
            kvsname: "kvs_t".into(),
            size: n,
            appnum: vec![0; n as usize],
            node_of: vec![0; n as usize],
            secret: Some("sec".into()),
        }
    }

    /// Serves until every connection is closed, polling like the event loop does.
    fn serve(mut server: PmiServer) -> Vec<PmiEvent> {
        let mut events = Vec::new();
        loop {
            let set: Vec<(u32, RawFd, bool)> = server.poll_set().collect();
            if set.is_empty() {
                return events;
            }
            let mut fds: Vec<libc::pollfd> = set
                .iter()
                .map(|&(_, fd, w)| libc::pollfd {
                    fd,
                    events: libc::POLLIN | if w { libc::POLLOUT } else { 0 },
                    revents: 0,
                })
                .collect();
            crate::sys::poll(&mut fds, 5000).unwrap();
            for (i, p) in fds.iter().enumerate() {
                if p.revents != 0 {
                    server.on_ready(set[i].0, &mut events);
                }
            }
        }
    }

    #[test]
    fn serves_a_card_exchange() {
        let n = 3;
        let mut server = PmiServer::new(info(n));
        let mut clients = Vec::new();
        for r in 0..n {
            let (a, b) = UnixStream::pair().unwrap();
            b.set_nonblocking(true).unwrap();
            server.attach(r, b);
            clients.push(thread::spawn(move || {
                let mut c = Client::init(a, r, n, Some("sec")).unwrap();
                c.put(&format!("k{r}"), &format!("v{r}")).unwrap();
                c.fence().unwrap();
                let got: Vec<String> = (0..n)
                    .map(|p| c.get(&format!("k{p}")).unwrap().unwrap())
                    .collect();
                c.finalize().unwrap();
                got
            }));
        }
        let server = thread::spawn(move || serve(server));
        for c in clients {
            assert_eq!(c.join().unwrap(), vec!["v0", "v1", "v2"]);
        }
        assert_eq!(server.join().unwrap(), vec![]);
    }

    #[test]
    fn malformed_and_oversized_lines_are_protocol_errors() {
        let mut server = PmiServer::new(info(2));
        let (mut a, b) = UnixStream::pair().unwrap();
        b.set_nonblocking(true).unwrap();
        server.attach(0, b);
        let (mut c, d) = UnixStream::pair().unwrap();
        d.set_nonblocking(true).unwrap();
        server.attach(1, d);
        a.write_all(b"hello there\n").unwrap();
        c.write_all(&vec![b'x'; MAX_SERVER_LINE + 10]).unwrap();
        let events = serve(server);
        assert_eq!(events.len(), 2, "{events:?}");
        assert!(events
            .iter()
            .any(|e| matches!(e, PmiEvent::ProtocolError { rank: 0, .. })));
        assert!(events
            .iter()
            .any(|e| matches!(e, PmiEvent::ProtocolError { rank: 1, reason } if reason.contains("too long"))));
    }

    #[test]
    fn remote_ranks_are_fed_and_their_replies_collected() {
        let mut server = PmiServer::new(info(2));
        server.attach_remote(0);
        server.attach_remote(1);
        let mut events = Vec::new();
        // A line split across two relayed chunks is handled once whole.
        server.feed(0, b"cmd=init pmi_version=1 pmi_subversion=1 ", &mut events);
        assert_eq!(server.take_remote(), vec![]);
        server.feed(0, b"oxmpi_secret=sec\ncmd=barrier_in\n", &mut events);
        let out = server.take_remote();
        assert_eq!(out.len(), 1, "{out:?}");
        assert!(matches!(&out[0], RemoteOut::Data(0, d) if d.starts_with(b"cmd=response_to_init")));
        server.feed(
            1,
            b"cmd=init pmi_version=1 pmi_subversion=1 oxmpi_secret=sec\ncmd=barrier_in\n",
            &mut events,
        );
        let out = server.take_remote();
        // Rank 1's init reply, then the fence releases both ranks.
        assert_eq!(out.len(), 3, "{out:?}");
        assert!(out
            .iter()
            .any(|o| matches!(o, RemoteOut::Data(0, d) if d.starts_with(b"cmd=barrier_out"))));
        assert!(events.is_empty(), "{events:?}");
        assert_eq!(
            server.poll_set().count(),
            0,
            "remote ranks have nothing to poll"
        );
        server.feed(1, b"cmd=abort exitcode=3\n", &mut events);
        assert!(matches!(
            &events[..],
            [PmiEvent::Abort {
                rank: 1,
                code: 3,
                ..
            }]
        ));
        server.close_all();
        assert_eq!(
            server.take_remote(),
            vec![RemoteOut::Close(0), RemoteOut::Close(1)]
        );
    }

    #[test]
    fn spawned_jobs_are_numbered_after_the_launch_and_kept_apart() {
        let mut server = PmiServer::new(info(2));
        let mut child = info(3);
        child.kvsname = "kvs_child".into();
        assert_eq!(
            server.add_job(child, &[("parent".into(), "kvs_t".into())]),
            (1, 2)
        );
        assert_eq!((server.jobs(), server.processes()), (2, 5));
        assert_eq!(server.job_of(1), (0, 1));
        assert_eq!(server.job_of(4), (1, 2));
        for p in 0..5 {
            server.attach_remote(p);
        }
        let mut events = Vec::new();
        let init = b"cmd=init pmi_version=1 pmi_subversion=1 oxmpi_secret=sec\n";
        server.feed(4, init, &mut events);
        server.feed(4, b"cmd=get_my_kvsname\ncmd=get key=parent\n", &mut events);
        let out = server.take_remote();
        assert_eq!(out.len(), 3, "{out:?}");
        assert!(
            out.iter().all(|o| matches!(o, RemoteOut::Data(4, _))),
            "{out:?}"
        );
        assert!(matches!(&out[1], RemoteOut::Data(_, d) if d.ends_with(b"kvsname=kvs_child\n")));
        assert!(matches!(&out[2], RemoteOut::Data(_, d) if d.ends_with(b"value=kvs_t\n")));
        // A spawn from the child job names the child's process number.
        server.feed(
            4,
            b"mcmd=spawn\nnprocs=1\nexecname=x\nendcmd\n",
            &mut events,
        );
        assert!(
            matches!(&events[..], [PmiEvent::Spawn { rank: 4, .. }]),
            "{events:?}"
        );
        server.spawn_result(4, Err("no".into()), &mut events);
        assert!(
            matches!(&server.take_remote()[..], [RemoteOut::Data(4, d)] if d.starts_with(b"cmd=spawn_result rc=-1"))
        );
        // A fence of the launch's job does not wait for the child job.
        server.feed(0, init, &mut events);
        server.feed(1, init, &mut events);
        server.feed(0, b"cmd=barrier_in\n", &mut events);
        server.feed(1, b"cmd=barrier_in\n", &mut events);
        let out = server.take_remote();
        let released = out
            .iter()
            .filter(|o| matches!(o, RemoteOut::Data(_, d) if d.starts_with(b"cmd=barrier_out")))
            .count();
        assert_eq!(released, 2, "{out:?}");
    }

    #[test]
    fn abort_is_reported_even_after_the_rank_is_gone() {
        let mut server = PmiServer::new(info(1));
        let (mut a, b) = UnixStream::pair().unwrap();
        b.set_nonblocking(true).unwrap();
        server.attach(0, b);
        // What a rank's MPI_Abort does: init, abort, exit at once (the reply to init is never
        // read, so writing it fails).
        a.write_all(b"cmd=init pmi_version=1 pmi_subversion=1 oxmpi_secret=sec\n")
            .unwrap();
        a.write_all(b"cmd=abort exitcode=7 message=bye\n").unwrap();
        drop(a);
        let mut events = Vec::new();
        server.drain(0, &mut events);
        assert_eq!(
            events,
            vec![PmiEvent::Abort {
                rank: 0,
                code: 7,
                message: "bye".into()
            }]
        );
    }
}
