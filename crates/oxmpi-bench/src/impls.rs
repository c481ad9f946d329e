//! Implementations under comparison: a name, a launcher (with the flags each launcher needs
//! for a rank count and a binding policy) and the benchmark program it runs.
//!
//! There are four: oxmpi (its `oxrun` launching the native `oxmpi-bench` subcommands), oxmpi-c
//! (the C suite built with oxmpi's own `mpicc` against its C ABI, also under `oxrun`), and the C
//! suite built with Open MPI's and MPICH's `mpicc`.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::run::CommandSpec;

/// Where ranks may run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Binding {
    /// Each rank pinned to its own core (only possible when ranks ≤ cores).
    DistinctCores,
    /// No pinning; the kernel schedules ranks (used when oversubscribed).
    Unbound,
}

impl Binding {
    /// The policy used for every implementation alike: distinct cores when `np ≤ cores`,
    /// otherwise unbound (and the run is oversubscribed).
    pub fn for_ranks(np: u32, cores: u32) -> Binding {
        if np <= cores {
            Binding::DistinctCores
        } else {
            Binding::Unbound
        }
    }

    /// A short description for reports.
    pub fn describe(self) -> &'static str {
        match self {
            Binding::DistinctCores => "one core per rank",
            Binding::Unbound => "unbound (oversubscribed)",
        }
    }
}

/// A launcher and its command-line conventions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Launcher {
    /// Open MPI's `mpiexec` (PRRTE). Refuses root without two environment variables, and more
    /// ranks than cores without `--oversubscribe`; `--bind-to core` with more ranks than cores
    /// is an error, so oversubscribed runs use `--bind-to none`.
    OpenMpi {
        /// Path of `mpiexec`.
        mpiexec: PathBuf,
    },
    /// MPICH's `mpiexec` (Hydra). Runs any number of ranks; `-bind-to core` pins round-robin.
    Mpich {
        /// Path of `mpiexec`.
        mpiexec: PathBuf,
    },
    /// oxmpi's `oxrun`: `-n N`, `--bind-to core|none`.
    Oxrun {
        /// Path of `oxrun`.
        oxrun: PathBuf,
    },
}

impl Launcher {
    /// The launcher's argv up to (not including) the program: path, rank count, binding.
    pub fn argv(&self, np: u32, binding: Binding) -> Vec<OsString> {
        let n = np.to_string();
        let mut v: Vec<OsString> = Vec::new();
        match self {
            Launcher::OpenMpi { mpiexec } => {
                v.push(mpiexec.into());
                v.extend(["-n", &n].map(OsString::from));
                match binding {
                    Binding::DistinctCores => {
                        v.extend(["--map-by", "core", "--bind-to", "core"].map(OsString::from))
                    }
                    Binding::Unbound => {
                        v.extend(["--oversubscribe", "--bind-to", "none"].map(OsString::from))
                    }
                }
            }
            Launcher::Mpich { mpiexec } => {
                v.push(mpiexec.into());
                v.extend(["-n", &n].map(OsString::from));
                let bind = match binding {
                    Binding::DistinctCores => "core",
                    Binding::Unbound => "none",
                };
                v.extend(["-bind-to", bind].map(OsString::from));
            }
            Launcher::Oxrun { oxrun } => {
                v.push(oxrun.into());
                v.extend(["-n", &n].map(OsString::from));
                let bind = match binding {
                    Binding::DistinctCores => "core",
                    Binding::Unbound => "none",
                };
                v.extend(["--bind-to", bind].map(OsString::from));
            }
        }
        v
    }

    /// Environment the launcher needs.
    pub fn env(&self) -> Vec<(OsString, OsString)> {
        match self {
            // Harmless for other users; required to run as root (as in containers and CI).
            Launcher::OpenMpi { .. } => vec![
                ("OMPI_ALLOW_RUN_AS_ROOT".into(), "1".into()),
                ("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM".into(), "1".into()),
            ],
            Launcher::Mpich { .. } | Launcher::Oxrun { .. } => Vec::new(),
        }
    }
}

/// One implementation under comparison.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Implementation {
    /// Short name used in reports, CSV and plot legends (`oxmpi`, `openmpi`, `mpich`).
    pub name: String,
    /// A longer description (version, where it comes from).
    pub description: String,
    /// How its jobs are launched.
    pub launcher: Launcher,
    /// The benchmark program's argv prefix (the program, perhaps fixed leading arguments).
    pub program: Vec<OsString>,
    /// Why it cannot run at all, if so (then every benchmark is reported as failed with this).
    pub unavailable: Option<String>,
}

impl Implementation {
    /// The full command for one run: launcher argv, program argv, benchmark arguments.
    pub fn command(&self, np: u32, binding: Binding, bench_args: &[String]) -> CommandSpec {
        let mut argv = self.launcher.argv(np, binding);
        argv.extend(self.program.iter().cloned());
        argv.extend(bench_args.iter().map(OsString::from));
        CommandSpec {
            argv,
            env: self.launcher.env(),
            cwd: None,
        }
    }

