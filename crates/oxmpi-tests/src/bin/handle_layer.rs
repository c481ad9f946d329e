//! The handle layer through oxrun: MPI initialized with a thread level chosen at run time
//! (first argument `single` or `multiple`; a second argument `singleton` when started without
//! a launcher), communicators and groups as ids (dup, split,
//! split_type, create, create_group, intercommunicators, compare, free), every bad id refused
//! with its class, the thread-level check, attribute keyvals with copy and delete callbacks
//! and extra state, the predefined world attributes, a byte-level non-commutative user
//! operation in every reduction collective, and buffered sends into a raw attached region.
//! Exits non-zero on a mismatch; prints `rank N handle_layer passed` at the end.

use std::process::exit;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use oxmpi::handle::comm::{self as hc, CommHandle, CopyPolicy, KeyvalHandle};
use oxmpi::handle::env;
use oxmpi::handle::group::{self as hg, GroupHandle};
use oxmpi::handle::op::{self as ho, OpHandle};
use oxmpi::op::Datatype;
use oxmpi::{Communicator, ErrorClass, Predefined, Relation, SplitType, Threading, UNDEFINED};
use oxmpi_tests::{check, must};

fn class<T: std::fmt::Debug>(r: oxmpi::Result<T>) -> ErrorClass {
    match r {
        Ok(v) => {
            eprintln!("MISMATCH expected an error, got {v:?}");
            exit(1)
        }
        Err(e) => e.class(),
    }
}

const W: CommHandle = CommHandle::WORLD;

