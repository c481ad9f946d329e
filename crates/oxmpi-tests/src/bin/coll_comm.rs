//! Communicators and groups: dup (isolated traffic, attributes copied), split with keys and
//! UNDEFINED, split_type(shared), create and create_group, compare, free and context-id
//! reuse, group algebra against communicators, attributes, and intercommunicators (create,
//! point-to-point, every intercommunicator collective blocking and nonblocking, merge),
//! communicators from groups alone. Needs 2+ ranks for the intercommunicator parts. Exits non-zero on a mismatch.

use oxmpi::{
    Communicator, ErrorClass, InterRoot, Keyval, Op, Predefined, Relation, SplitType, UNDEFINED,
};
use oxmpi_tests::{check, must};

fn dup_and_attributes(world: &Communicator) {
    let p = world.size();
    let me = world.rank();
    let copied = Keyval::<String>::new(true);
    let not_copied = Keyval::<u64>::new(false);
    world.set_attr(&copied, format!("rank {me}"));
    world.set_attr(&not_copied, 42);
    let dup = must("dup", world.duplicate());
    check!(
        dup.compare(world) == Relation::Congruent,
        "dup is congruent"
    );
    check!(
        world.compare(&world.clone()) == Relation::Identical,
        "a handle is identical to itself"
    );
    check!(
        dup.context_id() != world.context_id(),
        "dup has its own context"
    );
    check!(
        dup.attr(&copied) == Some(format!("rank {me}")),
        "copy_on_dup attribute copied"
    );
    check!(
        dup.attr(&not_copied).is_none(),
        "attribute without copy not copied"
    );
    check!(
        world.delete_attr(&not_copied) == Some(42),
        "delete returns the value"
    );
    check!(world.attr(&not_copied).is_none(), "deleted");
    world.set_attr(&copied, "replaced".to_string());
    check!(
        world.attr(&copied).as_deref() == Some("replaced"),
        "replaced"
    );
    check!(
        dup.attr(&copied) == Some(format!("rank {me}")),
        "dup keeps its own copy"
    );

    // The predefined attributes are the world's, read through the same store.
    check!(
        world.predefined_attr(Predefined::TagUb) == Some(oxmpi::TAG_UB)
            && world.predefined_attr(Predefined::UniverseSize) == Some(p)
            && world.predefined_attr(Predefined::Appnum) == Some(0),
        "predefined attributes on world"
    );
    check!(
        dup.predefined_attr(Predefined::TagUb).is_none(),
        "predefined attributes are not copied to a dup"
    );

    // Traffic on one communicator never matches receives on the other.
    if p > 1 {
        let (to, from) = ((me + 1) % p, (me + p - 1) % p);
        must("send world", world.send(&[1u32][..], to, 5));
        must("send dup", dup.send(&[2u32][..], to, 5));
        let mut x = [0u32];
        must("recv dup", dup.receive_into(&mut x[..], from, 5));
        check!(x == [2], "dup received world's message");
        must("recv world", world.receive_into(&mut x[..], from, 5));
        check!(x == [1], "world received dup's message");
    }
    // Collectives on both, interleaved.
    let mut a = [0i32];
    must(
        "allreduce dup",
        dup.all_reduce_into(&[me][..], &mut a[..], Op::Sum),
    );
    check!(a[0] == p * (p - 1) / 2, "allreduce on dup");

    // Freed contexts are reused: more dup/free cycles than there are context ids do not exhaust the ids.
    let id = {
        let d = must("dup", world.duplicate());
        d.context_id()
    };
    for i in 0..4200 {
        let d = must("dup loop", world.duplicate());
        if i == 0 {
            check!(
                d.context_id() == id,
                "the freed context id is reused ({} vs {id})",
                d.context_id()
            );
        }
        d.free();
    }
    let keep: Vec<Communicator> = (0..10).map(|_| must("dup", dup.duplicate())).collect();
    let mut ids: Vec<u32> = keep.iter().map(|c| c.context_id()).collect();
    ids.sort_unstable();
    ids.dedup();
    check!(ids.len() == 10, "live communicators have distinct contexts");
}

