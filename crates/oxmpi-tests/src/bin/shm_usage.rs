//! Shared memory a job uses: after every rank has exchanged a message with its two ring
//! neighbours, rank 0 sums the sizes of the job's files in /dev/shm and prints
//! `np=N files=F bytes_total=T bytes_per_rank=B`, and every rank prints how many peers it
//! mapped (connections are deferred to first contact): `rank R mapped=M`.

fn main() {
    let universe = oxmpi::init().expect("init");
    let world = universe.world();
    let (me, np) = (world.rank(), world.size());
    // One message to the next rank and one from the previous, with `tag`.
    let ring = |tag: i32| {
        let mut x = 0u32;
        world
            .send_receive_into(
                &(me as u32),
                (me + 1) % np,
                tag,
                &mut x,
                (me + np - 1) % np,
                tag,
            )
            .expect("ring");
    };
    ring(0);
    // A second lap so that every rank's segment exists before rank 0 looks.
    ring(1);
    println!("rank {me} mapped={}", universe.mapped_peers());
    if me == 0 {
        let key = std::env::var("OXMPI_JOBKEY").expect("run under oxrun");
        let prefix = format!("oxmpi.{key}.");
        let sizes: Vec<u64> = std::fs::read_dir("/dev/shm")
            .expect("/dev/shm")
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
            .map(|e| e.metadata().map(|m| m.len()).unwrap_or(0))
            .collect();
        let total: u64 = sizes.iter().sum();
        println!(
            "np={np} files={} bytes_total={total} bytes_per_rank={}",
            sizes.len(),
            total / np as u64
        );
    }
    // Nobody unlinks before everyone has looked.
    ring(2);
    universe.finalize().expect("finalize");
}
