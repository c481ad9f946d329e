//! Fortran programs as users build them: an installation made by `cargo xtask install` with
//! a Fortran compiler (gfortran from Debian, installed here if missing; `OXMPI_FC` picks
//! another), programs in tests/fortran built with its `mpifort`/`mpif77` and run under its
//! `mpiexec` at 1 to 4 ranks, a job mixing C and Fortran ranks, requests passed between C
//! and Fortran in one program, the Fortran profiling interface, the wrappers, and a Fortran
//! symbol (and its `pmpi_` twin) for every C function the installed mpi.h declares.
//!
//! Needs the release binaries (`cargo build --release --workspace --bins`, or the workspace
//! test run, which builds them).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use oxmpi_tests::{run_with_deadline, target_dir, text};

fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn runs(prog: &str) -> bool {
    Command::new(prog)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Installs Debian package `pkg` (idempotent; apt-get update once if it is not found).
/// `false` when this process cannot (not root, no apt-get).
fn apt_install(pkg: &str) -> bool {
    let install = || {
        Command::new("apt-get")
            .args(["install", "-y", "-q", pkg])
            .env("DEBIAN_FRONTEND", "noninteractive")
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if install() {
        return true;
    }
    let _ = Command::new("apt-get").args(["update", "-q"]).output();
    install()
}

/// Whether `prog` runs, after installing Debian package `pkg` if it does not.
fn have(prog: &str, pkg: &str) -> bool {
    runs(prog) || (apt_install(pkg) && runs(prog))
}

/// Whether a Fortran compiler (and python3, which generates the bindings) is there, after
/// installing gfortran if needed; the reason when it cannot be had.
fn toolchain() -> Result<(), String> {
    static READY: OnceLock<Result<(), String>> = OnceLock::new();
    READY
        .get_or_init(|| {
            if let Ok(fc) = std::env::var("OXMPI_FC") {
                if !runs(&fc) {
                    return Err(format!("OXMPI_FC={fc} does not run"));
                }
            } else if !have("gfortran", "gfortran") {
                return Err(
                    "gfortran is not installed and apt-get install gfortran failed \
                            (needs root and the Debian mirror)"
                        .to_string(),
                );
            }
            if !have("python3", "python3") {
                return Err("python3 is not installed and apt-get install python3 failed".into());
            }
            Ok(())
        })
        .clone()
}

/// Skips the calling test (with the reason) when there is no Fortran toolchain.
macro_rules! need_fortran {
    () => {
        if let Err(why) = toolchain() {
            eprintln!("SKIP: {why}");
            return;
        }
    };
}

/// Runs the installer; `env` is added to its environment.
fn xtask_install(dir: &Path, env: &[(&str, &str)]) -> Output {
    let xtask = target_dir().join("xtask");
    assert!(
        xtask.exists(),
        "{} not found: build the workspace's binaries (cargo build --release --workspace --bins)",
        xtask.display()
    );
    let mut cmd = Command::new(&xtask);
    cmd.args(["install", "--no-build", "--from"])
        .arg(target_dir())
        .arg("--prefix")
        .arg(dir);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("run xtask install")
}

/// Where this test run installs oxmpi, with its Fortran bindings (once per test binary).
fn prefix() -> &'static Path {
    static PREFIX: OnceLock<PathBuf> = OnceLock::new();
    PREFIX.get_or_init(|| {
        let dir = target_dir().join("fortran-test-install");
        let _ = std::fs::remove_dir_all(&dir);
        // As in tests/capi.rs: refresh target/release/libmpi_abi.so and the installer.
        let build = Command::new(env!("CARGO"))
            .args([
                "build",
                "--release",
                "-p",
                "oxmpi-capi",
                "--lib",
                "-p",
                "xtask",
            ])
            .output()
            .expect("run cargo build");
        assert!(
            build.status.success(),
            "cargo build failed: {:?}",
            text(&build)
        );
        let out = xtask_install(&dir, &[]);
        assert!(
            out.status.success(),
            "xtask install failed: {:?}",
            text(&out)
        );
        assert!(
            dir.join("lib/libmpifort.so").exists(),
            "the installation has no Fortran bindings: {:?}",
            text(&out)
        );
        dir
    })
}

/// Builds tests/fortran/`file` with the installed `wrapper` and extra `flags` (once).
fn program(file: &str, wrapper: &str, flags: &[&str]) -> PathBuf {
    static BUILT: OnceLock<Mutex<HashMap<String, PathBuf>>> = OnceLock::new();
    let built = BUILT.get_or_init(|| Mutex::new(HashMap::new()));
    let mut built = built.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(p) = built.get(file) {
        return p.clone();
    }
    let out_dir = prefix().join("tests");
    std::fs::create_dir_all(&out_dir).expect("mkdir tests");
    let exe = out_dir.join(file.replace('.', "_"));
    let src = crate_dir().join("tests/fortran").join(file);
    let out = Command::new(prefix().join("bin").join(wrapper))
        .args(flags)
        .args(["-O2", "-Wall", "-o"])
        .arg(&exe)
        .arg(&src)
        .current_dir(&out_dir)
        .output()
        .expect("run the wrapper");
    assert!(
        out.status.success(),
        "{wrapper} {file} failed: {:?}",
        text(&out)
    );
    built.insert(file.to_string(), exe.clone());
    exe
}

/// Runs `args` under the installed `mpiexec` with a deadline.
fn mpiexec(args: &[&str]) -> Output {
    let mut cmd = Command::new(prefix().join("bin/mpiexec"));
    cmd.args(["--timeout", "60"]).args(args);
    run_with_deadline(cmd, Duration::from_secs(90))
}

/// Runs `exe` at each of `nps` ranks; every run must succeed.
fn corpus(exe: &Path, nps: &[usize]) {
    for &np in nps {
        let out = mpiexec(&["-n", &np.to_string(), exe.to_str().expect("utf-8 path")]);
        let (o, e) = text(&out);
        assert!(
            out.status.success(),
            "{} at np {np} failed ({:?})\nstdout:\n{o}\nstderr:\n{e}",
            exe.display(),
            out.status
        );
    }
}

#[test]
fn f77_point_to_point_with_mismatched_buffers() {
    need_fortran!();
    // A classic code: INTEGER and DOUBLE PRECISION arrays and scalars go to the same routines.
    let exe = program("p2p77.f", "mpif77", &["-fallow-argument-mismatch", "-w"]);
    corpus(&exe, &[1, 2, 3, 4]);
}

#[test]
fn f77_collectives_reductions_and_user_ops() {
    need_fortran!();
    let exe = program("coll77.f", "mpif77", &["-fallow-argument-mismatch", "-w"]);
    corpus(&exe, &[1, 2, 3, 4]);
}

#[test]
fn use_mpi_free_form() {
    need_fortran!();
    let exe = program(
        "use_mpi.f90",
        "mpif90",
        &["-fallow-argument-mismatch", "-w"],
    );
    corpus(&exe, &[1, 2, 3, 4]);
}

#[test]
fn use_mpi_f08() {
    need_fortran!();
    let exe = program("f08.f90", "mpifort", &[]);
    corpus(&exe, &[1, 2, 3, 4]);
}

#[test]
fn window_errhandlers_keyvals_attributes_and_names() {
    need_fortran!();
    let exe = program("win77.f", "mpif77", &[]);
    corpus(&exe, &[1, 2]);
    let exe = program("win08.f90", "mpifort", &[]);
    corpus(&exe, &[1, 2]);
}

#[test]
fn mixed_job_of_c_and_fortran_ranks() {
    need_fortran!();
    let f = program("mixed.f90", "mpifort", &[]);
    let c_src = crate_dir().join("tests/fortran/mixed.c");
    let c = prefix().join("tests/mixed_c");
    let out = Command::new(prefix().join("bin/mpicc"))
        .args(["-std=c11", "-O1", "-Wall", "-Werror", "-o"])
        .arg(&c)
        .arg(&c_src)
        .output()
        .expect("run mpicc");
    assert!(out.status.success(), "mpicc mixed.c: {:?}", text(&out));
    let (c, f) = (c.to_str().expect("utf-8"), f.to_str().expect("utf-8"));
    for (nc, nf) in [("2", "2"), ("1", "3"), ("3", "1")] {
        let out = mpiexec(&["-n", nc, c, ":", "-n", nf, f]);
        let (o, e) = text(&out);
        assert!(
            out.status.success(),
            "{nc} C + {nf} Fortran ranks: {:?}\n{o}\n{e}",
            out.status
        );
    }
}

#[test]
fn request_integers_cross_between_fortran_and_c() {
    need_fortran!();
    // One program, both languages: the C half compiled by mpicc, linked by mpifort.
    let dir = prefix().join("tests");
    std::fs::create_dir_all(&dir).expect("mkdir tests");
    let obj = dir.join("reqint_c.o");
    let out = Command::new(prefix().join("bin/mpicc"))
        .args(["-std=c11", "-O1", "-Wall", "-Werror", "-c", "-o"])
        .arg(&obj)
        .arg(crate_dir().join("tests/fortran/reqint.c"))
        .output()
        .expect("run mpicc");
    assert!(out.status.success(), "mpicc reqint.c: {:?}", text(&out));
    let exe = dir.join("reqint");
    let out = Command::new(prefix().join("bin/mpifort"))
        .args(["-O2", "-Wall", "-o"])
        .arg(&exe)
        .arg(crate_dir().join("tests/fortran/reqint.f90"))
        .arg(&obj)
        .current_dir(&dir)
        .output()
        .expect("run mpifort");
    assert!(out.status.success(), "mpifort reqint.f90: {:?}", text(&out));
    corpus(&exe, &[1, 2, 3]);
}

#[test]
fn fortran_profiling_interface() {
    need_fortran!();
    // The program's own MPI_SEND (and others) forward to PMPI_SEND; buffers of any type go
    // through one routine, so classic mismatch rules apply.
    let exe = program("pmpi77.f", "mpif77", &["-fallow-argument-mismatch", "-w"]);
    corpus(&exe, &[1, 2]);
    // A tool in its own file sees the calls an mpi_f08 program makes.
    let dir = prefix().join("tests");
    let exe = dir.join("pmpi08");
    let out = Command::new(prefix().join("bin/mpifort"))
        .args(["-fallow-argument-mismatch", "-w", "-O2", "-o"])
        .arg(&exe)
        .arg(crate_dir().join("tests/fortran/pmpi08.f90"))
        .arg(crate_dir().join("tests/fortran/pmpi_tool.f"))
        .current_dir(&dir)
        .output()
        .expect("run mpifort");
    assert!(out.status.success(), "mpifort pmpi08.f90: {:?}", text(&out));
    corpus(&exe, &[1, 2]);
}

#[test]
fn use_mpi_checks_the_arguments_it_can() {
    need_fortran!();
    // A REAL count and a missing ierror are compile errors with the module's interfaces.
    let dir = prefix().join("tests");
    std::fs::create_dir_all(&dir).expect("mkdir tests");
    // gfortran's messages name the argument; LC_ALL=C keeps them in plain quotes.
    for (name, body, want) in [
        (
            "badcount.f90",
            "call MPI_SEND(x, 1.0, MPI_REAL, 0, 0, MPI_COMM_WORLD, ierr)",
            "argument 'count'",
        ),
        (
            "noierr.f90",
            "call MPI_BARRIER(MPI_COMM_WORLD)",
            "argument 'ierror'",
        ),
    ] {
        let src = dir.join(name);
        std::fs::write(
            &src,
            format!("program p\n use mpi\n real :: x\n integer :: ierr\n {body}\nend program p\n"),
        )
        .expect("write source");
        let out = Command::new(prefix().join("bin/mpif90"))
            .args(["-c", "-o"])
            .arg(dir.join(name.replace(".f90", ".o")))
            .arg(&src)
            .current_dir(&dir)
            .env("LC_ALL", "C")
            .output()
            .expect("run mpif90");
        let (_, e) = text(&out);
        assert!(!out.status.success(), "{name} compiled");
        assert!(e.contains(want), "{name}: {e}");
    }
}

#[test]
fn generator_unit_tests() {
    need_fortran!();
    let out = Command::new("python3")
        .args(["-B", "-m", "unittest", "discover", "-s"])
        .arg(crate_dir().join("fortran"))
        .args(["-p", "test_*.py"])
        .output()
        .expect("run python3");
    let (o, e) = text(&out);
    assert!(out.status.success(), "gen.py unit tests failed:\n{o}\n{e}");
    assert!(e.contains("OK"), "{e}");
}

#[test]
fn every_declared_c_function_has_a_fortran_symbol() {
    need_fortran!();
    let header = std::fs::read_to_string(prefix().join("include/mpi.h")).expect("read mpi.h");
    let decl: Vec<String> = header
        .split(';')
        .filter_map(|d| {
            let d = d.trim_start();
            let d = d
                .rsplit('\n')
                .find(|l| l.contains("MPI_") && l.contains('('))?;
            let name = d.split('(').next()?.split_whitespace().last()?;
            (name.starts_with("MPI_") && !d.trim_start().starts_with("typedef"))
                .then(|| name.to_string())
        })
        .filter(|n| {
            !["_c2f", "_f2c", "_toint", "_fromint"]
                .iter()
                .any(|s| n.ends_with(s))
        })
        .collect();
    assert!(decl.len() > 150, "only {} declarations read", decl.len());
    let out = Command::new("nm")
        .args(["-D", "--defined-only"])
        .arg(prefix().join("lib/libmpifort.so"))
        .output()
        .expect("run nm");
    let syms: std::collections::HashSet<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().last().map(String::from))
        .collect();
    // A function gen.py cannot bind by table (a new callback type, say) must be listed in
    // bindings.txt with the reason; anything else missing is a generator bug.
    let report = std::fs::read_to_string(prefix().join("share/oxmpi/fortran/bindings.txt"))
        .expect("read bindings.txt");
    let skipped: Vec<&str> = report
        .split("# skipped")
        .nth(1)
        .expect("a skipped section")
        .split("\n# ")
        .next()
        .unwrap_or("")
        .lines()
        .skip(1)
        .filter_map(|l| l.split(':').next())
        .collect();
    // Every F77 binding is in mpi_f08 too, or listed as not, with the reason.
    let section = |title: &str| -> Vec<&str> {
        report
            .split(title)
            .nth(1)
            .unwrap_or("")
            .split("\n# ")
            .next()
            .unwrap_or("")
            .lines()
            .skip(1)
            .filter_map(|l| l.split(':').next())
            .collect()
    };
    let (f77, f08, not08) = (
        section("# F77 / mpi bindings"),
        section("# mpi_f08 bindings"),
        section("# not in mpi_f08"),
    );
    assert!(
        f77.len() > 150,
        "bindings.txt lists {} F77 bindings",
        f77.len()
    );
    let no_f08: Vec<&&str> = f77
        .iter()
        .filter(|n| !f08.contains(n) && !not08.contains(n))
        .collect();
    assert!(
        no_f08.is_empty(),
        "in mpif.h but neither in mpi_f08 nor listed as left out: {no_f08:?}"
    );
    let missing: Vec<&String> = decl
        .iter()
        .filter(|d| !syms.contains(&format!("{}_", d.to_lowercase())))
        .collect();
    // Every binding has its profiling entry point.
    let no_pmpi: Vec<&String> = decl
        .iter()
        .filter(|d| !missing.contains(d))
        .filter(|d| !syms.contains(&format!("p{}_", d.to_lowercase())))
        .collect();
    assert!(
        no_pmpi.is_empty(),
        "bound without a pmpi_x_ symbol: {no_pmpi:?}"
    );
    for d in &missing {
        assert!(
            skipped.contains(&d.as_str()),
            "{d} has no Fortran binding and bindings.txt does not say why"
        );
        eprintln!("NOTE: no Fortran binding for {d} (see bindings.txt)");
    }
    // Every function of the C library at the time the Fortran layer was written is bound.
    for d in [
        "MPI_Waitall",
        "MPI_Type_create_struct_c",
        "MPI_Type_get_contents_c",
        "MPI_Pcontrol",
        "MPI_Comm_get_attr",
        "MPI_Op_create",
        "MPI_Win_create_errhandler",
        "MPI_Win_create_keyval",
        "MPI_Win_set_attr",
    ] {
        assert!(
            !missing.iter().any(|m| *m == d),
            "no Fortran binding for {d}"
        );
    }
    assert!(
        missing.len() * 20 < decl.len(),
        "most functions unbound: {missing:?}"
    );
}

