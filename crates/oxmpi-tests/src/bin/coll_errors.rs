//! Bad arguments to collectives give the right error class instead of hanging: root out of
//! range, buffers of the wrong length, counts/displacements that do not fit, operations not
//! defined on the type, and counts that differ between ranks (detected by the receivers).
//! After each error the communicator still works. Exits non-zero on a wrong class.

use std::process::exit;

use oxmpi::{scope, Communicator, ErrorClass, Op};

fn expect<T: std::fmt::Debug>(what: &str, r: oxmpi::Result<T>, class: ErrorClass) {
    match r {
        Err(e) if e.class() == class => {}
        other => {
            eprintln!("MISMATCH {what}: expected {class:?}, got {other:?}");
            exit(1);
        }
    }
}

fn still_works(c: &Communicator) {
    let mut s = [0i32];
    if let Err(e) = c.all_reduce_into(&[1][..], &mut s[..], Op::Sum) {
        eprintln!("ERROR allreduce after an error: {e}");
        exit(1);
    }
    if s[0] != c.size() {
        eprintln!("MISMATCH allreduce after an error gave {}", s[0]);
        exit(1);
    }
}

fn main() {
    let universe = oxmpi::init().expect("init");
    let world = universe.world();
    let p = world.size();
    let me = world.rank();

    for root in [-1, p, p + 5] {
        expect(
            "bcast root",
            world.broadcast_into(root, &mut [0u8; 4][..]),
            ErrorClass::Root,
        );
        expect(
            "reduce root",
            world.reduce_into(root, &[1i32][..], &mut [0][..], Op::Sum),
            ErrorClass::Root,
        );
        expect(
            "gather root",
            world.gather_into(root, &[1i32][..], &mut [0; 64][..]),
            ErrorClass::Root,
        );
        expect(
            "scatter root",
            world.scatter_into(root, &[0i32; 64][..], &mut [0][..]),
            ErrorClass::Root,
        );
        expect(
            "gatherv root",
            world.gather_varcount_into(root, &[1i32][..], &mut [0; 64][..], &[], &[]),
            ErrorClass::Root,
        );
        let mut b = [0u8; 4];
        scope(|s| {
            expect(
                "ibcast root",
                world
                    .immediate_broadcast_into(s, root, &mut b[..])
                    .map(drop),
                ErrorClass::Root,
            );
        });
    }
    still_works(&world);

    let mut too_small = vec![0i32; (p as usize) * 2 - 1];
    if me == 0 {
        expect(
            "gather recv length",
            world.gather_into(0, &[1i32, 2][..], &mut too_small),
            ErrorClass::Count,
        );
    }
    expect(
        "allgather recv length",
        world.all_gather_into(&[1i32, 2][..], &mut too_small),
        ErrorClass::Count,
    );
    expect(
        "allreduce recv length",
        world.all_reduce_into(&[1i32, 2][..], &mut [0][..], Op::Sum),
        ErrorClass::Count,
    );
    expect(
        "alltoall lengths",
        world.all_to_all_into(&[1i32; 3][..], &mut [0; 4][..]),
        ErrorClass::Count,
    );
    expect(
        "reduce_scatter counts",
        world.reduce_scatter_into(
            &[1i32; 3][..],
            &mut [0][..],
            &vec![1; p as usize + 1],
            Op::Sum,
        ),
        ErrorClass::Arg,
    );
    expect(
        "allgatherv counts length",
        world.all_gather_varcount_into(&[1i32][..], &mut [0; 8][..], &[1], &[0, 1, 2]),
        ErrorClass::Arg,
    );
    let counts = vec![1usize; p as usize];
    let mut displs: Vec<usize> = (0..p as usize).collect();
    displs[p as usize - 1] = 1000;
    expect(
        "allgatherv displacement outside",
        world.all_gather_varcount_into(&[1i32][..], &mut vec![0; p as usize], &counts, &displs),
        ErrorClass::Buffer,
    );
    expect(
        "BAND on f64",
        world.all_reduce_into(&[1.0f64][..], &mut [0.0][..], Op::BitwiseAnd),
        ErrorClass::Op,
    );
    expect(
        "MINLOC on i32",
        world.reduce_into(0, &[1i32][..], &mut [0][..], Op::MinLoc),
        ErrorClass::Op,
    );
    let wrong = Op::user::<u64>(true, |_, _| {});
    expect(
        "user op on another type",
        world.all_reduce_into(&[1i32][..], &mut [0][..], wrong),
        ErrorClass::Op,
    );
    still_works(&world);

    // Counts that differ between ranks: rank 1 expects fewer (truncation) or more (short
    // message) bytes than the root broadcasts; the others are told nothing is wrong.
    if p >= 2 {
        let pair = world
            .split(i32::from(me >= 2), me)
            .expect("split")
            .expect("member");
        if me < 2 {
            for (len, class) in [(2usize, ErrorClass::Truncate), (8, ErrorClass::Count)] {
                let mut buf = vec![7u32; if me == 0 { 4 } else { len }];
                let r = pair.broadcast_into(0, &mut buf[..]);
                if me == 1 {
                    expect("bcast with mismatched count", r, class);
                } else if let Err(e) = r {
                    eprintln!("ERROR bcast root: {e}");
                    exit(1);
                }
            }
            still_works(&pair);
        }
    }
    world.barrier().expect("barrier");
    println!("rank {me} coll_errors passed");
    universe.finalize().expect("finalize");
}
