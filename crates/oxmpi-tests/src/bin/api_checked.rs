//! `bool` and `char` through the `*_checked` forms the typed forms cannot take, one mode per
//! argument; every received value is compared with a model computed from the senders'
//! values, every invalid raw value must give `ErrorClass::Type` with the receiver's buffer
//! unchanged, and every reduction undefined on the type `ErrorClass::Op` before anything is
//! sent:
//! - `coll`: the in-place, v/w, reduce-scatter(-block) and persistent exscan forms
//!   (nonblocking, persistent, and the blocking alltoallw);
//! - `neighbor`: the neighbourhood collectives (blocking, nonblocking, persistent) on a
//!   periodic ring;
//! - `inter`: the intercommunicator collectives (blocking and nonblocking) and receive
//!   between the even and the odd ranks;
//! - `p2p`: send-receive, send-receive-replace, the matched-probe receives and
//!   `receive_vec_checked`.
//!
//! Prints `api_checked MODE OK` per rank; exits non-zero on a failure.

use oxmpi::{
    Buffer, BufferMut, CheckedPersistent, CheckedRequest, Communicator, Element, ErrorClass,
    InterRoot, Op, Persistent, Status, ThreadLevel,
};
use oxmpi_tests::{check, must};

type Res<T> = oxmpi::Result<T>;

fn main() {
    let mode = std::env::args().nth(1).unwrap_or_default();
    let universe = oxmpi::init_with::<oxmpi::Multiple>().expect("init");
    let world = universe.world();
    check!(world.size() >= 2, "needs two ranks");
    match mode.as_str() {
        "coll" => coll(&world),
        "neighbor" => neighbor(&world),
        "inter" => inter(&world),
        "p2p" => p2p(&world),
        "process" => process(&world),
        _ => {
            eprintln!("unknown mode {mode:?}");
            std::process::exit(2)
        }
    }
    println!("api_checked {mode} OK");
    universe.finalize().expect("finalize");
}

fn fails<T: std::fmt::Debug>(what: &str, r: Res<T>, class: ErrorClass) -> String {
    match r {
        Err(e) if e.class() == class => e.message().to_string(),
        other => {
            eprintln!("MISMATCH {what}: expected {class:?}, got {other:?}");
            std::process::exit(1)
        }
    }
}

/// Waits for a started checked request.
fn waited<T: Element>(q: Res<CheckedRequest<'_, '_, T>>) -> Res<Status> {
    q?.wait()
}

/// Starts and waits for a checked persistent operation `n` (≥ 1) times.
fn rounds<T: Element>(q: Res<CheckedPersistent<'_, '_, T>>, n: usize) -> Res<Status> {
    let mut q = q?;
    q.start()?;
    let mut st = q.wait()?;
    for _ in 1..n {
        q.start()?;
        st = q.wait()?;
    }
    Ok(st)
}

/// As [`rounds`], for the forms that receive nothing (a plain persistent operation).
fn rounds_plain(q: Res<Persistent<'_, '_>>, n: usize) -> Res<Status> {
    let mut q = q?;
    let mut st = Status::proc_null();
    for _ in 0..n {
        q.start()?;
        st = q.wait()?;
    }
    Ok(st)
}

fn letter(i: i32) -> char {
    char::from(b'a' + i as u8)
}

/// A distinct character for the value `from` sends to `to`.
fn code(from: i32, to: i32) -> char {
    char::from_u32(0x100 + from as u32 * 16 + to as u32).expect("a char")
}

/// Element offsets of blocks of `counts`.
fn displs(counts: &[usize]) -> Vec<usize> {
    counts
        .iter()
        .scan(0, |off, &c| {
            let d = *off;
            *off += c;
            Some(d)
        })
        .collect()
}

