//! Finding the program to run, the way `execvp` would, before anything is launched.
//!
//! Checking up front turns "no such program" into one clear message and a shell-like exit
//! status (127 not found, 126 found but not executable) instead of N failed ranks.

use std::ffi::{OsStr, OsString};
use std::fs;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::sys;

/// The search path `execvp` uses when `PATH` is unset (glibc's `_CS_PATH`).
const DEFAULT_PATH: &str = "/bin:/usr/bin";

/// Why a program cannot be run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CannotExecute {
    /// Shell-style exit status: 127 (not found) or 126 (not executable).
    pub status: i32,
    /// What is wrong, e.g. `No such file or directory`.
    pub reason: String,
}

/// Checks one candidate path: `Ok` if it is an executable file.
fn check(path: &Path) -> Result<(), CannotExecute> {
    match fs::metadata(path) {
        Err(e) => Err(CannotExecute {
            status: if matches!(e.kind(), io::ErrorKind::NotFound)
                || e.raw_os_error() == Some(libc::ENOTDIR)
            {
                127
            } else {
                126
            },
            reason: strip_os_error(&e),
        }),
        Ok(m) if m.is_dir() => Err(CannotExecute {
            status: 126,
            reason: "Is a directory".into(),
        }),
        Ok(_) if !sys::is_executable(path) => Err(CannotExecute {
            status: 126,
            reason: "Permission denied".into(),
        }),
        Ok(_) => Ok(()),
    }
}

/// `io::Error`'s text without the trailing ` (os error N)`.
fn strip_os_error(e: &io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_owned(),
        None => s,
    }
}

/// Resolves `program` like `execvp`: a name containing `/` is used as is, anything else is
/// looked up in `path` (the `PATH` the ranks will see; `None`: unset).
pub fn resolve(program: &OsStr, path: Option<&OsStr>) -> Result<PathBuf, CannotExecute> {
    if program.is_empty() {
        return Err(CannotExecute {
            status: 127,
            reason: "No such file or directory".into(),
        });
    }
    if program.as_bytes().contains(&b'/') {
        let p = PathBuf::from(program);
        return check(&p).map(|()| p);
    }
    let path = path.unwrap_or(OsStr::new(DEFAULT_PATH));
    let mut denied = None;
    for dir in path.as_bytes().split(|&b| b == b':') {
        // An empty entry means the current directory.
        let dir = if dir.is_empty() { b"." as &[u8] } else { dir };
        let candidate = Path::new(OsStr::from_bytes(dir)).join(program);
        match check(&candidate) {
            Ok(()) => return Ok(candidate),
            // Like execvp: remember that something was found but not runnable, keep looking.
            Err(e) if e.status == 126 => denied = denied.or(Some(e)),
            Err(_) => {}
        }
    }
    Err(denied.unwrap_or(CannotExecute {
        status: 127,
        reason: "command not found".into(),
    }))
}

/// The `PATH` an application context's ranks will see: its `-x PATH=...` if any, else ours.
pub fn effective_path(env: &[(OsString, OsString)]) -> Option<OsString> {
    env.iter()
        .rev()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| v.clone())
        .or_else(|| std::env::var_os("PATH"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("oxrun-program-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn finds_programs_on_the_path() {
        let p = resolve(
            OsStr::new("sh"),
            Some(OsStr::new("/nonexistent:/bin:/usr/bin")),
        )
        .unwrap();
        assert!(p.ends_with("sh"));
        assert!(p.is_absolute());
    }

    #[test]
    fn missing_programs_are_127() {
        let e = resolve(
            OsStr::new("oxrun-no-such-program"),
            Some(OsStr::new("/bin")),
        )
        .unwrap_err();
        assert_eq!(e.status, 127);
        let e = resolve(OsStr::new("/nonexistent/prog"), None).unwrap_err();
        assert_eq!(e.status, 127);
        assert_eq!(e.reason, "No such file or directory");
        assert_eq!(resolve(OsStr::new(""), None).unwrap_err().status, 127);
    }

    #[test]
    fn non_executables_are_126() {
        let d = scratch("noexec");
        let f = d.join("data");
        fs::write(&f, "not a program").unwrap();
        fs::set_permissions(&f, fs::Permissions::from_mode(0o644)).unwrap();
        // Root may execute anything with an x bit, but nothing without one.
        let e = resolve(f.as_os_str(), None).unwrap_err();
        assert_eq!((e.status, e.reason.as_str()), (126, "Permission denied"));
        let e = resolve(OsStr::new("data"), Some(d.as_os_str())).unwrap_err();
        assert_eq!(e.status, 126);
        let e = resolve(d.as_os_str(), None).unwrap_err();
        assert_eq!((e.status, e.reason.as_str()), (126, "Is a directory"));
        // An executable later on the path wins over a non-executable earlier one.
        let bin = d.join("bin");
        fs::create_dir(&bin).unwrap();
        let exe = bin.join("data");
        fs::write(&exe, "#!/bin/sh\n").unwrap();
        fs::set_permissions(&exe, fs::Permissions::from_mode(0o755)).unwrap();
        let path = format!("{}:{}", d.display(), bin.display());
        assert_eq!(
            resolve(OsStr::new("data"), Some(OsStr::new(&path))).unwrap(),
            exe
        );
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn context_path_overrides_ours() {
        let env = vec![(OsString::from("PATH"), OsString::from("/opt/x"))];
        assert_eq!(effective_path(&env), Some(OsString::from("/opt/x")));
    }
}