fn communicators(me: i32, p: i32) {
    check!(must("rank", hc::comm_rank(W)) == me, "world rank");
    check!(
        must("self size", hc::comm_size(CommHandle::SELF)) == 1,
        "self size"
    );
    check!(
        !must("test_inter", hc::comm_test_inter(W)),
        "world is intra"
    );

    // dup: congruent, its own context (traffic on it does not match traffic on world).
    let mut d = must("dup", hc::comm_dup(W));
    check!(
        must("compare", hc::comm_compare(d, W)) == Relation::Congruent,
        "dup congruent"
    );
    check!(
        must("compare", hc::comm_compare(W, W)) == Relation::Identical,
        "world identical to itself"
    );
    let dw: Communicator = must("typed", hc::comm_typed(d));
    let ww: Communicator = must("typed", hc::comm_typed(W));
    let right = (me + 1) % p;
    let left = (me + p - 1) % p;
    let mut a = [0i32];
    let mut b = [0i32];
    oxmpi::scope(|s| {
        let ra = ww.immediate_receive_into(s, &mut a[..], left, 5).unwrap();
        let rb = dw.immediate_receive_into(s, &mut b[..], left, 5).unwrap();
        dw.send(&[me + 100][..], right, 5).unwrap();
        ww.send(&[me][..], right, 5).unwrap();
        ra.wait().unwrap();
        rb.wait().unwrap();
    });
    let (a, b) = (a[0], b[0]);
    check!(
        a == left && b == left + 100,
        "dup traffic isolated: {a} {b}"
    );
    drop((dw, ww));

    // split: odd/even, reversed by key; UNDEFINED gets NULL.
    let mut s = must("split", hc::comm_split(W, me % 2, -me));
    let n = (p - me % 2 + 1) / 2;
    check!(must("split size", hc::comm_size(s)) == n, "split size");
    check!(
        must("split rank", hc::comm_rank(s)) == n - 1 - me / 2,
        "split rank ordered by key"
    );
    let none = must("split undefined", hc::comm_split(W, UNDEFINED, 0));
    check!(none == CommHandle::NULL, "UNDEFINED gives NULL");
    let mut shared = must(
        "split_type",
        hc::comm_split_type(W, Some(SplitType::Shared), 0),
    );
    check!(must("shared size", hc::comm_size(shared)) == p, "one host");
    check!(
        must("split_type none", hc::comm_split_type(W, None, 0)) == CommHandle::NULL,
        "split_type UNDEFINED"
    );

    // Groups: from the communicator, algebra, translate, compare; create / create_group.
    let mut wg = must("comm_group", hc::comm_group(W));
    let mut sg = must("comm_group", hc::comm_group(s));
    check!(must("group size", hg::group_size(wg)) == p, "group size");
    check!(
        must("group rank", hg::group_rank(sg)) == Some(n - 1 - me / 2),
        "group rank"
    );
    let t = must("translate", hg::group_translate_ranks(sg, &[0], wg));
    let last_same_parity = if (p - 1) % 2 == me % 2 { p - 1 } else { p - 2 };
    check!(t == vec![Some(last_same_parity)], "translate {t:?}");
    let mut evens = must("range_incl", hg::group_range_incl(wg, &[(0, p - 1, 2)]));
    let mut odds = must("difference", hg::group_difference(wg, evens));
    let mut all = must("union", hg::group_union(evens, odds));
    check!(
        must("compare", hg::group_compare(all, wg))
            == if p > 2 {
                Relation::Similar
            } else {
                Relation::Identical
            },
        "union of evens and odds"
    );
    let mut none_g = must("intersection", hg::group_intersection(evens, odds));
    check!(must("size", hg::group_size(none_g)) == 0, "disjoint");
    check!(
        must("compare", hg::group_compare(none_g, GroupHandle::EMPTY)) == Relation::Identical,
        "empty group"
    );
    let mut first = must("incl", hg::group_incl(wg, &[0]));
    let mut rest = must("excl", hg::group_excl(wg, &[0]));
    check!(must("size", hg::group_size(rest)) == p - 1, "excl");
    check!(
        class(hg::group_incl(wg, &[p])) == ErrorClass::Rank,
        "incl of a rank outside"
    );
    let mut c = must("create", hc::comm_create(W, first));
    check!(
        (c == CommHandle::NULL) == (me != 0),
        "create: only members get a communicator"
    );
    if me == 0 {
        check!(must("size", hc::comm_size(c)) == 1, "created size");
        must("free", hc::comm_free(&mut c));
    }
    if me % 2 == 0 {
        let mut e = must("create_group", hc::comm_create_group(W, evens, 7));
        check!(
            must("size", hc::comm_size(e)) == (p + 1) / 2,
            "create_group size"
        );
        check!(
            must("rank", hc::comm_rank(e)) == me / 2,
            "create_group rank"
        );
        must("free", hc::comm_free(&mut e));
    }

    // Intercommunicator between evens and odds.
    if p >= 2 {
        let remote_leader = if me % 2 == 0 { 1 } else { 0 };
        let mut ic = must(
            "intercomm",
            hc::intercomm_create(s, n - 1, W, remote_leader, 9),
        );
        check!(must("inter", hc::comm_test_inter(ic)), "test_inter");
        check!(
            must("remote size", hc::comm_remote_size(ic)) == p - n,
            "remote size"
        );
        let mut rg = must("remote group", hc::comm_remote_group(ic));
        check!(must("size", hg::group_size(rg)) == p - n, "remote group");
        must("group_free", hg::group_free(&mut rg));
        let mut m = must("merge", hc::intercomm_merge(ic, me % 2 == 1));
        check!(must("merged size", hc::comm_size(m)) == p, "merged size");
        check!(
            (must("merged rank", hc::comm_rank(m)) < n) == (me % 2 == 0),
            "low group first"
        );
        check!(
            class(hc::comm_typed::<oxmpi::Single>(ic)) == ErrorClass::Comm,
            "typed view of an intercommunicator"
        );
        check!(
            class(hc::comm_remote_size(W)) == ErrorClass::Comm,
            "remote size of an intracommunicator"
        );
        must("free", hc::comm_free(&mut m));
        must("free", hc::comm_free(&mut ic));
    }

    // Freed and bogus ids.
    let old_s = s;
    must("free", hc::comm_free(&mut s));
    check!(s == CommHandle::NULL, "free sets NULL");
    check!(
        class(hc::comm_rank(old_s)) == ErrorClass::Comm,
        "freed comm"
    );
    check!(
        class(hc::comm_dup(old_s)) == ErrorClass::Comm,
        "dup of freed comm"
    );
    check!(
        class(hc::comm_free(&mut old_s.clone())) == ErrorClass::Comm,
        "double free"
    );
    check!(
        class(hc::comm_size(CommHandle::NULL)) == ErrorClass::Comm,
        "NULL comm"
    );
    check!(
        class(hc::comm_size(CommHandle::from_int(0x7777))) == ErrorClass::Comm,
        "never-created comm"
    );
    check!(
        class(hc::comm_free(&mut W.clone())) == ErrorClass::Comm,
        "world cannot be freed"
    );
    must("free", hc::comm_free(&mut d));
    must("free", hc::comm_free(&mut shared));
    let old_g = first;
    for g in [
        &mut wg,
        &mut sg,
        &mut evens,
        &mut odds,
        &mut all,
        &mut none_g,
        &mut first,
        &mut rest,
    ] {
        must("group_free", hg::group_free(g));
    }
    check!(
        class(hg::group_size(old_g)) == ErrorClass::Group,
        "freed group"
    );
    check!(
        class(hg::group_free(&mut old_g.clone())) == ErrorClass::Group,
        "group double free"
    );
    check!(
        class(hc::comm_create(W, old_g)) == ErrorClass::Group,
        "create from a freed group"
    );
}

