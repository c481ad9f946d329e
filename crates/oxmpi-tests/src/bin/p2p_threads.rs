//! THREAD_MULTIPLE: several threads of each rank send and receive concurrently on one
//! communicator (thread `t` uses tag `t`), with sizes crossing the eager/rendezvous switch.
//! Ranks pair up (0-1, 2-3, ...); every byte is checked. Exits non-zero on a mismatch.

fn main() {
    let threads: i32 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(4);
    let rounds: usize = std::env::args()
        .nth(2)
        .and_then(|a| a.parse().ok())
        .unwrap_or(200);
    let universe = oxmpi::init_with::<oxmpi::Multiple>().expect("init");
    assert_eq!(universe.threading(), oxmpi::Threading::Multiple);
    let world = universe.world();
    let me = world.rank();
    let peer = me ^ 1;
    if peer >= world.size() {
        println!("rank {me}: no partner, idle");
        return;
    }
    std::thread::scope(|s| {
        for t in 0..threads {
            let world = world.clone();
            s.spawn(move || {
                for round in 0..rounds {
                    let size = [1usize, 100, 5000, 40_000, 300_000][round % 5];
                    let fill = |from: i32| {
                        (0..size)
                            .map(|i| (i as i32 * 3 + t * 17 + from + round as i32) as u8)
                            .collect::<Vec<u8>>()
                    };
                    let mine = fill(me);
                    let mut got = vec![0u8; size];
                    if me % 2 == 0 {
                        world.send(&mine[..], peer, t).expect("send");
                        world.receive_into(&mut got[..], peer, t).expect("recv");
                    } else {
                        world.receive_into(&mut got[..], peer, t).expect("recv");
                        world.send(&mine[..], peer, t).expect("send");
                    }
                    if got != fill(peer) {
                        eprintln!("rank {me} thread {t} round {round}: wrong data");
                        std::process::exit(1);
                    }
                }
            });
        }
    });
    println!("rank {me}: {threads} threads x {rounds} exchanges OK");
}
