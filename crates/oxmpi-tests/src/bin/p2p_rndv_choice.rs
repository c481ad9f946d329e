//! Which rendezvous a message takes between ranks 0 and 1 of one host: a lone message in the
//! pushed band (`OXMPI_PUSH_MIN` to `OXMPI_SINGLE_COPY_MIN`) is pushed through the sender's
//! pool (its two copies on two cores at once), and so is a window of them from a sender with
//! nothing posted to receive, while a window from a sender that has a receive posted (several
//! receives waiting) is pulled with one copy each.
//! Phase 1: `rounds` ping-pongs of one 1 MiB message each way. Phase 2 (`window`): rank 0 sends
//! a window of 8 such messages to rank 1, which has posted all 8 receives. Phase 2b
//! (`busywindow`): the same with a receive posted on rank 0 until rank 1 has the window. Every
//! byte is checked. Rank 1 prints `pulls=N` (rendezvous it pulled with one copy, in total)
//! after each phase, rank 0 `pushed=N`.
//! Phase 3 (`exchange`): rank 0 starts a send to rank 1 and then receives rank 1's message,
//! which rank 1 sends before it posts its own receive. Rank 0's send is unfinished when rank
//! 1's message matches there, so that one is pulled; rank 0's, matched after rank 1's send
//! finished, is lone and pushed. Each rank r prints `exchange{r} pushed=N` and `pulls=N` for
//! this phase alone.

use oxmpi::{Source, Tag};

const LEN: usize = 1 << 20;
const WINDOW: usize = 8;

fn pattern(round: usize, i: usize) -> u8 {
    (i * 7 + round * 13 + (i >> 12)) as u8
}

fn check(round: usize, v: &[u8]) {
    if let Some(i) = (0..v.len()).find(|&i| v[i] != pattern(round, i)) {
        eprintln!("round {round}: byte {i} wrong");
        std::process::exit(1);
    }
}

/// Rank 0 sends a window of messages to rank 1 once rank 1 has posted every receive; with
/// `busy`, rank 0 has a receive posted meanwhile, which rank 1 answers when it has the window.
fn window(world: &oxmpi::Communicator, busy: bool) {
    let mut bufs = vec![vec![0u8; LEN]; WINDOW];
    if world.rank() == 0 {
        let outs: Vec<Vec<u8>> = (0..WINDOW)
            .map(|k| (0..LEN).map(|i| pattern(100 + k, i)).collect())
            .collect();
        world.receive_into(&mut [0u8; 1][..], 1, 6).unwrap();
        let mut done = [0u8; 1];
        oxmpi::scope(|s| {
            let last = busy.then(|| {
                world
                    .immediate_receive_into(s, &mut done[..], Source::Rank(1), Tag::Is(10))
                    .unwrap()
            });
            let reqs: Vec<_> = outs
                .iter()
                .map(|o| world.immediate_send(s, &o[..], 1, 7).unwrap())
                .collect();
            oxmpi::request::wait_all(reqs).unwrap();
            if let Some(r) = last {
                r.wait().unwrap();
            }
        });
    } else {
        oxmpi::scope(|s| {
            let reqs: Vec<_> = bufs
                .iter_mut()
                .map(|b| {
                    world
                        .immediate_receive_into(s, &mut b[..], Source::Rank(0), Tag::Is(7))
                        .unwrap()
                })
                .collect();
            world.send(&[1u8][..], 0, 6).unwrap();
            oxmpi::request::wait_all(reqs).unwrap();
        });
        if busy {
            world.send(&[2u8][..], 0, 10).unwrap();
        }
        for (k, b) in bufs.iter().enumerate() {
            check(100 + k, b);
        }
    }
}

fn main() {
    let rounds: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(10);
    let universe = oxmpi::init().expect("init");
    let world = universe.world();
    let me = world.rank();
    let peer = 1 - me;
    let mut v = vec![0u8; LEN];
    let report = |phase: &str| {
        let s = universe.protocol_stats();
        if me == 0 {
            println!("{phase} pushed={}", s.pushed);
        } else {
            println!("{phase} pulls={}", s.single_copy_pulls);
        }
    };
    for round in 0..rounds {
        if (round % 2 == 0) == (me == 0) {
            let out: Vec<u8> = (0..LEN).map(|i| pattern(round, i)).collect();
            world.send(&out[..], peer, 5).unwrap();
        } else {
            let st = world.receive_into(&mut v[..], peer, 5).unwrap();
            assert_eq!(st.count(), Some(LEN as u64));
            check(round, &v);
        }
    }
    report("lone");
    world.barrier().unwrap();
    for (phase, busy) in [("window", false), ("busywindow", true)] {
        window(&world, busy);
        report(phase);
        world.barrier().unwrap();
    }
    let before = universe.protocol_stats();
    let round = 200 + me as usize;
    let out: Vec<u8> = (0..LEN).map(|i| pattern(round, i)).collect();
    if me == 0 {
        oxmpi::scope(|s| {
            let r = world.immediate_send(s, &out[..], 1, 8).unwrap();
            world.receive_into(&mut v[..], 1, 9).unwrap();
            r.wait().unwrap();
        });
    } else {
        world.send(&out[..], 0, 9).unwrap();
        world.receive_into(&mut v[..], 0, 8).unwrap();
    }
    check(200 + peer as usize, &v);
    let after = universe.protocol_stats();
    println!("exchange{me} pushed={}", after.pushed - before.pushed);
    println!(
        "exchange{me} pulls={}",
        after.single_copy_pulls - before.single_copy_pulls
    );
    universe.finalize().unwrap();
}
