//! Sends and receives through datatypes in the Rust API, around a ring: a strided view
//! received as contiguous values and back (gap bytes untouched), and
//! `#[derive(Equivalence)]` structs with padding sent through their datatype and received
//! both as structs and into a byte buffer through the same type map, every byte checked
//! (padding never written). The same through the nonblocking forms
//! (`immediate_send_view`/`immediate_receive_view`: completed by wait, test and drop),
//! and a too-short receive view is a truncation. A view reaching outside its slice is an
//! error. Prints "views OK".

use std::mem::offset_of;

use oxmpi::datatype::{Datatyped, Type};
use oxmpi::point_to_point::{View, ViewMut, ViewRequest};
use oxmpi::ErrorClass;
use oxmpi_tests::{check, must};

#[derive(oxmpi::Equivalence, Clone, Copy, Debug, PartialEq)]
struct Particle {
    id: u8, // 7 bytes of padding follow
    pos: [f64; 3],
    charge: i32, // 4 bytes of tail padding
}

fn main() {
    let universe = oxmpi::init().expect("init");
    let world = universe.world();
    let (me, np) = (world.rank(), world.size());
    let (next, prev) = ((me + 1) % np, (me + np - 1) % np);
    let vec4 = must("vector", Type::vector(4, 1, 2, &Type::of::<f64>()));

    // A vector of 4 doubles received as 4 contiguous doubles.
    let a: Vec<f64> = (0..8).map(|i| (100 * me + i) as f64).collect();
    let mut b = [0f64; 4];
    let view = must("view", View::new(&a, &vec4, 1));
    if me % 2 == 0 {
        must("send", world.send_view(&view, next, 1));
        must("recv", world.receive_into(&mut b[..], prev, 1));
    } else {
        must("recv", world.receive_into(&mut b[..], prev, 1));
        must("send", world.send_view(&view, next, 1));
    }
    for (i, x) in b.iter().enumerate() {
        check!(*x == (100 * prev + 2 * i as i32) as f64, "b[{i}] = {x}");
    }

    // Contiguous doubles received through the vector: the gaps keep their values.
    let mut c = [-1f64; 8];
    let mine = [me as f64, 1.0, 2.0, 3.0];
    let mut cv = must("view", ViewMut::new(&mut c, &vec4, 1));
    if me % 2 == 0 {
        must("send", world.send(&mine[..], next, 2));
        must("recv", world.receive_view(&mut cv, prev, 2));
    } else {
        must("recv", world.receive_view(&mut cv, prev, 2));
        must("send", world.send(&mine[..], next, 2));
    }
    let want = [prev as f64, -1.0, 1.0, -1.0, 2.0, -1.0, 3.0, -1.0];
    check!(c == want, "vector receive: {c:?}");

    // Structs with padding, through their datatype.
    let ps: Vec<Particle> = (0..3)
        .map(|i| Particle {
            id: (10 * me + i) as u8,
            pos: [me as f64, i as f64 + 0.5, -(i as f64)],
            charge: -me - i,
        })
        .collect();
    let expect = |r: i32| -> Vec<Particle> {
        (0..3)
            .map(|i| Particle {
                id: (10 * r + i) as u8,
                pos: [r as f64, i as f64 + 0.5, -(i as f64)],
                charge: -r - i,
            })
            .collect()
    };
    let ty = Particle::datatype();
    check!(ty.size() == 1 + 24 + 4, "particle size {}", ty.size());
    let size = std::mem::size_of::<Particle>();
    let mut raw = vec![0xABu8; 3 * size];
    let mut qs = vec![
        Particle {
            id: 0,
            pos: [0.0; 3],
            charge: 0
        };
        3
    ];
    for round in 0..2 {
        let send = View::of(&ps);
        let recv_round =
            |world: &oxmpi::Communicator<_>, raw: &mut Vec<u8>, qs: &mut Vec<Particle>| {
                if round == 0 {
                    let mut v = must("bytes view", ViewMut::new(&mut raw[..], &ty, 3));
                    must("recv", world.receive_view(&mut v, prev, 3));
                } else {
                    must(
                        "recv",
                        world.receive_view(&mut ViewMut::of(&mut qs[..]), prev, 3),
                    );
                }
            };
        if me % 2 == 0 {
            must("send", world.send_view(&send, next, 3));
            recv_round(&world, &mut raw, &mut qs);
        } else {
            recv_round(&world, &mut raw, &mut qs);
            must("send", world.send_view(&send, next, 3));
        }
    }
    check!(qs == expect(prev), "structs: {qs:?}");
    // Every byte of the byte buffer: fields where the type map puts them, 0xAB elsewhere.
    let mut want = vec![0xABu8; 3 * size];
    for (k, p) in expect(prev).iter().enumerate() {
        let base = k * size;
        want[base + offset_of!(Particle, id)] = p.id;
        for (j, x) in p.pos.iter().enumerate() {
            let o = base + offset_of!(Particle, pos) + 8 * j;
            want[o..o + 8].copy_from_slice(&x.to_ne_bytes());
        }
        let o = base + offset_of!(Particle, charge);
        want[o..o + 4].copy_from_slice(&p.charge.to_ne_bytes());
    }
    check!(raw == want, "struct bytes differ: {raw:?}");

    immediate(&world, &vec4, &ps, &expect(prev));

    // A view that reaches outside its slice is an error, not undefined behaviour.
    let short = [0f64; 6];
    let e = View::new(&short, &vec4, 1).err().map(|e| e.class());
    check!(e == Some(ErrorClass::Buffer), "short slice: {e:?}");
    let mut short = [0f64; 6];
    let e = ViewMut::new(&mut short, &vec4, 1).err().map(|e| e.class());
    check!(e == Some(ErrorClass::Buffer), "short slice: {e:?}");
    let neg = must("hvector", Type::hvector(2, 1, -8, &Type::of::<f64>()));
    let e = View::new(&a, &neg, 1).err().map(|e| e.class());
    check!(
        e == Some(ErrorClass::Buffer),
        "negative displacement: {e:?}"
    );

    println!("views OK");
}

