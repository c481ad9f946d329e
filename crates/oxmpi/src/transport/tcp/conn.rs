//! One TCP connection: a nonblocking socket with TCP_NODELAY, a send queue and a receive
//! buffer that frames are parsed from in place.
//!
//! A send writes straight to the socket when nothing is queued (one `writev` of frame header,
//! protocol header and payload, or one `send` of a small frame gathered on the stack); what the socket does not take (a partial write, `EAGAIN`) is
//! copied into the queue and written as the socket drains. The receive buffer holds at least
//! two whole frames, so one read usually brings several small ones.

use std::io::{self, IoSlice, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::os::fd::{AsRawFd, RawFd};

use super::super::MAX_HDR;
use super::frame::{FrameHdr, FRAME_HDR};

/// Most bytes one ordinary read takes: a large payload behind a frame header is then mostly
/// read straight to its place (see [`Landing`]) instead of into the receive buffer.
const READ_MAX: usize = 64 << 10;
/// The read after a landing: likely the next chunk's header, with as little payload as may be.
const READ_AFTER_LANDING: usize = 4 << 10;
/// Frames up to this size are copied together and written with one `send`, not a `writev`.
pub const SMALL_FRAME: usize = 256;

/// A frame whose payload is being read straight into memory the protocol named
/// ([`Handler::place`](crate::transport::Handler::place)), not into the receive buffer.
#[derive(Debug)]
pub struct Landing {
    /// The frame's header.
    pub fh: FrameHdr,
    /// Its protocol header.
    pub hdr: [u8; MAX_HDR],
    /// Where the payload goes.
    pub dst: *mut u8,
    /// Payload bytes already there.
    pub got: usize,
    /// The place was withdrawn: the rest is read and dropped.
    pub discard: bool,
}

/// What a read found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fill {
    /// `n` new bytes.
    Got(usize),
    /// Nothing now.
    Empty,
    /// The peer closed its side.
    Closed,
}

/// How long sent data may stay unacknowledged before the kernel fails the connection
/// (`TCP_USER_TIMEOUT`). Without it a rail whose link goes down (cable, `ip link set down`)
/// retransmits for about 15 minutes before any error, and its fragments never move to the
/// other rails.
pub const STALL_TIMEOUT_MS: u32 = 5_000;

/// Sets `TCP_USER_TIMEOUT` on `sock` (at connection setup only).
fn set_user_timeout(sock: &TcpStream, ms: u32) -> io::Result<()> {
    let v: libc::c_uint = ms;
    // SAFETY: the descriptor is owned by `sock`, open for this call; the option value is a
    // c_uint that lives across the call and whose size is passed with it.
    let rc = unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_USER_TIMEOUT,
            (&v as *const libc::c_uint).cast(),
            std::mem::size_of::<libc::c_uint>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// A connection's socket and buffers.
#[derive(Debug)]
pub struct Conn {
    sock: TcpStream,
    tx: Vec<u8>,
    tx_head: usize,
    rx: Vec<u8>,
    rx_start: usize,
    rx_end: usize,
    /// A payload being read to its place; the receive buffer is empty meanwhile.
    pub landing: Option<Landing>,
    /// The next read follows a landing (kept short).
    after_landing: bool,
}

fn again(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
    )
}

impl Conn {
    /// Wraps `sock` (made nonblocking, with TCP_NODELAY) with a receive buffer of `rx_bytes`.
    pub fn new(sock: TcpStream, rx_bytes: usize) -> io::Result<Conn> {
        sock.set_nonblocking(true)?;
        sock.set_nodelay(true)?;
        set_user_timeout(&sock, STALL_TIMEOUT_MS)?;
        Ok(Conn {
            sock,
            tx: Vec::new(),
            tx_head: 0,
            rx: vec![0; rx_bytes],
            rx_start: 0,
            rx_end: 0,
            landing: None,
            after_landing: false,
        })
    }

