//! `oxmpi-info` lists every tunable and the protocol table, and reports bad settings;
//! `oxmpi-info --calibrate` writes a tunables file that oxmpi-info and jobs read.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

#[test]
fn lists_every_tunable_and_the_protocols() {
    let out = Command::new(env!("CARGO_BIN_EXE_oxmpi-info"))
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    for t in oxmpi::config::TUNABLES
        .iter()
        .chain(oxmpi::coll::select::COLL_TUNABLES)
    {
        assert!(text.contains(t.name), "{} missing", t.name);
        assert!(text.contains(t.help), "help of {} missing", t.name);
    }
    assert!(text.contains("process_vm_readv"));
    assert!(text.contains("Shared memory per rank"));
    for a in oxmpi::coll::select::algorithm_table() {
        assert!(text.contains(a.algorithm), "{} missing", a.algorithm);
    }
}

#[test]
fn shows_overrides_and_rejects_bad_values() {
    let out = Command::new(env!("CARGO_BIN_EXE_oxmpi-info"))
        .env("OXMPI_SINGLE_COPY", "0")
        .env("OXMPI_EAGER_LIMIT", "2k")
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("2k (environment; default 65536)"), "{text}");
    assert!(text.contains("single copy off"), "{text}");
    let out = Command::new(env!("CARGO_BIN_EXE_oxmpi-info"))
        .env("OXMPI_SHM_POOL_BLOCKS", "many")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("OXMPI_SHM_POOL_BLOCKS"));
}

#[test]
fn topology_lists_the_machine() {
    let out = Command::new(env!("CARGO_BIN_EXE_oxmpi-info"))
        .arg("--topology")
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let topo = oxmpi_pmi::topology::Topology::host();
    let backend = if cfg!(feature = "hwloc") {
        "topology backend: hwloc\n"
    } else {
        "topology backend: sysfs (built without the hwloc feature)\n"
    };
    let machine = text
        .strip_prefix(backend)
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        machine.starts_with("machine: ") && text.contains(&format!(", {} CPUs", topo.cpus.len())),
        "{text}"
    );
    // The sysfs reader, asked for by name, sees the same machine line.
    let sysfs = Command::new(env!("CARGO_BIN_EXE_oxmpi-info"))
        .arg("--topology")
        .env("OXMPI_TOPOLOGY", "sysfs")
        .output()
        .unwrap();
    let sysfs = String::from_utf8(sysfs.stdout).unwrap();
    let rest = sysfs
        .strip_prefix("topology backend: sysfs (OXMPI_TOPOLOGY=sysfs)\n")
        .unwrap_or_else(|| panic!("{sysfs}"));
    assert_eq!(rest.lines().next(), machine.lines().next());
    for n in topo.numa_nodes() {
        assert!(text.contains(&format!("numa node {n}: cpus ")), "{text}");
    }
    for nic in &topo.nics {
        assert!(text.contains(&format!("nic {}: ", nic.name)), "{text}");
    }
    assert!(text.contains("this process may run on cpus "), "{text}");
    let out = Command::new(env!("CARGO_BIN_EXE_oxmpi-info"))
        .arg("--bogus")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

