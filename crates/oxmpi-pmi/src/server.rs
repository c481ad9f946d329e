//! The PMI-1 server's job state: the key-value space, fences and job attributes.
//!
//! Pure logic with no I/O: the launcher reads a line from rank `r`, calls [`Job::handle`], and
//! writes each returned reply to the rank it names. This keeps the protocol testable in one
//! process and lets `oxrun` own sockets, processes and signals.

use std::collections::HashMap;

use crate::spawn::{parse_block, SpawnRequest, MAX_BLOCK_LINES, MAX_SPAWN_PROCS};
use crate::wire::{Command, WireError, MAX_KEY, MAX_VALUE};

/// The job attribute ranks read to learn which peers share their host.
pub const PROCESS_MAPPING_KEY: &str = "PMI_process_mapping";

/// Static facts about the job the server answers for.
#[derive(Debug, Clone)]
pub struct JobInfo {
    /// The KVS name handed to ranks by `get_my_kvsname`.
    pub kvsname: String,
    /// Number of ranks.
    pub size: u32,
    /// MPMD application index of each rank (`get_appnum`).
    pub appnum: Vec<u32>,
    /// Host index of each rank; ranks with equal indices share a host.
    pub node_of: Vec<u32>,
    /// If set, `init` must carry `oxmpi_secret=` with this value.
    pub secret: Option<String>,
}

/// What the launcher must do after a line was handled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Send `line` to `rank`.
    Reply {
        /// Destination rank.
        rank: u32,
        /// Encoded line, newline included.
        line: String,
    },
    /// The rank asked to abort the job.
    Abort {
        /// Rank that called abort.
        rank: u32,
        /// Exit code it asked for.
        code: i32,
        /// Its message, possibly empty.
        message: String,
    },
    /// The rank asked for a new job (`spawn`); the launcher starts it and answers with
    /// [`Job::spawn_result`].
    Spawn {
        /// Rank that asked.
        rank: u32,
        /// What to start.
        request: SpawnRequest,
    },
    /// The rank broke the protocol; the job must end.
    ProtocolError {
        /// Offending rank.
        rank: u32,
        /// What was wrong.
        reason: String,
    },
}

/// Per-rank protocol progress.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Phase {
    #[default]
    Fresh,
    Ready,
    InFence,
    Finalized,
}

/// Server-side state of one job.
#[derive(Debug)]
pub struct Job {
    info: JobInfo,
    mapping: String,
    phase: Vec<Phase>,
    committed: HashMap<String, String>,
    pending: HashMap<String, String>,
    in_fence: u32,
    /// Per rank: the lines of a multi-line command being received.
    mcmd: Vec<Option<Vec<String>>>,
    /// Per rank: the blocks of a spawn received so far, and its preput keys.
    spawning: Vec<SpawnRequest>,
}

fn reply(rank: u32, cmd: Command) -> Action {
    // Replies are built from values that passed our own limits, so they always encode;
    // fall back to an error reply rather than panic if that ever stops being true.
    let line = cmd
        .encode(usize::MAX)
        .unwrap_or_else(|e| format!("cmd=error rc=-1 msg={}\n", e.to_string().replace(' ', "_")));
    Action::Reply { rank, line }
}

impl Job {
    /// Starts a job; `info.appnum` and `info.node_of` must have `info.size` entries.
    pub fn new(info: JobInfo) -> Self {
        let n = info.size as usize;
        assert_eq!(info.appnum.len(), n, "appnum per rank");
        assert_eq!(info.node_of.len(), n, "node per rank");
        let mapping = process_mapping(&info.node_of);
        Job {
            phase: vec![Phase::Fresh; n],
            info,
            mapping,
            committed: HashMap::new(),
            pending: HashMap::new(),
            in_fence: 0,
            mcmd: vec![None; n],
            spawning: vec![SpawnRequest::default(); n],
        }
    }

    /// Puts `kv` into the key-value space before any rank starts (a spawned job's `preput`
    /// keys), readable without a fence.
    pub fn preput(&mut self, kv: &[(String, String)]) {
        for (k, v) in kv {
            self.committed.insert(k.clone(), v.clone());
        }
    }

