//! Single-copy transfers between processes (Linux cross-memory attach).
//!
//! `process_vm_readv`/`writev` copy straight between two address spaces. The kernel allows it
//! between processes of one user unless ptrace is restricted; callers fall back to the two-copy
//! path through the pool when it is refused.

use std::io;

/// Bytes moved per system call: bounded so one call never holds the core for long and stays
/// far below the kernel's per-call limit.
const MAX_PER_CALL: usize = 1 << 30;

/// Which direction a copy goes.
#[derive(Clone, Copy)]
enum Dir {
    Read,
    Write,
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
        if moved < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if moved == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "cross-process copy moved nothing",
            ));
        }
        done += moved as usize;
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
    fn bad_addresses_are_errors() {
        let mut dst = [0u8; 16];
        assert!(read_from(std::process::id() as i32, 8, &mut dst).is_err());
    }
}
