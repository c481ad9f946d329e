//! The C ABI as C programs see it: an installation made by `cargo xtask install`, C programs
//! (tests/c/*.c) built with its `mpicc` and run under its `mpiexec` at 1 to 4 ranks, one run
//! per argument error class, the fatal handlers, the header in every C and C++ mode, the
//! exported symbols, the wrappers, and binary interoperability with MPICH's standard-ABI
//! library both ways.
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

/// Where this test run installs oxmpi (once per test binary).
fn prefix() -> &'static Path {
    static PREFIX: OnceLock<PathBuf> = OnceLock::new();
    PREFIX.get_or_init(|| {
        let dir = target_dir().join("capi-test-install");
        let _ = std::fs::remove_dir_all(&dir);
        // `cargo test` compiles the library for these tests but does not refresh
        // target/release/libmpi_abi.so, which the installation copies; a build does (and is
        // quick: the compiled library is already there).
        let build = Command::new(env!("CARGO"))
            .args(["build", "--release", "-p", "oxmpi-capi", "--lib"])
            .output()
            .expect("run cargo build");
        assert!(build.status.success(), "cargo build failed: {:?}", text(&build));
        let xtask = target_dir().join("xtask");
        assert!(
            xtask.exists(),
            "{} not found: build the workspace's binaries (cargo build --release --workspace --bins)",
            xtask.display()
        );
        let out = Command::new(&xtask)
            .args(["install", "--no-build", "--from"])
            .arg(target_dir())
            .arg("--prefix")
            .arg(&dir)
            .output()
            .expect("run xtask install");
        assert!(out.status.success(), "xtask install failed: {:?}", text(&out));
        dir
    })
}

/// Builds tests/c/`name`.c with the installed `mpicc` (once) and returns the program.
fn program(name: &str) -> PathBuf {
    static BUILT: OnceLock<Mutex<HashMap<String, PathBuf>>> = OnceLock::new();
    let built = BUILT.get_or_init(|| Mutex::new(HashMap::new()));
    let mut built = built.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(p) = built.get(name) {
        return p.clone();
    }
    let out_dir = prefix().join("tests");
    std::fs::create_dir_all(&out_dir).expect("mkdir tests");
    let exe = out_dir.join(name);
    // C++ programs (tests/c/NAME.cpp) go through mpicxx.
    let cxx = crate_dir().join("tests/c").join(format!("{name}.cpp"));
    let (wrapper, std, src) = if cxx.exists() {
        ("bin/mpicxx", "-std=c++17", cxx)
    } else {
        (
            "bin/mpicc",
            "-std=c11",
            crate_dir().join("tests/c").join(format!("{name}.c")),
        )
    };
    let out = Command::new(prefix().join(wrapper))
        .args([std, "-O1", "-Wall", "-Wextra", "-Werror", "-pthread", "-o"])
        .arg(&exe)
        .arg(&src)
        .output()
        .expect("run mpicc");
    assert!(
        out.status.success(),
        "mpicc {name}.c failed: {:?}",
        text(&out)
    );
    built.insert(name.to_string(), exe.clone());
    exe
}

/// Runs `prog args` at `np` ranks under the installed `mpiexec`, with extra environment.
fn mpiexec(np: usize, prog: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(prefix().join("bin/mpiexec"));
    cmd.args(["--timeout", "60", "-n", &np.to_string()])
        .arg(prog)
        .args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    run_with_deadline(cmd, Duration::from_secs(90))
}

/// Runs C program `name` at each of `nps` ranks; every run must succeed.
fn corpus(name: &str, nps: &[usize]) {
    let exe = program(name);
    for &np in nps {
        let out = mpiexec(np, &exe, &[], &[]);
        let (o, e) = text(&out);
        assert!(
            out.status.success(),
            "{name} at np {np} failed ({:?})\nstdout:\n{o}\nstderr:\n{e}",
            out.status
        );
    }
}

#[test]
fn derived_datatypes_in_large_point_to_point_messages() {
    corpus("ddt_iov", &[2, 3, 4]);
    // Single copy off: the same messages packed and unpacked.
    let exe = program("ddt_iov");
    let out = mpiexec(2, &exe, &[], &[("OXMPI_SINGLE_COPY", "0")]);
    let (o, e) = text(&out);
    assert!(
        out.status.success(),
        "ddt_iov without single copy:\n{o}\n{e}"
    );
}

#[test]
fn environment() {
    corpus("env", &[1, 2]);
}

#[test]
fn sessions_without_mpi_init() {
    corpus("session", &[1, 2, 3, 4]);
}

