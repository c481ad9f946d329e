//! Persistent collectives, restarted many times, every result checked against a serial
//! reference:
//! - through the handle layer (raw buffers, as the C layer drives them), with new contents
//!   written before every start and the result checked after every wait;
//! - through the Rust API, every `*_init` form (into and in place), restarted with
//!   `start`/`start_all`; the in-place allreduce, scan and all-to-all feed each run's result
//!   into the next, so the contents change from run to run there too;
//! - the request rules: starting an active request and waiting for an inactive one are
//!   errors, an inactive one is freed (dropped) without waiting.
//!
//! `coll_persistent [RESTARTS]`

use oxmpi::handle::op::OpHandle;
use oxmpi::handle::request::{RequestId, Requests};
use oxmpi::{scope, Communicator, ErrorClass, Op, Persistent};
use oxmpi_tests::{check, must};

/// A buffer reached only through one raw pointer while handle-layer requests use it.
struct RawBuf {
    p: *mut i64,
    n: usize,
}

impl RawBuf {
    fn new(n: usize) -> RawBuf {
        let b: Box<[i64]> = vec![-1i64; n].into_boxed_slice();
        RawBuf {
            p: Box::into_raw(b).cast::<i64>(),
            n,
        }
    }
    /// The pointer, or null for "in place".
    fn ptr(&self) -> *mut i64 {
        self.p
    }
    fn set(&self, f: impl Fn(usize) -> i64) {
        for i in 0..self.n {
            // SAFETY: `i < n` inside the allocation; no request using it is active (the
            // callers write between a wait and the next start).
            unsafe { self.p.add(i).write(f(i)) };
        }
    }
    fn get(&self) -> Vec<i64> {
        // SAFETY: as for `set`.
        (0..self.n)
            .map(|i| unsafe { self.p.add(i).read() })
            .collect()
    }
}

impl Drop for RawBuf {
    fn drop(&mut self) {
        // SAFETY: made by `Box::into_raw` of a slice of `n` elements in `new`.
        drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(self.p, self.n)) });
    }
}

/// Element `i` of rank `r`'s contribution in run `k`.
fn v(r: i32, i: usize, k: usize) -> i64 {
    r as i64 * 1000 + i as i64 * 7 + k as i64 * 13 + 1
}

/// Starts `id`, checks that a second start fails, and waits for it.
fn run_once<L: oxmpi::threading::ThreadLevel>(
    reqs: &mut Requests<L>,
    id: &mut RequestId,
    what: &str,
) {
    must(what, reqs.start(*id));
    let e = reqs.start(*id).unwrap_err();
    check!(
        e.class() == ErrorClass::Request,
        "{what}: second start of an active request: {e}"
    );
    must(what, reqs.wait(id));
    check!(!id.is_null() && reqs.is_persistent(*id), "{what}: id kept");
}

