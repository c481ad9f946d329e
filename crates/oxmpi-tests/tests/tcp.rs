//! The TCP transport through oxrun on one host, forced with `OXMPI_TRANSPORT=tcp`: random
//! traffic verified byte for byte (one rail and several), MPI semantics, the collectives, a
//! message over 2 GiB, strangers connecting to a rank's port, and rails cut mid-run by the
//! `OXMPI_TCP_CUT_RAIL` test hook. (Real separate hosts: the network-namespace suite.)

use std::io::Write;
use std::net::TcpStream;
use std::path::Path;
use std::time::{Duration, Instant};

use oxmpi_tests::{oxrun_job, text};

const PROPS: &str = env!("CARGO_BIN_EXE_p2p_props");

fn tcp_env<'a>(extra: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
    let mut env = vec![("OXMPI_TRANSPORT", "tcp")];
    env.extend_from_slice(extra);
    env
}

fn run_ok(np: usize, prog: &str, args: &[&str], extra: &[(&str, &str)]) -> (String, String) {
    let out = oxrun_job(np, Path::new(prog), args, &tcp_env(extra));
    let (so, se) = text(&out);
    assert!(
        out.status.success(),
        "{prog} np {np} {extra:?}:\n{so}\n{se}"
    );
    (so, se)
}

/// Messages `p2p_props` verified, summed over ranks.
fn verified(so: &str) -> usize {
    so.lines()
        .filter_map(|l| {
            l.split("verified ")
                .nth(1)?
                .split(' ')
                .next()?
                .parse::<usize>()
                .ok()
        })
        .sum()
}

#[test]
fn random_traffic_over_tcp_np2_to_4() {
    for np in 2..=4 {
        let (so, _) = run_ok(
            np,
            PROPS,
            &[&format!("{}", 40 + np), "300", &format!("{}", 8 << 20)],
            &[],
        );
        assert_eq!(verified(&so), 300, "{so}");
    }
}

#[test]
fn random_traffic_striped_over_three_rails_and_tight_queues() {
    let (so, _) = run_ok(
        3,
        PROPS,
        &["51", "300", &format!("{}", 8 << 20)],
        &[("OXMPI_TCP_RAILS", "3")],
    );
    assert_eq!(verified(&so), 300, "{so}");
    let tight = [
        ("OXMPI_TCP_FRAG_SIZE", "4096"),
        ("OXMPI_TCP_EAGER_LIMIT", "2048"),
        ("OXMPI_TCP_SEND_QUEUE", "8192"),
    ];
    let (so, _) = run_ok(4, PROPS, &["52", "1500", "50000"], &tight);
    assert_eq!(verified(&so), 1500, "{so}");
}

#[test]
fn semantics_and_collectives_over_tcp() {
    for np in [2, 3] {
        let (so, _) = run_ok(np, env!("CARGO_BIN_EXE_p2p_semantics"), &[], &[]);
        assert_eq!(so.matches("semantics OK").count(), np, "{so}");
    }
    let (so, _) = run_ok(4, env!("CARGO_BIN_EXE_coll_check"), &["small"], &[]);
    assert_eq!(so.matches("coll_check passed").count(), 4, "{so}");
    let (so, _) = run_ok(
        3,
        env!("CARGO_BIN_EXE_coll_check"),
        &["large"],
        &[("OXMPI_TCP_RAILS", "2")],
    );
    assert_eq!(so.matches("coll_check passed").count(), 3, "{so}");
}

#[test]
fn a_message_over_2_gib_over_tcp() {
    let (so, _) = run_ok(2, env!("CARGO_BIN_EXE_p2p_big"), &[], &[]);
    assert!(
        so.contains(&format!("received {} bytes intact", i32::MAX as u64 + 4097)),
        "{so}"
    );
}

/// Rank 0's listening port for `attempt`: below Linux's ephemeral range (32768 and up), so no
/// outgoing connection of a concurrent test holds it, and spread by process id so parallel
/// test runs rarely meet. Ranks listen on the port plus their rank; `offset` keeps the two
/// stranger tests of one run apart.
fn base_port(offset: u16, attempt: u16) -> u16 {
    let slot = (std::process::id() as u16 % 1000 + attempt * 331) % 1000;
    20000 + slot * 8 + offset
}

/// Runs random traffic while a stranger connects to rank 0's port and does `act`; the job
/// must finish correctly, and rank 0 must log the stranger exactly once. A port some other
/// program already holds is tried again with another.
fn with_stranger(offset: u16, act: fn(&mut TcpStream)) {
    for attempt in 0..5 {
        let (so, se, ok) = stranger_run(base_port(offset, attempt), act);
        if !ok && se.contains("Address already in use") {
            continue;
        }
        assert!(ok, "{so}\n{se}");
        assert_eq!(verified(&so), 1500, "{so}");
        assert_eq!(se.matches("refused a TCP connection").count(), 1, "{se}");
        return;
    }
    panic!("no free listening port in 5 attempts");
}

