//! The wire between the head oxrun and a host's agent: length-prefixed binary frames over one
//! TCP connection.
//!
//! A frame is `len: u32 LE` (of what follows), `kind: u8`, then the kind's fields: integers as
//! `u32`/`i32` little endian, byte strings as a `u32` length and the bytes. The agent's first
//! frame must be [`Msg::Hello`] with the host's token (drawn at random per host and handed to
//! the agent on its stdin, never on a command line); the head answers with [`Msg::Job`].
//! Everything else relays what a local run does with pipes and sockets: PMI bytes, output
//! bytes, exit statuses, signals.

use std::ffi::OsString;
use std::os::unix::ffi::{OsStrExt, OsStringExt};

/// Largest frame accepted; larger ones mean a broken or hostile peer.
pub const MAX_FRAME: usize = 16 << 20;

/// One rank an agent starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RankJob {
    /// Its rank.
    pub rank: u32,
    /// The program as typed (resolved through `PATH` on the agent's host).
    pub program: OsString,
    /// Its arguments.
    pub args: Vec<OsString>,
    /// Extra environment (`-x`).
    pub env: Vec<(OsString, OsString)>,
}

/// What an agent needs to start its host's ranks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobSpec {
    /// The host's name as the head knows it (for messages).
    pub host: String,
    /// Number of ranks of the whole job.
    pub size: u32,
    /// The job key (`OXMPI_JOBKEY`).
    pub jobkey: String,
    /// The job secret (`OXMPI_SECRET`).
    pub secret: String,
    /// `--bind-to` and `--map-by` within a host (`binding::to_wire`).
    pub bind: u8,
    /// Whether to report each rank's binding.
    pub report_bindings: bool,
    /// The ranks of this host, in rank order.
    pub ranks: Vec<RankJob>,
}

/// Every message either side sends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Msg {
    /// Agent → head, first: the host's token.
    Hello(Vec<u8>),
    /// Head → agent: the job.
    Job(JobSpec),
    /// Agent → head: rank started as process `pid` on the agent's host.
    Started { rank: u32, pid: i32 },
    /// Either way: bytes of rank `rank`'s PMI connection.
    Pmi { rank: u32, data: Vec<u8> },
    /// Head → agent: close rank `rank`'s PMI connection.
    PmiClose { rank: u32 },
    /// Agent → head: output of rank `rank` (`err`: stderr).
    Output { rank: u32, err: bool, data: Vec<u8> },
    /// Agent → head: end of rank `rank`'s stdout or stderr.
    OutputEnd { rank: u32, err: bool },
    /// Agent → head: rank `rank` was reaped with raw wait status `status`.
    Exit { rank: u32, status: i32 },
    /// Agent → head: rank `rank` could not start; oxrun exits with `code`.
    SpawnFailed {
        rank: u32,
        code: i32,
        reason: String,
    },
    /// Agent → head: one line for oxrun's stderr.
    Note(String),
    /// Head → agent: send `sig` to every live rank's process group.
    Signal(i32),
    /// Head → agent: the job is over: remove its files and exit.
    Finish,
    /// Agent → head: cleaned up, exiting.
    Bye,
}

const HELLO: u8 = 1;
const JOB: u8 = 2;
const STARTED: u8 = 3;
const PMI: u8 = 4;
const PMI_CLOSE: u8 = 5;
const OUTPUT: u8 = 6;
const OUTPUT_END: u8 = 7;
const EXIT: u8 = 8;
const SPAWN_FAILED: u8 = 9;
const NOTE: u8 = 10;
const SIGNAL: u8 = 11;
const FINISH: u8 = 12;
const BYE: u8 = 13;

fn put_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}

fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    put_u32(out, b.len() as u32);
    out.extend_from_slice(b);
}

