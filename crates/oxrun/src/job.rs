//! A running job: the single-threaded `poll(2)` event loop, and how the job ends.
//!
//! One loop watches every rank's stdout and stderr pipes, every PMI socket, oxrun's stdin
//! (and rank 0's stdin while there is something to write), and the signal self-pipe. It
//! blocks in `poll` with a timeout taken from the nearest deadline (`--timeout`, the grace
//! period before `SIGKILL`, the output drain limit), so a waiting job costs no CPU.
//!
//! Ending: the first of a failing rank (non-zero exit or death by signal), a PMI abort, a PMI
//! protocol error, `--timeout`, or a signal to oxrun prints one line naming the cause and
//! stops the job: `SIGTERM` to every rank's process group, `SIGKILL` after [`GRACE`]. A rank
//! whose process exits has its process group killed at once, so nothing it started outlives
//! it. When every rank is reaped and their output drained, the job's `/dev/shm` files are
//! removed and oxrun exits with the status the first cause dictates.
//!
//! Ranks on other hosts are the same to this loop, but their pipes and PMI socket are relayed
//! by their host's agent (see `remote` and `agent`): the loop polls the agents' connections,
//! feeds what they relay into the same PMI state and output streams, and sends the agent the
//! PMI replies and signals. An agent that goes away ends the job with a message naming its
//! host; its ranks count as killed.
//!
//! A rank's PMI `spawn` starts a new job on this host (`RunningJob::spawn_job`): its
//! processes join this loop as ranks numbered after every earlier one, so their output, exit
//! statuses and aborts count like the launch's ranks', and the run ends when all are done.

use std::collections::HashMap;
use std::ffi::OsString;
use std::os::fd::RawFd;
use std::time::{Duration, Instant};

use oxmpi_pmi::JobInfo;

use crate::binding::format_cpu_list;
use crate::frame::Msg;
use crate::pmi::{PmiEvent, PmiServer, RemoteOut};
use crate::remote::{self, AgentEvent, Agents};
use crate::signals::{self, SignalPipe};
use crate::spawn::{spawn_rank, JobEnv, RankSpec};
use crate::stdio::{RankStream, Sink, StdinForward, READ_CHUNK};
use crate::{shm, sys};

/// Time between `SIGTERM` and `SIGKILL` when stopping the job.
pub const GRACE: Duration = Duration::from_secs(1);
/// Time after `SIGKILL` after which oxrun stops waiting for ranks that will not die (stuck in
/// the kernel) and exits anyway.
pub const ABANDON: Duration = Duration::from_secs(10);
/// Time after the last rank exited that oxrun keeps forwarding output still written by
/// processes that escaped the ranks' process groups.
pub const DRAIN: Duration = Duration::from_secs(1);

/// Exit status when a rank breaks the PMI protocol or the job cannot run.
pub const EXIT_FAILURE: i32 = 1;
/// Exit status when `--timeout` expires (as `timeout(1)`).
pub const EXIT_TIMEOUT: i32 = 124;

/// One rank as the loop sees it.
#[derive(Debug)]
pub struct Rank {
    /// Process id, also the id of its process group (on its host; 0 until a remote rank's
    /// agent reports it).
    pub pid: libc::pid_t,
    /// The agent link of its host, or `None` for a rank on this host.
    pub host: Option<usize>,
    /// Raw wait status once reaped.
    pub status: Option<libc::c_int>,
    /// Its stdout pipe, until end of file.
    pub stdout: Option<RankStream>,
    /// Its stderr pipe, until end of file.
    pub stderr: Option<RankStream>,
}

/// Where the job is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Ranks are running; nothing has gone wrong.
    Running,
    /// Stopping since the given instant; `killed` once `SIGKILL` was sent.
    Stopping { since: Instant, killed: bool },
}

/// What each poll entry stands for.
#[derive(Debug, Clone, Copy)]
enum Source {
    Signals,
    Stdin,
    RankStdin,
    Stdout(u32),
    Stderr(u32),
    Pmi(u32),
    Agent(remote::Source),
}

