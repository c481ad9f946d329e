//! `Communicator::spawn` and `Universe::parent`: run as `spawn_check N` by oxrun, the job
//! spawns N copies of itself (`spawn_check child`), and both sides check, over the
//! intercommunicator: messages both ways at eager and rendezvous sizes (every byte), an
//! intercommunicator broadcast and allreduce, then a merge with an allreduce and a ring over
//! the merged communicator. Then the parents check that a missing program and a command
//! without processes are refused alike at every rank, and both sides that groups holding
//! the other job's processes form no communicator from groups. With `spawn_check N nested` the
//! children in turn spawn one grandchild and check the same with it. Each process prints
//! one OK line.

use oxmpi::spawn::SpawnCommand;
use oxmpi::{Communicator, ErrorClass, InterCommunicator, InterRoot, Op};

const SIZES: [usize; 4] = [0, 1, 3000, 300_000];

fn pattern(from: u32, to: u32, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u32).wrapping_mul(31).wrapping_add(from * 7 + to * 13) as u8)
        .collect()
}

fn fail(what: String) -> ! {
    eprintln!("spawn_check: {what}");
    std::process::exit(1)
}

/// Sends every size to every remote process, then receives every size from each, checking
/// each byte. `side` tells the senders apart (0: parents, 1: children).
fn exchange(inter: &InterCommunicator, side: u32) {
    let me = inter.rank() as u32 + side * 1000;
    let first = side == 0;
    let round = |sending: bool| {
        for peer in 0..inter.remote_size() {
            let them = peer as u32 + (1 - side) * 1000;
            for (k, &len) in SIZES.iter().enumerate() {
                if sending {
                    inter
                        .send(&pattern(me, them, len)[..], peer, k as i32)
                        .unwrap_or_else(|e| fail(format!("send to {peer}: {e}")));
                } else {
                    let mut got = vec![0xeeu8; len];
                    let st = inter
                        .receive_into(&mut got[..], peer, k as i32)
                        .unwrap_or_else(|e| fail(format!("receive from {peer}: {e}")));
                    if st.source != peer || got != pattern(them, me, len) {
                        fail(format!(
                            "{len} bytes from {peer}: source {} or bytes differ",
                            st.source
                        ));
                    }
                }
            }
        }
    };
    // Parents send first, then children answer: neither blocks on the other's sends.
    round(first);
    round(!first);
}

fn check_inter(inter: &InterCommunicator, side: u32, expect_remote: i32) {
    if inter.remote_size() != expect_remote {
        fail(format!(
            "remote size {} (expected {expect_remote})",
            inter.remote_size()
        ));
    }
    exchange(inter, side);
    // Broadcast from the parents' rank 0 to the children.
    let mut v = [0u64; 4];
    let root = if side == 0 {
        if inter.rank() == 0 {
            v = [11, 22, 33, 44];
            InterRoot::Root
        } else {
            InterRoot::Null
        }
    } else {
        InterRoot::Remote(0)
    };
    inter
        .broadcast_into(root, &mut v[..])
        .unwrap_or_else(|e| fail(format!("intercomm broadcast: {e}")));
    if side == 1 && v != [11, 22, 33, 44] {
        fail(format!("intercomm broadcast gave {v:?}"));
    }
    // Allreduce: each group gets the sum over the other group.
    let mine = [inter.rank() as u64 + 1 + u64::from(side) * 100];
    let mut theirs = [0u64];
    inter
        .all_reduce_into(&mine[..], &mut theirs[..], Op::Sum)
        .unwrap_or_else(|e| fail(format!("intercomm allreduce: {e}")));
    let n = inter.remote_size() as u64;
    let want = n * (n + 1) / 2 + if side == 0 { 100 * n } else { 0 };
    if theirs[0] != want {
        fail(format!(
            "intercomm allreduce gave {} (expected {want})",
            theirs[0]
        ));
    }
    // Merged: parents first.
    let merged: Communicator = inter
        .merge(side == 1)
        .unwrap_or_else(|e| fail(format!("merge: {e}")));
    let (lsize, rsize) = (inter.size(), inter.remote_size());
    let want_rank = inter.rank() + if side == 1 { rsize } else { 0 };
    if merged.size() != lsize + rsize || merged.rank() != want_rank {
        fail(format!(
            "merged rank {} of {} (expected {want_rank} of {})",
            merged.rank(),
            merged.size(),
            lsize + rsize
        ));
    }
    let mut sum = [0u64];
    merged
        .all_reduce_into(&[merged.rank() as u64][..], &mut sum[..], Op::Sum)
        .unwrap_or_else(|e| fail(format!("merged allreduce: {e}")));
    let m = merged.size() as u64;
    if sum[0] != m * (m - 1) / 2 {
        fail(format!("merged allreduce gave {}", sum[0]));
    }
    let (next, prev) = (
        (merged.rank() + 1) % merged.size(),
        (merged.rank() + merged.size() - 1) % merged.size(),
    );
    let out = pattern(merged.rank() as u32, next as u32, 70_000);
    let mut got = vec![0u8; 70_000];
    merged
        .send_receive_into(&out[..], next, 5, &mut got[..], prev, 5)
        .unwrap_or_else(|e| fail(format!("merged ring: {e}")));
    if got != pattern(prev as u32, merged.rank() as u32, 70_000) {
        fail("merged ring bytes differ".into());
    }
    merged
        .barrier()
        .unwrap_or_else(|e| fail(format!("merged barrier: {e}")));
}