fn coll<L: ThreadLevel>(w: &Communicator<L>) {
    let (r, p) = (w.rank(), w.size());
    let n = p as usize;
    let last = p - 1;
    let ranks = || 0..p;

    // In place: allgather, all-to-all, allreduce (nonblocking and persistent).
    let mut ag: Vec<char> = ranks()
        .map(|i| if i == r { letter(i) } else { '?' })
        .collect();
    let mut agb: Vec<bool> = ranks().map(|i| i == r && i % 2 == 0).collect();
    let mut a2a: Vec<char> = ranks().map(|j| code(r, j)).collect();
    let mut a2ab: Vec<bool> = ranks().map(|j| (2 * r + j) % 3 == 0).collect();
    let mut lor = [r == last, false];
    let mut hi = [letter((r * 2) % p)];
    oxmpi::scope(|s| {
        let q = w.immediate_all_gather_in_place_checked(s, &mut ag);
        must("iallgather in place", waited(q));
        let q = w.all_gather_in_place_init_checked(s, &mut agb);
        must("allgather in place init", rounds(q, 2));
        let q = w.immediate_all_to_all_in_place_checked(s, &mut a2a);
        must("ialltoall in place", waited(q));
        let q = w.all_to_all_in_place_init_checked(s, &mut a2ab);
        must("alltoall in place init", rounds(q, 1));
        let q = w.immediate_all_reduce_in_place_checked(s, &mut lor, Op::LogicalOr);
        must("iallreduce in place", waited(q));
        let q = w.all_reduce_in_place_init_checked(s, &mut hi, Op::Max);
        must("allreduce in place init", rounds(q, 2));
    });
    check!(
        ag == ranks().map(letter).collect::<Vec<_>>(),
        "iallgather in place {ag:?}"
    );
    let want: Vec<bool> = ranks().map(|i| i % 2 == 0).collect();
    check!(agb == want, "allgather in place init {agb:?}");
    check!(
        a2a == ranks().map(|j| code(j, r)).collect::<Vec<_>>(),
        "ialltoall in place {a2a:?}"
    );
    let want: Vec<bool> = ranks().map(|j| (2 * j + r) % 3 == 0).collect();
    check!(a2ab == want, "alltoall in place init {a2ab:?}");
    check!(lor == [true, false], "iallreduce in place LOR {lor:?}");
    let want = ranks().map(|q| letter((q * 2) % p)).max();
    check!(Some(hi[0]) == want, "allreduce in place init MAX {hi:?}");

    // In place: reduce-scatter, gather, scatter, reduce, scan, exscan.
    let counts: Vec<usize> = ranks().map(|i| 1 + i as usize % 2).collect();
    let offs = displs(&counts);
    let total: usize = counts.iter().sum();
    let input = |q: i32, k: usize| (k as i32 + q) % 3 != 0;
    let mut rs: Vec<bool> = (0..total).map(|k| input(r, k)).collect();
    let mut rs2: Vec<bool> = (0..total).map(|k| input(r, k)).collect();
    let mut gat = vec![false; if r == 0 { n } else { 0 }];
    if r == 0 {
        gat[0] = true;
    }
    let mut gat2 = vec!['?'; n];
    gat2[r as usize] = letter(r);
    let (mine_b, mine_c) = (r % 2 == 1, letter(r));
    let to_scatter: Vec<char> = ranks().map(|i| code(0, i)).collect();
    let to_scatter_b: Vec<bool> = ranks().map(|i| i % 2 == 1).collect();
    let (mut got_c, mut got_b) = ('?', false);
    let mut red = [letter(r)];
    let mut red_b = [r != last];
    let mut scan = [r == 1];
    let scan_f = |q: i32| letter((q * 5 + 2) % 7);
    let mut scan_c = [scan_f(r)];
    let mut ex = [r % 2 == 1];
    let mut ex_c = [scan_f(r)];
    let mut ex2 = ['-'];
    let none_c: &[char] = &[];
    let none_b: &[bool] = &[];
    let mut nowhere_b: Vec<bool> = Vec::new();
    let mut nowhere_c: Vec<char> = Vec::new();
    let (mut unused_c, mut unused_b, not_last) = (['?'], [false], r != last);
    oxmpi::scope(|s| {
        let q = w.immediate_reduce_scatter_in_place_checked(s, &mut rs, &counts, Op::LogicalAnd);
        must("ireduce_scatter in place", waited(q));
        let q = w.reduce_scatter_in_place_init_checked(s, &mut rs2, &counts, Op::LogicalOr);
        must("reduce_scatter in place init", rounds(q, 2));
        if r == 0 {
            let q = w.immediate_gather_in_place_checked(s, 0, &mut gat);
            must("igather in place", waited(q));
        } else {
            let q = w.immediate_gather_into_checked(s, 0, &mine_b, &mut nowhere_b);
            must("igather to in-place root", waited(q));
        }
        if r == last {
            let q = w.gather_in_place_init_checked(s, last, &mut gat2);
            must("gather in place init", rounds(q, 2));
        } else {
            let q = w.gather_init_checked(s, last, &mine_c, &mut nowhere_c);
            must("gather init to in-place root", rounds(q, 2));
        }
        if r == 0 {
            let q = w.immediate_scatter_in_place_checked(s, 0, &to_scatter);
            must("iscatter in place", q.and_then(|q| q.wait()));
        } else {
            let q = w.immediate_scatter_into_checked(s, 0, none_c, &mut got_c);
            must("iscatter from in-place root", waited(q));
        }
        if r == last {
            let q = w.scatter_in_place_init_checked(s, last, &to_scatter_b);
            must("scatter in place init", rounds_plain(q, 2));
        } else {
            let q = w.scatter_init_checked(s, last, none_b, &mut got_b);
            must("scatter init from in-place root", rounds(q, 2));
        }
        if r == 1 {
            let q = w.immediate_reduce_in_place_checked(s, 1, &mut red, Op::Min);
            must("ireduce in place", waited(q));
        } else {
            let q = w.immediate_reduce_into_checked(s, 1, &mine_c, &mut unused_c, Op::Min);
            must("ireduce to in-place root", waited(q));
        }
        if r == 0 {
            let q = w.reduce_in_place_init_checked(s, 0, &mut red_b, Op::LogicalAnd);
            must("reduce in place init", rounds(q, 1));
        } else {
            let q = w.reduce_init_checked(s, 0, &not_last, &mut unused_b, Op::LogicalAnd);
            must("reduce init to in-place root", rounds(q, 1));
        }
        let q = w.immediate_scan_in_place_checked(s, &mut scan, Op::LogicalOr);
        must("iscan in place", waited(q));
        let q = w.scan_in_place_init_checked(s, &mut scan_c, Op::Max);
        must("scan in place init", rounds(q, 2));
        let q = w.immediate_exclusive_scan_in_place_checked(s, &mut ex, Op::LogicalOr);
        must("iexscan in place", waited(q));
        let q = w.exclusive_scan_in_place_init_checked(s, &mut ex_c, Op::Max);
        must("exscan in place init", rounds(q, 1));
        let q = w.exclusive_scan_init_checked(s, &mine_c, &mut ex2, Op::Max);
        must("exscan init", rounds(q, 2));
    });
    let mine = offs[r as usize]..offs[r as usize] + counts[r as usize];
    for (i, k) in mine.clone().enumerate() {
        let all = ranks().all(|q| input(q, k));
        let any = ranks().any(|q| input(q, k));
        check!(rs[i] == all, "ireduce_scatter in place LAND [{i}] {rs:?}");
        check!(
            rs2[i] == any,
            "reduce_scatter in place init LOR [{i}] {rs2:?}"
        );
    }
    if r == 0 {
        let want: Vec<bool> = ranks().map(|i| i == 0 || i % 2 == 1).collect();
        check!(gat == want, "igather in place {gat:?}");
    }
    if r == last {
        check!(
            gat2 == ranks().map(letter).collect::<Vec<_>>(),
            "gather in place init {gat2:?}"
        );
    }
    if r != 0 {
        check!(got_c == code(0, r), "iscatter from in-place root {got_c:?}");
    }
    if r != last {
        check!(
            got_b == (r % 2 == 1),
            "scatter init from in-place root {got_b}"
        );
    }
    if r == 1 {
        check!(red == [letter(0)], "ireduce in place MIN {red:?}");
    }
    if r == 0 {
        check!(
            red_b == [ranks().all(|q| q != last)],
            "reduce in place init {red_b:?}"
        );
    }
    check!(scan == [r >= 1], "iscan in place LOR {scan:?}");
    check!(
        Some(scan_c[0]) == (0..=r).map(scan_f).max(),
        "scan in place init {scan_c:?}"
    );
    if r == 0 {
        check!(
            ex == [false] && ex_c == [scan_f(0)] && ex2 == ['-'],
            "exscan: rank 0 keeps"
        );
    } else {
        check!(
            ex == [(0..r).any(|q| q % 2 == 1)],
            "iexscan in place LOR {ex:?}"
        );
        check!(
            Some(ex_c[0]) == (0..r).map(scan_f).max(),
            "exscan in place init {ex_c:?}"
        );
        check!(ex2 == [letter(r - 1)], "exscan init MAX {ex2:?}");
    }

    // Reduce-scatter and reduce-scatter-block, nonblocking and persistent.
    let send: Vec<bool> = (0..total).map(|k| input(r, k)).collect();
    let sendc: Vec<char> = (0..total)
        .map(|k| letter((k as i32 * 3 + r) % 11))
        .collect();
    let (mut x, mut lo) = (
        vec![false; counts[r as usize]],
        vec!['?'; counts[r as usize]],
    );
    let blk =
        |q: i32, k: usize| char::from_u32(0x100 + ((k as u32 * 7 + q as u32 * 3) % 50)).unwrap();
    let sendb: Vec<char> = (0..2 * n).map(|k| blk(r, k)).collect();
    let sendbb: Vec<bool> = (0..2 * n).map(|k| input(r, k)).collect();
    let (mut bmax, mut band) = (['?'; 2], [false; 2]);
    oxmpi::scope(|s| {
        let q = w.immediate_reduce_scatter_into_checked(s, &send, &mut x, &counts, Op::LogicalXor);
        must("ireduce_scatter", waited(q));
        let q = w.reduce_scatter_init_checked(s, &sendc, &mut lo, &counts, Op::Min);
        must("reduce_scatter init", rounds(q, 2));
        let q = w.immediate_reduce_scatter_block_into_checked(s, &sendb, &mut bmax, Op::Max);
        must("ireduce_scatter_block", waited(q));
        let q = w.reduce_scatter_block_init_checked(s, &sendbb, &mut band, Op::LogicalAnd);
        must("reduce_scatter_block init", rounds(q, 2));
    });
    for (i, k) in mine.enumerate() {
        let xor = ranks().filter(|&q| input(q, k)).count() % 2 == 1;
        check!(x[i] == xor, "ireduce_scatter LXOR [{i}] {x:?}");
        let min = ranks().map(|q| letter((k as i32 * 3 + q) % 11)).min();
        check!(Some(lo[i]) == min, "reduce_scatter init MIN [{i}] {lo:?}");
    }
    for i in 0..2 {
        let k = 2 * r as usize + i;
        check!(
            Some(bmax[i]) == ranks().map(|q| blk(q, k)).max(),
            "ireduce_scatter_block {bmax:?}"
        );
        check!(
            band[i] == ranks().all(|q| input(q, k)),
            "reduce_scatter_block init {band:?}"
        );
    }

    // v/w forms.
    let vc: Vec<usize> = ranks().map(|i| i as usize + 1).collect();
    let vd = displs(&vc);
    let vtotal: usize = vc.iter().sum();
    let blocks_c: Vec<char> = ranks()
        .flat_map(|i| vec![letter(i); i as usize + 1])
        .collect();
    let blocks_b: Vec<bool> = ranks()
        .flat_map(|i| vec![i % 2 == 0; i as usize + 1])
        .collect();
    let (mine_vc, mine_vb) = (
        vec![letter(r); r as usize + 1],
        vec![r % 2 == 0; r as usize + 1],
    );
    let (mut agv, mut agvb) = (vec!['?'; vtotal], vec![false; vtotal]);
    let mut gv = vec!['?'; if r == last { vtotal } else { 0 }];
    let mut gvb = vec![false; if r == 0 { vtotal } else { 0 }];
    let sv: Vec<char> = ranks()
        .flat_map(|i| vec![code(0, i); i as usize + 1])
        .collect();
    let (mut svr, mut svrb) = (vec!['?'; r as usize + 1], vec![true; r as usize + 1]);
    let sc: Vec<usize> = ranks().map(|j| 1 + ((r + j) % 2) as usize).collect();
    let sd = displs(&sc);
    let a2v: Vec<char> = ranks()
        .flat_map(|j| vec![code(r, j); sc[j as usize]])
        .collect();
    let a2vb: Vec<bool> = ranks()
        .flat_map(|j| vec![(r + 2 * j) % 3 == 0; sc[j as usize]])
        .collect();
    let vlen: usize = sc.iter().sum();
    let (mut a2vr, mut a2vrb) = (vec!['?'; vlen], vec![false; vlen]);
    let wsend: Vec<char> = ranks().map(|j| code(r, j)).collect();
    let wblocks: Vec<(usize, usize)> = (0..n).map(|j| (4 * j, 4)).collect();
    let wsendb: Vec<bool> = ranks().map(|j| (2 * r + j) % 3 == 0).collect();
    let wblocksb: Vec<(usize, usize)> = (0..n).map(|j| (j, 1)).collect();
    let (mut wr, mut wr2, mut wrb) = (vec!['?'; n], vec!['?'; n], vec![false; n]);
    must(
        "alltoallw",
        w.all_to_all_w_into_checked(&wsend, &wblocks, &mut wr, &wblocks),
    );
    oxmpi::scope(|s| {
        let q = w.immediate_all_gather_varcount_into_checked(s, &mine_vc, &mut agv, &vc, &vd);
        must("iallgatherv", waited(q));
        let q = w.all_gather_varcount_init_checked(s, &mine_vb, &mut agvb, &vc, &vd);
        must("allgatherv init", rounds(q, 2));
        let q = w.immediate_gather_varcount_into_checked(s, last, &mine_vc, &mut gv, &vc, &vd);
        must("igatherv", waited(q));
        let q = w.gather_varcount_init_checked(s, 0, &mine_vb, &mut gvb, &vc, &vd);
        must("gatherv init", rounds(q, 2));
        let root_send: &[char] = if r == 0 { &sv } else { &[] };
        let q = w.immediate_scatter_varcount_into_checked(s, 0, root_send, &vc, &vd, &mut svr);
        must("iscatterv", waited(q));
        let root_send: &[bool] = if r == last { &blocks_b } else { &[] };
        let q = w.scatter_varcount_init_checked(s, last, root_send, &vc, &vd, &mut svrb);
        must("scatterv init", rounds(q, 2));
        let q =
            w.immediate_all_to_all_varcount_into_checked(s, &a2v, &sc, &sd, &mut a2vr, &sc, &sd);
        must("ialltoallv", waited(q));
        let q = w.all_to_all_varcount_init_checked(s, &a2vb, &sc, &sd, &mut a2vrb, &sc, &sd);
        must("alltoallv init", rounds(q, 2));
        let q = w.immediate_all_to_all_w_into_checked(s, &wsend, &wblocks, &mut wr2, &wblocks);
        must("ialltoallw", waited(q));
        let q = w.all_to_all_w_init_checked(s, &wsendb, &wblocksb, &mut wrb, &wblocksb);
        must("alltoallw init", rounds(q, 2));
    });
    check!(agv == blocks_c, "iallgatherv {agv:?}");
    check!(agvb == blocks_b, "allgatherv init {agvb:?}");
    if r == last {
        check!(gv == blocks_c, "igatherv {gv:?}");
    }
    if r == 0 {
        check!(gvb == blocks_b, "gatherv init {gvb:?}");
    }
    check!(svr == vec![code(0, r); r as usize + 1], "iscatterv {svr:?}");
    check!(
        svrb == vec![r % 2 == 0; r as usize + 1],
        "scatterv init {svrb:?}"
    );
    let want: Vec<char> = ranks()
        .flat_map(|j| vec![code(j, r); sc[j as usize]])
        .collect();
    check!(a2vr == want, "ialltoallv {a2vr:?}");
    let want: Vec<bool> = ranks()
        .flat_map(|j| vec![(j + 2 * r) % 3 == 0; sc[j as usize]])
        .collect();
    check!(a2vrb == want, "alltoallv init {a2vrb:?}");
    let want: Vec<char> = ranks().map(|j| code(j, r)).collect();
    check!(wr == want && wr2 == want, "alltoallw {wr:?} {wr2:?}");
    let want: Vec<bool> = ranks().map(|j| (2 * j + r) % 3 == 0).collect();
    check!(wrb == want, "alltoallw init {wrb:?}");

    // Invalid values from the last rank, which uses the unchecked forms on raw values: the
    // other ranks get a Type error and keep their buffers.
    let mut agi = vec!['k'; n];
    let mut agi_raw = vec![0x41u32; n];
    agi_raw[last as usize] = 0xD800;
    let mut agvi = vec![true; vtotal];
    let bad_v = vec![2u8; r as usize + 1];
    let mut agvi_raw = vec![0u8; vtotal];
    let mut wi = vec!['w'; n];
    let wbad = vec![0x11_0000u32; n];
    let mut wi_raw = vec![0u32; n];
    let mut rsb = ['r'; 2];
    let rsb_raw: Vec<u32> = vec![0xDFFF; 2 * n];
    let mut rsb_raw_out = [0u32; 2];
    let mut scan_i = ['s'];
    let mut scan_raw = [0xD800u32];
    if r == last {
        must(
            "alltoallw raw",
            w.all_to_all_w_into(bytes(&wbad), &wblocks, bytes_mut(&mut wi_raw), &wblocks),
        );
    } else {
        let e = w.all_to_all_w_into_checked(&wsend, &wblocks, &mut wi, &wblocks);
        fails("alltoallw invalid", e, ErrorClass::Type);
    }
    oxmpi::scope(|s| {
        if r == last {
            let q = w.immediate_all_gather_in_place(s, &mut agi_raw);
            must("iallgather in place raw", q.and_then(|q| q.wait()));
            let q = w.all_gather_varcount_init(s, &bad_v, &mut agvi_raw, &vc, &vd);
            must("allgatherv init raw", rounds_plain(q, 1));
            let q = w.immediate_reduce_scatter_block_into(s, &rsb_raw, &mut rsb_raw_out, Op::Max);
            must("ireduce_scatter_block raw", q.and_then(|q| q.wait()));
        } else {
            let q = w.immediate_all_gather_in_place_checked(s, &mut agi);
            let m = fails("iallgather in place invalid", waited(q), ErrorClass::Type);
            check!(m.contains(&format!("element {last}")), "message: {m}");
            let q = w.all_gather_varcount_init_checked(s, &mine_vb, &mut agvi, &vc, &vd);
            fails("allgatherv init invalid", rounds(q, 1), ErrorClass::Type);
            let q = w.immediate_reduce_scatter_block_into_checked(s, &sendb, &mut rsb, Op::Max);
            fails("ireduce_scatter_block invalid", waited(q), ErrorClass::Type);
        }
        if r == 0 {
            let q = w.immediate_scan_in_place(s, &mut scan_raw, Op::Max);
            must("iscan in place raw", q.and_then(|q| q.wait()));
        } else {
            let q = w.immediate_scan_in_place_checked(s, &mut scan_i, Op::Max);
            fails("iscan in place invalid", waited(q), ErrorClass::Type);
        }
    });
    if r != last {
        check!(agi == vec!['k'; n], "left unchanged {agi:?}");
        check!(agvi == vec![true; vtotal], "left unchanged {agvi:?}");
        check!(wi == vec!['w'; n], "left unchanged {wi:?}");
        check!(rsb == ['r'; 2], "left unchanged {rsb:?}");
    }
    if r != 0 {
        check!(scan_i == ['s'], "left unchanged {scan_i:?}");
    }

    // Reductions undefined on the type: refused before anything is sent.
    let (mut b1, mut c1) = ([true; 2], ['c'; 2]);
    let mut b2 = vec![false; total];
    let (mut c2, mut c3, mut b3) = (['d'], ['e'], false);
    oxmpi::scope(|s| {
        let q = w.immediate_reduce_scatter_into_checked(
            s,
            &send,
            &mut b1[..counts[r as usize]],
            &counts,
            Op::Sum,
        );
        fails("ireduce_scatter SUM on bool", q.map(drop), ErrorClass::Op);
        let q = w.reduce_scatter_block_init_checked(s, &sendb, &mut c1, Op::LogicalAnd);
        fails(
            "reduce_scatter_block init LAND on char",
            q.map(drop),
            ErrorClass::Op,
        );
        let q = w.immediate_all_reduce_in_place_checked(s, &mut c2, Op::LogicalXor);
        fails(
            "iallreduce in place LXOR on char",
            q.map(drop),
            ErrorClass::Op,
        );
        let q = w.exclusive_scan_init_checked(s, &true, &mut b3, Op::Prod);
        fails("exscan init PROD on bool", q.map(drop), ErrorClass::Op);
        let q = w.reduce_scatter_in_place_init_checked(s, &mut b2, &counts, Op::BitwiseOr);
        fails(
            "reduce_scatter in place init BOR on bool",
            q.map(drop),
            ErrorClass::Op,
        );
        let q = w.immediate_reduce_in_place_checked(s, 0, &mut c3, Op::Sum);
        fails("ireduce in place SUM on char", q.map(drop), ErrorClass::Op);
    });
    check!(
        b1 == [true; 2] && c1 == ['c'; 2],
        "refused ops wrote nothing"
    );
    check!(
        c2 == ['d'] && b2 == vec![false; total],
        "refused ops wrote nothing"
    );
    check!(c3 == ['e'] && !b3, "refused ops wrote nothing");
}