/// A started job.
#[derive(Debug)]
pub struct RunningJob {
    ranks: Vec<Rank>,
    by_pid: HashMap<libc::pid_t, u32>,
    pmi: PmiServer,
    stdin: StdinForward,
    out: Sink,
    err: Sink,
    signals: SignalPipe,
    jobkey: String,
    phase: Phase,
    /// Exit status decided by the first cause of the job's end.
    exit: Option<i32>,
    /// `--timeout` deadline and its value in seconds for the message.
    deadline: Option<(Instant, f64)>,
    /// When the last rank was reaped.
    all_reaped_at: Option<Instant>,
    buf: Vec<u8>,
    /// Other hosts' agents, if the job has any.
    agents: Option<Agents>,
    /// What a spawned job's ranks share with the launch's (secret, job key, limits), and the
    /// prefix of its KVS name; `None`: ranks cannot spawn.
    spawner: Option<(JobEnv, String)>,
    /// How spawned processes are bound, if they are.
    spawn_binding: Option<SpawnBinding>,
}

/// The launch's binding policy, continued for spawned processes.
#[derive(Debug)]
pub struct SpawnBinding {
    /// `--bind-to`.
    pub policy: Option<crate::binding::BindTo>,
    /// `--map-by`.
    pub within: crate::binding::Within,
    /// This host's cores.
    pub cores: Vec<crate::binding::Core>,
    /// Processes of this host planned so far (the launch's, then every spawned one).
    pub planned: usize,
    /// Whether to print each spawned process's binding (`--report-bindings`).
    pub report: bool,
}

impl SpawnBinding {
    /// CPUs for the next `n` processes: the policy's plan for all processes so far and these,
    /// when it keeps the earlier ones where they are (else, as when cores run out with the
    /// default policy, the new ones stay unbound rather than move onto taken cores).
    pub fn next(&mut self, n: usize) -> Vec<Option<Vec<usize>>> {
        use crate::binding::plan;
        let before = plan(self.planned, self.policy, self.within, &self.cores);
        let mut all = plan(self.planned + n, self.policy, self.within, &self.cores);
        let keeps = all[..self.planned] == before[..];
        let new = all.split_off(self.planned);
        self.planned += n;
        if keeps {
            new
        } else {
            vec![None; n]
        }
    }
}

impl RunningJob {
    /// A job with no ranks yet: the PMI server for `info`, the signal pipe (already
    /// installed) and the output sinks.
    pub fn new(
        info: JobInfo,
        jobkey: String,
        signals: SignalPipe,
        tag_output: bool,
        timeout: Option<Duration>,
    ) -> RunningJob {
        RunningJob {
            ranks: Vec::with_capacity(info.size as usize),
            by_pid: HashMap::new(),
            pmi: PmiServer::new(info),
            stdin: StdinForward::new(None),
            out: Sink::new(1, tag_output),
            err: Sink::new(2, tag_output),
            signals,
            jobkey,
            phase: Phase::Running,
            exit: None,
            deadline: timeout.map(|t| (Instant::now() + t, t.as_secs_f64())),
            all_reaped_at: None,
            buf: vec![0; READ_CHUNK],
            agents: None,
            spawner: None,
            spawn_binding: None,
        }
    }

    /// Binds spawned processes by `b` (only when the launch bound its ranks by policy alone:
    /// no rank file, no other hosts sharing the machine).
    pub fn bind_spawned(&mut self, b: SpawnBinding) {
        self.spawn_binding = Some(b);
    }

    /// Lets ranks spawn jobs: their ranks get `env` (with their own size) and KVS names
    /// starting with `kvs_prefix`.
    pub fn allow_spawn(&mut self, env: JobEnv, kvs_prefix: String) {
        self.spawner = Some((env, kvs_prefix));
    }

    /// Hands the job the agents of its other hosts (already started).
    pub fn set_agents(&mut self, agents: Agents) {
        self.agents = Some(agents);
    }

    /// Adds the next rank, which runs on the host of agent link `link`.
    pub fn add_remote_rank(&mut self, link: usize) {
        let rank = self.ranks.len() as u32;
        self.pmi.attach_remote(rank);
        self.ranks.push(Rank {
            pid: 0,
            host: Some(link),
            status: None,
            stdout: Some(RankStream::remote()),
            stderr: Some(RankStream::remote()),
        });
    }

    /// "rank R (pid P)", with the host for a remote rank and the job for a spawned one.
    fn who(&self, rank: u32) -> String {
        let r = &self.ranks[rank as usize];
        let name = self.name(rank);
        match (r.host, &self.agents) {
            (Some(h), Some(a)) => format!("{name} (pid {} on {})", r.pid, a.links[h].host),
            _ => format!("{name} (pid {})", r.pid),
        }
    }

    /// "rank R", or "rank R of spawned job J" for a spawned job's.
    fn name(&self, rank: u32) -> String {
        match self.pmi.job_of(rank) {
            (0, _) => format!("rank {rank}"),
            (j, local) => format!("rank {local} of spawned job {j}"),
        }
    }

