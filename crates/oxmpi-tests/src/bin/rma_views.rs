//! One-sided operations of the Rust `Window` API through datatypes, at any number of ranks,
//! over every window flavor: put, get, accumulate (SUM, from every rank to every rank) and
//! get_accumulate (SUM and NO_OP) with vector and indexed types on the origin and the target
//! side, first as blocking calls in fence epochs, then as requests (`rput_view` … and the
//! typed `rput` …, completed by wait or test) in lock_all epochs. A serial model of every
//! rank's window memory, computed from the types' block lists without the datatype engine,
//! is compared with every element of the window after each epoch and with every element of
//! each origin and result buffer (gap elements must keep their sentinel). Then the bad
//! inputs: signature and length mismatches, ranges outside the window (also as requests),
//! accumulates of mixed types, access outside an epoch; each must give its error class and
//! leave the memory as it was (an accumulate of zero elements is no error). Prints "rank N passed".

use oxmpi::datatype::Type;
use oxmpi::point_to_point::{View, ViewMut};
use oxmpi::window::{mode, Flavor, TargetView, Window};
use oxmpi::{Communicator, ErrorClass, Op};
use oxmpi_tests::{check, must};

/// Window length in i64 per rank.
const N: usize = 32;
/// Where operations land in the target window (elements), so a type's offsets are not
/// measured from the window's start.
const AT: usize = 3;
/// What origin and result buffers hold outside the elements a view shows.
const SENTINEL: i64 = 0x5A5A_5A5A_5A5A_5A5A;

/// A datatype over i64 with its serial reference: the offsets (in elements from the
/// buffer's start) of its `count` elements in type-map order, derived from the same block
/// list by the standard's rule (copy `k` starts `k` extents after the origin).
struct Shape {
    name: &'static str,
    ty: Type,
    count: u64,
    offs: Vec<usize>,
}

impl Shape {
    fn from_blocks(name: &'static str, ty: Type, blocks: &[(usize, usize)], count: u64) -> Shape {
        let lb = blocks.iter().map(|b| b.0).min().unwrap_or(0);
        let ub = blocks.iter().map(|b| b.0 + b.1).max().unwrap_or(0);
        let ext = ub - lb;
        let offs = (0..count as usize)
            .flat_map(|k| {
                blocks
                    .iter()
                    .flat_map(move |&(d, l)| (0..l).map(move |j| k * ext + d + j))
            })
            .collect();
        Shape {
            name,
            ty,
            count,
            offs,
        }
    }

    fn contiguous(n: usize) -> Shape {
        Shape::from_blocks("contiguous", Type::of::<i64>(), &[(0, 1)], n as u64)
    }

    fn vector(name: &'static str, n: usize, bl: usize, stride: usize, count: u64) -> Shape {
        let ty = must(
            "vector",
            Type::vector(n as i64, bl as i64, stride as i64, &Type::of::<i64>()),
        );
        let blocks: Vec<(usize, usize)> = (0..n).map(|i| (i * stride, bl)).collect();
        Shape::from_blocks(name, ty, &blocks, count)
    }

    fn indexed(name: &'static str, blocks: &[(usize, usize)], count: u64) -> Shape {
        let lens: Vec<i64> = blocks.iter().map(|b| b.1 as i64).collect();
        let displs: Vec<i64> = blocks.iter().map(|b| b.0 as i64).collect();
        let ty = must("indexed", Type::indexed(&lens, &displs, &Type::of::<i64>()));
        Shape::from_blocks(name, ty, blocks, count)
    }

    /// Buffer length covering every element.
    fn span(&self) -> usize {
        self.offs.iter().max().map_or(0, |m| m + 1)
    }

    /// A buffer holding `v(i)` at the i-th element and the sentinel elsewhere.
    fn buffer(&self, v: impl Fn(usize) -> i64) -> Vec<i64> {
        let mut b = vec![SENTINEL; self.span()];
        for (i, &o) in self.offs.iter().enumerate() {
            b[o] = v(i);
        }
        b
    }
}