fn handle_layer(world: &Communicator, restarts: usize) {
    let (me, p) = (world.rank(), world.size());
    let pu = p as usize;
    let root = 1 % p;
    let n = 5usize;
    let mut reqs = Requests::new(world);
    // SAFETY (every `*_init` below): each buffer outlives its request, which is freed at the
    // end of this function; between a wait and the next start only this thread touches it.
    let sum = OpHandle::SUM;

    // Barrier.
    let mut bar = must("barrier_init", unsafe { reqs.barrier_init(world) });
    // Broadcast.
    let bb = RawBuf::new(n);
    let mut bc = must("bcast_init", unsafe {
        reqs.bcast_init(world, bb.ptr(), n, root)
    });
    // Gather and scatter.
    let (gs, gr) = (RawBuf::new(n), RawBuf::new(n * pu));
    let mut ga = must("gather_init", unsafe {
        reqs.gather_init(world, gs.ptr(), n, gr.ptr(), root)
    });
    let (ss, sr) = (RawBuf::new(n * pu), RawBuf::new(n));
    let mut sc = must("scatter_init", unsafe {
        reqs.scatter_init(world, ss.ptr(), sr.ptr(), n, root)
    });
    // Allgather, alltoall.
    let (ags, agr) = (RawBuf::new(n), RawBuf::new(n * pu));
    let mut ag = must("allgather_init", unsafe {
        reqs.allgather_init(world, ags.ptr(), n, agr.ptr())
    });
    let (ats, atr) = (RawBuf::new(n * pu), RawBuf::new(n * pu));
    let mut at = must("alltoall_init", unsafe {
        reqs.alltoall_init(world, ats.ptr(), atr.ptr(), n)
    });
    // Reductions.
    let (rs, rr) = (RawBuf::new(n), RawBuf::new(n));
    let mut re = must("reduce_init", unsafe {
        reqs.reduce_init(world, rs.ptr(), rr.ptr(), n, sum, root)
    });
    let (ars, arr) = (RawBuf::new(n), RawBuf::new(n));
    let mut ar = must("allreduce_init", unsafe {
        reqs.allreduce_init(world, ars.ptr(), arr.ptr(), n, sum)
    });
    let arp = RawBuf::new(n);
    let mut arip = must("allreduce_init in place", unsafe {
        reqs.allreduce_init(world, std::ptr::null(), arp.ptr(), n, sum)
    });
    let (rss, rsr) = (RawBuf::new(n * pu), RawBuf::new(n));
    let mut rsb = must("reduce_scatter_block_init", unsafe {
        reqs.reduce_scatter_block_init(world, rss.ptr(), rsr.ptr(), n, sum)
    });
    let (scs, scr) = (RawBuf::new(n), RawBuf::new(n));
    let mut sca = must("scan_init", unsafe {
        reqs.scan_init(world, scs.ptr(), scr.ptr(), n, sum, false)
    });
    let (exs, exr) = (RawBuf::new(n), RawBuf::new(n));
    let mut exa = must("exscan_init", unsafe {
        reqs.scan_init(world, exs.ptr(), exr.ptr(), n, sum, true)
    });

    let total = |i: usize, k: usize, ranks: std::ops::Range<i32>| -> i64 {
        ranks.map(|r| v(r, i, k)).sum()
    };
    for k in 0..restarts {
        run_once(&mut reqs, &mut bar, "barrier_init");

        bb.set(|i| if me == root { v(root, i, k) } else { -1 });
        run_once(&mut reqs, &mut bc, "bcast_init");
        let got = bb.get();
        check!(
            (0..n).all(|i| got[i] == v(root, i, k)),
            "bcast run {k}: {got:?}"
        );

        gs.set(|i| v(me, i, k));
        gr.set(|_| -1);
        run_once(&mut reqs, &mut ga, "gather_init");
        if me == root {
            let got = gr.get();
            check!(
                (0..n * pu).all(|x| got[x] == v((x / n) as i32, x % n, k)),
                "gather run {k}: {got:?}"
            );
        }

        ss.set(|x| v(root, x, k));
        sr.set(|_| -1);
        run_once(&mut reqs, &mut sc, "scatter_init");
        let got = sr.get();
        check!(
            (0..n).all(|i| got[i] == v(root, me as usize * n + i, k)),
            "scatter run {k}: {got:?}"
        );

        ags.set(|i| v(me, i, k));
        agr.set(|_| -1);
        run_once(&mut reqs, &mut ag, "allgather_init");
        let got = agr.get();
        check!(
            (0..n * pu).all(|x| got[x] == v((x / n) as i32, x % n, k)),
            "allgather run {k}: {got:?}"
        );

        // Block j of rank r's send: v(r, j * n + i, k); we get rank j's block `me`.
        ats.set(|x| v(me, x, k));
        atr.set(|_| -1);
        run_once(&mut reqs, &mut at, "alltoall_init");
        let got = atr.get();
        check!(
            (0..n * pu).all(|x| got[x] == v((x / n) as i32, me as usize * n + x % n, k)),
            "alltoall run {k}: {got:?}"
        );

        rs.set(|i| v(me, i, k));
        rr.set(|_| -1);
        run_once(&mut reqs, &mut re, "reduce_init");
        if me == root {
            let got = rr.get();
            check!(
                (0..n).all(|i| got[i] == total(i, k, 0..p)),
                "reduce run {k}: {got:?}"
            );
        }

        ars.set(|i| v(me, i, k));
        arr.set(|_| -1);
        run_once(&mut reqs, &mut ar, "allreduce_init");
        let got = arr.get();
        check!(
            (0..n).all(|i| got[i] == total(i, k, 0..p)),
            "allreduce run {k}: {got:?}"
        );

        arp.set(|i| v(me, i, k));
        run_once(&mut reqs, &mut arip, "allreduce_init in place");
        let got = arp.get();
        check!(
            (0..n).all(|i| got[i] == total(i, k, 0..p)),
            "allreduce in place run {k}: {got:?}"
        );

        rss.set(|x| v(me, x, k));
        rsr.set(|_| -1);
        run_once(&mut reqs, &mut rsb, "reduce_scatter_block_init");
        let got = rsr.get();
        check!(
            (0..n).all(|i| got[i] == total(me as usize * n + i, k, 0..p)),
            "reduce_scatter_block run {k}: {got:?}"
        );

        scs.set(|i| v(me, i, k));
        scr.set(|_| -1);
        run_once(&mut reqs, &mut sca, "scan_init");
        let got = scr.get();
        check!(
            (0..n).all(|i| got[i] == total(i, k, 0..me + 1)),
            "scan run {k}: {got:?}"
        );

        exs.set(|i| v(me, i, k));
        exr.set(|_| -1);
        run_once(&mut reqs, &mut exa, "exscan_init");
        if me > 0 {
            let got = exr.get();
            check!(
                (0..n).all(|i| got[i] == total(i, k, 0..me)),
                "exscan run {k}: {got:?}"
            );
        }
    }
    // Inactive requests free at once; a freed id is refused.
    let mut freed = bc;
    for id in [
        &mut bar, &mut bc, &mut ga, &mut sc, &mut ag, &mut at, &mut re, &mut ar, &mut arip,
        &mut rsb, &mut sca, &mut exa,
    ] {
        must("free", reqs.free(id));
        check!(id.is_null(), "freed id is NULL");
    }
    let e = reqs.start(freed).unwrap_err();
    check!(e.class() == ErrorClass::Request, "start of a freed id: {e}");
    check!(reqs.free(&mut freed).is_err(), "double free");

    // Bad arguments are errors, not panics.
    let e = unsafe { reqs.bcast_init(world, bb.ptr(), n, p) }.unwrap_err();
    check!(e.class() == ErrorClass::Root, "bcast_init bad root: {e}");
    let e = unsafe { reqs.bcast_init::<i64>(world, std::ptr::null_mut(), n, 0) }.unwrap_err();
    check!(
        e.class() == ErrorClass::Buffer,
        "bcast_init null buffer: {e}"
    );
    let bad = OpHandle::NULL;
    let e = unsafe { reqs.allreduce_init(world, ars.ptr(), arr.ptr(), n, bad) }.unwrap_err();
    check!(e.class() == ErrorClass::Op, "allreduce_init null op: {e}");
}

