//! Single-copy transfers between processes (Linux cross-memory attach).
//!
//! `process_vm_readv`/`writev` copy straight between two address spaces. The kernel allows it
//! between processes of one user unless ptrace is restricted; callers fall back to the two-copy
//! path through the pool when it is refused.

use std::io;

/// Bytes moved per system call: bounded so one call never holds the core for long and stays
/// far below the kernel's per-call limit.
const MAX_PER_CALL: usize = 1 << 30;

/// Copies `dst.len()` bytes from address `src` in process `pid` into `dst`.
pub fn read_from(pid: i32, src: u64, dst: &mut [u8]) -> io::Result<()> {
    let mut done = 0;
    while done < dst.len() {
        let n = (dst.len() - done).min(MAX_PER_CALL);
        let local = libc::iovec {
            // SAFETY: `done < dst.len()`, so the pointer is inside `dst`.
            iov_base: unsafe { dst.as_mut_ptr().add(done) }.cast(),
            iov_len: n,
        };
        let remote = libc::iovec {
            iov_base: (src + done as u64) as *mut libc::c_void,
            iov_len: n,
        };
        // SAFETY: `local` describes writable memory we own; the kernel validates `remote`
        // against the other process and fails with EFAULT rather than touching our memory.
        let r = unsafe { libc::process_vm_readv(pid, &local, 1, &remote, 1, 0) };
        if r < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if r == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "process_vm_readv moved nothing",
            ));
        }
        done += r as usize;
    }
    Ok(())
}

/// Copies `src` into address `dst` of process `pid`.
pub fn write_to(pid: i32, dst: u64, src: &[u8]) -> io::Result<()> {
    let mut done = 0;
    while done < src.len() {
        let n = (src.len() - done).min(MAX_PER_CALL);
        let local = libc::iovec {
            // SAFETY: `done < src.len()`, so the pointer is inside `src`; the kernel only reads it.
            iov_base: unsafe { src.as_ptr().add(done) }.cast_mut().cast(),
            iov_len: n,
        };
        let remote = libc::iovec {
            iov_base: (dst + done as u64) as *mut libc::c_void,
            iov_len: n,
        };
        // SAFETY: `local` describes readable memory we own; `remote` is checked by the kernel.
        let r = unsafe { libc::process_vm_writev(pid, &local, 1, &remote, 1, 0) };
        if r < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if r == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "process_vm_writev moved nothing",
            ));
        }
        done += r as usize;
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
    fn bad_addresses_are_errors() {
        let mut dst = [0u8; 16];
        assert!(read_from(std::process::id() as i32, 8, &mut dst).is_err());
    }
}
