//! Jobs across hosts: three network namespaces joined by veth pairs are three hosts (see
//! `xtask::netns`); the head oxrun runs in h3 and starts agents with
//! `--launcher 'ip netns exec {host}'`. PMI exchange and placement, output, exit codes, kill -9
//! of a remote rank, abort from a remote rank, the death of a host's agent, --timeout, and
//! after each ending: no process left, nothing left in /dev/shm.
//!
//! Without root or `ip`, the namespace tests print one skip line and pass. The tests at the
//! end run "remote" hosts on this machine through a launcher that is not ssh (`env`), so the
//! agent path is tested everywhere.

mod common;

use common::{assert_all_gone, oxrun, probe, run, run_command, values_of, Run};
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use xtask::netns::TestHosts;

const LAUNCHER: &str = "ip netns exec {host}";

/// Fresh hosts, or `None` after printing why the test is skipped.
fn hosts() -> Option<TestHosts> {
    match TestHosts::get() {
        Ok(h) => Some(h),
        Err(why) => {
            // Straight to the real stderr (the harness captures eprintln!), once per run.
            static ONCE: std::sync::Once = std::sync::Once::new();
            ONCE.call_once(|| {
                let _ = writeln!(
                    std::io::stderr(),
                    "multihost: skipping the namespace tests, cannot create network namespaces here: {why}"
                );
            });
            None
        }
    }
}

/// oxrun with `args`, run in host h3 (the head), under the test deadline.
fn run_in_h3(hosts: &TestHosts, args: &[&str]) -> Run {
    let mut cmd = hosts.command_in(3, oxrun());
    cmd.args(["--launcher", LAUNCHER]).args(args);
    run_command(cmd, &format!("oxrun {args:?} in {}", hosts.name(3)))
}

/// The `mpi-pairs` example program (built by `cargo test` and by `cargo xtask netns-test`).
fn mpi_pairs() -> String {
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().and_then(|d| d.parent()).unwrap();
    let path: PathBuf = dir.join("examples").join("mpi-pairs");
    assert!(
        path.exists(),
        "{} is missing: build it with `cargo build [--release] -p oxrun --examples` (`cargo test` and `cargo xtask netns-test` do)",
        path.display()
    );
    path.display().to_string()
}

fn shm_files_of(jobkey: &str) -> Vec<String> {
    let prefix = format!("oxmpi.{jobkey}.");
    std::fs::read_dir("/dev/shm")
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with(&prefix))
                .collect()
        })
        .unwrap_or_default()
}

/// The one job key printed as `key=...`.
fn printed_jobkey(stdout: &str) -> String {
    let keys: std::collections::BTreeSet<&str> = stdout
        .split_whitespace()
        .filter_map(|w| w.strip_prefix("key="))
        .collect();
    assert_eq!(keys.len(), 1, "one job key expected: {stdout}");
    keys.into_iter().next().unwrap().to_owned()
}

