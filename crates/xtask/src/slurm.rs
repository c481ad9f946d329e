//! A real Slurm cluster on this one machine, for tests: `munged`, `slurmctld` and two `slurmd`
//! "nodes" (`n1`, `n2`), all on loopback.
//!
//! [`TestCluster::start`] installs Debian's `slurm-wlm` and `munge` when they are missing (as
//! root; `apt-get`), writes a private configuration into a fresh directory under the system
//! temporary directory (its own munge key and socket, free loopback ports, state and spool
//! directories, logs), starts the daemons in the foreground as children of this process and
//! waits until both nodes are idle. Every client command must see that configuration:
//! [`TestCluster::command`] sets `SLURM_CONF`. Dropping the cluster cancels its jobs, stops the
//! daemons (TERM, then KILL) and the step daemons they left, and deletes the directory, also
//! when a test panics. Clusters are independent, so tests may run several at once.
//!
//! Nodes are `NodeName=n1 NodeHostname=localhost NodeAddr=127.0.0.1 Port=P1` (and `n2`), each
//! with this machine's CPUs; `slurmd -N n1` serves one. Tasks are bound by `task/affinity`
//! (Slurm's own cpuset, which oxmpi must respect); processes are tracked by
//! `proctrack/linuxproc`, which needs no cgroup setup. The nodes' epilog ([`EPILOG`]) removes
//! what killed oxmpi ranks left in `/dev/shm`, as a site running oxmpi would.

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// The node names of every test cluster.
pub const NODES: [&str; 2] = ["n1", "n2"];

/// The epilog every node runs when a job ends: removes the shared-memory files oxmpi ranks of
/// that job left behind if they were killed (their names start with the job number in hex).
pub const EPILOG: &str =
    "#!/bin/sh\nrm -f /dev/shm/oxmpi.$(printf %016x \"$SLURM_JOB_ID\").*\nexit 0\n";

/// One running single-machine Slurm cluster; stopped and removed on drop.
#[derive(Debug)]
pub struct TestCluster {
    /// The directory holding configuration, key, state and logs.
    pub dir: PathBuf,
    /// `slurm.conf` (what `SLURM_CONF` names).
    pub conf: PathBuf,
    /// CPUs each node offers.
    pub cpus: usize,
    daemons: Vec<(String, Child)>,
    owned: bool,
}

/// Environment variable naming the `slurm.conf` of a running cluster that tests should use
/// instead of starting their own (`cargo xtask slurm-test` sets it).
pub const CONF_ENV: &str = "OXMPI_SLURM_CONF";

static COUNTER: AtomicU32 = AtomicU32::new(0);

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

fn on_path(name: &str) -> bool {
    [
        "/usr/sbin",
        "/usr/bin",
        "/sbin",
        "/bin",
        "/usr/local/bin",
        "/usr/local/sbin",
    ]
    .iter()
    .any(|d| Path::new(d).join(name).exists())
}

/// Whether the Slurm and munge programs this module runs are installed.
pub fn installed() -> bool {
    [
        "munged",
        "slurmctld",
        "slurmd",
        "srun",
        "sbatch",
        "sinfo",
        "scancel",
    ]
    .iter()
    .all(|p| on_path(p))
}

fn apt_get(args: &[&str]) -> Result<(), String> {
    let out = Command::new("apt-get")
        .args(args)
        .env("DEBIAN_FRONTEND", "noninteractive")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run apt-get: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        let err = String::from_utf8_lossy(&out.stderr);
        Err(format!(
            "apt-get {} failed: {}",
            args.join(" "),
            err.lines().last().unwrap_or("")
        ))
    }
}

/// Installs `slurm-wlm` and `munge` unless present (idempotent; needs root and Debian's apt).
pub fn install() -> Result<(), String> {
    if installed() {
        return Ok(());
    }
    if !is_root() {
        return Err("Slurm is not installed and installing it needs root".into());
    }
    let pkgs = [
        "install",
        "-y",
        "--no-install-recommends",
        "slurm-wlm",
        "munge",
    ];
    if apt_get(&pkgs).is_err() {
        apt_get(&["update"])?;
        apt_get(&pkgs)?;
    }
    if installed() {
        Ok(())
    } else {
        Err("slurm-wlm and munge were installed but their programs are missing".into())
    }
}

