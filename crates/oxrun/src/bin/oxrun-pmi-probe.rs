//! `oxrun-pmi-probe`: a tiny PMI-1 client for oxrun's tests (and for checking by hand that a
//! launcher serves PMI correctly).
//!
//! Usage: `oxrun-pmi-probe [MODE [ARGS...]]`, one process per rank:
//!
//! - `cards` (default): publish a card, fence, read and check every rank's card, finalize,
//!   print `probe rank=R size=N appnum=A kvsname=K cards=ok`. Exits 1 on any mismatch.
//! - `hosts`: like `cards`, but on several hosts: prints
//!   `probe rank=R size=N nodes=H0,H1,... pid=P key=K cards=ok` (the `PMI_process_mapping` it
//!   read, its pid and the job key) instead of insisting on a single host.
//! - `bigcards LEN`: like `cards` with cards of LEN bytes (split into pieces by the client when
//!   longer than one request allows); prints `probe rank=R bigcards=ok`.
//! - `abort RANK CODE [MESSAGE...]`: rank RANK calls PMI abort and exits with CODE; the others
//!   wait in a fence (and are stopped by the launcher).
//! - `exit CODE`: init, finalize, exit with CODE.
//! - `leave RANK`: rank RANK inits and exits 0 without finalize; the others wait in a fence.
//! - `sleep SECONDS`: init, print `probe rank=R sleeping pid=P`, sleep, finalize.
//! - `badline RANK`, `hugeline RANK`, `badsecret RANK`: rank RANK writes a malformed line, an
//!   over-long line, or inits with a wrong secret; the others wait in a fence.
//! - `spawn COUNTS [ARGS...]`: card exchange, then rank 0 spawns one command per entry of
//!   the comma-separated COUNTS (this probe with ARGS, default `child`; info `wdir` from
//!   `PROBE_WDIR` if set, `host` from `PROBE_HOST`), with preput key `parent-kvs`; prints
//!   `probe rank=0 spawned=ok` or `probe rank=0 refused=<why>`; then all fence and finalize
//!   and print `probe rank=R parent=ok`.
//! - `child [ARG]`: a spawned rank: checks `PMI_SPAWNED` and the preput key, exchanges cards
//!   with its job, prints `probe child rank=R size=N appnum=A kvsname=K parent=P cwd=D
//!   arg=[ARG]`.
//! - `spew LINES LEN`: no PMI; write LINES lines of about LEN bytes, even ones to stdout and
//!   odd ones to stderr, each line in three separate writes: `r<rank> i<i> <payload> end`.

use std::io::{self, Write};
use std::os::fd::FromRawFd;
use std::os::unix::net::UnixStream;
use std::process::exit;
use std::time::Duration;

use oxmpi_pmi::{Client, SECRET_ENV};

fn fail(what: impl std::fmt::Display) -> ! {
    eprintln!("probe: {what}");
    exit(1)
}

fn env_rank() -> u32 {
    std::env::var("PMI_RANK")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| fail("PMI_RANK is not set"))
}

fn arg<T: std::str::FromStr>(args: &[String], i: usize, what: &str) -> T {
    args.get(i)
        .and_then(|a| a.parse().ok())
        .unwrap_or_else(|| fail(format!("missing or bad {what}")))
}

fn connect() -> Client {
    match Client::from_env() {
        Ok(Some(c)) => c,
        Ok(None) => fail("not started by a PMI launcher (no PMI_FD)"),
        Err(e) => fail(format!("rank {}: {e}", env_rank())),
    }
}

/// The card rank `r` publishes.
fn card(r: u32, appnum: i32) -> String {
    format!("card of rank {r} app {appnum}")
}

/// Writes `bytes` straight to the PMI socket, bypassing the client.
fn raw_pmi_write(bytes: &[u8]) {
    let fd: i32 = std::env::var("PMI_FD")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| fail("PMI_FD is not set"));
    // SAFETY: the launcher handed us this descriptor for PMI; the client is not used in this
    // process, so nothing else owns it.
    let mut s = unsafe { UnixStream::from_raw_fd(fd) };
    if let Err(e) = s.write_all(bytes) {
        fail(format!("writing to PMI_FD: {e}"));
    }
    // Keep the socket open and wait to be stopped by the launcher.
    std::thread::sleep(Duration::from_secs(60));
    exit(0)
}

/// What ranks that are not the special one do: wait in a fence that cannot complete.
fn wait_in_fence() -> ! {
    let mut c = connect();
    let r = c.fence();
    // The launcher closes our connection when it stops the job.
    eprintln!("probe: rank {}: fence ended: {r:?}", c.rank());
    exit(2)
}

fn cards() {
    exchange(true);
}