/// The v-variants through the handle layer: blocks of `j % 3 + 1` elements, with gaps.
fn handle_layer_v(world: &Communicator, restarts: usize) {
    let (me, p) = (world.rank(), world.size());
    let (pu, meu) = (p as usize, me as usize);
    let root = p / 2;
    let counts: Vec<usize> = (0..pu).map(|j| j % 3 + 1).collect();
    let displs: Vec<usize> = counts
        .iter()
        .scan(0, |a, &c| {
            let d = *a;
            *a += c + 2;
            Some(d)
        })
        .collect();
    let vlen = displs[pu - 1] + counts[pu - 1];
    let mine = counts[meu];
    let mut reqs = Requests::new(world);
    // SAFETY (every `*_init` below): as in `handle_layer`.
    let (gs, gr) = (RawBuf::new(mine), RawBuf::new(vlen));
    let mut gv = must("gatherv_init", unsafe {
        reqs.gatherv_init(
            world,
            gs.ptr(),
            mine,
            gr.ptr(),
            vlen,
            &counts,
            &displs,
            root,
        )
    });
    let (ss, sr) = (RawBuf::new(vlen), RawBuf::new(mine));
    let mut sv = must("scatterv_init", unsafe {
        reqs.scatterv_init(
            world,
            ss.ptr(),
            vlen,
            &counts,
            &displs,
            sr.ptr(),
            mine,
            root,
        )
    });
    let (ags, agr) = (RawBuf::new(mine), RawBuf::new(vlen));
    let mut agv = must("allgatherv_init", unsafe {
        reqs.allgatherv_init(world, ags.ptr(), mine, agr.ptr(), vlen, &counts, &displs)
    });
    // Alltoallv: `mine` elements to every rank (back to back); from rank j, counts[j].
    let sc = vec![mine; pu];
    let sd: Vec<usize> = (0..pu).map(|j| j * mine).collect();
    let (avs, avr) = (RawBuf::new(mine * pu), RawBuf::new(vlen));
    let mut av = must("alltoallv_init", unsafe {
        reqs.alltoallv_init(
            world,
            avs.ptr(),
            mine * pu,
            &sc,
            &sd,
            avr.ptr(),
            vlen,
            &counts,
            &displs,
        )
    });
    let total: usize = counts.iter().sum();
    let off: usize = counts[..meu].iter().sum();
    let (rss, rsr) = (RawBuf::new(total), RawBuf::new(mine));
    let mut rs = must("reduce_scatter_init", unsafe {
        reqs.reduce_scatter_init(world, rss.ptr(), rsr.ptr(), &counts, OpHandle::SUM)
    });
    let rsp = RawBuf::new(total);
    let mut rsi = must("reduce_scatter_init in place", unsafe {
        reqs.reduce_scatter_init(world, std::ptr::null(), rsp.ptr(), &counts, OpHandle::SUM)
    });
    for k in 0..restarts {
        gs.set(|i| v(me, i, k));
        gr.set(|_| -1);
        run_once(&mut reqs, &mut gv, "gatherv_init");
        if me == root {
            let got = gr.get();
            check!(
                (0..pu).all(|j| (0..counts[j]).all(|i| got[displs[j] + i] == v(j as i32, i, k))),
                "gatherv run {k}: {got:?}"
            );
        }
        ss.set(|x| v(root, x, k));
        sr.set(|_| -1);
        run_once(&mut reqs, &mut sv, "scatterv_init");
        let got = sr.get();
        check!(
            (0..mine).all(|i| got[i] == v(root, displs[meu] + i, k)),
            "scatterv run {k}: {got:?}"
        );
        ags.set(|i| v(me, i, k));
        agr.set(|_| -1);
        run_once(&mut reqs, &mut agv, "allgatherv_init");
        let got = agr.get();
        check!(
            (0..pu).all(|j| (0..counts[j]).all(|i| got[displs[j] + i] == v(j as i32, i, k))),
            "allgatherv run {k}: {got:?}"
        );
        avs.set(|x| v(me, x, k));
        avr.set(|_| -1);
        run_once(&mut reqs, &mut av, "alltoallv_init");
        let got = avr.get();
        check!(
            (0..pu).all(|j| (0..counts[j])
                .all(|i| got[displs[j] + i] == v(j as i32, meu * counts[j] + i, k))),
            "alltoallv run {k}: {got:?}"
        );
        rss.set(|x| v(me, x, k));
        rsr.set(|_| -1);
        run_once(&mut reqs, &mut rs, "reduce_scatter_init");
        let got = rsr.get();
        let want: Vec<i64> = (0..mine)
            .map(|i| (0..p).map(|r| v(r, off + i, k)).sum())
            .collect();
        check!(got == want, "reduce_scatter run {k}: {got:?} want {want:?}");
        rsp.set(|x| v(me, x, k));
        run_once(&mut reqs, &mut rsi, "reduce_scatter_init in place");
        let got = rsp.get();
        check!(
            got[..mine] == want[..],
            "reduce_scatter in place run {k}: {got:?} want {want:?}"
        );
    }
    for id in [&mut gv, &mut sv, &mut agv, &mut av, &mut rs, &mut rsi] {
        must("free", reqs.free(id));
    }
    let e = unsafe {
        reqs.gatherv_init(
            world,
            gs.ptr(),
            mine,
            gr.ptr(),
            vlen,
            &counts[1..],
            &displs,
            root,
        )
    };
    // Only the root reads the counts.
    match e {
        Err(e) => check!(
            me == root && e.class() == ErrorClass::Arg,
            "gatherv_init with p - 1 counts: {e}"
        ),
        Ok(mut id) => {
            check!(me != root, "the root accepted p - 1 counts");
            must("free", reqs.free(&mut id));
        }
    }
}

