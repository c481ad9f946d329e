//! Forwarding the ranks' output line by line, and oxrun's stdin to rank 0.
//!
//! Every rank's stdout and stderr is a pipe read by oxrun. Bytes are held per stream until a
//! newline arrives, and only whole lines are written to oxrun's own stdout/stderr, each with a
//! single `write`, so lines from different ranks are never torn or interleaved. Two cases
//! produce a line without its newline: a rank's final unterminated line at EOF and a line that
//! grows beyond [`MAX_PARTIAL`] bytes. Such a fragment is written as is; if the next bytes on
//! that output come from someone else, a newline is inserted first, so other ranks' lines still
//! start on a line of their own while a single rank's output stays byte-for-byte identical.
//!
//! With `--tag-output` every line is prefixed with `[RANK] `.
//!
//! A rank on another host has no pipe here: its agent relays the raw bytes, which go through
//! the same line assembly ([`RankStream::feed`]), so tagging and the no-tearing rule hold
//! across hosts.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};

use crate::sys;

/// Longest unterminated line held back before it is written anyway.
pub const MAX_PARTIAL: usize = 1 << 20;
/// Size of one read from a rank's pipe.
pub const READ_CHUNK: usize = 64 * 1024;
/// Reads per stream per event-loop turn, so that one chatty rank cannot starve the others.
const READS_PER_TURN: usize = 4;
/// Reads when draining a dead rank's pipe, so that a runaway descendant cannot stall us.
const READS_PER_DRAIN: usize = 256;

/// oxrun's stdout or stderr, shared by all ranks' streams of that kind.
#[derive(Debug)]
pub struct Sink {
    fd: RawFd,
    tag: bool,
    /// Whether the last byte written ended a line.
    at_line_start: bool,
    /// Who wrote the unfinished line, if any (`None`: oxrun itself).
    owner: Option<u32>,
    broken: bool,
}

impl Sink {
    /// A sink writing to `fd`, tagging lines with their rank if `tag`.
    pub fn new(fd: RawFd, tag: bool) -> Sink {
        Sink {
            fd,
            tag,
            at_line_start: true,
            owner: None,
            broken: false,
        }
    }

    /// Whether writing failed (e.g. the reader of oxrun's output went away).
    pub fn is_broken(&self) -> bool {
        self.broken
    }

    /// Writes `data` from `source` (`None`: oxrun itself): whole lines, possibly followed by
    /// one unfinished line.
    pub fn write(&mut self, source: Option<u32>, data: &[u8]) {
        if data.is_empty() || self.broken {
            return;
        }
        let mut out = Vec::with_capacity(data.len() + 16);
        if !self.at_line_start && self.owner != source {
            out.push(b'\n');
            self.at_line_start = true;
        }
        match source.filter(|_| self.tag) {
            Some(rank) => {
                let prefix = format!("[{rank}] ");
                for line in data.split_inclusive(|&b| b == b'\n') {
                    if self.at_line_start {
                        out.extend_from_slice(prefix.as_bytes());
                    }
                    out.extend_from_slice(line);
                    self.at_line_start = line.ends_with(b"\n");
                }
            }
            None => {
                out.extend_from_slice(data);
                self.at_line_start = data.ends_with(b"\n");
            }
        }
        self.owner = source;
        if sys::write_all(self.fd, &out).is_err() {
            self.broken = true;
        }
    }

    /// Writes one line of oxrun's own (a newline is added).
    pub fn message(&mut self, line: &str) {
        let mut s = String::with_capacity(line.len() + 1);
        s.push_str(line);
        s.push('\n');
        self.write(None, s.as_bytes());
    }
}

/// One of a rank's output pipes and the unfinished line read from it so far.
#[derive(Debug)]
pub struct RankStream {
    /// The pipe, or `None` for a remote rank's output relayed by its agent.
    fd: Option<OwnedFd>,
    partial: Vec<u8>,
}

impl RankStream {
    /// Wraps the (non-blocking) read end of a rank's pipe.
    pub fn new(fd: OwnedFd) -> RankStream {
        RankStream {
            fd: Some(fd),
            partial: Vec::new(),
        }
    }

    /// A stream of a remote rank, fed with [`feed`](Self::feed).
    pub fn remote() -> RankStream {
        RankStream {
            fd: None,
            partial: Vec::new(),
        }
    }

    /// The descriptor to poll (`None` for a remote rank's stream).
    pub fn raw_fd(&self) -> Option<RawFd> {
        self.fd.as_ref().map(|f| f.as_raw_fd())
    }

