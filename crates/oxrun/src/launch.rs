//! Preparing and starting a job from a [`Plan`]: checking the programs, raising the descriptor
//! limit, drawing the job key and secret, planning CPU bindings, and spawning every rank.
//!
//! Without a host list every rank runs on this host ([`node_of`]). With one, the plan's
//! placement gives each rank a host index, which the PMI server reports to the ranks as
//! `PMI_process_mapping`; ranks of this host (`localhost` or its own name) are started here,
//! the others through one agent per host (`remote`), started before the local ranks so that
//! they connect while those start. CPU binding is planned per host: here for local ranks, by
//! each agent for its own.

use std::io;

use oxmpi_pmi::JobInfo;

use crate::binding::{self, format_cpu_list};
use crate::cli::Plan;
use crate::frame::{JobSpec, RankJob};
use crate::hosts;
use crate::job::{RunningJob, EXIT_FAILURE};
use crate::program::{self, effective_path};
use crate::remote::Agents;
use crate::signals::SignalPipe;
use crate::spawn::{spawn_rank, JobEnv, RankSpec};
use crate::sys;

/// Descriptors oxrun needs per rank (stdout, stderr, PMI socket) and in total besides.
const FDS_PER_RANK: u64 = 3;
const FDS_SPARE: u64 = 32;

/// The host index of each of `size` ranks: all on this host.
pub fn node_of(size: u32) -> Vec<u32> {
    vec![0; size as usize]
}

