//! Thin, safe wrappers over the POSIX calls oxrun needs and `std` does not offer.
//!
//! The launcher's syscalls live here, one `unsafe` block each, and the rest of the crate
//! works with `io::Result`s. Two exceptions stay next to the code they serve: the signal
//! handler and its installation (`signals.rs`), and the child side of spawning, which runs
//! between `fork` and `exec` and must not allocate (`spawn.rs`).

use std::ffi::CString;
use std::io;
use std::os::fd::RawFd;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// Turns a `-1`-on-error return value into an `io::Result`.
fn check(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret == -1 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// Waits in `poll(2)` for up to `timeout_ms` milliseconds (`-1`: no limit). An interrupted
/// wait (a signal arrived) counts as zero ready descriptors.
pub fn poll(fds: &mut [libc::pollfd], timeout_ms: libc::c_int) -> io::Result<usize> {
    // SAFETY: `fds` is a valid, exclusively borrowed slice of `pollfd` of the given length.
    let ret = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout_ms) };
    match check(ret) {
        Ok(n) => Ok(n as usize),
        Err(e) if e.kind() == io::ErrorKind::Interrupted => Ok(0),
        Err(e) => Err(e),
    }
}

/// Puts `fd` into non-blocking mode.
pub fn set_nonblocking(fd: RawFd) -> io::Result<()> {
    // SAFETY: F_GETFL/F_SETFL only read and write the descriptor's status flags.
    let flags = check(unsafe { libc::fcntl(fd, libc::F_GETFL) })?;
    if flags & libc::O_NONBLOCK == 0 {
        // SAFETY: as above.
        check(unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) })?;
    }
    Ok(())
}

/// Writes all of `buf` to `fd`, retrying on `EINTR` and waiting for writability if the
/// descriptor happens to be non-blocking.
pub fn write_all(fd: RawFd, mut buf: &[u8]) -> io::Result<()> {
    while !buf.is_empty() {
        // SAFETY: `buf` is a valid readable region of `buf.len()` bytes.
        let ret = unsafe { libc::write(fd, buf.as_ptr().cast(), buf.len()) };
        if ret >= 0 {
            buf = &buf[ret as usize..];
            continue;
        }
        let err = io::Error::last_os_error();
        match err.kind() {
            io::ErrorKind::Interrupted => {}
            io::ErrorKind::WouldBlock => {
                let mut p = [libc::pollfd {
                    fd,
                    events: libc::POLLOUT,
                    revents: 0,
                }];
                poll(&mut p, -1)?;
            }
            _ => return Err(err),
        }
    }
    Ok(())
}

/// Writes once to `fd` (no retry).
pub fn write(fd: RawFd, buf: &[u8]) -> io::Result<usize> {
    // SAFETY: `buf` is a valid readable region of `buf.len()` bytes.
    let ret = unsafe { libc::write(fd, buf.as_ptr().cast(), buf.len()) };
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret as usize)
    }
}

/// Reads once from `fd` into `buf`, retrying on `EINTR`.
pub fn read(fd: RawFd, buf: &mut [u8]) -> io::Result<usize> {
    loop {
        // SAFETY: `buf` is a valid writable region of `buf.len()` bytes.
        let ret = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
        if ret >= 0 {
            return Ok(ret as usize);
        }
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
}

/// Sends `sig` to every process of the process group `pgid`. A group that no longer exists
/// is not an error.
pub fn kill_group(pgid: libc::pid_t, sig: libc::c_int) -> io::Result<()> {
    if pgid <= 1 {
        // Never signal "every process" (-1) or our own group (0) by accident.
        return Err(io::Error::from(io::ErrorKind::InvalidInput));
    }
    // SAFETY: kill has no memory-safety preconditions.
    match check(unsafe { libc::kill(-pgid, sig) }) {
        Err(e) if e.raw_os_error() == Some(libc::ESRCH) => Ok(()),
        r => r.map(drop),
    }
}

/// The pid of a child that has exited and not been reaped yet, without reaping it, so that
/// its process-group id stays reserved until the caller has signalled the group.
pub fn exited_child() -> io::Result<Option<libc::pid_t>> {
    loop {
        // SAFETY: siginfo_t is plain data; all-zero is a valid value.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: `info` is a valid siginfo_t for waitid to fill in.
        let ret = unsafe {
            libc::waitid(
                libc::P_ALL,
                0,
                &mut info,
                libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
            )
        };
        match check(ret) {
            Ok(_) => {
                // SAFETY: waitid filled in a SIGCHLD siginfo (or left it zeroed: pid 0), so
                // the pid field of the union is the one to read.
                let pid = unsafe { info.si_pid() };
                return Ok((pid != 0).then_some(pid));
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) if e.raw_os_error() == Some(libc::ECHILD) => return Ok(None),
            Err(e) => return Err(e),
        }
    }
}

/// Reaps the exited child `pid` and returns its raw wait status.
pub fn reap(pid: libc::pid_t) -> io::Result<libc::c_int> {
    let mut status = 0;
    loop {
        // SAFETY: `status` is a valid int for waitpid to fill in.
        match check(unsafe { libc::waitpid(pid, &mut status, 0) }) {
            Ok(_) => return Ok(status),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
}

/// Raises the soft limit on open descriptors to the hard limit, and returns the limits as
/// they were (for the ranks to get back) and the new soft limit.
// `rlim_t` is not `u64` on every target, so the casts below are not always no-ops.
#[allow(clippy::unnecessary_cast)]
pub fn raise_nofile_limit() -> io::Result<(libc::rlimit, u64)> {
    let mut old = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `old` is a valid rlimit for getrlimit to fill in.
    check(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut old) })?;
    let new = libc::rlimit {
        rlim_cur: old.rlim_max,
        rlim_max: old.rlim_max,
    };
    // SAFETY: `new` is a valid rlimit.
    if check(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &new) }).is_ok() {
        Ok((old, new.rlim_cur as u64))
    } else {
        Ok((old, old.rlim_cur as u64))
    }
}