/// A loopback port nobody listens on right now.
fn free_port() -> Result<u16, String> {
    let l = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| format!("bind: {e}"))?;
    l.local_addr()
        .map(|a| a.port())
        .map_err(|e| format!("local_addr: {e}"))
}

/// The `slurm.conf` of a cluster in `dir` with the given ports and CPUs per node.
pub fn config(dir: &Path, ctld_port: u16, node_ports: &[u16], cpus: usize) -> String {
    let d = dir.display();
    let mut c = String::new();
    let _ = writeln!(c, "ClusterName=oxtest");
    let _ = writeln!(c, "SlurmctldHost=localhost");
    let _ = writeln!(c, "SlurmctldPort={ctld_port}");
    let _ = writeln!(c, "SlurmUser=root\nSlurmdUser=root");
    let _ = writeln!(c, "AuthType=auth/munge\nCredType=cred/munge");
    let _ = writeln!(c, "AuthInfo=socket={d}/munge/munge.socket");
    let _ = writeln!(c, "StateSaveLocation={d}/state");
    let _ = writeln!(c, "SlurmdSpoolDir={d}/spool/%n");
    let _ = writeln!(c, "SlurmctldPidFile={d}/slurmctld.pid");
    let _ = writeln!(c, "SlurmdPidFile={d}/slurmd-%n.pid");
    let _ = writeln!(c, "SlurmctldLogFile={d}/log/slurmctld.log");
    let _ = writeln!(c, "SlurmdLogFile={d}/log/slurmd-%n.log");
    let _ = writeln!(c, "ProctrackType=proctrack/linuxproc");
    let _ = writeln!(c, "TaskPlugin=task/affinity");
    let _ = writeln!(
        c,
        "SelectType=select/cons_tres\nSelectTypeParameters=CR_Core"
    );
    let _ = writeln!(c, "MpiDefault=none\nReturnToService=2");
    let _ = writeln!(c, "SchedulerType=sched/builtin\nJobCompType=jobcomp/none");
    let _ = writeln!(c, "AccountingStorageType=accounting_storage/none");
    let _ = writeln!(c, "SlurmctldTimeout=30\nSlurmdTimeout=30\nInactiveLimit=0");
    let _ = writeln!(c, "KillWait=2\nMinJobAge=5\nMessageTimeout=20");
    let _ = writeln!(c, "Epilog={d}/epilog");
    for (name, port) in NODES.iter().zip(node_ports) {
        let _ = writeln!(
            c,
            "NodeName={name} NodeHostname=localhost NodeAddr=127.0.0.1 Port={port} CPUs={cpus} State=UNKNOWN"
        );
    }
    let _ = writeln!(
        c,
        "PartitionName=debug Nodes={} Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4",
        NODES.join(",")
    );
    c
}

fn spawn(name: &str, cmd: &mut Command, log: &Path, conf: &Path) -> Result<Child, String> {
    let out = fs::File::create(log).map_err(|e| format!("{}: {e}", log.display()))?;
    let err = out.try_clone().map_err(|e| e.to_string())?;
    // Step daemons inherit SLURM_CONF, which is how Drop finds the ones left behind.
    cmd.env("SLURM_CONF", conf)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .spawn()
        .map_err(|e| format!("cannot start {name}: {e}"))
}

impl TestCluster {
    /// The cluster `OXMPI_SLURM_CONF` names, if set (left running on drop), else a fresh one.
    pub fn get() -> Result<TestCluster, String> {
        match std::env::var_os(CONF_ENV) {
            Some(conf) if !conf.is_empty() => {
                let conf = PathBuf::from(conf);
                let dir = conf
                    .parent()
                    .ok_or_else(|| format!("{CONF_ENV}: {} has no directory", conf.display()))?
                    .to_path_buf();
                if !conf.exists() {
                    return Err(format!("{CONF_ENV}: {} does not exist", conf.display()));
                }
                Ok(TestCluster {
                    conf,
                    dir,
                    cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
                    daemons: Vec::new(),
                    owned: false,
                })
            }
            _ => TestCluster::start(),
        }
    }

