//! One epoll set for every socket of a rank: the listener, connections being proven and the
//! rails. The progress engine asks it without waiting (`timeout 0`); no thread per peer. A
//! waiting rank blocks on the set's own descriptor ([`Poller::fd`], readable while any socket
//! is ready), outside the engine, so data wakes it at once.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// Readiness reported for one registered socket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Event {
    /// The token given at registration.
    pub token: u64,
    /// Readable (or closed: a read then says how).
    pub readable: bool,
    /// Writable.
    pub writable: bool,
}

/// An epoll instance.
#[derive(Debug)]
pub struct Poller {
    fd: OwnedFd,
    events: Vec<libc::epoll_event>,
}

impl Poller {
    /// A new epoll set reporting up to `batch` events per wait.
    pub fn new(batch: usize) -> io::Result<Poller> {
        // SAFETY: epoll_create1 takes no pointers; the result is checked before use.
        let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Poller {
            // SAFETY: `fd` is a new descriptor that nothing else owns.
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
            events: vec![libc::epoll_event { events: 0, u64: 0 }; batch.max(1)],
        })
    }

    /// The epoll set's descriptor: it polls readable while a registered socket is ready.
    pub fn fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    fn ctl(&self, op: libc::c_int, fd: RawFd, token: u64, write: bool) -> io::Result<()> {
        let mut ev = libc::epoll_event {
            events: (libc::EPOLLIN | libc::EPOLLRDHUP) as u32
                | if write { libc::EPOLLOUT as u32 } else { 0 },
            u64: token,
        };
        // SAFETY: `ev` is a valid event for the duration of the call; a bad `fd` is an error
        // return, not undefined behaviour.
        let rc = unsafe { libc::epoll_ctl(self.fd.as_raw_fd(), op, fd, &mut ev) };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Watches `fd` for reading (and writing if `write`), reported with `token`.
    pub fn add(&self, fd: RawFd, token: u64, write: bool) -> io::Result<()> {
        self.ctl(libc::EPOLL_CTL_ADD, fd, token, write)
    }

    /// Changes what `fd` is watched for.
    pub fn modify(&self, fd: RawFd, token: u64, write: bool) -> io::Result<()> {
        self.ctl(libc::EPOLL_CTL_MOD, fd, token, write)
    }

    /// Stops watching `fd` (closing it does too).
    #[cfg(test)]
    pub fn remove(&self, fd: RawFd) {
        // SAFETY: a null event is allowed for EPOLL_CTL_DEL; errors (already gone) are ignored.
        unsafe {
            libc::epoll_ctl(
                self.fd.as_raw_fd(),
                libc::EPOLL_CTL_DEL,
                fd,
                std::ptr::null_mut(),
            )
        };
    }

    /// The sockets ready now, without waiting, appended to `out`.
    pub fn ready(&mut self, out: &mut Vec<Event>) -> io::Result<()> {
        // SAFETY: `events` holds `len` initialized entries the kernel may overwrite.
        let n = unsafe {
            libc::epoll_wait(
                self.fd.as_raw_fd(),
                self.events.as_mut_ptr(),
                self.events.len() as libc::c_int,
                0,
            )
        };
        if n < 0 {
            let e = io::Error::last_os_error();
            return if e.kind() == io::ErrorKind::Interrupted {
                Ok(())
            } else {
                Err(e)
            };
        }
        for ev in &self.events[..n as usize] {
            let bits = ev.events;
            out.push(Event {
                token: ev.u64,
                readable: bits
                    & (libc::EPOLLIN | libc::EPOLLRDHUP | libc::EPOLLHUP | libc::EPOLLERR) as u32
                    != 0,
                writable: bits & libc::EPOLLOUT as u32 != 0,
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::net::{TcpListener, TcpStream};

    #[test]
    fn reports_readable_sockets_by_token_and_nothing_when_idle() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut a = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (b, _) = l.accept().unwrap();
        let mut p = Poller::new(8).unwrap();
        p.add(b.as_raw_fd(), 42, false).unwrap();
        let mut out = Vec::new();
        p.ready(&mut out).unwrap();
        assert!(out.is_empty(), "{out:?}");
        a.write_all(b"x").unwrap();
        for _ in 0..1000 {
            p.ready(&mut out).unwrap();
            if !out.is_empty() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        assert_eq!(out[0].token, 42);
        assert!(out[0].readable);
        p.modify(b.as_raw_fd(), 43, true).unwrap();
        out.clear();
        p.ready(&mut out).unwrap();
        assert!(out.iter().any(|e| e.token == 43 && e.writable));
        p.remove(b.as_raw_fd());
        out.clear();
        p.ready(&mut out).unwrap();
        assert!(out.is_empty());
        assert!(p.add(-1, 1, false).is_err());
    }

    #[test]
    fn a_wakeup_on_the_set_returns_when_a_socket_is_ready_and_not_before() {
        use crate::transport::Wakeup;
        use std::time::Duration;
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut a = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (b, _) = l.accept().unwrap();
        let p = Poller::new(8).unwrap();
        p.add(b.as_raw_fd(), 7, false).unwrap();
        let w = Wakeup::new(p.fd());
        assert!(
            !w.wait(Duration::from_millis(5)),
            "idle: the wait times out"
        );
        a.write_all(b"x").unwrap();
        // Bounded by the timeout, but data ends it: ready, and still ready (level-triggered:
        // the engine's own poll reads it afterwards).
        assert!(w.wait(Duration::from_secs(30)));
        assert!(w.wait(Duration::from_secs(30)));
    }

    #[test]
    fn a_wakeup_on_a_closed_descriptor_reports_nothing() {
        use crate::transport::Wakeup;
        use std::time::Duration;
        let fd = Poller::new(1).unwrap().fd();
        // Dropped: the number is closed (a transport gone after finalize).
        assert!(!Wakeup::new(fd).wait(Duration::from_micros(100)));
        assert!(!Wakeup::new(-1).wait(Duration::from_micros(100)));
    }
}
