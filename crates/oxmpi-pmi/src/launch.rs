//! What `oxrun` promises its ranks beyond PMI-1 itself.
//!
//! Ranks started by another launcher (Hydra, Slurm) see none of these variables and fall back
//! to safe defaults, so nothing here is required for correctness, only for clean-up and
//! authentication under oxrun.

/// Environment variable naming this job's key: a random lowercase-hex string that prefixes
/// every file the ranks create, so the launcher can remove them all when the job ends.
pub const JOBKEY_ENV: &str = "OXMPI_JOBKEY";

/// Directory for shared-memory files.
pub const SHM_DIR: &str = "/dev/shm";

/// File-name prefix (inside [`SHM_DIR`]) of every shared-memory file of the job `jobkey`.
pub fn shm_prefix(jobkey: &str) -> String {
    format!("oxmpi.{jobkey}.")
}

/// The job key a rank uses: `OXMPI_JOBKEY` from oxrun if well formed, else under Slurm one
/// derived from `SLURM_JOB_ID` ([`slurm_jobkey`]), else `None` (the rank picks a random one).
pub fn jobkey_from_env() -> Option<String> {
    std::env::var(JOBKEY_ENV)
        .ok()
        .filter(|k| valid_jobkey(k))
        .or_else(|| slurm_jobkey(&std::env::var("SLURM_JOB_ID").ok()?))
}

/// The job key of every oxmpi rank of Slurm job `job_id`: its number as 16 hex digits, so an
/// epilog can remove what killed ranks left in `/dev/shm` with
/// `rm -f /dev/shm/oxmpi.$(printf %016x $SLURM_JOB_ID).*`.
pub fn slurm_jobkey(job_id: &str) -> Option<String> {
    let id: u64 = job_id.trim().parse().ok()?;
    Some(format!("{id:016x}"))
}

/// Whether `jobkey` is well formed (8..=64 lowercase hex digits): the launcher deletes by
/// prefix, so a malformed key must never widen the prefix.
pub fn valid_jobkey(jobkey: &str) -> bool {
    (8..=64).contains(&jobkey.len())
        && jobkey
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jobkeys_are_checked() {
        assert!(valid_jobkey("0123abcd"));
        assert!(!valid_jobkey("0123abc"));
        assert!(!valid_jobkey("0123ABCD"));
        assert!(!valid_jobkey("../../etc"));
        assert!(!valid_jobkey(""));
        assert_eq!(shm_prefix("0123abcd"), "oxmpi.0123abcd.");
    }

    #[test]
    fn slurm_jobs_have_fixed_keys() {
        assert_eq!(slurm_jobkey("26").as_deref(), Some("000000000000001a"));
        assert!(valid_jobkey(&slurm_jobkey("4294967295").unwrap()));
        assert_eq!(slurm_jobkey("12_3"), None);
        assert_eq!(slurm_jobkey(""), None);
    }
}