/// The shapes (12 elements each): contiguous, vectors with count 1 and 2, indexed with
/// count 2 (lower bound 1, so the second copy starts one extent of 9 after the origin).
fn shapes() -> Vec<Shape> {
    vec![
        Shape::contiguous(12),
        Shape::vector("vector(3,2,5)x2", 3, 2, 5, 2),
        Shape::vector("vector(4,3,4)", 4, 3, 4, 1),
        Shape::indexed("indexed{1:2,4:1,7:3}x2", &[(1, 2), (4, 1), (7, 3)], 2),
    ]
}

/// (origin, target) pairs by index into [`shapes`]: every shape on each side.
const PAIRS: [(usize, usize); 6] = [(0, 0), (0, 1), (1, 3), (3, 2), (2, 3), (3, 0)];

/// One flavor's window, this rank's memory in it, and the model of every rank's memory.
struct Setup<'a> {
    world: &'a Communicator,
    win: Window<'a>,
    flavor: Flavor,
    /// Displacement of element 0 of each rank's window (addresses for dynamic windows).
    base: Vec<i64>,
    mem: *mut i64,
    model: Vec<Vec<i64>>,
    me: usize,
    np: usize,
}

impl Setup<'_> {
    /// The target view of `shape` at element `at` of rank `t`.
    fn target(&self, t: usize, at: usize, shape: &Shape) -> TargetView {
        let unit = if self.flavor == Flavor::Dynamic { 8 } else { 1 };
        let disp = self.base[t] + (unit * at) as i64;
        TargetView::new(t as i32, disp, &shape.ty, shape.count)
    }

    /// This rank's window memory (between epochs).
    fn local(&self) -> Vec<i64> {
        // SAFETY: `mem` is this rank's N-element window memory, alive while the window is
        // and only written by peers inside epochs, which have all ended here.
        unsafe { std::slice::from_raw_parts(self.mem, N).to_vec() }
    }

    /// Compares this rank's whole window with the model, then lets the next epoch begin.
    fn verify(&self, what: &str) {
        let got = self.local();
        for (i, (g, w)) in got.iter().zip(&self.model[self.me]).enumerate() {
            check!(
                g == w,
                "{:?} {what}: window element {i} is {g:#x}, model {w:#x}",
                self.flavor
            );
        }
        must("barrier", self.world.barrier());
    }

    /// Runs `f` in an access epoch to every rank: fences, or lock_all (`passive`).
    fn epoch(&self, passive: bool, f: impl FnOnce()) {
        if passive {
            must("lock_all", self.win.lock_all(mode::NOCHECK));
            f();
            must("flush_all", self.win.flush_all());
            must("unlock_all", self.win.unlock_all());
            must("barrier", self.world.barrier());
        } else {
            must("fence", self.win.fence(0));
            f();
            must("fence", self.win.fence(mode::NOSUCCEED));
        }
    }
}