/// Starts and waits `r` (checking that a second start fails).
fn cycle(r: &mut Persistent<'_, '_>, what: &str) {
    must(what, r.start());
    let e = r.start().unwrap_err();
    check!(
        e.class() == ErrorClass::Request,
        "{what}: second start: {e}"
    );
    must(what, r.wait());
    check!(!r.is_active(), "{what}: inactive after wait");
}

fn rust_api(world: &Communicator, restarts: usize) {
    let (me, p) = (world.rank(), world.size());
    let pu = p as usize;
    let meu = me as usize;
    let root = (p - 1).min(2);
    let n = 4usize;
    let mine: Vec<i64> = (0..n).map(|i| v(me, i, 0)).collect();
    let all_of = |r: i32| -> Vec<i64> { (0..n).map(|i| v(r, i, 0)).collect() };
    let sum_of = |i: usize, ranks: std::ops::Range<i32>| -> i64 { ranks.map(|r| v(r, i, 0)).sum() };
    // Blocks for the v-variants: rank j contributes j % 3 + 1 elements.
    let counts: Vec<usize> = (0..pu).map(|j| j % 3 + 1).collect();
    let displs: Vec<usize> = counts
        .iter()
        .scan(0, |a, &c| {
            let d = *a;
            *a += c + 1; // a gap between blocks
            Some(d)
        })
        .collect();
    let vlen = displs[pu - 1] + counts[pu - 1];
    let vmine: Vec<i64> = (0..counts[meu]).map(|i| v(me, i, 0)).collect();

    let mut bcast = if me == root {
        mine.clone()
    } else {
        vec![-1; n]
    };
    let mut gath = vec![-1i64; n * pu];
    let mut gath_ip: Vec<i64> = (0..n * pu)
        .map(|x| if x / n == meu { mine[x % n] } else { -1 })
        .collect();
    let mut gathv = vec![-1i64; vlen];
    let scat_src: Vec<i64> = (0..n * pu).map(|x| v(root, x, 0)).collect();
    let mut scat = vec![-1i64; n];
    let mut scatv = vec![-1i64; counts[meu]];
    let scatv_src: Vec<i64> = (0..vlen).map(|x| v(root, x, 0)).collect();
    let mut ag = vec![-1i64; n * pu];
    let mut ag_ip: Vec<i64> = (0..n * pu)
        .map(|x| if x / n == meu { mine[x % n] } else { -1 })
        .collect();
    let mut agv = vec![-1i64; vlen];
    let a2a_src: Vec<i64> = (0..n * pu).map(|x| v(me, x, 0)).collect();
    let mut a2a = vec![-1i64; n * pu];
    let mut a2a_ip = a2a_src.clone();
    let mut a2av = vec![-1i64; vlen];
    let a2av_src: Vec<i64> = (0..3 * pu).map(|x| v(me, x, 0)).collect();
    let w_src: Vec<u8> = (0..pu * 3).map(|x| (me as usize * 31 + x) as u8).collect();
    let mut w = vec![0u8; pu * 3];
    let wblocks: Vec<(usize, usize)> = (0..pu).map(|j| (j * 3, 3)).collect();
    let mut red = vec![-1i64; n];
    let mut red_ip = mine.clone();
    let mut ar = vec![-1i64; n];
    let mut ar_ip = mine.clone();
    let rs_src: Vec<i64> = (0..n * pu).map(|x| v(me, x, 0)).collect();
    let mut rs = vec![-1i64; n];
    let mut rsb = vec![-1i64; n];
    let mut rs_ip = rs_src.clone();
    let mut scat_ip = vec![-1i64; n];
    let mut sc = vec![-1i64; n];
    let mut sc_ip = mine.clone();
    let mut ex = vec![-1i64; n];
    let mut ex_ip = mine.clone();
    let rcounts = vec![n; pu];

    scope(|s| {
        let w_ = world;
        let mut reqs: Vec<(&str, Persistent<'_, '_>)> = vec![
            ("barrier_init", must("barrier_init", w_.barrier_init(s))),
            (
                "broadcast_init",
                must("b", w_.broadcast_init(s, root, &mut bcast[..])),
            ),
            (
                "gather_init",
                must("g", w_.gather_init(s, root, &mine, &mut gath)),
            ),
            (
                "gather_varcount_init",
                must(
                    "gv",
                    w_.gather_varcount_init(s, root, &vmine, &mut gathv, &counts, &displs),
                ),
            ),
            (
                "scatter_init",
                must("s", w_.scatter_init(s, root, &scat_src, &mut scat)),
            ),
            (
                "scatter_varcount_init",
                must(
                    "sv",
                    w_.scatter_varcount_init(s, root, &scatv_src, &counts, &displs, &mut scatv),
                ),
            ),
            (
                "all_gather_init",
                must("ag", w_.all_gather_init(s, &mine, &mut ag)),
            ),
            (
                "all_gather_in_place_init",
                must("agi", w_.all_gather_in_place_init(s, &mut ag_ip)),
            ),
            (
                "all_gather_varcount_init",
                must(
                    "agv",
                    w_.all_gather_varcount_init(s, &vmine, &mut agv, &counts, &displs),
                ),
            ),
            (
                "all_to_all_init",
                must("a2a", w_.all_to_all_init(s, &a2a_src, &mut a2a)),
            ),
            (
                "all_to_all_in_place_init",
                must("a2ai", w_.all_to_all_in_place_init(s, &mut a2a_ip)),
            ),
            (
                "all_to_all_varcount_init",
                must(
                    "a2av",
                    w_.all_to_all_varcount_init(
                        s,
                        &a2av_src,
                        &counts_to(pu, meu),
                        &displs_to(pu, meu),
                        &mut a2av,
                        &counts,
                        &displs,
                    ),
                ),
            ),
            (
                "all_to_all_w_init",
                must(
                    "w",
                    w_.all_to_all_w_init(s, &w_src, &wblocks, &mut w, &wblocks),
                ),
            ),
            (
                "reduce_init",
                must("r", w_.reduce_init(s, root, &mine, &mut red, Op::Sum)),
            ),
            (
                "all_reduce_init",
                must("ar", w_.all_reduce_init(s, &mine, &mut ar, Op::Sum)),
            ),
            (
                "all_reduce_in_place_init",
                must("ari", w_.all_reduce_in_place_init(s, &mut ar_ip, Op::Sum)),
            ),
            (
                "reduce_scatter_init",
                must(
                    "rs",
                    w_.reduce_scatter_init(s, &rs_src, &mut rs, &rcounts, Op::Sum),
                ),
            ),
            (
                "reduce_scatter_block_init",
                must(
                    "rsb",
                    w_.reduce_scatter_block_init(s, &rs_src, &mut rsb, Op::Sum),
                ),
            ),
            (
                "scan_init",
                must("sc", w_.scan_init(s, &mine, &mut sc, Op::Sum)),
            ),
            (
                "scan_in_place_init",
                must("sci", w_.scan_in_place_init(s, &mut sc_ip, Op::Sum)),
            ),
            (
                "exclusive_scan_init",
                must("ex", w_.exclusive_scan_init(s, &mine, &mut ex, Op::Sum)),
            ),
            (
                "exclusive_scan_in_place_init",
                must(
                    "exi",
                    w_.exclusive_scan_in_place_init(s, &mut ex_ip, Op::Sum),
                ),
            ),
        ];
        // The root reduces in place; the others contribute `mine`.
        let red_ip_req = if me == root {
            must("ri", w_.reduce_in_place_init(s, root, &mut red_ip, Op::Sum))
        } else {
            must("ri", w_.reduce_init(s, root, &mine, &mut red_ip, Op::Sum))
        };
        reqs.push(("reduce_in_place_init", red_ip_req));
        let gather_ip_req = if me == root {
            must("gi", w_.gather_in_place_init(s, root, &mut gath_ip))
        } else {
            must("gi", w_.gather_init(s, root, &mine, &mut gath_ip))
        };
        reqs.push(("gather_in_place_init", gather_ip_req));
        let scatter_ip_req = if me == root {
            must("si", w_.scatter_in_place_init(s, root, &scat_src))
        } else {
            must("si", w_.scatter_init(s, root, &[], &mut scat_ip))
        };
        reqs.push(("scatter_in_place_init", scatter_ip_req));
        check!(reqs.iter().all(|(_, r)| !r.is_active()), "inactive at init");
        for (what, r) in reqs.iter_mut() {
            check!(r.wait().is_err(), "{what}: wait before any start");
        }
        for _ in 0..restarts {
            // One at a time, in the same order on every rank.
            for (what, r) in reqs.iter_mut() {
                cycle(r, what);
            }
        }
        // All at once with start_all, then waited in order.
        let mut all: Vec<Persistent<'_, '_>> = reqs.into_iter().map(|(_, r)| r).collect();
        must("start_all", Persistent::start_all(&mut all));
        for r in all.iter_mut() {
            must("wait", r.wait());
        }
        // Inactive requests drop without waiting.
        drop(all);
    });
    let runs = restarts + 1;

    check!(bcast == all_of(root), "bcast {bcast:?}");
    if me == root {
        check!(
            (0..n * pu).all(|x| gath[x] == v((x / n) as i32, x % n, 0)),
            "gather {gath:?}"
        );
        check!(
            (0..n * pu).all(|x| gath_ip[x] == v((x / n) as i32, x % n, 0)),
            "gather in place {gath_ip:?}"
        );
        check!(
            (0..pu).all(|j| (0..counts[j]).all(|i| gathv[displs[j] + i] == v(j as i32, i, 0))),
            "gatherv {gathv:?}"
        );
    }
    check!(
        (0..n).all(|i| scat[i] == v(root, meu * n + i, 0)),
        "scatter {scat:?}"
    );
    check!(
        (0..counts[meu]).all(|i| scatv[i] == v(root, displs[meu] + i, 0)),
        "scatterv {scatv:?}"
    );
    check!(
        (0..n * pu).all(|x| ag[x] == v((x / n) as i32, x % n, 0)),
        "allgather {ag:?}"
    );
    check!(
        (0..n * pu).all(|x| ag_ip[x] == v((x / n) as i32, x % n, 0)),
        "allgather in place {ag_ip:?}"
    );
    check!(
        (0..pu).all(|j| (0..counts[j]).all(|i| agv[displs[j] + i] == v(j as i32, i, 0))),
        "allgatherv {agv:?}"
    );
    check!(
        (0..n * pu).all(|x| a2a[x] == v((x / n) as i32, meu * n + x % n, 0)),
        "alltoall {a2a:?}"
    );
    // In place, each run transposes the blocks again: even runs give back the input.
    let a2a_want: Vec<i64> = (0..n * pu)
        .map(|x| {
            if runs.is_multiple_of(2) {
                v(me, x, 0)
            } else {
                v((x / n) as i32, meu * n + x % n, 0)
            }
        })
        .collect();
    check!(a2a_ip == a2a_want, "alltoall in place {a2a_ip:?}");
    // Alltoallv: rank j sent us `counts[j]` elements from `displs_to(j)[me]`.
    check!(
        (0..pu).all(|j| {
            let sd = displs_to(pu, j)[meu];
            (0..counts[j]).all(|i| a2av[displs[j] + i] == v(j as i32, sd + i, 0))
        }),
        "alltoallv {a2av:?}"
    );
    check!(
        (0..pu).all(|j| (0..3).all(|b| w[j * 3 + b] == (j * 31 + meu * 3 + b) as u8)),
        "alltoallw {w:?}"
    );
    if me == root {
        check!((0..n).all(|i| red[i] == sum_of(i, 0..p)), "reduce {red:?}");
        // Each run adds every other rank's contribution to the root's running value.
        let others = |i: usize| sum_of(i, 0..p) - v(root, i, 0);
        check!(
            (0..n).all(|i| red_ip[i] == v(root, i, 0) + runs as i64 * others(i)),
            "reduce in place {red_ip:?}"
        );
    }
    check!((0..n).all(|i| ar[i] == sum_of(i, 0..p)), "allreduce {ar:?}");
    // In place: run 1 gives the sum S, every later run multiplies by p.
    let mul = (p as i64).wrapping_pow(runs as u32 - 1);
    check!(
        (0..n).all(|i| ar_ip[i] == sum_of(i, 0..p).wrapping_mul(mul)),
        "allreduce in place {ar_ip:?}"
    );
    let rs_want: Vec<i64> = (0..n)
        .map(|i| (0..p).map(|r| v(r, meu * n + i, 0)).sum())
        .collect();
    check!(rs == rs_want, "reduce_scatter {rs:?}");
    check!(rsb == rs_want, "reduce_scatter_block {rsb:?}");
    // In place, the rest of the buffer is undefined after a run: one run only.
    scope(|s| {
        let mut r = must(
            "rsi",
            world.reduce_scatter_in_place_init(s, &mut rs_ip, &rcounts, Op::Sum),
        );
        cycle(&mut r, "reduce_scatter_in_place_init");
    });
    check!(
        rs_ip[..n] == rs_want[..],
        "reduce_scatter in place {rs_ip:?}"
    );
    if me != root {
        check!(
            (0..n).all(|i| scat_ip[i] == v(root, meu * n + i, 0)),
            "scatter in place (non-root) {scat_ip:?}"
        );
    }
    check!((0..n).all(|i| sc[i] == sum_of(i, 0..me + 1)), "scan {sc:?}");
    // In place, serially: every run replaces each rank's value by the prefix sum.
    let mut model: Vec<Vec<i64>> = (0..p).map(all_of).collect();
    let mut ex_model = model.clone();
    for _ in 0..runs {
        for r in 1..pu {
            let prev = model[r - 1].clone();
            model[r].iter_mut().zip(prev).for_each(|(x, y)| *x += y);
        }
        let before = ex_model.clone();
        for (r, row) in ex_model.iter_mut().enumerate().skip(1) {
            for (i, x) in row.iter_mut().enumerate() {
                *x = before[..r].iter().map(|b| b[i]).sum();
            }
        }
    }
    check!(
        sc_ip == model[meu],
        "scan in place {sc_ip:?} want {:?}",
        model[meu]
    );
    if me > 0 {
        check!((0..n).all(|i| ex[i] == sum_of(i, 0..me)), "exscan {ex:?}");
        check!(ex_ip == ex_model[meu], "exscan in place {ex_ip:?}");
    }
}

/// Alltoallv send counts of rank `r`: `r % 3 + 1` elements to every rank, which is what
/// every receiver's layout (`counts[r]`) expects from `r`.
fn counts_to(p: usize, r: usize) -> Vec<usize> {
    vec![r % 3 + 1; p]
}

/// Displacements of [`counts_to`]: blocks back to back.
fn displs_to(p: usize, r: usize) -> Vec<usize> {
    (0..p).map(|j| j * (r % 3 + 1)).collect()
}

fn main() {
    // Through the handle layer, whose operation ids the C layer passes.
    let (world, args) = oxmpi_tests::handle_layer_world();
    let restarts: usize = args.first().and_then(|a| a.parse().ok()).unwrap_or(20);
    handle_layer(&world, restarts);
    handle_layer_v(&world, restarts);
    rust_api(&world, restarts);
    // A split communicator too (odd sizes, other context).
    if let Some(half) = must("split", world.split(world.rank() % 2, -world.rank())) {
        rust_api(&half, restarts / 2 + 1);
    }
    let me = world.rank();
    drop(world);
    must("finalize", oxmpi::handle::env::finalize());
    println!("rank {me}: coll_persistent passed");
}