    /// oxmpi with its native benchmarks: `<target>/release/oxrun -n N --bind-to ...
    /// <target>/release/oxmpi-bench <benchmark> [options]`. Unavailable (with the reason) when
    /// either binary is missing.
    pub fn oxmpi_native(release_dir: &std::path::Path) -> Implementation {
        let oxrun = release_dir.join("oxrun");
        let bench = release_dir.join("oxmpi-bench");
        let unavailable = [&oxrun, &bench].iter().find(|p| !p.is_file()).map(|p| {
            format!(
                "{} not found (build with: cargo build --release -p oxrun -p oxmpi-bench)",
                p.display()
            )
        });
        Implementation {
            name: "oxmpi".to_string(),
            description: format!("oxmpi native benchmarks via {}", oxrun.display()),
            launcher: Launcher::Oxrun { oxrun },
            program: vec![bench.into()],
            unavailable,
        }
    }
}

/// Name of the oxmpi implementation measured through its C ABI (`bench/c/oxbench.c`).
pub const OXMPI_C: &str = "oxmpi-c";

/// Where oxmpi-c's `mpicc`, `mpi.h` and `libmpi_abi.so.1` come from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OxmpiCSource {
    /// The Cargo build tree: `<release>/libmpi_abi.so` and `<release>/oxrun`, with the wrapper
    /// and header from the repository, laid out as a small prefix at `prefix` (an install of
    /// the build tree, without the tools the benchmark does not need).
    BuildTree {
        /// Directory of the release binaries.
        release_dir: PathBuf,
        /// Where to lay the prefix out.
        prefix: PathBuf,
    },
    /// An existing install (`cargo xtask install --prefix DIR`): `DIR/bin/{mpicc,oxrun}`.
    Installed {
        /// The install prefix.
        prefix: PathBuf,
    },
}

impl OxmpiCSource {
    /// The install prefix whose `bin/mpicc` builds the suite.
    pub fn prefix(&self) -> &Path {
        match self {
            OxmpiCSource::BuildTree { prefix, .. } | OxmpiCSource::Installed { prefix } => prefix,
        }
    }

    /// The `oxrun` that launches the suite.
    pub fn oxrun(&self) -> PathBuf {
        match self {
            OxmpiCSource::BuildTree { release_dir, .. } => release_dir.join("oxrun"),
            OxmpiCSource::Installed { prefix } => prefix.join("bin").join("oxrun"),
        }
    }

    /// Why the suite cannot be built or launched from this source, if so.
    pub fn missing(&self) -> Option<String> {
        let needed: Vec<PathBuf> = match self {
            OxmpiCSource::BuildTree { release_dir, .. } => {
                vec![release_dir.join("oxrun"), release_dir.join("libmpi_abi.so")]
            }
            OxmpiCSource::Installed { prefix } => {
                vec![
                    prefix.join("bin").join("mpicc"),
                    prefix.join("bin").join("oxrun"),
                ]
            }
        };
        needed.iter().find(|p| !p.is_file()).map(|p| match self {
            OxmpiCSource::BuildTree { .. } => format!(
                "{} not found (build with: cargo build --release -p oxrun -p oxmpi-capi)",
                p.display()
            ),
            OxmpiCSource::Installed { .. } => format!(
                "{} not found (install with: cargo xtask install --prefix DIR)",
                p.display()
            ),
        })
    }

    /// For [`OxmpiCSource::BuildTree`], lays out `prefix/{bin/mpicc, include/mpi.h,
    /// lib/libmpi_abi.so.1, lib/libmpi_abi.so}` from the build tree and the capi crate at
    /// `capi_dir`, as `cargo xtask install` would; an installed prefix is used as it is.
    pub fn lay_out(&self, capi_dir: &Path) -> Result<(), String> {
        let OxmpiCSource::BuildTree {
            release_dir,
            prefix,
        } = self
        else {
            return Ok(());
        };
        let err = |what: &str, p: &Path, e: std::io::Error| format!("{what} {}: {e}", p.display());
        let (bin, lib, inc) = (
            prefix.join("bin"),
            prefix.join("lib"),
            prefix.join("include"),
        );
        for d in [&bin, &lib, &inc] {
            std::fs::create_dir_all(d).map_err(|e| err("cannot create", d, e))?;
        }
        let copies = [
            (capi_dir.join("scripts").join("mpicc"), bin.join("mpicc")),
            (capi_dir.join("include").join("mpi.h"), inc.join("mpi.h")),
            (
                release_dir.join("libmpi_abi.so"),
                lib.join("libmpi_abi.so.1"),
            ),
        ];
        for (from, to) in &copies {
            // Replace rather than write through: a previous run's library may still be mapped.
            let _ = std::fs::remove_file(to);
            std::fs::copy(from, to).map_err(|e| err("cannot copy", from, e))?;
        }
        let link = lib.join("libmpi_abi.so");
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink("libmpi_abi.so.1", &link)
            .map_err(|e| err("cannot link", &link, e))
    }
}