#[test]
fn sessions_beside_the_world_model() {
    corpus("session_world", &[1, 2, 3]);
}

#[test]
fn communicators_and_groups() {
    corpus("comm", &[1, 2, 3, 4]);
}

#[test]
fn point_to_point() {
    corpus("p2p", &[1, 2, 3, 4]);
}

#[test]
fn buffered_send_buffers_of_the_process_and_of_communicators() {
    corpus("buffers", &[1, 2, 3, 4]);
}

#[test]
fn partitioned_communication() {
    corpus("partitioned", &[1, 2, 3, 4]);
}

#[test]
fn partitions_marked_and_read_by_other_threads() {
    corpus("partitioned_threads", &[1, 2, 3]);
}

#[test]
fn intercommunicators() {
    corpus("intercomm", &[2, 3, 4, 5]);
}

#[test]
fn intercommunicator_collectives_in_every_form() {
    corpus("intercomm_coll", &[2, 3, 4, 5]);
}

#[test]
fn communicators_from_groups() {
    corpus("fromgroup", &[2, 3, 4]);
}

#[test]
fn requests() {
    corpus("requests", &[1, 2, 3, 4]);
}

#[test]
fn generalized_requests() {
    corpus("grequest", &[1, 2]);
}

#[test]
fn request_integers_are_reused_and_round_trip() {
    corpus("request_ints", &[1, 2]);
}

#[test]
fn derived_datatypes() {
    corpus("ddt", &[1, 2, 3, 4]);
}

#[test]
fn one_sided() {
    corpus("rma", &[1, 2, 3, 4]);
}

#[test]
fn one_sided_with_derived_datatypes() {
    corpus("rma_ddt", &[1, 2, 3, 4]);
}

#[test]
fn collectives() {
    corpus("coll", &[1, 2, 3, 4]);
}

#[test]
fn nonblocking_and_persistent_collectives() {
    corpus("icoll", &[1, 2, 3, 4]);
}

#[test]
fn derived_datatypes_in_nonblocking_and_persistent_collectives() {
    corpus("ddt_coll", &[1, 2, 3, 4]);
}

/// Persistent collectives past the single-copy crossovers, with derived and misaligned
/// operands staged by the C layer.
#[test]
fn persistent_collectives_past_the_single_copy_crossovers() {
    corpus("persist_large", &[1, 2, 3, 4]);
}

#[test]
fn long_double_reductions_match_c() {
    corpus("longdouble", &[1, 2, 3, 4]);
}

#[test]
fn nonblocking_sendrecv_and_matched_receive() {
    corpus("isendrecv", &[1, 2, 3, 4]);
}

#[test]
fn topologies_and_neighbourhood_collectives() {
    corpus("topo", &[1, 2, 3, 4]);
}

#[test]
fn error_handlers_and_codes() {
    corpus("errors", &[1, 2]);
}

#[test]
fn attributes() {
    corpus("attrs", &[1, 2]);
}

#[test]
fn communicator_hints_idup_and_guided_splits() {
    corpus("comminfo", &[1, 2, 3]);
}

#[test]
fn large_count_forms_and_request_get_status_family() {
    corpus("largecount", &[1, 2, 3, 4]);
}

#[test]
fn reductions_take_buffers_not_aligned_for_their_datatype() {
    corpus("misaligned", &[1, 2, 3, 4]);
}

#[test]
fn large_count_v_collectives_take_counts_and_displacements_beyond_int() {
    corpus("bigcount_v", &[1, 2, 3, 4]);
}

#[test]
fn large_count_nonblocking_persistent_and_neighbourhood_collectives() {
    corpus("icoll_c", &[1, 2, 3, 4]);
}

#[test]
fn disconnect_and_spawn() {
    corpus("dynamic", &[1, 2, 3, 4]);
}

#[test]
fn info_objects() {
    corpus("info", &[1]);
}

#[test]
fn profiling_wrappers_intercept_mpi_and_reach_pmpi() {
    corpus("pmpi", &[1, 2]);
}

#[test]
fn cxx_program_through_mpicxx() {
    corpus("cxx", &[1, 3]);
}

#[test]
fn threads_at_thread_multiple() {
    corpus("threads", &[1, 2, 4]);
}

/// One test per argument error class: tests/c/args.c provokes it with MPI_ERRORS_RETURN
/// and checks the class returned, then that MPI still works.
macro_rules! arg_errors {
    ($($test:ident: $case:literal,)*) => { $(
        #[test]
        fn $test() {
            let out = mpiexec(2, &program("args"), &[$case], &[]);
            let (o, e) = text(&out);
            assert!(out.status.success(), "case {}: {:?}\n{o}\n{e}", $case, out.status);
        }
    )* };
}

