//! `oxrun`: starts an MPI job (or any program) as N ranks on this host, serves them PMI-1,
//! forwards their output line by line, and ends the job cleanly when any rank fails.
//!
//! Modules, one concept each: [`cli`] (command line and MPMD contexts), [`program`] (finding
//! the executable), [`binding`] (CPU binding plan), [`launch`] (preparing and starting a job),
//! [`spawn`] (starting one rank), [`job`] (the event loop and ending the job), [`stdio`]
//! (output forwarding and stdin), [`pmi`] (PMI connections), [`signals`] (signals as events),
//! [`shm`] (removing the job's shared-memory files) and [`sys`] (syscall wrappers).

mod binding;
mod cli;
mod job;
mod launch;
mod pmi;
mod program;
mod shm;
mod signals;
mod spawn;
mod stdio;
mod sys;

use std::io::Write;

fn main() {
    // Before creating any descriptor: make sure none of ours can land on 0, 1 or 2.
    sys::ensure_std_fds_open();
    let args = std::env::args_os().skip(1).collect();
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