impl Msg {
    /// Appends the encoded frame to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        let start = out.len();
        put_u32(out, 0);
        match self {
            Msg::Hello(token) => {
                out.push(HELLO);
                put_bytes(out, token);
            }
            Msg::Job(j) => {
                out.push(JOB);
                put_bytes(out, j.host.as_bytes());
                put_u32(out, j.size);
                put_bytes(out, j.jobkey.as_bytes());
                put_bytes(out, j.secret.as_bytes());
                out.push(j.bind);
                out.push(u8::from(j.report_bindings));
                put_u32(out, j.ranks.len() as u32);
                for r in &j.ranks {
                    put_u32(out, r.rank);
                    put_bytes(out, r.program.as_bytes());
                    put_u32(out, r.args.len() as u32);
                    for a in &r.args {
                        put_bytes(out, a.as_bytes());
                    }
                    put_u32(out, r.env.len() as u32);
                    for (k, v) in &r.env {
                        put_bytes(out, k.as_bytes());
                        put_bytes(out, v.as_bytes());
                    }
                }
            }
            Msg::Started { rank, pid } => {
                out.push(STARTED);
                put_u32(out, *rank);
                put_u32(out, *pid as u32);
            }
            Msg::Pmi { rank, data } => {
                out.push(PMI);
                put_u32(out, *rank);
                put_bytes(out, data);
            }
            Msg::PmiClose { rank } => {
                out.push(PMI_CLOSE);
                put_u32(out, *rank);
            }
            Msg::Output { rank, err, data } => {
                out.push(OUTPUT);
                put_u32(out, *rank);
                out.push(u8::from(*err));
                put_bytes(out, data);
            }
            Msg::OutputEnd { rank, err } => {
                out.push(OUTPUT_END);
                put_u32(out, *rank);
                out.push(u8::from(*err));
            }
            Msg::Exit { rank, status } => {
                out.push(EXIT);
                put_u32(out, *rank);
                put_u32(out, *status as u32);
            }
            Msg::SpawnFailed { rank, code, reason } => {
                out.push(SPAWN_FAILED);
                put_u32(out, *rank);
                put_u32(out, *code as u32);
                put_bytes(out, reason.as_bytes());
            }
            Msg::Note(line) => {
                out.push(NOTE);
                put_bytes(out, line.as_bytes());
            }
            Msg::Signal(sig) => {
                out.push(SIGNAL);
                put_u32(out, *sig as u32);
            }
            Msg::Finish => out.push(FINISH),
            Msg::Bye => out.push(BYE),
        }
        let len = (out.len() - start - 4) as u32;
        out[start..start + 4].copy_from_slice(&len.to_le_bytes());
    }

    /// Decodes one frame's body (without its length prefix).
    pub fn decode(body: &[u8]) -> Result<Msg, String> {
        let mut c = Cursor { b: body, pos: 0 };
        let kind = c.u8()?;
        let msg = match kind {
            HELLO => Msg::Hello(c.bytes()?.to_vec()),
            JOB => {
                let host = c.string()?;
                let size = c.u32()?;
                let jobkey = c.string()?;
                let secret = c.string()?;
                let bind = c.u8()?;
                let report_bindings = c.u8()? != 0;
                let n = c.count()?;
                let mut ranks = Vec::with_capacity(n);
                for _ in 0..n {
                    let rank = c.u32()?;
                    let program = c.os()?;
                    let nargs = c.count()?;
                    let args = (0..nargs).map(|_| c.os()).collect::<Result<_, _>>()?;
                    let nenv = c.count()?;
                    let env = (0..nenv)
                        .map(|_| Ok((c.os()?, c.os()?)))
                        .collect::<Result<_, String>>()?;
                    ranks.push(RankJob {
                        rank,
                        program,
                        args,
                        env,
                    });
                }
                Msg::Job(JobSpec {
                    host,
                    size,
                    jobkey,
                    secret,
                    bind,
                    report_bindings,
                    ranks,
                })
            }
            STARTED => Msg::Started {
                rank: c.u32()?,
                pid: c.u32()? as i32,
            },
            PMI => Msg::Pmi {
                rank: c.u32()?,
                data: c.bytes()?.to_vec(),
            },
            PMI_CLOSE => Msg::PmiClose { rank: c.u32()? },
            OUTPUT => Msg::Output {
                rank: c.u32()?,
                err: c.u8()? != 0,
                data: c.bytes()?.to_vec(),
            },
            OUTPUT_END => Msg::OutputEnd {
                rank: c.u32()?,
                err: c.u8()? != 0,
            },
            EXIT => Msg::Exit {
                rank: c.u32()?,
                status: c.u32()? as i32,
            },
            SPAWN_FAILED => Msg::SpawnFailed {
                rank: c.u32()?,
                code: c.u32()? as i32,
                reason: c.string()?,
            },
            NOTE => Msg::Note(c.string()?),
            SIGNAL => Msg::Signal(c.u32()? as i32),
            FINISH => Msg::Finish,
            BYE => Msg::Bye,
            k => return Err(format!("unknown frame kind {k}")),
        };
        if c.pos != body.len() {
            return Err(format!("{} stray bytes after a frame", body.len() - c.pos));
        }
        Ok(msg)
    }
}

struct Cursor<'a> {
    b: &'a [u8],
    pos: usize,
}

impl Cursor<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], String> {
        if self.b.len() - self.pos < n {
            return Err("truncated frame".into());
        }
        let s = &self.b[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }
    fn u8(&mut self) -> Result<u8, String> {
        Ok(self.take(1)?[0])
    }
    fn u32(&mut self) -> Result<u32, String> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    /// A count of items, each at least 4 bytes: bounded by what is left, so a lying count
    /// cannot make us allocate.
    fn count(&mut self) -> Result<usize, String> {
        let n = self.u32()? as usize;
        if n > (self.b.len() - self.pos) / 4 {
            return Err("item count beyond the frame".into());
        }
        Ok(n)
    }
    fn bytes(&mut self) -> Result<&[u8], String> {
        let n = self.u32()? as usize;
        self.take(n)
    }
    fn string(&mut self) -> Result<String, String> {
        String::from_utf8(self.bytes()?.to_vec()).map_err(|_| "text is not UTF-8".to_string())
    }
    fn os(&mut self) -> Result<OsString, String> {
        Ok(OsString::from_vec(self.bytes()?.to_vec()))
    }
}