    /// Installs Slurm if needed, starts a fresh cluster and waits until its nodes are idle.
    /// On failure, whatever was started is stopped again and the reason returned (not root,
    /// no apt, a daemon that would not start: its log's last lines).
    pub fn start() -> Result<TestCluster, String> {
        if !is_root() {
            return Err("a test Slurm cluster needs root (daemons run as root)".into());
        }
        install()?;
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("oxslurm-{}-{n}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        for sub in ["munge", "state", "log", "spool/n1", "spool/n2"] {
            fs::create_dir_all(dir.join(sub)).map_err(|e| format!("{}: {e}", dir.display()))?;
        }
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        let mut cluster = TestCluster {
            conf: dir.join("slurm.conf"),
            dir,
            cpus,
            daemons: Vec::new(),
            owned: true,
        };
        cluster.launch()?;
        Ok(cluster)
    }

    fn launch(&mut self) -> Result<(), String> {
        let d = self.dir.clone();
        let key = d.join("munge/munge.key");
        let mut bytes = [0u8; 1024];
        fs::File::open("/dev/urandom")
            .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut bytes))
            .map_err(|e| format!("/dev/urandom: {e}"))?;
        fs::write(&key, bytes).map_err(|e| format!("{}: {e}", key.display()))?;
        use std::os::unix::fs::PermissionsExt;
        let _ = fs::set_permissions(&key, fs::Permissions::from_mode(0o600));
        let _ = fs::set_permissions(d.join("munge"), fs::Permissions::from_mode(0o700));

        let ctld_port = free_port()?;
        let node_ports = [free_port()?, free_port()?];
        fs::write(&self.conf, config(&d, ctld_port, &node_ports, self.cpus))
            .map_err(|e| format!("{}: {e}", self.conf.display()))?;
        let epilog = d.join("epilog");
        fs::write(&epilog, EPILOG).map_err(|e| format!("{}: {e}", epilog.display()))?;
        let _ = fs::set_permissions(&epilog, fs::Permissions::from_mode(0o755));

        let socket = d.join("munge/munge.socket");
        let munged = spawn(
            "munged",
            Command::new("munged")
                .arg("-F")
                .arg("--force")
                .arg(format!("--socket={}", socket.display()))
                .arg(format!("--key-file={}", key.display()))
                .arg(format!(
                    "--pid-file={}",
                    d.join("munge/munged.pid").display()
                ))
                .arg(format!("--seed-file={}", d.join("munge/seed").display()))
                .arg(format!("--log-file={}", d.join("log/munged.log").display())),
            &d.join("log/munged.out"),
            &self.conf,
        )?;
        self.daemons.push(("munged".into(), munged));
        self.wait_for("munged socket", Duration::from_secs(10), |_| {
            socket.exists()
        })?;

        let ctld = spawn(
            "slurmctld",
            Command::new("slurmctld")
                .args(["-D", "-i", "-f"])
                .arg(&self.conf),
            &d.join("log/slurmctld.out"),
            &self.conf,
        )?;
        self.daemons.push(("slurmctld".into(), ctld));
        for node in NODES {
            let child = spawn(
                "slurmd",
                Command::new("slurmd")
                    .args(["-D", "-N", node, "-f"])
                    .arg(&self.conf),
                &d.join(format!("log/slurmd-{node}.out")),
                &self.conf,
            )?;
            self.daemons.push((format!("slurmd {node}"), child));
        }
        self.wait_for("both nodes idle", Duration::from_secs(60), |c| {
            c.client("sinfo", &["-h", "-N", "-o", "%N %T"])
                .map(|o| {
                    let text = String::from_utf8_lossy(&o.stdout).into_owned();
                    NODES.iter().all(|n| {
                        text.lines()
                            .any(|l| l.starts_with(&format!("{n} ")) && l.contains("idle"))
                    })
                })
                .unwrap_or(false)
        })
    }

    /// Polls `ready` until it holds; fails with the daemons' state if one died or time ran out.
    fn wait_for(
        &mut self,
        what: &str,
        limit: Duration,
        ready: impl Fn(&TestCluster) -> bool,
    ) -> Result<(), String> {
        let start = Instant::now();
        loop {
            if ready(self) {
                return Ok(());
            }
            let died = self
                .daemons
                .iter_mut()
                .find_map(|(name, child)| match child.try_wait() {
                    Ok(Some(status)) => Some(format!("{name} exited ({status})")),
                    _ => None,
                });
            if let Some(died) = died {
                return Err(format!(
                    "{died} while waiting for {what}; logs in {}:\n{}",
                    self.dir.display(),
                    self.log_tail()
                ));
            }
            if start.elapsed() > limit {
                return Err(format!(
                    "timed out after {limit:?} waiting for {what}:\n{}",
                    self.log_tail()
                ));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The last lines of every daemon log, for failure messages.
    pub fn log_tail(&self) -> String {
        let mut out = String::new();
        let mut logs: Vec<PathBuf> = fs::read_dir(self.dir.join("log"))
            .map(|d| d.filter_map(|e| e.ok()).map(|e| e.path()).collect())
            .unwrap_or_default();
        logs.sort();
        for log in logs {
            let text = fs::read_to_string(&log).unwrap_or_default();
            let lines: Vec<&str> = text.lines().collect();
            let _ = writeln!(out, "--- {}", log.display());
            for l in &lines[lines.len().saturating_sub(8)..] {
                let _ = writeln!(out, "{l}");
            }
        }
        out
    }

    /// A command running the Slurm client `program` (`srun`, `sbatch`, ...) against this
    /// cluster: `SLURM_CONF` set, any outer allocation's variables removed.
    pub fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut c = Command::new(program);
        for (k, _) in std::env::vars_os() {
            if k.to_string_lossy().starts_with("SLURM_") {
                c.env_remove(k);
            }
        }
        c.env("SLURM_CONF", &self.conf);
        c
    }

    /// Runs a quick client command (`sinfo`, `squeue`, `scancel`) to completion.
    pub fn client(&self, program: &str, args: &[&str]) -> Result<Output, String> {
        self.command(program)
            .args(args)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("cannot run {program}: {e}"))
    }

    /// Whether the cluster has no job left (pending, running or completing).
    pub fn idle(&self) -> bool {
        self.client("squeue", &["-h", "-o", "%i"])
            .map(|o| o.status.success() && o.stdout.iter().all(u8::is_ascii_whitespace))
            .unwrap_or(false)
    }

    /// Step daemons of this cluster still alive (they outlive slurmd if a step hangs).
    fn stepds(&self) -> Vec<i32> {
        let conf = self.conf.to_string_lossy().into_owned();
        let spool = self.dir.join("spool").to_string_lossy().into_owned();
        let mut pids = Vec::new();
        for e in fs::read_dir("/proc").into_iter().flatten().flatten() {
            let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
                continue;
            };
            let Ok(cmd) = fs::read(e.path().join("cmdline")) else {
                continue;
            };
            let cmd = String::from_utf8_lossy(&cmd);
            let environ = fs::read(e.path().join("environ")).unwrap_or_default();
            let environ = String::from_utf8_lossy(&environ);
            if cmd.starts_with("slurmstepd")
                && (environ.contains(&conf) || environ.contains(&spool))
            {
                pids.push(pid);
            }
        }
        pids
    }
}