/// Fails if a process of the job is left: an agent's watchdog names the job key.
fn assert_no_watchdog(jobkey: &str) {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let left: Vec<String> = std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
            .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
            .filter(|c| c.contains(&format!("--watchdog {jobkey}")))
            .collect();
        if left.is_empty() {
            return;
        }
        assert!(Instant::now() < deadline, "left running: {left:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Parent pid of `pid`.
fn ppid(pid: i32) -> i32 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after = stat.rsplit(')').next().unwrap();
    after.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// Checks a probe `hosts` run: every rank printed its line, with the placement `nodes`.
fn assert_exchange(r: &Run, nodes: &str) {
    assert_eq!(r.code, Some(0), "{r:?}");
    let n = nodes.split(',').count();
    let lines = r.sorted_out_lines();
    assert_eq!(lines.len(), n, "{r:?}");
    for (i, line) in lines.iter().enumerate() {
        assert!(
            line.starts_with(&format!("probe rank={i} size={n} nodes={nodes} pid=")),
            "{line}"
        );
        assert!(line.ends_with("cards=ok"), "{line}");
    }
    assert!(shm_files_of(&printed_jobkey(&r.stdout)).is_empty());
}

#[test]
fn two_hosts_by_two_and_three_by_one_exchange_pmi() {
    let Some(h) = hosts() else { return };
    let two = format!("{}:2,{}:2", h.name(1), h.name(2));
    let r = run_in_h3(
        &h,
        &[
            "--timeout",
            "25",
            "--host",
            &two,
            "-n",
            "4",
            probe(),
            "hosts",
        ],
    );
    assert_exchange(&r, "0,0,1,1");
    let r = run_in_h3(
        &h,
        &[
            "--timeout",
            "25",
            "--host",
            &two,
            "--map-by",
            "node",
            "-n",
            "4",
            probe(),
            "hosts",
        ],
    );
    assert_exchange(&r, "0,1,0,1");
    let three = format!("{},{},{}", h.name(1), h.name(2), h.name(3));
    let r = run_in_h3(
        &h,
        &[
            "--timeout",
            "25",
            "--host",
            &three,
            "-n",
            "3",
            probe(),
            "hosts",
        ],
    );
    assert_exchange(&r, "0,1,2");
}

#[test]
fn hostfiles_and_tagged_output_across_hosts() {
    let Some(h) = hosts() else { return };
    let file = std::env::temp_dir().join(format!("oxrun-hostfile-{}", std::process::id()));
    std::fs::write(
        &file,
        format!(
            "# two hosts\n{} slots=1\n{}   slots=2 # the big one\n",
            h.name(1),
            h.name(2)
        ),
    )
    .unwrap();
    let r = run_in_h3(
        &h,
        &[
            "--timeout",
            "25",
            "--hostfile",
            file.to_str().unwrap(),
            "--tag-output",
            "-n",
            "3",
            "sh",
            "-c",
            "echo out $PMI_RANK; echo err $PMI_RANK >&2",
        ],
    );
    std::fs::remove_file(&file).unwrap();
    assert_eq!(r.code, Some(0), "{r:?}");
    assert_eq!(
        r.sorted_out_lines(),
        ["[0] out 0", "[1] out 1", "[2] out 2"]
    );
    let mut err: Vec<&str> = r.stderr.lines().collect();
    err.sort_unstable();
    assert_eq!(err, ["[0] err 0", "[1] err 1", "[2] err 2"]);
}

#[test]
fn mpi_programs_run_across_hosts_and_talk_within_each() {
    let Some(h) = hosts() else { return };
    let prog = mpi_pairs();
    let two = format!("{}:2,{}:2", h.name(1), h.name(2));
    let r = run_in_h3(&h, &["--timeout", "25", "--host", &two, "-n", "4", &prog]);
    assert_eq!(r.code, Some(0), "{r:?}");
    assert_eq!(
        r.sorted_out_lines(),
        [
            "pair rank=0 partner=1 got=1",
            "pair rank=1 partner=0 got=0",
            "pair rank=2 partner=3 got=3",
            "pair rank=3 partner=2 got=2"
        ]
    );
}

#[test]
fn mpi_abort_on_a_remote_host_ends_the_job() {
    let Some(h) = hosts() else { return };
    let prog = mpi_pairs();
    let two = format!("{}:2,{}:2", h.name(1), h.name(2));
    let r = run_in_h3(
        &h,
        &[
            "--timeout",
            "25",
            "--host",
            &two,
            "-n",
            "4",
            &prog,
            "abort",
            "3",
            "9",
        ],
    );
    assert_eq!(r.code, Some(9), "{r:?}");
    let ours = r.oxrun_lines();
    assert_eq!(ours.len(), 1, "{r:?}");
    assert!(
        ours[0].starts_with("oxrun: rank 3 (pid ")
            && ours[0].contains(&format!(" on {}) called abort with code 9", h.name(2))),
        "{r:?}"
    );
    // The same through PMI directly, from the probe.
    let r = run_in_h3(
        &h,
        &[
            "--timeout",
            "25",
            "--host",
            &two,
            "-n",
            "4",
            probe(),
            "abort",
            "2",
            "7",
            "bye",
        ],
    );
    assert_eq!(r.code, Some(7), "{r:?}");
    assert!(
        r.oxrun_lines()[0].ends_with("called abort with code 7: bye; stopping the job"),
        "{r:?}"
    );
}

#[test]
fn exit_codes_and_kill_9_of_remote_ranks() {
    let Some(h) = hosts() else { return };
    let two = format!("{}:2,{}:2", h.name(1), h.name(2));
    let r = run_in_h3(
        &h,
        &[
            "--timeout",
            "25",
            "--host",
            &two,
            "-n",
            "4",
            "sh",
            "-c",
            "[ $PMI_RANK = 3 ] && exit 3; exec sleep 60",
        ],
    );
    assert_eq!(r.code, Some(3), "{r:?}");
    let ours = r.oxrun_lines();
    assert_eq!(ours.len(), 1, "{r:?}");
    assert!(ours[0].starts_with("oxrun: rank 3 (pid "), "{r:?}");
    assert!(
        ours[0].ends_with(&format!(
            " on {}) exited with status 3; stopping the job",
            h.name(2)
        )),
        "{r:?}"
    );

    // Rank 2 (on h2) makes a file of the job in /dev/shm and kills itself; every rank has a
    // grandchild; nothing may be left.
    let script = "sleep 60 & echo \"rank=$PMI_RANK pid=$$ pid=$! key=$OXMPI_JOBKEY\"; \
                  if [ $PMI_RANK = 2 ]; then sleep 0.3; : > /dev/shm/oxmpi.$OXMPI_JOBKEY.x; kill -9 $$; fi; wait";
    let r = run_in_h3(
        &h,
        &[
            "--timeout",
            "25",
            "--host",
            &two,
            "-n",
            "4",
            "sh",
            "-c",
            script,
        ],
    );
    assert_eq!(r.code, Some(137), "{r:?}");
    let ours = r.oxrun_lines();
    assert_eq!(ours.len(), 1, "{r:?}");
    assert!(
        ours[0].ends_with(&format!(
            " on {}) was killed by signal 9 (SIGKILL); stopping the job",
            h.name(2)
        )),
        "{r:?}"
    );
    let pids = values_of(&r.stdout, "pid=");
    assert_eq!(pids.len(), 8, "{r:?}");
    assert_all_gone(&pids);
    let key = printed_jobkey(&r.stdout);
    assert!(shm_files_of(&key).is_empty());
    assert_no_watchdog(&key);
}

#[test]
fn timeout_stops_every_host() {
    let Some(h) = hosts() else { return };
    let three = format!("{},{},{}", h.name(1), h.name(2), h.name(3));
    let script = "sleep 60 & echo \"pid=$$ pid=$! key=$OXMPI_JOBKEY\"; : > /dev/shm/oxmpi.$OXMPI_JOBKEY.r$PMI_RANK; wait";
    let r = run_in_h3(
        &h,
        &[
            "--timeout",
            "1",
            "--host",
            &three,
            "-n",
            "3",
            "sh",
            "-c",
            script,
        ],
    );
    assert_eq!(r.code, Some(124), "{r:?}");
    assert_eq!(
        r.oxrun_lines(),
        ["oxrun: job exceeded --timeout of 1 s; stopping it"],
        "{r:?}"
    );
    let pids = values_of(&r.stdout, "pid=");
    assert_eq!(pids.len(), 6, "{r:?}");
    assert_all_gone(&pids);
    let key = printed_jobkey(&r.stdout);
    assert!(shm_files_of(&key).is_empty());
    assert_no_watchdog(&key);
}

/// A job of 2 hosts × 2 ranks (`sh` ranks, each with a `sleep` grandchild and a file of the
/// job in /dev/shm) started in h3, with its four start lines read.
struct LiveJob {
    child: std::process::Child,
    out: BufReader<std::process::ChildStdout>,
    err: std::thread::JoinHandle<String>,
    stdout: String,
    start: Instant,
}

impl LiveJob {
    fn start(h: &TestHosts) -> LiveJob {
        let two = format!("{}:2,{}:2", h.name(1), h.name(2));
        let script = "sleep 60 & echo \"rank=$PMI_RANK pid=$$ pid=$! key=$OXMPI_JOBKEY\"; \
                      : > /dev/shm/oxmpi.$OXMPI_JOBKEY.r$PMI_RANK; wait";
        let start = Instant::now();
        let mut child = h
            .command_in(3, oxrun())
            .args([
                "--launcher",
                LAUNCHER,
                "--timeout",
                "25",
                "--host",
                &two,
                "-n",
                "4",
            ])
            .args(["sh", "-c", script])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = child.stderr.take().unwrap();
        let err = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = std::io::Read::read_to_string(&mut BufReader::new(stderr), &mut s);
            s
        });
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut stdout = String::new();
        for _ in 0..4 {
            let mut line = String::new();
            assert!(
                out.read_line(&mut line).unwrap() > 0,
                "ranks did not start: {stdout}"
            );
            stdout.push_str(&line);
        }
        LiveJob {
            child,
            out,
            err,
            stdout,
            start,
        }
    }

    /// The pid of rank `rank`'s shell.
    fn rank_pid(&self, rank: u32) -> i32 {
        self.stdout
            .lines()
            .find(|l| l.starts_with(&format!("rank={rank} ")))
            .map(|l| values_of(l, "pid=")[0])
            .unwrap()
    }

    /// Waits for oxrun to end; returns its exit code, all of stdout and stderr.
    fn wait(mut self) -> (Option<i32>, String, String) {
        let status = loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                break s;
            }
            assert!(
                self.start.elapsed() < common::DEADLINE,
                "the job did not end"
            );
            std::thread::sleep(Duration::from_millis(10));
        };
        let mut rest = String::new();
        let _ = std::io::Read::read_to_string(&mut self.out, &mut rest);
        self.stdout.push_str(&rest);
        (status.code(), self.stdout, self.err.join().unwrap())
    }
}