/// Publishes, fences, reads and checks every rank's card; with `single_host`, also checks that
/// the mapping puts every rank on one host, else prints the mapping.
fn exchange(single_host: bool) {
    let mut c = connect();
    let (rank, size) = (c.rank(), c.size());
    if rank != env_rank() {
        fail(format!("client rank {rank} != PMI_RANK {}", env_rank()));
    }
    let appnum = c.appnum();
    c.put(&format!("card-{rank}"), &card(rank, appnum))
        .unwrap_or_else(|e| fail(e));
    c.put(&format!("app-{rank}"), &appnum.to_string())
        .unwrap_or_else(|e| fail(e));
    c.fence().unwrap_or_else(|e| fail(e));
    for p in 0..size {
        let app: i32 = c
            .get(&format!("app-{p}"))
            .unwrap_or_else(|e| fail(e))
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| fail(format!("rank {rank}: no appnum from rank {p}")));
        let got = c.get(&format!("card-{p}")).unwrap_or_else(|e| fail(e));
        if got.as_deref() != Some(card(p, app).as_str()) {
            fail(format!("rank {rank}: card of rank {p} is {got:?}"));
        }
    }
    let nodes = match c.process_mapping() {
        Ok(Some(nodes)) if !single_host || nodes == vec![0; size as usize] => nodes,
        other => fail(format!("rank {rank}: process mapping {other:?}")),
    };
    let kvsname = c.kvsname().to_owned();
    c.fence().unwrap_or_else(|e| fail(e));
    c.finalize().unwrap_or_else(|e| fail(e));
    if single_host {
        println!("probe rank={rank} size={size} appnum={appnum} kvsname={kvsname} cards=ok");
    } else {
        let nodes: Vec<String> = nodes.iter().map(u32::to_string).collect();
        println!(
            "probe rank={rank} size={size} nodes={} pid={} key={} cards=ok",
            nodes.join(","),
            std::process::id(),
            std::env::var("OXMPI_JOBKEY").unwrap_or_default()
        );
    }
}

/// The LEN-byte card of rank `r`: varied bytes, spaces included (they are escaped on the wire).
fn big_card(r: u32, len: usize) -> String {
    (0..len)
        .map(|i| match (i + r as usize) % 11 {
            0 => ' ',
            _ => char::from(b'a' + ((i * 7 + r as usize) % 26) as u8),
        })
        .collect()
}

fn bigcards(len: usize) {
    let mut c = connect();
    let (rank, size) = (c.rank(), c.size());
    c.put(&format!("big-{rank}"), &big_card(rank, len))
        .unwrap_or_else(|e| fail(e));
    c.fence().unwrap_or_else(|e| fail(e));
    for p in 0..size {
        let got = c.get(&format!("big-{p}")).unwrap_or_else(|e| fail(e));
        if got.as_deref() != Some(big_card(p, len).as_str()) {
            fail(format!(
                "rank {rank}: big card of rank {p} differs ({:?} bytes)",
                got.map(|g| g.len())
            ));
        }
    }
    c.finalize().unwrap_or_else(|e| fail(e));
    println!("probe rank={rank} bigcards=ok");
}

fn spawn(counts: &str, child_args: &[String]) {
    let mut c = connect();
    let (rank, size) = (c.rank(), c.size());
    c.put(&format!("card-{rank}"), &card(rank, 0))
        .unwrap_or_else(|e| fail(e));
    c.fence().unwrap_or_else(|e| fail(e));
    if rank == 0 {
        let exe = std::env::current_exe().unwrap_or_else(|e| fail(e));
        let args = if child_args.is_empty() {
            vec!["child".to_owned()]
        } else {
            child_args.to_vec()
        };
        let mut info = Vec::new();
        for (var, key) in [("PROBE_WDIR", "wdir"), ("PROBE_HOST", "host")] {
            if let Ok(v) = std::env::var(var) {
                info.push((key.to_owned(), v));
            }
        }
        let commands = counts
            .split(',')
            .map(|n| oxmpi_pmi::SpawnCommand {
                execname: std::env::var("PROBE_EXEC")
                    .unwrap_or_else(|_| exe.to_string_lossy().into_owned()),
                nprocs: n
                    .parse()
                    .unwrap_or_else(|_| fail(format!("bad count {n:?}"))),
                args: args.clone(),
                info: info.clone(),
            })
            .collect();
        let req = oxmpi_pmi::SpawnRequest {
            commands,
            preput: vec![("parent-kvs".into(), c.kvsname().to_owned())],
        };
        match c.spawn(&req) {
            Ok(()) => println!("probe rank=0 spawned=ok"),
            Err(e) => println!("probe rank=0 refused={e}"),
        }
    }
    c.fence().unwrap_or_else(|e| fail(e));
    c.finalize().unwrap_or_else(|e| fail(e));
    println!("probe rank={rank} size={size} parent=ok");
}