impl Drop for TestCluster {
    fn drop(&mut self) {
        if !self.owned {
            return;
        }
        let _ = self.client("scancel", &["-p", "debug"]);
        let start = Instant::now();
        while !self.idle() && start.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(100));
        }
        // slurmd first (so no new step starts), then the controller, then munge.
        for (_, child) in self.daemons.iter_mut().rev() {
            // SAFETY: kill with a pid of our own child that has not been reaped yet.
            unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
        }
        for (_, child) in self.daemons.iter_mut().rev() {
            let t = Instant::now();
            while matches!(child.try_wait(), Ok(None)) && t.elapsed() < Duration::from_secs(5) {
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        for pid in self.stepds() {
            // SAFETY: a plain kill of a step daemon found under this cluster's paths.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        if std::env::var_os("OXMPI_SLURM_KEEP").is_none() {
            let _ = fs::remove_dir_all(&self.dir);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_names_every_node_and_port() {
        let c = config(Path::new("/tmp/x"), 7000, &[7001, 7002], 4);
        assert!(c.contains("SlurmctldPort=7000"));
        assert!(
            c.contains("NodeName=n1 NodeHostname=localhost NodeAddr=127.0.0.1 Port=7001 CPUs=4")
        );
        assert!(
            c.contains("NodeName=n2 NodeHostname=localhost NodeAddr=127.0.0.1 Port=7002 CPUs=4")
        );
        assert!(c.contains("AuthInfo=socket=/tmp/x/munge/munge.socket"));
        assert!(c.contains("PartitionName=debug Nodes=n1,n2"));
    }
}
