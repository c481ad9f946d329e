//! Blocking PMI-1 client, as a rank uses it during start-up.
//!
//! The same code runs under `oxrun`, MPICH's Hydra and Slurm's `srun --mpi=pmi2`: all three hand
//! the rank a connected socket in `PMI_FD` and speak PMI-1 on it. Requests go one per write and
//! each waits for its reply, which is what Slurm's single-`read` server requires. Waiting happens
//! in a blocking `read`, so a fence costs no CPU however many ranks share a core.

use std::fmt;
use std::io::{self, Read, Write};
use std::os::fd::{FromRawFd, RawFd};
use std::os::unix::net::UnixStream;

use crate::server::{parse_process_mapping, PROCESS_MAPPING_KEY};
use crate::wire::{Command, LineBuffer, WireError, MAX_KEY, MAX_LINE, MAX_SERVER_LINE, MAX_VALUE};

/// Environment variable that carries the job secret from `oxrun` to its ranks.
pub const SECRET_ENV: &str = "OXMPI_SECRET";

/// A PMI failure during start-up or shutdown.
#[derive(Debug)]
pub enum PmiError {
    /// The socket failed.
    Io(io::Error),
    /// A line could not be encoded or the server sent an unparsable one.
    Wire(WireError),
    /// The server answered with a non-zero `rc`.
    Refused {
        /// Request that failed.
        request: String,
        /// The server's `msg`, if any.
        msg: String,
    },
    /// The environment or the server's answer made no sense.
    Protocol(String),
}

impl fmt::Display for PmiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PmiError::Io(e) => write!(f, "PMI connection: {e}"),
            PmiError::Wire(e) => write!(f, "PMI: {e}"),
            PmiError::Refused { request, msg } => {
                write!(f, "PMI server refused {request}: {msg}")
            }
            PmiError::Protocol(m) => write!(f, "PMI: {m}"),
        }
    }
}

impl std::error::Error for PmiError {}

impl From<io::Error> for PmiError {
    fn from(e: io::Error) -> Self {
        PmiError::Io(e)
    }
}

impl From<WireError> for PmiError {
    fn from(e: WireError) -> Self {
        PmiError::Wire(e)
    }
}

/// A connected, initialized PMI-1 client.
#[derive(Debug)]
pub struct Client {
    stream: UnixStream,
    inbox: LineBuffer,
    rank: u32,
    size: u32,
    appnum: i32,
    kvsname: String,
    finalized: bool,
    /// Started by oxrun (it proved the job secret), which prints abort messages itself.
    under_oxrun: bool,
    /// The abort message was printed already (by [`Client::announce_abort`]).
    announced: bool,
}

fn env_int(name: &str) -> Result<Option<i64>, PmiError> {
    match std::env::var(name) {
        Err(_) => Ok(None),
        Ok(v) => v
            .trim()
            .parse()
            .map(Some)
            .map_err(|_| PmiError::Protocol(format!("{name}={v:?} is not an integer"))),
    }
}

/// First character of every value the client itself encodes.
const MARK: &str = "~";
/// What a split value's head key holds before the number of pieces.
const SPLIT_MARK: &str = "~split~";
/// Prefix of a value stored percent-encoded.
const PCT_MARK: &str = "~pct~";

/// The form of `value` that goes on the wire. Slurm's PMI-1 server splits requests at every
/// space and knows no escapes, so a value holding a space or backslash (or starting with
/// [`MARK`], which would be ambiguous) is stored percent-encoded behind [`PCT_MARK`].
fn store_form(value: &str) -> Result<std::borrow::Cow<'_, str>, PmiError> {
    if value.contains(['\n', '\0']) {
        return Err(PmiError::Wire(WireError::UnencodableValue));
    }
    if !value.contains([' ', '\\']) && !value.starts_with(MARK) {
        return Ok(value.into());
    }
    let mut out = String::with_capacity(PCT_MARK.len() + value.len() + 16);
    out.push_str(PCT_MARK);
    for c in value.chars() {
        match c {
            ' ' => out.push_str("%20"),
            '\\' => out.push_str("%5C"),
            '%' => out.push_str("%25"),
            '~' => out.push_str("%7E"),
            _ => out.push(c),
        }
    }
    Ok(out.into())
}