/// After a job ended: none of its processes, files or watchdogs is left.
fn assert_cleaned_up(stdout: &str, extra_pids: &[i32]) {
    let mut pids = values_of(stdout, "pid=");
    assert_eq!(pids.len(), 8, "{stdout}");
    pids.extend_from_slice(extra_pids);
    assert_all_gone(&pids);
    // The agents (or a dead agent's watchdog) remove the files.
    let key = printed_jobkey(stdout);
    let deadline = Instant::now() + Duration::from_secs(5);
    while !shm_files_of(&key).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(shm_files_of(&key).is_empty(), "{:?}", shm_files_of(&key));
    assert_no_watchdog(&key);
}

#[test]
fn killing_a_hosts_agent_ends_the_job_naming_the_host() {
    let Some(h) = hosts() else { return };
    let job = LiveJob::start(&h);
    // Rank 3 runs on h2; its parent is h2's agent.
    let agent = ppid(job.rank_pid(3));
    let cmdline = std::fs::read_to_string(format!("/proc/{agent}/cmdline")).unwrap();
    assert!(cmdline.contains("--agent"), "{cmdline:?}");
    Command::new("kill")
        .args(["-9", &agent.to_string()])
        .status()
        .unwrap();
    let (code, stdout, stderr) = job.wait();
    assert_eq!(code, Some(1), "{stderr}");
    let ours: Vec<&str> = stderr.lines().filter(|l| l.starts_with("oxrun:")).collect();
    assert_eq!(
        ours,
        [format!(
            "oxrun: lost host {}: its agent's connection closed; stopping the job",
            h.name(2)
        )],
        "{stderr}"
    );
    assert_cleaned_up(&stdout, &[agent]);
}

