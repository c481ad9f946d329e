//! Removing a job's shared-memory files from `/dev/shm` when it ends.
//!
//! Ranks name every file they create there `oxmpi.<jobkey>.*`; the key is random per job, so
//! deleting by prefix touches no other job's files.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use oxmpi_pmi::launch::{shm_prefix, valid_jobkey, SHM_DIR};

/// Removes every file in `dir` whose name starts with the job's prefix, and returns those
/// that could not be removed. A malformed key removes nothing.
pub fn remove_job_files_in(dir: &Path, jobkey: &str) -> Vec<(PathBuf, io::Error)> {
    if !valid_jobkey(jobkey) {
        return Vec::new();
    }
    let prefix = shm_prefix(jobkey);
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut failed = Vec::new();
    for entry in entries.flatten() {
        if !entry
            .file_name()
            .as_encoded_bytes()
            .starts_with(prefix.as_bytes())
        {
            continue;
        }
        let path = entry.path();
        let result = match entry.file_type() {
            Ok(t) if t.is_dir() => fs::remove_dir_all(&path),
            _ => fs::remove_file(&path),
        };
        match result {
            Err(e) if e.kind() != io::ErrorKind::NotFound => failed.push((path, e)),
            _ => {}
        }
    }
    failed
}

/// [`remove_job_files_in`] for the shared-memory directory.
pub fn remove_job_files(jobkey: &str) -> Vec<(PathBuf, io::Error)> {
    remove_job_files_in(Path::new(SHM_DIR), jobkey)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn removes_only_this_jobs_files() {
        let dir = std::env::temp_dir().join(format!("oxrun-shm-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        let key = "0123456789abcdef";
        for name in [
            "oxmpi.0123456789abcdef.seg0",
            "oxmpi.0123456789abcdef.x",
            "oxmpi.0123456789abcdee.seg0",
            "other",
        ] {
            fs::write(dir.join(name), b"x").unwrap();
        }
        fs::create_dir(dir.join("oxmpi.0123456789abcdef.d")).unwrap();
        assert!(remove_job_files_in(&dir, key).is_empty());
        let mut left: Vec<String> = fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(left, vec!["other", "oxmpi.0123456789abcdee.seg0"]);
        // A key that would widen the prefix removes nothing.
        assert!(remove_job_files_in(&dir, "").is_empty());
        assert_eq!(fs::read_dir(&dir).unwrap().count(), 2);
        fs::remove_dir_all(&dir).unwrap();
    }
}