/// Bytes received on a connection, cut into frames.
#[derive(Debug, Default)]
pub struct FrameReader {
    buf: Vec<u8>,
    pos: usize,
}

impl FrameReader {
    /// Appends received bytes.
    pub fn extend(&mut self, data: &[u8]) {
        if self.pos > 0 && self.pos == self.buf.len() {
            self.buf.clear();
            self.pos = 0;
        }
        self.buf.extend_from_slice(data);
    }

    /// The next complete message, `Ok(None)` if more bytes are needed, or an error for a
    /// frame that is too large or malformed (the connection is then useless).
    pub fn next_msg(&mut self) -> Result<Option<Msg>, String> {
        let avail = &self.buf[self.pos..];
        if avail.len() < 4 {
            return Ok(None);
        }
        let len = u32::from_le_bytes([avail[0], avail[1], avail[2], avail[3]]) as usize;
        if len == 0 || len > MAX_FRAME {
            return Err(format!("bad frame length {len}"));
        }
        if avail.len() < 4 + len {
            return Ok(None);
        }
        let msg = Msg::decode(&avail[4..4 + len]);
        self.pos += 4 + len;
        if self.pos > (1 << 16) && self.pos * 2 > self.buf.len() {
            self.buf.drain(..self.pos);
            self.pos = 0;
        }
        msg.map(Some)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn all_kinds() -> Vec<Msg> {
        vec![
            Msg::Hello(b"tok".to_vec()),
            Msg::Job(JobSpec {
                host: "oxh1".into(),
                size: 4,
                jobkey: "0123456789abcdef".into(),
                secret: "s".into(),
                bind: 1,
                report_bindings: true,
                ranks: vec![RankJob {
                    rank: 2,
                    program: "prog".into(),
                    args: vec!["a".into(), OsString::from_vec(vec![0xff, b'x'])],
                    env: vec![("K".into(), "V=1".into())],
                }],
            }),
            Msg::Started { rank: 1, pid: 4242 },
            Msg::Pmi {
                rank: 3,
                data: b"cmd=init\n".to_vec(),
            },
            Msg::PmiClose { rank: 7 },
            Msg::Output {
                rank: 0,
                err: true,
                data: vec![0, 1, 2],
            },
            Msg::OutputEnd {
                rank: 0,
                err: false,
            },
            Msg::Exit { rank: 1, status: 9 },
            Msg::SpawnFailed {
                rank: 1,
                code: 127,
                reason: "not found".into(),
            },
            Msg::Note("hi".into()),
            Msg::Signal(15),
            Msg::Finish,
            Msg::Bye,
        ]
    }

    #[test]
    fn every_kind_round_trips_through_a_byte_stream() {
        let msgs = all_kinds();
        let mut wire = Vec::new();
        for m in &msgs {
            m.encode(&mut wire);
        }
        // Fed one byte at a time, the reader still yields exactly the messages.
        let mut r = FrameReader::default();
        let mut got = Vec::new();
        for b in &wire {
            r.extend(std::slice::from_ref(b));
            while let Some(m) = r.next_msg().unwrap() {
                got.push(m);
            }
        }
        assert_eq!(got, msgs);
    }

    #[test]
    fn bad_frames_are_errors() {
        let mut r = FrameReader::default();
        r.extend(&[0, 0, 0, 0]);
        assert!(r.next_msg().is_err());
        let mut r = FrameReader::default();
        r.extend(&u32::MAX.to_le_bytes());
        assert!(r.next_msg().unwrap_err().contains("length"));
        assert!(Msg::decode(&[99]).unwrap_err().contains("unknown"));
        assert!(Msg::decode(&[PMI, 1, 0, 0, 0, 9, 0, 0, 0])
            .unwrap_err()
            .contains("truncated"));
        assert!(Msg::decode(&[BYE, 0]).unwrap_err().contains("stray"));
        // A job claiming a billion ranks in a tiny frame is refused, not allocated.
        let mut body = vec![JOB];
        body.extend_from_slice(&0u32.to_le_bytes());
        body.extend_from_slice(&4u32.to_le_bytes());
        for _ in 0..2 {
            body.extend_from_slice(&0u32.to_le_bytes());
        }
        body.extend_from_slice(&[0, 0]);
        body.extend_from_slice(&1_000_000_000u32.to_le_bytes());
        assert!(Msg::decode(&body).unwrap_err().contains("count"));
    }

    proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..64)) {
            let _ = Msg::decode(&data);
            let mut r = FrameReader::default();
            r.extend(&data);
            while let Ok(Some(_)) = r.next_msg() {}
        }

        #[test]
        fn pmi_and_output_round_trip(rank in any::<u32>(), data in proptest::collection::vec(any::<u8>(), 0..300), err in any::<bool>()) {
            for m in [Msg::Pmi { rank, data: data.clone() }, Msg::Output { rank, err, data: data.clone() }] {
                let mut wire = Vec::new();
                m.encode(&mut wire);
                let mut r = FrameReader::default();
                r.extend(&wire);
                prop_assert_eq!(r.next_msg().unwrap(), Some(m));
            }
        }
    }
}