    /// Forwards relayed bytes of a remote rank: complete lines now, the rest later.
    pub fn feed(&mut self, rank: u32, sink: &mut Sink, data: &[u8]) {
        self.take(rank, sink, data);
    }

    /// End of a remote rank's stream: forwards its final unfinished line.
    pub fn end(&mut self, rank: u32, sink: &mut Sink) {
        self.finish(rank, sink);
    }

    /// Reads what is available (a bounded amount) and forwards complete lines from `rank` to
    /// `sink`. Returns `true` at end of file, after forwarding any final unfinished line.
    pub fn pump(&mut self, rank: u32, sink: &mut Sink, buf: &mut [u8]) -> bool {
        self.read_some(rank, sink, buf, READS_PER_TURN)
    }

    /// Like [`pump`](Self::pump) but reads until the pipe is empty (up to a generous bound):
    /// used when the rank has exited, so that its last words come before oxrun's.
    pub fn drain(&mut self, rank: u32, sink: &mut Sink, buf: &mut [u8]) -> bool {
        self.read_some(rank, sink, buf, READS_PER_DRAIN)
    }

    fn read_some(&mut self, rank: u32, sink: &mut Sink, buf: &mut [u8], reads: usize) -> bool {
        let Some(fd) = self.raw_fd() else {
            // Remote streams are fed, never read; their end is reported by the agent.
            return false;
        };
        for _ in 0..reads {
            match sys::read(fd, buf) {
                Ok(0) => {
                    self.finish(rank, sink);
                    return true;
                }
                Ok(n) => self.take(rank, sink, &buf[..n]),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return false,
                Err(_) => {
                    self.finish(rank, sink);
                    return true;
                }
            }
        }
        false
    }

    /// Forwards the complete lines of `chunk` (with what was held before) and holds the rest.
    fn take(&mut self, rank: u32, sink: &mut Sink, chunk: &[u8]) {
        match chunk.iter().rposition(|&b| b == b'\n') {
            Some(i) if self.partial.is_empty() => {
                sink.write(Some(rank), &chunk[..=i]);
                self.partial.extend_from_slice(&chunk[i + 1..]);
            }
            Some(i) => {
                self.partial.extend_from_slice(&chunk[..=i]);
                sink.write(Some(rank), &self.partial);
                self.partial.clear();
                self.partial.extend_from_slice(&chunk[i + 1..]);
            }
            None => self.partial.extend_from_slice(chunk),
        }
        if self.partial.len() > MAX_PARTIAL {
            sink.write(Some(rank), &self.partial);
            self.partial.clear();
        }
    }

    /// Forwards the final unfinished line, if any.
    fn finish(&mut self, rank: u32, sink: &mut Sink) {
        if !self.partial.is_empty() {
            sink.write(Some(rank), &self.partial);
            self.partial.clear();
        }
    }
}

/// Copies oxrun's stdin to rank 0's stdin, with backpressure: nothing more is read from stdin
/// until what was read has been written. End of file on stdin closes rank 0's stdin.
#[derive(Debug)]
pub struct StdinForward {
    target: Option<OwnedFd>,
    buf: Vec<u8>,
    pos: usize,
    source_open: bool,
}

impl StdinForward {
    /// Forwards to `target` (rank 0's stdin pipe, non-blocking); `None` forwards nothing.
    pub fn new(target: Option<OwnedFd>) -> StdinForward {
        StdinForward {
            source_open: target.is_some(),
            target,
            buf: Vec::new(),
            pos: 0,
        }
    }

    /// Whether to poll oxrun's stdin for reading.
    pub fn wants_read(&self) -> bool {
        self.source_open && self.target.is_some() && self.pos == self.buf.len()
    }

    /// The target to poll for writing, if there is something to write.
    pub fn wants_write(&self) -> Option<RawFd> {
        match &self.target {
            Some(fd) if self.pos < self.buf.len() => Some(fd.as_raw_fd()),
            _ => None,
        }
    }

    /// oxrun's stdin is readable (or at EOF).
    pub fn on_readable(&mut self) {
        self.buf.resize(READ_CHUNK, 0);
        self.pos = 0;
        match sys::read(0, &mut self.buf) {
            Ok(n) if n > 0 => {
                self.buf.truncate(n);
                self.on_writable();
            }
            // EOF, or an error we cannot do anything about: rank 0 sees end of file.
            _ => {
                self.buf.clear();
                self.close();
            }
        }
    }