/// `len` random bytes as lowercase hex.
fn random_hex(len: usize) -> io::Result<String> {
    let mut bytes = vec![0u8; len];
    getrandom::getrandom(&mut bytes).map_err(|e| io::Error::other(e.to_string()))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// oxrun's exit status when a rank cannot be started, shell style.
pub(crate) fn spawn_exit_status(e: &io::Error) -> i32 {
    match e.raw_os_error() {
        Some(libc::ENOENT) | Some(libc::ENOTDIR) => 127,
        Some(libc::EACCES) | Some(libc::ENOEXEC) | Some(libc::EISDIR) | Some(libc::EPERM) => 126,
        _ => EXIT_FAILURE,
    }
}

/// Runs the job described by `plan` to its end and returns oxrun's exit status.
pub fn run(plan: &Plan) -> i32 {
    let size = plan.size();
    let nodes = match &plan.placement {
        Some(p) => p.node_of.clone(),
        None => node_of(size),
    };
    // Which hosts run here; without a host list, this one only.
    let own = hosts::own_hostname();
    let host_is_local: Vec<bool> = match &plan.placement {
        Some(p) => p
            .hosts
            .iter()
            .map(|h| hosts::is_local(&h.name, own.as_deref()))
            .collect(),
        None => vec![true],
    };
    let is_local = |rank: u32| host_is_local[nodes[rank as usize] as usize];
    let appnums = plan.appnums();
    let local_count = (0..size).filter(|&r| is_local(r)).count();

    let mut programs = Vec::with_capacity(plan.apps.len());
    for (i, app) in plan.apps.iter().enumerate() {
        if !(0..size).any(|r| appnums[r as usize] == i as u32 && is_local(r)) {
            // Only other hosts run it: their agents look for it there.
            programs.push(std::path::PathBuf::new());
            continue;
        }
        match program::resolve(&app.program, effective_path(&app.env).as_deref()) {
            Ok(p) => programs.push(p),
            Err(e) => {
                eprintln!(
                    "oxrun: cannot execute {}: {}",
                    app.program.to_string_lossy(),
                    e.reason
                );
                return e.status;
            }
        }
    }

    let (nofile, soft_limit) = match sys::raise_nofile_limit() {
        Ok((old, soft)) => (Some(old), soft),
        Err(_) => (None, 1024),
    };
    let remote_hosts = host_is_local.iter().filter(|l| !**l).count() as u64;
    let needed = FDS_PER_RANK * local_count as u64 + 2 * remote_hosts + FDS_SPARE;
    if needed > soft_limit {
        eprintln!(
            "oxrun: {local_count} ranks need about {needed} open files, but the limit is {soft_limit} (see ulimit -n)"
        );
        return EXIT_FAILURE;
    }

    let (jobkey, secret) = match (random_hex(8), random_hex(32)) {
        (Ok(k), Ok(s)) => (k, s),
        (Err(e), _) | (_, Err(e)) => {
            eprintln!("oxrun: cannot draw the job's random key: {e}");
            return EXIT_FAILURE;
        }
    };
    let signals = match SignalPipe::install() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("oxrun: cannot set up signal handling: {e}");
            return EXIT_FAILURE;
        }
    };

    // Ranks with peers on other hosts start on the cores next to the NIC.
    let tcp_if = (local_count < size as usize).then(|| binding::tcp_if_of(&[]));
    let (cores, nic) = binding::host_cores_near(tcp_if.as_deref());
    let mut local_bindings = if remote_hosts > 0 {
        // Agents of other hosts may share this machine (namespace hosts): take distinct cores.
        let dir = std::path::Path::new(oxmpi_pmi::launch::SHM_DIR);
        let policy = (plan.bind_to, plan.within);
        crate::agent::machine_bindings(dir, &jobkey, local_count, policy, &cores)
    } else {
        binding::plan(local_count, plan.bind_to, plan.within, &cores)
    };
    if let Some(rf) = &plan.rankfile {
        // Rank-file entries replace the policy for the ranks they name.
        let local: Vec<u32> = (0..size).filter(|&r| is_local(r)).collect();
        for (i, r) in local.iter().enumerate() {
            if let Some(cpus) = rf.get(r) {
                local_bindings[i] = Some(cpus.clone());
            }
        }
    }
    // Binding of each rank of this host, by rank.
    let mut bindings: Vec<Option<Vec<usize>>> = vec![None; size as usize];
    for (r, b) in (0..size).filter(|&r| is_local(r)).zip(local_bindings) {
        bindings[r as usize] = b;
    }
    let kvsname = format!("kvs_{}_{}", std::process::id(), &jobkey[..8]);
    let info = JobInfo {
        kvsname: kvsname.clone(),
        size,
        appnum: appnums.clone(),
        node_of: nodes.clone(),
        secret: Some(secret.clone()),
    };
    let mut job = RunningJob::new(info, jobkey.clone(), signals, plan.tag_output, plan.timeout);

    // The agent link of each host (None: this host, or a host without ranks).
    let mut link_of_host: Vec<Option<usize>> = vec![None; host_is_local.len()];
    if let Some(placement) = plan.placement.as_ref().filter(|_| remote_hosts > 0) {
        match start_agents(plan, placement, &nodes, &host_is_local, &jobkey, &secret) {
            Ok((agents, links)) => {
                link_of_host = links;
                job.set_agents(agents);
            }
            Err(msg) => {
                eprintln!("oxrun: {msg}");
                return EXIT_FAILURE;
            }
        }
    }
    let env = JobEnv {
        size,
        secret,
        jobkey,
        nofile,
    };
    job.allow_spawn(env.clone(), kvsname);
    if remote_hosts == 0 && plan.rankfile.is_none() {
        job.bind_spawned(crate::job::SpawnBinding {
            policy: plan.bind_to,
            within: plan.within,
            cores: cores.clone(),
            planned: local_count,
            report: plan.report_bindings,
        });
    }
    let forward_stdin = !sys::stdin_is_background_tty();

    let mut rank = 0u32;
    'apps: for (app, path) in plan.apps.iter().zip(&programs) {
        for _ in 0..app.np {
            if let Some(link) = link_of_host[nodes[rank as usize] as usize] {
                job.add_remote_rank(link);
                rank += 1;
                continue;
            }
            let spec = RankSpec {
                rank,
                program: path,
                argv0: &app.program,
                args: &app.args,
                env: &app.env,
                cpus: bindings[rank as usize].as_deref(),
                stdin: rank == 0 && forward_stdin,
                die_with_parent: false,
                cwd: None,
            };
            match spawn_rank(&spec, &env) {
                Ok(s) => job.add_rank(s),
                Err(e) => {
                    job.say(&format!(
                        "oxrun: cannot start rank {rank} ({}): {e}; stopping the job",
                        app.program.to_string_lossy()
                    ));
                    job.stop(spawn_exit_status(&e));
                    break 'apps;
                }
            }
            rank += 1;
        }
    }

    if plan.report_bindings {
        let all: Vec<usize> = cores.iter().flat_map(|c| c.cpus.iter().copied()).collect();
        let mut all_sorted = all.clone();
        all_sorted.sort_unstable();
        for r in (0..job.started()).filter(|&r| is_local(r)) {
            let pid = job.pid(r);
            let line = match &bindings[r as usize] {
                Some(cpus) => format!(
                    "oxrun: rank {r} (pid {pid}) bound to cpu{} {}{}",
                    if cpus.len() > 1 { "s" } else { "" },
                    format_cpu_list(cpus),
                    binding::near_text(&nic, cpus, &cores)
                ),
                None => format!(
                    "oxrun: rank {r} (pid {pid}) not bound (may run on cpus {})",
                    format_cpu_list(&all_sorted)
                ),
            };
            job.say(&line);
        }
    }
    job.run()
}