    /// Starts the job process `parent` asked for and answers it. A request that cannot run
    /// (no such program, another host) is refused and nothing starts; a process that fails to
    /// start stops everything, as at launch.
    fn spawn_job(&mut self, parent: u32, request: oxmpi_pmi::SpawnRequest) {
        let mut events = Vec::new();
        let ready = match &self.spawner {
            None => Err("this job's launcher cannot spawn processes".to_owned()),
            Some(_) if self.ranks.len() as u32 != self.pmi.processes() => {
                Err("not every process of the job has started".to_owned())
            }
            Some(s) => crate::dynamic::prepare(&request, crate::hosts::own_hostname().as_deref())
                .map(|p| (p, s.clone())),
        };
        let (prepared, (env, prefix)) = match ready {
            Ok(r) => r,
            Err(msg) => {
                self.pmi.spawn_result(parent, Err(msg), &mut events);
                self.on_pmi_events(events);
                return;
            }
        };
        let size = request.total();
        let mut appnum = Vec::with_capacity(size as usize);
        for (i, p) in prepared.iter().enumerate() {
            appnum.extend(std::iter::repeat(i as u32).take(p.count as usize));
        }
        let j = self.pmi.jobs();
        let info = oxmpi_pmi::JobInfo {
            kvsname: format!("{prefix}_spawn{j}"),
            size,
            appnum,
            node_of: vec![0; size as usize],
            secret: Some(env.secret.clone()),
        };
        let (j, base) = self.pmi.add_job(info, &request.preput);
        let env = JobEnv { size, ..env };
        let extra = [(OsString::from("PMI_SPAWNED"), OsString::from("1"))];
        let (cpus, report) = match self.spawn_binding.as_mut() {
            Some(b) => (b.next(size as usize), b.report),
            None => (vec![None; size as usize], false),
        };
        let mut rank = 0u32;
        for p in &prepared {
            for _ in 0..p.count {
                let spec = RankSpec {
                    rank,
                    program: &p.program,
                    argv0: &p.argv0,
                    args: &p.args,
                    env: &extra,
                    cpus: cpus[rank as usize].as_deref(),
                    stdin: false,
                    die_with_parent: false,
                    cwd: p.cwd.as_deref(),
                };
                debug_assert_eq!(self.ranks.len() as u32, base + rank);
                match spawn_rank(&spec, &env) {
                    Ok(s) => {
                        if report {
                            let how = match &cpus[rank as usize] {
                                Some(c) => format!(
                                    "bound to cpu{} {}",
                                    if c.len() > 1 { "s" } else { "" },
                                    format_cpu_list(c)
                                ),
                                None => "not bound".to_owned(),
                            };
                            let pid = s.pid;
                            self.say(&format!(
                                "oxrun: rank {rank} of spawned job {j} (pid {pid}) {how}"
                            ));
                        }
                        self.add_rank(s)
                    }
                    Err(e) => {
                        let what = format!(
                            "cannot start rank {rank} of spawned job {j} ({}): {e}",
                            p.argv0.to_string_lossy()
                        );
                        self.say(&format!("oxrun: {what}; stopping the job"));
                        self.pmi.spawn_result(parent, Err(what), &mut events);
                        self.stop(crate::launch::spawn_exit_status(&e));
                        self.on_pmi_events(events);
                        return;
                    }
                }
                rank += 1;
            }
        }
        self.pmi.spawn_result(parent, Ok(()), &mut events);
        self.on_pmi_events(events);
    }

    /// Adds the next rank, just started.
    pub fn add_rank(&mut self, s: crate::spawn::Spawned) {
        let rank = self.ranks.len() as u32;
        self.by_pid.insert(s.pid, rank);
        self.pmi.attach(rank, s.pmi);
        if rank == 0 {
            self.stdin = StdinForward::new(s.stdin);
        }
        self.ranks.push(Rank {
            pid: s.pid,
            host: None,
            status: None,
            stdout: Some(RankStream::new(s.stdout)),
            stderr: Some(RankStream::new(s.stderr)),
        });
    }

    /// The pid of rank `rank`.
    pub fn pid(&self, rank: u32) -> libc::pid_t {
        self.ranks[rank as usize].pid
    }

    /// Number of ranks started so far.
    pub fn started(&self) -> u32 {
        self.ranks.len() as u32
    }

    /// Prints one line of oxrun's own on stderr, between whole lines of the ranks' output.
    pub fn say(&mut self, line: &str) {
        self.err.message(line);
    }