arg_errors! {
    arg_error_comm: "comm",
    arg_error_rank: "rank",
    arg_error_tag: "tag",
    arg_error_count: "count",
    arg_error_type: "type",
    arg_error_buffer: "buffer",
    arg_error_root: "root",
    arg_error_group: "group",
    arg_error_op: "op",
    arg_error_request: "request",
    arg_error_keyval: "keyval",
    arg_error_info: "info",
    arg_error_errhandler: "errhandler",
    arg_error_arg: "arg",
    arg_error_after_finalize: "other",
}

/// Runs tests/c/fatal.c with `arg` at 3 ranks: the job must fail, with `want` in stderr.
fn fatal(arg: &str, want: &[&str]) {
    let out = mpiexec(3, &program("fatal"), &[arg], &[]);
    let (o, e) = text(&out);
    assert!(!out.status.success(), "the job must fail\n{o}\n{e}");
    assert!(!e.contains("UNREACHED"), "the fatal handler returned\n{e}");
    for w in want {
        assert!(e.contains(w), "stderr lacks {w:?}:\n{e}");
    }
}

#[test]
fn errors_are_fatal_by_default_with_one_message() {
    fatal(
        "default",
        &["rank 2", "MPI_Send", "MPI_ERR_RANK", "invalid rank"],
    );
}

#[test]
fn errors_abort_ends_the_job() {
    fatal("abort-handler", &["rank 2", "MPI_Send", "MPI_ERR_RANK"]);
}

#[test]
fn a_call_before_init_is_fatal_with_its_class() {
    fatal(
        "preinit",
        &["MPI_Comm_rank", "MPI_ERR_OTHER", "not initialized"],
    );
}

#[test]
fn mpi_abort_ends_the_job() {
    fatal("abort", &["rank 2", "MPI_Abort", "code 7"]);
}

#[test]
fn header_is_strict_in_every_c_and_cxx_mode() {
    let inc = crate_dir().join("include");
    let src = crate_dir().join("tests/c/header.c");
    let dir = target_dir().join("capi-header-test");
    std::fs::create_dir_all(&dir).expect("mkdir");
    let cxx_src = dir.join("header.cpp");
    std::fs::copy(&src, &cxx_src).expect("copy header.c");
    let modes = [
        ("cc", "c99", &src),
        ("cc", "c11", &src),
        ("cc", "c17", &src),
        ("c++", "c++11", &cxx_src),
        ("c++", "c++17", &cxx_src),
    ];
    for (compiler, std, file) in modes {
        let out = Command::new(compiler)
            .arg(format!("-std={std}"))
            .args([
                "-Wall",
                "-Wextra",
                "-Werror",
                "-pedantic",
                "-fsyntax-only",
                "-I",
            ])
            .arg(&inc)
            .arg(file)
            .output()
            .expect("run the compiler");
        assert!(
            out.status.success(),
            "{compiler} -std={std}: {:?}",
            text(&out)
        );
    }
}

/// The functions `mpi.h` declares (`int MPI_Send(`, `double PMPI_Wtime(`, ...).
fn declared() -> Vec<String> {
    let h = std::fs::read_to_string(crate_dir().join("include/mpi.h")).expect("read mpi.h");
    h.lines()
        .filter(|l| !l.starts_with("typedef") && !l.starts_with('#') && !l.starts_with(' '))
        .filter_map(|l| {
            let open = l.find('(')?;
            let name = l[..open].rsplit([' ', '*']).next()?;
            (name.starts_with("MPI_") || name.starts_with("PMPI_")).then(|| name.to_string())
        })
        .collect()
}

#[test]
fn every_declared_function_is_exported_as_mpi_and_pmpi() {
    let lib = prefix().join("lib/libmpi_abi.so.1");
    let out = Command::new("nm")
        .args(["-D", "--defined-only"])
        .arg(&lib)
        .output()
        .expect("run nm");
    assert!(out.status.success());
    let syms: std::collections::HashSet<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().nth(2).map(String::from))
        .collect();
    let decl = declared();
    let mpi: Vec<&String> = decl.iter().filter(|d| d.starts_with("MPI_")).collect();
    assert!(mpi.len() > 150, "only {} MPI functions declared", mpi.len());
    for d in &decl {
        assert!(
            syms.contains(d),
            "{d} is declared in mpi.h but not exported"
        );
    }
    for m in mpi {
        let p = format!("P{m}");
        assert!(decl.contains(&p), "{p} is not declared");
        assert!(syms.contains(&p), "{p} is not exported");
    }
    // Nothing MPI-named is exported without a declaration either.
    for s in syms
        .iter()
        .filter(|s| s.starts_with("MPI_") || s.starts_with("PMPI_"))
    {
        assert!(decl.contains(s), "{s} is exported but not declared");
    }
    let soname = Command::new("readelf")
        .arg("-d")
        .arg(&lib)
        .output()
        .expect("readelf");
    assert!(String::from_utf8_lossy(&soname.stdout).contains("[libmpi_abi.so.1]"));
}