    /// The reply to rank `rank`'s spawn: started, or refused with `msg`.
    pub fn spawn_result(&self, rank: u32, result: Result<(), String>) -> Action {
        match result {
            Ok(()) => reply(rank, Command::new("spawn_result").arg("rc", 0)),
            Err(msg) => {
                let mut msg: String = msg.chars().filter(|c| *c != '\n' && *c != '\0').collect();
                while msg.len() > MAX_VALUE {
                    msg.pop();
                }
                reply(
                    rank,
                    Command::new("spawn_result").arg("rc", -1).arg("msg", msg),
                )
            }
        }
    }

    /// Whether `rank` has sent `init` but not `finalize`: it is an MPI process that must not
    /// leave without finalizing, or peers waiting for it in a fence would hang.
    pub fn in_session(&self, rank: u32) -> bool {
        !matches!(self.phase[rank as usize], Phase::Fresh | Phase::Finalized)
    }

    /// Whether `rank` has sent `finalize`.
    pub fn finalized(&self, rank: u32) -> bool {
        self.phase[rank as usize] == Phase::Finalized
    }

    /// Handles one line from `rank` and returns what the launcher must do.
    pub fn handle(&mut self, rank: u32, line: &str) -> Vec<Action> {
        let r = rank as usize;
        if let Some(block) = self.mcmd[r].as_mut() {
            if line.trim_end() != "endcmd" {
                if block.len() >= MAX_BLOCK_LINES {
                    self.mcmd[r] = None;
                    return vec![Action::ProtocolError {
                        rank,
                        reason: format!("multi-line command longer than {MAX_BLOCK_LINES} lines"),
                    }];
                }
                block.push(line.to_owned());
                return Vec::new();
            }
            let block = self.mcmd[r].take().unwrap_or_default();
            return self.spawn_block(rank, &block);
        }
        if let Some(name) = line.strip_prefix("mcmd=") {
            if name.trim_end() != "spawn" {
                return vec![Action::ProtocolError {
                    rank,
                    reason: format!("unknown multi-line command {:?}", truncate(name)),
                }];
            }
            self.mcmd[r] = Some(Vec::new());
            return Vec::new();
        }
        match Command::parse(line) {
            Ok(cmd) => self.handle_command(rank, &cmd),
            Err(e) => vec![Action::ProtocolError {
                rank,
                reason: format!("{e}: {:?}", truncate(line)),
            }],
        }
    }

    /// Reports a line that could not even be framed (too long, not UTF-8).
    pub fn framing_error(&self, rank: u32, err: &WireError) -> Action {
        Action::ProtocolError {
            rank,
            reason: err.to_string(),
        }
    }