    /// Ends the job with exit status `exit` (unless an earlier cause already decided it):
    /// `SIGTERM` to every live rank, `SIGKILL` after [`GRACE`]. The caller has printed why.
    pub fn stop(&mut self, exit: i32) {
        if self.phase != Phase::Running {
            return;
        }
        self.exit = Some(exit);
        self.phase = Phase::Stopping {
            since: Instant::now(),
            killed: false,
        };
        // Ranks blocked in a fence get end of file and fail fast; no more requests are served.
        self.pmi.close_all();
        self.stdin.abandon();
        self.relay_pmi();
        // Agents that have not connected yet will never be needed.
        let never = self
            .agents
            .as_mut()
            .map(Agents::abandon_starting)
            .unwrap_or_default();
        for h in never {
            self.host_gone(h, 0);
        }
        self.signal_live_ranks(libc::SIGTERM);
    }

    fn signal_live_ranks(&mut self, sig: libc::c_int) {
        let mut hosts = Vec::new();
        for r in self.ranks.iter().filter(|r| r.status.is_none()) {
            match r.host {
                None => {
                    let _ = sys::kill_group(r.pid, sig);
                }
                Some(h) if !hosts.contains(&h) => hosts.push(h),
                Some(_) => {}
            }
        }
        if let Some(a) = self.agents.as_mut() {
            for h in hosts {
                a.send(h, &Msg::Signal(sig));
            }
            let mut events = Vec::new();
            a.flush_all(&mut events);
            self.on_agent_events(events);
        }
    }

    /// Every rank of host `h` not reaped yet counts as ended with wait status `status`, and
    /// its output as complete.
    fn host_gone(&mut self, h: usize, status: libc::c_int) {
        for rank in 0..self.ranks.len() {
            let r = &mut self.ranks[rank];
            if r.host != Some(h) || r.status.is_some() {
                continue;
            }
            r.status = Some(status);
            for (stream, sink) in [
                (&mut r.stdout, &mut self.out),
                (&mut r.stderr, &mut self.err),
            ] {
                if let Some(s) = stream.as_mut() {
                    s.end(rank as u32, sink);
                }
                *stream = None;
            }
            self.pmi.close(rank as u32);
        }
        // Nobody is left to relay to.
        self.pmi.take_remote();
        self.note_all_reaped();
    }

    fn note_all_reaped(&mut self) {
        if self.all_reaped() && self.all_reaped_at.is_none() && !self.ranks.is_empty() {
            self.all_reaped_at = Some(Instant::now());
        }
    }

    /// Sends the agents the PMI replies and closings for their ranks.
    fn relay_pmi(&mut self) {
        let out = self.pmi.take_remote();
        let Some(a) = self.agents.as_mut() else {
            return;
        };
        for o in out {
            let (rank, msg) = match o {
                RemoteOut::Data(rank, data) => (rank, Msg::Pmi { rank, data }),
                RemoteOut::Close(rank) => (rank, Msg::PmiClose { rank }),
            };
            if let Some(h) = self.ranks.get(rank as usize).and_then(|r| r.host) {
                a.send(h, &msg);
            }
        }
    }

    fn all_reaped(&self) -> bool {
        self.ranks.iter().all(|r| r.status.is_some())
    }

    fn output_open(&self) -> bool {
        self.ranks
            .iter()
            .any(|r| r.stdout.is_some() || r.stderr.is_some())
    }

    /// Runs the event loop until the job is over; returns oxrun's exit status.
    pub fn run(mut self) -> i32 {
        // A rank may have died while later ones were being started.
        self.reap();
        let mut fds: Vec<libc::pollfd> = Vec::new();
        let mut sources: Vec<Source> = Vec::new();
        loop {
            let now = Instant::now();
            self.check_deadlines(now);
            if self.finished(now) {
                break;
            }
            self.poll_set(&mut fds, &mut sources);
            let timeout = self.poll_timeout(Instant::now());
            if let Err(e) = sys::poll(&mut fds, timeout) {
                self.say(&format!("oxrun: poll failed: {e}; killing the job"));
                self.stop(EXIT_FAILURE);
                self.kill_and_wait();
                break;
            }
            for (p, &src) in fds.iter().zip(&sources) {
                if p.revents != 0 {
                    self.on_ready(src, p.revents);
                }
            }
            self.check_sinks();
            self.relay_pmi();
            if let Some(a) = self.agents.as_mut() {
                let mut events = Vec::new();
                a.flush_all(&mut events);
                self.on_agent_events(events);
            }
        }
        self.finish()
    }

