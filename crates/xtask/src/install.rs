//! `cargo xtask install --prefix DIR [--no-build] [--from TARGET_DIR]`: lays out a standard
//! MPI installation.
//!
//! ```text
//! DIR/bin/{mpicc, mpicxx, mpiexec, mpirun, oxrun, oxmpi-info, oxmpi-bench}
//! DIR/include/mpi.h
//! DIR/lib/libmpi_abi.so.1, libmpi_abi.so -> libmpi_abi.so.1, libmpi.so -> libmpi_abi.so.1
//! DIR/lib/pkgconfig/mpi.pc
//! ```
//!
//! With a Fortran compiler (`OXMPI_FC`, else `gfortran` if it runs) it adds the Fortran
//! bindings, built here because module files belong to one compiler:
//!
//! ```text
//! DIR/bin/{mpifort, mpif77, mpif90}
//! DIR/include/{mpif.h, mpi.mod, mpi_f08.mod}
//! DIR/lib/libmpifort.so.1, libmpifort.so -> libmpifort.so.1
//! DIR/share/oxmpi/fortran/   generated sources and bindings.txt (every binding, every skip)
//! ```
//!
//! `mpiexec` and `mpirun` are links to `oxrun`; the wrappers and `mpi.pc` find the prefix
//! from their own location, so the tree can be moved. Without `--no-build` the release
//! binaries are built first; `--from` names the directory holding them (default: the
//! workspace's `target/release`, or this program's own directory with `--no-build`).

use std::fs;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The workspace root (this crate is `crates/xtask`).
fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."))
}

/// Parsed command line.
#[derive(Debug, PartialEq)]
struct Options {
    prefix: PathBuf,
    build: bool,
    from: Option<PathBuf>,
}

fn parse(args: &[String]) -> Result<Options, String> {
    let mut prefix = None;
    let mut build = true;
    let mut from = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--prefix" => prefix = Some(it.next().ok_or("--prefix needs a directory")?.into()),
            "--from" => from = Some(it.next().ok_or("--from needs a directory")?.into()),
            "--no-build" => build = false,
            s if s.starts_with("--prefix=") => prefix = Some(s["--prefix=".len()..].into()),
            other => return Err(format!("install: unknown argument {other:?}")),
        }
    }
    Ok(Options {
        prefix: prefix.ok_or("install: --prefix DIR is required")?,
        build,
        from,
    })
}

/// Runs `install` with command-line `args`.
pub fn main(args: &[String]) -> Result<(), String> {
    let opts = parse(args)?;
    let root = workspace_root();
    if opts.build {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
        let status = Command::new(cargo)
            .current_dir(&root)
            .args(["build", "--release", "--workspace"])
            .status()
            .map_err(|e| format!("cannot run cargo: {e}"))?;
        if !status.success() {
            return Err("cargo build --release --workspace failed".to_string());
        }
    }
    let from = match opts.from {
        Some(d) => d,
        None if opts.build => std::env::var_os("CARGO_TARGET_DIR")
            .map_or_else(|| root.join("target"), PathBuf::from)
            .join("release"),
        None => std::env::current_exe()
            .ok()
            .and_then(|e| e.parent().map(Path::to_path_buf))
            .ok_or("cannot find the directory of the built binaries; pass --from")?,
    };
    install(&from, &root.join("crates/oxmpi-capi"), &opts.prefix)?;
    println!("installed oxmpi into {}", opts.prefix.display());
    Ok(())
}

fn copy(from: &Path, to: &Path, mode: u32) -> Result<(), String> {
    // Replace rather than write through: the destination may be a running binary or a link.
    let _ = fs::remove_file(to);
    fs::copy(from, to).map_err(|e| format!("copy {} -> {}: {e}", from.display(), to.display()))?;
    fs::set_permissions(to, fs::Permissions::from_mode(mode))
        .map_err(|e| format!("chmod {}: {e}", to.display()))
}

