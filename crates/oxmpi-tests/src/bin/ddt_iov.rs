//! Large messages through derived datatypes around a ring, blocking and nonblocking: random
//! type maps of doubles (shuffled hindexed blocks, vectors, nested resized types) above and
//! below the iovec crossover (`OXMPI_DDT_IOV_MIN_BLOCK`), a sender's type received through
//! a different type of the same signature (or as plain doubles), eager-size messages, lists
//! longer than one system call takes, and truncation. Every byte of the receive span is
//! checked: data where the receive type puts it, gap bytes untouched. Rank 0 prints
//! `iov_pulls=N` (messages moved as iovec lists here), `packed_pushes=N` (received as
//! chunks packed and unpacked as they went) and every rank "iov OK".
//!
//! With the argument `refuse`, every rank first forbids itself `process_vm_readv` (a seccomp
//! filter answering EPERM), so every one-copy pull (`get_iov`, `get`) is refused and each
//! message must fall back to chunks the sender gathers and pushes; rank 0 then also prints
//! `pushed=N`.

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

/// A type and where its data bytes lie in its span, in type-map order.
struct Layout {
    ty: Option<Type>,
    runs: Vec<(usize, usize)>,
    span: usize,
}

impl Layout {
    fn bytes(&self) -> usize {
        self.runs.iter().map(|r| r.1).sum()
    }
}

/// Blocks of doubles averaging `avg` bytes with gaps of at least one double, `total` bytes
/// in all, in shuffled order when `shuffle`.
fn random_runs(rng: &mut Rng, total: usize, avg: usize, shuffle: bool) -> Layout {
    let avg_d = (avg / 8).max(1) as u64;
    let (mut runs, mut at, mut left) = (Vec::new(), 0usize, total / 8);
    while left > 0 {
        let len = ((avg_d / 2 + rng.below(avg_d + 1)).max(1) as usize).min(left);
        runs.push((at * 8, len * 8));
        at += len + 1 + rng.below(avg_d / 2 + 1) as usize;
        left -= len;
    }
    if shuffle {
        for i in (1..runs.len()).rev() {
            runs.swap(i, rng.below(i as u64 + 1) as usize);
        }
    }
    let lens: Vec<i64> = runs.iter().map(|r| (r.1 / 8) as i64).collect();
    let disps: Vec<i64> = runs.iter().map(|r| r.0 as i64).collect();
    let ty = must(
        "hindexed",
        Type::hindexed(&lens, &disps, &Type::of::<f64>()),
    );
    Layout {
        ty: Some(ty),
        runs,
        span: at * 8,
    }
}

/// `n` blocks of `block` bytes, stride twice the block.
fn vector(n: usize, block: usize) -> Layout {
    let b = (block / 8) as i64;
    let ty = must(
        "vector",
        Type::vector(n as i64, b, 2 * b, &Type::of::<f64>()),
    );
    Layout {
        ty: Some(ty),
        runs: (0..n).map(|k| (2 * k * block, block)).collect(),
        span: (2 * n - 1) * block,
    }
}

/// `k` copies of `inner` placed `extent` bytes apart through a resized type.
fn nested(inner: Layout, k: usize) -> Layout {
    let extent = inner.span + 24;
    let r = must(
        "resized",
        Type::resized(inner.ty.as_ref().unwrap(), 0, extent as i64),
    );
    let ty = must("contiguous", Type::contiguous(k as i64, &r));
    Layout {
        ty: Some(ty),
        runs: (0..k)
            .flat_map(|i| inner.runs.iter().map(move |&(o, l)| (o + i * extent, l)))
            .collect(),
        span: (k - 1) * extent + inner.span,
    }
}

/// Plain doubles (no datatype: the ordinary send and receive).
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

struct Case {
    name: &'static str,
    send: Layout,
    recv: Layout,
}

fn cases(rng: &mut Rng) -> Vec<Case> {
    let mib = 1 << 20;
    vec![
        Case {
            name: "vector 4 KiB blocks -> shuffled 2 KiB blocks",
            send: vector(256, 4096),
            recv: random_runs(rng, mib, 2048, true),
        },
        Case {
            name: "shuffled 8 KiB blocks -> plain doubles",
            send: random_runs(rng, mib, 8192, true),
            recv: plain(mib),
        },
        Case {
            name: "plain doubles -> 8 KiB blocks (the receiver gathers)",
            send: plain(mib),
            recv: random_runs(rng, mib, 8192, true),
        },
        Case {
            name: "8 KiB blocks -> 16 KiB blocks (pieces; in the pushed band packed, unpacked as pushed)",
            send: random_runs(rng, mib, 8192, false),
            recv: random_runs(rng, mib, 16384, true),
        },
        Case {
            name: "plain doubles -> 1.5 KiB blocks",
            send: plain(mib),
            recv: random_runs(rng, mib, 1536, false),
        },
        Case {
            name: "64 B blocks -> 128 B blocks (below the crossover)",
            send: vector(8192, 64),
            recv: random_runs(rng, 512 << 10, 128, true),
        },
        Case {
            name: "16 KiB blocks -> 256 B blocks",
            send: random_runs(rng, 768 << 10, 16384, false),
            recv: random_runs(rng, 768 << 10, 256, false),
        },
        Case {
            name: "eager size, 4 KiB blocks",
            send: vector(16, 4096),
            recv: random_runs(rng, 64 << 10, 4096, true),
        },
        Case {
            name: "nested resized hindexed -> vector",
            send: nested(random_runs(rng, 16 << 10, 2048, true), 32),
            recv: vector(128, 4096),
        },
        Case {
            name: "4096 pieces -> 3 KiB pieces (lists beyond one call)",
            send: vector(4096, 2048),
            recv: random_runs(rng, 8 * mib, 3072, true),
        },
    ]
}