    /// Builds the poll set for this turn.
    fn poll_set(&self, fds: &mut Vec<libc::pollfd>, sources: &mut Vec<Source>) {
        fds.clear();
        sources.clear();
        let mut add = |fd: RawFd, events: libc::c_short, src: Source| {
            fds.push(libc::pollfd {
                fd,
                events,
                revents: 0,
            });
            sources.push(src);
        };
        add(self.signals.fd(), libc::POLLIN, Source::Signals);
        if self.stdin.wants_read() {
            add(0, libc::POLLIN, Source::Stdin);
        }
        if let Some(fd) = self.stdin.wants_write() {
            add(fd, libc::POLLOUT, Source::RankStdin);
        }
        for (r, rank) in self.ranks.iter().enumerate() {
            let r = r as u32;
            if let Some(fd) = rank.stdout.as_ref().and_then(RankStream::raw_fd) {
                add(fd, libc::POLLIN, Source::Stdout(r));
            }
            if let Some(fd) = rank.stderr.as_ref().and_then(RankStream::raw_fd) {
                add(fd, libc::POLLIN, Source::Stderr(r));
            }
        }
        if let Some(a) = &self.agents {
            a.poll_set(|fd, events, src| add(fd, events, Source::Agent(src)));
        }
        for (r, fd, wants_write) in self.pmi.poll_set() {
            let events = libc::POLLIN | if wants_write { libc::POLLOUT } else { 0 };
            add(fd, events, Source::Pmi(r));
        }
    }

    /// Milliseconds until the nearest deadline, or -1 (wait for an event).
    fn poll_timeout(&self, now: Instant) -> libc::c_int {
        let next = [
            self.deadline
                .filter(|_| self.phase == Phase::Running)
                .map(|(d, _)| d),
            match self.phase {
                Phase::Stopping { since, killed } => {
                    Some(since + if killed { GRACE + ABANDON } else { GRACE })
                }
                Phase::Running => None,
            },
            self.all_reaped_at.map(|t| t + DRAIN),
            self.agents.as_ref().and_then(Agents::next_deadline),
        ]
        .into_iter()
        .flatten()
        .min();
        match next {
            None => -1,
            Some(t) => {
                let d = t.saturating_duration_since(now);
                // Round up so that we do not wake up just before the deadline and spin.
                let ms = d.as_micros().div_ceil(1000);
                ms.min(i32::MAX as u128) as libc::c_int
            }
        }
    }

    fn on_ready(&mut self, src: Source, revents: libc::c_short) {
        match src {
            Source::Signals => {
                for sig in self.signals.take() {
                    self.on_signal(sig);
                }
            }
            Source::Stdin => self.stdin.on_readable(),
            Source::RankStdin => {
                if revents & (libc::POLLERR | libc::POLLHUP) != 0 {
                    self.stdin.abandon();
                } else {
                    self.stdin.on_writable();
                }
            }
            Source::Stdout(r) => {
                let rank = &mut self.ranks[r as usize];
                if let Some(s) = rank.stdout.as_mut() {
                    if s.pump(r, &mut self.out, &mut self.buf) {
                        rank.stdout = None;
                    }
                }
            }
            Source::Stderr(r) => {
                let rank = &mut self.ranks[r as usize];
                if let Some(s) = rank.stderr.as_mut() {
                    if s.pump(r, &mut self.err, &mut self.buf) {
                        rank.stderr = None;
                    }
                }
            }
            Source::Pmi(r) => {
                let mut events = Vec::new();
                self.pmi.on_ready(r, &mut events);
                self.on_pmi_events(events);
            }
            Source::Agent(src) => {
                let mut events = Vec::new();
                if let Some(a) = self.agents.as_mut() {
                    a.on_ready(src, &mut events);
                }
                self.on_agent_events(events);
            }
        }
    }

    fn on_agent_events(&mut self, events: Vec<AgentEvent>) {
        for e in events {
            match e {
                AgentEvent::Msg(h, m) => self.on_agent_msg(h, m),
                AgentEvent::Lost(h, why) => self.on_host_lost(h, &why),
                AgentEvent::Refused(what) => {
                    self.say(&format!("oxrun: refused {what}"));
                }
            }
        }
    }

    fn host_name(&self, h: usize) -> String {
        self.agents
            .as_ref()
            .map(|a| a.links[h].host.clone())
            .unwrap_or_default()
    }