fn link(target: &str, at: &Path) -> Result<(), String> {
    let _ = fs::remove_file(at);
    symlink(target, at).map_err(|e| format!("symlink {} -> {target}: {e}", at.display()))
}

/// Lays out the installation in `prefix` from built binaries in `bin_dir` and the capi
/// crate's sources in `capi`.
fn install(bin_dir: &Path, capi: &Path, prefix: &Path) -> Result<(), String> {
    let (bin, lib, inc) = (
        prefix.join("bin"),
        prefix.join("lib"),
        prefix.join("include"),
    );
    let pc = lib.join("pkgconfig");
    for d in [&bin, &lib, &inc, &pc] {
        fs::create_dir_all(d).map_err(|e| format!("mkdir {}: {e}", d.display()))?;
    }
    for exe in ["oxrun", "oxmpi-info", "oxmpi-bench"] {
        copy(&bin_dir.join(exe), &bin.join(exe), 0o755)?;
    }
    link("oxrun", &bin.join("mpiexec"))?;
    link("oxrun", &bin.join("mpirun"))?;
    copy(&capi.join("scripts/mpicc"), &bin.join("mpicc"), 0o755)?;
    link("mpicc", &bin.join("mpicxx"))?;
    link("mpicc", &bin.join("mpic++"))?;
    copy(&capi.join("include/mpi.h"), &inc.join("mpi.h"), 0o644)?;
    copy(
        &bin_dir.join("libmpi_abi.so"),
        &lib.join("libmpi_abi.so.1"),
        0o755,
    )?;
    link("libmpi_abi.so.1", &lib.join("libmpi_abi.so"))?;
    link("libmpi_abi.so.1", &lib.join("libmpi.so"))?;
    let template = fs::read_to_string(capi.join("scripts/mpi.pc"))
        .map_err(|e| format!("read mpi.pc template: {e}"))?;
    fs::write(
        pc.join("mpi.pc"),
        template.replace("@VERSION@", env!("CARGO_PKG_VERSION")),
    )
    .map_err(|e| format!("write mpi.pc: {e}"))?;
    match fortran_compiler()? {
        Some(fc) => install_fortran(&fc, capi, prefix),
        None => {
            println!(
                "install: no Fortran compiler (gfortran, or OXMPI_FC): Fortran bindings left out"
            );
            Ok(())
        }
    }
}

/// The Python that runs the bindings generator (`OXMPI_PYTHON`, default `python3`).
fn python() -> String {
    std::env::var("OXMPI_PYTHON").unwrap_or_else(|_| "python3".to_string())
}

/// The Fortran compiler to build with: `OXMPI_FC` (which must work), else `gfortran` if it
/// runs, else none.
fn fortran_compiler() -> Result<Option<String>, String> {
    let works = |fc: &str| {
        Command::new(fc)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    };
    match std::env::var("OXMPI_FC") {
        Ok(fc) if !fc.is_empty() => {
            if works(&fc) {
                Ok(Some(fc))
            } else {
                Err(format!("OXMPI_FC={fc} does not run"))
            }
        }
        _ if !works(&python()) => {
            if works("gfortran") {
                println!("install: {} does not run, so the Fortran bindings cannot be generated; set OXMPI_PYTHON", python());
            }
            Ok(None)
        }
        _ => Ok(works("gfortran").then(|| "gfortran".to_string())),
    }
}

