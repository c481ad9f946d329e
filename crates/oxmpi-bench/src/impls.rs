//! Implementations under comparison: a name, a launcher (with the flags each launcher needs
//! for a rank count and a binding policy) and the benchmark program it runs.
//!
//! Today there are three: oxmpi (its `oxrun` launching the native `oxmpi-bench` subcommands)
//! and the C suite built with Open MPI's and MPICH's `mpicc`. Once oxmpi has a C ABI, the C
//! suite built with oxmpi's `mpicc` is one more [`Implementation`] with the [`Launcher::Oxrun`]
//! launcher.

use std::ffi::OsString;
use std::path::PathBuf;

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
}