    /// The socket's descriptor (for epoll).
    pub fn fd(&self) -> RawFd {
        self.sock.as_raw_fd()
    }

    /// Bytes waiting in the send queue.
    #[inline]
    pub fn queued(&self) -> usize {
        self.tx.len() - self.tx_head
    }

    /// Appends `parts` to the send queue without writing.
    pub fn push(&mut self, parts: &[&[u8]]) {
        if self.tx_head > 0 && self.tx_head == self.tx.len() {
            self.tx.clear();
            self.tx_head = 0;
        }
        for p in parts {
            self.tx.extend_from_slice(p);
        }
    }

    /// Sends `parts` in order after anything queued: written now if the queue is empty, the
    /// rest queued. An error means the connection is broken.
    #[inline]
    pub fn send(&mut self, parts: &[&[u8]]) -> io::Result<()> {
        if self.queued() > 0 {
            self.push(parts);
            return self.flush().map(|_| ());
        }
        let total: usize = parts.iter().map(|p| p.len()).sum();
        if total <= SMALL_FRAME {
            return self.send_small(parts, total);
        }
        let slices: [IoSlice<'_>; 3] = [
            IoSlice::new(parts.first().copied().unwrap_or(&[])),
            IoSlice::new(parts.get(1).copied().unwrap_or(&[])),
            IoSlice::new(parts.get(2).copied().unwrap_or(&[])),
        ];
        debug_assert!(parts.len() <= 3);
        let mut done = match self.sock.write_vectored(&slices) {
            Ok(n) => n,
            Err(e) if again(&e) => 0,
            Err(e) => return Err(e),
        };
        if done == total {
            return Ok(());
        }
        for p in parts {
            if done >= p.len() {
                done -= p.len();
            } else {
                self.tx.extend_from_slice(&p[done..]);
                done = 0;
            }
        }
        Ok(())
    }

    /// [`send`](Self::send) of a small frame with an empty queue: gathered on the stack and
    /// written with one `send`, which costs less than a `writev` of its parts.
    #[inline]
    fn send_small(&mut self, parts: &[&[u8]], total: usize) -> io::Result<()> {
        let mut buf = [0u8; SMALL_FRAME];
        let mut at = 0;
        for p in parts {
            buf[at..at + p.len()].copy_from_slice(p);
            at += p.len();
        }
        let done = match self.sock.write(&buf[..total]) {
            Ok(n) => n,
            Err(e) if again(&e) => 0,
            Err(e) => return Err(e),
        };
        self.tx.extend_from_slice(&buf[done..total]);
        Ok(())
    }

