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
use crate::wire::{Command, LineBuffer, WireError, MAX_KEY, MAX_LINE, MAX_SERVER_LINE};

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
        if r.name() != expect {
            return Err(PmiError::Protocol(format!(
                "expected {expect} in answer to {}, got {}",
                cmd.name(),
                r.name()
            )));
        }
        match r.get_int("rc") {
            Some(0) | None => Ok(r),
            Some(_) => Err(PmiError::Refused {
                request: cmd.name().to_owned(),
                msg: r.get("msg").unwrap_or("").to_owned(),
            }),
        }
    }

    /// Publishes `key=value`; visible to other ranks after the next [`fence`](Self::fence).
    pub fn put(&mut self, key: &str, value: &str) -> Result<(), PmiError> {
        check_key(key)?;
        let cmd = Command::new("put")
            .arg("kvsname", &self.kvsname)
            .arg("key", key)
            .arg("value", value);
        self.request(&cmd, "put_result").map(drop)
    }

    /// Waits until every rank has reached its fence; puts made before it become visible.
    pub fn fence(&mut self) -> Result<(), PmiError> {
        self.request(&Command::new("barrier_in"), "barrier_out")
            .map(drop)
    }

    /// Reads a published value; `Ok(None)` if no rank published `key` before the last fence.
    pub fn get(&mut self, key: &str) -> Result<Option<String>, PmiError> {
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

    /// Asks the launcher to end the whole job with `code`. Returns once the request is sent;
    /// the launcher kills this process too.
    pub fn abort(&mut self, code: i32, message: &str) -> Result<(), PmiError> {
        // The message is informational: cut it to fit one line rather than fail the abort.
        let mut msg: String = message
            .chars()
            .filter(|c| *c != '\n' && *c != '\0')
            .collect();
        while msg.len() > 512 {
            msg.pop();
        }
        self.send(
            &Command::new("abort")
                .arg("exitcode", code)
                .arg("message", msg),
        )
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
    fn oversized_put_is_an_error_not_a_panic() {
        let (mut streams, server) = serve(1, None);
        let s = streams.pop().unwrap();
        let mut c = Client::init(s, 0, 1, None).unwrap();
        let big = "x".repeat(2000);
        assert!(matches!(c.put("k", &big), Err(PmiError::Wire(_))));
        let long_key = "k".repeat(100);
        assert!(matches!(c.put(&long_key, "v"), Err(PmiError::Wire(_))));
        c.finalize().unwrap();
        drop(c);
        assert!(server.join().unwrap().is_empty());
    }
}