fn child(arg: Option<&String>) {
    if !Client::spawned() {
        fail("child mode without PMI_SPAWNED=1");
    }
    let mut c = connect();
    let (rank, size) = (c.rank(), c.size());
    let parent = c
        .get("parent-kvs")
        .unwrap_or_else(|e| fail(e))
        .unwrap_or_else(|| fail(format!("child {rank}: no preput key parent-kvs")));
    if parent == c.kvsname() {
        fail(format!("child {rank}: the parent's KVS name is its own"));
    }
    let appnum = c.appnum();
    c.put(&format!("card-{rank}"), &card(rank, appnum))
        .unwrap_or_else(|e| fail(e));
    c.put(&format!("app-{rank}"), &appnum.to_string())
        .unwrap_or_else(|e| fail(e));
    c.fence().unwrap_or_else(|e| fail(e));
    for p in 0..size {
        let app: i32 = c
            .get(&format!("app-{p}"))
            .unwrap_or_else(|e| fail(e))
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| fail(format!("child {rank}: no appnum from rank {p}")));
        let got = c.get(&format!("card-{p}")).unwrap_or_else(|e| fail(e));
        if got.as_deref() != Some(card(p, app).as_str()) {
            fail(format!("child {rank}: card of rank {p} is {got:?}"));
        }
    }
    let kvsname = c.kvsname().to_owned();
    c.finalize().unwrap_or_else(|e| fail(e));
    let cwd = std::env::current_dir().unwrap_or_default();
    println!(
        "probe child rank={rank} size={size} appnum={appnum} kvsname={kvsname} parent={parent} cwd={} arg=[{}]",
        cwd.display(),
        arg.map(String::as_str).unwrap_or("")
    );
}

fn spew(lines: usize, len: usize) {
    let rank = env_rank();
    let payload: String = (0..len).map(|i| (b'a' + (i % 26) as u8) as char).collect();
    let (mut out, mut err) = (io::stdout().lock(), io::stderr().lock());
    for i in 0..lines {
        let line = format!("r{rank} i{i} {payload} end\n");
        let b = line.as_bytes();
        let (a, rest) = b.split_at(b.len() / 3);
        let (m, z) = rest.split_at(rest.len() / 2);
        let w: &mut dyn Write = if i % 2 == 0 { &mut out } else { &mut err };
        for piece in [a, m, z] {
            if w.write_all(piece).and_then(|()| w.flush()).is_err() {
                exit(3);
            }
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mode = args.first().map(String::as_str).unwrap_or("cards");
    match mode {
        "cards" => cards(),
        "hosts" => exchange(false),
        "bigcards" => bigcards(arg(&args, 1, "LEN")),
        "abort" => {
            let who: u32 = arg(&args, 1, "RANK");
            let code: i32 = arg(&args, 2, "CODE");
            if env_rank() != who {
                wait_in_fence();
            }
            let mut c = connect();
            let message = args[3..].join(" ");
            c.abort(code, &message).unwrap_or_else(|e| fail(e));
            exit(code)
        }
        "leave" => {
            let who: u32 = arg(&args, 1, "RANK");
            if env_rank() != who {
                wait_in_fence();
            }
            let _c = connect();
            // Exits 0 after init without finalize, leaving the others in their fence.
            exit(0)
        }
        "exit" => {
            let code: i32 = arg(&args, 1, "CODE");
            let mut c = connect();
            c.finalize().unwrap_or_else(|e| fail(e));
            exit(code)
        }
        "sleep" => {
            let secs: u64 = arg(&args, 1, "SECONDS");
            let mut c = connect();
            println!(
                "probe rank={} sleeping pid={}",
                c.rank(),
                std::process::id()
            );
            std::thread::sleep(Duration::from_secs(secs));
            c.finalize().unwrap_or_else(|e| fail(e));
        }
        "badline" | "hugeline" | "badsecret" => {
            let who: u32 = arg(&args, 1, "RANK");
            if env_rank() != who {
                wait_in_fence();
            }
            match mode {
                "badline" => raw_pmi_write(b"this is not PMI\n"),
                "hugeline" => raw_pmi_write(&vec![b'x'; 100_000]),
                _ => {
                    std::env::set_var(SECRET_ENV, "0123456789abcdef-wrong");
                    match Client::from_env() {
                        Ok(_) => fail("init with a wrong secret succeeded"),
                        Err(e) => fail(format!("init refused as expected: {e}")),
                    }
                }
            }
        }
        "spawn" => spawn(
            args.get(1).map(String::as_str).unwrap_or("1"),
            args.get(2..).unwrap_or(&[]),
        ),
        "child" => child(args.get(1)),
        "spew" => spew(arg(&args, 1, "LINES"), arg(&args, 2, "LEN")),
        other => fail(format!("unknown mode {other:?}")),
    }
}
