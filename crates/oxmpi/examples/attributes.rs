//! Attributes and names: a typed key whose value is copied to duplicates and one whose is
//! not, get/set/delete, the predefined attributes (largest tag, universe size), communicator
//! names, the library version, and a communicator's raw handle round trip. Each rank
//! checks and prints `attributes OK`.
//!
//! `oxrun -n 3 target/release/examples/attributes`

use oxmpi::{Communicator, Keyval, Predefined, TAG_UB};

fn main() -> Result<(), oxmpi::Error> {
    let universe = oxmpi::init()?;
    let world = universe.world();
    let (rank, size) = (world.rank(), world.size());
    let mut ok = true;

    let inherited: Keyval<String> = Keyval::new(true);
    let local: Keyval<u64> = Keyval::new(false);
    world.set_attr(&inherited, format!("rank {rank}"));
    world.set_attr(&local, 7);
    ok &= world.attr(&local) == Some(7);
    let dup = world.duplicate()?;
    ok &= dup.attr(&inherited) == Some(format!("rank {rank}")) && dup.attr(&local).is_none();
    ok &= world.delete_attr(&local) == Some(7) && world.attr(&local).is_none();

    ok &= world.predefined_attr(Predefined::TagUb) == Some(TAG_UB);
    ok &= world.predefined_attr(Predefined::UniverseSize) == Some(size);

    ok &= world.name() == "MPI_COMM_WORLD" && dup.name().is_empty();
    dup.set_name("my duplicate")?;
    ok &= dup.name() == "my duplicate";
    ok &= dup.set_name(&"x".repeat(200)).is_err();

    // The handle C code built on oxmpi's mpi.h would receive, and back.
    let raw = dup.as_raw()?;
    ok &= dup.as_raw()? == raw;
    let back: Communicator = Communicator::from_raw(raw)?;
    let mut s = [0i32];
    back.all_reduce_into(&[1][..], &mut s[..], oxmpi::Op::Sum)?;
    ok &= s[0] == size && back.name() == "my duplicate";

    ok &= oxmpi::version() == (5, 0) && oxmpi::library_version().starts_with("oxmpi ");

    println!(
        "rank {rank}: attributes {}",
        if ok { "OK" } else { "WRONG" }
    );
    if !ok {
        universe.abort(1);
    }
    Ok(())
}