impl Implementation {
    /// oxmpi measured through its C ABI: `oxrun -n N --bind-to ... <program>`, where `program`
    /// is `bench/c/oxbench.c` built with the `mpicc` of `source`. Unavailable (with the reason)
    /// when `source` lacks a file it needs.
    pub fn oxmpi_c(source: &OxmpiCSource, program: &Path) -> Implementation {
        let from = match source {
            OxmpiCSource::BuildTree { release_dir, .. } => {
                format!("the build tree {}", release_dir.display())
            }
            OxmpiCSource::Installed { prefix } => format!("the install {}", prefix.display()),
        };
        Implementation {
            name: OXMPI_C.to_string(),
            description: format!(
                "oxmpi through its C ABI: bench/c/oxbench.c built with oxmpi's mpicc from {from}, \
                 run with {}",
                source.oxrun().display()
            ),
            launcher: Launcher::Oxrun {
                oxrun: source.oxrun(),
            },
            program: vec![program.into()],
            unavailable: source.missing(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(v: &[OsString]) -> Vec<String> {
        v.iter().map(|s| s.to_string_lossy().into_owned()).collect()
    }

    #[test]
    fn binding_policy() {
        assert_eq!(Binding::for_ranks(2, 2), Binding::DistinctCores);
        assert_eq!(Binding::for_ranks(3, 2), Binding::Unbound);
    }

    #[test]
    fn launcher_flags() {
        let ompi = Launcher::OpenMpi {
            mpiexec: "/p/bin/mpiexec".into(),
        };
        assert_eq!(
            strings(&ompi.argv(2, Binding::DistinctCores)),
            [
                "/p/bin/mpiexec",
                "-n",
                "2",
                "--map-by",
                "core",
                "--bind-to",
                "core"
            ]
        );
        assert_eq!(
            strings(&ompi.argv(8, Binding::Unbound)),
            [
                "/p/bin/mpiexec",
                "-n",
                "8",
                "--oversubscribe",
                "--bind-to",
                "none"
            ]
        );
        assert_eq!(ompi.env().len(), 2);
        let mpich = Launcher::Mpich {
            mpiexec: "mpiexec".into(),
        };
        assert_eq!(
            strings(&mpich.argv(4, Binding::Unbound)),
            ["mpiexec", "-n", "4", "-bind-to", "none"]
        );
        let oxrun = Launcher::Oxrun {
            oxrun: "oxrun".into(),
        };
        assert_eq!(
            strings(&oxrun.argv(2, Binding::DistinctCores)),
            ["oxrun", "-n", "2", "--bind-to", "core"]
        );
    }

    #[test]
    fn command_puts_program_after_launcher() {
        let imp = Implementation {
            name: "mpich".into(),
            description: String::new(),
            launcher: Launcher::Mpich {
                mpiexec: "mpiexec".into(),
            },
            program: vec!["/out/oxbench-mpich".into()],
            unavailable: None,
        };
        let c = imp.command(
            2,
            Binding::DistinctCores,
            &["latency".into(), "--iters".into()],
        );
        assert_eq!(
            strings(&c.argv),
            [
                "mpiexec",
                "-n",
                "2",
                "-bind-to",
                "core",
                "/out/oxbench-mpich",
                "latency",
                "--iters"
            ]
        );
    }

    #[test]
    fn oxmpi_is_unavailable_without_binaries() {
        let imp = Implementation::oxmpi_native(std::path::Path::new("/nonexistent/release"));
        let why = imp.unavailable.unwrap();
        assert!(
            why.contains("/nonexistent/release/oxrun not found"),
            "{why}"
        );
        assert_eq!(imp.name, "oxmpi");
    }

    #[test]
    fn oxmpi_c_runs_under_oxrun_and_says_what_is_missing() {
        let tree = OxmpiCSource::BuildTree {
            release_dir: "/nonexistent/release".into(),
            prefix: "/o/oxmpi-c-prefix".into(),
        };
        assert_eq!(tree.prefix(), Path::new("/o/oxmpi-c-prefix"));
        let imp = Implementation::oxmpi_c(&tree, Path::new("/o/bin/oxbench-oxmpi-c"));
        assert_eq!(imp.name, OXMPI_C);
        let c = imp.command(2, Binding::DistinctCores, &["latency".into()]);
        assert_eq!(
            strings(&c.argv),
            [
                "/nonexistent/release/oxrun",
                "-n",
                "2",
                "--bind-to",
                "core",
                "/o/bin/oxbench-oxmpi-c",
                "latency"
            ]
        );
        let why = imp.unavailable.unwrap();
        assert!(
            why.contains("/nonexistent/release/oxrun not found"),
            "{why}"
        );
        let inst = OxmpiCSource::Installed {
            prefix: "/nonexistent/prefix".into(),
        };
        assert_eq!(inst.oxrun(), PathBuf::from("/nonexistent/prefix/bin/oxrun"));
        assert!(inst.missing().unwrap().contains("bin/mpicc not found"));
        // An installed prefix is used as it is: nothing to lay out.
        assert_eq!(inst.lay_out(Path::new("/nonexistent")), Ok(()));
    }
}