#[test]
fn wrappers_show_their_commands_and_pass_flags_through() {
    let mpicc = prefix().join("bin/mpicc");
    let p = prefix().display().to_string();
    let show = |args: &[&str], env: &[(&str, &str)]| {
        let mut c = Command::new(&mpicc);
        c.args(args);
        for (k, v) in env {
            c.env(k, v);
        }
        let out = c.output().expect("run mpicc");
        assert!(out.status.success());
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    let line = show(&["-show"], &[]);
    assert!(line.starts_with("cc "), "{line}");
    assert!(line.contains(&format!("-I{p}/include")) && line.contains(&format!("-L{p}/lib")));
    assert!(line.contains("-lmpi_abi"), "{line}");
    assert_eq!(show(&["--showme:compile"], &[]), format!("-I{p}/include"));
    assert!(show(&["--showme:link"], &[]).ends_with("-lmpi_abi"));
    let compile_only = show(
        &["--showme", "-c", "x.c", "-DFOO=1"],
        &[("OXMPI_CC", "gcc-x")],
    );
    assert!(compile_only.starts_with("gcc-x ") && compile_only.contains("-c x.c -DFOO=1"));
    assert!(
        !compile_only.contains("-lmpi_abi"),
        "no link flags when only compiling"
    );
    let cxx = Command::new(prefix().join("bin/mpicxx"))
        .arg("-show")
        .env("OXMPI_CXX", "clang++-x")
        .output()
        .expect("mpicxx");
    assert!(String::from_utf8_lossy(&cxx.stdout).starts_with("clang++-x "));
}

#[test]
fn mpicc_builds_shared_objects_and_a_moved_install_still_works() {
    let moved = target_dir().join("capi-test-moved");
    let _ = std::fs::remove_dir_all(&moved);
    // The installation proper (other tests build their programs under prefix/tests meanwhile).
    std::fs::create_dir_all(&moved).expect("mkdir");
    for part in ["bin", "include", "lib"] {
        let cp = Command::new("cp")
            .arg("-a")
            .arg(prefix().join(part))
            .arg(&moved)
            .status()
            .expect("cp");
        assert!(cp.success());
    }
    let dir = moved.join("work");
    std::fs::create_dir_all(&dir).expect("mkdir");
    // A shared object calling MPI (as a Python extension would), and a program using it.
    std::fs::write(
        dir.join("ext.c"),
        "#include <mpi.h>\nint ext_size(void) { int s = -1; MPI_Comm_size(MPI_COMM_WORLD, &s); return s; }\n",
    )
    .expect("write ext.c");
    std::fs::write(
        dir.join("main.c"),
        "#include <mpi.h>\nint ext_size(void);\nint main(int c, char **v) { MPI_Init(&c, &v); int ok = ext_size() == 2; MPI_Finalize(); return !ok; }\n",
    )
    .expect("write main.c");
    let mpicc = moved.join("bin/mpicc");
    let run = |args: &[&str]| {
        let out = Command::new(&mpicc)
            .current_dir(&dir)
            .args(args)
            .output()
            .expect("mpicc");
        assert!(out.status.success(), "mpicc {args:?}: {:?}", text(&out));
    };
    run(&["-shared", "-fPIC", "-o", "libext.so", "ext.c"]);
    run(&["-o", "main", "main.c", "-L.", "-lext", "-Wl,-rpath,$ORIGIN"]);
    let shown = Command::new(&mpicc).arg("-show").output().expect("show");
    assert!(String::from_utf8_lossy(&shown.stdout).contains(&moved.display().to_string()));
    let mut cmd = Command::new(moved.join("bin/mpiexec"));
    cmd.args(["--timeout", "60", "-n", "2"])
        .arg(dir.join("main"));
    let out = run_with_deadline(cmd, Duration::from_secs(90));
    assert!(out.status.success(), "{:?}", text(&out));
}

/// MPICH's installation from PyPI (`$OXMPI_PEERS_DIR`, else `~/.cache/oxmpi/peers`),
/// installed there with scripts/install-peers.sh on first use; `None` only when that fails
/// (no registry to install from), and the caller says so.
fn mpich() -> Option<PathBuf> {
    static MPICH: OnceLock<Option<PathBuf>> = OnceLock::new();
    MPICH
        .get_or_init(|| {
            let base = std::env::var_os("OXMPI_PEERS_DIR")
                .map(PathBuf::from)
                .or_else(|| {
                    std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/oxmpi/peers"))
                })?;
            let p = base.join("mpich");
            let ready = |p: &Path| {
                p.join("bin/mpicc_abi").exists() && p.join("lib/libmpi_abi.so.1").exists()
            };
            if !ready(&p) {
                let script =
                    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/install-peers.sh");
                let out = Command::new("bash")
                    .arg(script)
                    .arg(&base)
                    .arg("mpich")
                    .output()
                    .expect("run scripts/install-peers.sh");
                if !out.status.success() {
                    eprintln!("install-peers.sh mpich failed: {:?}", text(&out));
                }
            }
            ready(&p).then_some(p)
        })
        .clone()
}

/// The integer value of a constant's definition in a C header: a number, possibly negated,
/// in parentheses or behind a cast (`((MPI_Comm)0x101)`, `(-1)`, `((void *)1)`).
fn constant_value(def: &str) -> Option<i64> {
    let mut v: String = def.chars().filter(|c| !c.is_whitespace()).collect();
    // Drop casts: a parenthesised identifier, optionally a pointer.
    while let Some(open) = v.find("((") {
        let rest = &v[open + 1..];
        let close = rest.find(')')?;
        let inner = &rest[1..close];
        if inner
            .trim_end_matches('*')
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !inner.is_empty()
        {
            v = format!("{}({}", &v[..open], &rest[close + 1..]);
        } else {
            break;
        }
    }
    let v = v.trim_matches(|c| c == '(' || c == ')');
    let (neg, digits) = match v.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, v),
    };
    let n = match digits.strip_prefix("0x") {
        Some(h) => i64::from_str_radix(h, 16).ok()?,
        None => digits.parse::<i64>().ok()?,
    };
    Some(if neg { -n } else { n })
}

