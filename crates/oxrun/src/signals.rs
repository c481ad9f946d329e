//! Signals as events: a self-pipe that turns `SIGCHLD`, `SIGINT`, `SIGTERM` and `SIGHUP` into
//! readable bytes for the event loop's `poll`, plus human names for signal numbers.
//!
//! The handler only sets a bit in an atomic mask and writes one byte to a non-blocking pipe,
//! both async-signal-safe. The loop reads the pipe to wake up and takes the mask to learn
//! which signals arrived, so no signal is lost even if the pipe were ever full.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};

use crate::sys;

/// Write end of the self-pipe, or -1 before installation.
static PIPE_WRITE: AtomicI32 = AtomicI32::new(-1);
/// Bit `n` is set when signal `n` arrived since the last [`SignalPipe::take`].
static PENDING: AtomicU64 = AtomicU64::new(0);

/// The signals oxrun handles.
pub const HANDLED: [libc::c_int; 4] = [libc::SIGCHLD, libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

extern "C" fn on_signal(sig: libc::c_int) {
    // SAFETY: __errno_location returns this thread's errno slot, valid for the thread's life;
    // we restore errno so the interrupted code does not see our write's result.
    let errno = unsafe { *libc::__errno_location() };
    if (0..64).contains(&sig) {
        PENDING.fetch_or(1 << sig, Ordering::SeqCst);
    }
    let fd = PIPE_WRITE.load(Ordering::SeqCst);
    if fd >= 0 {
        let byte = 0u8;
        // SAFETY: write is async-signal-safe; the buffer is a live local byte. A full pipe
        // (EAGAIN) is fine: the loop is already due to wake up.
        unsafe { libc::write(fd, (&byte as *const u8).cast(), 1) };
    }
    // SAFETY: as above.
    unsafe { *libc::__errno_location() = errno };
}

/// The read side of the self-pipe; readable whenever a handled signal arrived.
#[derive(Debug)]
pub struct SignalPipe {
    read: OwnedFd,
    _write: OwnedFd,
}

impl SignalPipe {
    /// Creates the pipe and installs the handlers. Call once, before starting any child.
    pub fn install() -> io::Result<SignalPipe> {
        let mut fds = [0; 2];
        // SAFETY: `fds` is a valid array of two ints for pipe2 to fill in.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_NONBLOCK | libc::O_CLOEXEC) } == -1 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: pipe2 just returned these two descriptors, owned by nobody else.
        let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        PIPE_WRITE.store(write.as_raw_fd(), Ordering::SeqCst);
        for sig in HANDLED {
            // SAFETY: sigaction is plain data; all-zero is a valid starting value.
            let mut sa: libc::sigaction = unsafe { std::mem::zeroed() };
            sa.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
            sa.sa_flags = libc::SA_RESTART
                | if sig == libc::SIGCHLD {
                    libc::SA_NOCLDSTOP
                } else {
                    0
                };
            // SAFETY: `sa.sa_mask` is a valid sigset_t owned by us.
            unsafe { libc::sigemptyset(&mut sa.sa_mask) };
            // SAFETY: `sa` is fully initialized and the handler is async-signal-safe.
            if unsafe { libc::sigaction(sig, &sa, std::ptr::null_mut()) } == -1 {
                return Err(io::Error::last_os_error());
            }
        }
        Ok(SignalPipe {
            read,
            _write: write,
        })
    }

    /// Descriptor to poll for readability.
    pub fn fd(&self) -> RawFd {
        self.read.as_raw_fd()
    }

    /// Empties the pipe and returns the signals that arrived since the last call.
    pub fn take(&self) -> Vec<libc::c_int> {
        let mut buf = [0u8; 256];
        while matches!(sys::read(self.fd(), &mut buf), Ok(n) if n > 0) {}
        let bits = PENDING.swap(0, Ordering::SeqCst);
        (0..64).filter(|s| bits & (1 << s) != 0).collect()
    }
}

/// The conventional name of a signal (`SIGKILL`), or `signal N` for others.
pub fn name(sig: libc::c_int) -> String {
    let known = match sig {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGUSR1 => "SIGUSR1",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGUSR2 => "SIGUSR2",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        libc::SIGSTKFLT => "SIGSTKFLT",
        libc::SIGCHLD => "SIGCHLD",
        libc::SIGCONT => "SIGCONT",
        libc::SIGSTOP => "SIGSTOP",
        libc::SIGTSTP => "SIGTSTP",
        libc::SIGTTIN => "SIGTTIN",
        libc::SIGTTOU => "SIGTTOU",
        libc::SIGURG => "SIGURG",
        libc::SIGXCPU => "SIGXCPU",
        libc::SIGXFSZ => "SIGXFSZ",
        libc::SIGVTALRM => "SIGVTALRM",
        libc::SIGPROF => "SIGPROF",
        libc::SIGWINCH => "SIGWINCH",
        libc::SIGIO => "SIGIO",
        libc::SIGPWR => "SIGPWR",
        libc::SIGSYS => "SIGSYS",
        _ => return format!("signal {sig}"),
    };
    known.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_common_signals() {
        assert_eq!(name(9), "SIGKILL");
        assert_eq!(name(15), "SIGTERM");
        assert_eq!(name(11), "SIGSEGV");
        assert_eq!(name(40), "signal 40");
    }
}
