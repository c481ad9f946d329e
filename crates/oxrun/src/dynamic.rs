//! Jobs started by a running rank (PMI `spawn`, behind `MPI_Comm_spawn`): checking a request
//! before anything starts.
//!
//! A spawned job runs on this host (the head's), bound like the launch's ranks would be after
//! them (`job::SpawnBinding`), with its stdin from `/dev/null`,
//! its output forwarded like every rank's, and its own key-value space; its ranks see
//! `PMI_SPAWNED=1`. Of the info keys, `host` (which must name this host) and `wdir` (the
//! working directory, also where a relative program is looked for) are honoured and the
//! others ignored, as MPICH's Hydra does with keys it does not know.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use oxmpi_pmi::SpawnRequest;

use crate::hosts;
use crate::program;

/// One command of a spawn, ready to start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prepared {
    /// Resolved program.
    pub program: PathBuf,
    /// `argv[0]`: the name the spawner gave.
    pub argv0: OsString,
    /// Arguments.
    pub args: Vec<OsString>,
    /// Working directory (`wdir`), if given.
    pub cwd: Option<PathBuf>,
    /// Processes running it.
    pub count: u32,
}

/// Checks every command of `req` (host, working directory, program) before any process
/// starts; `own` is this host's name. The error is the message for the spawner.
pub fn prepare(req: &SpawnRequest, own: Option<&str>) -> Result<Vec<Prepared>, String> {
    let mut out = Vec::with_capacity(req.commands.len());
    for c in &req.commands {
        if let Some(h) = c.info("host") {
            if !hosts::is_local(h, own) {
                return Err(format!(
                    "host {h:?} is not this host (oxrun spawns on its own host only)"
                ));
            }
        }
        let cwd = c.info("wdir").map(PathBuf::from);
        if let Some(d) = &cwd {
            if !d.is_dir() {
                return Err(format!("wdir {} is not a directory", d.display()));
            }
        }
        let name = Path::new(&c.execname);
        let lookup = match &cwd {
            Some(d) if c.execname.contains('/') && name.is_relative() => d.join(name),
            _ => name.to_path_buf(),
        };
        let path = program::resolve(lookup.as_os_str(), program::effective_path(&[]).as_deref())
            .map_err(|e| format!("cannot execute {}: {}", c.execname, e.reason))?;
        out.push(Prepared {
            program: path,
            argv0: OsString::from(&c.execname),
            args: c.args.iter().map(OsString::from).collect(),
            cwd,
            count: c.nprocs,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxmpi_pmi::SpawnCommand;

    fn cmd(exec: &str, info: &[(&str, &str)]) -> SpawnRequest {
        SpawnRequest {
            commands: vec![SpawnCommand {
                execname: exec.into(),
                nprocs: 2,
                args: vec!["a".into()],
                info: info
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            }],
            preput: vec![],
        }
    }

    #[test]
    fn programs_are_resolved_with_wdir_and_host() {
        let p = prepare(&cmd("sh", &[("host", "localhost"), ("soft", "1")]), None).unwrap();
        assert_eq!(p.len(), 1);
        assert!(p[0].program.ends_with("sh"), "{p:?}");
        assert_eq!((p[0].count, p[0].cwd.clone()), (2, None));
        let p = prepare(&cmd("./sh", &[("wdir", "/bin")]), None).unwrap();
        assert_eq!(p[0].program, Path::new("/bin/sh"));
        assert_eq!(p[0].cwd.as_deref(), Some(Path::new("/bin")));
        assert_eq!(p[0].argv0, "./sh");
        let p = prepare(&cmd("sh", &[("host", "me")]), Some("me")).unwrap();
        assert_eq!(p.len(), 1);
    }

    #[test]
    fn bad_commands_are_refused_with_a_reason() {
        let e = prepare(&cmd("/nonexistent/prog", &[]), None).unwrap_err();
        assert!(e.contains("cannot execute /nonexistent/prog"), "{e}");
        let e = prepare(&cmd("sh", &[("host", "elsewhere")]), Some("me")).unwrap_err();
        assert!(e.contains("elsewhere"), "{e}");
        let e = prepare(&cmd("sh", &[("wdir", "/nonexistent")]), None).unwrap_err();
        assert!(e.contains("not a directory"), "{e}");
    }
}