    fn handle_command(&mut self, rank: u32, cmd: &Command) -> Vec<Action> {
        let r = rank as usize;
        let phase = self.phase[r];
        let protocol_error = |reason: String| vec![Action::ProtocolError { rank, reason }];
        match (cmd.name(), phase) {
            ("abort", _) => vec![Action::Abort {
                rank,
                code: cmd.get_int("exitcode").unwrap_or(1) as i32,
                message: cmd.get("message").unwrap_or("").to_owned(),
            }],
            ("init", Phase::Fresh) => {
                if let Some(secret) = &self.info.secret {
                    if cmd.get("oxmpi_secret") != Some(secret.as_str()) {
                        return protocol_error(
                            "PMI init without this job's secret (connection refused)".into(),
                        );
                    }
                }
                if cmd.get_int("pmi_version") != Some(1) {
                    return protocol_error(format!(
                        "unsupported PMI version {:?}",
                        cmd.get("pmi_version")
                    ));
                }
                self.phase[r] = Phase::Ready;
                vec![reply(
                    rank,
                    Command::new("response_to_init")
                        .arg("pmi_version", 1)
                        .arg("pmi_subversion", 1)
                        .arg("rc", 0),
                )]
            }
            ("init", _) => protocol_error("init sent twice".into()),
            (_, Phase::Fresh) => protocol_error(format!("{} before init", cmd.name())),
            (_, Phase::Finalized) => protocol_error(format!("{} after finalize", cmd.name())),
            (_, Phase::InFence) => {
                protocol_error(format!("{} while waiting in barrier", cmd.name()))
            }
            ("get_maxes", _) => vec![reply(
                rank,
                Command::new("maxes")
                    .arg("rc", 0)
                    .arg("kvsname_max", crate::wire::MAX_KVSNAME)
                    .arg("keylen_max", MAX_KEY)
                    .arg("vallen_max", MAX_VALUE),
            )],
            ("get_my_kvsname", _) => vec![reply(
                rank,
                Command::new("my_kvsname")
                    .arg("rc", 0)
                    .arg("kvsname", &self.info.kvsname),
            )],
            ("get_universe_size", _) => vec![reply(
                rank,
                Command::new("universe_size")
                    .arg("rc", 0)
                    .arg("size", self.info.size),
            )],
            ("get_appnum", _) => vec![reply(
                rank,
                Command::new("appnum")
                    .arg("rc", 0)
                    .arg("appnum", self.info.appnum[r]),
            )],
            ("put", _) => self.put(rank, cmd),
            ("get", _) => self.get(rank, cmd),
            ("barrier_in", _) => self.barrier_in(rank),
            ("finalize", _) => {
                self.phase[r] = Phase::Finalized;
                vec![reply(rank, Command::new("finalize_ack").arg("rc", 0))]
            }
            (other, _) => protocol_error(format!("unknown PMI command {other:?}")),
        }
    }

    /// One block of a spawn; the whole request once its last block is in.
    fn spawn_block(&mut self, rank: u32, lines: &[String]) -> Vec<Action> {
        let r = rank as usize;
        let phase = self.phase[r];
        if phase != Phase::Ready {
            return vec![Action::ProtocolError {
                rank,
                reason: format!("spawn while {phase:?}"),
            }];
        }
        let block = match parse_block(lines) {
            Ok(b) => b,
            Err(msg) => {
                self.spawning[r] = SpawnRequest::default();
                return vec![self.spawn_result(rank, Err(msg))];
            }
        };
        let req = &mut self.spawning[r];
        if block.index != req.commands.len() + 1 {
            let got = req.commands.len();
            self.spawning[r] = SpawnRequest::default();
            return vec![Action::ProtocolError {
                rank,
                reason: format!(
                    "spawn block {} of {} after {got} block(s)",
                    block.index, block.total
                ),
            }];
        }
        req.commands.push(block.command);
        req.preput = block.preput;
        if req.total() > MAX_SPAWN_PROCS {
            self.spawning[r] = SpawnRequest::default();
            return vec![self.spawn_result(
                rank,
                Err(format!("spawn of more than {MAX_SPAWN_PROCS} processes")),
            )];
        }
        if block.index < block.total {
            return Vec::new();
        }
        let request = std::mem::take(&mut self.spawning[r]);
        vec![Action::Spawn { rank, request }]
    }

    fn check_kvsname(&self, cmd: &Command) -> Result<(), String> {
        match cmd.get("kvsname") {
            None => Ok(()),
            Some(k) if k == self.info.kvsname => Ok(()),
            Some(k) => Err(format!("unknown kvsname {k:?}")),
        }
    }

    fn put(&mut self, rank: u32, cmd: &Command) -> Vec<Action> {
        let (Some(key), Some(value)) = (cmd.get("key"), cmd.get("value")) else {
            return vec![Action::ProtocolError {
                rank,
                reason: "put without key or value".into(),
            }];
        };
        let result = self.check_kvsname(cmd).and_then(|()| {
            if key.is_empty() || key.len() > MAX_KEY {
                Err(format!("key length {} outside 1..={MAX_KEY}", key.len()))
            } else if self.committed.contains_key(key) || self.pending.contains_key(key) {
                Err(format!("duplicate key {key:?}"))
            } else {
                Ok(())
            }
        });
        let out = match result {
            Ok(()) => {
                self.pending.insert(key.to_owned(), value.to_owned());
                Command::new("put_result")
                    .arg("rc", 0)
                    .arg("msg", "success")
            }
            Err(msg) => Command::new("put_result").arg("rc", -1).arg("msg", msg),
        };
        vec![reply(rank, out)]
    }

