//! Command-line handling: help, version, and every kind of bad input gives one clear line and
//! a non-zero exit without starting anything.

mod common;

use common::{run, Run};
use std::fs;
use std::os::unix::fs::PermissionsExt;

/// Asserts a failed run with exactly one line on stderr, from oxrun, containing `needle`.
fn assert_one_line_error(r: &Run, code: i32, needle: &str) {
    assert_eq!(r.code, Some(code), "{r:?}");
    let lines: Vec<&str> = r.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "expected one line: {r:?}");
    assert!(lines[0].starts_with("oxrun: "), "{r:?}");
    assert!(lines[0].contains(needle), "{needle:?} not in {r:?}");
    assert!(r.stdout.is_empty(), "{r:?}");
}

#[test]
fn help_describes_the_options() {
    let r = run(&["--help"]);
    assert_eq!(r.code, Some(0));
    for word in [
        "Usage",
        "-np",
        "--timeout",
        "--tag-output",
        "-x",
        "--bind-to",
        "--report-bindings",
        "MPMD",
    ] {
        assert!(
            r.stdout.contains(word),
            "{word} missing from help:\n{}",
            r.stdout
        );
    }
}

#[test]
fn version_is_printed() {
    let r = run(&["--version"]);
    assert_eq!(r.code, Some(0));
    assert_eq!(
        r.stdout.trim(),
        format!("oxrun {}", env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn unknown_flags_are_refused() {
    assert_one_line_error(&run(&["--bogus", "-n", "1", "true"]), 2, "--bogus");
}

#[test]
fn zero_ranks_are_refused() {
    assert_one_line_error(&run(&["-n", "0", "true"]), 2, "at least 1");
    assert_one_line_error(&run(&["-np", "0", "true"]), 2, "at least 1");
}

#[test]
fn a_missing_program_is_refused() {
    assert_one_line_error(&run(&["-n", "2"]), 2, "no program");
    assert_one_line_error(&run(&[]), 2, "no program");
    assert_one_line_error(
        &run(&["-n", "1", "true", ":"]),
        2,
        "empty application context",
    );
}

#[test]
fn bad_option_values_are_refused() {
    assert_one_line_error(&run(&["--timeout", "soon", "true"]), 2, "--timeout");
    assert_one_line_error(&run(&["--bind-to", "board", "true"]), 2, "board");
    assert_one_line_error(&run(&["-x", "=v", "true"]), 2, "empty variable name");
}

#[test]
fn unknown_programs_exit_127() {
    assert_one_line_error(
        &run(&["-n", "2", "oxrun-test-no-such-program"]),
        127,
        "cannot execute oxrun-test-no-such-program",
    );
    assert_one_line_error(&run(&["-n", "2", "/nonexistent/prog"]), 127, "No such file");
}

#[test]
fn non_executable_files_exit_126() {
    let dir = std::env::temp_dir().join(format!("oxrun-cli-{}", std::process::id()));
    fs::create_dir_all(&dir).unwrap();
    let f = dir.join("not-a-program");
    fs::write(&f, "echo hi\n").unwrap();
    fs::set_permissions(&f, fs::Permissions::from_mode(0o644)).unwrap();
    let r = run(&["-n", "2", f.to_str().unwrap()]);
    assert_one_line_error(&r, 126, "Permission denied");
    let r = run(&["-n", "1", dir.to_str().unwrap()]);
    assert_one_line_error(&r, 126, "Is a directory");
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn more_ranks_than_descriptors_allow_are_refused() {
    // 100 ranks need about 3 descriptors each; with the hard limit at 256 that cannot work,
    // and oxrun says so before starting anything.
    let script = format!("ulimit -n 256 && exec {} -n 100 true", common::oxrun());
    let r = common::run_shell("sh", &script);
    assert_one_line_error(&r, 1, "open files");
}

#[test]
fn np_is_a_synonym_and_options_after_the_program_are_its_own() {
    let r = run(&[
        "--timeout",
        "20",
        "-np",
        "3",
        "sh",
        "-c",
        "echo \"$PMI_SIZE $1\"",
        "sh",
        "-np",
    ]);
    assert_eq!(r.code, Some(0), "{r:?}");
    assert_eq!(r.out_lines(), vec!["3 -np"; 3]);
}

#[test]
fn default_is_one_rank() {
    let r = run(&["--timeout", "20", "sh", "-c", "echo $PMI_RANK/$PMI_SIZE"]);
    assert_eq!(r.code, Some(0), "{r:?}");
    assert_eq!(r.stdout, "0/1\n");
}

#[test]
fn runs_programs_that_are_not_mpi() {
    let r = run(&["--timeout", "20", "-n", "4", "true"]);
    assert_eq!(r.code, Some(0), "{r:?}");
    assert!(r.stderr.is_empty(), "{r:?}");
    let r = run(&["--timeout", "20", "--oversubscribe", "-n", "2", "echo", "x"]);
    assert_eq!(r.code, Some(0), "{r:?}");
    assert_eq!(r.stdout, "x\nx\n");
}

#[test]
fn bad_host_options_are_one_line_errors() {
    let hf = std::env::temp_dir().join(format!("oxrun-cli-hostfile-{}", std::process::id()));
    fs::write(&hf, "nodeA slots=two\n").unwrap();
    let hf = hf.to_str().unwrap().to_owned();
    for (args, needle) in [
        (vec!["--host", "a:2", "-n", "3", "true"], "--oversubscribe"),
        (vec!["--host", "a,,b", "true"], "empty host name"),
        (vec!["--host", "a:0", "true"], "slots"),
        (
            vec!["--hostfile", "/nonexistent/hosts", "true"],
            "/nonexistent/hosts",
        ),
        (vec!["--hostfile", &hf, "true"], "line 1"),
        (vec!["--host", "a", "--hostfile", &hf, "true"], "together"),
        (vec!["--map-by", "node", "true"], "need --host"),
        (vec!["--host", "a", "--map-by", "board", "true"], "board"),
        (vec!["--host", "a", "--launcher", "ssh", "true"], "{host}"),
    ] {
        assert_one_line_error(&run(&args), 2, needle);
    }
    fs::remove_file(&hf).unwrap();
}