/// Sends `c.send` to `next` and receives `c.recv` from `prev`, blocking (`nb` false: even
/// ranks send first) or nonblocking; returns the receive's outcome.
fn exchange(
    world: &oxmpi::Communicator,
    c: &Case,
    sbuf: &[u8],
    rbuf: &mut [u8],
    nb: bool,
    tag: i32,
) -> Result<oxmpi::Status, ErrorClass> {
    let np = world.size();
    let me = world.rank();
    let (next, prev) = ((me + 1) % np, (me + np - 1) % np);
    let sdata = |b: &[u8]| -> Vec<f64> {
        b[..c.send.span]
            .chunks_exact(8)
            .map(|x| f64::from_ne_bytes(x.try_into().unwrap()))
            .collect()
    };
    let plain_out = c.send.ty.is_none().then(|| sdata(sbuf));
    let mut plain_in = c.recv.ty.is_none().then(|| vec![0f64; c.recv.span / 8]);
    let send = |w: &oxmpi::Communicator| match (&c.send.ty, &plain_out) {
        (Some(t), _) => w.send_view(&must("view", View::new(sbuf, t, 1)), next, tag),
        (None, Some(v)) => w.send(&v[..], next, tag),
        _ => unreachable!(),
    };
    let r = if nb {
        oxmpi::scope(|s| {
            let rr = match (&c.recv.ty, plain_in.as_mut()) {
                (Some(t), _) => {
                    let v = must("view", ViewMut::new(&mut rbuf[..], t, 1));
                    Ok(must("irecv", world.immediate_receive_view(s, v, prev, tag)))
                }
                (None, Some(v)) => Err(must(
                    "irecv",
                    world.immediate_receive_into(s, &mut v[..], prev, tag),
                )),
                _ => unreachable!(),
            };
            let sr = match (&c.send.ty, &plain_out) {
                (Some(t), _) => Ok(must(
                    "isend",
                    world.immediate_send_view(s, must("view", View::new(sbuf, t, 1)), next, tag),
                )),
                (None, Some(v)) => Err(must("isend", world.immediate_send(s, &v[..], next, tag))),
                _ => unreachable!(),
            };
            let got = match rr {
                Ok(r) => r.wait(),
                Err(r) => r.wait(),
            };
            match sr {
                Ok(r) => must("send wait", r.wait()),
                Err(r) => must("send wait", r.wait()),
            };
            got
        })
    } else {
        let recv = |w: &oxmpi::Communicator, rbuf: &mut [u8], pin: &mut Option<Vec<f64>>| match (
            &c.recv.ty,
            pin.as_mut(),
        ) {
            (Some(t), _) => {
                let mut v = must("view", ViewMut::new(rbuf, t, 1));
                w.receive_view(&mut v, prev, tag)
            }
            (None, Some(v)) => w.receive_into(&mut v[..], prev, tag),
            _ => unreachable!(),
        };
        if me % 2 == 0 {
            must("send", send(world));
            recv(world, rbuf, &mut plain_in)
        } else {
            let r = recv(world, rbuf, &mut plain_in);
            must("send", send(world));
            r
        }
    };
    if let Some(v) = plain_in {
        for (k, x) in v.iter().enumerate() {
            rbuf[8 * k..8 * k + 8].copy_from_slice(&x.to_ne_bytes());
        }
    }
    r.map_err(|e| e.class())
}

/// Checks the receive span: the sender's data stream in the receive type's runs (as far as
/// `got` bytes; with `partial`, a truncated receive's runs may also be untouched), poison
/// everywhere else.
fn verify(c: &Case, idx: usize, from: i32, rbuf: &[u8], got: usize, partial: bool, what: &str) {
    let stream: Vec<u8> = c
        .send
        .runs
        .iter()
        .flat_map(|&(o, l)| (o..o + l).map(move |i| byte_of(from, idx, i)))
        .collect();
    let mut want = vec![POISON; c.recv.span];
    let mut at = 0;
    for &(o, l) in &c.recv.runs {
        let n = l.min(got.saturating_sub(at));
        want[o..o + n].copy_from_slice(&stream[at..at + n]);
        at += l;
    }
    for (i, (&g, &w)) in rbuf[..c.recv.span].iter().zip(&want).enumerate() {
        let ok = g == w || (partial && g == POISON);
        check!(ok, "{what} {}: byte {i} is {g:#04x}, want {w:#04x}", c.name);
    }
}

