//! `abort_code RANK CODE`: rank RANK calls `MPI_Abort` with CODE after a barrier; the other
//! ranks wait in a receive that never completes, so only the launcher can end them.

fn main() {
    let args: Vec<i32> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("abort_code RANK CODE"))
        .collect();
    let [who, code] = args[..] else {
        panic!("usage: abort_code RANK CODE");
    };
    let universe = oxmpi::init().expect("init");
    let world = universe.world();
    world.barrier().expect("barrier");
    if world.rank() == who {
        universe.abort(code);
    }
    let mut v = [0u8; 1];
    // Nobody sends this: the rank stays here until the launcher ends the job.
    let _ = world.receive_into(&mut v[..], who, 99);
    universe.finalize().expect("finalize");
}
