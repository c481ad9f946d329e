//! Collectives over any buffer shape and over `bool`/`char`, one mode per argument:
//! - `values`: single values, arrays, slices and vectors in broadcast, reduce, allreduce,
//!   gather/scatter (root and not), allgather, alltoall, scan, exscan, reduce-scatter and the
//!   in-place forms; every element checked.
//! - `checked`: `bool` and `char` in broadcast, gather, scatter, allgather, alltoall, and the
//!   reductions MPI defines on them (LAND/LOR/LXOR on `bool`, MIN/MAX on `char`).
//! - `invalid`: raw values that are no `bool`/`char` reach a checked buffer (an
//!   `ErrorClass::Type` error, the buffer left unchanged, the other ranks unaffected), and
//!   reductions not defined on them (`ErrorClass::Op`, before anything is sent).
//! - `nonblocking`: `bool` and `char` in immediate and persistent sends and receives and
//!   in nonblocking and persistent broadcast, allgather and allreduce (`*_checked`), each
//!   also with an invalid raw value arriving (`ErrorClass::Type`, buffer unchanged) and a
//!   reduction not defined on the type (`ErrorClass::Op`).
//! - `single`: at `Single`, a request cannot become `Send` (`ErrorClass::Other`).
//!
//! Prints `api_coll MODE OK` per rank; exits non-zero on a failure.

use oxmpi::{Communicator, ErrorClass, Op, ThreadLevel};
use oxmpi_tests::{check, must};

fn main() {
    let mode = std::env::args().nth(1).unwrap_or_default();
    if mode == "single" {
        let universe = oxmpi::init().expect("init");
        single(&universe.world());
        println!("api_coll {mode} OK");
        universe.finalize().expect("finalize");
        return;
    }
    let universe = oxmpi::init_with::<oxmpi::Multiple>().expect("init");
    let world = universe.world();
    check!(world.size() >= 2, "needs two ranks");
    match mode.as_str() {
        "values" => values(&world),
        "checked" => checked(&world),
        "invalid" => invalid(&world),
        "nonblocking" => nonblocking(&world),
        _ => {
            eprintln!("unknown mode {mode:?}");
            std::process::exit(2)
        }
    }
    println!("api_coll {mode} OK");
    universe.finalize().expect("finalize");
}

