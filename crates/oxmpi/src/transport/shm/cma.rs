//! Single-copy transfers between processes (Linux cross-memory attach).
//!
//! `process_vm_readv`/`writev` copy straight between two address spaces. The kernel allows it
//! between processes of one user unless ptrace is restricted; callers fall back to the two-copy
//! path through the pool when it is refused.

use std::io;

use crate::transport::Seg;

/// Most iovec entries per side of one call (the kernel's `UIO_MAXIOV`).
pub const IOV_MAX: usize = 1024;

/// Bytes moved per system call: bounded so one call never holds the core for long and stays
/// far below the kernel's per-call limit.
const MAX_PER_CALL: usize = 1 << 30;

/// Which direction a copy goes.
#[derive(Clone, Copy)]
enum Dir {
    Read,
    Write,
}

/// What one `process_vm_readv`/`writev` call returned: the bytes it moved, `None` when a
/// signal interrupted it (call again), or the error; a call that moved nothing is an error
/// (the peer's memory ended), so no copy loops forever.
fn bytes_moved(ret: isize) -> io::Result<Option<usize>> {
    if ret < 0 {
        let e = io::Error::last_os_error();
        if e.kind() == io::ErrorKind::Interrupted {
            return Ok(None);
        }
        return Err(e);
    }
    if ret == 0 {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "cross-process copy moved nothing",
        ));
    }
    Ok(Some(ret as usize))
}

/// Moves `len` bytes between `local` (ours) and `remote` (in `pid`), in bounded calls.
///
/// # Safety
/// For `Read`, `local` must be valid for writes of `len` bytes; for `Write`, for reads.
unsafe fn copy(dir: Dir, pid: i32, local: *mut u8, remote: u64, len: usize) -> io::Result<()> {
    let mut done = 0;
    while done < len {
        let n = (len - done).min(MAX_PER_CALL);
        let l = libc::iovec {
            // SAFETY: `done < len`, so the pointer stays inside the caller's buffer.
            iov_base: unsafe { local.add(done) }.cast(),
            iov_len: n,
        };
        let r = libc::iovec {
            iov_base: (remote + done as u64) as *mut libc::c_void,
            iov_len: n,
        };
        // SAFETY: `l` describes memory the caller vouches for; the kernel checks `r` against
        // the other process and fails with EFAULT rather than touching anything else.
        let moved = unsafe {
            match dir {
                Dir::Read => libc::process_vm_readv(pid, &l, 1, &r, 1, 0),
                Dir::Write => libc::process_vm_writev(pid, &l, 1, &r, 1, 0),
            }
        };
        let Some(moved) = bytes_moved(moved)? else {
            continue;
        };
        done += moved;
    }
    Ok(())
}

/// Copies `dst.len()` bytes from address `src` in process `pid` into `dst`.
pub fn read_from(pid: i32, src: u64, dst: &mut [u8]) -> io::Result<()> {
    // SAFETY: `dst` is valid for writes of its length.
    unsafe { copy(Dir::Read, pid, dst.as_mut_ptr(), src, dst.len()) }
}

/// Copies `src` into address `dst` of process `pid`.
pub fn write_to(pid: i32, dst: u64, src: &[u8]) -> io::Result<()> {
    // SAFETY: `src` is valid for reads of its length; the kernel only reads it.
    unsafe { copy(Dir::Write, pid, src.as_ptr().cast_mut(), dst, src.len()) }
}

/// A position in a list of pieces: piece `i`, `off` bytes into it.
struct Cursor<'a> {
    segs: &'a [Seg],
    i: usize,
    off: u64,
}

impl Cursor<'_> {
    /// Fills `out` with the next pieces from here, at most `max_n` of them and `max_bytes`
    /// bytes; returns the bytes they cover. The cursor does not move.
    fn fill(&self, out: &mut Vec<libc::iovec>, max_n: usize, max_bytes: u64) -> u64 {
        out.clear();
        let mut total = 0u64;
        let (mut i, mut off) = (self.i, self.off);
        while i < self.segs.len() && out.len() < max_n && total < max_bytes {
            let s = self.segs[i];
            let n = (s.len - off).min(max_bytes - total);
            if n > 0 {
                out.push(libc::iovec {
                    iov_base: (s.addr + off) as *mut libc::c_void,
                    iov_len: n as usize,
                });
                total += n;
            }
            (i, off) = (i + 1, 0);
        }
        total
    }

    /// Moves `n` bytes on.
    fn advance(&mut self, mut n: u64) {
        while n > 0 && self.i < self.segs.len() {
            let left = self.segs[self.i].len - self.off;
            if n < left {
                self.off += n;
                return;
            }
            n -= left;
            (self.i, self.off) = (self.i + 1, 0);
        }
    }
}

