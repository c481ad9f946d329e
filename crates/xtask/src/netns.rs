//! Three test hosts on one machine: network namespaces joined by veth pairs.
//!
//! ```text
//!        rail0 10.77.12.0/24
//!   h1 ═════════════════════ h2        h1, h2, h3: namespaces `<prefix>h1` ... `<prefix>h3`,
//!      rail1 10.77.112.0/24            loopback up in each; only private addresses, and only
//!    \                      /          inside the namespaces created here.
//!  10.77.13.0/24   10.77.23.0/24
//!      \                  /
//!               h3
//! ```
//!
//! Host `i` (1-based) has address `10.77.<link>.<i>` on each of its links. h1 and h2 are joined
//! twice (interfaces `rail0` and `rail1` in both), to act as rails; h3 reaches h1 through `to-h1`
//! and h2 through `to-h2`, and h1 and h2 reach h3 through `to-h3`. A head `oxrun` run in h3
//! reaches every host directly.
//!
//! [`TestHosts::create`] builds a fresh set named after the process id and a counter, so tests
//! running in parallel never clash; dropping it deletes the namespaces (which deletes their
//! veths), also when a test panics. Sets left behind by a process that was killed are swept
//! by the next `create`. When `OXMPI_NETNS_HOSTS` names an existing set (as `cargo xtask
//! netns-test` does), [`TestHosts::get`] uses it and leaves it in place.

use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};

/// Prefix of every namespace this module creates: `oxt<pid>x<n>h<i>`.
pub const PREFIX: &str = "oxt";
/// Environment variable naming an existing set of three hosts, comma-separated.
pub const HOSTS_ENV: &str = "OXMPI_NETNS_HOSTS";

/// One veth pair: `(host a, interface in a, host b, interface in b, third octet)`.
pub const LINKS: [(usize, &str, usize, &str, u8); 4] = [
    (1, "rail0", 2, "rail0", 12),
    (1, "rail1", 2, "rail1", 112),
    (1, "to-h3", 3, "to-h1", 13),
    (2, "to-h3", 3, "to-h2", 23),
];

/// The address of host `host` (1-based) on the link with third octet `net`.
pub fn address(host: usize, net: u8) -> String {
    format!("10.77.{net}.{host}")
}

/// Three namespace-hosts; deleted on drop if this value created them.
#[derive(Debug)]
pub struct TestHosts {
    /// The namespaces' names, h1 to h3 (what `ip netns exec` and oxrun's `{host}` take).
    pub names: [String; 3],
    owned: bool,
}

static COUNTER: AtomicU32 = AtomicU32::new(0);

fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run ip: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "ip {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// The namespaces that exist now.
fn list() -> Vec<String> {
    let Ok(out) = Command::new("ip").args(["netns", "list"]).output() else {
        return Vec::new();
    };
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_owned)
        .collect()
}

/// The pid in a name this module gave, if it is one.
fn owner_pid(name: &str) -> Option<u32> {
    let rest = name.strip_prefix(PREFIX)?;
    let (pid, rest) = rest.split_once('x')?;
    let (n, host) = rest.split_once('h')?;
    if n.parse::<u32>().is_err() || !matches!(host, "1" | "2" | "3") {
        return None;
    }
    pid.parse().ok()
}

/// Deletes namespace sets whose creating process is gone (killed before it could clean up).
pub fn sweep_stale() -> Vec<String> {
    let mut removed = Vec::new();
    for name in list() {
        if let Some(pid) = owner_pid(&name) {
            if !std::path::Path::new(&format!("/proc/{pid}")).exists()
                && ip(&["netns", "del", &name]).is_ok()
            {
                removed.push(name);
            }
        }
    }
    removed
}

impl TestHosts {
    /// The set named by `OXMPI_NETNS_HOSTS` if any, else a fresh one.
    pub fn get() -> Result<TestHosts, String> {
        match std::env::var(HOSTS_ENV) {
            Ok(v) if !v.is_empty() => {
                let names: Vec<String> = v.split(',').map(str::to_owned).collect();
                let names: [String; 3] = names
                    .try_into()
                    .map_err(|_| format!("{HOSTS_ENV}={v:?} must name three namespaces"))?;
                let existing = list();
                if let Some(missing) = names.iter().find(|n| !existing.contains(n)) {
                    return Err(format!("{HOSTS_ENV}: namespace {missing} does not exist"));
                }
                Ok(TestHosts {
                    names,
                    owned: false,
                })
            }
            _ => TestHosts::create(),
        }
    }

