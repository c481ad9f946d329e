//! `cargo xtask TASK`: project tasks.
//!
//! - `install --prefix DIR [--no-build]`: builds the release binaries and the C library and
//!   lays out a standard MPI installation in `DIR` ([`install`]).
//! - `netns-test [ARGS...]`: creates three network-namespace hosts (see `xtask::netns`), runs
//!   the cross-host suites on them (`cargo test --release` of each suite in [`SUITES`], with
//!   `OXMPI_NETNS_HOSTS` naming the hosts and ARGS passed to the test harness), and removes
//!   the namespaces afterwards: after success, failure, or Ctrl-C. Without root or `ip` it
//!   prints one line saying why and succeeds.
//! - `slurm-test [ARGS...]`: starts a single-machine Slurm cluster (`xtask::slurm`; installs
//!   `slurm-wlm` and `munge` first if needed), runs `oxmpi-tests`' `slurm` suite on it
//!   (`OXMPI_SLURM_CONF` naming its configuration, ARGS passed to the test harness) and stops
//!   it afterwards, also on failure or Ctrl-C. Without root it prints why and succeeds.

use std::process::{exit, Command};
use std::sync::atomic::{AtomicI32, Ordering};

use xtask::netns::{self, TestHosts, HOSTS_ENV, LINKS};

mod install;

/// The cross-host suites: (package, integration test).
const SUITES: [(&str, &str); 3] = [
    ("oxrun", "multihost"),
    ("oxmpi-tests", "multihost_tcp"),
    ("oxmpi-tests", "multihost_rma"),
];

/// The last of SIGINT/SIGTERM received, or 0.
static STOP: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(sig: libc::c_int) {
    STOP.store(sig, Ordering::SeqCst);
}

fn usage() -> ! {
    eprintln!("usage: cargo xtask netns-test [TEST-HARNESS ARGS...]");
    eprintln!("       cargo xtask slurm-test [TEST-HARNESS ARGS...]");
    eprintln!("       cargo xtask install --prefix DIR [--no-build]");
    exit(2)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("netns-test") => exit(netns_test(&args[1..])),
        Some("slurm-test") => exit(slurm_test(&args[1..])),
        Some("install") => {
            if let Err(e) = install::main(&args[1..]) {
                eprintln!("xtask: {e}");
                exit(1);
            }
        }
        _ => usage(),
    }
}

fn netns_test(harness_args: &[String]) -> i32 {
    let hosts = match TestHosts::create() {
        Ok(h) => h,
        Err(why) => {
            println!("netns-test: skipped, cannot create network namespaces here: {why}");
            return 0;
        }
    };
    println!("netns-test: hosts {}", hosts.names.join(", "));
    for (a, a_if, b, b_if, net) in LINKS {
        println!(
            "netns-test:   {} {a_if} {} <-> {} {b_if} {}",
            hosts.name(a),
            netns::address(a, net),
            hosts.name(b),
            netns::address(b, net)
        );
    }
    // A handler (not SIG_IGN, which children would inherit): Ctrl-C reaches the tests, which
    // end; we note it and still remove the namespaces below.
    // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
    unsafe {
        let handler: extern "C" fn(libc::c_int) = on_signal;
        libc::signal(libc::SIGINT, handler as libc::sighandler_t);
        libc::signal(libc::SIGTERM, handler as libc::sighandler_t);
    }
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut code = 0;
    for (package, test) in SUITES {
        if STOP.load(Ordering::SeqCst) != 0 {
            break;
        }
        println!("netns-test: cargo test --release -p {package} --test {test}");
        // The suites run example programs too; `cargo test --test` alone does not build them.
        let status = Command::new(&cargo)
            .args(["build", "--release", "-p", package, "--examples"])
            .status()
            .and_then(|s| {
                if s.success() {
                    Command::new(&cargo)
                        .args(["test", "--release", "-p", package, "--test", test, "--"])
                        .args(harness_args)
                        .env(HOSTS_ENV, hosts.names.join(","))
                        .status()
                } else {
                    Ok(s)
                }
            });
        match status {
            Ok(s) if s.success() => {}
            Ok(s) => code = s.code().unwrap_or(1).max(1),
            Err(e) => {
                eprintln!("netns-test: cannot run {cargo}: {e}");
                code = 1;
            }
        }
    }
    drop(hosts);
    // Tests that made hosts of their own and were killed by Ctrl-C left them behind.
    netns::sweep_stale();
    match STOP.load(Ordering::SeqCst) {
        0 => {
            println!(
                "netns-test: {}; namespaces removed",
                if code == 0 { "passed" } else { "FAILED" }
            );
            code
        }
        sig => {
            println!("netns-test: interrupted; namespaces removed");
            128 + sig
        }
    }
}

fn slurm_test(harness_args: &[String]) -> i32 {
    let cluster = match xtask::slurm::TestCluster::start() {
        Ok(c) => c,
        Err(why) => {
            println!("slurm-test: skipped, cannot start a Slurm cluster here: {why}");
            return 0;
        }
    };
    println!(
        "slurm-test: cluster up, nodes {} ({})",
        xtask::slurm::NODES.join(","),
        cluster.conf.display()
    );
    // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
    unsafe {
        let handler: extern "C" fn(libc::c_int) = on_signal;
        libc::signal(libc::SIGINT, handler as libc::sighandler_t);
        libc::signal(libc::SIGTERM, handler as libc::sighandler_t);
    }
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(&cargo)
        .args(["build", "--release", "--workspace", "--bins", "--examples"])
        .status()
        .and_then(|s| {
            if s.success() {
                Command::new(&cargo)
                    .args([
                        "test",
                        "--release",
                        "-p",
                        "oxmpi-tests",
                        "--test",
                        "slurm",
                        "--",
                    ])
                    .args(harness_args)
                    .env(xtask::slurm::CONF_ENV, &cluster.conf)
                    .status()
            } else {
                Ok(s)
            }
        });
    let code = match status {
        Ok(s) if s.success() => 0,
        Ok(s) => s.code().unwrap_or(1).max(1),
        Err(e) => {
            eprintln!("slurm-test: cannot run {cargo}: {e}");
            1
        }
    };
    drop(cluster);
    match STOP.load(Ordering::SeqCst) {
        0 => {
            println!(
                "slurm-test: {}; cluster stopped",
                if code == 0 { "passed" } else { "FAILED" }
            );
            code
        }
        sig => {
            println!("slurm-test: interrupted; cluster stopped");
            128 + sig
        }
    }
}