/// Runs `cmd` in `dir`, failing with its output.
fn run(what: &str, cmd: &mut Command, dir: &Path) -> Result<(), String> {
    let out = cmd
        .current_dir(dir)
        .output()
        .map_err(|e| format!("{what}: cannot run {:?}: {e}", cmd.get_program()))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{what} failed: {:?}\n{}{}",
            cmd,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

/// The Fortran part of the installation, built with compiler `fc`: the bindings generated
/// from the installed mpi.h (crates/oxmpi-capi/fortran/gen.py), libmpifort, the modules and
/// the wrappers.
fn install_fortran(fc: &str, capi: &Path, prefix: &Path) -> Result<(), String> {
    let (bin, lib, inc) = (
        prefix.join("bin"),
        prefix.join("lib"),
        prefix.join("include"),
    );
    let src = capi.join("fortran");
    let build = prefix.join("share/oxmpi/fortran");
    fs::create_dir_all(&build).map_err(|e| format!("mkdir {}: {e}", build.display()))?;
    for f in ["runtime.c", "runtime.h"] {
        copy(&src.join(f), &build.join(f), 0o644)?;
    }
    run(
        "gen.py",
        Command::new(python())
            .arg(src.join("gen.py"))
            .arg(inc.join("mpi.h"))
            .arg(&build)
            .arg(fc),
        &build,
    )?;
    copy(&build.join("mpif.h"), &inc.join("mpif.h"), 0o644)?;
    let cc = std::env::var("OXMPI_CC").unwrap_or_else(|_| "cc".to_string());
    let mut objs = Vec::new();
    for c in ["runtime.c", "mpifort_gen.c", "mpif08_gen.c"] {
        let o = build.join(c.replace(".c", ".o"));
        run(
            c,
            Command::new(&cc)
                .args(["-O2", "-fPIC", "-c", "-I"])
                .arg(&inc)
                .arg("-I")
                .arg(&build)
                .arg(build.join(c))
                .arg("-o")
                .arg(&o),
            &build,
        )?;
        objs.push(o);
    }
    // Modules are written to the working directory by gfortran, ifx and flang alike.
    for f in ["mpi.f90", "mpi_f08.f90"] {
        let o = build.join(f.replace(".f90", ".o"));
        run(
            f,
            Command::new(fc)
                .args(["-O2", "-fPIC", "-c", "-I"])
                .arg(&inc)
                .arg(build.join(f))
                .arg("-o")
                .arg(&o),
            &inc,
        )?;
        objs.push(o);
    }
    let so = lib.join("libmpifort.so.1");
    let _ = fs::remove_file(&so);
    run(
        "link libmpifort",
        Command::new(fc)
            .args(["-shared", "-Wl,-soname,libmpifort.so.1", "-o"])
            .arg(&so)
            .args(&objs)
            .arg("-L")
            .arg(&lib)
            .args(["-Wl,-rpath,$ORIGIN", "-lmpi_abi"]),
        &build,
    )?;
    link("libmpifort.so.1", &lib.join("libmpifort.so"))?;
    let script = fs::read_to_string(capi.join("scripts/mpifort"))
        .map_err(|e| format!("read mpifort: {e}"))?;
    let wrapper = bin.join("mpifort");
    let _ = fs::remove_file(&wrapper);
    fs::write(&wrapper, script.replace("@FC@", fc)).map_err(|e| format!("write mpifort: {e}"))?;
    fs::set_permissions(&wrapper, fs::Permissions::from_mode(0o755))
        .map_err(|e| format!("chmod mpifort: {e}"))?;
    link("mpifort", &bin.join("mpif77"))?;
    link("mpifort", &bin.join("mpif90"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn parses_prefix_build_and_from() {
        assert_eq!(
            parse(&args("--prefix /opt/x --no-build")).unwrap(),
            Options {
                prefix: "/opt/x".into(),
                build: false,
                from: None
            }
        );
        let o = parse(&args("--prefix=/p --from /t")).unwrap();
        assert_eq!(
            (o.prefix, o.build, o.from),
            ("/p".into(), true, Some("/t".into()))
        );
    }

    #[test]
    fn rejects_missing_prefix_and_unknown_flags() {
        assert!(parse(&args("--no-build")).unwrap_err().contains("--prefix"));
        assert!(parse(&args("--prefix")).is_err());
        assert!(parse(&args("--prefix /p --frob"))
            .unwrap_err()
            .contains("--frob"));
    }
}