/// The bytes of raw values (alltoallw's byte blocks).
fn bytes(v: &[u32]) -> &[u8] {
    Buffer::bytes(v)
}

fn bytes_mut(v: &mut [u32]) -> &mut [u8] {
    BufferMut::bytes_mut(v)
}

fn neighbor<L: ThreadLevel>(w: &Communicator<L>) {
    let p = w.size();
    let ring = must(
        "cart",
        w.create_cartesian_communicator(&[p], &[true], false),
    );
    let ring = ring.expect("every rank is on the ring");
    let r = ring.rank();
    let (left, right) = ((r + p - 1) % p, (r + 1) % p);

    // Allgather: one value to both neighbours; v: 1 or 2 values by the sender's parity.
    let mine = [letter(r)];
    let mine_b = [r % 2 == 0];
    let want = [letter(left), letter(right)];
    let want_b = [left % 2 == 0, right % 2 == 0];
    let (mut g1, mut g2, mut g3) = (['?'; 2], [false; 2], ['?'; 2]);
    let vmine = vec![letter(r); 1 + r as usize % 2];
    let vc = [1 + left as usize % 2, 1 + right as usize % 2];
    let vd = displs(&vc);
    let vwant: Vec<char> = [(left, vc[0]), (right, vc[1])]
        .iter()
        .flat_map(|&(q, c)| vec![letter(q); c])
        .collect();
    let (mut v1, mut v2, mut v3) = (
        vec!['?'; vc[0] + vc[1]],
        vec!['?'; vc[0] + vc[1]],
        vec!['?'; vc[0] + vc[1]],
    );
    // All-to-all: block 0 to the left, block 1 to the right.
    let a2a = [code(r, 0), code(r, 1)];
    let a2a_want = [code(left, 1), code(right, 0)];
    let (mut t1, mut t2, mut t3) = (['?'; 2], ['?'; 2], ['?'; 2]);
    // v: one value to the left, two to the right.
    let a2v = [code(r, 0), code(r, 1), code(r, 2)];
    let (sc, sd, rc, rd) = ([1, 2], [0, 1], [2, 1], [0, 2]);
    let a2v_want = [code(left, 1), code(left, 2), code(right, 0)];
    let (mut u1, mut u2, mut u3) = (['?'; 3], ['?'; 3], ['?'; 3]);
    // w: the all-to-all in byte blocks.
    let wb = [(0, 4), (4, 4)];
    let (mut x1, mut x2, mut x3) = (['?'; 2], ['?'; 2], ['?'; 2]);
    must(
        "neighbor allgather",
        ring.neighbor_all_gather_into_checked(&mine, &mut g1),
    );
    must(
        "neighbor allgatherv",
        ring.neighbor_all_gather_varcount_into_checked(&vmine, &mut v1, &vc, &vd),
    );
    must(
        "neighbor alltoall",
        ring.neighbor_all_to_all_into_checked(&a2a, &mut t1),
    );
    must(
        "neighbor alltoallv",
        ring.neighbor_all_to_all_varcount_into_checked(&a2v, &sc, &sd, &mut u1, &rc, &rd),
    );
    must(
        "neighbor alltoallw",
        ring.neighbor_all_to_all_w_into_checked(&a2a, &wb, &mut x1, &wb),
    );
    oxmpi::scope(|s| {
        let q = ring.immediate_neighbor_all_gather_into_checked(s, &mine_b, &mut g2);
        must("ineighbor allgather", waited(q));
        let q = ring.neighbor_all_gather_init_checked(s, &mine, &mut g3);
        must("neighbor allgather init", rounds(q, 2));
        let q =
            ring.immediate_neighbor_all_gather_varcount_into_checked(s, &vmine, &mut v2, &vc, &vd);
        must("ineighbor allgatherv", waited(q));
        let q = ring.neighbor_all_gather_varcount_init_checked(s, &vmine, &mut v3, &vc, &vd);
        must("neighbor allgatherv init", rounds(q, 2));
        let q = ring.immediate_neighbor_all_to_all_into_checked(s, &a2a, &mut t2);
        must("ineighbor alltoall", waited(q));
        let q = ring.neighbor_all_to_all_init_checked(s, &a2a, &mut t3);
        must("neighbor alltoall init", rounds(q, 2));
        let q = ring.immediate_neighbor_all_to_all_varcount_into_checked(
            s, &a2v, &sc, &sd, &mut u2, &rc, &rd,
        );
        must("ineighbor alltoallv", waited(q));
        let q =
            ring.neighbor_all_to_all_varcount_init_checked(s, &a2v, &sc, &sd, &mut u3, &rc, &rd);
        must("neighbor alltoallv init", rounds(q, 2));
        let q = ring.immediate_neighbor_all_to_all_w_into_checked(s, &a2a, &wb, &mut x2, &wb);
        must("ineighbor alltoallw", waited(q));
        let q = ring.neighbor_all_to_all_w_init_checked(s, &a2a, &wb, &mut x3, &wb);
        must("neighbor alltoallw init", rounds(q, 2));
    });
    check!(
        g1 == want && g3 == want && g2 == want_b,
        "neighbor allgather {g1:?} {g2:?} {g3:?}"
    );
    check!(
        v1 == vwant && v2 == vwant && v3 == vwant,
        "neighbor allgatherv {v1:?} {v2:?} {v3:?}"
    );
    check!(
        t1 == a2a_want && t2 == a2a_want && t3 == a2a_want,
        "neighbor alltoall {t1:?} {t2:?} {t3:?}"
    );
    check!(
        u1 == a2v_want && u2 == a2v_want && u3 == a2v_want,
        "neighbor alltoallv {u1:?} {u2:?} {u3:?}"
    );
    check!(
        x1 == a2a_want && x2 == a2a_want && x3 == a2a_want,
        "neighbor alltoallw {x1:?} {x2:?} {x3:?}"
    );

    // Rank 0 sends raw values that are no char: both its neighbours get a Type error.
    let bad = [0xD800u32];
    let mut raw = [0u32; 2];
    let mut keep = ['k'; 2];
    let mut keep2 = ['k'; 2];
    let bad2 = [0x11_0000u32; 2];
    let mut raw2 = [0u32; 2];
    // Ranks not next to rank 0 (from np 4 on) receive valid values.
    let hit = left == 0 || right == 0;
    if r == 0 {
        must(
            "neighbor allgather raw",
            ring.neighbor_all_gather_into(&bad, &mut raw),
        );
    } else {
        let e = ring.neighbor_all_gather_into_checked(&mine, &mut keep);
        if hit {
            fails("neighbor allgather invalid", e, ErrorClass::Type);
        } else {
            must("neighbor allgather off rank 0", e);
        }
    }
    oxmpi::scope(|s| {
        if r == 0 {
            let q = ring.immediate_neighbor_all_to_all_w_into(
                s,
                bytes(&bad2),
                &wb,
                bytes_mut(&mut raw2),
                &wb,
            );
            must("ineighbor alltoallw raw", q.and_then(|q| q.wait()));
        } else {
            let q =
                ring.immediate_neighbor_all_to_all_w_into_checked(s, &a2a, &wb, &mut keep2, &wb);
            if hit {
                fails("ineighbor alltoallw invalid", waited(q), ErrorClass::Type);
            } else {
                must("ineighbor alltoallw off rank 0", waited(q));
            }
        }
    });
    if r != 0 && hit {
        check!(
            keep == ['k'; 2] && keep2 == ['k'; 2],
            "left unchanged {keep:?} {keep2:?}"
        );
    } else if r != 0 {
        check!(
            keep == want && keep2 == a2a_want,
            "off rank 0 {keep:?} {keep2:?}"
        );
    }
}