    fn get(&mut self, rank: u32, cmd: &Command) -> Vec<Action> {
        let Some(key) = cmd.get("key") else {
            return vec![Action::ProtocolError {
                rank,
                reason: "get without key".into(),
            }];
        };
        let found = match self.check_kvsname(cmd) {
            Err(msg) => Err(msg),
            Ok(()) if key == PROCESS_MAPPING_KEY => Ok(self.mapping.as_str()),
            Ok(()) => self
                .committed
                .get(key)
                .map(String::as_str)
                .ok_or_else(|| format!("key {key:?} not found")),
        };
        let out = match found {
            Ok(v) => Command::new("get_result")
                .arg("rc", 0)
                .arg("msg", "success")
                .arg("value", v),
            Err(msg) => Command::new("get_result").arg("rc", -1).arg("msg", msg),
        };
        vec![reply(rank, out)]
    }

    fn barrier_in(&mut self, rank: u32) -> Vec<Action> {
        self.phase[rank as usize] = Phase::InFence;
        self.in_fence += 1;
        // Finalized ranks cannot join; a fence needs every rank that is still in the job.
        let active = self
            .phase
            .iter()
            .filter(|p| **p != Phase::Finalized)
            .count() as u32;
        if self.in_fence < active {
            return Vec::new();
        }
        self.committed.extend(self.pending.drain());
        self.in_fence = 0;
        let mut out = Vec::new();
        for (r, p) in self.phase.iter_mut().enumerate() {
            if *p == Phase::InFence {
                *p = Phase::Ready;
                out.push(reply(r as u32, Command::new("barrier_out").arg("rc", 0)));
            }
        }
        out
    }
}

fn truncate(line: &str) -> String {
    line.chars().take(80).collect()
}

/// Encodes host placement as MPICH's `PMI_process_mapping` vector:
/// `(vector,(first_node,node_count,ranks_per_node),...)`, one block per run of ranks laid out
/// the same way.
pub fn process_mapping(node_of: &[u32]) -> String {
    // Group maximal runs of consecutive ranks on consecutive nodes with equal block size.
    let mut blocks: Vec<(u32, u32, u32)> = Vec::new();
    let mut i = 0;
    while i < node_of.len() {
        let node = node_of[i];
        let mut run = 1;
        while i + run < node_of.len() && node_of[i + run] == node {
            run += 1;
        }
        match blocks.last_mut() {
            Some((start, count, per)) if *per == run as u32 && *start + *count == node => {
                *count += 1;
            }
            _ => blocks.push((node, 1, run as u32)),
        }
        i += run;
    }
    let mut s = String::from("(vector");
    for (start, count, per) in blocks {
        s.push_str(&format!(",({start},{count},{per})"));
    }
    s.push(')');
    s
}