fn split_and_groups(world: &Communicator) {
    let p = world.size();
    let me = world.rank();
    // Three colors, keys reversing the order.
    let sub = must("split", world.split(me % 3, -me)).expect("member");
    let mine: Vec<i32> = (0..p).filter(|r| r % 3 == me % 3).rev().collect();
    check!(sub.size() as usize == mine.len(), "split size");
    check!(mine[sub.rank() as usize] == me, "split rank order by key");
    let wg = world.group();
    let sg = sub.group();
    let tr = must(
        "translate",
        sg.translate_ranks(&(0..sub.size()).collect::<Vec<_>>(), &wg),
    );
    check!(
        tr == mine.iter().map(|&r| Some(r)).collect::<Vec<_>>(),
        "translate ranks sub -> world: {tr:?}"
    );
    check!(sg.rank() == Some(sub.rank()), "group rank");
    check!(
        wg.compare(&sg)
            == if p <= 1 {
                Relation::Identical
            } else {
                Relation::Unequal
            },
        "world vs sub group"
    );
    if sub.size() > 1 {
        check!(sub.compare(world) == Relation::Unequal, "sub vs world");
    }
    // Same members, other order: similar.
    let rev = must("split rev", world.split(0, -me)).expect("member");
    if p > 1 {
        check!(
            rev.compare(world) == Relation::Similar,
            "reversed split is similar"
        );
    }
    // UNDEFINED leaves a process out.
    let odd = must(
        "split undefined",
        world.split(if me % 2 == 1 { 0 } else { UNDEFINED }, 0),
    );
    check!(odd.is_some() == (me % 2 == 1), "UNDEFINED gives None");
    if let Some(o) = &odd {
        check!(o.size() == p / 2, "odd ranks");
        let mut s = [0i32];
        must(
            "allreduce odd",
            o.all_reduce_into(&[me][..], &mut s[..], Op::Sum),
        );
        check!(
            s[0] == (0..p).filter(|r| r % 2 == 1).sum::<i32>(),
            "allreduce on odd ranks"
        );
    }
    // One host here: shared split holds everyone, in key order.
    let node = must("split_type", world.split_type(SplitType::Shared, me));
    check!(
        node.size() == p && node.rank() == me,
        "split_type shared on one host"
    );

    // create: everyone but rank 0; create_group: the even ranks only (odd ranks do other work).
    let g = must("exclude", wg.exclude(&[0]));
    let c = must("create", world.create(&g));
    check!(c.is_some() == (me != 0), "create membership");
    if let Some(c) = &c {
        check!(c.rank() == me - 1 && c.size() == p - 1, "create ranks");
        let mut b = [0i32];
        if c.rank() == 0 {
            b[0] = 77;
        }
        must("bcast created", c.broadcast_into(0, &mut b[..]));
        check!(b[0] == 77, "bcast on created communicator");
    }
    let evens = must("range_include", wg.range_include(&[(0, p - 1, 2)]));
    if me % 2 == 0 {
        let c = must("create_group", world.create_group(&evens, 7));
        check!(
            c.size() == (p + 1) / 2 && c.rank() == me / 2,
            "create_group ranks"
        );
        let mut s = [0i32];
        must(
            "allreduce evens",
            c.all_reduce_into(&[1][..], &mut s[..], Op::Sum),
        );
        check!(s[0] == c.size(), "allreduce on create_group communicator");
    } else {
        let mut x = [0i32];
        must(
            "allreduce odd-only",
            odd.as_ref()
                .expect("odd")
                .all_reduce_into(&[1][..], &mut x[..], Op::Sum),
        );
    }
    let u = wg.union(&sg);
    check!(
        u.compare(&wg) == Relation::Identical,
        "union with a subgroup keeps the order"
    );
    check!(
        wg.intersection(&sg).compare(&sg) != Relation::Unequal,
        "intersection is the subgroup"
    );
    check!(
        wg.difference(&wg).size() == 0,
        "difference with itself is empty"
    );
    world.barrier().expect("barrier");
}