fn inter<L: ThreadLevel>(w: &Communicator<L>) {
    let me = w.rank();
    let color = me % 2;
    let local = must("split", w.split(color, me)).expect("member");
    let inter = must("intercomm", local.create_intercomm(0, w, 1 - color, 77));
    let rsize = inter.remote_size();
    // World rank of remote rank i.
    let remote = |i: i32| 2 * i + (1 - color);
    let rq = || (0..rsize).map(remote);
    let (mine, mine_b) = ([letter(me)], [me % 3 == 0]);
    let (mut ag1, mut ag2) = (vec!['?'; rsize as usize], vec![false; rsize as usize]);
    let (mut ar1, mut ar2) = (['?'], [false]);
    let a2a: Vec<char> = rq().map(|j| code(me, j)).collect();
    let a2a_b: Vec<bool> = rq().map(|j| (me + 2 * j) % 3 == 0).collect();
    let (mut t1, mut t2) = (vec!['?'; rsize as usize], vec![false; rsize as usize]);
    // Broadcast and gather to world rank 0 (the evens' root), reduce and scatter from world
    // rank 1 (the odds' root).
    let root_at = |root_world: i32| {
        if color == root_world % 2 {
            if me == root_world {
                InterRoot::Root
            } else {
                InterRoot::Null
            }
        } else {
            InterRoot::Remote(0)
        }
    };
    let (r0, r1) = (root_at(0), root_at(1));
    let mut bc = if me == 0 { ['x', 'y'] } else { ['?'; 2] };
    let mut bcb = if me == 0 {
        [true, false]
    } else {
        [false, true]
    };
    let (mut rd, mut rdb) = (['?'], [false]);
    let gsize = if me == 0 { rsize as usize } else { 0 };
    let (mut gt, mut gtb) = (vec!['?'; gsize], vec![false; gsize]);
    let sc: Vec<char> = if me == 1 {
        rq().map(|j| code(1, j)).collect()
    } else {
        vec![]
    };
    let scb: Vec<bool> = if me == 1 {
        rq().map(|j| j % 4 == 0).collect()
    } else {
        vec![]
    };
    let (mut st1, mut st2) = (['?'], [true]);
    must(
        "inter allgather",
        inter.all_gather_into_checked(&mine, &mut ag1),
    );
    must(
        "inter allreduce",
        inter.all_reduce_into_checked(&mine, &mut ar1, Op::Max),
    );
    must(
        "inter alltoall",
        inter.all_to_all_into_checked(&a2a, &mut t1),
    );
    must("inter bcast", inter.broadcast_into_checked(r0, &mut bc));
    must(
        "inter reduce",
        inter.reduce_into_checked(r1, &mine, &mut rd, Op::Min),
    );
    must(
        "inter gather",
        inter.gather_into_checked(r0, &mine, &mut gt),
    );
    must(
        "inter scatter",
        inter.scatter_into_checked(r1, &sc, &mut st1),
    );
    oxmpi::scope(|s| {
        let q = inter.immediate_all_gather_into_checked(s, &mine_b, &mut ag2);
        must("inter iallgather", waited(q));
        let q = inter.immediate_all_reduce_into_checked(s, &mine_b, &mut ar2, Op::LogicalOr);
        must("inter iallreduce", waited(q));
        let q = inter.immediate_all_to_all_into_checked(s, &a2a_b, &mut t2);
        must("inter ialltoall", waited(q));
        let q = inter.immediate_broadcast_into_checked(s, r0, &mut bcb);
        must("inter ibcast", waited(q));
        let q = inter.immediate_reduce_into_checked(s, r1, &mine_b, &mut rdb, Op::LogicalAnd);
        must("inter ireduce", waited(q));
        let q = inter.immediate_gather_into_checked(s, r0, &mine_b, &mut gtb);
        must("inter igather", waited(q));
        let q = inter.immediate_scatter_into_checked(s, r1, &scb, &mut st2);
        must("inter iscatter", waited(q));
    });
    check!(
        ag1 == rq().map(letter).collect::<Vec<_>>(),
        "inter allgather {ag1:?}"
    );
    check!(
        ag2 == rq().map(|q| q % 3 == 0).collect::<Vec<_>>(),
        "inter iallgather {ag2:?}"
    );
    check!(
        Some(ar1[0]) == rq().map(letter).max(),
        "inter allreduce {ar1:?}"
    );
    check!(
        ar2[0] == rq().any(|q| q % 3 == 0),
        "inter iallreduce {ar2:?}"
    );
    check!(
        t1 == rq().map(|j| code(j, me)).collect::<Vec<_>>(),
        "inter alltoall {t1:?}"
    );
    let want: Vec<bool> = rq().map(|j| (j + 2 * me) % 3 == 0).collect();
    check!(t2 == want, "inter ialltoall {t2:?}");
    if color == 1 {
        check!(
            bc == ['x', 'y'] && bcb == [true, false],
            "inter bcast {bc:?} {bcb:?}"
        );
    } else {
        check!(
            st1 == [code(1, me)] && st2 == [me % 4 == 0],
            "inter scatter {st1:?} {st2:?}"
        );
    }
    if me == 1 {
        check!(Some(rd[0]) == rq().map(letter).min(), "inter reduce {rd:?}");
        check!(rdb[0] == rq().all(|q| q % 3 == 0), "inter ireduce {rdb:?}");
    }
    if me == 0 {
        check!(
            gt == rq().map(letter).collect::<Vec<_>>(),
            "inter gather {gt:?}"
        );
        check!(
            gtb == rq().map(|q| q % 3 == 0).collect::<Vec<_>>(),
            "inter igather {gtb:?}"
        );
    }

    // The odd ranks send raw values that are no bool; the even ranks get a Type error.
    let mut keep = vec![true; rsize as usize];
    let mut raw = vec![0u8; rsize as usize];
    let (mut keep_c, mut raw_c) = (['k'], [0u32]);
    if color == 1 {
        must(
            "inter allgather raw",
            inter.all_gather_into(&[7u8], &mut raw),
        );
    } else {
        let e = inter.all_gather_into_checked(&mine_b, &mut keep);
        fails("inter allgather invalid", e, ErrorClass::Type);
        check!(
            keep == vec![true; rsize as usize],
            "left unchanged {keep:?}"
        );
    }
    oxmpi::scope(|s| {
        if color == 1 {
            let q = inter.immediate_all_reduce_into(s, &[0xDFFFu32], &mut raw_c, Op::Max);
            must("inter iallreduce raw", q.and_then(|q| q.wait()));
        } else {
            let q = inter.immediate_all_reduce_into_checked(s, &mine, &mut keep_c, Op::Max);
            fails("inter iallreduce invalid", waited(q), ErrorClass::Type);
        }
    });
    if color == 0 {
        check!(keep_c == ['k'], "left unchanged {keep_c:?}");
    }
    // Point-to-point across the groups: world rank 0 sends to world rank 1 (remote rank 0
    // of each other) valid bools, then a byte that is no bool.
    if me == 0 {
        must("inter send", inter.send(&[true, false][..], 0, 1));
        must("inter send raw", inter.send(&[1u8, 5][..], 0, 2));
    } else if me == 1 {
        let mut got = [false; 3];
        let st = must("inter receive", inter.receive_into_checked(&mut got, 0, 1));
        check!(
            got == [true, false, false] && st.count() == Some(2),
            "inter receive {got:?}"
        );
        let mut keep = [false; 2];
        let e = inter.receive_into_checked(&mut keep, 0, 2);
        let m = fails("inter receive invalid", e, ErrorClass::Type);
        check!(
            m.contains("element 1") && keep == [false; 2],
            "{m}: {keep:?}"
        );
    }
    // Reductions undefined on the type, on every process: refused before anything is sent.
    let mut b = [false];
    let e = inter.all_reduce_into_checked(&[true], &mut b, Op::Sum);
    fails("inter allreduce SUM on bool", e, ErrorClass::Op);
    oxmpi::scope(|s| {
        let q = inter.immediate_reduce_into_checked(s, r1, &mine, &mut keep_c, Op::LogicalOr);
        fails("inter ireduce LOR on char", q.map(drop), ErrorClass::Op);
    });
    check!(b == [false], "refused op wrote nothing");
}

