//! Every collective, blocking and nonblocking, in place and not, on `i32`, `f64`, `u8` and
//! `[f32; 3]`, at counts 0, 1, odd and (with `large`) 1 MiB, on the world communicator and on
//! split sub-communicators of odd sizes; each result is checked against a serial reference
//! computed here. Exits non-zero on the first mismatch.
//!
//! `coll_check [small|large]`

use std::fmt::Debug;
use std::process::exit;

use oxmpi::{scope, Communicator, Op, Reducible};

macro_rules! check {
    ($ctx:expr, $cond:expr, $($msg:tt)*) => {
        if !$cond {
            eprintln!("MISMATCH [{}] {}", $ctx, format!($($msg)*));
            exit(1);
        }
    };
}

/// Test values whose sums are exact in any order (small integers, also for floats).
trait V: Reducible + PartialEq + Debug + Copy {
    const NAME: &'static str;
    fn val(r: usize, i: usize) -> Self;
    fn sum(a: Self, b: Self) -> Self;
    fn max(a: Self, b: Self) -> Self;
}

fn base(r: usize, i: usize) -> i64 {
    ((r * 31 + i * 7 + (i >> 5)) % 201) as i64 - 100
}

impl V for i32 {
    const NAME: &'static str = "i32";
    fn val(r: usize, i: usize) -> Self {
        base(r, i) as i32 * 1000 + i as i32 % 1000
    }
    fn sum(a: Self, b: Self) -> Self {
        a.wrapping_add(b)
    }
    fn max(a: Self, b: Self) -> Self {
        a.max(b)
    }
}

impl V for f64 {
    const NAME: &'static str = "f64";
    fn val(r: usize, i: usize) -> Self {
        base(r, i) as f64 * 0.5
    }
    fn sum(a: Self, b: Self) -> Self {
        a + b
    }
    fn max(a: Self, b: Self) -> Self {
        a.max(b)
    }
}

impl V for u8 {
    const NAME: &'static str = "u8";
    fn val(r: usize, i: usize) -> Self {
        (r * 13 + i * 5 + (i >> 8)) as u8
    }
    fn sum(a: Self, b: Self) -> Self {
        a.wrapping_add(b)
    }
    fn max(a: Self, b: Self) -> Self {
        a.max(b)
    }
}

impl V for [f32; 3] {
    const NAME: &'static str = "[f32;3]";
    fn val(r: usize, i: usize) -> Self {
        let b = base(r, i) as f32;
        [b, -b, b * 0.25]
    }
    fn sum(a: Self, b: Self) -> Self {
        [a[0] + b[0], a[1] + b[1], a[2] + b[2]]
    }
    fn max(a: Self, b: Self) -> Self {
        [a[0].max(b[0]), a[1].max(b[1]), a[2].max(b[2])]
    }
}

fn data<T: V>(r: usize, n: usize, salt: usize) -> Vec<T> {
    (0..n).map(|i| T::val(r + salt, i)).collect()
}

fn reduce_ref<T: V>(ranks: std::ops::Range<usize>, n: usize, f: fn(T, T) -> T) -> Vec<T> {
    (0..n)
        .map(|i| {
            ranks
                .clone()
                .map(|r| T::val(r, i))
                .reduce(f)
                .unwrap_or_else(|| T::val(0, i))
        })
        .collect()
}

fn roots(p: usize) -> Vec<i32> {
    let mut r = vec![0, p as i32 - 1, p as i32 / 2];
    r.sort_unstable();
    r.dedup();
    r
}