    fn on_host_lost(&mut self, h: usize, why: &str) {
        let live = self
            .ranks
            .iter()
            .any(|r| r.host == Some(h) && r.status.is_none());
        if self.phase == Phase::Running && live {
            let host = self.host_name(h);
            self.say(&format!("oxrun: lost host {host}: {why}; stopping the job"));
            self.stop(EXIT_FAILURE);
        }
        // Its ranks are gone with it (the kernel kills an agent's ranks when it dies).
        self.host_gone(h, libc::SIGKILL);
    }

    /// Whether `rank` is one of host `h`'s ranks; anything else from that agent is a broken
    /// agent.
    fn rank_of_host(&mut self, h: usize, rank: u32) -> bool {
        let ok = self
            .ranks
            .get(rank as usize)
            .is_some_and(|r| r.host == Some(h));
        if !ok {
            self.on_host_lost(
                h,
                &format!("its agent named rank {rank}, which is not one of its ranks"),
            );
        }
        ok
    }

    fn on_agent_msg(&mut self, h: usize, m: Msg) {
        match m {
            Msg::Started { rank, pid } if self.rank_of_host(h, rank) => {
                self.ranks[rank as usize].pid = pid;
            }
            Msg::Pmi { rank, data } if self.rank_of_host(h, rank) => {
                let mut events = Vec::new();
                self.pmi.feed(rank, &data, &mut events);
                self.on_pmi_events(events);
            }
            Msg::Output { rank, err, data } if self.rank_of_host(h, rank) => {
                let r = &mut self.ranks[rank as usize];
                let (stream, sink) = if err {
                    (&mut r.stderr, &mut self.err)
                } else {
                    (&mut r.stdout, &mut self.out)
                };
                if let Some(s) = stream.as_mut() {
                    s.feed(rank, sink, &data);
                }
            }
            Msg::OutputEnd { rank, err } if self.rank_of_host(h, rank) => {
                let r = &mut self.ranks[rank as usize];
                let (stream, sink) = if err {
                    (&mut r.stderr, &mut self.err)
                } else {
                    (&mut r.stdout, &mut self.out)
                };
                if let Some(s) = stream.as_mut() {
                    s.end(rank, sink);
                }
                *stream = None;
            }
            Msg::Exit { rank, status } if self.rank_of_host(h, rank) => {
                if self.ranks[rank as usize].status.is_none() {
                    self.on_rank_exit(rank, status);
                    self.note_all_reaped();
                }
            }
            Msg::SpawnFailed { rank, code, reason } if self.rank_of_host(h, rank) => {
                let host = self.host_name(h);
                self.say(&format!(
                    "oxrun: cannot start rank {rank} on {host}: {reason}; stopping the job"
                ));
                self.stop(code);
                // The agent starts no rank after a failure.
                let unstarted: Vec<usize> = (0..self.ranks.len())
                    .filter(|&i| {
                        let r = &self.ranks[i];
                        r.host == Some(h) && r.pid == 0 && r.status.is_none()
                    })
                    .collect();
                for i in unstarted {
                    let r = &mut self.ranks[i];
                    r.status = Some(0);
                    r.stdout = None;
                    r.stderr = None;
                    self.pmi.close(i as u32);
                }
                self.note_all_reaped();
            }
            Msg::Note(line) => self.say(&line),
            Msg::Started { .. }
            | Msg::Pmi { .. }
            | Msg::Output { .. }
            | Msg::OutputEnd { .. }
            | Msg::Exit { .. }
            | Msg::SpawnFailed { .. } => {}
            other => {
                let what = format!("its agent sent an unexpected {other:?}");
                self.on_host_lost(h, &what);
            }
        }
    }

    fn on_signal(&mut self, sig: libc::c_int) {
        if sig == libc::SIGCHLD {
            self.reap();
            return;
        }
        match self.phase {
            Phase::Running => {
                self.say(&format!(
                    "oxrun: received {}; stopping the job",
                    signals::name(sig)
                ));
                self.stop(128 + sig);
            }
            // Asked again while stopping: do not wait for the grace period.
            Phase::Stopping { killed: false, .. } => {
                self.signal_live_ranks(libc::SIGKILL);
                // Count the wait for SIGKILL to take effect from now.
                let now = Instant::now();
                self.phase = Phase::Stopping {
                    since: now.checked_sub(GRACE).unwrap_or(now),
                    killed: true,
                };
            }
            Phase::Stopping { killed: true, .. } => {}
        }
    }