fn intercomm(world: &Communicator) {
    let p = world.size();
    let me = world.rank();
    let color = me % 2;
    let local = must("split", world.split(color, me)).expect("member");
    // Leaders: world rank 0 for the evens, world rank 1 for the odds.
    let remote_leader = if color == 0 { 1 } else { 0 };
    let inter = must(
        "create_intercomm",
        local.create_intercomm(0, world, remote_leader, 99),
    );
    let (evens, odds) = ((p + 1) / 2, p / 2);
    let (lsize, rsize) = if color == 0 {
        (evens, odds)
    } else {
        (odds, evens)
    };
    check!(
        inter.size() == lsize && inter.remote_size() == rsize && inter.rank() == local.rank(),
        "intercomm sizes"
    );
    let world_of = |c: i32, r: i32| 2 * r + c;
    let other = 1 - color;
    let lr = inter.rank();

    // Point-to-point across: local rank r ↔ remote rank r (where it exists).
    if lr < rsize {
        must("inter send", inter.send(&[me][..], lr, 3));
        let mut x = [0i32];
        must("inter recv", inter.receive_into(&mut x[..], lr, 3));
        check!(
            x[0] == world_of(other, lr),
            "intercomm message from remote rank {lr}: {}",
            x[0]
        );
    }
    must("inter barrier", inter.barrier());

    // bcast from the evens' rank 1 (or 0) to the odds.
    let root = if evens > 1 { 1 } else { 0 };
    let mut b = [0i32; 3];
    let spec = if color == 0 {
        if lr == root {
            b = [5, 6, 7];
            InterRoot::Root
        } else {
            InterRoot::Null
        }
    } else {
        InterRoot::Remote(root)
    };
    must("inter bcast", inter.broadcast_into(spec, &mut b[..]));
    if color == 1 {
        check!(b == [5, 6, 7], "intercomm bcast {b:?}");
    }

    // allreduce: each side gets the other side's sum; allgather: the other side's values.
    let mut s = [0i32; 2];
    must(
        "inter allreduce",
        inter.all_reduce_into(&[me, 1][..], &mut s[..], Op::Sum),
    );
    let osum: i32 = (0..rsize).map(|r| world_of(other, r)).sum();
    check!(s == [osum, rsize], "intercomm allreduce {s:?}");
    let mut g = vec![0i32; rsize as usize];
    must("inter allgather", inter.all_gather_into(&[me][..], &mut g));
    check!(
        g == (0..rsize).map(|r| world_of(other, r)).collect::<Vec<_>>(),
        "intercomm allgather {g:?}"
    );
    // reduce_scatter: 7 elements in each group, dealt out over this group as evenly as
    // they go; element e of a process's input is 100 × its world rank + e.
    let total = 7usize;
    let counts: Vec<usize> = (0..lsize as usize)
        .map(|i| total / lsize as usize + usize::from(i < total % lsize as usize))
        .collect();
    let at: usize = counts[..lr as usize].iter().sum();
    let input: Vec<i32> = (0..total as i32).map(|e| 100 * me + e).collect();
    let mut mine = vec![-1i32; counts[lr as usize]];
    must(
        "inter reduce_scatter",
        inter.reduce_scatter_into(&input, &mut mine, &counts, Op::Sum),
    );
    let theirs: i32 = (0..rsize).map(|r| 100 * world_of(other, r)).sum();
    check!(
        mine.iter()
            .enumerate()
            .all(|(k, &v)| v == theirs + rsize * (at + k) as i32),
        "intercomm reduce_scatter {mine:?}"
    );

    // reduce, gather, scatter to/from the odds' rank 0 (root in the odd group).
    let spec = if color == 1 {
        if lr == 0 {
            InterRoot::Root
        } else {
            InterRoot::Null
        }
    } else {
        InterRoot::Remote(0)
    };
    let mut r = [0i32];
    must(
        "inter reduce",
        inter.reduce_into(spec, &[me][..], &mut r[..], Op::Sum),
    );
    let evsum: i32 = (0..evens).map(|r| world_of(0, r)).sum();
    if spec == InterRoot::Root {
        check!(r[0] == evsum, "intercomm reduce {}", r[0]);
    }
    let mut all = vec![
        0i32;
        if spec == InterRoot::Root {
            evens as usize
        } else {
            0
        }
    ];
    must(
        "inter gather",
        inter.gather_into(spec, &[me * 10][..], &mut all),
    );
    if spec == InterRoot::Root {
        check!(
            all == (0..evens).map(|r| world_of(0, r) * 10).collect::<Vec<_>>(),
            "intercomm gather {all:?}"
        );
    }
    let src: Vec<i32> = if spec == InterRoot::Root {
        (0..evens).map(|r| 1000 + r).collect()
    } else {
        vec![]
    };
    let mut piece = [0i32];
    must(
        "inter scatter",
        inter.scatter_into(spec, &src, &mut piece[..]),
    );
    if color == 0 {
        check!(piece[0] == 1000 + lr, "intercomm scatter {}", piece[0]);
    }
    // alltoall: to remote rank j send me*100+j.
    let send: Vec<i32> = (0..rsize).map(|j| me * 100 + j).collect();
    let mut recv = vec![0i32; rsize as usize];
    must("inter alltoall", inter.all_to_all_into(&send, &mut recv));
    check!(
        recv == (0..rsize)
            .map(|j| world_of(other, j) * 100 + lr)
            .collect::<Vec<_>>(),
        "intercomm alltoall {recv:?}"
    );

    // A duplicate: its own contexts, the same groups; allgatherv there with remote rank j
    // contributing j + 1 copies of its world rank at displacement 1 + j (j + 1) / 2.
    let dup = must("inter duplicate", inter.duplicate());
    check!(dup.remote_size() == rsize, "duplicate remote size");
    let counts: Vec<usize> = (0..rsize as usize).map(|j| j + 1).collect();
    let displs: Vec<usize> = (0..rsize as usize).map(|j| 1 + j * (j + 1) / 2).collect();
    let total = 1 + counts.iter().sum::<usize>();
    let mine = vec![me; lr as usize + 1];
    let mut got = vec![-1i32; total];
    must(
        "inter allgatherv",
        dup.all_gather_varcount_into(&mine, &mut got, &counts, &displs),
    );
    let want: Vec<i32> = std::iter::once(-1)
        .chain((0..rsize).flat_map(|j| std::iter::repeat_n(world_of(other, j), j as usize + 1)))
        .collect();
    check!(got == want, "intercomm allgatherv {got:?}");
    // gatherv to the odds' rank 0.
    let gspec = if color == 1 {
        if lr == 0 {
            InterRoot::Root
        } else {
            InterRoot::Null
        }
    } else {
        InterRoot::Remote(0)
    };
    let mut got = vec![-1i32; total];
    must(
        "inter gatherv",
        dup.gather_varcount_into(gspec, &mine, &mut got, &counts, &displs),
    );
    if gspec == InterRoot::Root {
        check!(got == want, "intercomm gatherv {got:?}");
    }
    // Split by local rank parity, keys reversing the order; a parity the other group lacks
    // gets None.
    let par = lr % 2;
    let rsame = if par == 0 { (rsize + 1) / 2 } else { rsize / 2 };
    match must("inter split", dup.split(par, -lr)) {
        None => check!(rsame == 0, "inter split: None with {rsame} remote matches"),
        Some(sp) => {
            check!(sp.remote_size() == rsame, "inter split remote size");
            let mut wr = vec![-1i32; rsame as usize];
            must("split allgather", sp.all_gather_into(&[me][..], &mut wr));
            let want: Vec<i32> = (0..rsame)
                .map(|j| world_of(other, par + 2 * (rsame - 1 - j)))
                .collect();
            check!(wr == want, "inter split allgather {wr:?}");
        }
    }
    check!(
        must("inter split undefined", dup.split(UNDEFINED, 0)).is_none(),
        "UNDEFINED gives None"
    );

    // Nonblocking: barrier, bcast, allreduce, allgather and alltoall outstanding at once,
    // waited in reverse order; then reduce, gather and scatter at once (root: the odds'
    // rank 0), waited in start order.
    let broot = if evens > 1 { 1 } else { 0 };
    let bspec = if color == 0 {
        if lr == broot {
            InterRoot::Root
        } else {
            InterRoot::Null
        }
    } else {
        InterRoot::Remote(broot)
    };
    let mut ib = if bspec == InterRoot::Root {
        [15, 16, 17, 18]
    } else {
        [0; 4]
    };
    let ar_send = [me, 2 * me, 1];
    let mut ar = [0i32; 3];
    let ag_send = [me, -me];
    let mut ag = vec![0i32; 2 * rsize as usize];
    let a2a_send: Vec<i32> = (0..rsize).map(|j| me * 1000 + j).collect();
    let mut a2a = vec![0i32; rsize as usize];
    oxmpi::scope(|s| {
        let reqs = vec![
            inter.immediate_barrier(s),
            inter.immediate_broadcast_into(s, bspec, &mut ib[..]),
            inter.immediate_all_reduce_into(s, &ar_send[..], &mut ar[..], Op::Sum),
            inter.immediate_all_gather_into(s, &ag_send[..], &mut ag),
            inter.immediate_all_to_all_into(s, &a2a_send, &mut a2a),
        ];
        for r in reqs.into_iter().rev() {
            must("inter immediate", r.and_then(|r| r.wait()));
        }
    });
    if color == 1 {
        check!(ib == [15, 16, 17, 18], "intercomm ibcast {ib:?}");
    }
    check!(ar == [osum, 2 * osum, rsize], "intercomm iallreduce {ar:?}");
    check!(
        ag == (0..rsize)
            .flat_map(|r| [world_of(other, r), -world_of(other, r)])
            .collect::<Vec<_>>(),
        "intercomm iallgather {ag:?}"
    );
    check!(
        a2a == (0..rsize)
            .map(|j| world_of(other, j) * 1000 + lr)
            .collect::<Vec<_>>(),
        "intercomm ialltoall {a2a:?}"
    );
    let is_root = spec == InterRoot::Root;
    let mut ired = [0i32; 2];
    let mut igat = vec![0i32; if is_root { evens as usize } else { 0 }];
    let isrc: Vec<i32> = if is_root {
        (0..evens).map(|r| 2000 + r).collect()
    } else {
        vec![]
    };
    let mut ipiece = [0i32];
    let red_send = [me, 1];
    let gat_send = [me + 7];
    oxmpi::scope(|s| {
        let reqs = [
            inter.immediate_reduce_into(s, spec, &red_send[..], &mut ired[..], Op::Sum),
            inter.immediate_gather_into(s, spec, &gat_send[..], &mut igat),
            inter.immediate_scatter_into(s, spec, &isrc, &mut ipiece[..]),
        ];
        for r in reqs {
            must("inter immediate rooted", r.and_then(|r| r.wait()));
        }
    });
    if is_root {
        check!(ired == [evsum, evens], "intercomm ireduce {ired:?}");
        check!(
            igat == (0..evens).map(|r| world_of(0, r) + 7).collect::<Vec<_>>(),
            "intercomm igather {igat:?}"
        );
    }
    if color == 0 {
        check!(ipiece[0] == 2000 + lr, "intercomm iscatter {}", ipiece[0]);
    }

    // merge: odds first (evens pass high = true).
    let merged = must("merge", inter.merge(color == 0));
    check!(merged.size() == p, "merged size");
    let want_rank = if color == 1 { lr } else { odds + lr };
    check!(
        merged.rank() == want_rank,
        "merged rank {} want {want_rank}",
        merged.rank()
    );
    let mut x = [0i32];
    must(
        "merged allreduce",
        merged.all_reduce_into(&[merged.rank()][..], &mut x[..], Op::Sum),
    );
    check!(x[0] == p * (p - 1) / 2, "allreduce on merged");
    check!(
        inter.compare(&inter.clone()) == Relation::Identical,
        "intercomm identical to itself"
    );
    check!(
        inter.remote_group().size() == rsize && inter.group().size() == lsize,
        "intercomm groups"
    );
    inter.free();
    world.barrier().expect("barrier");
}