    /// Creates three fresh namespace-hosts and their links; on any failure removes what was
    /// made and says why (not root, no `ip`, no namespace support).
    pub fn create() -> Result<TestHosts, String> {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            return Err("network namespaces need root".into());
        }
        sweep_stale();
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let pid = std::process::id();
        let names = [1, 2, 3].map(|i| format!("{PREFIX}{pid}x{n}h{i}"));
        // From here on, dropping `hosts` removes whatever was made.
        let hosts = TestHosts { names, owned: true };
        for name in &hosts.names {
            ip(&["netns", "add", name])?;
            ip(&["-n", name, "link", "set", "lo", "up"])?;
        }
        for (a, a_if, b, b_if, net) in LINKS {
            let (na, nb) = (&hosts.names[a - 1], &hosts.names[b - 1]);
            ip(&[
                "link", "add", "name", a_if, "netns", na, "type", "veth", "peer", "name", b_if,
                "netns", nb,
            ])?;
            for (ns, ifname, host) in [(na, a_if, a), (nb, b_if, b)] {
                let addr = format!("{}/24", address(host, net));
                ip(&["-n", ns, "addr", "add", &addr, "dev", ifname])?;
                ip(&["-n", ns, "link", "set", ifname, "up"])?;
            }
        }
        Ok(hosts)
    }

    /// The namespace of host `i` (1-based).
    pub fn name(&self, i: usize) -> &str {
        &self.names[i - 1]
    }

    /// Runs `ip` with `args` inside host `i`'s namespace (e.g. to take a rail down).
    pub fn ip_in(&self, i: usize, args: &[&str]) -> Result<(), String> {
        let mut all = vec!["-n", self.name(i)];
        all.extend_from_slice(args);
        ip(&all)
    }

    /// A `Command` that runs `program` inside host `i`.
    pub fn command_in(&self, i: usize, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", self.name(i)]).arg(program);
        c
    }
}

impl Drop for TestHosts {
    fn drop(&mut self) {
        if !self.owned {
            return;
        }
        for name in &self.names {
            // Deleting a namespace deletes the veths in it (and their peers).
            let _ = ip(&["netns", "del", name]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_recognised_only_when_ours() {
        assert_eq!(owner_pid("oxt123x0h1"), Some(123));
        assert_eq!(owner_pid("oxt123x17h3"), Some(123));
        assert_eq!(owner_pid("oxt123x0h4"), None);
        assert_eq!(owner_pid("oxh1"), None);
        assert_eq!(owner_pid("oxtabcx0h1"), None);
        assert_eq!(owner_pid("other"), None);
    }

    #[test]
    fn addresses_are_private() {
        for (a, _, b, _, net) in LINKS {
            assert!(address(a, net).starts_with("10."));
            assert_ne!(address(a, net), address(b, net));
        }
    }

    #[test]
    fn hosts_are_made_and_removed() {
        let hosts = match TestHosts::create() {
            Ok(h) => h,
            Err(why) => {
                eprintln!("skipping: cannot create network namespaces here: {why}");
                return;
            }
        };
        let names = hosts.names.clone();
        assert!(names.iter().all(|n| list().contains(n)));
        // Every link end has its address (connectivity itself is what the cross-host
        // suites test).
        for (a, a_if, b, b_if, net) in LINKS {
            for (host, ifname) in [(a, a_if), (b, b_if)] {
                let out = Command::new("ip")
                    .args(["-n", hosts.name(host), "-br", "addr", "show", "dev", ifname])
                    .output()
                    .unwrap();
                let text = String::from_utf8_lossy(&out.stdout);
                assert!(
                    text.contains(&address(host, net)),
                    "{ifname} in h{host}: {text}"
                );
            }
        }
        drop(hosts);
        let left = list();
        assert!(names.iter().all(|n| !left.contains(n)), "{left:?}");
    }
}