fn p2p<L: ThreadLevel>(w: &Communicator<L>) {
    let r = w.rank();
    if r > 1 {
        return;
    }
    let peer = 1 - r;
    // Send-receive: valid values both ways, then an invalid one to rank 0.
    let flags = [r == 0, true, r == 1];
    let mut got = [false; 4];
    let st = must(
        "sendrecv",
        w.send_receive_into_checked(&flags[..], peer, 1, &mut got, peer, 1),
    );
    check!(st.count() == Some(3), "sendrecv count {:?}", st.count());
    check!(
        got == [peer == 0, true, peer == 1, false],
        "sendrecv {got:?}"
    );
    let mut keep = [true, true];
    if r == 0 {
        let e = w.send_receive_into_checked(&flags[..], peer, 2, &mut keep, peer, 2);
        let m = fails("sendrecv invalid", e, ErrorClass::Type);
        check!(m.contains("element 1"), "message: {m}");
        check!(keep == [true, true], "left unchanged {keep:?}");
    } else {
        let mut raw = [0u8; 3];
        must(
            "sendrecv raw",
            w.send_receive_into(&[1u8, 9][..], peer, 2, &mut raw[..], peer, 2),
        );
    }
    // Send-receive-replace: the two ranks swap; then rank 0 gets a surrogate.
    let mut text = if r == 0 { ['a', 'b'] } else { ['y', 'z'] };
    must(
        "sendrecv_replace",
        w.send_receive_replace_into_checked(&mut text, peer, 3, peer, 3),
    );
    check!(
        text == if r == 0 { ['y', 'z'] } else { ['a', 'b'] },
        "replace {text:?}"
    );
    if r == 0 {
        let e = w.send_receive_replace_into_checked(&mut text, peer, 4, peer, 4);
        fails("sendrecv_replace invalid", e, ErrorClass::Type);
        check!(text == ['y', 'z'], "keeps what was sent {text:?}");
    } else {
        let mut raw = [0x41u32, 0xD800];
        must(
            "sendrecv_replace raw",
            w.send_receive_replace_into(&mut raw[..], peer, 4, peer, 4),
        );
    }
    // Matched-probe receives and receive_vec: rank 0 sends, rank 1 receives.
    if r == 0 {
        must("send bools", w.send(&[true, false][..], 1, 5));
        must("send chars", w.send(&['ä', '😀'][..], 1, 6));
        must("send raw u8", w.send(&[0u8, 1, 2][..], 1, 7));
        must("send raw u32", w.send(&[0x11_0000u32][..], 1, 8));
        must("send bools", w.send(&[false, true, true][..], 1, 9));
        must("send chars", w.send(&['q'; 5][..], 1, 10));
        must("send raw u8", w.send(&[3u8][..], 1, 11));
        must("send raw u32", w.send(&[0xDC00u32, 0x41][..], 1, 12));
        return;
    }
    let mut b = [false; 3];
    let (msg, _) = must("mprobe", w.matched_probe::<u8>(0, 5));
    let st = must("mrecv", msg.matched_receive_into_checked(&mut b));
    check!(
        st.count() == Some(2) && b == [true, false, false],
        "mrecv {b:?}"
    );
    let mut c = ['-'; 2];
    let mut keep_b = [true; 3];
    let mut keep_c = ['k'];
    oxmpi::scope(|s| {
        let (msg, _) = must("mprobe", w.matched_probe::<u32>(0, 6));
        let q = msg.immediate_matched_receive_into_checked(s, &mut c);
        must("imrecv", waited(q));
        let (msg, _) = must("mprobe", w.matched_probe::<u8>(0, 7));
        let e = msg.matched_receive_into_checked(&mut keep_b);
        let m = fails("mrecv invalid", e, ErrorClass::Type);
        check!(m.contains("element 2"), "message: {m}");
        let (msg, _) = must("mprobe", w.matched_probe::<u32>(0, 8));
        let q = msg.immediate_matched_receive_into_checked(s, &mut keep_c);
        fails("imrecv invalid", waited(q), ErrorClass::Type);
    });
    check!(c == ['ä', '😀'], "imrecv {c:?}");
    check!(
        keep_b == [true; 3] && keep_c == ['k'],
        "left unchanged {keep_b:?} {keep_c:?}"
    );
    let (msg, _) = must("mprobe", w.matched_probe::<u8>(0, 9));
    let (v, _) = must("mrecv vec", msg.matched_receive_vec_checked::<bool>());
    check!(v == [false, true, true], "mrecv vec {v:?}");
    let (v, st) = must("receive_vec", w.receive_vec_checked::<char>(0, 10));
    check!(v == ['q'; 5] && st.count() == Some(5), "receive_vec {v:?}");
    let e = w.receive_vec_checked::<bool>(0, 11);
    fails("receive_vec invalid", e, ErrorClass::Type);
    let e = w.receive_vec_checked::<char>(0, 12);
    fails("receive_vec invalid char", e, ErrorClass::Type);
}