/// Starts one agent per remote host that has ranks, each with its job; returns the agents
/// and the agent link of each host. On failure no launch command is left running.
fn start_agents(
    plan: &Plan,
    placement: &crate::cli::Placement,
    nodes: &[u32],
    host_is_local: &[bool],
    jobkey: &str,
    secret: &str,
) -> Result<(Agents, Vec<Option<usize>>), String> {
    let mut agents = Agents::listen().map_err(|e| format!("cannot listen for agents: {e}"))?;
    let addrs: Vec<_> = sys::interface_addresses()
        .map_err(|e| format!("cannot list this host's addresses: {e}"))?
        .into_iter()
        .filter(|a| agents.reachable_at(a))
        .collect();
    if addrs.is_empty() {
        return Err("this host has no network address for agents to connect to".into());
    }
    // Every rank's application context.
    let apps: Vec<&crate::cli::App> = plan
        .apps
        .iter()
        .flat_map(|a| std::iter::repeat(a).take(a.np as usize))
        .collect();
    let mut links = vec![None; placement.hosts.len()];
    for (h, host) in placement.hosts.iter().enumerate() {
        let ranks: Vec<RankJob> = (0..nodes.len())
            .filter(|&r| nodes[r] as usize == h)
            .map(|r| RankJob {
                rank: r as u32,
                program: apps[r].program.clone(),
                args: apps[r].args.clone(),
                env: apps[r].env.clone(),
            })
            .collect();
        if host_is_local[h] || ranks.is_empty() {
            continue;
        }
        let spec = JobSpec {
            host: host.name.clone(),
            size: nodes.len() as u32,
            jobkey: jobkey.to_owned(),
            secret: secret.to_owned(),
            bind: binding::to_wire(plan.bind_to, plan.within),
            report_bindings: plan.report_bindings,
            ranks,
        };
        match agents.start(&host.name, &placement.launcher, &addrs, spec) {
            Ok(link) => links[h] = Some(link),
            Err(e) => {
                agents.abandon_starting();
                agents.finish();
                return Err(format!(
                    "cannot start the agent for host {}: {e}",
                    host.name
                ));
            }
        }
    }
    Ok((agents, links))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_hex_of_the_right_length() {
        let k = random_hex(8).unwrap();
        assert_eq!(k.len(), 16);
        assert!(oxmpi_pmi::launch::valid_jobkey(&k));
        assert_ne!(k, random_hex(8).unwrap());
    }

    #[test]
    fn spawn_errors_map_like_a_shell() {
        assert_eq!(
            spawn_exit_status(&io::Error::from_raw_os_error(libc::ENOENT)),
            127
        );
        assert_eq!(
            spawn_exit_status(&io::Error::from_raw_os_error(libc::EACCES)),
            126
        );
        assert_eq!(
            spawn_exit_status(&io::Error::from_raw_os_error(libc::EAGAIN)),
            1
        );
    }
}
