//! `oxrun`: starts an MPI job (or any program) as N ranks on this host, serves them PMI-1,
//! forwards their output line by line, and ends the job cleanly when any rank fails.
//!
//! Modules, one concept each: [`cli`] (command line and MPMD contexts), [`program`] (finding
//! the executable), [`binding`] (CPU binding plan), [`launch`] (preparing and starting a job),
//! [`spawn`] (starting one rank), [`dynamic`] (jobs a rank spawns), [`job`] (the event loop
//! and ending the job), [`stdio`] (output forwarding and stdin), [`pmi`] (PMI connections),
//! [`signals`] (signals as events),
//! [`shm`] (removing the job's shared-memory files), [`sys`] (syscall wrappers), and for
//! several hosts: [`hosts`] (host lists and rank placement), [`frame`] (the head–agent wire),
//! [`remote`] (the head's side of the agents), [`agent`] (the agent itself) and [`slurm`]
//! (hosts from a Slurm allocation, agents through `srun`).

mod agent;
mod binding;
mod cli;
mod dynamic;
mod frame;
mod hosts;
mod job;
mod launch;
mod pmi;
mod program;
mod remote;
mod shm;
mod signals;
mod slurm;
mod spawn;
mod stdio;
mod sys;

use std::io::Write;

fn main() {
    // Before creating any descriptor: make sure none of ours can land on 0, 1 or 2.
    sys::ensure_std_fds_open();
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    // The agent and its watchdog are oxrun itself, started by a head oxrun (not in --help).
    match args.first().and_then(|a| a.to_str()) {
        Some("--agent") => std::process::exit(agent::main(args[1..].to_vec())),
        Some("--watchdog") => std::process::exit(agent::watchdog(args[1..].to_vec())),
        _ => {}
    }
    let code = match cli::parse(args) {
        Ok(plan) => launch::run(&plan),
        Err(cli::Stop::Info(text)) => {
            let _ = std::io::stdout().write_all(text.as_bytes());
            0
        }
        Err(cli::Stop::Usage(msg)) => {
            let _ = writeln!(std::io::stderr(), "oxrun: {msg}");
            2
        }
    };
    std::process::exit(code);
}