#[test]
fn a_signal_to_oxrun_stops_every_host() {
    let Some(h) = hosts() else { return };
    let job = LiveJob::start(&h);
    let agents = [ppid(job.rank_pid(0)), ppid(job.rank_pid(3))];
    Command::new("kill")
        .args(["-TERM", &job.child.id().to_string()])
        .status()
        .unwrap();
    let (code, stdout, stderr) = job.wait();
    assert_eq!(code, Some(128 + 15), "{stderr}");
    let ours: Vec<&str> = stderr.lines().filter(|l| l.starts_with("oxrun:")).collect();
    assert_eq!(
        ours,
        ["oxrun: received SIGTERM; stopping the job"],
        "{stderr}"
    );
    assert_cleaned_up(&stdout, &agents);
}

// Agents started through a launcher that runs on this very machine (no namespaces needed).

#[test]
fn agents_through_a_local_launcher() {
    let r = run(&[
        "--timeout",
        "25",
        "--host",
        "pa:2,pb:1",
        "--launcher",
        "env OXRUN_TEST_HOST={host}",
        "-n",
        "3",
        probe(),
        "hosts",
    ]);
    assert_exchange(&r, "0,0,1");
    // Ranks see the host their agent was started for.
    let r = run(&[
        "--timeout",
        "25",
        "--host",
        "pa,pb",
        "--launcher",
        "env OXRUN_TEST_HOST={host}",
        "-n",
        "2",
        "sh",
        "-c",
        "echo $PMI_RANK $OXRUN_TEST_HOST",
    ]);
    assert_eq!(r.code, Some(0), "{r:?}");
    assert_eq!(r.sorted_out_lines(), ["0 pa", "1 pb"]);
    // `localhost` runs its ranks under oxrun itself, next to an agent's.
    let r = run(&[
        "--timeout",
        "25",
        "--host",
        "localhost:1,pb:2",
        "--launcher",
        "env X={host}",
        "-n",
        "3",
        probe(),
        "hosts",
    ]);
    assert_exchange(&r, "0,1,1");
    // Binding is planned per host: each host's first rank gets that host's first core.
    let r = run(&[
        "--timeout",
        "25",
        "--host",
        "pa:2,pb:2",
        "--launcher",
        "env X={host}",
        "--bind-to",
        "core",
        "--report-bindings",
        "-n",
        "4",
        "true",
    ]);
    assert_eq!(r.code, Some(0), "{r:?}");
    let mut lines = r.oxrun_lines();
    lines.sort_unstable();
    assert_eq!(lines.len(), 4, "{r:?}");
    let cpus = |l: &str| {
        l.rsplit_once(" bound to ")
            .map(|(_, c)| c.to_owned())
            .unwrap()
    };
    for (i, host) in ["pa", "pa", "pb", "pb"].iter().enumerate() {
        assert!(
            lines[i].starts_with(&format!("oxrun: rank {i} (pid ")),
            "{r:?}"
        );
        assert!(
            lines[i].contains(&format!(" on {host}) bound to cpu")),
            "{r:?}"
        );
    }
    assert_eq!(cpus(lines[0]), cpus(lines[2]), "{r:?}");
    assert_eq!(cpus(lines[1]), cpus(lines[3]), "{r:?}");
}

