//! Eager-size messages through derived datatypes around a ring: random byte-granular type
//! maps (hindexed blocks of bytes in shuffled order, vectors of doubles, padded structs) at
//! sizes across the inline-cell, one-block and chunked-eager boundaries, a sender's type
//! received through another type of the same signature (or as plain bytes, and plain bytes
//! through a type), blocking and nonblocking, with the receive posted first or the message
//! arriving unexpected, and truncation. Every byte of the receive span is checked: data where
//! the receive type puts it, gap bytes untouched. Each rank prints "eager OK".

use oxmpi::datatype::Type;
use oxmpi::point_to_point::{View, ViewMut};
use oxmpi::ErrorClass;
use oxmpi_tests::{check, must};

const POISON: u8 = 0xEE;

/// A small deterministic generator (splitmix64).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// A type (`None`: plain bytes) and where its data bytes lie in its span, in type-map order.
struct Layout {
    ty: Option<Type>,
    runs: Vec<(usize, usize)>,
    span: usize,
}

/// Blocks of 1 to `2 × avg` bytes with gaps of 1 to 8 bytes, `total` bytes in all, shuffled.
fn bytes_runs(rng: &mut Rng, total: usize, avg: usize) -> Layout {
    let (mut runs, mut at, mut left) = (Vec::new(), 0usize, total);
    while left > 0 {
        let len = (1 + rng.below(2 * avg as u64) as usize).min(left);
        runs.push((at, len));
        at += len + 1 + rng.below(8) as usize;
        left -= len;
    }
    for i in (1..runs.len()).rev() {
        runs.swap(i, rng.below(i as u64 + 1) as usize);
    }
    let lens: Vec<i64> = runs.iter().map(|r| r.1 as i64).collect();
    let disps: Vec<i64> = runs.iter().map(|r| r.0 as i64).collect();
    let span = runs.iter().map(|r| r.0 + r.1).max().unwrap_or(0);
    Layout {
        ty: Some(must(
            "hindexed",
            Type::hindexed(&lens, &disps, &Type::of::<u8>()),
        )),
        runs,
        span,
    }
}

/// Doubles at stride 2 (`total` a multiple of 8).
fn vector(total: usize) -> Layout {
    let n = total / 8;
    Layout {
        ty: Some(must(
            "vector",
            Type::vector(n as i64, 1, 2, &Type::of::<f64>()),
        )),
        runs: (0..n).map(|k| (16 * k, 8)).collect(),
        span: (16 * n).saturating_sub(8),
    }
}

/// `{i32 at 0, f64 at 8, i32 at 16}` resized to 24 bytes, `total / 16` of them (`total` a
/// multiple of 16).
fn padded_struct(total: usize) -> Layout {
    let i = Type::of::<i32>();
    let s = must(
        "struct",
        Type::structure(&[1, 1, 1], &[0, 8, 16], &[i.clone(), Type::of::<f64>(), i]),
    );
    let r = must("resized", Type::resized(&s, 0, 24));
    let n = total / 16;
    Layout {
        ty: Some(must("contiguous", Type::contiguous(n as i64, &r))),
        runs: (0..n)
            .flat_map(|k| [(24 * k, 4), (24 * k + 8, 12)])
            .collect(),
        span: (24 * n).saturating_sub(4),
    }
}

fn plain(total: usize) -> Layout {
    Layout {
        ty: None,
        runs: vec![(0, total)],
        span: total,
    }
}

fn byte_of(rank: i32, case: usize, i: usize) -> u8 {
    let x = (i as u64).wrapping_mul(0x9E37_79B9) ^ ((rank as u64) << 40) ^ ((case as u64) << 48);
    (x ^ (x >> 13) ^ (x >> 29)) as u8
}

/// How the message meets its receive.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Order {
    /// Blocking: even ranks send first.
    Blocking,
    /// Nonblocking, the receive posted before the send starts.
    Posted,
    /// The message sent and the ranks met at a barrier before the receive is posted.
    Unexpected,
}

/// Sends `send` from `sbuf` to the next rank and receives into `recv` in `rbuf` from the
/// previous one; the receive's outcome.
fn exchange(
    world: &oxmpi::Communicator,
    send: &Layout,
    recv: &Layout,
    sbuf: &[u8],
    rbuf: &mut [u8],
    order: Order,
    tag: i32,
) -> Result<oxmpi::Status, ErrorClass> {
    let np = world.size();
    let me = world.rank();
    let (next, prev) = ((me + 1) % np, (me + np - 1) % np);
    let sdata = &sbuf[..send.span];
    let r = match order {
        Order::Blocking => {
            let do_send = || match &send.ty {
                Some(t) => world.send_view(&must("view", View::new(sbuf, t, 1)), next, tag),
                None => world.send(sdata, next, tag),
            };
            let do_recv = |rbuf: &mut [u8]| match &recv.ty {
                Some(t) => {
                    world.receive_view(&mut must("view", ViewMut::new(rbuf, t, 1)), prev, tag)
                }
                None => world.receive_into(&mut rbuf[..recv.span], prev, tag),
            };
            if me % 2 == 0 {
                must("send", do_send());
                do_recv(rbuf)
            } else {
                let r = do_recv(rbuf);
                must("send", do_send());
                r
            }
        }
        Order::Posted | Order::Unexpected => oxmpi::scope(|s| {
            macro_rules! post {
                ($rbuf:expr) => {
                    match &recv.ty {
                        Some(t) => {
                            let v = must("view", ViewMut::new($rbuf, t, 1));
                            Ok(must("irecv", world.immediate_receive_view(s, v, prev, tag)))
                        }
                        None => Err(must(
                            "irecv",
                            world.immediate_receive_into(s, &mut $rbuf[..recv.span], prev, tag),
                        )),
                    }
                };
            }
            let mut rbuf = Some(rbuf);
            let mut rr = None;
            if order == Order::Posted {
                rr = rbuf.take().map(|b| post!(b));
            }
            let sr = match &send.ty {
                Some(t) => Ok(must(
                    "isend",
                    world.immediate_send_view(s, must("view", View::new(sbuf, t, 1)), next, tag),
                )),
                None => Err(must("isend", world.immediate_send(s, sdata, next, tag))),
            };
            if order == Order::Unexpected {
                must("barrier", world.barrier());
                rr = rbuf.take().map(|b| post!(b));
            }
            let got = match rr.expect("posted") {
                Ok(r) => r.wait(),
                Err(r) => r.wait(),
            };
            match sr {
                Ok(r) => must("send wait", r.wait()),
                Err(r) => must("send wait", r.wait()),
            };
            got
        }),
    };
    r.map_err(|e| e.class())
}

