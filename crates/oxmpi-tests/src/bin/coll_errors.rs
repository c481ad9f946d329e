//! Bad arguments to collectives give the right error class instead of hanging: root out of
//! range, buffers of the wrong length, counts/displacements that do not fit, operations not
//! defined on the type, counts that differ between ranks (detected by the receivers), and
//! different operations in the two groups of an intercommunicator reduction (every process
//! that takes part gets [`ErrorClass::Op`]). After each error the communicator still works.
//! Exits non-zero on a wrong class.

use std::process::exit;

use oxmpi::{scope, Communicator, ErrorClass, InterRoot, Op};

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

/// Evens and odds as the two groups of an intercommunicator; each passes a different
/// operation to allreduce (blocking and nonblocking) and reduce.
fn intercomm_op_mismatch(world: &Communicator) {
    let me = world.rank();
    let color = me % 2;
    let local = world.split(color, me).expect("split").expect("member");
    let inter = local
        .create_intercomm(0, world, 1 - color, 77)
        .expect("create_intercomm");
    let lr = inter.rank();
    let rsize = inter.remote_size();
    let mine = if color == 0 { Op::Sum } else { Op::Max };
    let mut r = [0i32; 2];
    expect(
        "intercomm allreduce with different ops",
        inter.all_reduce_into(&[me, 1][..], &mut r[..], mine.clone()),
        ErrorClass::Op,
    );
    // A user operation against a predefined one, nonblocking.
    let op = if color == 0 {
        Op::user::<i32>(true, |a, b| b.iter_mut().zip(a).for_each(|(y, x)| *y += x))
    } else {
        Op::Sum
    };
    let one = [me];
    scope(|s| {
        expect(
            "intercomm iallreduce user op against SUM",
            inter
                .immediate_all_reduce_into(s, &one[..], &mut r[..1], op)
                .and_then(|q| q.wait()),
            ErrorClass::Op,
        );
    });
    // reduce to the odds' rank 0: it and every even get Op; the other odds take no part.
    let spec = match (color, lr) {
        (1, 0) => InterRoot::Root,
        (1, _) => InterRoot::Null,
        _ => InterRoot::Remote(0),
    };
    let res = inter.reduce_into(spec, &[me][..], &mut r[..1], mine);
    if spec == InterRoot::Null {
        if let Err(e) = res {
            eprintln!("ERROR intercomm reduce at a non-root of the root group: {e}");
            exit(1);
        }
    } else {
        expect("intercomm reduce with different ops", res, ErrorClass::Op);
    }
    // The intercommunicator still works with matching operations.
    let mut s = [0i32];
    if let Err(e) = inter.all_reduce_into(&[1][..], &mut s[..], Op::Sum) {
        eprintln!("ERROR intercomm allreduce after an error: {e}");
        exit(1);
    }
    if s[0] != rsize {
        eprintln!("MISMATCH intercomm allreduce after an error gave {}", s[0]);
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
    if p >= 2 {
        intercomm_op_mismatch(&world);
    }
    world.barrier().expect("barrier");
    println!("rank {me} coll_errors passed");
    universe.finalize().expect("finalize");
}