/// Makes `process_vm_readv` fail with EPERM in every thread of this process from now on.
fn refuse_cross_memory_reads() {
    use libc::{sock_filter, sock_fprog};
    let op = |code: u32, k: u32, jt: u8, jf: u8| sock_filter {
        code: code as u16,
        jt,
        jf,
        k,
    };
    let filter = [
        // The architecture first: a syscall number means nothing on another one.
        op(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, 4, 0, 0),
        op(
            libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K,
            0xC000_003E,
            1,
            0,
        ),
        op(libc::BPF_RET | libc::BPF_K, libc::SECCOMP_RET_ALLOW, 0, 0),
        op(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, 0, 0, 0),
        op(
            libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K,
            libc::SYS_process_vm_readv as u32,
            0,
            1,
        ),
        op(
            libc::BPF_RET | libc::BPF_K,
            libc::SECCOMP_RET_ERRNO | libc::EPERM as u32,
            0,
            0,
        ),
        op(libc::BPF_RET | libc::BPF_K, libc::SECCOMP_RET_ALLOW, 0, 0),
    ];
    let prog = sock_fprog {
        len: filter.len() as u16,
        filter: filter.as_ptr().cast_mut(),
    };
    // SAFETY: plain system calls; `prog` and `filter` outlive them (the kernel copies the
    // program).
    let r = unsafe {
        libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            libc::SECCOMP_FILTER_FLAG_TSYNC,
            &prog as *const sock_fprog,
        )
    };
    assert_eq!(r, 0, "seccomp: {}", std::io::Error::last_os_error());
}

fn main() {
    let refuse = std::env::args().nth(1).as_deref() == Some("refuse");
    let universe = oxmpi::init().expect("init");
    if refuse {
        // The filter names x86_64's system call (elsewhere it refuses nothing; the test that
        // runs this skips other architectures).
        refuse_cross_memory_reads();
    }
    let world = universe.world();
    let (me, np) = (world.rank(), world.size());
    let prev = (me + np - 1) % np;
    let mut rng = Rng(0x5EED_0D70);
    let cases = cases(&mut rng);
    for (idx, c) in cases.iter().enumerate() {
        assert_eq!(c.send.bytes(), c.recv.bytes(), "{}", c.name);
        let sbuf: Vec<u8> = (0..c.send.span).map(|i| byte_of(me, idx, i)).collect();
        for nb in [false, true] {
            let mut rbuf = vec![POISON; c.recv.span];
            let st = exchange(&world, c, &sbuf, &mut rbuf, nb, idx as i32);
            let st = must(c.name, st.map_err(|e| format!("{e:?}")));
            // A view's status counts bytes, a plain receive's doubles.
            let unit = if c.recv.ty.is_none() { 8 } else { 1 };
            check!(
                st.count() == Some((c.recv.bytes() / unit) as u64),
                "{}: status counts {:?}",
                c.name,
                st.count()
            );
            let what = if nb { "nonblocking" } else { "blocking" };
            verify(c, idx, prev, &rbuf, c.recv.bytes(), false, what);
        }
    }

    // Truncation: the receive type holds less than the message; nothing lands outside its
    // map and the error is Truncate.
    let idx = cases.len();
    for (k, small_blocks) in [(0, false), (1, true)] {
        let send = vector(256, 4096);
        let recv = if small_blocks {
            random_runs(&mut rng, 600 << 10, 512, false)
        } else {
            random_runs(&mut rng, 600 << 10, 4096, true)
        };
        let c = Case {
            name: "truncation",
            send,
            recv,
        };
        let sbuf: Vec<u8> = (0..c.send.span).map(|i| byte_of(me, idx, i)).collect();
        for nb in [false, true] {
            let mut rbuf = vec![POISON; c.recv.span + 4096];
            let tag = 100 + k;
            let r = exchange(&world, &c, &sbuf, &mut rbuf, nb, tag);
            check!(
                r.as_ref().err() == Some(&ErrorClass::Truncate),
                "truncation: {r:?}"
            );
            verify(&c, idx, prev, &rbuf, c.recv.bytes(), true, "truncated");
            check!(
                rbuf[c.recv.span..].iter().all(|&b| b == POISON),
                "truncation wrote past the receive span"
            );
        }
    }
    must("barrier", world.barrier());
    if me == 0 {
        let s = universe.protocol_stats();
        println!("iov_pulls={}", s.iov_pulls);
        println!("packed_pushes={}", s.packed_pushes);
        println!("pushed={}", s.pushed);
    }
    println!("iov OK");
}