/// Every integer constant a header defines, by `#define MPI_X value` or as an enumerator
/// `MPI_X = value,`.
fn header_constants(text: &str) -> HashMap<String, i64> {
    let mut out = HashMap::new();
    for line in text.lines() {
        let line = line.split("/*").next().unwrap_or("").trim();
        let (name, def) = if let Some(rest) = line.strip_prefix("#define ") {
            match rest.split_once(char::is_whitespace) {
                Some((n, d)) => (n, d),
                None => continue,
            }
        } else if let Some((n, d)) = line.split_once('=') {
            (n.trim(), d.trim().trim_end_matches(','))
        } else {
            continue;
        };
        if !name.starts_with("MPI_") || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        {
            continue;
        }
        if let Some(v) = constant_value(def) {
            out.insert(name.to_string(), v);
        }
    }
    out
}

#[test]
fn header_constant_parsing() {
    assert_eq!(constant_value("((MPI_Comm)0x00000101)"), Some(0x101));
    assert_eq!(constant_value("(-1)"), Some(-1));
    assert_eq!(constant_value("((void *)1)"), Some(1));
    assert_eq!(constant_value("256"), Some(256));
    assert_eq!(constant_value("MPI_FOO"), None);
    let h =
        header_constants("#define MPI_A ((MPI_Comm)0x10)\n    MPI_B = -3, /* x */\n#define X 1\n");
    assert_eq!(h.get("MPI_A"), Some(&0x10));
    assert_eq!(h.get("MPI_B"), Some(&-3));
    assert_eq!(h.len(), 2);
}

/// Every integer constant our mpi.h shares with MPICH's standard-ABI header has the same value:
/// the ABI is these numbers, and a binary built against either header must mean the same thing.
#[test]
fn every_constant_has_the_standard_abi_value_mpich_uses() {
    let Some(m) = mpich() else {
        eprintln!("SKIP: MPICH from PyPI could not be installed (scripts/install-peers.sh)");
        return;
    };
    let ours = header_constants(
        &std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("include/mpi.h"))
            .expect("read our mpi.h"),
    );
    let theirs = header_constants(
        &std::fs::read_to_string(m.join("include/mpi_abi.h")).expect("read MPICH's mpi_abi.h"),
    );
    // Limits an implementation may choose, which the ABI leaves open.
    let free = ["MPI_MAX_PROCESSOR_NAME", "MPI_VERSION", "MPI_SUBVERSION"];
    let mut compared = 0;
    let mut wrong = Vec::new();
    for (name, v) in &ours {
        if free.contains(&name.as_str()) {
            continue;
        }
        if let Some(w) = theirs.get(name) {
            compared += 1;
            if v != w {
                wrong.push(format!("{name}: ours {v:#x}, MPICH {w:#x}"));
            }
        }
    }
    wrong.sort();
    eprintln!("compared {compared} constants");
    assert!(
        compared > 200,
        "only {compared} constants in common: parsing broke?"
    );
    assert!(
        wrong.is_empty(),
        "constants differing from the standard ABI:\n{}",
        wrong.join("\n")
    );
}