fn values<L: ThreadLevel>(w: &Communicator<L>) {
    let (r, p) = (w.rank(), w.size());
    let (ri, pi) = (r as i64, p as i64);
    let tri = |n: i64| n * (n + 1) / 2;

    // Broadcast: one value, an array, a vector.
    let mut x = if r == 0 { 42.5f64 } else { 0.0 };
    must("bcast value", w.broadcast_into(0, &mut x));
    check!(x == 42.5, "bcast value: {x}");
    let root = p - 1;
    let mut a = if r == root { [7u16, 8, 9] } else { [0; 3] };
    must("bcast array", w.broadcast_into(root, &mut a));
    check!(a == [7, 8, 9], "bcast array: {a:?}");
    let mut v = vec![if r == 0 { 5u8 } else { 0 }; 5];
    must("bcast vec", w.process_at_rank(0).broadcast_into(&mut v));
    check!(v == [5; 5], "bcast vec: {v:?}");

    // Reductions with single values.
    let mut sum = 0i64;
    must(
        "allreduce value",
        w.all_reduce_into(&(ri + 1), &mut sum, Op::Sum),
    );
    check!(sum == tri(pi), "allreduce value: {sum}");
    let mut m = [0i32; 2];
    must(
        "allreduce array",
        w.all_reduce_into(&[r, -r], &mut m, Op::Max),
    );
    check!(m == [p - 1, 0], "allreduce array: {m:?}");
    let mut inplace = ri + 10;
    must(
        "allreduce in place",
        w.all_reduce_in_place(&mut inplace, Op::Sum),
    );
    check!(inplace == tri(pi - 1) + 10 * pi, "in place: {inplace}");
    for root in 0..p {
        let mut got = -1i64;
        must("reduce value", w.reduce_into(root, &ri, &mut got, Op::Sum));
        let want = if r == root { tri(pi - 1) } else { -1 };
        check!(got == want, "reduce value at root {root}: {got}");
        let proc_ = w.process_at_rank(root);
        if r == root {
            let mut prod = 0u64;
            must(
                "reduce_into_root",
                proc_.reduce_into_root(&2u64, &mut prod, Op::Prod),
            );
            check!(prod == 1 << p, "reduce_into_root: {prod}");
            let mut all = vec![0i32; p as usize];
            must(
                "gather_into_root",
                proc_.gather_into_root(&(r * 3), &mut all),
            );
            check!(
                all.iter().enumerate().all(|(i, &y)| y == i as i32 * 3),
                "gather value: {all:?}"
            );
            let blocks: Vec<u32> = (0..p as u32).map(|i| i * 11).collect();
            let mut mine = 0u32;
            must(
                "scatter_into_root",
                proc_.scatter_into_root(&blocks, &mut mine),
            );
            check!(mine == r as u32 * 11, "scatter root: {mine}");
        } else {
            must("reduce_into", proc_.reduce_into(&2u64, Op::Prod));
            must("gather_into", proc_.gather_into(&(r * 3)));
            let mut mine = 0u32;
            must("scatter_into", proc_.scatter_into(&mut mine));
            check!(mine == r as u32 * 11, "scatter: {mine}");
        }
    }

    // Every rank receives.
    let mut all = vec![0f32; p as usize];
    must(
        "allgather value",
        w.all_gather_into(&(r as f32 + 0.5), &mut all),
    );
    check!(
        all.iter().enumerate().all(|(i, &y)| y == i as f32 + 0.5),
        "allgather: {all:?}"
    );
    let send: Vec<i32> = (0..p).map(|j| r * 100 + j).collect();
    let mut recv = vec![0i32; p as usize];
    must("alltoall", w.all_to_all_into(&send, &mut recv));
    check!(
        recv.iter()
            .enumerate()
            .all(|(j, &y)| y == j as i32 * 100 + r),
        "alltoall: {recv:?}"
    );
    let mut inc = 0i64;
    must("scan value", w.scan_into(&(ri + 1), &mut inc, Op::Sum));
    check!(inc == tri(ri + 1), "scan: {inc}");
    let mut exc = -7i64;
    must(
        "exscan value",
        w.exclusive_scan_into(&(ri + 1), &mut exc, Op::Sum),
    );
    check!(
        r == 0 && exc == -7 || r > 0 && exc == tri(ri),
        "exscan: {exc}"
    );
    let contrib: Vec<i64> = (0..p as i64).map(|j| j + ri).collect();
    let mut block = 0i64;
    must(
        "reduce_scatter_block value",
        w.reduce_scatter_block_into(&contrib, &mut block, Op::Sum),
    );
    check!(
        block == ri * pi + tri(pi - 1),
        "reduce_scatter_block: {block}"
    );
}

fn checked<L: ThreadLevel>(w: &Communicator<L>) {
    let (r, p) = (w.rank(), w.size());
    let mut flags = if r == 0 {
        [true, false, true, true]
    } else {
        [false; 4]
    };
    must("bcast bool", w.broadcast_into(0, &mut flags));
    check!(flags == [true, false, true, true], "bcast bool: {flags:?}");
    let mut c = if r == 1 { '😀' } else { 'x' };
    must("bcast char", w.broadcast_into(1, &mut c));
    check!(c == '😀', "bcast char: {c:?}");

    let odd = r % 2 == 1;
    let (mut and, mut or, mut xor) = (false, false, false);
    must("LAND", w.all_reduce_into(&odd, &mut and, Op::LogicalAnd));
    must("LOR", w.all_reduce_into(&odd, &mut or, Op::LogicalOr));
    must("LXOR", w.all_reduce_into(&odd, &mut xor, Op::LogicalXor));
    let odds = (0..p).filter(|i| i % 2 == 1).count() as i32;
    check!(
        !and && or == (odds > 0) && xor == (odds % 2 == 1),
        "bool reductions: {and} {or} {xor}"
    );
    let mut every = [true, r == 0];
    must(
        "LAND in place",
        w.all_reduce_in_place(&mut every, Op::LogicalAnd),
    );
    check!(every == [true, false], "LAND in place: {every:?}");
    let mut prefix = false;
    must("scan LXOR", w.scan_into(&true, &mut prefix, Op::LogicalXor));
    check!(prefix == (r % 2 == 0), "scan LXOR: {prefix}");

    let letter = char::from(b'a' + r as u8);
    let (mut lo, mut hi) = (' ', ' ');
    must("MIN char", w.all_reduce_into(&letter, &mut lo, Op::Min));
    must("MAX char", w.all_reduce_into(&letter, &mut hi, Op::Max));
    let last = char::from(b'a' + p as u8 - 1);
    check!(lo == 'a' && hi == last, "char min/max: {lo} {hi}");
    let mut top = ' ';
    must(
        "reduce MAX char",
        w.reduce_into(0, &letter, &mut top, Op::Max),
    );
    check!(r != 0 || top == last, "reduce char: {top}");

    let mut letters = vec![' '; p as usize];
    must("allgather char", w.all_gather_into(&letter, &mut letters));
    check!(
        letters
            .iter()
            .enumerate()
            .all(|(i, &l)| l == char::from(b'a' + i as u8)),
        "allgather char: {letters:?}"
    );
    let mut gathered = vec![false; if r == 0 { p as usize } else { 0 }];
    must("gather bool", w.gather_into(0, &odd, &mut gathered));
    check!(
        gathered.iter().enumerate().all(|(i, &b)| b == (i % 2 == 1)),
        "gather bool: {gathered:?}"
    );
    let src: Vec<bool> = (0..p).map(|i| i % 3 == 0).collect();
    let mut mine = false;
    must("scatter bool", w.scatter_into(0, &src, &mut mine));
    check!(mine == (r % 3 == 0), "scatter bool: {mine}");
    let out: Vec<char> = (0..p)
        .map(|j| char::from(b'A' + (r * p + j) as u8))
        .collect();
    let mut inp = vec![' '; p as usize];
    must("alltoall char", w.all_to_all_into(&out, &mut inp));
    check!(
        inp.iter()
            .enumerate()
            .all(|(j, &ch)| ch == char::from(b'A' + (j as i32 * p + r) as u8)),
        "alltoall char: {inp:?}"
    );
}