    fn on_pmi_events(&mut self, events: Vec<PmiEvent>) {
        for e in events {
            if self.phase != Phase::Running {
                return;
            }
            match e {
                PmiEvent::Abort {
                    rank,
                    code,
                    message,
                } => {
                    let who = self.who(rank);
                    let what = if message.is_empty() {
                        String::new()
                    } else {
                        format!(": {message}")
                    };
                    self.say(&format!(
                        "oxrun: {who} called abort with code {code}{what}; stopping the job"
                    ));
                    self.stop(abort_exit_status(code));
                }
                PmiEvent::ProtocolError { rank, reason } => {
                    let who = self.name(rank);
                    self.say(&format!(
                        "oxrun: {who} broke the PMI protocol: {reason}; aborting the job"
                    ));
                    self.stop(EXIT_FAILURE);
                }
                PmiEvent::Spawn { rank, request } => self.spawn_job(rank, request),
            }
        }
    }

    /// Reaps every exited rank. Each one's process group is killed while the rank is still a
    /// zombie (so its group id cannot have been reused), then what it sent on PMI and its
    /// output are drained, then its exit status is judged.
    fn reap(&mut self) {
        loop {
            let pid = match sys::exited_child() {
                Ok(Some(pid)) => pid,
                Ok(None) => break,
                Err(e) => {
                    self.say(&format!("oxrun: waitid failed: {e}"));
                    break;
                }
            };
            let _ = sys::kill_group(pid, libc::SIGKILL);
            let status = match sys::reap(pid) {
                Ok(s) => s,
                Err(e) => {
                    self.say(&format!("oxrun: waitpid({pid}) failed: {e}"));
                    break;
                }
            };
            if let Some(&rank) = self.by_pid.get(&pid) {
                self.on_rank_exit(rank, status);
            } else if let Some(h) = self.agents.as_mut().and_then(|a| a.on_child_exit(pid)) {
                let how = describe_failure(status)
                    .map(|(why, _)| why)
                    .unwrap_or_else(|| "exited with status 0".into());
                self.on_host_lost(
                    h,
                    &format!("its launch command {how} before the agent connected"),
                );
            }
        }
        self.note_all_reaped();
    }

    fn on_rank_exit(&mut self, rank: u32, status: libc::c_int) {
        let mut events = Vec::new();
        self.pmi.drain(rank, &mut events);
        self.on_pmi_events(events);
        let r = &mut self.ranks[rank as usize];
        if let Some(s) = r.stdout.as_mut() {
            if s.drain(rank, &mut self.out, &mut self.buf) {
                r.stdout = None;
            }
        }
        if let Some(s) = r.stderr.as_mut() {
            if s.drain(rank, &mut self.err, &mut self.buf) {
                r.stderr = None;
            }
        }
        r.status = Some(status);
        if rank == 0 {
            self.stdin.abandon();
        }
        if self.phase != Phase::Running {
            return;
        }
        let who = self.who(rank);
        if let Some((why, exit)) = describe_failure(status) {
            self.say(&format!("oxrun: {who} {why}; stopping the job"));
            self.stop(exit);
        } else if self.pmi.in_session(rank) {
            // Its peers may be waiting for it in a fence or a message: treat it as a failure,
            // as MPICH's Hydra does, rather than let the job hang until --timeout.
            self.say(&format!(
                "oxrun: {who} exited without finalizing MPI; stopping the job"
            ));
            self.stop(EXIT_FAILURE);
        }
    }

    fn check_deadlines(&mut self, now: Instant) {
        if let Some(a) = self.agents.as_mut() {
            let mut events = Vec::new();
            a.check_deadlines(now, &mut events);
            self.on_agent_events(events);
        }
        if let (Phase::Running, Some((deadline, secs))) = (self.phase, self.deadline) {
            if now >= deadline {
                self.say(&format!(
                    "oxrun: job exceeded --timeout of {secs} s; stopping it"
                ));
                self.stop(EXIT_TIMEOUT);
            }
        }
        if let Phase::Stopping {
            since,
            killed: false,
        } = self.phase
        {
            if now >= since + GRACE {
                self.signal_live_ranks(libc::SIGKILL);
                self.phase = Phase::Stopping {
                    since,
                    killed: true,
                };
            }
        }
    }

    /// Whether the loop is done: every rank reaped and its output forwarded (or the drain
    /// limit reached), or ranks that survive `SIGKILL` given up on.
    fn finished(&mut self, now: Instant) -> bool {
        if let Phase::Stopping {
            since,
            killed: true,
        } = self.phase
        {
            if now >= since + GRACE + ABANDON && !self.all_reaped() {
                let stuck: Vec<String> = (0..self.ranks.len())
                    .filter(|&i| self.ranks[i].status.is_none())
                    .map(|i| self.who(i as u32))
                    .collect();
                self.say(&format!(
                    "oxrun: {} did not exit after SIGKILL; giving up on them",
                    stuck.join(", ")
                ));
                return true;
            }
        }
        if !self.all_reaped() {
            return false;
        }
        !self.output_open() || self.all_reaped_at.is_some_and(|t| now >= t + DRAIN)
    }