/// Checks the receive span: the sender's stream (as far as `got` bytes) in the receive
/// type's runs, poison everywhere else (also past the span). With `partial` (a truncated
/// receive, whose data the Rust views leave unpacked) a data byte may also be poison.
#[allow(clippy::too_many_arguments)]
fn verify(
    send: &Layout,
    recv: &Layout,
    idx: usize,
    from: i32,
    rbuf: &[u8],
    got: usize,
    partial: bool,
    what: &str,
) {
    let stream: Vec<u8> = send
        .runs
        .iter()
        .flat_map(|&(o, l)| (o..o + l).map(move |i| byte_of(from, idx, i)))
        .collect();
    let mut want = vec![POISON; rbuf.len()];
    let mut at = 0;
    for &(o, l) in &recv.runs {
        let n = l.min(got.saturating_sub(at));
        want[o..o + n].copy_from_slice(&stream[at..at + n]);
        at += l;
    }
    for (i, (&g, &w)) in rbuf.iter().zip(&want).enumerate() {
        let ok = g == w || (partial && g == POISON);
        check!(
            ok,
            "{what}: byte {i} of {} is {g:#04x}, want {w:#04x}",
            rbuf.len()
        );
    }
}

fn main() {
    let universe = oxmpi::init().expect("init");
    let world = universe.world();
    let (me, np) = (world.rank(), world.size());
    let prev = (me + np - 1) % np;
    // The same generator on every rank: the types match around the ring.
    let mut rng = Rng(0x00E4_6E12);
    let sizes = [
        1usize, 7, 16, 48, 60, 63, 64, 65, 112, 128, 255, 256, 257, 1000, 1024, 4095, 4096, 8191,
        8192, 8193, 12_345, 65_536, 131_071, 131_072,
    ];
    let mut idx = 0;
    for &size in &sizes {
        // Pairs of (send, receive) layouts of the same byte signature.
        let mut pairs = vec![
            (
                bytes_runs(&mut rng, size, 24),
                bytes_runs(&mut rng, size, 5),
            ),
            (bytes_runs(&mut rng, size, 3), plain(size)),
            (plain(size), bytes_runs(&mut rng, size, 40)),
        ];
        if size % 16 == 0 {
            pairs.push((vector(size), padded_struct(size)));
            pairs.push((padded_struct(size), vector(size)));
        }
        for (send, recv) in &pairs {
            let sbuf: Vec<u8> = (0..send.span).map(|i| byte_of(me, idx, i)).collect();
            for order in [Order::Blocking, Order::Posted, Order::Unexpected] {
                let mut rbuf = vec![POISON; recv.span + 32];
                let r = exchange(&world, send, recv, &sbuf, &mut rbuf, order, idx as i32);
                let what = format!("size {size} case {idx} {order:?}");
                let st = must(&what, r.map_err(|e| format!("{e:?}")));
                check!(
                    st.count() == Some(size as u64),
                    "{what}: status counts {:?}",
                    st.count()
                );
                verify(send, recv, idx, prev, &rbuf, size, false, &what);
            }
            idx += 1;
        }
    }

    // Truncation: the receive type holds less than the message; what fits lands, nothing
    // outside the receive map is touched, and the error is Truncate.
    for (size, cap) in [
        (100usize, 37usize),
        (5000, 3001),
        (100_000, 40_000),
        (131_072, 9000),
    ] {
        let send = bytes_runs(&mut rng, size, 16);
        let recv = bytes_runs(&mut rng, cap, 7);
        let sbuf: Vec<u8> = (0..send.span).map(|i| byte_of(me, idx, i)).collect();
        for order in [Order::Blocking, Order::Posted, Order::Unexpected] {
            let mut rbuf = vec![POISON; recv.span + 32];
            let r = exchange(&world, &send, &recv, &sbuf, &mut rbuf, order, idx as i32);
            let what = format!("truncated {size} into {cap} {order:?}");
            check!(
                r.as_ref().err() == Some(&ErrorClass::Truncate),
                "{what}: {r:?}"
            );
            verify(&send, &recv, idx, prev, &rbuf, cap, true, &what);
        }
        idx += 1;
    }
    must("barrier", world.barrier());
    println!("eager OK");
}