    /// Writes queued bytes while the socket takes them; returns whether the queue is empty.
    pub fn flush(&mut self) -> io::Result<bool> {
        while self.tx_head < self.tx.len() {
            match self.sock.write(&self.tx[self.tx_head..]) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => self.tx_head += n,
                Err(e) if again(&e) => return Ok(false),
                Err(e) => return Err(e),
            }
        }
        self.tx.clear();
        self.tx_head = 0;
        Ok(true)
    }

    /// Reads once into the receive buffer, first moving a partial frame to its front if the
    /// space after it is short.
    pub fn fill(&mut self) -> io::Result<Fill> {
        if self.rx_start == self.rx_end {
            self.rx_start = 0;
            self.rx_end = 0;
        } else if self.rx.len() - self.rx_end < self.rx.len() / 2 {
            self.rx.copy_within(self.rx_start..self.rx_end, 0);
            self.rx_end -= self.rx_start;
            self.rx_start = 0;
        }
        let cap = if std::mem::take(&mut self.after_landing) {
            READ_AFTER_LANDING
        } else {
            READ_MAX
        };
        let to = self.rx.len().min(self.rx_end + cap);
        match self.sock.read(&mut self.rx[self.rx_end..to]) {
            Ok(0) => Ok(Fill::Closed),
            Ok(n) => {
                self.rx_end += n;
                Ok(Fill::Got(n))
            }
            Err(e) if again(&e) => Ok(Fill::Empty),
            Err(e) => Err(e),
        }
    }

    /// Reads the payload of the [`landing`](Self::landing) on: into its place, or dropped once
    /// the place is withdrawn. `Got(n)`: `n` more bytes are there; the landing is done when
    /// `got` reaches the frame's payload length, and the read after it is kept short.
    ///
    /// # Safety
    /// Unless the landing is `discard`, `dst + got .. dst + len` must be valid for writes and
    /// not otherwise accessed during the call (the protocol's place answer stands).
    pub unsafe fn land(&mut self) -> io::Result<Fill> {
        let Some(l) = self.landing.as_mut() else {
            return Ok(Fill::Empty);
        };
        let left = l.fh.len as usize - l.got;
        let n = if l.discard {
            // Nothing is buffered while landing: the receive buffer is scratch space.
            let k = left.min(self.rx.len());
            match self.sock.read(&mut self.rx[..k]) {
                Ok(n) => n as isize,
                Err(e) if again(&e) => return Ok(Fill::Empty),
                Err(e) => return Err(e),
            }
        } else {
            // SAFETY: the caller guarantees `dst + got` is valid for `left` bytes of writes;
            // the descriptor is owned by `sock`. A failed read writes nothing.
            unsafe { libc::recv(self.sock.as_raw_fd(), l.dst.add(l.got).cast(), left, 0) }
        };
        match n {
            0 if left > 0 => Ok(Fill::Closed),
            n if n >= 0 => {
                l.got += n as usize;
                if l.got == l.fh.len as usize {
                    self.after_landing = true;
                }
                Ok(Fill::Got(n as usize))
            }
            _ => {
                let e = io::Error::last_os_error();
                if again(&e) {
                    Ok(Fill::Empty)
                } else {
                    Err(e)
                }
            }
        }
    }

    /// Takes the first `n` unparsed bytes if they have arrived (the accept byte).
    pub fn take_bytes(&mut self, n: usize) -> Option<&[u8]> {
        if self.rx_end - self.rx_start < n {
            return None;
        }
        let s = self.rx_start;
        self.rx_start += n;
        Some(&self.rx[s..s + n])
    }

    /// Takes the receive buffer out, with the range of unparsed bytes, while its frames are
    /// handed on (a handler may send on this very connection); [`put_rx`](Self::put_rx)
    /// returns it with how far parsing got.
    pub fn take_rx(&mut self) -> (Vec<u8>, usize, usize) {
        (std::mem::take(&mut self.rx), self.rx_start, self.rx_end)
    }

    /// Returns the buffer [`take_rx`](Self::take_rx) took; frames before `start` are consumed.
    pub fn put_rx(&mut self, rx: Vec<u8>, start: usize) {
        self.rx = rx;
        self.rx_start = start;
    }

    /// Shuts both directions down (the rail-cutting test hook).
    pub fn shutdown(&self) {
        let _ = self.sock.shutdown(Shutdown::Both);
    }
}

