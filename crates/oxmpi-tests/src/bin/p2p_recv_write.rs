//! Receiver-initiated write: rank 1 posts a large receive naming rank 0, then tells rank 0 it
//! is ready; rank 0's large send must then go straight into the posted buffer (counted by
//! `protocol_stats().recv_writes`) and arrive intact. A second phase makes the advert stale
//! (a small message with another tag is sent first) and checks that the ordinary rendezvous
//! still delivers everything in order. Prints `recv_writes=N` on rank 0.

use oxmpi::{Source, Tag};

fn main() {
    let rounds: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(20);
    let universe = oxmpi::init().expect("init");
    let world = universe.world();
    let len = 1 << 20;
    let pattern = |round: usize, i: usize| (i * 7 + round * 13 + (i >> 10)) as u8;
    for round in 0..rounds {
        let stale = round % 4 == 3;
        match world.rank() {
            0 => {
                let mut ready = 0u8;
                world.receive_into(&mut ready, 1, 1).unwrap();
                if stale {
                    world.send(&[round as u8; 3][..], 1, 3).unwrap();
                }
                let v: Vec<u8> = (0..len).map(|i| pattern(round, i)).collect();
                world.send(&v[..], 1, 2).unwrap();
            }
            1 => {
                let mut v = vec![0u8; len];
                let mut small = [0u8; 3];
                oxmpi::scope(|s| {
                    let big = world
                        .immediate_receive_into(s, &mut v[..], Source::Rank(0), Tag::Is(2))
                        .unwrap();
                    world.send(&1u8, 0, 1).unwrap();
                    if stale {
                        world.receive_into(&mut small[..], 0, 3).unwrap();
                    }
                    let st = big.wait().unwrap();
                    assert_eq!(
                        (st.source(), st.tag(), st.count()),
                        (0, 2, Some(len as u64))
                    );
                });
                if let Some(i) = (0..len).find(|&i| v[i] != pattern(round, i)) {
                    eprintln!("round {round}: byte {i} wrong");
                    std::process::exit(1);
                }
                if stale && small != [round as u8; 3] {
                    eprintln!("round {round}: small message wrong");
                    std::process::exit(1);
                }
            }
            _ => {}
        }
    }
    if world.rank() == 0 {
        println!("recv_writes={}", universe.protocol_stats().recv_writes);
    }
    universe.finalize().unwrap();
}