/// The value a stored form stands for (see [`store_form`]).
fn read_form(stored: String) -> Result<String, PmiError> {
    let Some(body) = stored.strip_prefix(PCT_MARK) else {
        return Ok(stored);
    };
    let bad = || PmiError::Protocol(format!("bad percent-encoded PMI value {stored:?}"));
    let mut out = String::with_capacity(body.len());
    let mut rest = body;
    while let Some(i) = rest.find('%') {
        out.push_str(&rest[..i]);
        let code = rest.get(i + 1..i + 3).ok_or_else(bad)?;
        out.push(match code {
            "20" => ' ',
            "5C" => '\\',
            "25" => '%',
            "7E" => '~',
            _ => return Err(bad()),
        });
        rest = &rest[i + 3..];
    }
    out.push_str(rest);
    Ok(out)
}
/// `message` as one informational line: no newlines or NULs, at most 512 bytes (cut rather
/// than fail an abort).
fn one_line(message: &str) -> String {
    let mut msg: String = message
        .chars()
        .filter(|c| *c != '\n' && *c != '\0')
        .collect();
    while msg.len() > 512 {
        msg.pop();
    }
    msg
}

/// Most pieces one value may be split into (about 900 KB under Slurm's limits).
const MAX_PIECES: usize = 999;

/// The key of piece `i` (1-based) of a split value.
fn piece_key(key: &str, i: usize) -> String {
    format!("{key}/{i}")
}

/// KVS keys travel as values of `key=`, so the codec does not see their key limit.
fn check_key(key: &str) -> Result<(), PmiError> {
    if key.len() > MAX_KEY {
        return Err(PmiError::Wire(WireError::KeyTooLong(key.len())));
    }
    Ok(())
}

impl Client {
    /// Connects using the launcher's environment (`PMI_FD`, `PMI_RANK`, `PMI_SIZE`).
    /// Returns `Ok(None)` when no launcher is present: the process is a singleton.
    pub fn from_env() -> Result<Option<Client>, PmiError> {
        let Some(fd) = env_int("PMI_FD")? else {
            if std::env::var_os("PMI_PORT").is_some() {
                return Err(PmiError::Protocol(
                    "PMI_PORT (Hydra's port mode) is not supported; launch with PMI_FD".into(),
                ));
            }
            return Ok(None);
        };
        let rank = env_int("PMI_RANK")?
            .ok_or_else(|| PmiError::Protocol("PMI_FD set without PMI_RANK".into()))?;
        let size = env_int("PMI_SIZE")?
            .ok_or_else(|| PmiError::Protocol("PMI_FD set without PMI_SIZE".into()))?;
        if fd < 0 || fd > i32::MAX as i64 || size < 1 || rank < 0 || rank >= size {
            return Err(PmiError::Protocol(format!(
                "inconsistent launcher environment: PMI_FD={fd} PMI_RANK={rank} PMI_SIZE={size}"
            )));
        }
        // SAFETY: the launcher passed this descriptor to us for exclusive use by the PMI client;
        // nothing else in the process owns it. If the fd is not open, the first write fails
        // with EBADF and we report it.
        let stream = unsafe { UnixStream::from_raw_fd(fd as RawFd) };
        let secret = std::env::var(SECRET_ENV).ok();
        Client::init(stream, rank as u32, size as u32, secret.as_deref()).map(Some)
    }