const WHICH: &str = r#"#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv) {
    char v[MPI_MAX_LIBRARY_VERSION_STRING];
    int n, rank, size, sum = 0, one = 1;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Get_library_version(v, &n);
    MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    int token = rank, got = -1;
    MPI_Sendrecv(&token, 1, MPI_INT, (rank + 1) % size, 0, &got, 1, MPI_INT,
                 (rank + size - 1) % size, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (rank == 0) printf("LIBRARY %.40s\n", v);
    MPI_Finalize();
    return !(sum == size && got == (rank + size - 1) % size);
}
"#;

/// The interoperability program's source, written under a name of the caller's (the two
/// tests run at once).
fn which_source(name: &str) -> PathBuf {
    let dir = target_dir().join("capi-interop");
    std::fs::create_dir_all(&dir).expect("mkdir");
    let src = dir.join(format!("{name}.c"));
    std::fs::write(&src, WHICH).expect("write which.c");
    src
}

#[test]
fn a_binary_built_with_mpich_runs_on_oxmpi() {
    let Some(m) = mpich() else {
        eprintln!("SKIP: MPICH from PyPI is not installed (scripts/install-peers.sh)");
        return;
    };
    let src = which_source("which_mpich");
    let exe = src.with_file_name("which_mpich");
    let out = Command::new(m.join("bin/mpicc_abi"))
        .arg("-o")
        .arg(&exe)
        .arg(&src)
        .output()
        .expect("mpicc_abi");
    assert!(out.status.success(), "{:?}", text(&out));
    let lib = prefix().join("lib").display().to_string();
    let out = mpiexec(3, &exe, &[], &[("LD_LIBRARY_PATH", &lib)]);
    let (o, e) = text(&out);
    assert!(out.status.success(), "{o}\n{e}");
    assert!(o.contains("LIBRARY oxmpi"), "ran on another library:\n{o}");
}

/// The sessions corpus program (tests/c/session.c) built against MPICH's standard-ABI
/// header and library passes on oxmpi: the session functions, `MPI_Session` handles and
/// constants agree binary for binary.
#[test]
fn a_sessions_binary_built_with_mpich_runs_on_oxmpi() {
    let Some(m) = mpich() else {
        eprintln!("SKIP: MPICH from PyPI is not installed (scripts/install-peers.sh)");
        return;
    };
    let dir = target_dir().join("capi-interop");
    std::fs::create_dir_all(&dir).expect("mkdir");
    let exe = dir.join("session_mpich");
    let c = crate_dir().join("tests/c");
    let out = Command::new(m.join("bin/mpicc_abi"))
        .arg("-I")
        .arg(&c)
        .arg("-o")
        .arg(&exe)
        .arg(c.join("session.c"))
        .output()
        .expect("mpicc_abi");
    assert!(out.status.success(), "{:?}", text(&out));
    let lib = prefix().join("lib").display().to_string();
    let ldd = Command::new("ldd")
        .arg(&exe)
        .env("LD_LIBRARY_PATH", &lib)
        .output()
        .expect("ldd");
    let (o, _) = text(&ldd);
    assert!(
        o.lines()
            .any(|l| l.contains("libmpi_abi.so.1") && l.contains(lib.as_str())),
        "the binary would not load oxmpi's library:\n{o}"
    );
    for np in [1, 3] {
        let out = mpiexec(np, &exe, &[], &[("LD_LIBRARY_PATH", &lib)]);
        let (o, e) = text(&out);
        assert!(out.status.success(), "np {np}:\n{o}\n{e}");
    }
}