/// One run of [`with_stranger`] on `port`: (stdout, stderr, success).
fn stranger_run(port: u16, act: fn(&mut TcpStream)) -> (String, String, bool) {
    let port_s = port.to_string();
    let job = std::thread::spawn(move || {
        let env = tcp_env(&[
            ("OXMPI_TCP_PORT", &port_s),
            ("OXMPI_TCP_HANDSHAKE_MS", "200"),
        ]);
        oxrun_job(
            2,
            Path::new(PROPS),
            &["61", "1500", &format!("{}", 4 << 20)],
            &env,
        )
    });
    let start = Instant::now();
    let mut held = None;
    while start.elapsed() < Duration::from_secs(60) && !job.is_finished() {
        if let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) {
            act(&mut s);
            held = Some(s);
            break;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let out = job.join().expect("job thread");
    drop(held);
    let (so, se) = text(&out);
    (so, se, out.status.success())
}

#[test]
fn a_stranger_sending_garbage_is_refused_and_logged_once() {
    with_stranger(0, |s| {
        let _ = s.write_all(&[0x47; 100]);
    });
}

#[test]
fn a_silent_stranger_is_refused_and_logged_once() {
    with_stranger(2, |_| {});
}

#[test]
fn cutting_one_of_two_rails_mid_run_loses_nothing() {
    let (so, se) = run_ok(
        2,
        PROPS,
        &["71", "400", &format!("{}", 4 << 20)],
        &[("OXMPI_TCP_RAILS", "2"), ("OXMPI_TCP_CUT_RAIL", "1:100")],
    );
    assert_eq!(verified(&so), 400, "{so}");
    for r in 0..2 {
        let warnings = se
            .matches(&format!("rank {r}: TCP rail 1 to rank {}", 1 - r))
            .count();
        assert!(warnings <= 1, "{se}");
    }
    assert!(se.contains("rank 0: TCP rail 1 to rank 1 failed"), "{se}");
}

#[test]
fn losing_the_only_rail_ends_the_job_naming_the_peer() {
    let out = oxrun_job(
        2,
        Path::new(PROPS),
        &["72", "400", &format!("{}", 4 << 20)],
        &tcp_env(&[("OXMPI_TCP_CUT_RAIL", "0:100")]),
    );
    let (so, se) = text(&out);
    assert!(!out.status.success(), "{so}\n{se}");
    assert!(se.contains("lost rank"), "{se}");
}

#[test]
fn a_fault_inside_a_collective_names_the_collective() {
    // Rank 0 shuts its only rail during the barriers. Whichever rank sees the broken connection
    // first (rank 1 reading EOF, or rank 0 getting a reset on its next write) ends the job naming
    // the call it was in and the peer it lost.
    let out = oxrun_job(
        2,
        Path::new(env!("CARGO_BIN_EXE_coll_latency")),
        &["200"],
        &tcp_env(&[("OXMPI_TCP_CUT_RAIL", "0:50")]),
    );
    let (so, se) = text(&out);
    assert!(!out.status.success(), "{so}\n{se}");
    assert!(
        se.contains("fatal communication fault in barrier: TCP: rank 1 lost rank 0")
            || se.contains("fatal communication fault in barrier: TCP: rank 0 lost rank 1"),
        "{se}"
    );
}

/// `(messages verified, bytes placed)` summed over the ranks of a `tcp_land` run.
fn landed(so: &str) -> (u64, u64) {
    let field = |l: &str, after: &str| -> u64 {
        l.split(after)
            .nth(1)
            .and_then(|s| s.split(' ').next()?.parse().ok())
            .unwrap_or(0)
    };
    so.lines()
        .filter(|l| l.starts_with("tcp_land: rank"))
        .map(|l| (field(l, "verified "), field(l, "placed ")))
        .fold((0, 0), |(a, b), (c, d)| (a + c, b + d))
}

#[test]
fn large_messages_land_in_place_with_offsets_striping_and_truncation() {
    let prog = env!("CARGO_BIN_EXE_tcp_land");
    for (seed, rails) in [("81", "1"), ("82", "2"), ("83", "3")] {
        let max = (6 << 20).to_string();
        let (so, se) = run_ok(2, prog, &[seed, "40", &max], &[("OXMPI_TCP_RAILS", rails)]);
        let (verified, placed) = landed(&so);
        assert_eq!(verified, 80, "{rails} rails:\n{so}\n{se}");
        assert!(
            placed > 0,
            "nothing read straight into place over {rails} rails:\n{so}"
        );
    }
    // Small fragments: many chunks per message, each landing at its offset.
    let small = [("OXMPI_TCP_FRAG_SIZE", "16384"), ("OXMPI_TCP_RAILS", "2")];
    let (so, _) = run_ok(2, prog, &["84", "30", "300000"], &small);
    let (verified, placed) = landed(&so);
    assert_eq!(verified, 60, "{so}");
    assert!(placed > 0, "{so}");
}