    /// Runs the PMI-1 start-up exchange (init, get_maxes, get_my_kvsname, get_appnum) on an
    /// already-connected stream.
    pub fn init(
        stream: UnixStream,
        rank: u32,
        size: u32,
        secret: Option<&str>,
    ) -> Result<Client, PmiError> {
        let mut c = Client {
            stream,
            inbox: LineBuffer::new(MAX_SERVER_LINE),
            rank,
            size,
            appnum: 0,
            kvsname: String::new(),
            finalized: false,
            under_oxrun: secret.is_some(),
            announced: false,
        };
        let mut init = Command::new("init")
            .arg("pmi_version", 1)
            .arg("pmi_subversion", 1);
        if let Some(s) = secret {
            init = init.arg("oxmpi_secret", s);
        }
        let r = c.request(&init, "response_to_init")?;
        if r.get_int("pmi_version") != Some(1) {
            return Err(PmiError::Protocol(format!(
                "server speaks PMI version {:?}, not 1",
                r.get("pmi_version")
            )));
        }
        c.request(&Command::new("get_maxes"), "maxes")?;
        let r = c.request(&Command::new("get_my_kvsname"), "my_kvsname")?;
        c.kvsname = r
            .get("kvsname")
            .ok_or_else(|| PmiError::Protocol("my_kvsname without kvsname".into()))?
            .to_owned();
        let r = c.request(&Command::new("get_appnum"), "appnum")?;
        c.appnum = r.get_int("appnum").unwrap_or(0) as i32;
        Ok(c)
    }

    /// This process's rank in the job.
    pub fn rank(&self) -> u32 {
        self.rank
    }

    /// Number of ranks in the job.
    pub fn size(&self) -> u32 {
        self.size
    }

    /// MPMD application index (`-1` from servers that do not track it).
    pub fn appnum(&self) -> i32 {
        self.appnum
    }

    /// The job's KVS name.
    pub fn kvsname(&self) -> &str {
        &self.kvsname
    }

    fn send(&mut self, cmd: &Command) -> Result<(), PmiError> {
        let line = cmd.encode(MAX_LINE)?;
        self.stream.write_all(line.as_bytes())?;
        Ok(())
    }