/// Waits for `r` by testing it (with a yield between tests), as a program overlapping work
/// would.
fn test_until(mut r: ViewRequest<'_, '_>) -> oxmpi::Status {
    loop {
        if let Some(st) = r.test() {
            return must("test", st);
        }
        std::thread::yield_now();
    }
}

/// The nonblocking views around the ring: every byte checked, gaps untouched.
fn immediate(world: &oxmpi::Communicator, vec4: &Type, ps: &[Particle], from_prev: &[Particle]) {
    let (me, np) = (world.rank(), world.size());
    let (next, prev) = ((me + 1) % np, (me + np - 1) % np);
    let a: Vec<f64> = (0..8).map(|i| (1000 * me + i) as f64).collect();
    let mut gaps = [-1f64; 8];
    let mut contiguous = [0f64; 4];
    let mut qs = vec![
        Particle {
            id: 0,
            pos: [0.0; 3],
            charge: 0
        };
        3
    ];
    let mut dropped = [-2f64; 8];
    let four = must("contiguous", Type::contiguous(4, &Type::of::<f64>()));
    oxmpi::scope(|s| {
        // Strided into strided (gaps kept), strided into contiguous, structs, and a receive
        // completed by dropping its request.
        let r1 = must(
            "irecv",
            world.immediate_receive_view(
                s,
                must("view", ViewMut::new(&mut gaps, vec4, 1)),
                prev,
                21,
            ),
        );
        let r2 = must(
            "irecv",
            world.immediate_receive_view(
                s,
                must("view", ViewMut::new(&mut contiguous, &four, 1)),
                prev,
                22,
            ),
        );
        let r3 = must(
            "irecv",
            world.immediate_receive_view(s, ViewMut::of(&mut qs[..]), prev, 23),
        );
        let r4 = must(
            "irecv",
            world.immediate_receive_view(
                s,
                must("view", ViewMut::new(&mut dropped, vec4, 1)),
                prev,
                24,
            ),
        );
        let view = || must("view", View::new(&a, vec4, 1));
        let sends = [
            must("isend", world.immediate_send_view(s, view(), next, 21)),
            must("isend", world.immediate_send_view(s, view(), next, 22)),
            must(
                "isend",
                world.immediate_send_view(s, View::of(ps), next, 23),
            ),
            must("isend", world.immediate_send_view(s, view(), next, 24)),
        ];
        let st = must("wait", r1.wait());
        check!(st.bytes() == 32, "strided receive: {} bytes", st.bytes());
        let st = test_until(r2);
        check!(st.bytes() == 32, "contiguous receive: {} bytes", st.bytes());
        must("wait", r3.wait());
        drop(r4);
        for r in sends {
            must("send wait", r.wait());
        }
    });
    let theirs = |i: usize| (1000 * prev) as f64 + 2.0 * i as f64;
    let want: Vec<f64> = (0..8)
        .map(|k| if k % 2 == 0 { theirs(k / 2) } else { -1.0 })
        .collect();
    check!(gaps[..] == want[..], "immediate strided receive: {gaps:?}");
    let want4: Vec<f64> = (0..4).map(theirs).collect();
    check!(
        contiguous[..] == want4[..],
        "immediate contiguous: {contiguous:?}"
    );
    check!(qs == from_prev, "immediate structs: {qs:?}");
    let want: Vec<f64> = (0..8)
        .map(|k| if k % 2 == 0 { theirs(k / 2) } else { -2.0 })
        .collect();
    check!(
        dropped[..] == want[..],
        "receive completed by drop: {dropped:?}"
    );

    // A receive view shorter than the message: truncation, reported by its wait.
    let mut short = [0f64; 4];
    let two = must("vector", Type::vector(2, 1, 2, &Type::of::<f64>()));
    let e = oxmpi::scope(|s| {
        let r = must(
            "irecv",
            world.immediate_receive_view(
                s,
                must("view", ViewMut::new(&mut short, &two, 1)),
                prev,
                25,
            ),
        );
        let w = must(
            "isend",
            world.immediate_send_view(s, must("view", View::new(&a, vec4, 1)), next, 25),
        );
        let e = r.wait().err().map(|e| e.class());
        let _ = w.wait();
        e
    });
    check!(e == Some(ErrorClass::Truncate), "short receive view: {e:?}");
}