/// Decodes a `PMI_process_mapping` vector into the host index of each of `size` ranks.
/// Returns `None` if the text is not a vector mapping or does not cover exactly `size` ranks.
pub fn parse_process_mapping(text: &str, size: usize) -> Option<Vec<u32>> {
    let body = text.trim().strip_prefix("(vector")?.strip_suffix(')')?;
    let mut nodes = Vec::with_capacity(size);
    for block in body.split("),").map(|b| b.trim_start_matches(',')) {
        let block = block.trim();
        if block.is_empty() {
            continue;
        }
        let inner = block.trim_start_matches('(').trim_end_matches(')');
        let nums: Vec<u32> = inner
            .split(',')
            .map(|n| n.trim().parse().ok())
            .collect::<Option<_>>()?;
        let [start, count, per] = nums[..] else {
            return None;
        };
        for node in start..start.checked_add(count)? {
            for _ in 0..per {
                nodes.push(node);
                if nodes.len() > size {
                    return None;
                }
            }
        }
    }
    (nodes.len() == size).then_some(nodes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(n: u32) -> Job {
        Job::new(JobInfo {
            kvsname: "kvs_test".into(),
            size: n,
            appnum: vec![0; n as usize],
            node_of: vec![0; n as usize],
            secret: Some("s3cret".into()),
        })
    }

    fn lines(actions: &[Action]) -> Vec<(u32, String)> {
        actions
            .iter()
            .map(|a| match a {
                Action::Reply { rank, line } => (*rank, line.clone()),
                other => panic!("unexpected action {other:?}"),
            })
            .collect()
    }

    fn init(j: &mut Job, r: u32) {
        let out = j.handle(
            r,
            "cmd=init pmi_version=1 pmi_subversion=1 oxmpi_secret=s3cret",
        );
        assert_eq!(
            lines(&out),
            vec![(
                r,
                "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0\n".into()
            )]
        );
    }

    #[test]
    fn init_requires_the_secret() {
        let mut j = job(1);
        let out = j.handle(
            0,
            "cmd=init pmi_version=1 pmi_subversion=1 oxmpi_secret=guess",
        );
        assert!(
            matches!(&out[0], Action::ProtocolError { rank: 0, reason } if reason.contains("secret"))
        );
        let out = j.handle(0, "cmd=init pmi_version=1 pmi_subversion=1");
        assert!(matches!(&out[0], Action::ProtocolError { .. }));
    }

    #[test]
    fn commands_before_init_are_errors() {
        let mut j = job(1);
        let out = j.handle(0, "cmd=get_maxes");
        assert!(
            matches!(&out[0], Action::ProtocolError { reason, .. } if reason.contains("before init"))
        );
    }

    #[test]
    fn puts_become_visible_only_after_the_fence() {
        let mut j = job(2);
        init(&mut j, 0);
        init(&mut j, 1);
        let out = j.handle(0, "cmd=put kvsname=kvs_test key=card-0 value=hello");
        assert!(lines(&out)[0].1.contains("rc=0"));
        let out = j.handle(1, "cmd=get kvsname=kvs_test key=card-0");
        assert!(lines(&out)[0].1.contains("rc=-1"), "visible before fence");
        assert!(j.handle(0, "cmd=barrier_in").is_empty());
        let out = j.handle(1, "cmd=barrier_in");
        let mut got = lines(&out);
        got.sort();
        assert_eq!(
            got,
            vec![
                (0, "cmd=barrier_out rc=0\n".into()),
                (1, "cmd=barrier_out rc=0\n".into())
            ]
        );
        let out = j.handle(1, "cmd=get kvsname=kvs_test key=card-0");
        assert_eq!(
            lines(&out)[0].1,
            "cmd=get_result rc=0 msg=success value=hello\n"
        );
    }

    #[test]
    fn a_put_after_the_fence_waits_for_the_next_one() {
        let mut j = job(2);
        init(&mut j, 0);
        init(&mut j, 1);
        j.handle(0, "cmd=barrier_in");
        j.handle(1, "cmd=barrier_in");
        j.handle(1, "cmd=put key=late value=1");
        let out = j.handle(0, "cmd=get key=late");
        assert!(lines(&out)[0].1.contains("rc=-1"));
        j.handle(0, "cmd=barrier_in");
        j.handle(1, "cmd=barrier_in");
        let out = j.handle(0, "cmd=get key=late");
        assert!(lines(&out)[0].1.contains("value=1"));
    }

    #[test]
    fn duplicate_and_foreign_kvs_puts_are_refused() {
        let mut j = job(1);
        init(&mut j, 0);
        j.handle(0, "cmd=put key=a value=1");
        let out = j.handle(0, "cmd=put key=a value=2");
        assert!(lines(&out)[0].1.contains("rc=-1"));
        let out = j.handle(0, "cmd=put kvsname=other key=b value=2");
        assert!(lines(&out)[0].1.contains("rc=-1"));
    }

    #[test]
    fn finalized_ranks_do_not_block_fences() {
        let mut j = job(2);
        init(&mut j, 0);
        init(&mut j, 1);
        assert!(j.in_session(1));
        let out = j.handle(1, "cmd=finalize");
        assert_eq!(lines(&out)[0].1, "cmd=finalize_ack rc=0\n");
        assert!(j.finalized(1));
        assert!(!j.in_session(1));
        let out = j.handle(0, "cmd=barrier_in");
        assert_eq!(lines(&out), vec![(0, "cmd=barrier_out rc=0\n".into())]);
    }

    #[test]
    fn answers_job_queries() {
        let mut j = Job::new(JobInfo {
            kvsname: "kvs_q".into(),
            size: 3,
            appnum: vec![0, 1, 1],
            node_of: vec![0, 0, 1],
            secret: None,
        });
        j.handle(2, "cmd=init pmi_version=1 pmi_subversion=1");
        let q = |j: &mut Job, l: &str| lines(&j.handle(2, l))[0].1.clone();
        assert_eq!(
            q(&mut j, "cmd=get_maxes"),
            "cmd=maxes rc=0 kvsname_max=256 keylen_max=64 vallen_max=1024\n"
        );
        assert_eq!(
            q(&mut j, "cmd=get_my_kvsname"),
            "cmd=my_kvsname rc=0 kvsname=kvs_q\n"
        );
        assert_eq!(
            q(&mut j, "cmd=get_universe_size"),
            "cmd=universe_size rc=0 size=3\n"
        );
        assert_eq!(q(&mut j, "cmd=get_appnum"), "cmd=appnum rc=0 appnum=1\n");
        assert!(
            q(&mut j, "cmd=get key=PMI_process_mapping").contains("value=(vector,(0,1,2),(1,1,1))")
        );
    }

    #[test]
    fn abort_and_protocol_errors_are_reported() {
        let mut j = job(1);
        init(&mut j, 0);
        assert_eq!(
            j.handle(0, "cmd=abort exitcode=7 message=bad\\ input"),
            vec![Action::Abort {
                rank: 0,
                code: 7,
                message: "bad input".into()
            }]
        );
        assert!(matches!(
            &j.handle(0, "cmd=frobnicate")[0],
            Action::ProtocolError { reason, .. } if reason.contains("frobnicate")
        ));
        assert!(matches!(
            &j.handle(0, "garbage")[0],
            Action::ProtocolError { .. }
        ));
        assert!(matches!(
            &j.handle(0, "cmd=put key=a")[0],
            Action::ProtocolError { .. }
        ));
        init_twice_is_error(&mut j);
    }

    fn init_twice_is_error(j: &mut Job) {
        let out = j.handle(
            0,
            "cmd=init pmi_version=1 pmi_subversion=1 oxmpi_secret=s3cret",
        );
        assert!(matches!(&out[0], Action::ProtocolError { .. }));
    }

    fn send_block(j: &mut Job, r: u32, block: &str) -> Vec<Action> {
        let mut out = Vec::new();
        for l in block.lines() {
            out.extend(j.handle(r, l));
        }
        out
    }

    fn two_commands() -> SpawnRequest {
        use crate::spawn::SpawnCommand;
        SpawnRequest {
            commands: vec![
                SpawnCommand {
                    execname: "a".into(),
                    nprocs: 2,
                    args: vec!["x y".into()],
                    info: vec![],
                },
                SpawnCommand {
                    execname: "b".into(),
                    nprocs: 1,
                    args: vec![],
                    info: vec![("host".into(), "localhost".into())],
                },
            ],
            preput: vec![("parent".into(), "kvs_test".into())],
        }
    }

    #[test]
    fn spawn_blocks_make_one_request_after_the_last() {
        let mut j = job(2);
        init(&mut j, 1);
        let req = two_commands();
        let first = crate::spawn::encode_block(&req, 0).unwrap();
        assert!(
            send_block(&mut j, 1, &first).is_empty(),
            "no reply before the last"
        );
        let second = crate::spawn::encode_block(&req, 1).unwrap();
        let out = send_block(&mut j, 1, &second);
        assert_eq!(
            out,
            vec![Action::Spawn {
                rank: 1,
                request: req.clone()
            }]
        );
        assert_eq!(
            lines(&[j.spawn_result(1, Ok(()))]),
            vec![(1, "cmd=spawn_result rc=0\n".into())]
        );
        let refused = lines(&[j.spawn_result(1, Err("no such\nprogram".into()))]);
        assert_eq!(
            refused,
            vec![(1, "cmd=spawn_result rc=-1 msg=no\\ suchprogram\n".into())]
        );
        // The rank can go on with ordinary commands, and spawn again.
        let out = j.handle(1, "cmd=get_appnum");
        assert_eq!(lines(&out).len(), 1);
        let out = send_block(&mut j, 1, &crate::spawn::encode_block(&req, 0).unwrap());
        assert!(out.is_empty());
    }

    #[test]
    fn bad_spawns_are_refused_or_protocol_errors() {
        let mut j = job(1);
        // Before init.
        let out = send_block(&mut j, 0, "mcmd=spawn\nnprocs=1\nexecname=x\nendcmd\n");
        assert!(
            matches!(&out[..], [Action::ProtocolError { .. }]),
            "{out:?}"
        );
        let mut j = job(1);
        init(&mut j, 0);
        // A malformed block is answered with rc=-1; the rank may go on.
        let out = send_block(&mut j, 0, "mcmd=spawn\nnprocs=0\nexecname=x\nendcmd\n");
        assert!(
            matches!(&out[..], [Action::Reply { line, .. }] if line.starts_with("cmd=spawn_result rc=-1")),
            "{out:?}"
        );
        // A block out of order breaks the protocol.
        let out = send_block(
            &mut j,
            0,
            "mcmd=spawn\nnprocs=1\nexecname=x\ntotspawns=2\nspawnssofar=2\nendcmd\n",
        );
        assert!(
            matches!(&out[..], [Action::ProtocolError { .. }]),
            "{out:?}"
        );
        // Another multi-line command is unknown.
        let mut j = job(1);
        init(&mut j, 0);
        let out = j.handle(0, "mcmd=publish");
        assert!(
            matches!(&out[..], [Action::ProtocolError { .. }]),
            "{out:?}"
        );
        // A block without end is bounded.
        let mut j = job(1);
        init(&mut j, 0);
        assert!(j.handle(0, "mcmd=spawn").is_empty());
        let mut last = Vec::new();
        for _ in 0..=crate::spawn::MAX_BLOCK_LINES {
            last = j.handle(0, "arg1=x");
        }
        assert!(
            matches!(&last[..], [Action::ProtocolError { .. }]),
            "{last:?}"
        );
    }

    #[test]
    fn preput_keys_are_readable_at_once() {
        let mut j = job(1);
        j.preput(&[("parent".into(), "p 1".into())]);
        init(&mut j, 0);
        let out = lines(&j.handle(0, "cmd=get key=parent"));
        assert_eq!(out[0].1, "cmd=get_result rc=0 msg=success value=p\\ 1\n");
    }

    #[test]
    fn process_mapping_round_trips() {
        for nodes in [
            vec![0, 0, 0, 0],
            vec![0, 0, 1, 1],
            vec![0, 1, 2, 3],
            vec![0, 0, 1, 2, 2],
            vec![0, 1, 0, 1],
            vec![3],
        ] {
            let text = process_mapping(&nodes);
            assert_eq!(
                parse_process_mapping(&text, nodes.len()),
                Some(nodes.clone()),
                "{text}"
            );
        }
        assert_eq!(process_mapping(&[0, 0, 1, 1]), "(vector,(0,2,2))");
        assert_eq!(
            parse_process_mapping("(vector,(0,2,2))", 3),
            None,
            "size mismatch"
        );
        assert_eq!(parse_process_mapping("garbage", 1), None);
        assert_eq!(parse_process_mapping("(vector,(0,x,1))", 1), None);
    }
}