/// Communicators from groups alone (`Universe::create_from_group`, `create_from_groups`):
/// the even and the odd ranks with different string tags, twice back to back, the empty
/// group, an intercommunicator between them (p2p across, allreduce), and the errors.
fn from_groups(universe: &oxmpi::Universe, world: &Communicator) {
    let p = world.size();
    let me = world.rank();
    let color = me % 2;
    let all = world.group();
    let parity = |c: i32| {
        let ranks: Vec<i32> = (c..p).step_by(2).collect();
        must("include", all.include(&ranks))
    };
    let (mine, other) = (parity(color), parity(1 - color));
    let sum_of = |c: i32| (c..p).step_by(2).sum::<i32>();
    for k in 0..2 {
        let tag = format!("oxmpi.test.{}.{k}", ["even", "odd"][color as usize]);
        let c = must("create_from_group", universe.create_from_group(&mine, &tag))
            .expect("a member gets a communicator");
        check!(
            c.rank() == me / 2 && c.size() == mine.size(),
            "from group: rank {} size {}",
            c.rank(),
            c.size()
        );
        let mut s = [0i32];
        must(
            "from group allreduce",
            c.all_reduce_into(&[me][..], &mut s[..], Op::Sum),
        );
        check!(s[0] == sum_of(color), "from group allreduce {}", s[0]);
    }
    let empty = must("exclude all", all.exclude(&(0..p).collect::<Vec<_>>()));
    check!(
        must(
            "empty",
            universe.create_from_group(&empty, "oxmpi.test.empty")
        )
        .is_none(),
        "the empty group gives no communicator"
    );
    if p >= 2 {
        let class = |r: oxmpi::Result<Option<Communicator>>| r.err().map(|e| e.class());
        check!(
            class(universe.create_from_group(&other, "oxmpi.test.x")) == Some(ErrorClass::Group),
            "a caller outside the group"
        );
        for (k, lead) in [(0, 0), (1, mine.size() - 1)] {
            let tag = format!("oxmpi.test.inter.{k}");
            let rlead = if k == 0 { 0 } else { other.size() - 1 };
            let inter = must(
                "create_from_groups",
                universe.create_from_groups(&mine, lead, &other, rlead, &tag),
            );
            check!(
                inter.rank() == me / 2
                    && inter.size() == mine.size()
                    && inter.remote_size() == other.size()
                    && inter.remote_group().compare(&other) == Relation::Identical,
                "from groups: sizes"
            );
            let lr = inter.rank();
            if lr < inter.remote_size() {
                must("from groups send", inter.send(&[me][..], lr, 5));
                let mut x = [0i32];
                must("from groups recv", inter.receive_into(&mut x[..], lr, 5));
                check!(x[0] == 2 * lr + 1 - color, "from groups message {}", x[0]);
            }
            let mut s = [0i32];
            must(
                "from groups allreduce",
                inter.all_reduce_into(&[me][..], &mut s[..], Op::Sum),
            );
            check!(s[0] == sum_of(1 - color), "from groups allreduce {}", s[0]);
        }
        let iclass = |r: oxmpi::Result<oxmpi::InterCommunicator>| r.err().map(|e| e.class());
        check!(
            iclass(universe.create_from_groups(&mine, mine.size(), &other, 0, "x"))
                == Some(ErrorClass::Rank)
                && iclass(universe.create_from_groups(&mine, 0, &other, -1, "x"))
                    == Some(ErrorClass::Rank)
                && iclass(universe.create_from_groups(&mine, 0, &all, 0, "x"))
                    == Some(ErrorClass::Group)
                && iclass(universe.create_from_groups(&other, 0, &mine, 0, "x"))
                    == Some(ErrorClass::Group),
            "from groups: errors"
        );
    }
}

fn main() {
    let universe = oxmpi::init().expect("init");
    let world = universe.world();
    dup_and_attributes(&world);
    split_and_groups(&world);
    if world.size() >= 2 {
        intercomm(&world);
    }
    from_groups(&universe, &world);
    println!("rank {} coll_comm passed", world.rank());
    universe.finalize().expect("finalize");
}