/// The header of the next whole frame in `rx[start..end]`. `Ok(None)`: not all of it has
/// arrived. The error says what is wrong with a corrupt one.
#[inline]
pub fn parse_frame(
    rx: &[u8],
    start: usize,
    end: usize,
    max_payload: usize,
) -> Result<Option<FrameHdr>, String> {
    if end - start < FRAME_HDR {
        return Ok(None);
    }
    let h = FrameHdr::decode(&rx[start..start + FRAME_HDR], max_payload)?;
    if end - start < h.total() {
        if h.total() > rx.len() {
            return Err(format!(
                "{}-byte frame exceeds the receive buffer",
                h.total()
            ));
        }
        return Ok(None);
    }
    Ok(Some(h))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::tcp::frame::KIND_MSG;
    use std::net::TcpListener;

    fn pair() -> (Conn, Conn) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let a = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (b, _) = l.accept().unwrap();
        (
            Conn::new(a, 1 << 16).unwrap(),
            Conn::new(b, 1 << 16).unwrap(),
        )
    }

    #[test]
    fn frames_survive_partial_writes_eagain_and_partial_reads() {
        let (mut a, mut b) = pair();
        let payload: Vec<u8> = (0..30_000u32).map(|i| (i * 7) as u8).collect();
        let n_frames = 200u64;
        let mut sent = 0u64;
        let mut got = 0u64;
        while got < n_frames {
            // Send more than the socket holds: the queue takes the rest.
            while sent < n_frames && a.queued() < 1 << 20 {
                let h = FrameHdr {
                    kind: KIND_MSG,
                    am: 1,
                    hdr_len: 4,
                    len: payload.len() as u32,
                    seq: sent,
                };
                a.send(&[&h.encode(), &(sent as u32).to_le_bytes(), &payload])
                    .unwrap();
                sent += 1;
            }
            a.flush().unwrap();
            if b.fill().unwrap() == Fill::Closed {
                panic!("closed early");
            }
            let (rx, mut start, end) = b.take_rx();
            while let Some(h) = parse_frame(&rx, start, end, 1 << 15).unwrap() {
                let body = start + FRAME_HDR;
                assert_eq!(h.seq, got);
                assert_eq!(rx[body..body + 4], (got as u32).to_le_bytes());
                assert_eq!(&rx[body + 4..body + 4 + h.len as usize], &payload[..]);
                start += h.total();
                got += 1;
            }
            b.put_rx(rx, start);
        }
        drop(a);
        let mut closed = false;
        for _ in 0..1000 {
            if b.fill().unwrap() == Fill::Closed {
                closed = true;
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        assert!(closed);
    }

    #[test]
    fn small_frames_fill_the_socket_then_queue_and_arrive_whole_in_order() {
        let (mut a, mut b) = pair();
        // The largest small frame and some just below: written with one send each until the
        // socket is full, then cut and queued.
        let sizes = [SMALL_FRAME - FRAME_HDR - 8, 1, 37];
        let n_frames = 100_000u64;
        for i in 0..n_frames {
            let len = sizes[i as usize % 3];
            let h = FrameHdr {
                kind: KIND_MSG,
                am: 2,
                hdr_len: 8,
                len: len as u32,
                seq: i,
            };
            let body = vec![i as u8; len];
            a.send(&[&h.encode(), &i.to_le_bytes(), &body]).unwrap();
        }
        assert!(
            a.queued() > 0,
            "the socket never filled: nothing was queued"
        );
        let mut got = 0u64;
        while got < n_frames {
            a.flush().unwrap();
            assert_ne!(b.fill().unwrap(), Fill::Closed);
            let (rx, mut start, end) = b.take_rx();
            while let Some(h) = parse_frame(&rx, start, end, 1 << 15).unwrap() {
                let body = start + FRAME_HDR;
                let len = sizes[got as usize % 3];
                assert_eq!((h.seq, h.len as usize), (got, len));
                assert_eq!(rx[body..body + 8], got.to_le_bytes());
                assert!(rx[body + 8..body + 8 + len].iter().all(|&x| x == got as u8));
                start += h.total();
                got += 1;
            }
            b.put_rx(rx, start);
        }
        assert_eq!(a.queued(), 0);
    }

    #[test]
    fn a_frame_larger_than_allowed_is_an_error() {
        let (mut a, mut b) = pair();
        let h = FrameHdr {
            kind: KIND_MSG,
            am: 1,
            hdr_len: 0,
            len: 5000,
            seq: 0,
        };
        a.send(&[&h.encode()]).unwrap();
        while b.fill().unwrap() == Fill::Empty {}
        let (rx, start, end) = b.take_rx();
        assert!(parse_frame(&rx, start, end, 4096)
            .unwrap_err()
            .contains("5000-byte payload"));
    }
}