/// Runs `cmd` to completion, killing it after `secs` (then the test fails).
fn run(mut cmd: Command, secs: u64) -> (Output, String, String) {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let start = Instant::now();
    while child.try_wait().expect("wait").is_none() {
        if start.elapsed() > Duration::from_secs(secs) {
            let _ = child.kill();
            let out = child.wait_with_output().expect("output");
            panic!(
                "{cmd:?} did not finish in {secs} s:\n{}",
                String::from_utf8_lossy(&out.stdout)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().expect("output");
    let (so, se) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    (out, so, se)
}

/// A binary of this build beside oxmpi-info (oxrun, oxmpi-bench, examples/NAME).
fn built(name: &str) -> PathBuf {
    let p = Path::new(env!("CARGO_BIN_EXE_oxmpi-info")).with_file_name(name);
    assert!(
        p.exists(),
        "{} not found: run the whole workspace's tests (`cargo test --workspace`)",
        p.display()
    );
    p
}

fn scratch(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("oxmpi-info-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn info(env: &[(&str, &Path)]) -> (Output, String, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_oxmpi-info"));
    for (k, v) in env {
        cmd.env(k, v);
    }
    run(cmd, 30)
}

#[test]
fn calibrate_writes_a_file_that_oxmpi_info_reads() {
    built("oxrun");
    built("oxmpi-bench");
    let dir = scratch("calibrate");
    let file = dir.join("sub").join("tunables");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_oxmpi-info"));
    cmd.args(["--calibrate", "--quick", "--force", "--output"])
        .arg(&file);
    let (out, so, se) = run(cmd, 120);
    assert!(out.status.success(), "{so}\n{se}");
    let parsed = oxmpi::config::TunablesFile::load(&file).unwrap();
    let mut names = vec![
        "OXMPI_PUSH_MIN",
        "OXMPI_SINGLE_COPY_MIN",
        "OXMPI_EAGER_LIMIT",
        "OXMPI_SHM_INLINE_MAX",
        "OXMPI_COLL_SHM_BCAST_LONG_PAIR",
        "OXMPI_COLL_SHM_ALLREDUCE_LONG",
        "OXMPI_COLL_SHM_REDUCE_LONG",
    ];
    // The general bcast crossover is timed on more than two ranks, one per core.
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    if cores > 2 {
        names.push("OXMPI_COLL_SHM_BCAST_LONG");
    } else {
        assert!(parsed.entry("OXMPI_COLL_SHM_BCAST_LONG").is_none());
    }
    for name in names {
        let e = parsed
            .entry(name)
            .unwrap_or_else(|| panic!("{name} not written"));
        // The table printed says the same as the file.
        assert!(
            so.contains(&format!("chosen: {name} = {} ", e.value)),
            "{name}:\n{so}"
        );
        let (out, text, err) = info(&[("OXMPI_TUNABLES_FILE", &file)]);
        assert!(out.status.success(), "{err}");
        let shown = format!("{} ({}:{}; default ", e.value, file.display(), e.line);
        assert!(text.contains(&shown), "{shown} not in\n{text}");
        assert!(text.contains(&format!(
            "Tunables file: {} (OXMPI_TUNABLES_FILE)",
            file.display()
        )));
    }
    // A second run keeps a setting made by hand and replaces its own.
    std::fs::write(
        &file,
        format!(
            "{}OXMPI_SPIN_COUNT = 77\n",
            std::fs::read_to_string(&file).unwrap()
        ),
    )
    .unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_oxmpi-info"));
    cmd.args(["--calibrate", "--quick", "--force", "--output"])
        .arg(&file);
    let (out, so, se) = run(cmd, 120);
    assert!(out.status.success(), "{so}\n{se}");
    let again = oxmpi::config::TunablesFile::load(&file).unwrap();
    assert_eq!(
        again.entry("OXMPI_SPIN_COUNT").map(|e| e.value.as_str()),
        Some("77")
    );
    assert_eq!(again.entries.len(), 8, "{again:?}");
    // A file that does not parse is neither overwritten nor read.
    std::fs::write(&file, "OXMPI_EAGER_LIMIT: 5\n").unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_oxmpi-info"));
    cmd.args(["--calibrate", "--quick", "--force", "--output"])
        .arg(&file);
    let (out, _, se) = run(cmd, 60);
    assert_eq!(out.status.code(), Some(1));
    assert!(se.contains(&format!("{}:1:", file.display())), "{se}");
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "OXMPI_EAGER_LIMIT: 5\n"
    );
    let (out, _, se) = info(&[("OXMPI_TUNABLES_FILE", &file)]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        se.contains(&format!(
            "{}:1: \"OXMPI_EAGER_LIMIT: 5\" is not NAME = VALUE",
            file.display()
        )),
        "{se}"
    );
    // On a busy machine (here: this test keeping every CPU it may use busy) nothing is
    // written without --force. A CPU quota can hide the spinning from /proc/stat; then the
    // run is an ordinary one and its file must parse.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
    let spinners: Vec<_> = (0..cpus)
        .map(|_| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    std::hint::spin_loop();
                }
            })
        })
        .collect();
    let fresh = dir.join("fresh");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_oxmpi-info"));
    cmd.args(["--calibrate", "--quick", "--output"]).arg(&fresh);
    let (out, so, se) = run(cmd, 120);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    spinners.into_iter().for_each(|t| t.join().unwrap());
    if out.status.success() {
        oxmpi::config::TunablesFile::load(&fresh).unwrap();
    } else {
        assert_eq!(out.status.code(), Some(1), "{so}\n{se}");
        assert!(se.contains("busy") && se.contains("not written"), "{se}");
        assert!(!fresh.exists());
    }
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_oxmpi-info"));
    cmd.args(["--calibrate", "--bogus"]);
    assert_eq!(run(cmd, 30).0.status.code(), Some(1));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_default_file_and_an_unknown_name() {
    let dir = scratch("default");
    std::fs::create_dir_all(dir.join("oxmpi")).unwrap();
    std::fs::write(dir.join("oxmpi/tunables"), "OXMPI_YIELD_COUNT = 3\n").unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_oxmpi-info"));
    cmd.env("XDG_CONFIG_HOME", &dir)
        .env_remove("OXMPI_TUNABLES_FILE");
    let (out, text, se) = run(cmd, 30);
    assert!(out.status.success(), "{se}");
    let shown = format!(
        "3 ({}:1; default 20000)",
        dir.join("oxmpi/tunables").display()
    );
    assert!(text.contains(&shown), "{text}");
    // An empty OXMPI_TUNABLES_FILE turns the file off.
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_oxmpi-info"));
    cmd.env("XDG_CONFIG_HOME", &dir)
        .env("OXMPI_TUNABLES_FILE", "");
    let (_, text, _) = run(cmd, 30);
    assert!(
        !text.contains(&shown) && text.contains("Tunables file: none"),
        "{text}"
    );
    // Unknown names fail, in either table's namespace.
    for bad in ["OXMPI_YIELD_COUNTS = 3\n", "OXMPI_COLL_BCAST_LONGER = 3\n"] {
        std::fs::write(dir.join("oxmpi/tunables"), bad).unwrap();
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_oxmpi-info"));
        cmd.env("XDG_CONFIG_HOME", &dir)
            .env_remove("OXMPI_TUNABLES_FILE");
        let (out, _, se) = run(cmd, 30);
        assert_eq!(out.status.code(), Some(2), "{bad}");
        assert!(se.contains(":1: unknown tunable"), "{bad}: {se}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn jobs_read_the_file_beneath_the_environment() {
    let dir = scratch("job");
    let file = dir.join("tunables");
    std::fs::write(&file, "OXMPI_TRANSPORT = tcp\nOXMPI_TCP_LOG_ROUTES = 1\n").unwrap();
    let job = |extra: &[(&str, &str)]| {
        let mut cmd = Command::new(built("oxrun"));
        cmd.args(["--timeout", "60", "-n", "2"])
            .arg(built("examples/ring"))
            .env("OXMPI_TUNABLES_FILE", &file);
        for (k, v) in extra {
            cmd.env(k, v);
        }
        run(cmd, 90)
    };
    // The file's settings reach the ranks: TCP between them, routes logged.
    let (out, so, se) = job(&[]);
    assert!(out.status.success(), "{so}\n{se}");
    // The rank that connects logs the route (both may, if they connect at once).
    assert!(se.contains("TCP route to rank"), "{se}");
    // The environment wins over the file.
    let (out, so, se) = job(&[("OXMPI_TCP_LOG_ROUTES", "0")]);
    assert!(out.status.success(), "{so}\n{se}");
    assert!(!se.contains("TCP route to rank"), "{se}");
    // A malformed file stops the job with its name and line.
    std::fs::write(
        &file,
        "OXMPI_TRANSPORT = tcp\nOXMPI_TCP_LOG_ROUTES = sometimes\n",
    )
    .unwrap();
    let (out, _, se) = job(&[]);
    assert!(!out.status.success());
    assert!(
        se.contains(&format!(
            "{}:2: OXMPI_TCP_LOG_ROUTES = \\\"sometimes\\\" is not a valid value",
            file.display()
        )),
        "{se}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