#[test]
fn a_binary_built_with_oxmpi_runs_on_mpich() {
    let Some(m) = mpich() else {
        eprintln!("SKIP: MPICH from PyPI is not installed (scripts/install-peers.sh)");
        return;
    };
    let src = which_source("which_oxmpi");
    let exe = src.with_file_name("which_oxmpi");
    let out = Command::new(prefix().join("bin/mpicc"))
        .arg("-o")
        .arg(&exe)
        .arg(&src)
        .output()
        .expect("mpicc");
    assert!(out.status.success(), "{:?}", text(&out));
    let mut cmd = Command::new(m.join("bin/mpiexec"));
    cmd.args(["-n", "3"])
        .arg(&exe)
        .env("LD_LIBRARY_PATH", m.join("lib"));
    let out = run_with_deadline(cmd, Duration::from_secs(90));
    let (o, e) = text(&out);
    assert!(out.status.success(), "{o}\n{e}");
    assert!(o.contains("LIBRARY MPICH"), "ran on another library:\n{o}");
}

/// The counts of a unittest run's summary (`Ran N tests`, `OK (skipped=S)` or
/// `FAILED (failures=F, errors=E, skipped=S)`): (ran, failures, errors, skipped).
fn unittest_counts(stderr: &str) -> Option<(u32, u32, u32, u32)> {
    let ran = stderr.lines().find_map(|l| {
        l.strip_prefix("Ran ")?
            .split_whitespace()
            .next()?
            .parse()
            .ok()
    })?;
    let field = |name: &str| {
        stderr
            .rsplit_once(&format!("{name}="))
            .and_then(|(_, r)| r.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok())
            .unwrap_or(0)
    };
    Some((ran, field("failures"), field("errors"), field("skipped")))
}

#[test]
fn unittest_summaries_are_parsed() {
    let ok = "....\n----\nRan 12 tests in 0.1s\n\nOK (skipped=3)\n";
    assert_eq!(unittest_counts(ok), Some((12, 0, 0, 3)));
    let bad = "Ran 7 tests in 1.0s\n\nFAILED (failures=2, errors=1, skipped=4)\n";
    assert_eq!(unittest_counts(bad), Some((7, 2, 1, 4)));
    assert_eq!(unittest_counts("no summary"), None);
}

/// The test-name patterns of tests/mpi4py/excluded.txt (each line: a pattern, then why).
fn mpi4py_exclusions() -> Vec<String> {
    let text = std::fs::read_to_string(crate_dir().join("tests/mpi4py/excluded.txt"))
        .expect("read tests/mpi4py/excluded.txt");
    text.lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect()
}

#[test]
fn every_mpi4py_exclusion_gives_its_reason() {
    let text = std::fs::read_to_string(crate_dir().join("tests/mpi4py/excluded.txt"))
        .expect("read tests/mpi4py/excluded.txt");
    for l in text
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
    {
        let reason = l
            .split_once(char::is_whitespace)
            .map_or("", |(_, r)| r.trim());
        assert!(reason.len() > 10, "exclusion without a reason: {l}");
    }
    assert!(!mpi4py_exclusions().is_empty());
}

/// mpi4py from PyPI, built with our `mpicc` (tests/mpi4py/build.sh; cached under
/// ~/.cache/oxmpi), runs its whole test suite under our `mpiexec` at 1, 2 and 3 ranks,
/// spawning included. The tests and modules left out, each with its reason, are in
/// tests/mpi4py/excluded.txt: a line naming a module alone (`test_x`) leaves the module out
/// (`-e`), any other a test pattern (`-x`).
#[test]
fn mpi4py_test_suite_runs_on_oxmpi() {
    if Command::new("python3").arg("--version").output().is_err() {
        eprintln!("skipped: python3 is not installed");
        return;
    }
    let build = Command::new("sh")
        .arg(crate_dir().join("tests/mpi4py/build.sh"))
        .arg(prefix())
        .output()
        .expect("run build.sh");
    let (o, e) = text(&build);
    assert!(build.status.success(), "mpi4py build failed:\n{o}\n{e}");
    let venv = PathBuf::from(o.lines().last().expect("venv path").trim());
    let suite = venv.join("src/mpi4py-4.1.2/test/main.py");
    let excluded = mpi4py_exclusions();
    for np in [1, 2, 3] {
        let mut cmd = Command::new(prefix().join("bin/mpiexec"));
        cmd.args(["--timeout", "400", "-n", &np.to_string()])
            .arg(venv.join("bin/python"))
            .arg(&suite);
        for x in &excluded {
            let module = x.starts_with("test_") && !x.contains('.');
            cmd.args([if module { "-e" } else { "-x" }, x]);
        }
        // The cached build may come from another installation: ours goes first.
        cmd.env("LD_LIBRARY_PATH", prefix().join("lib"));
        let out = run_with_deadline(cmd, Duration::from_secs(450));
        let (o, e) = text(&out);
        let counts = unittest_counts(&e);
        eprintln!("mpi4py's suite at np {np}: (ran, failures, errors, skipped) = {counts:?}");
        assert!(
            out.status.success() && counts.is_some_and(|(ran, f, er, _)| ran > 1000 && f + er == 0),
            "mpi4py's suite at np {np} failed ({:?})\nstdout:\n{o}\nstderr:\n{e}",
            out.status
        );
    }
}

