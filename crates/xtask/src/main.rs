//! `cargo xtask <task>`: repository tasks that need more than one cargo command.
//!
//! - `install --prefix DIR`: builds the release binaries and the C library and lays out a
//!   standard MPI installation in `DIR` ([`install`]).

mod install;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("install") => install::main(&args[1..]),
        _ => Err("usage: cargo xtask install --prefix DIR [--no-build]".to_string()),
    };
    if let Err(e) = result {
        eprintln!("xtask: {e}");
        std::process::exit(1);
    }
}