fn check_all<T: V>(c: &Communicator, label: &str, n: usize) {
    let p = c.size() as usize;
    let me = c.rank() as usize;
    let ctx = format!("{label} p={p} rank={me} {} n={n}", T::NAME);
    let ok = |what: &str, r: oxmpi::Result<()>| {
        if let Err(e) = r {
            eprintln!("ERROR [{ctx}] {what}: {e}");
            exit(1);
        }
    };
    let zero = T::val(999, 0);

    // bcast
    for root in roots(p) {
        let mut buf: Vec<T> = if me == root as usize {
            data(root as usize, n, 0)
        } else {
            vec![zero; n]
        };
        ok("bcast", c.broadcast_into(root, &mut buf[..]));
        check!(
            ctx,
            buf == data::<T>(root as usize, n, 0),
            "bcast root {root}"
        );
    }

    // reduce (sum, max) and in place
    for root in roots(p) {
        let send = data::<T>(me, n, 0);
        let mut recv = vec![zero; if me == root as usize { n } else { 0 }];
        ok("reduce", c.reduce_into(root, &send, &mut recv, Op::Sum));
        if me == root as usize {
            check!(
                ctx,
                recv == reduce_ref::<T>(0..p, n, T::sum),
                "reduce sum root {root}"
            );
            let mut buf = send.clone();
            ok(
                "reduce in place",
                c.reduce_in_place(root, &mut buf, Op::Max),
            );
            check!(
                ctx,
                buf == reduce_ref::<T>(0..p, n, T::max),
                "reduce max in place root {root}"
            );
        } else {
            ok("reduce", c.reduce_into(root, &send, &mut [], Op::Max));
        }
    }

    // allreduce, in place
    let send = data::<T>(me, n, 0);
    let mut recv = vec![zero; n];
    ok("allreduce", c.all_reduce_into(&send, &mut recv, Op::Sum));
    check!(
        ctx,
        recv == reduce_ref::<T>(0..p, n, T::sum),
        "allreduce sum"
    );
    let mut buf = send.clone();
    ok(
        "allreduce in place",
        c.all_reduce_in_place(&mut buf, Op::Max),
    );
    check!(
        ctx,
        buf == reduce_ref::<T>(0..p, n, T::max),
        "allreduce max in place"
    );

    // gather / scatter / allgather / alltoall with per-rank blocks of n / p (at least 1)
    let b = (n / p).max(1);
    for root in roots(p) {
        let send = data::<T>(me, b, 0);
        let mut all = vec![zero; if me == root as usize { b * p } else { 0 }];
        ok("gather", c.gather_into(root, &send, &mut all));
        let want: Vec<T> = (0..p).flat_map(|r| data::<T>(r, b, 0)).collect();
        if me == root as usize {
            check!(ctx, all == want, "gather root {root}");
            let mut inplace: Vec<T> = (0..p)
                .flat_map(|r| {
                    if r == me {
                        data::<T>(r, b, 0)
                    } else {
                        vec![zero; b]
                    }
                })
                .collect();
            ok("gather in place", c.gather_in_place(root, &mut inplace));
            check!(ctx, inplace == want, "gather in place root {root}");
        } else {
            ok("gather", c.gather_into(root, &send, &mut []));
        }
        let src: Vec<T> = if me == root as usize {
            (0..p).flat_map(|r| data::<T>(r, b, 7)).collect()
        } else {
            vec![]
        };
        let mut mine = vec![zero; b];
        ok("scatter", c.scatter_into(root, &src, &mut mine));
        check!(ctx, mine == data::<T>(me, b, 7), "scatter root {root}");
        if me == root as usize {
            ok("scatter in place", c.scatter_in_place(root, &src));
        } else {
            let mut m2 = vec![zero; b];
            ok("scatter", c.scatter_into(root, &[], &mut m2));
            check!(
                ctx,
                m2 == data::<T>(me, b, 7),
                "scatter (in-place root) root {root}"
            );
        }
    }
    let send = data::<T>(me, b, 3);
    let mut all = vec![zero; b * p];
    ok("allgather", c.all_gather_into(&send, &mut all));
    let want: Vec<T> = (0..p).flat_map(|r| data::<T>(r, b, 3)).collect();
    check!(ctx, all == want, "allgather");
    let mut inplace: Vec<T> = (0..p)
        .flat_map(|r| {
            if r == me {
                data::<T>(r, b, 3)
            } else {
                vec![zero; b]
            }
        })
        .collect();
    ok("allgather in place", c.all_gather_in_place(&mut inplace));
    check!(ctx, inplace == want, "allgather in place");

    // alltoall: block j from rank r is data(r * p + j)
    let send: Vec<T> = (0..p).flat_map(|j| data::<T>(me * p + j, b, 0)).collect();
    let want: Vec<T> = (0..p).flat_map(|r| data::<T>(r * p + me, b, 0)).collect();
    let mut recv = vec![zero; b * p];
    ok("alltoall", c.all_to_all_into(&send, &mut recv));
    check!(ctx, recv == want, "alltoall");
    let mut buf = send.clone();
    ok("alltoall in place", c.all_to_all_in_place(&mut buf));
    check!(ctx, buf == want, "alltoall in place");

    // v-variants: rank r's block has (r + n) % 5 elements (some empty), laid out reversed
    let cnt = |r: usize| (r + n) % 5;
    let counts: Vec<usize> = (0..p).map(cnt).collect();
    let total: usize = counts.iter().sum();
    let mut displs = vec![0; p];
    let mut at = 0;
    for r in (0..p).rev() {
        displs[r] = at;
        at += counts[r];
    }
    let mine = data::<T>(me, cnt(me), 11);
    let mut want = vec![zero; total];
    for r in 0..p {
        want[displs[r]..displs[r] + counts[r]].copy_from_slice(&data::<T>(r, cnt(r), 11));
    }
    let mut got = vec![zero; total];
    ok(
        "allgatherv",
        c.all_gather_varcount_into(&mine, &mut got, &counts, &displs),
    );
    check!(ctx, got == want, "allgatherv");
    let in_order: Vec<usize> = (0..p).map(|r| counts[..r].iter().sum()).collect();
    let mut got2 = vec![zero; total];
    ok(
        "allgatherv in order",
        c.all_gather_varcount_into(&mine, &mut got2, &counts, &in_order),
    );
    let want2: Vec<T> = (0..p).flat_map(|r| data::<T>(r, cnt(r), 11)).collect();
    check!(ctx, got2 == want2, "allgatherv (rank-ordered blocks)");
    for root in roots(p) {
        let mut got = vec![zero; if me == root as usize { total } else { 0 }];
        ok(
            "gatherv",
            c.gather_varcount_into(root, &mine, &mut got, &counts, &displs),
        );
        if me == root as usize {
            check!(ctx, got == want, "gatherv root {root}");
        }
        let src = if me == root as usize {
            want.clone()
        } else {
            vec![]
        };
        let mut back = vec![zero; cnt(me)];
        ok(
            "scatterv",
            c.scatter_varcount_into(root, &src, &counts, &displs, &mut back),
        );
        check!(ctx, back == mine, "scatterv root {root}");
    }
    // alltoallv: block to j has (me + 2j + n) % 4 elements
    let len = |from: usize, to: usize| (from + 2 * to + n) % 4;
    let sc: Vec<usize> = (0..p).map(|j| len(me, j)).collect();
    let rc: Vec<usize> = (0..p).map(|j| len(j, me)).collect();
    let sd: Vec<usize> = (0..p).map(|j| sc[..j].iter().sum()).collect();
    let rd: Vec<usize> = (0..p).map(|j| rc[..j].iter().sum()).collect();
    let send: Vec<T> = (0..p)
        .flat_map(|j| data::<T>(me * 100 + j, len(me, j), 0))
        .collect();
    let want: Vec<T> = (0..p)
        .flat_map(|j| data::<T>(j * 100 + me, len(j, me), 0))
        .collect();
    let mut recv = vec![zero; want.len()];
    ok(
        "alltoallv",
        c.all_to_all_varcount_into(&send, &sc, &sd, &mut recv, &rc, &rd),
    );
    check!(ctx, recv == want, "alltoallv");

    // reduce-scatter (block and varying), scan, exscan
    let send = data::<T>(me, b * p, 0);
    let mut mine = vec![zero; b];
    ok(
        "reduce_scatter_block",
        c.reduce_scatter_block_into(&send, &mut mine, Op::Sum),
    );
    let full = reduce_ref::<T>(0..p, b * p, T::sum);
    check!(
        ctx,
        mine[..] == full[me * b..(me + 1) * b],
        "reduce_scatter_block"
    );
    let rcounts: Vec<usize> = (0..p).map(|r| (r * 3 + n) % 4).collect();
    let tot: usize = rcounts.iter().sum();
    let send = data::<T>(me, tot, 0);
    let mut mine = vec![zero; rcounts[me]];
    ok(
        "reduce_scatter",
        c.reduce_scatter_into(&send, &mut mine, &rcounts, Op::Max),
    );
    let full = reduce_ref::<T>(0..p, tot, T::max);
    let off: usize = rcounts[..me].iter().sum();
    check!(
        ctx,
        mine[..] == full[off..off + rcounts[me]],
        "reduce_scatter"
    );
    let mut buf = send.clone();
    ok(
        "reduce_scatter in place",
        c.reduce_scatter_in_place(&mut buf, &rcounts, Op::Max),
    );
    check!(
        ctx,
        buf[..rcounts[me]] == full[off..off + rcounts[me]],
        "reduce_scatter in place"
    );

    let send = data::<T>(me, n, 0);
    let mut recv = vec![zero; n];
    ok("scan", c.scan_into(&send, &mut recv, Op::Sum));
    check!(ctx, recv == reduce_ref::<T>(0..me + 1, n, T::sum), "scan");
    let mut buf = send.clone();
    ok("scan in place", c.scan_in_place(&mut buf, Op::Max));
    check!(
        ctx,
        buf == reduce_ref::<T>(0..me + 1, n, T::max),
        "scan in place"
    );
    let mut recv = vec![zero; n];
    ok("exscan", c.exclusive_scan_into(&send, &mut recv, Op::Sum));
    if me > 0 {
        check!(ctx, recv == reduce_ref::<T>(0..me, n, T::sum), "exscan");
    }
    let mut buf = send.clone();
    ok(
        "exscan in place",
        c.exclusive_scan_in_place(&mut buf, Op::Sum),
    );
    if me > 0 {
        check!(
            ctx,
            buf == reduce_ref::<T>(0..me, n, T::sum),
            "exscan in place"
        );
    }

    // Nonblocking: several at once, waited in reverse order.
    let a_send = data::<T>(me, n, 0);
    let mut a_recv = vec![zero; n];
    let mut bc: Vec<T> = if me == 0 {
        data(5, n, 0)
    } else {
        vec![zero; n]
    };
    let g_send = data::<T>(me, b, 1);
    let mut g_recv = vec![zero; b * p];
    let t_send: Vec<T> = (0..p).flat_map(|j| data::<T>(me * p + j, b, 0)).collect();
    let mut t_recv = vec![zero; b * p];
    let s_send = data::<T>(me, n, 0);
    let mut s_recv = vec![zero; n];
    let r_send = data::<T>(me, b * p, 0);
    let mut r_recv = vec![zero; b];
    let mut ip = data::<T>(me, n, 0);
    scope(|s| {
        let reqs = vec![
            c.immediate_all_reduce_into(s, &a_send, &mut a_recv, Op::Sum),
            c.immediate_broadcast_into(s, 0, &mut bc[..]),
            c.immediate_all_gather_into(s, &g_send, &mut g_recv),
            c.immediate_barrier(s),
            c.immediate_all_to_all_into(s, &t_send, &mut t_recv),
            c.immediate_scan_into(s, &s_send, &mut s_recv, Op::Sum),
            c.immediate_reduce_scatter_block_into(s, &r_send, &mut r_recv, Op::Sum),
            c.immediate_all_reduce_in_place(s, &mut ip, Op::Max),
        ];
        for (k, r) in reqs.into_iter().rev().enumerate() {
            match r {
                Ok(r) => ok("immediate wait", r.wait().map(drop)),
                Err(e) => {
                    eprintln!("ERROR [{ctx}] immediate start {k}: {e}");
                    exit(1);
                }
            }
        }
    });
    check!(
        ctx,
        a_recv == reduce_ref::<T>(0..p, n, T::sum),
        "iallreduce"
    );
    check!(ctx, bc == data::<T>(5, n, 0), "ibcast");
    check!(
        ctx,
        g_recv == (0..p).flat_map(|r| data::<T>(r, b, 1)).collect::<Vec<_>>(),
        "iallgather"
    );
    check!(
        ctx,
        t_recv
            == (0..p)
                .flat_map(|r| data::<T>(r * p + me, b, 0))
                .collect::<Vec<_>>(),
        "ialltoall"
    );
    check!(
        ctx,
        s_recv == reduce_ref::<T>(0..me + 1, n, T::sum),
        "iscan"
    );
    check!(
        ctx,
        r_recv[..] == reduce_ref::<T>(0..p, b * p, T::sum)[me * b..(me + 1) * b],
        "ireduce_scatter_block"
    );
    check!(
        ctx,
        ip == reduce_ref::<T>(0..p, n, T::max),
        "iallreduce in place"
    );

    // Nonblocking in-place forms: every one outstanding at once (per root), waited in a
    // shuffled order, against the serial references.
    for root in roots(p) {
        let is_root = me == root as usize;
        let gwant: Vec<T> = (0..p).flat_map(|r| data::<T>(r, b, 21)).collect();
        let mut gbuf: Vec<T> = if is_root {
            (0..p)
                .flat_map(|r| {
                    if r == me {
                        data::<T>(r, b, 21)
                    } else {
                        vec![zero; b]
                    }
                })
                .collect()
        } else {
            vec![]
        };
        let gsend = data::<T>(me, b, 21);
        let ssrc: Vec<T> = if is_root {
            (0..p).flat_map(|r| data::<T>(r, b, 22)).collect()
        } else {
            vec![]
        };
        let mut spiece = vec![zero; b];
        let rsend = data::<T>(me, n, 23);
        let mut rbuf = if is_root { rsend.clone() } else { vec![] };
        let mut agbuf: Vec<T> = (0..p)
            .flat_map(|r| {
                if r == me {
                    data::<T>(r, b, 24)
                } else {
                    vec![zero; b]
                }
            })
            .collect();
        let mut a2a: Vec<T> = (0..p).flat_map(|j| data::<T>(me * p + j, b, 25)).collect();
        let rcounts: Vec<usize> = (0..p).map(|r| (r * 3 + n + root as usize) % 4).collect();
        let tot: usize = rcounts.iter().sum();
        let mut rsbuf = data::<T>(me, tot, 0);
        let mut scbuf = data::<T>(me, n, 0);
        let mut exbuf = data::<T>(me, n, 0);
        scope(|s| {
            let rooted = if is_root {
                vec![
                    c.immediate_gather_in_place(s, root, &mut gbuf),
                    c.immediate_scatter_in_place(s, root, &ssrc),
                    c.immediate_reduce_in_place(s, root, &mut rbuf, Op::Max),
                ]
            } else {
                vec![
                    c.immediate_gather_into(s, root, &gsend, &mut []),
                    c.immediate_scatter_into(s, root, &[], &mut spiece),
                    c.immediate_reduce_into(s, root, &rsend, &mut [], Op::Max),
                ]
            };
            let mut reqs = rooted;
            reqs.push(c.immediate_all_gather_in_place(s, &mut agbuf));
            reqs.push(c.immediate_all_to_all_in_place(s, &mut a2a));
            reqs.push(c.immediate_reduce_scatter_in_place(s, &mut rsbuf, &rcounts, Op::Max));
            reqs.push(c.immediate_scan_in_place(s, &mut scbuf, Op::Sum));
            reqs.push(c.immediate_exclusive_scan_in_place(s, &mut exbuf, Op::Max));
            let mut reqs: Vec<_> = reqs.into_iter().map(Some).collect();
            let k = reqs.len();
            for i in 0..k {
                let r = reqs[(i * 3 + root as usize) % k].take().expect("each once");
                ok("immediate in place", r.and_then(|r| r.wait()).map(drop));
            }
        });
        if is_root {
            check!(ctx, gbuf == gwant, "igather in place root {root}");
            check!(
                ctx,
                rbuf == (0..n)
                    .map(|i| (0..p)
                        .map(|r| T::val(r + 23, i))
                        .reduce(T::max)
                        .unwrap_or(zero))
                    .collect::<Vec<_>>(),
                "ireduce in place root {root}"
            );
        } else {
            check!(
                ctx,
                spiece == data::<T>(me, b, 22),
                "iscatter (in-place root) root {root}"
            );
        }
        check!(
            ctx,
            agbuf == (0..p).flat_map(|r| data::<T>(r, b, 24)).collect::<Vec<_>>(),
            "iallgather in place"
        );
        check!(
            ctx,
            a2a == (0..p)
                .flat_map(|r| data::<T>(r * p + me, b, 25))
                .collect::<Vec<_>>(),
            "ialltoall in place"
        );
        let full = reduce_ref::<T>(0..p, tot, T::max);
        let off: usize = rcounts[..me].iter().sum();
        check!(
            ctx,
            rsbuf[..rcounts[me]] == full[off..off + rcounts[me]],
            "ireduce_scatter in place"
        );
        check!(
            ctx,
            scbuf == reduce_ref::<T>(0..me + 1, n, T::sum),
            "iscan in place"
        );
        let exwant = if me > 0 {
            reduce_ref::<T>(0..me, n, T::max)
        } else {
            data::<T>(0, n, 0)
        };
        check!(ctx, exbuf == exwant, "iexscan in place");
    }

    // Other nonblocking forms, one at a time.
    for root in roots(p) {
        let send = data::<T>(me, b, 2);
        let mut all = vec![zero; if me == root as usize { b * p } else { 0 }];
        let mut red = vec![zero; if me == root as usize { b } else { 0 }];
        let src: Vec<T> = if me == root as usize {
            (0..p).flat_map(|r| data::<T>(r, b, 4)).collect()
        } else {
            vec![]
        };
        let mut piece = vec![zero; b];
        scope(|s| {
            let r1 = c.immediate_gather_into(s, root, &send, &mut all);
            let r2 = c.immediate_reduce_into(s, root, &send, &mut red, Op::Sum);
            let r3 = c.immediate_scatter_into(s, root, &src, &mut piece);
            for r in [r1, r2, r3] {
                ok("immediate rooted", r.and_then(|r| r.wait()).map(drop));
            }
        });
        if me == root as usize {
            check!(
                ctx,
                all == (0..p).flat_map(|r| data::<T>(r, b, 2)).collect::<Vec<_>>(),
                "igather root {root}"
            );
            let want: Vec<T> = (0..b)
                .map(|i| {
                    (0..p)
                        .map(|r| T::val(r + 2, i))
                        .reduce(T::sum)
                        .unwrap_or(zero)
                })
                .collect();
            check!(ctx, red == want, "ireduce root {root}");
        }
        check!(ctx, piece == data::<T>(me, b, 4), "iscatter root {root}");
    }
    let mut got = vec![zero; total];
    let mine = data::<T>(me, cnt(me), 11);
    let mut ex = vec![zero; n];
    let mut vrecv = vec![zero; rc.iter().sum()];
    let vsend: Vec<T> = (0..p)
        .flat_map(|j| data::<T>(me * 100 + j, len(me, j), 0))
        .collect();
    scope(|s| {
        let r1 = c.immediate_all_gather_varcount_into(s, &mine, &mut got, &counts, &displs);
        let r2 = c.immediate_exclusive_scan_into(s, &a_send, &mut ex, Op::Sum);
        let r3 = c.immediate_all_to_all_varcount_into(s, &vsend, &sc, &sd, &mut vrecv, &rc, &rd);
        for r in [r3, r1, r2] {
            ok("immediate v", r.and_then(|r| r.wait()).map(drop));
        }
    });
    let mut want = vec![zero; total];
    for r in 0..p {
        want[displs[r]..displs[r] + counts[r]].copy_from_slice(&data::<T>(r, cnt(r), 11));
    }
    check!(ctx, got == want, "iallgatherv");
    if me > 0 {
        check!(ctx, ex == reduce_ref::<T>(0..me, n, T::sum), "iexscan");
    }
    check!(
        ctx,
        vrecv
            == (0..p)
                .flat_map(|j| data::<T>(j * 100 + me, len(j, me), 0))
                .collect::<Vec<_>>(),
        "ialltoallv"
    );

    ok("barrier", c.barrier());
}

