//! `oxmpi-bench`: see `oxmpi-bench --help`.

use std::process::ExitCode;

use clap::Parser;

use oxmpi_bench::cli::{Cli, Command};
use oxmpi_bench::compare;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    if args
        .get(1)
        .is_some_and(|a| oxmpi_bench::native::is_benchmark(a))
    {
        return oxmpi_bench::native::run(&args);
    }
    let cli = Cli::parse();
    match cli.command {
        Command::Rawtcp(args) => match oxmpi_bench::rawtcp::run(&args) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("oxmpi-bench rawtcp: {e}");
                ExitCode::FAILURE
            }
        },
        Command::Floor(args) => match oxmpi_bench::floor::run(&args) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("oxmpi-bench floor: {e}");
                ExitCode::FAILURE
            }
        },
        Command::Compare(args) => {
            let cores = std::thread::available_parallelism()
                .map_or(1, |n| u32::try_from(n.get()).unwrap_or(u32::MAX));
            let cfg = match args.resolve(cores) {
                Ok(cfg) => cfg,
                Err(e) => {
                    eprintln!("oxmpi-bench compare: {e}");
                    return ExitCode::from(2);
                }
            };
            let mut progress = |line: &str| eprintln!("oxmpi-bench: {line}");
            match compare::compare(&cfg, &mut progress) {
                Ok(out) => {
                    println!("report:  {}", out.report.display());
                    println!("results: {}", out.csv.display());
                    for p in &out.plots {
                        println!("plot:    {}.{{svg,png}}", p.display());
                    }
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("oxmpi-bench compare: {e}");
                    ExitCode::FAILURE
                }
            }
        }
    }
}
