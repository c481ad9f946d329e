//! An MPI program for the multi-host tests that talks only within a host: ranks 2k and 2k+1
//! (placed on one host by `--map-by slot` with even slot counts) swap their ranks over shared
//! memory, print `pair rank=R partner=P got=P`, and finalize (a PMI fence across every host).
//!
//! `mpi-pairs abort RANK CODE`: rank RANK calls `MPI_Abort` with CODE right after init.

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let universe = oxmpi::init().expect("init");
    let world = universe.world();
    let (rank, size) = (world.rank(), world.size());
    if args.first().map(String::as_str) == Some("abort") {
        let who: i32 = args
            .get(1)
            .and_then(|a| a.parse().ok())
            .expect("abort RANK CODE");
        let code: i32 = args
            .get(2)
            .and_then(|a| a.parse().ok())
            .expect("abort RANK CODE");
        if rank == who {
            universe.abort(code);
        }
    }
    let partner = rank ^ 1;
    if partner < size {
        let mut got = [-1i32; 1];
        if rank % 2 == 0 {
            world.send(&[rank][..], partner, 7).expect("send");
            world
                .receive_into(&mut got[..], partner, 7)
                .expect("receive");
        } else {
            world
                .receive_into(&mut got[..], partner, 7)
                .expect("receive");
            world.send(&[rank][..], partner, 7).expect("send");
        }
        println!("pair rank={rank} partner={partner} got={}", got[0]);
    }
    universe.finalize().expect("finalize");
}
