//! `xtask install --no-build` lays out the installation from the built binaries.

use std::path::PathBuf;
use std::process::Command;

#[test]
fn install_lays_out_a_standard_mpi_tree() {
    let exe = PathBuf::from(env!("CARGO_BIN_EXE_xtask"));
    let bins = exe.parent().expect("target dir").to_path_buf();
    if !bins.join("libmpi_abi.so").exists() || !bins.join("oxrun").exists() {
        panic!(
            "{} lacks libmpi_abi.so or oxrun: build the workspace (cargo build --release --workspace)",
            bins.display()
        );
    }
    let prefix = bins.join("xtask-install-test");
    let _ = std::fs::remove_dir_all(&prefix);
    let out = Command::new(&exe)
        .args(["install", "--no-build", "--prefix"])
        .arg(&prefix)
        .output()
        .expect("run xtask");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for f in [
        "bin/mpicc",
        "bin/mpicxx",
        "bin/mpiexec",
        "bin/mpirun",
        "bin/oxrun",
        "bin/oxmpi-info",
        "bin/oxmpi-bench",
        "include/mpi.h",
        "lib/libmpi_abi.so.1",
        "lib/libmpi_abi.so",
        "lib/libmpi.so",
        "lib/pkgconfig/mpi.pc",
    ] {
        assert!(prefix.join(f).exists(), "{f} missing");
    }
    assert_eq!(
        std::fs::read_link(prefix.join("lib/libmpi.so")).expect("link"),
        PathBuf::from("libmpi_abi.so.1")
    );
    assert_eq!(
        std::fs::read_link(prefix.join("bin/mpiexec")).expect("link"),
        PathBuf::from("oxrun")
    );
    let pc = std::fs::read_to_string(prefix.join("lib/pkgconfig/mpi.pc")).expect("mpi.pc");
    assert!(pc.contains("-lmpi_abi") && !pc.contains("@VERSION@"));
    let bad = Command::new(&exe)
        .arg("install")
        .output()
        .expect("run xtask");
    assert!(!bad.status.success(), "install without --prefix must fail");
    let _ = std::fs::remove_dir_all(&prefix);
}