fn command(program: &str, n: u32, args: &[&str]) -> SpawnCommand {
    SpawnCommand {
        execname: program.into(),
        nprocs: n,
        args: args.iter().map(|s| s.to_string()).collect(),
        info: vec![],
    }
}

/// Groups holding processes of another job (`theirs`, the other side of a spawn) form no
/// communicator from groups: [`ErrorClass::Group`] at once, before any communication.
fn from_groups_refuse_other_jobs(
    universe: &oxmpi::Universe,
    world: &Communicator,
    theirs: &oxmpi::Group,
) {
    let ours = world.group();
    let both = ours.union(theirs);
    let tag = "spawn_check";
    let results = [
        universe.create_from_group(theirs, tag).map(drop),
        universe.create_from_group(&both, tag).map(drop),
        (universe.create_from_groups(&ours, 0, theirs, 0, tag)).map(drop),
    ];
    for (i, r) in results.into_iter().enumerate() {
        match r {
            Err(e) if e.class() == ErrorClass::Group => {}
            other => fail(format!(
                "communicator {i} from groups with another job's processes: {other:?}"
            )),
        }
    }
}

fn main() {
    let universe = oxmpi::init().unwrap_or_else(|e| fail(format!("init: {e}")));
    let world = universe.world();
    let arg = std::env::args().nth(1).unwrap_or_default();
    if let Some(parent) = universe.parent() {
        let parents: i32 = std::env::args()
            .nth(2)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| fail("child without the parents' count".into()));
        check_inter(&parent, 1, parents);
        from_groups_refuse_other_jobs(&universe, &world, &parent.remote_group());
        parent.free();
        let nested = std::env::args().nth(3).is_some_and(|a| a == "nested");
        if nested {
            // A spawned job spawns in turn: its TCP transport and job id already exist.
            let me = std::env::current_exe().unwrap_or_else(|e| fail(format!("exe: {e}")));
            let np = world.size().to_string();
            let cmd = [command(&me.to_string_lossy(), 1, &["grandchild", &np])];
            let inter = world
                .spawn(0, &cmd)
                .unwrap_or_else(|e| fail(format!("nested spawn: {e}")));
            check_inter(&inter, 0, 1);
            inter.free();
        }
        let what = if arg == "grandchild" {
            "grandchild"
        } else {
            "child"
        };
        println!("spawn_check {what} {} of {} OK", world.rank(), world.size());
        universe
            .finalize()
            .unwrap_or_else(|e| fail(format!("finalize: {e}")));
        return;
    }
    if arg == "child" || arg == "grandchild" {
        fail("started as a child but has no parent".into());
    }
    let n: u32 = arg
        .parse()
        .unwrap_or_else(|_| fail(format!("bad count {arg:?}")));
    let me = std::env::current_exe().unwrap_or_else(|e| fail(format!("current_exe: {e}")));
    let me = me.to_string_lossy().into_owned();
    let np = world.size().to_string();
    let nested = std::env::args().nth(2).unwrap_or_default();
    let child_args = ["child", np.as_str(), nested.as_str()];
    let child_args = &child_args[..if nested.is_empty() { 2 } else { 3 }];
    // Two commands when more than one child: spawn_multiple's order is kept.
    let cmds = if n > 1 {
        vec![command(&me, 1, child_args), command(&me, n - 1, child_args)]
    } else {
        vec![command(&me, n, child_args)]
    };
    let root = world.size() - 1;
    let inter = world
        .spawn(root, &cmds)
        .unwrap_or_else(|e| fail(format!("spawn: {e}")));
    check_inter(&inter, 0, n as i32);
    from_groups_refuse_other_jobs(&universe, &world, &inter.remote_group());
    inter.free();

    // A program that does not exist: nothing starts, every rank gets the spawn error.
    let missing = [command("/nonexistent/spawn_check_missing", 1, &[])];
    match world.spawn(0, &missing) {
        Err(e) if e.class() == ErrorClass::Spawn => {}
        other => fail(format!("spawn of a missing program gave {other:?}")),
    }
    // No process asked for: an argument error at the root, a spawn error elsewhere.
    let none = [command(&me, 0, &[])];
    let want = if world.rank() == 0 {
        ErrorClass::Arg
    } else {
        ErrorClass::Spawn
    };
    match world.spawn(0, &none) {
        Err(e) if e.class() == want => {}
        other => fail(format!("spawn of 0 processes gave {other:?}")),
    }
    // The communicator still works after the refusals.
    world
        .barrier()
        .unwrap_or_else(|e| fail(format!("barrier: {e}")));
    println!("spawn_check parent {} of {} OK", world.rank(), world.size());
    universe
        .finalize()
        .unwrap_or_else(|e| fail(format!("finalize: {e}")));
}