/// Records of callback calls: (which, keyval, extra state, value, communicator).
type Log = Arc<Mutex<Vec<(&'static str, i32, usize, usize, i32)>>>;

fn attributes(me: i32, p: i32) {
    // Predefined world attributes.
    let get = |k: Predefined| {
        must(
            "get predefined",
            hc::comm_get_attr(W, KeyvalHandle::predefined(k)),
        )
    };
    check!(
        get(Predefined::TagUb) == Some(oxmpi::TAG_UB as usize),
        "TAG_UB"
    );
    check!(
        get(Predefined::UniverseSize) == Some(p as usize),
        "UNIVERSE_SIZE"
    );
    check!(get(Predefined::WtimeIsGlobal) == Some(0), "WTIME_IS_GLOBAL");
    check!(get(Predefined::LastUsedCode) == Some(16383), "LASTUSEDCODE");
    // oxrun gives every rank of a single program MPMD index 0; a singleton has no launcher.
    let singleton = std::env::args().nth(2).as_deref() == Some("singleton");
    check!(
        get(Predefined::Appnum) == if singleton { None } else { Some(0) },
        "APPNUM (singleton {singleton})"
    );
    check!(
        get(Predefined::Host).is_some() && get(Predefined::Io).is_some(),
        "HOST, IO"
    );
    check!(
        must(
            "self attr",
            hc::comm_get_attr(
                CommHandle::SELF,
                KeyvalHandle::predefined(Predefined::TagUb)
            )
        )
        .is_none(),
        "predefined attributes are on world"
    );
    check!(
        class(hc::comm_set_attr(
            W,
            KeyvalHandle::predefined(Predefined::TagUb),
            1
        )) == ErrorClass::Keyval,
        "predefined attributes are read-only"
    );

    let log: Log = Arc::default();
    let l = log.clone();
    // Copies values below 100 (doubled), skips values from 100, fails on 666.
    let copy: hc::CopyFn = Arc::new(move |c: CommHandle, k: KeyvalHandle, extra, v| {
        l.lock()
            .unwrap()
            .push(("copy", k.to_int(), extra, v, c.to_int()));
        match v {
            666 => Err(oxmpi::Error::new(ErrorClass::Other, "copy refused 666")),
            v if v < 100 => Ok(Some(v * 2)),
            _ => Ok(None),
        }
    });
    let l = log.clone();
    // Refuses to delete 13.
    let delete: hc::DeleteFn = Arc::new(move |c: CommHandle, k: KeyvalHandle, extra, v| {
        l.lock()
            .unwrap()
            .push(("delete", k.to_int(), extra, v, c.to_int()));
        if v == 13 {
            return Err(oxmpi::Error::new(ErrorClass::Other, "delete refused 13"));
        }
        Ok(())
    });
    let mut k = must(
        "keyval",
        hc::keyval_create(CopyPolicy::Call(copy), Some(delete.clone()), 4242),
    );
    let mut kdup = must(
        "keyval",
        hc::keyval_create(CopyPolicy::Dup, Some(delete.clone()), 7),
    );
    let mut knull = must("keyval", hc::keyval_create(CopyPolicy::Null, None, 0));
    let ki = k.to_int();
    let count = |what: &str, log: &Log| log.lock().unwrap().iter().filter(|e| e.0 == what).count();

    let c = must("dup", hc::comm_dup(W));
    must("set", hc::comm_set_attr(c, k, 5));
    must("set", hc::comm_set_attr(c, kdup, 1000 + me as usize));
    must("set", hc::comm_set_attr(c, knull, 9));
    // Replace runs the delete callback on the old value, with the extra state.
    must("replace", hc::comm_set_attr(c, k, 6));
    check!(
        log.lock().unwrap().last() == Some(&("delete", ki, 4242, 5, c.to_int())),
        "replace deletes: {:?}",
        log.lock().unwrap()
    );
    check!(
        must("get", hc::comm_get_attr(c, k)) == Some(6),
        "get after replace"
    );

    // Dup: the callback doubles 6; DUP_FN copies as is; NULL_COPY_FN does not copy.
    let mut c2 = must("dup with attrs", hc::comm_dup(c));
    check!(
        log.lock()
            .unwrap()
            .iter()
            .any(|e| *e == ("copy", ki, 4242, 6, c.to_int())),
        "the copy callback is told the communicator being duplicated"
    );
    check!(
        must("get", hc::comm_get_attr(c2, k)) == Some(12),
        "copied by callback"
    );
    check!(
        must("get", hc::comm_get_attr(c2, kdup)) == Some(1000 + me as usize),
        "DUP_FN"
    );
    check!(
        must("get", hc::comm_get_attr(c2, knull)).is_none(),
        "NULL_COPY_FN"
    );
    // The callback decides per value: 100 is not copied.
    must("set", hc::comm_set_attr(c2, k, 100));
    let mut c3 = must("dup", hc::comm_dup(c2));
    check!(
        must("get", hc::comm_get_attr(c3, k)).is_none(),
        "callback chose not to copy"
    );
    must("free", hc::comm_free(&mut c3));

    // A failing copy fails the dup with its error; the copy already made (kdup) is deleted.
    must("set", hc::comm_set_attr(c2, k, 666));
    let seen = log.lock().unwrap().len();
    let e = hc::comm_dup(c2).unwrap_err();
    check!(
        e.class() == ErrorClass::Other && e.to_string().contains("666"),
        "dup fails with the callback's error: {e}"
    );
    let new_deletes: Vec<_> = log.lock().unwrap()[seen..]
        .iter()
        .filter(|e| e.0 == "delete")
        .cloned()
        .collect();
    check!(
        new_deletes.len() <= 1
            && new_deletes
                .iter()
                .all(|e| e.3 == 1000 + me as usize && e.4 == CommHandle::NULL.to_int()),
        "only the copy made before the failure was deleted: {new_deletes:?}"
    );

    // Failing delete: at delete the attribute stays; at replace the old value stays.
    must("set", hc::comm_set_attr(c2, k, 13));
    check!(
        class(hc::comm_delete_attr(c2, k)) == ErrorClass::Other,
        "delete callback error"
    );
    check!(
        must("get", hc::comm_get_attr(c2, k)) == Some(13),
        "kept after failed delete"
    );
    check!(
        class(hc::comm_set_attr(c2, k, 1)) == ErrorClass::Other,
        "replace fails when the delete callback does"
    );
    check!(
        must("get", hc::comm_get_attr(c2, k)) == Some(13),
        "kept after failed replace"
    );
    // Free runs every delete callback and reports the failure; the communicator is gone.
    let before = count("delete", &log);
    let c2_id = c2.to_int();
    check!(
        class(hc::comm_free(&mut c2)) == ErrorClass::Other,
        "free reports the delete error"
    );
    check!(c2 == CommHandle::NULL, "freed anyway");
    check!(
        log.lock().unwrap()[before..]
            .iter()
            .filter(|e| e.0 == "delete")
            .all(|e| e.4 == c2_id),
        "delete callbacks at free are told the communicator"
    );
    check!(
        count("delete", &log) == before + 2,
        "k and kdup deleted at free"
    );

    // Delete, then wrong and freed keyvals.
    must("delete", hc::comm_delete_attr(c, k));
    check!(must("get", hc::comm_get_attr(c, k)).is_none(), "deleted");
    must("delete unset", hc::comm_delete_attr(c, k));
    let old_k = knull;
    must("keyval_free", hc::keyval_free(&mut knull));
    check!(knull == KeyvalHandle::INVALID, "keyval_free sets INVALID");
    check!(
        class(hc::comm_get_attr(c, old_k)) == ErrorClass::Keyval,
        "freed keyval"
    );
    check!(
        class(hc::comm_set_attr(c, KeyvalHandle::from_int(999_999), 1)) == ErrorClass::Keyval,
        "never-created keyval"
    );
    check!(
        class(hc::keyval_free(&mut old_k.clone())) == ErrorClass::Keyval,
        "keyval double free"
    );
    check!(
        class(hc::keyval_free(&mut KeyvalHandle::predefined(
            Predefined::TagUb
        ))) == ErrorClass::Keyval,
        "predefined keyval free"
    );
    // An attribute outlives its freed keyval until its communicator is freed.
    let mut cc = c;
    must("keyval_free", hc::keyval_free(&mut kdup));
    let before = count("delete", &log);
    must("free", hc::comm_free(&mut cc));
    check!(
        count("delete", &log) == before + 1,
        "kdup's value deleted at free"
    );
    must("keyval_free", hc::keyval_free(&mut k));

    // Attributes on SELF are deleted at finalize; checked in main.
    let l = log.clone();
    let del: hc::DeleteFn = Arc::new(move |c, k, e, v| {
        l.lock()
            .unwrap()
            .push(("self", k.to_int(), e, v, c.to_int()));
        Ok(())
    });
    let ks = must("keyval", hc::keyval_create(CopyPolicy::Null, Some(del), 1));
    must("set on self", hc::comm_set_attr(CommHandle::SELF, ks, 77));
    SELF_LOG.lock().unwrap().replace(log);
}

static SELF_LOG: Mutex<Option<Log>> = Mutex::new(None);

/// A 2×2 integer matrix, row-major, as stored in the byte buffers.
type Mat = [i64; 4];

fn mul(a: Mat, b: Mat) -> Mat {
    [
        a[0].wrapping_mul(b[0])
            .wrapping_add(a[1].wrapping_mul(b[2])),
        a[0].wrapping_mul(b[1])
            .wrapping_add(a[1].wrapping_mul(b[3])),
        a[2].wrapping_mul(b[0])
            .wrapping_add(a[3].wrapping_mul(b[2])),
        a[2].wrapping_mul(b[1])
            .wrapping_add(a[3].wrapping_mul(b[3])),
    ]
}

fn to_mat(b: &[u8]) -> Mat {
    let mut m = [0i64; 4];
    for (x, c) in m.iter_mut().zip(b.chunks_exact(8)) {
        *x = i64::from_ne_bytes(c.try_into().unwrap());
    }
    m
}

fn to_bytes(ms: &[Mat]) -> Vec<u8> {
    ms.iter().flatten().flat_map(|x| x.to_ne_bytes()).collect()
}

fn mat(rank: i32, i: usize) -> Mat {
    let x = (rank as i64) + i as i64;
    [1, x + 1, x % 3, 1]
}

fn reductions(me: i32, p: i32) {
    let calls = Arc::new(AtomicUsize::new(0));
    let c2 = calls.clone();
    // Matrix product at byte level: inout = in · inout. Not commutative.
    let f: oxmpi::op::ByteFn = Arc::new(move |a: &[u8], b: &mut [u8], n: usize, dt: Datatype| {
        assert_eq!(dt.size, 32);
        assert_eq!(a.len(), n * 32);
        c2.fetch_add(1, Ordering::Relaxed);
        for (x, y) in a.chunks_exact(32).zip(b.chunks_exact_mut(32)) {
            let prod = mul(to_mat(x), to_mat(y));
            y.copy_from_slice(&to_bytes(&[prod]));
        }
    });
    let mut h = must("op_create", ho::op_create(f, false));
    check!(
        !must("commutative", ho::op_commutative(h)),
        "not commutative"
    );
    check!(
        must("commutative", ho::op_commutative(OpHandle::SUM)),
        "SUM commutative"
    );
    let op = must("op_get", ho::op_get(h));
    let world: Communicator = must("typed", hc::comm_typed(W));
    let n = p as usize; // elements per rank (reduce_scatter_block gives one to each)
    let mine: Vec<Mat> = (0..n).map(|i| mat(me, i)).collect();
    let prefix = |upto: i32, i: usize| (1..=upto).fold(mat(0, i), |acc, r| mul(acc, mat(r, i)));
    let total: Vec<Mat> = (0..n).map(|i| prefix(p - 1, i)).collect();

    let mut out = vec![[0i64; 4]; n];
    must(
        "allreduce",
        world.all_reduce_into(&mine[..], &mut out[..], op.clone()),
    );
    check!(out == total, "allreduce in rank order");
    let mut out = vec![[0i64; 4]; n];
    must(
        "reduce",
        world.reduce_into(p - 1, &mine[..], &mut out[..], op.clone()),
    );
    check!(me != p - 1 || out == total, "reduce at the last rank");
    let mut one = [[0i64; 4]];
    must(
        "rsb",
        world.reduce_scatter_block_into(&mine[..], &mut one[..], op.clone()),
    );
    check!(one[0] == total[me as usize], "reduce_scatter_block");
    let mut one = [[0i64; 4]; 1];
    must(
        "rs",
        world.reduce_scatter_into(&mine[..], &mut one[..], &vec![1; n], op.clone()),
    );
    check!(one[0] == total[me as usize], "reduce_scatter");
    let mut out = vec![[0i64; 4]; n];
    must("scan", world.scan_into(&mine[..], &mut out[..], op.clone()));
    check!(
        out.iter().enumerate().all(|(i, m)| *m == prefix(me, i)),
        "scan"
    );
    let mut out = vec![[0i64; 4]; n];
    must(
        "exscan",
        world.exclusive_scan_into(&mine[..], &mut out[..], op.clone()),
    );
    check!(
        me == 0 || out.iter().enumerate().all(|(i, m)| *m == prefix(me - 1, i)),
        "exclusive scan"
    );
    let mut out = vec![[0i64; 4]; n];
    oxmpi::scope(|s| {
        let r = world
            .immediate_all_reduce_into(s, &mine[..], &mut out[..], op.clone())
            .unwrap();
        must("iallreduce", r.wait());
    });
    check!(out == total, "nonblocking allreduce");
    check!(
        p == 1 || calls.load(Ordering::Relaxed) > 0,
        "the callback ran"
    );

    // Local reduction on raw bytes with the front end's datatype token.
    let mut inout = to_bytes(&[mat(1, 0)]);
    let dt = Datatype {
        token: 0xabc,
        size: 32,
    };
    must(
        "reduce_local",
        ho::reduce_local(&to_bytes(&[mat(0, 0)]), &mut inout, 1, dt, h),
    );
    check!(to_mat(&inout) == mul(mat(0, 0), mat(1, 0)), "reduce_local");
    let old = h;
    must("op_free", ho::op_free(&mut h));
    check!(h == OpHandle::NULL, "op_free sets NULL");
    check!(class(ho::op_get(old)) == ErrorClass::Op, "freed op");
    check!(
        class(ho::op_free(&mut old.clone())) == ErrorClass::Op,
        "op double free"
    );
    check!(
        class(ho::op_free(&mut OpHandle::SUM.clone())) == ErrorClass::Op,
        "free SUM"
    );
    // The Op taken before the free still works (reductions in flight keep it).
    let mut out = vec![[0i64; 4]; n];
    must(
        "allreduce after free",
        world.all_reduce_into(&mine[..], &mut out[..], op),
    );
    check!(out == total, "op kept alive by its users");
}

const SIZES: [usize; 3] = [1000, 0, 4 << 20];

fn buffered_sends(me: i32, p: i32) {
    if p < 2 {
        return;
    }
    let world: Communicator = must("typed", hc::comm_typed(W));
    if me == 0 {
        check!(
            class(env::buffer_detach(env::BufferOf::Process, usize::MAX)) == ErrorClass::Buffer,
            "detach without attach"
        );
        // Exactly room for three messages; the last is long enough to need the receiver
        // (rendezvous), which does not post its receives before the barrier.
        let sizes = SIZES;
        let len: usize = sizes.iter().map(|s| s + oxmpi::BSEND_OVERHEAD).sum();
        let mut region = vec![0u8; len];
        let ptr = region.as_mut_ptr();
        // SAFETY: `region` lives to the end of this block and is not touched until detach
        // returned it.
        must("attach", unsafe {
            env::buffer_attach(env::BufferOf::Process, env::SendBuffer::Region(ptr, len))
        });
        // SAFETY: a second attach is refused before the region is used.
        check!(
            class(unsafe {
                env::buffer_attach(env::BufferOf::Process, env::SendBuffer::Region(ptr, len))
            }) == ErrorClass::Buffer,
            "attach twice"
        );
        for (i, &s) in sizes.iter().enumerate() {
            let data: Vec<u8> = (0..s).map(|b| (b + i) as u8).collect();
            must("bsend", world.buffered_send(&data[..], 1, 30 + i as i32));
        }
        // Even if the two short copies have drained, the largest free range is their
        // 1000 + 2 * overhead bytes: one byte more does not fit.
        let e = world
            .buffered_send(&[0u8; 1000 + oxmpi::BSEND_OVERHEAD + 1][..], 1, 40)
            .unwrap_err();
        check!(e.class() == ErrorClass::Buffer, "full buffer: {e}");
        must("barrier", world.barrier());
        // A size the caller's argument cannot hold (an `int`, for a region attached with
        // `MPI_Buffer_attach_c`): refused, and the region stays attached.
        check!(
            class(env::buffer_detach(env::BufferOf::Process, len - 1)) == ErrorClass::ValueTooLarge,
            "detach into a size argument too small"
        );
        let back = must("detach", env::buffer_detach(env::BufferOf::Process, len));
        check!(
            back == env::SendBuffer::Region(ptr, len),
            "detach returns the region"
        );
        drop(region);
    } else if me == 1 {
        must("barrier", world.barrier());
        for (i, s) in SIZES.into_iter().enumerate() {
            let mut v = vec![0u8; s];
            must("recv", world.receive_into(&mut v[..], 0, 30 + i as i32));
            check!(
                v.iter().enumerate().all(|(b, &x)| x == (b + i) as u8),
                "bsend data {i}"
            );
        }
    } else {
        must("barrier", world.barrier());
    }
}

fn threads(level: Threading) {
    let other = std::thread::spawn(|| hc::comm_rank(W).map_err(|e| e.class()))
        .join()
        .unwrap();
    if level == Threading::Multiple {
        check!(
            other.is_ok(),
            "another thread may call at Multiple: {other:?}"
        );
    } else {
        check!(
            other == Err(ErrorClass::Other),
            "another thread is refused at {level:?}: {other:?}"
        );
        check!(
            class(hc::comm_typed::<oxmpi::Multiple>(W)) == ErrorClass::Other,
            "a Multiple typed handle at a lower level"
        );
    }
    check!(env::is_thread_main(), "main thread");
    check!(must("query", env::query_thread()) == level, "query_thread");
}

fn main() {
    let level = match std::env::args().nth(1).as_deref() {
        Some("multiple") => Threading::Multiple,
        _ => Threading::Single,
    };
    check!(
        class(hc::comm_rank(W)) == ErrorClass::Other,
        "calls before init are refused"
    );
    let provided = must("init_thread", env::init_thread(level));
    check!(provided == level, "provided {provided:?}");
    check!(
        class(env::init_thread(level)) == ErrorClass::Other,
        "init twice"
    );
    let me = must("rank", hc::comm_rank(W));
    let p = must("size", hc::comm_size(W));
    threads(level);
    communicators(me, p);
    attributes(me, p);
    reductions(me, p);
    buffered_sends(me, p);
    must("finalize", env::finalize());
    let log = SELF_LOG.lock().unwrap().take().unwrap();
    check!(
        log.lock()
            .unwrap()
            .iter()
            .any(|e| e.0 == "self" && e.3 == 77 && e.2 == 1 && e.4 == CommHandle::SELF.to_int()),
        "SELF attributes deleted at finalize"
    );
    check!(
        class(hc::comm_rank(W)) == ErrorClass::Other,
        "calls after finalize"
    );
    println!("rank {me} handle_layer passed");
}