fn check_buffer(what: &str, got: &[i64], want: &[i64]) {
    check!(got.len() == want.len(), "{what}: length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        check!(g == w, "{what}: element {i} is {g:#x}, expected {w:#x}");
    }
}

/// Completes `r` by wait or, for odd `k`, by testing until it is done.
fn complete(k: usize, mut r: oxmpi::Request<'_, '_>) {
    if k.is_multiple_of(2) {
        must("wait", r.wait());
        return;
    }
    loop {
        if let Some(st) = r.test() {
            must("test", st);
            return;
        }
        std::thread::yield_now();
    }
}

/// Origin values of rank `r`'s put/get_accumulate for pair `p`.
fn value(r: usize, p: usize, i: usize) -> i64 {
    (r * 10_000 + p * 100 + i + 1) as i64
}

/// Every operation for every pair: blocking (`passive` false) or as requests.
fn operations(s: &mut Setup<'_>, passive: bool) {
    let shapes = shapes();
    let (me, np) = (s.me, s.np);
    let right = (me + 1) % np;
    let left = (me + np - 1) % np;
    let mode = if passive { "request" } else { "blocking" };
    for (k, &(oi, ti)) in PAIRS.iter().enumerate() {
        let (o, t) = (&shapes[oi], &shapes[ti]);
        let what = format!("{mode} {} -> {}", o.name, t.name);
        // Typed slices stand in for the contiguous-to-contiguous pair in request mode.
        let typed = passive && oi == 0 && ti == 0;

        // put to the right neighbour.
        let src = o.buffer(|i| value(me, k, i));
        s.epoch(passive, || {
            let tv = s.target(right, AT, t);
            if typed {
                oxmpi::scope(|sc| {
                    complete(
                        k,
                        must(
                            "rput",
                            s.win.rput(sc, &src[..12], right as i32, tv_disp(s, right)),
                        ),
                    );
                });
            } else if passive {
                oxmpi::scope(|sc| {
                    let v = must("view", View::new(&src, &o.ty, o.count));
                    complete(k, must("rput_view", s.win.rput_view(sc, v, &tv)));
                });
            } else {
                let v = must("view", View::new(&src, &o.ty, o.count));
                must("put_view", s.win.put_view(&v, &tv));
            }
        });
        for r in 0..np {
            let dst = (r + 1) % np;
            for (i, &off) in t.offs.iter().enumerate() {
                s.model[dst][AT + off] = value(r, k, i);
            }
        }
        check_buffer(
            &format!("{what}: put origin"),
            &src,
            &o.buffer(|i| value(me, k, i)),
        );
        s.verify(&format!("{what}: put"));

        // get from the left neighbour.
        let mut got = vec![SENTINEL; o.span()];
        s.epoch(passive, || {
            let tv = s.target(left, AT, t);
            if typed {
                oxmpi::scope(|sc| {
                    complete(
                        k,
                        must(
                            "rget",
                            s.win
                                .rget(sc, &mut got[..12], left as i32, tv_disp(s, left)),
                        ),
                    );
                });
            } else if passive {
                oxmpi::scope(|sc| {
                    let v = must("view", ViewMut::new(&mut got, &o.ty, o.count));
                    complete(k, must("rget_view", s.win.rget_view(sc, v, &tv)));
                });
            } else {
                let mut v = must("view", ViewMut::new(&mut got, &o.ty, o.count));
                must("get_view", s.win.get_view(&mut v, &tv));
            }
        });
        let want = o.buffer(|i| s.model[left][AT + t.offs[i]]);
        check_buffer(&format!("{what}: get"), &got, &want);
        s.verify(&format!("{what}: get"));

        // accumulate SUM from every rank to every rank (concurrently).
        let add = o.buffer(|i| (me * 100 + i + 1) as i64);
        s.epoch(passive, || {
            for dst in 0..np {
                let tv = s.target(dst, AT, t);
                if typed {
                    oxmpi::scope(|sc| {
                        let r = s.win.raccumulate(
                            sc,
                            &add[..12],
                            dst as i32,
                            tv_disp(s, dst),
                            &Op::Sum,
                        );
                        complete(k + dst, must("raccumulate", r));
                    });
                } else if passive {
                    oxmpi::scope(|sc| {
                        let v = must("view", View::new(&add, &o.ty, o.count));
                        let r = s.win.raccumulate_view(sc, v, &tv, &Op::Sum);
                        complete(k + dst, must("raccumulate_view", r));
                    });
                } else {
                    let v = must("view", View::new(&add, &o.ty, o.count));
                    must("accumulate_view", s.win.accumulate_view(&v, &tv, &Op::Sum));
                }
            }
        });
        for dst in 0..np {
            for (i, &off) in t.offs.iter().enumerate() {
                for r in 0..np {
                    s.model[dst][AT + off] += (r * 100 + i + 1) as i64;
                }
            }
        }
        s.verify(&format!("{what}: accumulate"));

        // get_accumulate SUM to the right neighbour, then NO_OP from the left one; the
        // result side has the origin's shape.
        for (op, peer) in [(Op::Sum, right), (Op::NoOp, left)] {
            let inc = o.buffer(|i| -value(me, k, i));
            let mut res = vec![SENTINEL; o.span()];
            s.epoch(passive, || {
                let tv = s.target(peer, AT, t);
                if typed {
                    oxmpi::scope(|sc| {
                        let r = s.win.rget_accumulate(
                            sc,
                            &inc[..12],
                            &mut res[..12],
                            peer as i32,
                            tv_disp(s, peer),
                            &op,
                        );
                        complete(k, must("rget_accumulate", r));
                    });
                } else if passive {
                    oxmpi::scope(|sc| {
                        let v = must("view", View::new(&inc, &o.ty, o.count));
                        let rv = must("view", ViewMut::new(&mut res, &o.ty, o.count));
                        let r = s.win.rget_accumulate_view(sc, v, rv, &tv, &op);
                        complete(k, must("rget_accumulate_view", r));
                    });
                } else {
                    let v = must("view", View::new(&inc, &o.ty, o.count));
                    let mut rv = must("view", ViewMut::new(&mut res, &o.ty, o.count));
                    must(
                        "get_accumulate_view",
                        s.win.get_accumulate_view(&v, &mut rv, &tv, &op),
                    );
                }
            });
            let want = o.buffer(|i| s.model[peer][AT + t.offs[i]]);
            check_buffer(
                &format!("{what}: get_accumulate {op:?} result"),
                &res,
                &want,
            );
            if matches!(op, Op::Sum) {
                for r in 0..np {
                    let dst = (r + 1) % np;
                    for (i, &off) in t.offs.iter().enumerate() {
                        s.model[dst][AT + off] -= value(r, k, i);
                    }
                }
            }
            s.verify(&format!("{what}: get_accumulate {op:?}"));
        }
    }
}

/// The displacement of element [`AT`] of rank `t` for the typed (contiguous) forms.
fn tv_disp(s: &Setup<'_>, t: usize) -> i64 {
    let unit = if s.flavor == Flavor::Dynamic { 8 } else { 1 };
    s.base[t] + (unit * AT) as i64
}

fn expect(what: &str, r: oxmpi::Result<()>, class: ErrorClass) {
    match r {
        Err(e) if e.class() == class => {}
        other => check!(false, "{what}: expected {class:?}, got {other:?}"),
    }
}

/// Each bad input gives its class and changes neither the window nor the origin's buffer.
fn bad_inputs(s: &Setup<'_>) {
    let shapes = shapes();
    let (vec2, idx) = (&shapes[1], &shapes[3]);
    let right = (s.me + 1) % s.np;
    let ints = vec2.buffer(|i| i as i64);
    let reals: Vec<f64> = (0..12).map(|i| i as f64).collect();
    let f64s = |n| View::new(&reals, &Type::of::<f64>(), n);
    let iv = must("view", View::new(&ints, &vec2.ty, vec2.count));
    let tv = s.target(right, AT, idx);
    let pair = must(
        "struct",
        Type::structure(&[1, 1], &[0, 8], &[Type::of::<i64>(), Type::of::<f64>()]),
    );

    // Outside an epoch.
    expect(
        "put outside an epoch",
        s.win.put_view(&iv, &tv),
        ErrorClass::RmaSync,
    );

    s.epoch(false, || {
        let w = &s.win;
        // Signatures: 12 doubles are 96 bytes, as 12 i64 are, but not the same types.
        let fv = must("view", f64s(12));
        expect("put f64 -> i64", w.put_view(&fv, &tv), ErrorClass::Type);
        expect(
            "accumulate f64 -> i64",
            w.accumulate_view(&fv, &tv, &Op::Sum),
            ErrorClass::Type,
        );
        let mut rbuf = vec![0f64; 12];
        let mut rv = must("view", ViewMut::new(&mut rbuf, &Type::of::<f64>(), 12));
        expect("get i64 -> f64", w.get_view(&mut rv, &tv), ErrorClass::Type);
        expect(
            "get_accumulate into f64",
            w.get_accumulate_view(&iv, &mut rv, &tv, &Op::Sum),
            ErrorClass::Type,
        );
        // Lengths: 11 doubles against 12 i64.
        let short = must("view", f64s(11));
        expect(
            "put 88 bytes -> 96",
            w.put_view(&short, &tv),
            ErrorClass::Count,
        );
        // Accumulates need one predefined type on both sides.
        let pv = must("view", View::new(&ints[..12], &pair, 6));
        let ptv = TargetView::new(right as i32, tv_disp(s, right), &pair, 6);
        expect(
            "accumulate of a struct",
            w.accumulate_view(&pv, &ptv, &Op::Sum),
            ErrorClass::Type,
        );
        // Ranges: the indexed type's second copy ends past the window; negative displacements.
        let far = s.target(right, N - 12, idx);
        expect(
            "put past the end",
            w.put_view(&iv, &far),
            ErrorClass::RmaRange,
        );
        expect(
            "accumulate past the end",
            w.accumulate_view(&iv, &far, &Op::Sum),
            ErrorClass::RmaRange,
        );
        let mut back = ints.clone();
        let mut bv = must("view", ViewMut::new(&mut back, &vec2.ty, vec2.count));
        expect(
            "get past the end",
            w.get_view(&mut bv, &far),
            ErrorClass::RmaRange,
        );
        oxmpi::scope(|sc| {
            let v = must("view", View::new(&ints, &vec2.ty, vec2.count));
            expect(
                "rput past the end",
                w.rput_view(sc, v, &far).map(drop),
                ErrorClass::RmaRange,
            );
            let v = must("view", View::new(&ints, &vec2.ty, vec2.count));
            expect(
                "raccumulate past the end",
                w.raccumulate_view(sc, v, &far, &Op::Sum).map(drop),
                ErrorClass::RmaRange,
            );
        });
        drop(bv);
        check_buffer("get past the end: origin", &back, &ints);
        // Zero elements: none meets the operation, so SUM on MPI_BYTE is no error; the
        // target rank still is checked.
        let byte = Type::predefined(oxmpi::datatype::Predefined::BYTE);
        let zv = must("view", View::new(&[0u8; 0], &byte, 0));
        let ztv = TargetView::new(right as i32, tv_disp(s, right), &byte, 0);
        must(
            "accumulate of nothing",
            w.accumulate_view(&zv, &ztv, &Op::Sum),
        );
        let nowhere = TargetView::new(s.np as i32, 0, &byte, 0);
        expect(
            "accumulate of nothing to a rank outside the window",
            w.accumulate_view(&zv, &nowhere, &Op::Sum),
            ErrorClass::Rank,
        );
        if s.flavor != Flavor::Dynamic {
            let neg = TargetView::new(right as i32, -1, &idx.ty, idx.count);
            expect("put at -1", w.put_view(&iv, &neg), ErrorClass::RmaRange);
        }
    });
    s.verify("bad inputs");
}

fn run(world: &Communicator, flavor: Flavor) {
    let me = world.rank() as usize;
    let np = world.size() as usize;
    let mut user = vec![0i64; N];
    let (win, base, mem) = match flavor {
        Flavor::Allocate | Flavor::Shared => {
            let w = must(
                "allocate",
                if flavor == Flavor::Shared {
                    world.window_allocate_shared::<i64>(N)
                } else {
                    world.window_allocate::<i64>(N)
                },
            );
            let mem = w.base().cast::<i64>();
            (w, vec![0; np], mem)
        }
        Flavor::Create => {
            let w = must("create", world.window_create(&mut user[..]));
            let mem = w.base().cast::<i64>();
            (w, vec![0; np], mem)
        }
        Flavor::Dynamic => {
            let mut w = must("create_dynamic", world.window_create_dynamic());
            let addr = must("attach", w.attach(&mut user[..]));
            let mut addrs = vec![0i64; np];
            must(
                "allgather",
                world.all_gather_into(&[addr][..], &mut addrs[..]),
            );
            (w, addrs, addr as *mut i64)
        }
    };
    let pattern = |r: usize, i: usize| -((r * 1000 + i) as i64) - 1;
    // SAFETY: `mem` is this rank's N-element window memory; no epoch has begun.
    unsafe {
        for i in 0..N {
            mem.add(i).write(pattern(me, i));
        }
    }
    must("barrier", world.barrier());
    let mut s = Setup {
        world,
        win,
        flavor,
        base,
        mem,
        model: (0..np)
            .map(|r| (0..N).map(|i| pattern(r, i)).collect())
            .collect(),
        me,
        np,
    };
    operations(&mut s, false);
    operations(&mut s, true);
    bad_inputs(&s);
    must("free", s.win.free());
}

fn main() {
    let universe = must("init", oxmpi::init());
    let world = universe.world();
    for flavor in [
        Flavor::Allocate,
        Flavor::Shared,
        Flavor::Create,
        Flavor::Dynamic,
    ] {
        run(&world, flavor);
    }
    println!("rank {} passed", world.rank());
}