/// The rsmpi examples left out (tests/rsmpi/excluded.txt: each line a name, then why).
fn rsmpi_exclusions() -> Vec<(String, String)> {
    let text = std::fs::read_to_string(crate_dir().join("tests/rsmpi/excluded.txt"))
        .expect("read tests/rsmpi/excluded.txt");
    text.lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| match l.split_once(char::is_whitespace) {
            Some((n, why)) => (n.to_string(), why.trim().to_string()),
            None => (l.to_string(), String::new()),
        })
        .collect()
}

/// The rank counts an rsmpi example runs at: 2, unless the example wants others.
fn rsmpi_nps(example: &str) -> &'static [usize] {
    match example {
        // Both return early, or fail by design, below 4 ranks (a 2 x 2 grid, a [2, size / 4] map).
        "cartesian" | "cartesian_map" => &[4],
        // Odd sizes give the even and odd halves different sizes.
        "dyn_communicator" | "group" | "all_to_all" | "immediate_all_to_all" | "split" => &[2, 3],
        // One rank: every collective degenerates to a copy.
        "simple" | "reduce" | "scan" | "broadcast" | "time" | "env_inq" => &[1, 2],
        _ => &[2],
    }
}

/// rsmpi (the `mpi` crate 0.8.2 from crates.io) builds against our installation (its build
/// probes our `mpicc`, bindgen reads our `mpi.h`; tests/rsmpi/build.sh, cached under
/// ~/.cache/oxmpi/rsmpi), and every one of its examples not listed in
/// tests/rsmpi/excluded.txt runs under our `mpiexec` at 2 ranks (and others where the
/// example wants them, [`rsmpi_nps`]).
#[test]
fn rsmpi_examples_run_on_oxmpi() {
    let build = Command::new("sh")
        .arg(crate_dir().join("tests/rsmpi/build.sh"))
        .arg(prefix())
        .env("CARGO", env!("CARGO"))
        .output()
        .expect("run build.sh");
    let (o, e) = text(&build);
    assert!(build.status.success(), "rsmpi build failed:\n{o}\n{e}");
    let bins = PathBuf::from(o.lines().last().expect("examples directory").trim());
    let excluded = rsmpi_exclusions();
    let mut examples: Vec<String> = std::fs::read_dir(&bins)
        .expect("read the examples directory")
        .filter_map(|d| {
            let p = d.ok()?.path();
            let name = p.file_name()?.to_str()?.to_string();
            // Cargo leaves hashed copies and .d files beside each example binary.
            (p.is_file() && !name.contains(['-', '.'])).then_some(name)
        })
        .collect();
    examples.sort();
    assert!(
        examples.len() > 40,
        "only {} examples built",
        examples.len()
    );
    let mut ran = 0;
    let mut failed = Vec::new();
    for ex in &examples {
        if excluded.iter().any(|(n, _)| n == ex) {
            continue;
        }
        for &np in rsmpi_nps(ex) {
            let mut cmd = Command::new(prefix().join("bin/mpiexec"));
            cmd.args(["--timeout", "60", "-n", &np.to_string()])
                .arg(bins.join(ex))
                // The cached build may come from another installation: ours goes first.
                .env("LD_LIBRARY_PATH", prefix().join("lib"));
            let out = run_with_deadline(cmd, Duration::from_secs(90));
            ran += 1;
            if !out.status.success() {
                let (o, e) = text(&out);
                failed.push(format!("{ex} at np {np} ({:?}):\n{o}\n{e}", out.status));
            }
        }
    }
    eprintln!(
        "rsmpi: {} examples built, {} excluded, {ran} runs, {} failed",
        examples.len(),
        excluded.len(),
        failed.len()
    );
    // Every exclusion names an example that exists and says why, so the list cannot go
    // stale.
    for (n, why) in &excluded {
        assert!(
            examples.contains(n),
            "excluded.txt names {n}, which was not built"
        );
        assert!(why.len() > 10, "exclusion without a reason: {n}");
    }
    assert!(
        failed.is_empty(),
        "rsmpi examples failed:\n{}",
        failed.join("\n")
    );
}