/// Makes sure descriptors 0, 1 and 2 are open (on `/dev/null` if they were closed), so that
/// no socket or pipe we create later takes one of their numbers.
pub fn ensure_std_fds_open() {
    for fd in 0..3 {
        // SAFETY: F_GETFD only queries the descriptor.
        if unsafe { libc::fcntl(fd, libc::F_GETFD) } == -1 {
            let flags = if fd == 0 {
                libc::O_RDONLY
            } else {
                libc::O_WRONLY
            };
            // SAFETY: the path is a NUL-terminated C string literal. The descriptor is left
            // open on purpose: it becomes the lowest free number, which is `fd`.
            unsafe { libc::open(c"/dev/null".as_ptr(), flags) };
        }
    }
}

/// Whether standard input is a terminal of which we are not the foreground process group:
/// reading it would stop oxrun with `SIGTTIN`.
pub fn stdin_is_background_tty() -> bool {
    // SAFETY: isatty, tcgetpgrp and getpgrp have no memory-safety preconditions.
    unsafe { libc::isatty(0) == 1 && libc::tcgetpgrp(0) != libc::getpgrp() }
}

/// Whether the calling user may execute `path` (`access(X_OK)`).
pub fn is_executable(path: &Path) -> bool {
    let Ok(c) = CString::new(path.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: `c` is a valid NUL-terminated string that outlives the call.
    unsafe { libc::access(c.as_ptr(), libc::X_OK) == 0 }
}

/// Number of 64-bit words in the CPU masks we pass to the kernel (4096 CPUs).
pub const CPU_MASK_WORDS: usize = 64;

/// A CPU bit mask in the kernel's `cpu_set_t` layout.
pub type CpuMask = [u64; CPU_MASK_WORDS];

/// The CPUs this process may run on, in increasing order.
pub fn allowed_cpus() -> io::Result<Vec<usize>> {
    let mut mask: CpuMask = [0; CPU_MASK_WORDS];
    // SAFETY: `mask` is a writable buffer of exactly the size passed; the kernel fills at most
    // that many bytes. The glibc wrapper takes a `cpu_set_t *` but only uses it as a buffer of
    // the given size.
    check(unsafe {
        libc::sched_getaffinity(
            0,
            std::mem::size_of::<CpuMask>(),
            mask.as_mut_ptr().cast::<libc::cpu_set_t>(),
        )
    })?;
    Ok(mask_to_cpus(&mask))
}

/// The CPUs set in `mask`, in increasing order.
pub fn mask_to_cpus(mask: &CpuMask) -> Vec<usize> {
    (0..CPU_MASK_WORDS * 64)
        .filter(|&c| mask[c / 64] & (1 << (c % 64)) != 0)
        .collect()
}

/// A mask with exactly `cpus` set; CPUs beyond the mask's capacity are left out.
pub fn cpus_to_mask(cpus: &[usize]) -> CpuMask {
    let mut mask: CpuMask = [0; CPU_MASK_WORDS];
    for &c in cpus.iter().filter(|&&c| c < CPU_MASK_WORDS * 64) {
        mask[c / 64] |= 1 << (c % 64);
    }
    mask
}

/// Ignores signal `sig` in this process (its children, once they `exec`, ignore it too).
pub fn ignore_signal(sig: libc::c_int) {
    // SAFETY: setting a disposition to SIG_IGN installs no code and touches no memory.
    unsafe { libc::signal(sig, libc::SIG_IGN) };
}

/// Waits up to `limit` for child `pid` to exit; `Ok(true)` once reaped.
pub fn reap_within(pid: libc::pid_t, limit: std::time::Duration) -> io::Result<bool> {
    let end = std::time::Instant::now() + limit;
    loop {
        let mut status = 0;
        // SAFETY: `status` is a valid int for waitpid to fill in.
        let ret = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        if ret == pid {
            return Ok(true);
        }
        if ret == -1 {
            return Err(io::Error::last_os_error());
        }
        if std::time::Instant::now() >= end {
            return Ok(false);
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// Turns on TCP keepalive with short timers on the connected socket `fd`, so that a peer
/// whose host vanished (no reset ever comes) is noticed within about 15 seconds.
pub fn set_keepalive(fd: RawFd) -> io::Result<()> {
    let set = |level: libc::c_int, opt: libc::c_int, value: libc::c_int| -> io::Result<()> {
        // SAFETY: `value` is a live c_int and its size is passed; setsockopt only reads it.
        check(unsafe {
            libc::setsockopt(
                fd,
                level,
                opt,
                (&value as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        })
        .map(drop)
    };
    set(libc::SOL_SOCKET, libc::SO_KEEPALIVE, 1)?;
    set(libc::IPPROTO_TCP, libc::TCP_KEEPIDLE, 5)?;
    set(libc::IPPROTO_TCP, libc::TCP_KEEPINTVL, 2)?;
    set(libc::IPPROTO_TCP, libc::TCP_KEEPCNT, 4)
}

/// The addresses of this host's interfaces that are up: IPv4 first, then IPv6 (link-local
/// IPv6 addresses are left out, as they need a scope to be usable), loopback last.
pub fn interface_addresses() -> io::Result<Vec<std::net::IpAddr>> {
    use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
    let mut list: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs fills in a list head we own until freeifaddrs.
    check(unsafe { libc::getifaddrs(&mut list) })?;
    let mut out = Vec::new();
    let mut cur = list;
    while !cur.is_null() {
        // SAFETY: `cur` is a node of the list getifaddrs returned, not yet freed.
        let ifa = unsafe { &*cur };
        cur = ifa.ifa_next;
        let up = ifa.ifa_flags & libc::IFF_UP as libc::c_uint != 0;
        if ifa.ifa_addr.is_null() || !up {
            continue;
        }
        // SAFETY: ifa_addr is non-null and points to a sockaddr of the family it names;
        // we read the family first and then only the matching struct.
        let addr = unsafe {
            match i32::from((*ifa.ifa_addr).sa_family) {
                libc::AF_INET => {
                    let sin = &*ifa.ifa_addr.cast::<libc::sockaddr_in>();
                    Some(IpAddr::V4(Ipv4Addr::from(u32::from_be(
                        sin.sin_addr.s_addr,
                    ))))
                }
                libc::AF_INET6 => {
                    let sin6 = &*ifa.ifa_addr.cast::<libc::sockaddr_in6>();
                    Some(IpAddr::V6(Ipv6Addr::from(sin6.sin6_addr.s6_addr)))
                }
                _ => None,
            }
        };
        if let Some(a) = addr {
            let link_local = matches!(a, IpAddr::V6(v6) if v6.segments()[0] & 0xffc0 == 0xfe80);
            if !link_local && !out.contains(&a) {
                out.push(a);
            }
        }
    }
    // SAFETY: `list` came from getifaddrs and is freed once; no reference into it remains.
    unsafe { libc::freeifaddrs(list) };
    out.sort_by_key(|a| (a.is_loopback(), a.is_ipv6()));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_masks_round_trip() {
        let cpus = vec![0, 1, 63, 64, 130, 4095];
        assert_eq!(mask_to_cpus(&cpus_to_mask(&cpus)), cpus);
        assert_eq!(mask_to_cpus(&cpus_to_mask(&[5000])), Vec::<usize>::new());
    }

    #[test]
    fn this_process_may_run_somewhere() {
        assert!(!allowed_cpus().unwrap().is_empty());
    }

    #[test]
    fn refuses_to_signal_everyone() {
        assert!(kill_group(-1, 0).is_err());
        assert!(kill_group(0, 0).is_err());
        assert!(kill_group(1, 0).is_err());
    }
}