    fn recv(&mut self) -> Result<Command, PmiError> {
        let mut buf = [0u8; 1024];
        loop {
            if let Some(line) = self.inbox.next_line()? {
                return Ok(Command::parse(&line)?);
            }
            let n = loop {
                match self.stream.read(&mut buf) {
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    r => break r?,
                }
            };
            if n == 0 {
                return Err(PmiError::Io(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "launcher closed the PMI connection",
                )));
            }
            self.inbox.extend(&buf[..n]);
        }
    }

    fn request(&mut self, cmd: &Command, expect: &str) -> Result<Command, PmiError> {
        self.send(cmd)?;
        let r = self.recv()?;
        self.check_reply(r, cmd.name(), expect)
    }

    fn check_reply(&self, r: Command, request: &str, expect: &str) -> Result<Command, PmiError> {
        if r.name() != expect {
            return Err(PmiError::Protocol(format!(
                "expected {expect} in answer to {request}, got {}",
                r.name()
            )));
        }
        match r.get_int("rc") {
            Some(0) | None => Ok(r),
            Some(_) => Err(PmiError::Refused {
                request: request.to_owned(),
                msg: r.get("msg").unwrap_or("").to_owned(),
            }),
        }
    }

    /// Publishes `key=value`; visible to other ranks after the next [`fence`](Self::fence).
    ///
    /// Values with spaces or backslashes travel percent-encoded (Slurm's server cannot take
    /// them). A value too long for one request (Slurm takes at most 1024 bytes per value and
    /// per line) is split: `key` then holds `~split~N` and the pieces go under `key/1` ..
    /// `key/N`; [`get`](Self::get) puts them back together. Any launcher stores the pieces,
    /// since they are ordinary keys.
    pub fn put(&mut self, key: &str, value: &str) -> Result<(), PmiError> {
        check_key(key)?;
        let stored = store_form(value)?;
        let value = stored.as_ref();
        if !value.starts_with(MARK) {
            if let Ok(line) = self.put_command(key, value).encode(MAX_LINE) {
                return self.put_line(&line);
            }
        }
        let pieces = self.split_value(key, value)?;
        for (i, piece) in pieces.iter().enumerate() {
            let line = self
                .put_command(&piece_key(key, i + 1), piece)
                .encode(MAX_LINE)?;
            self.put_line(&line)?;
        }
        let head = format!("{SPLIT_MARK}{}", pieces.len());
        let line = self.put_command(key, &head).encode(MAX_LINE)?;
        self.put_line(&line)
    }

    fn put_command(&self, key: &str, value: &str) -> Command {
        Command::new("put")
            .arg("kvsname", &self.kvsname)
            .arg("key", key)
            .arg("value", value)
    }

    fn put_line(&mut self, line: &str) -> Result<(), PmiError> {
        self.stream.write_all(line.as_bytes())?;
        let r = self.recv()?;
        self.check_reply(r, "put", "put_result").map(drop)
    }

    /// Cuts `value` into pieces whose `put` lines each fit one request, at char boundaries.
    fn split_value<'v>(&self, key: &str, value: &'v str) -> Result<Vec<&'v str>, PmiError> {
        let longest_key = piece_key(key, MAX_PIECES);
        check_key(&longest_key)?;
        let mut pieces = Vec::new();
        let mut rest = value;
        while !rest.is_empty() {
            let mut end = rest.len().min(MAX_VALUE);
            loop {
                while !rest.is_char_boundary(end) {
                    end -= 1;
                }
                match self
                    .put_command(&longest_key, &rest[..end])
                    .encode(MAX_LINE)
                {
                    Ok(_) => break,
                    Err(WireError::LineTooLong(_) | WireError::ValueTooLong(_)) => {}
                    Err(e) => return Err(e.into()),
                }
                if end <= 1 {
                    // Even one character does not fit: the KVS name alone fills the line.
                    return Err(PmiError::Wire(WireError::LineTooLong(MAX_LINE)));
                }
                end = end * 3 / 4;
            }
            pieces.push(&rest[..end]);
            rest = &rest[end..];
            if pieces.len() > MAX_PIECES {
                return Err(PmiError::Wire(WireError::ValueTooLong(value.len())));
            }
        }
        Ok(pieces)
    }

    /// Waits until every rank has reached its fence; puts made before it become visible.
    pub fn fence(&mut self) -> Result<(), PmiError> {
        self.request(&Command::new("barrier_in"), "barrier_out")
            .map(drop)
    }

    /// Reads a published value; `Ok(None)` if no rank published `key` before the last fence.
    /// A value [`put`](Self::put) split into pieces comes back whole.
    pub fn get(&mut self, key: &str) -> Result<Option<String>, PmiError> {
        let Some(head) = self.get_one(key)? else {
            return Ok(None);
        };
        let Some(count) = head.strip_prefix(SPLIT_MARK) else {
            return read_form(head).map(Some);
        };
        let count: usize = count
            .parse()
            .ok()
            .filter(|n| (1..=MAX_PIECES).contains(n))
            .ok_or_else(|| PmiError::Protocol(format!("{key}: bad split header {head:?}")))?;
        let mut value = String::new();
        for i in 1..=count {
            let piece = self.get_one(&piece_key(key, i))?.ok_or_else(|| {
                PmiError::Protocol(format!("{key}: piece {i} of {count} is missing"))
            })?;
            value.push_str(&piece);
        }
        read_form(value).map(Some)
    }

    fn get_one(&mut self, key: &str) -> Result<Option<String>, PmiError> {
        check_key(key)?;
        let cmd = Command::new("get")
            .arg("kvsname", &self.kvsname)
            .arg("key", key);
        match self.request(&cmd, "get_result") {
            Ok(r) => Ok(Some(r.get("value").unwrap_or("").to_owned())),
            Err(PmiError::Refused { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The host index of every rank, from the `PMI_process_mapping` job attribute.
    /// `Ok(None)` if the launcher does not provide a usable mapping.
    pub fn process_mapping(&mut self) -> Result<Option<Vec<u32>>, PmiError> {
        let size = self.size as usize;
        Ok(self
            .get(PROCESS_MAPPING_KEY)?
            .and_then(|text| parse_process_mapping(&text, size)))
    }

    /// Whether the launcher is oxrun (which ends the job with an aborting rank's code and
    /// prints its message itself).
    pub fn under_oxrun(&self) -> bool {
        self.under_oxrun
    }

    /// Prints, once, that this rank aborts the job with `code`, unless oxrun (which prints it
    /// itself) is the launcher: Slurm and Hydra end the job without saying why.
    pub fn announce_abort(&mut self, code: i32, message: &str) {
        if self.under_oxrun || self.announced {
            return;
        }
        self.announced = true;
        let msg = one_line(message);
        let why = if msg.is_empty() {
            String::new()
        } else {
            format!(": {msg}")
        };
        eprintln!(
            "oxmpi: rank {} aborts the job with code {code}{why}",
            self.rank
        );
    }

    /// Asks the launcher to end the whole job with `code`. Returns once the request is sent;
    /// the launcher kills this process too.
    pub fn abort(&mut self, code: i32, message: &str) -> Result<(), PmiError> {
        self.announce_abort(code, message);
        self.send(
            &Command::new("abort")
                .arg("exitcode", code)
                .arg("message", one_line(message)),
        )
    }

    /// Asks the launcher to start `req` as a new job (`MPI_Comm_spawn`), one block per
    /// command, and waits for its answer. A launcher that cannot spawn answers with a
    /// non-zero `rc`: [`PmiError::Refused`].
    pub fn spawn(&mut self, req: &crate::spawn::SpawnRequest) -> Result<(), PmiError> {
        if req.commands.is_empty() {
            return Err(PmiError::Protocol("spawn of no command".into()));
        }
        // Encode every block before sending any, so a bad one leaves the server untouched.
        let blocks = (0..req.commands.len())
            .map(|i| crate::spawn::encode_block(req, i))
            .collect::<Result<Vec<_>, _>>()?;
        for b in &blocks {
            self.stream.write_all(b.as_bytes())?;
        }
        let r = self.recv()?;
        self.check_reply(r, "spawn", "spawn_result").map(drop)
    }

    /// Whether the launcher started this process with `spawn` (`PMI_SPAWNED=1`).
    pub fn spawned() -> bool {
        std::env::var("PMI_SPAWNED").is_ok_and(|v| v.trim() == "1")
    }

    /// Tells the launcher this rank is done with PMI. Idempotent.
    pub fn finalize(&mut self) -> Result<(), PmiError> {
        if self.finalized {
            return Ok(());
        }
        self.finalized = true;
        self.request(&Command::new("finalize"), "finalize_ack")
            .map(drop)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::{Action, Job, JobInfo};
    use std::thread;

    /// Serves `job` for several clients over socketpairs, one thread per connection, all
    /// sharing the job state the way oxrun's event loop does.
    fn serve(n: u32, secret: Option<&str>) -> (Vec<UnixStream>, thread::JoinHandle<Vec<Action>>) {
        let job = Job::new(JobInfo {
            kvsname: "kvs_unit".into(),
            size: n,
            appnum: vec![0; n as usize],
            node_of: (0..n).map(|r| r / 2).collect(),
            secret: secret.map(str::to_owned),
        });
        let mut clients = Vec::new();
        let mut servers = Vec::new();
        for _ in 0..n {
            let (a, b) = UnixStream::pair().unwrap();
            clients.push(a);
            servers.push(b);
        }
        let h = thread::spawn(move || {
            let mut job = job;
            let mut bufs: Vec<LineBuffer> =
                (0..n).map(|_| LineBuffer::new(MAX_SERVER_LINE)).collect();
            let mut errors = Vec::new();
            for s in &servers {
                s.set_nonblocking(true).unwrap();
            }
            let mut open = vec![true; n as usize];
            while open.iter().any(|o| *o) {
                let mut idle = true;
                for r in 0..n as usize {
                    if !open[r] {
                        continue;
                    }
                    let mut b = [0u8; 256];
                    match servers[r].read(&mut b) {
                        Ok(0) => open[r] = false,
                        Ok(k) => {
                            idle = false;
                            bufs[r].extend(&b[..k]);
                            while let Ok(Some(line)) = bufs[r].next_line() {
                                for a in job.handle(r as u32, &line) {
                                    match a {
                                        Action::Reply { rank, line } => servers[rank as usize]
                                            .write_all(line.as_bytes())
                                            .unwrap(),
                                        other => {
                                            errors.push(other);
                                            open[r] = false;
                                        }
                                    }
                                }
                            }
                        }
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                        Err(_) => open[r] = false,
                    }
                }
                if idle {
                    thread::sleep(std::time::Duration::from_millis(1));
                }
            }
            errors
        });
        (clients, h)
    }

    #[test]
    fn ranks_exchange_cards_through_a_fence() {
        let n = 4;
        let (streams, server) = serve(n, Some("k"));
        let handles: Vec<_> = streams
            .into_iter()
            .enumerate()
            .map(|(r, s)| {
                thread::spawn(move || {
                    let mut c = Client::init(s, r as u32, n, Some("k")).unwrap();
                    assert_eq!(c.kvsname(), "kvs_unit");
                    c.put(&format!("card-{r}"), &format!("shm:seg {r}"))
                        .unwrap();
                    c.fence().unwrap();
                    for p in 0..n {
                        assert_eq!(
                            c.get(&format!("card-{p}")).unwrap().as_deref(),
                            Some(format!("shm:seg {p}").as_str())
                        );
                    }
                    assert_eq!(c.get("nobody").unwrap(), None);
                    assert_eq!(c.process_mapping().unwrap(), Some(vec![0, 0, 1, 1]));
                    c.finalize().unwrap();
                    c.finalize().unwrap();
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        assert!(server.join().unwrap().is_empty());
    }

    #[test]
    fn wrong_secret_is_refused() {
        let (mut streams, server) = serve(1, Some("right"));
        let s = streams.pop().unwrap();
        let err = Client::init(s, 0, 1, Some("wrong")).unwrap_err();
        assert!(matches!(err, PmiError::Io(_)), "{err}");
        let errors = server.join().unwrap();
        assert!(
            matches!(&errors[0], Action::ProtocolError { reason, .. } if reason.contains("secret"))
        );
    }

    #[test]
    fn large_values_are_split_and_joined() {
        let (mut streams, server) = serve(1, None);
        let s = streams.pop().unwrap();
        let mut c = Client::init(s, 0, 1, None).unwrap();
        // Spaces and backslashes double in size on the wire; multi-byte characters must not
        // be cut.
        let big: String = (0..3000)
            .map(|i| match i % 7 {
                0 => ' ',
                1 => '\\',
                2 => 'é',
                _ => char::from(b'a' + (i % 26) as u8),
            })
            .collect();
        c.put("big", &big).unwrap();
        let exact = "y".repeat(MAX_VALUE);
        c.put("exact", &exact).unwrap();
        // Values that look like the client's own encodings read back as they were.
        c.put("tricky", "~split~3").unwrap();
        c.put("pct", "~pct~%20 100%").unwrap();
        c.put("small", "plain value").unwrap();
        c.fence().unwrap();
        assert_eq!(c.get("big").unwrap().as_deref(), Some(big.as_str()));
        assert!(c.get_one("big/1").unwrap().unwrap().len() < big.len());
        assert_eq!(c.get("exact").unwrap().as_deref(), Some(exact.as_str()));
        assert_eq!(c.get("tricky").unwrap().as_deref(), Some("~split~3"));
        assert_eq!(c.get("pct").unwrap().as_deref(), Some("~pct~%20 100%"));
        // On the wire: no space and no backslash in any stored piece (Slurm cannot take them).
        for key in ["big", "big/1", "big/2", "pct"] {
            let raw = c.get_one(key).unwrap().unwrap();
            assert!(!raw.contains([' ', '\\']), "{key}: {raw:?}");
        }
        assert_eq!(c.get("small").unwrap().as_deref(), Some("plain value"));
        c.finalize().unwrap();
        drop(c);
        assert!(server.join().unwrap().is_empty());
    }

    #[test]
    fn oversized_put_is_an_error_not_a_panic() {
        let (mut streams, server) = serve(1, None);
        let s = streams.pop().unwrap();
        let mut c = Client::init(s, 0, 1, None).unwrap();
        let huge = "x".repeat(MAX_VALUE * (MAX_PIECES + 1));
        assert!(matches!(c.put("k", &huge), Err(PmiError::Wire(_))));
        // No room for the pieces' keys.
        let key62 = "k".repeat(62);
        assert!(matches!(
            c.put(&key62, &"x".repeat(2000)),
            Err(PmiError::Wire(_))
        ));
        assert!(matches!(c.put("k", "a\nb"), Err(PmiError::Wire(_))));
        let long_key = "k".repeat(100);
        assert!(matches!(c.put(&long_key, "v"), Err(PmiError::Wire(_))));
        c.finalize().unwrap();
        drop(c);
        assert!(server.join().unwrap().is_empty());
    }
}