    /// Rank 0's stdin is writable.
    pub fn on_writable(&mut self) {
        let Some(fd) = &self.target else {
            return;
        };
        while self.pos < self.buf.len() {
            // Write what fits now and keep the rest for the next POLLOUT.
            match write_some(fd.as_raw_fd(), &self.buf[self.pos..]) {
                Ok(n) => self.pos += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                // Rank 0 closed its stdin or exited: stop forwarding.
                Err(_) => {
                    self.close();
                    return;
                }
            }
        }
        self.buf.clear();
        self.pos = 0;
        if !self.source_open {
            self.target = None;
        }
    }

    /// Stops forwarding and closes rank 0's stdin.
    pub fn close(&mut self) {
        self.source_open = false;
        if self.pos >= self.buf.len() {
            self.target = None;
        }
    }

    /// Stops forwarding at once, dropping anything unwritten.
    pub fn abandon(&mut self) {
        self.source_open = false;
        self.target = None;
        self.buf.clear();
        self.pos = 0;
    }
}

/// One `write` to a non-blocking descriptor.
fn write_some(fd: RawFd, buf: &[u8]) -> io::Result<usize> {
    loop {
        match sys::write(fd, buf) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            r => return r,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::os::fd::FromRawFd;

    /// A sink writing into a pipe, and a way to read back what it wrote.
    fn pipe_sink(tag: bool) -> (Sink, std::fs::File, OwnedFd) {
        let (r, w) = pipe();
        (Sink::new(w.as_raw_fd(), tag), std::fs::File::from(r), w)
    }

    fn pipe() -> (OwnedFd, OwnedFd) {
        let mut fds = [0; 2];
        // SAFETY: test helper; `fds` is a valid array for pipe2.
        assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
        // SAFETY: pipe2 returned two fresh descriptors.
        unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) }
    }

    /// Everything written through `_sink` (which only borrowed `w`'s descriptor).
    fn read_all(_sink: Sink, mut r: std::fs::File, w: OwnedFd) -> String {
        drop(w);
        let mut s = String::new();
        r.read_to_string(&mut s).unwrap();
        s
    }

    #[test]
    fn tags_every_line() {
        let (mut s, r, w) = pipe_sink(true);
        s.write(Some(3), b"a\nb\n");
        s.message("oxrun: note");
        assert_eq!(read_all(s, r, w), "[3] a\n[3] b\noxrun: note\n");
    }

    #[test]
    fn unfinished_lines_get_a_newline_only_when_someone_else_writes() {
        let (mut s, r, w) = pipe_sink(false);
        s.write(Some(0), b"abc");
        s.write(Some(0), b"def\n");
        s.write(Some(1), b"xyz");
        s.write(Some(2), b"123\n");
        s.write(Some(2), b"tail");
        assert_eq!(read_all(s, r, w), "abcdef\nxyz\n123\ntail");
    }

    #[test]
    fn tagged_continuations_are_not_tagged_twice() {
        let (mut s, r, w) = pipe_sink(true);
        s.write(Some(0), b"ab");
        s.write(Some(0), b"c\nd");
        s.write(Some(1), b"e\n");
        assert_eq!(read_all(s, r, w), "[0] abc\n[0] d\n[1] e\n");
    }

    #[test]
    fn streams_forward_whole_lines_only() {
        let (mut s, r, w) = pipe_sink(false);
        let (pr, pw) = pipe();
        sys::set_nonblocking(pr.as_raw_fd()).unwrap();
        let mut st = RankStream::new(pr);
        let mut buf = vec![0; 7];
        sys::write_all(pw.as_raw_fd(), b"hello wor").unwrap();
        assert!(!st.pump(0, &mut s, &mut buf));
        s.write(Some(1), b"other\n");
        sys::write_all(pw.as_raw_fd(), b"ld\nlast").unwrap();
        drop(pw);
        assert!(st.drain(0, &mut s, &mut buf));
        assert_eq!(read_all(s, r, w), "other\nhello world\nlast");
    }

    #[test]
    fn runaway_lines_are_flushed() {
        let (pr, _pw) = pipe();
        let mut st = RankStream::new(pr);
        // Writing to fd -1 fails, which marks the sink broken: proof that a write happened.
        let mut sink = Sink::new(-1, false);
        st.take(0, &mut sink, &vec![b'x'; MAX_PARTIAL]);
        assert!(!sink.is_broken(), "a long but legal line is held back");
        st.take(0, &mut sink, b"xx");
        assert!(st.partial.is_empty());
        assert!(sink.is_broken(), "the runaway line was written");
    }
}
