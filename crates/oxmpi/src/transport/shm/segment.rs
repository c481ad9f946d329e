//! Shared-memory segments: files in /dev/shm mapped into every rank on the host.
//!
//! The only OS-facing code of the shm transport. A segment is created by its owner with
//! `O_EXCL` and mode 0600 under an unguessable name, and mapped read-write by peers on their
//! first message to or from the owner (deferred connection).

use std::ffi::CString;
use std::io;
use std::ptr::NonNull;

/// A mapped shared-memory file.
#[derive(Debug)]
pub struct Segment {
    base: NonNull<u8>,
    len: usize,
    path: String,
    owner: bool,
}

// SAFETY: the mapping is plain shared memory; all concurrent access to it goes through atomics
// or through regions handed over by the transport's protocol (see fifo.rs and pool.rs).
unsafe impl Send for Segment {}
// SAFETY: as above; `&Segment` only exposes the base pointer and length.
unsafe impl Sync for Segment {}

fn cpath(path: &str) -> io::Result<CString> {
    CString::new(path).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "NUL in path"))
}

#[cfg(not(miri))]
impl Segment {
    /// Creates `path` (must not exist) with `len` zeroed bytes, mode 0600, and maps it.
    pub fn create(path: &str, len: usize) -> io::Result<Segment> {
        let c = cpath(path)?;
        // SAFETY: `c` is a valid NUL-terminated path; flags and mode are constants.
        let fd = unsafe {
            libc::open(
                c.as_ptr(),
                libc::O_RDWR | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC,
                0o600 as libc::c_uint,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` is the descriptor we just opened.
        let rc = unsafe { libc::ftruncate(fd, len as libc::off_t) };
        let res = if rc != 0 {
            Err(io::Error::last_os_error())
        } else {
            map(fd, len)
        };
        // SAFETY: we own `fd`; the mapping (if any) stays valid after close.
        unsafe { libc::close(fd) };
        match res {
            Ok(base) => Ok(Segment {
                base,
                len,
                path: path.to_owned(),
                owner: true,
            }),
            Err(e) => {
                // SAFETY: `c` is a valid path; we created the file and must not leave it behind.
                unsafe { libc::unlink(c.as_ptr()) };
                Err(e)
            }
        }
    }

    /// Maps an existing segment created by a peer; its length is the file's length.
    pub fn open(path: &str) -> io::Result<Segment> {
        let c = cpath(path)?;
        // SAFETY: `c` is a valid NUL-terminated path.
        let fd = unsafe {
            libc::open(
                c.as_ptr(),
                libc::O_RDWR | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: zeroed `stat` is a valid out-parameter for fstat on our open fd.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: `fd` is open and `st` is a valid, writable stat buffer.
        let res = if unsafe { libc::fstat(fd, &mut st) } != 0 {
            Err(io::Error::last_os_error())
        } else {
            map(fd, st.st_size as usize)
        };
        // SAFETY: we own `fd`.
        unsafe { libc::close(fd) };
        Ok(Segment {
            base: res?,
            len: st.st_size as usize,
            path: path.to_owned(),
            owner: false,
        })
    }
}

impl Segment {
    /// Maps every page of the segment now, writable, so that the hot path never takes a first-
    /// touch page fault (in a virtual machine one costs microseconds, and a message touching
    /// fresh pool blocks paid it per page until the whole pool had been used once). Best effort:
    /// kernels before 5.14 lack `MADV_POPULATE_WRITE`, and then pages fault in on first use.
    pub fn prefault(&self) {
        #[cfg(not(miri))]
        // SAFETY: `base`/`len` are exactly our live mapping; populating changes no contents.
        unsafe {
            libc::madvise(
                self.base.as_ptr().cast(),
                self.len,
                libc::MADV_POPULATE_WRITE,
            );
        }
    }

    /// Start of the mapping.
    pub fn base(&self) -> NonNull<u8> {
        self.base
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Path of the backing file.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Removes the backing file; mappings stay valid. Idempotent.
    #[cfg(not(miri))]
    pub fn unlink(&mut self) {
        if self.owner {
            if let Ok(c) = cpath(&self.path) {
                // SAFETY: `c` is a valid path; ENOENT (already removed) is fine.
                unsafe { libc::unlink(c.as_ptr()) };
            }
            self.owner = false;
        }
    }
}

#[cfg(not(miri))]
fn map(fd: libc::c_int, len: usize) -> io::Result<NonNull<u8>> {
    if len == 0 {
        return Err(io::Error::new(io::ErrorKind::InvalidData, "empty segment"));
    }
    // SAFETY: mapping `len` bytes of an open file, shared, at an address the kernel picks.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            fd,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    NonNull::new(p.cast()).ok_or_else(|| io::Error::other("mmap returned null"))
}

#[cfg(not(miri))]
impl Drop for Segment {
    fn drop(&mut self) {
        self.unlink();
        // SAFETY: `base`/`len` are exactly the mapping made in `map`; no reference into it
        // outlives the segment (the transport drops peers' views before their segments).
        unsafe { libc::munmap(self.base.as_ptr().cast(), self.len) };
    }
}

/// Under Miri (which cannot map files) a segment is a zeroed heap block registered under its
/// path in this process, so the transport's unit tests (two "ranks" as two transports in one
/// process) run the real shared-memory protocol code under the interpreter. Same contract:
/// `create` is exclusive, `open` finds a live segment, memory lives until the last holder drops.
#[cfg(miri)]
mod heap {
    use std::alloc::Layout;
    use std::collections::HashMap;
    use std::ptr::NonNull;
    use std::sync::Mutex;

    pub struct Block {
        pub base: NonNull<u8>,
        pub len: usize,
        pub holders: usize,
    }
    // SAFETY: the block is plain memory whose shared use follows the same rules as a mapping.
    unsafe impl Send for Block {}

    pub static BLOCKS: Mutex<Vec<Block>> = Mutex::new(Vec::new());
    pub static NAMES: Mutex<Option<HashMap<String, usize>>> = Mutex::new(None);

    pub fn layout(len: usize) -> Layout {
        Layout::from_size_align(len, 4096).expect("segment layout")
    }
}

#[cfg(miri)]
impl Segment {
    /// Creates `path` (must not exist) with `len` zeroed bytes.
    pub fn create(path: &str, len: usize) -> io::Result<Segment> {
        cpath(path)?;
        if len == 0 {
            return Err(io::Error::new(io::ErrorKind::InvalidData, "empty segment"));
        }
        let mut names = heap::NAMES.lock().unwrap();
        let names = names.get_or_insert_with(Default::default);
        if names.contains_key(path) {
            return Err(io::Error::from(io::ErrorKind::AlreadyExists));
        }
        // SAFETY: the layout has a non-zero size.
        let p = unsafe { std::alloc::alloc_zeroed(heap::layout(len)) };
        let base = NonNull::new(p).ok_or_else(|| io::Error::other("out of memory"))?;
        let mut blocks = heap::BLOCKS.lock().unwrap();
        blocks.push(heap::Block {
            base,
            len,
            holders: 1,
        });
        names.insert(path.to_owned(), blocks.len() - 1);
        Ok(Segment {
            base,
            len,
            path: path.to_owned(),
            owner: true,
        })
    }

    /// Opens a live segment created in this process.
    pub fn open(path: &str) -> io::Result<Segment> {
        let names = heap::NAMES.lock().unwrap();
        let i = *names
            .as_ref()
            .and_then(|n| n.get(path))
            .ok_or_else(|| io::Error::from(io::ErrorKind::NotFound))?;
        let mut blocks = heap::BLOCKS.lock().unwrap();
        let b = &mut blocks[i];
        b.holders += 1;
        Ok(Segment {
            base: b.base,
            len: b.len,
            path: path.to_owned(),
            owner: false,
        })
    }

    /// Removes the name; holders keep the memory. Idempotent.
    pub fn unlink(&mut self) {
        if self.owner {
            let mut names = heap::NAMES.lock().unwrap();
            if let Some(n) = names.as_mut() {
                n.remove(&self.path);
            }
            self.owner = false;
        }
    }
}

#[cfg(miri)]
impl Drop for Segment {
    fn drop(&mut self) {
        self.unlink();
        let mut blocks = heap::BLOCKS.lock().unwrap();
        if let Some(b) = blocks
            .iter_mut()
            .find(|b| b.base == self.base && b.holders > 0)
        {
            b.holders -= 1;
            if b.holders == 0 {
                // SAFETY: the block was allocated with this layout and its last holder is
                // going; no reference into it outlives the segment (as for munmap).
                unsafe { std::alloc::dealloc(b.base.as_ptr(), heap::layout(b.len)) };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(tag: &str) -> String {
        format!("/dev/shm/oxmpi.test{}.{tag}", std::process::id())
    }

    #[test]
    fn create_is_exclusive_private_and_shared() {
        let p = path("seg");
        let a = Segment::create(&p, 8192).unwrap();
        let mode = std::fs::metadata(&p).unwrap().permissions();
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(mode.mode() & 0o777, 0o600);
        assert!(Segment::create(&p, 8192).is_err(), "O_EXCL");
        let b = Segment::open(&p).unwrap();
        assert_eq!(b.len(), 8192);
        // SAFETY: both mappings are 8192 bytes long and alive; test-only plain access.
        unsafe {
            a.base().as_ptr().add(100).write(42);
            assert_eq!(b.base().as_ptr().add(100).read(), 42);
        }
        drop(a);
        assert!(!std::path::Path::new(&p).exists(), "owner unlinks on drop");
        // SAFETY: `b` is still mapped after the file was removed.
        assert_eq!(unsafe { b.base().as_ptr().add(100).read() }, 42);
    }

    #[test]
    fn opening_a_missing_segment_is_an_error() {
        assert!(Segment::open(&path("missing")).is_err());
    }
}