fn suite(c: &Communicator, label: &str, counts: &[usize]) {
    for &n in counts {
        check_all::<i32>(c, label, n);
        check_all::<f64>(c, label, n);
        check_all::<u8>(c, label, n);
        check_all::<[f32; 3]>(c, label, n);
    }
}

fn main() {
    let universe = oxmpi::init().expect("init");
    let world = universe.world();
    let large = std::env::args().nth(1).as_deref() == Some("large");
    let p = world.size() as usize;
    let mut checks = 0;
    if large {
        // 1 MiB vectors (per rank for bcast/reduce/allreduce/scan).
        check_all::<u8>(&world, "world", 1 << 20);
        check_all::<f64>(&world, "world", (1 << 20) / 8 + 3);
        checks += 2;
    } else {
        suite(&world, "world", &[0, 1, 7, 33, 1000]);
        checks += 20;
        // Sub-communicators of odd sizes, ranks in reverse order.
        let sub = world
            .split((world.rank() % 2) as i32, -world.rank())
            .expect("split")
            .expect("member");
        let label = format!("split{}", world.rank() % 2);
        suite(&sub, &label, &[0, 1, 7, 33]);
        checks += 16;
        // A sub-communicator of p - 1 ranks (odd when p is even), from a group.
        if p > 2 {
            let g = world.group().exclude(&[0]).expect("exclude");
            match world.create(&g).expect("create") {
                Some(c) => {
                    suite(&c, "create", &[3, 17]);
                    checks += 8;
                }
                None => checks += 8,
            }
        }
    }
    world.barrier().expect("barrier");
    println!("rank {} coll_check passed {checks} suites", world.rank());
    universe.finalize().expect("finalize");
}