#[test]
fn fortran_wrappers_show_their_commands() {
    need_fortran!();
    let show = |w: &str, args: &[&str], env: &[(&str, &str)]| {
        let mut cmd = Command::new(prefix().join("bin").join(w));
        cmd.args(args);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let out = cmd.output().expect("run wrapper");
        assert!(out.status.success(), "{w} {args:?}: {:?}", text(&out));
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    let inc = format!("-I{}", prefix().join("include").display());
    for w in ["mpifort", "mpif77", "mpif90"] {
        let s = show(w, &["-show", "-c", "x.f90"], &[]);
        assert!(s.contains(&inc) && s.ends_with("-c x.f90"), "{w}: {s}");
        assert!(!s.contains("-lmpifort"), "{w} links with -c: {s}");
        let s = show(w, &["-show", "-o", "x", "x.f90"], &[]);
        assert!(s.contains("-lmpifort -lmpi_abi"), "{w}: {s}");
    }
    let s = show("mpifort", &["-show", "x.f"], &[("OXMPI_FC", "myfc")]);
    assert!(s.starts_with("myfc "), "OXMPI_FC: {s}");
    assert_eq!(show("mpifort", &["--showme:compile"], &[]), inc);
    assert!(show("mpifort", &["--showme:link"], &[]).contains("-lmpifort"));
}

#[test]
fn install_fails_on_a_fortran_compiler_that_does_not_run() {
    need_fortran!();
    let dir = target_dir().join("fortran-test-bad-fc");
    let _ = std::fs::remove_dir_all(&dir);
    // prefix() has built what the installer copies.
    prefix();
    let out = xtask_install(&dir, &[("OXMPI_FC", "/nonexistent/fortran-compiler")]);
    assert!(
        !out.status.success(),
        "install succeeded with a missing OXMPI_FC"
    );
    let (o, e) = text(&out);
    assert!(
        format!("{o}{e}").contains("OXMPI_FC=/nonexistent/fortran-compiler does not run"),
        "{o}\n{e}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