/// The error of `r`, which must have failed with `class`.
fn fails<T: std::fmt::Debug>(what: &str, r: oxmpi::Result<T>, class: ErrorClass) -> String {
    match r {
        Err(e) if e.class() == class => e.message().to_string(),
        other => {
            eprintln!("MISMATCH {what}: expected {class:?}, got {other:?}");
            std::process::exit(1)
        }
    }
}

fn invalid<L: ThreadLevel>(w: &Communicator<L>) {
    let (r, p) = (w.rank(), w.size());
    // The root broadcasts raw bytes, one of which is no bool.
    if r == 0 {
        let mut raw = [1u8, 0, 2];
        must("bcast raw", w.broadcast_into(0, &mut raw));
    } else {
        let mut flags = [true; 3];
        let m = fails(
            "bcast invalid bool",
            w.broadcast_into(0, &mut flags),
            ErrorClass::Type,
        );
        check!(m.contains("element 2"), "message: {m}");
        check!(flags == [true; 3], "left unchanged: {flags:?}");
    }
    // One rank contributes a surrogate (no char) to an allgather of chars: every rank sees it.
    let last = p - 1;
    let mut letters = ['?'; 8];
    let res = if r == last {
        let mut raw = [0u32; 8];
        let s = w.all_gather_into(&0xD800u32, &mut raw[..p as usize]);
        must("allgather raw", s);
        check!(
            raw[..p as usize - 1].iter().all(|&x| x == 'z' as u32),
            "raw: {raw:?}"
        );
        Ok(())
    } else {
        w.all_gather_into(&'z', &mut letters[..p as usize])
    };
    if r != last {
        fails("allgather invalid char", res, ErrorClass::Type);
        check!(letters == ['?'; 8], "left unchanged: {letters:?}");
    }
    // A gather of an invalid bool fails at the root only.
    let mut at_root = vec![false; if r == 0 { p as usize } else { 0 }];
    let res = if r == 1 {
        w.gather_into(0, &7u8, &mut Vec::<u8>::new())
    } else {
        w.gather_into(0, &true, &mut at_root)
    };
    if r == 0 {
        fails("gather invalid bool", res, ErrorClass::Type);
        check!(at_root.iter().all(|&b| !b), "left unchanged: {at_root:?}");
    } else {
        must("gather (not root)", res);
    }
    // Reductions MPI does not define on bool/char: refused before anything is sent.
    let (mut b, mut c) = (false, 'a');
    fails(
        "SUM on bool",
        w.all_reduce_into(&true, &mut b, Op::Sum),
        ErrorClass::Op,
    );
    fails(
        "BAND on bool",
        w.reduce_into(0, &true, &mut b, Op::BitwiseAnd),
        ErrorClass::Op,
    );
    fails(
        "LAND on char",
        w.all_reduce_into(&'a', &mut c, Op::LogicalAnd),
        ErrorClass::Op,
    );
    fails(
        "SUM on char",
        w.scan_into(&'a', &mut c, Op::Sum),
        ErrorClass::Op,
    );
    // Nothing was sent: the next collective still matches.
    let mut n = 0i32;
    must("allreduce after", w.all_reduce_into(&1, &mut n, Op::Sum));
    check!(n == p, "allreduce after: {n}");
}

