//! What the namespace-host suites share (`multihost_tcp`, `multihost_rma`): the rig's hosts or
//! one skip line, and jobs whose head oxrun runs in one host and starts agents in the others.

use std::io::Write;
use std::process::{Command, Output};
use std::time::Duration;

use oxmpi_tests::{oxrun, run_with_deadline};
use xtask::netns::TestHosts;

/// How the head starts an agent in another host.
pub const LAUNCHER: &str = "ip netns exec {host}";
/// Every veth subnet of the rig, so no rail leaves through another interface.
pub const TCP_IF: &str = "10.77.0.0/16";

/// The shared hosts (`OXMPI_NETNS_HOSTS`) or fresh ones, or `None` after printing once why
/// `suite`'s tests are skipped.
pub fn hosts(suite: &str) -> Option<TestHosts> {
    skip_unless(suite, TestHosts::get())
}

/// Hosts of the test's own, for tests that take links down (other tests may share the set
/// `OXMPI_NETNS_HOSTS` names).
#[allow(dead_code)] // Not every suite takes links down.
pub fn own_hosts(suite: &str) -> Option<TestHosts> {
    skip_unless(suite, TestHosts::create())
}

fn skip_unless(suite: &str, made: Result<TestHosts, String>) -> Option<TestHosts> {
    match made {
        Ok(h) => Some(h),
        Err(why) => {
            static ONCE: std::sync::Once = std::sync::Once::new();
            ONCE.call_once(|| {
                let _ = writeln!(
                    std::io::stderr(),
                    "{suite}: skipping the namespace tests, cannot create network namespaces here: {why}"
                );
            });
            None
        }
    }
}

/// Host `head`'s oxrun running `prog args` with `--host spec`, TCP routes logged.
pub fn job_from(
    head: usize,
    h: &TestHosts,
    spec: &str,
    np: usize,
    prog: &str,
    args: &[&str],
    env: &[(&str, &str)],
) -> Command {
    let mut cmd = h.command_in(head, oxrun());
    cmd.args(["--launcher", LAUNCHER, "--timeout", "100", "--host", spec])
        .args(["-n", &np.to_string(), prog])
        .args(args)
        .env("OXMPI_TCP_IF", TCP_IF)
        .env("OXMPI_TCP_LOG_ROUTES", "1");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd
}

/// [`job_from`] with the head in h3, run to completion (bounded at two minutes).
pub fn run(
    h: &TestHosts,
    spec: &str,
    np: usize,
    prog: &str,
    args: &[&str],
    env: &[(&str, &str)],
) -> Output {
    run_with_deadline(
        job_from(3, h, spec, np, prog, args, env),
        Duration::from_secs(120),
    )
}