/// Copies the pieces `remote` of process `pid`, in order, into our pieces `local` (both the
/// same number of bytes), in calls of at most [`IOV_MAX`] entries per side, a piece split
/// where a batch ends.
///
/// # Safety
/// Every piece of `local` must be valid for writes and not otherwise accessed during the call.
pub unsafe fn read_list(pid: i32, local: &[Seg], remote: &[Seg]) -> io::Result<()> {
    let total: u64 = local.iter().map(|s| s.len).sum();
    if remote.iter().map(|s| s.len).sum::<u64>() != total {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "iovec lists of different lengths",
        ));
    }
    let (mut l, mut r) = (
        Cursor {
            segs: local,
            i: 0,
            off: 0,
        },
        Cursor {
            segs: remote,
            i: 0,
            off: 0,
        },
    );
    let (mut lv, mut rv) = (Vec::with_capacity(IOV_MAX), Vec::with_capacity(IOV_MAX));
    let mut done = 0u64;
    while done < total {
        let want = l.fill(&mut lv, IOV_MAX, MAX_PER_CALL as u64);
        let got = r.fill(&mut rv, IOV_MAX, want);
        if got < want {
            l.fill(&mut lv, IOV_MAX, got);
        }
        // SAFETY: `lv` lists parts of `local`'s pieces, writable by the caller's guarantee;
        // the kernel checks `rv` against the other process and fails with EFAULT rather than
        // touching anything else. Both vectors live across the call with the lengths passed.
        let moved = unsafe {
            libc::process_vm_readv(
                pid,
                lv.as_ptr(),
                lv.len() as _,
                rv.as_ptr(),
                rv.len() as _,
                0,
            )
        };
        let Some(moved) = bytes_moved(moved)? else {
            continue;
        };
        l.advance(moved as u64);
        r.advance(moved as u64);
        done += moved as u64;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_within_our_own_process() {
        let pid = std::process::id() as i32;
        let src: Vec<u8> = (0..100_000u32).map(|i| (i * 7) as u8).collect();
        let mut dst = vec![0u8; src.len()];
        read_from(pid, src.as_ptr() as u64, &mut dst).unwrap();
        assert_eq!(dst, src);
        let mut back = vec![0u8; src.len()];
        write_to(pid, back.as_mut_ptr() as u64, &src).unwrap();
        assert_eq!(back, src);
    }

    #[test]
    fn lists_longer_than_one_call_scatter_every_byte() {
        let pid = std::process::id() as i32;
        let src: Vec<u8> = (0..40_000u32).map(|i| (i * 13 + 1) as u8).collect();
        let mut dst = vec![0u8; 60_000];
        // Remote: 2500 pieces of 7 bytes then the rest as one; local: 3000 pieces of 13 bytes
        // with 7-byte gaps, so batches split pieces on both sides.
        let mut remote = Vec::new();
        let mut at = 0u64;
        while at + 7 <= 17_500 {
            remote.push(Seg {
                addr: src.as_ptr() as u64 + at,
                len: 7,
            });
            at += 7;
        }
        remote.push(Seg {
            addr: src.as_ptr() as u64 + at,
            len: 39_000 - at,
        });
        let local: Vec<Seg> = (0..3000u64)
            .map(|k| Seg {
                addr: dst.as_mut_ptr() as u64 + k * 20,
                len: 13,
            })
            .collect();
        // SAFETY: every local piece lies in `dst`, which nothing else touches meanwhile.
        unsafe { read_list(pid, &local, &remote) }.unwrap();
        for k in 0..3000usize {
            assert_eq!(&dst[k * 20..k * 20 + 13], &src[k * 13..k * 13 + 13]);
            assert!(
                dst[k * 20 + 13..k * 20 + 20].iter().all(|&b| b == 0),
                "gap {k}"
            );
        }
        let short = [Seg {
            addr: dst.as_mut_ptr() as u64,
            len: 3,
        }];
        // SAFETY: as above.
        assert!(unsafe { read_list(pid, &short, &remote) }.is_err());
    }

    #[test]
    fn bad_addresses_are_errors() {
        let mut dst = [0u8; 16];
        assert!(read_from(std::process::id() as i32, 8, &mut dst).is_err());
    }
}