    /// If nobody reads oxrun's stdout (or stderr) any more, closes the ranks' pipes of that
    /// kind so that they get `SIGPIPE`, as in a shell pipeline.
    fn check_sinks(&mut self) {
        if self.out.is_broken() {
            self.ranks.iter_mut().for_each(|r| r.stdout = None);
        }
        if self.err.is_broken() {
            self.ranks.iter_mut().for_each(|r| r.stderr = None);
        }
    }

    /// Kills every rank and waits for each (used when the loop itself cannot go on).
    fn kill_and_wait(&mut self) {
        for i in 0..self.ranks.len() {
            let r = &mut self.ranks[i];
            if r.status.is_none() && r.host.is_none() {
                let _ = sys::kill_group(r.pid, libc::SIGKILL);
                r.status = sys::reap(r.pid).ok().or(Some(0));
            }
        }
    }

    /// Removes the job's shared-memory files and returns the exit status.
    fn finish(mut self) -> i32 {
        if let Some(a) = self.agents.as_mut() {
            a.finish();
        }
        for (path, e) in shm::remove_job_files(&self.jobkey) {
            self.say(&format!("oxrun: could not remove {}: {e}", path.display()));
        }
        self.exit.unwrap_or(0)
    }
}

/// How a rank's wait status counts: `None` for success, else the words for the message
/// ("exited with status 3") and oxrun's exit status.
pub fn describe_failure(status: libc::c_int) -> Option<(String, i32)> {
    if libc::WIFEXITED(status) {
        match libc::WEXITSTATUS(status) {
            0 => None,
            code => Some((format!("exited with status {code}"), code)),
        }
    } else if libc::WIFSIGNALED(status) {
        let sig = libc::WTERMSIG(status);
        let core = if libc::WCOREDUMP(status) {
            ", core dumped"
        } else {
            ""
        };
        Some((
            format!("was killed by signal {sig} ({}{core})", signals::name(sig)),
            128 + sig,
        ))
    } else {
        Some((format!("ended with wait status {status:#x}"), EXIT_FAILURE))
    }
}

/// oxrun's exit status for a PMI abort with `code`: the code modulo 256, but never 0, since
/// an aborted job did not succeed.
pub fn abort_exit_status(code: i32) -> i32 {
    match code.rem_euclid(256) {
        0 => EXIT_FAILURE,
        c => c,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exited(code: i32) -> libc::c_int {
        code << 8
    }

    #[test]
    fn exit_statuses_are_described() {
        assert_eq!(describe_failure(exited(0)), None);
        assert_eq!(
            describe_failure(exited(3)),
            Some(("exited with status 3".into(), 3))
        );
        assert_eq!(
            describe_failure(9),
            Some(("was killed by signal 9 (SIGKILL)".into(), 137))
        );
        assert_eq!(
            describe_failure(11 | 0x80),
            Some(("was killed by signal 11 (SIGSEGV, core dumped)".into(), 139))
        );
    }

    #[test]
    fn spawned_processes_continue_the_launch_binding() {
        use crate::binding::{BindTo, Core, Within};
        let cores: Vec<Core> = (0..4)
            .map(|i| Core {
                cpus: vec![i],
                package: 0,
                numa: 0,
            })
            .collect();
        let mut b = SpawnBinding {
            policy: None,
            within: Within::default(),
            cores: cores.clone(),
            planned: 2,
            report: false,
        };
        assert_eq!(b.next(1), vec![Some(vec![2])]);
        // Cores run out: the default policy would unbind everyone, so the new ones stay
        // unbound and nobody moves.
        assert_eq!(b.next(2), vec![None, None]);
        assert_eq!(b.planned, 5);
        let mut b = SpawnBinding {
            policy: Some(BindTo::Core),
            within: Within::default(),
            cores,
            planned: 3,
            report: false,
        };
        assert_eq!(b.next(2), vec![Some(vec![3]), Some(vec![0])]);
    }

    #[test]
    fn abort_codes_map_to_nonzero_exit_statuses() {
        assert_eq!(abort_exit_status(7), 7);
        assert_eq!(abort_exit_status(0), 1);
        assert_eq!(abort_exit_status(256), 1);
        assert_eq!(abort_exit_status(-1), 255);
        assert_eq!(abort_exit_status(300), 44);
    }
}