/// The process handles' checked receives: rank 0 sends valid and invalid values, rank 1
/// receives through `process_at_rank(0)` and `any_process()`.
fn process<L: ThreadLevel>(w: &Communicator<L>) {
    let r = w.rank();
    if r > 1 {
        return;
    }
    if r == 0 {
        let p = w.process_at_rank(1);
        must("one bool", p.send(&[true][..]));
        must("bools", p.send(&[false, true, true][..]));
        must("chars", p.send(&['x', 'ß'][..]));
        must("immediate chars", p.send(&['7'; 3][..]));
        must("raw u8", p.send(&[2u8][..]));
        must("raw u8s", p.send(&[1u8, 0, 5][..]));
        must("raw u32", p.send(&[0xD800u32][..]));
        must("raw u32s", p.send(&[0x41u32, 0x11_0000][..]));
        return;
    }
    let from0 = w.process_at_rank(0);
    let any = w.any_process();
    let (b, st) = must("receive_checked", from0.receive_checked::<bool>());
    check!(b && st.source() == 0, "one bool {b} from {}", st.source());
    let mut bools = [true; 4];
    let st = must("receive_into_checked", any.receive_into_checked(&mut bools));
    check!(st.count() == Some(3), "count {:?}", st.count());
    check!(bools == [false, true, true, true], "bools {bools:?}");
    let (chars, _) = must("receive_vec_checked", from0.receive_vec_checked::<char>());
    check!(chars == ['x', 'ß'], "chars {chars:?}");
    let mut three = ['-'; 3];
    let st = must(
        "immediate_receive_into_checked",
        oxmpi::scope(|s| any.immediate_receive_into_checked(s, &mut three)?.wait()),
    );
    check!(st.count() == Some(3), "immediate count {:?}", st.count());
    check!(three == ['7'; 3], "immediate {three:?}");
    // Invalid values: Type errors, buffers unchanged.
    fails(
        "receive_checked invalid",
        from0.receive_checked::<bool>(),
        ErrorClass::Type,
    );
    let mut keep = [true; 3];
    fails(
        "receive_into_checked invalid",
        any.receive_into_checked(&mut keep),
        ErrorClass::Type,
    );
    check!(keep == [true; 3], "left unchanged {keep:?}");
    fails(
        "receive_vec_checked invalid",
        any.receive_vec_checked::<char>(),
        ErrorClass::Type,
    );
    let mut ck = ['k'; 2];
    let r = oxmpi::scope(|s| from0.immediate_receive_into_checked(s, &mut ck)?.wait());
    fails("immediate invalid", r, ErrorClass::Type);
    check!(ck == ['k'; 2], "immediate left unchanged {ck:?}");
}