fn nonblocking<L: ThreadLevel>(w: &Communicator<L>) {
    let (r, p) = (w.rank(), w.size());
    let last = p - 1;
    // Immediate send/receive between ranks 0 and 1: valid bools and chars, then one
    // invalid raw value of each. Buffers outlive their scope; results are read after it.
    let (flags, text) = ([true, false, true], ['ö', 'x', '\u{1F600}']);
    let (bad_b, bad_c) = ([1u8, 5], [0x41u32, 0x11_0000]);
    let (mut got_b, mut got_c) = ([false; 4], ['-'; 4]);
    let (mut keep_b, mut keep_c) = ([false, true], ['a', 'b']);
    oxmpi::scope(|s| {
        if r == 0 {
            let a = must("isend bool", w.immediate_send(s, &flags, 1, 1));
            let b = must("isend char", w.immediate_send(s, &text[..], 1, 2));
            let c = must("isend raw u8", w.immediate_send(s, &bad_b, 1, 3));
            let d = must("isend raw u32", w.immediate_send(s, &bad_c, 1, 4));
            for (what, q) in [("bool", a), ("char", b), ("raw u8", c), ("raw u32", d)] {
                must(what, q.wait());
            }
        } else if r == 1 {
            let q = w.immediate_receive_into_checked(s, &mut got_b[..], 0, 1);
            let st = must("irecv bool", must("irecv bool start", q).wait());
            check!(st.count() == Some(3), "bool count {:?}", st.count());
            let mut q = must(
                "irecv char start",
                w.immediate_receive_into_checked(s, &mut got_c[..], 0, 2),
            );
            let st = loop {
                if let Some(st) = q.test() {
                    break must("irecv char", st);
                }
                std::thread::yield_now();
            };
            check!(st.count() == Some(3), "char count {:?}", st.count());
            let q = must(
                "irecv bad bool start",
                w.immediate_receive_into_checked(s, &mut keep_b[..], 0, 3),
            );
            let m = fails("irecv invalid bool", q.wait(), ErrorClass::Type);
            check!(m.contains("element 1"), "message: {m}");
            let q = must(
                "irecv bad char start",
                w.immediate_receive_into_checked(s, &mut keep_c[..], 0, 4),
            );
            fails("irecv invalid char", q.wait(), ErrorClass::Type);
        }
    });
    if r == 1 {
        check!(got_b == [true, false, true, false], "bools {got_b:?}");
        check!(got_c == ['ö', 'x', '\u{1F600}', '-'], "chars {got_c:?}");
        check!(keep_b == [false, true], "left unchanged: {keep_b:?}");
        check!(keep_c == ['a', 'b'], "left unchanged: {keep_c:?}");
    }

    // Persistent send/receive, each started twice; the second char round carries a
    // surrogate, which leaves the first round's values in place.
    let flags = [true, true];
    let (raw1, raw2) = ([0x63u32, 0x64], [0x65u32, 0xDFFF]);
    let (mut got_b, mut got_c) = ([false; 2], ['?'; 2]);
    oxmpi::scope(|s| {
        if r == 0 {
            let mut ps = must("send_init bool", w.send_init(s, &flags, 1, 5));
            for _ in 0..2 {
                must("start bool", ps.start());
                must("wait bool", ps.wait());
            }
            for raw in [&raw1, &raw2] {
                let mut ps = must("send_init u32", w.send_init(s, raw, 1, 6));
                must("start u32", ps.start());
                must("wait u32", ps.wait());
            }
        } else if r == 1 {
            let mut pr = must(
                "recv_init bool",
                w.receive_init_checked(s, &mut got_b[..], 0, 5),
            );
            for _ in 0..2 {
                must("start recv bool", pr.start());
                let st = must("wait recv bool", pr.wait());
                check!(st.count() == Some(2), "count {:?}", st.count());
                check!(!pr.is_active(), "inactive after wait");
            }
            let mut pr = must(
                "recv_init char",
                w.receive_init_checked(s, &mut got_c[..], 0, 6),
            );
            must("start recv char", pr.start());
            must("wait recv char", pr.wait());
            must("start recv char 2", pr.start());
            let m = fails("persistent invalid char", pr.wait(), ErrorClass::Type);
            check!(m.contains("element 1"), "message: {m}");
        }
    });
    if r == 1 {
        check!(got_b == [true, true], "persistent bools {got_b:?}");
        check!(got_c == ['c', 'd'], "left as the first round: {got_c:?}");
    }

    // Nonblocking collectives: broadcast from the last rank, allreduce (LAND and LXOR on
    // bool, MAX on char), allgather of chars.
    let mut bc = if r == last {
        [true, false, true]
    } else {
        [false; 3]
    };
    let mine = r % 2 == 0;
    let (mut land, mut lxor) = (true, false);
    let letter = char::from(b'a' + r as u8);
    let pair = [letter, 'é'];
    let mut hi = [' ', ' '];
    let mut letters = vec!['?'; p as usize];
    let (mut wrong_b, mut wrong_c) = (false, 'a');
    oxmpi::scope(|s| {
        let q = w.immediate_broadcast_into_checked(s, last, &mut bc);
        let q1 = must("ibcast start", q);
        let q = w.immediate_all_reduce_into_checked(s, &mine, &mut land, Op::LogicalAnd);
        let q2 = must("iallreduce land start", q);
        let q = w.immediate_all_reduce_into_checked(s, &true, &mut lxor, Op::LogicalXor);
        let q3 = must("iallreduce lxor start", q);
        let q = w.immediate_all_reduce_into_checked(s, &pair, &mut hi, Op::Max);
        let q4 = must("iallreduce max start", q);
        let q = w.immediate_all_gather_into_checked(s, &letter, &mut letters[..]);
        let q5 = must("iallgather start", q);
        // Completed in another order than started.
        must("iallgather", q5.wait());
        must("iallreduce max", q4.wait());
        must("iallreduce lxor", q3.wait());
        must("iallreduce land", q2.wait());
        must("ibcast", q1.wait());
        // Wrong reductions: refused before anything is sent.
        let q = w.immediate_all_reduce_into_checked(s, &true, &mut wrong_b, Op::Sum);
        fails("iallreduce SUM on bool", q.map(drop), ErrorClass::Op);
        let q = w.all_reduce_init_checked(s, &'a', &mut wrong_c, Op::LogicalAnd);
        fails("allreduce_init LAND on char", q.map(drop), ErrorClass::Op);
    });
    check!(bc == [true, false, true], "ibcast {bc:?}");
    check!(!land, "LAND over even ranks: {land}");
    check!(lxor == (p % 2 == 1), "LXOR of {p} trues: {lxor}");
    check!(hi == [char::from(b'a' + last as u8), 'é'], "MAX {hi:?}");
    let want: Vec<char> = (0..p).map(|i| char::from(b'a' + i as u8)).collect();
    check!(letters == want, "iallgather {letters:?}");
    check!(
        (wrong_b, wrong_c) == (false, 'a'),
        "refused ops wrote nothing"
    );

    // The other nonblocking collectives: gather, scatter, all-to-all, reduce, scans.
    let n = p as usize;
    let odd = r % 2 == 1;
    let mut gathered = vec![false; if r == 0 { n } else { 0 }];
    let to_scatter: Vec<char> = (0..p).map(|i| char::from(b'A' + i as u8)).collect();
    let mut scattered = '?';
    let to_all: Vec<bool> = (0..p).map(|i| (i + r) % 2 == 0).collect();
    let mut from_all = vec![false; n];
    let (mut any_odd, mut scan_max, mut exscan_or) = (false, ' ', false);
    oxmpi::scope(|s| {
        let q = w.immediate_gather_into_checked(s, 0, &odd, &mut gathered);
        let q1 = must("igather start", q);
        let root_send: &[char] = if r == last { &to_scatter } else { &[] };
        let q = w.immediate_scatter_into_checked(s, last, root_send, &mut scattered);
        let q2 = must("iscatter start", q);
        let q = w.immediate_all_to_all_into_checked(s, &to_all[..], &mut from_all[..]);
        let q3 = must("ialltoall start", q);
        let q = w.immediate_reduce_into_checked(s, 0, &odd, &mut any_odd, Op::LogicalOr);
        let q4 = must("ireduce start", q);
        let q = w.immediate_scan_into_checked(s, &letter, &mut scan_max, Op::Max);
        let q5 = must("iscan start", q);
        let q = w.immediate_exclusive_scan_into_checked(s, &odd, &mut exscan_or, Op::LogicalOr);
        let q6 = must("iexscan start", q);
        for (what, q) in [("igather", q1), ("ireduce", q4), ("iexscan", q6)] {
            must(what, q.wait());
        }
        must("iscatter", q2.wait());
        must("ialltoall", q3.wait());
        must("iscan", q5.wait());
    });
    if r == 0 {
        let want: Vec<bool> = (0..p).map(|i| i % 2 == 1).collect();
        check!(gathered == want, "igather {gathered:?}");
        check!(any_odd, "ireduce LOR: {any_odd}");
    }
    check!(
        scattered == char::from(b'A' + r as u8),
        "iscatter {scattered}"
    );
    let want: Vec<bool> = (0..p).map(|i| (i + r) % 2 == 0).collect();
    check!(from_all == want, "ialltoall {from_all:?}");
    check!(scan_max == letter, "iscan MAX {scan_max}");
    if r > 0 {
        check!(exscan_or == (r > 1), "iexscan LOR at {r}: {exscan_or}");
    }

    // An invalid value reaches a nonblocking allgather (from the last rank) and a
    // nonblocking broadcast (from rank 0).
    let mut letters = vec!['?'; p as usize];
    let mut raw = vec![0u32; p as usize];
    let mut flags = [true, true];
    let mut raw_b = [0u8, 3];
    oxmpi::scope(|s| {
        if r == last {
            let q = w.immediate_all_gather_into(s, &0xD800u32, &mut raw[..]);
            must("iallgather raw", must("iallgather raw start", q).wait());
        } else {
            let q = w.immediate_all_gather_into_checked(s, &'z', &mut letters[..]);
            let q = must("iallgather checked start", q);
            fails("iallgather invalid char", q.wait(), ErrorClass::Type);
        }
        if r == 0 {
            let q = w.immediate_broadcast_into(s, 0, &mut raw_b);
            must("ibcast raw", must("ibcast raw start", q).wait());
        } else {
            let q = w.immediate_broadcast_into_checked(s, 0, &mut flags);
            let q = must("ibcast checked start", q);
            let m = fails("ibcast invalid bool", q.wait(), ErrorClass::Type);
            check!(m.contains("element 1"), "message: {m}");
        }
    });
    if r != last {
        check!(
            letters.iter().all(|&c| c == '?'),
            "left unchanged {letters:?}"
        );
    }
    if r != 0 {
        check!(flags == [true, true], "left unchanged {flags:?}");
    }

    // Persistent collectives, each started twice.
    let mut pflags = if r == 0 { [true, false] } else { [false, true] };
    let mut low = 'z';
    let letter = char::from(b'b' + r as u8);
    oxmpi::scope(|s| {
        let mut pb = must("bcast_init", w.broadcast_init_checked(s, 0, &mut pflags));
        let mut pa = must(
            "allreduce_init",
            w.all_reduce_init_checked(s, &letter, &mut low, Op::Min),
        );
        for _ in 0..2 {
            must("bcast_init start", pb.start());
            must("allreduce_init start", pa.start());
            must("allreduce_init wait", pa.wait());
            let st = loop {
                if let Some(st) = pb.test() {
                    break st;
                }
                std::thread::yield_now();
            };
            must("bcast_init test", st);
        }
    });
    check!(pflags == [true, false], "persistent bcast {pflags:?}");
    check!(low == 'b', "persistent MIN {low}");
}

fn single<L: ThreadLevel>(w: &Communicator<L>) {
    let req = must("ibarrier", w.immediate_barrier(oxmpi::static_scope()));
    let m = match req.into_send() {
        Err(e) if e.class() == ErrorClass::Other => e.message().to_string(),
        Err(e) => {
            eprintln!("MISMATCH into_send at Single: {e}");
            std::process::exit(1)
        }
        Ok(r) => {
            eprintln!("MISMATCH into_send at Single succeeded");
            drop(r);
            std::process::exit(1)
        }
    };
    check!(m.contains("Single"), "message: {m}");
    fails(
        "owned receive at Single",
        w.immediate_receive_owned(vec![0u8; 4], 0, 0).map(drop),
        ErrorClass::Other,
    );
}
