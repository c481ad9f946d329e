//! `affinity_report`: after `MPI_Init` and a round of messages with every other rank (so TCP
//! connections, if any, exist), each rank prints the CPUs it may run on as the kernel says:
//! `rank R cpus LIST`. Tests compare it with the binding the launcher (oxrun or Slurm) gave.

fn main() {
    let universe = oxmpi::init().expect("init");
    let world = universe.world();
    let (me, size) = (world.rank(), world.size());
    // Every pair exchanges one message, which opens every connection.
    for peer in (0..size).filter(|&p| p != me) {
        let mut got = [0u8; 1];
        if me < peer {
            world.send(&[1u8][..], peer, 5).expect("send");
            world.receive_into(&mut got[..], peer, 5).expect("receive");
        } else {
            world.receive_into(&mut got[..], peer, 5).expect("receive");
            world.send(&[1u8][..], peer, 5).expect("send");
        }
    }
    world.barrier().expect("barrier");
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let cpus = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .map_or("unknown", str::trim);
    println!("rank {me} cpus {cpus}");
    universe.finalize().expect("finalize");
}