#[test]
fn a_launch_command_that_fails_names_the_host() {
    let r = run(&[
        "--timeout",
        "25",
        "--host",
        "pa",
        "--launcher",
        "false {host}",
        "-n",
        "1",
        "true",
    ]);
    assert_eq!(r.code, Some(1), "{r:?}");
    assert_eq!(
        r.oxrun_lines(),
        ["oxrun: lost host pa: its launch command exited with status 1 before the agent connected; stopping the job"],
        "{r:?}"
    );
    let r = run(&[
        "--host",
        "pa",
        "--launcher",
        "/nonexistent/launcher {host}",
        "-n",
        "1",
        "true",
    ]);
    assert_eq!(r.code, Some(1), "{r:?}");
    assert!(
        r.stderr.contains("cannot start the agent for host pa"),
        "{r:?}"
    );
    // A program missing on the remote host: 127, as locally.
    let r = run(&[
        "--timeout",
        "25",
        "--host",
        "pa",
        "--launcher",
        "env X={host}",
        "-n",
        "1",
        "/nonexistent/prog",
    ]);
    assert_eq!(r.code, Some(127), "{r:?}");
    assert!(
        r.oxrun_lines()[0]
            .starts_with("oxrun: cannot start rank 0 on pa: cannot execute /nonexistent/prog"),
        "{r:?}"
    );
}
