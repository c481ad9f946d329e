//! The transport conformance suite: the same property tests run over every transport (and
//! every protocol a transport's limits select), so a new transport arrives with its tests
//! already written. Add a constructor to [`Kind`] and it runs everything below.
//!
//! Each case sends a random sequence of messages (0 B to 8 MiB) from one rank to another,
//! posts the receives before or after the sends, with specific or wildcard source and tag,
//! and checks every byte of every message, the statuses, and MPI's non-overtaking order.

use proptest::prelude::*;

use super::engine::{Engine, FaultMode, RecvStart, SendMode};
use super::matching::{ANY_SOURCE, ANY_TAG};
use super::request::{ReqId, Status};
use super::wire::Envelope;
use crate::transport::shm::{Resolver, ShmConfig, ShmLayout, ShmTransport};
use crate::transport::tcp::{Endpoint, TcpConfig, TcpTransport};

/// The transports (and protocol mixes) under test.
#[derive(Debug, Clone, Copy)]
enum Kind {
    /// One rank sending to itself.
    SelfLoop,
    /// Two ranks over shared memory with the default thresholds (single-copy rendezvous).
    Shm,
    /// Shared memory with single copy off: rendezvous pushes chunks after a clear-to-send.
    ShmPushed,
    /// Shared memory with a tiny eager limit and small blocks: most messages chunked or
    /// rendezvous (lone ones below 4 KiB pushed, others pulled), the ring often full.
    ShmTight,
    /// Two ranks over TCP on loopback with the default thresholds.
    Tcp,
    /// TCP with small fragments, a tiny eager limit and a send queue of a few fragments:
    /// partial writes, `Busy` and pushed rendezvous on most messages.
    TcpTight,
    /// TCP over three rails per peer: large fragments striped, reassembled in order; sockets
    /// asked every third progress call, as in a rank that also has shared-memory peers.
    TcpRails,
}

/// The TCP settings of the conformance worlds.
fn tcp_config(frag: usize, eager: usize, queue: usize, rails: usize) -> TcpConfig {
    TcpConfig {
        inline_max: 1024.min(frag),
        max_frag: frag,
        eager_limit: eager,
        send_queue: queue,
        rails,
        ifaces: String::new(),
        port: 0,
        poll_every: 1,
        handshake: std::time::Duration::from_secs(5),
        cut_rail: None,
        garbage_after: None,
        log_routes: false,
    }
}

/// Two engines joined by the TCP transport over loopback, in this process; `mixed`: polled at
/// the rate of a rank that also has shared-memory peers.
fn tcp_engines(config: TcpConfig, mixed: bool) -> Vec<Engine> {
    let cards = std::sync::Arc::new(std::sync::Mutex::new(vec![None::<Endpoint>; 2]));
    let mut engines = Vec::new();
    for r in 0..2u32 {
        let c = cards.clone();
        let resolve: crate::transport::tcp::Resolver = Box::new(move |p| {
            c.lock().unwrap()[p as usize].clone().ok_or_else(|| {
                crate::error::Error::new(crate::error::ErrorClass::Intern, "no card")
            })
        });
        let t = TcpTransport::create(r, 2, config.clone(), &[1 - r], resolve, mixed, true)
            .expect("TCP transport on loopback");
        cards.lock().unwrap()[r as usize] = Some(t.endpoint());
        let mut e = Engine::new(r, 2, None, &[]);
        e.add_tcp(t, &[1 - r]);
        e.set_fault_mode(FaultMode::Return);
        engines.push(e);
    }
    engines
}

/// Engines of one test world: the sender is `engines[0]`, the receiver the last one.
struct World {
    engines: Vec<Engine>,
    recv_rank: u32,
}

fn shm_world(tag: &str, config: ShmConfig) -> World {
    let path = |tag: &str, r: u32| format!("/dev/shm/oxmpi.c{}{tag}.{r}", std::process::id());
    let make = |r: u32| {
        let owned = tag.to_owned();
        let resolve: Resolver = Box::new(move |x| Ok(path(&owned, x)));
        let t = ShmTransport::create(r, 2, &path(tag, r), config, vec![1 - r], resolve)
            .expect("create segment");
        let mut e = Engine::new(r, 2, Some(t), &[1 - r]);
        e.set_fault_mode(FaultMode::Return);
        e
    };
    World {
        engines: vec![make(0), make(1)],
        recv_rank: 1,
    }
}

fn tcp_world(config: TcpConfig, mixed: bool) -> World {
    World {
        engines: tcp_engines(config, mixed),
        recv_rank: 1,
    }
}

impl Kind {
    fn world(self, case: u64) -> World {
        let base = ShmConfig {
            layout: ShmLayout {
                fifo_cells: 256,
                pool_blocks: 16,
                block_size: 8192,
            },
            inline_max: 1024,
            eager_limit: 131072,
            coll_eager_limit: 131072,
            single_copy: true,
            recv_write: true,
            push_min: 0,
            push_blocks: 4,
            single_copy_min: 0,
            arena_bytes: 1 << 20,
        };
        let tag = format!("{self:?}{case}");
        match self {
            Kind::SelfLoop => {
                let mut e = Engine::new(0, 1, None, &[]);
                e.set_fault_mode(FaultMode::Return);
                World {
                    engines: vec![e],
                    recv_rank: 0,
                }
            }
            Kind::Shm => shm_world(&tag, base),
            Kind::ShmPushed => shm_world(
                &tag,
                ShmConfig {
                    single_copy: false,
                    ..base
                },
            ),
            Kind::Tcp => tcp_world(tcp_config(262144, 65536, 4 << 20, 1), false),
            Kind::TcpTight => tcp_world(tcp_config(1024, 2000, 3000, 1), false),
            Kind::TcpRails => tcp_world(
                TcpConfig {
                    poll_every: 3,
                    ..tcp_config(16384, 8192, 1 << 20, 3)
                },
                true,
            ),
            Kind::ShmTight => shm_world(
                &tag,
                ShmConfig {
                    layout: ShmLayout {
                        fifo_cells: 256,
                        pool_blocks: 2,
                        block_size: 256,
                    },
                    inline_max: 64,
                    eager_limit: 700,
                    // Lone rendezvous below 1500 bytes and from 4 KiB on copied once (pulled
                    // or written), in between pushed.
                    push_min: 1500,
                    single_copy_min: 4096,
                    ..base
                },
            ),
        }
    }
}

impl World {
    fn progress(&mut self) {
        for e in &mut self.engines {
            e.progress();
        }
    }

    fn sender(&mut self) -> &mut Engine {
        &mut self.engines[0]
    }

    fn receiver(&mut self) -> &mut Engine {
        self.engines.last_mut().expect("one engine at least")
    }

    /// Progresses until the receiver's request `id` completes.
    fn wait_recv(&mut self, id: ReqId) -> Status {
        for _ in 0..10_000_000u64 {
            if let Some(st) = self.receiver().test(id) {
                return st;
            }
            self.progress();
        }
        panic!("receive never completed");
    }

    fn wait_send(&mut self, id: ReqId) -> Status {
        for _ in 0..10_000_000u64 {
            if let Some(st) = self.sender().test(id) {
                return st;
            }
            self.progress();
        }
        panic!("send never completed");
    }
}

/// The byte at `i` of message `m`: differs between messages and positions.
fn byte(m: usize, i: usize) -> u8 {
    (i.wrapping_mul(31) ^ m.wrapping_mul(0x9e37) ^ (i >> 8)) as u8
}

/// One message of a case.
#[derive(Debug, Clone)]
struct Msg {
    len: usize,
    /// Receive with `ANY_TAG` instead of the message's tag.
    any_tag: bool,
    /// Receive with `ANY_SOURCE`.
    any_source: bool,
    sync: bool,
}

fn msg() -> impl Strategy<Value = Msg> {
    let len = prop_oneof![
        4 => 0usize..200,
        3 => 200usize..20_000,
        2 => 20_000usize..300_000,
        1 => 300_000usize..=8 << 20,
        1 => prop::sample::select(vec![0usize, 1, 63, 64, 1024, 1025, 8192, 8193, 131072, 131073]),
    ];
    (len, any::<bool>(), any::<bool>(), prop::bool::weighted(0.2)).prop_map(
        |(len, any_tag, any_source, sync)| Msg {
            len,
            any_tag,
            any_source,
            sync,
        },
    )
}

/// Sends `msgs` in order, all with one tag, and receives them in order with the given
/// wildcards, posting the receives first or last; checks every byte and that message `i` went
/// to receive `i` (non-overtaking).
fn run_case(kind: Kind, case: u64, msgs: &[Msg], post_first: bool) {
    let mut w = kind.world(case);
    let to = w.recv_rank;
    let tag = 7;
    let data: Vec<Vec<u8>> = msgs
        .iter()
        .enumerate()
        .map(|(m, x)| (0..x.len).map(|i| byte(m, i)).collect())
        .collect();
    let mut bufs: Vec<Vec<u8>> = msgs.iter().map(|x| vec![0xEE; x.len]).collect();
    let mut recvs: Vec<Option<Result<Status, ReqId>>> = vec![None; msgs.len()];
    let post = |w: &mut World, bufs: &mut Vec<Vec<u8>>, recvs: &mut Vec<_>| {
        for (i, x) in msgs.iter().enumerate() {
            let src = if x.any_source { ANY_SOURCE } else { 0 };
            let t = if x.any_tag { ANY_TAG } else { tag };
            let b = &mut bufs[i];
            let src_world = (!x.any_source).then_some(0);
            // SAFETY: `bufs` is neither moved nor touched until every receive completed.
            let r = unsafe {
                w.receiver()
                    .irecv_from(b.as_mut_ptr(), b.len(), 0, src, t, src_world)
                    .expect("receive starts")
            };
            recvs[i] = Some(match r {
                RecvStart::Done(st) => Ok(st),
                RecvStart::Pending(id) => Err(id),
            });
        }
    };
    if post_first {
        post(&mut w, &mut bufs, &mut recvs);
    }
    let mut sends = Vec::new();
    for (i, x) in msgs.iter().enumerate() {
        let mode = if x.sync {
            SendMode::Synchronous
        } else {
            SendMode::Standard
        };
        let env = Envelope {
            ctx: 0,
            src: 0,
            tag,
        };
        // SAFETY: `data` outlives every send, waited for below.
        let s = unsafe {
            w.sender()
                .isend(mode, data[i].as_ptr(), x.len, to, env)
                .expect("send starts")
        };
        sends.extend(s);
        if i % 4 == 3 {
            w.progress();
        }
    }
    if !post_first {
        post(&mut w, &mut bufs, &mut recvs);
    }
    for (i, r) in recvs.into_iter().enumerate() {
        let st = match r.expect("posted") {
            Ok(st) => st,
            Err(id) => w.wait_recv(id),
        };
        assert_eq!(st.error, None, "{kind:?} message {i}");
        assert_eq!(st.bytes as usize, msgs[i].len, "{kind:?} message {i}");
        assert_eq!((st.source, st.tag), (0, tag), "{kind:?} message {i}");
        if bufs[i] != data[i] {
            let at = (0..data[i].len()).find(|&k| bufs[i][k] != data[i][k]);
            panic!(
                "{kind:?}: message {i} of {} ({} bytes) differs at byte {at:?}",
                msgs.len(),
                msgs[i].len
            );
        }
    }
    for s in sends {
        let st = w.wait_send(s);
        assert_eq!(st.error, None);
    }
    // Bytes a transport accepted (acknowledgements, the tail of a frame) may still wait for
    // the socket, as they may when finalize starts: it progresses until they are out.
    for _ in 0..1_000_000 {
        if !w.engines.iter().any(Engine::has_outgoing) {
            break;
        }
        w.progress();
    }
    for e in &mut w.engines {
        assert_eq!(e.live_requests(), 0, "{kind:?}: requests left behind");
        assert!(!e.has_outgoing());
    }
}

/// A truncated receive reports `Truncate` and keeps the bytes that fit, over every protocol.
fn run_truncate(kind: Kind, case: u64, len: usize) {
    let mut w = kind.world(case);
    let to = w.recv_rank;
    let data: Vec<u8> = (0..len).map(|i| byte(1, i)).collect();
    let cap = len / 2;
    let mut buf = vec![0u8; cap];
    // SAFETY: both buffers outlive their requests, completed below.
    unsafe {
        let s = w
            .sender()
            .isend(
                SendMode::Standard,
                data.as_ptr(),
                len,
                to,
                Envelope {
                    ctx: 0,
                    src: 0,
                    tag: 1,
                },
            )
            .unwrap();
        let st = match w
            .receiver()
            .irecv_from(buf.as_mut_ptr(), cap, 0, 0, 1, Some(0))
            .unwrap()
        {
            RecvStart::Done(st) => st,
            RecvStart::Pending(id) => w.wait_recv(id),
        };
        assert_eq!(
            st.error,
            Some(crate::error::ErrorClass::Truncate),
            "{kind:?} {len}"
        );
        assert_eq!(st.bytes as usize, cap);
        if let Some(s) = s {
            w.wait_send(s);
        }
    }
    assert_eq!(buf[..], data[..cap], "{kind:?} {len}");
}

/// A stand-in for a non-contiguous datatype: stream byte `i` lives at
/// `(i / block) * stride + i % block` from `base` (`stride` > `block`: gaps between blocks).
struct Strided {
    base: *mut u8,
    block: usize,
    stride: usize,
}

// SAFETY: the tests use a `Strided` only while its buffer lives, from one thread at a time.
unsafe impl Send for Strided {}
// SAFETY: as for `Send`.
unsafe impl Sync for Strided {}

impl Strided {
    fn at(block: usize, stride: usize, i: usize) -> usize {
        (i / block) * stride + i % block
    }

    /// Bytes a `len`-byte message spans.
    fn span(block: usize, stride: usize, len: usize) -> usize {
        if len == 0 {
            0
        } else {
            Self::at(block, stride, len - 1) + 1
        }
    }
}

impl super::iov::Chunked for Strided {
    unsafe fn pack(&self, start: u64, out: &mut [u8]) {
        for (k, b) in out.iter_mut().enumerate() {
            let i = Self::at(self.block, self.stride, start as usize + k);
            // SAFETY: the test's buffer spans every stream byte of the message.
            *b = unsafe { *self.base.add(i) };
        }
    }

    unsafe fn unpack(&self, start: u64, data: &[u8]) {
        for (k, &b) in data.iter().enumerate() {
            let i = Self::at(self.block, self.stride, start as usize + k);
            // SAFETY: as in `pack`.
            unsafe { *self.base.add(i) = b };
        }
    }
}

/// One side of a message in a packed case: plain bytes, or strided through a registered
/// packer.
#[derive(Debug, Clone, Copy)]
struct Side {
    /// `(block, stride)`, or `None` for plain bytes.
    strided: Option<(usize, usize)>,
}

impl Side {
    fn span(self, len: usize) -> usize {
        self.strided.map_or(len, |(b, s)| Strided::span(b, s, len))
    }

    fn at(self, i: usize) -> usize {
        self.strided.map_or(i, |(b, s)| Strided::at(b, s, i))
    }
}

fn side() -> impl Strategy<Value = Side> {
    prop_oneof![
        1 => Just(Side { strided: None }),
        3 => (1usize..40, 1usize..24).prop_map(|(b, gap)| Side {
            strided: Some((b, b + gap)),
        }),
    ]
}

/// Eager sizes around every boundary (inline cells, one block, chunked eager), some larger.
fn packed_len() -> impl Strategy<Value = usize> {
    prop_oneof![
        3 => 0usize..200,
        3 => 200usize..20_000,
        2 => 20_000usize..=131_072,
        1 => 131_073usize..400_000,
        2 => prop::sample::select(vec![1usize, 60, 63, 64, 65, 255, 256, 257, 699, 700, 701,
            1023, 1024, 1025, 8191, 8192, 8193, 65536, 131071, 131072]),
    ]
}

/// Registers `side`'s packer over `buf` with `e`, if strided: the key and length to pass for
/// its bytes, and the descriptor to hold until the operation completes.
fn register(
    e: &mut Engine,
    side: Side,
    buf: &mut [u8],
    len: usize,
) -> (*mut u8, Option<std::sync::Arc<super::iov::IovDesc>>) {
    match side.strided {
        Some((block, stride)) if len > 0 => {
            let d = super::iov::IovDesc::chunked(
                len,
                Box::new(Strided {
                    base: buf.as_mut_ptr(),
                    block,
                    stride,
                }),
            );
            e.register_iov(d.clone());
            (d.key(), Some(d))
        }
        _ => (buf.as_mut_ptr(), None),
    }
}

/// Sends each message through its sender side and receives it through its receiver side
/// (posted first or last), as the handle layer's derived-datatype staging does; checks every
/// byte where the receive side puts it and that every gap byte is untouched.
fn run_packed_case(kind: Kind, case: u64, msgs: &[(usize, Side, Side, bool)], post_first: bool) {
    let mut w = kind.world(case);
    let to = w.recv_rank;
    let tag = 9;
    let mut sbufs: Vec<Vec<u8>> = msgs
        .iter()
        .enumerate()
        .map(|(m, &(len, s, _, _))| {
            let mut b = vec![0x11; s.span(len)];
            (0..len).for_each(|i| b[s.at(i)] = byte(m, i));
            b
        })
        .collect();
    let mut rbufs: Vec<Vec<u8>> = msgs
        .iter()
        .map(|&(len, _, r, _)| vec![0xEE; r.span(len)])
        .collect();
    let mut rdescs = Vec::new();
    let mut recvs = Vec::new();
    let post =
        |w: &mut World, rbufs: &mut Vec<Vec<u8>>, rdescs: &mut Vec<_>, recvs: &mut Vec<_>| {
            for (i, &(len, _, r, _)) in msgs.iter().enumerate() {
                let (key, d) = register(w.receiver(), r, &mut rbufs[i], len);
                // SAFETY: `rbufs` is neither moved nor touched until every receive completed.
                let st = unsafe {
                    w.receiver()
                        .irecv_from(key, len, 0, 0, tag, Some(0))
                        .expect("receive starts")
                };
                rdescs.push(d);
                recvs.push(st);
            }
        };
    if post_first {
        post(&mut w, &mut rbufs, &mut rdescs, &mut recvs);
    }
    let mut sends = Vec::new();
    let mut sdescs = Vec::new();
    for (i, &(len, s, _, sync)) in msgs.iter().enumerate() {
        let (key, d) = register(w.sender(), s, &mut sbufs[i], len);
        let mode = if sync {
            SendMode::Synchronous
        } else {
            SendMode::Standard
        };
        let env = Envelope {
            ctx: 0,
            src: 0,
            tag,
        };
        // SAFETY: `sbufs` and the descriptors outlive every send, waited for below.
        let id = unsafe {
            w.sender()
                .isend(mode, key, len, to, env)
                .expect("send starts")
        };
        sends.extend(id);
        sdescs.push(d);
        if i % 3 == 2 {
            w.progress();
        }
    }
    if !post_first {
        post(&mut w, &mut rbufs, &mut rdescs, &mut recvs);
    }
    for (i, r) in recvs.into_iter().enumerate() {
        let st = match r {
            RecvStart::Done(st) => st,
            RecvStart::Pending(id) => w.wait_recv(id),
        };
        let (len, _, rside, _) = msgs[i];
        assert_eq!(st.error, None, "{kind:?} message {i}");
        assert_eq!(st.bytes as usize, len, "{kind:?} message {i}");
        if let Some(d) = &rdescs[i] {
            // What the staging layer does at completion: data that did not go straight into
            // the memory is in the packed bytes.
            if !d.direct() {
                // SAFETY: the receive completed.
                if let Some(p) = unsafe { d.packed(len) } {
                    let p = p.to_vec();
                    // SAFETY: `rbufs[i]` spans the message.
                    unsafe { d.chunks().expect("a packer").unpack(0, &p) };
                }
            }
        }
        let mut want = vec![0xEE; rside.span(len)];
        (0..len).for_each(|k| want[rside.at(k)] = byte(i, k));
        if rbufs[i] != want {
            let at = (0..want.len()).find(|&k| rbufs[i][k] != want[k]);
            panic!("{kind:?}: message {i} ({len} bytes, {msgs:?}) differs at byte {at:?}");
        }
    }
    for s in sends {
        let st = w.wait_send(s);
        assert_eq!(st.error, None);
    }
    for _ in 0..1_000_000 {
        if !w.engines.iter().any(Engine::has_outgoing) {
            break;
        }
        w.progress();
    }
    for e in &mut w.engines {
        assert_eq!(e.live_requests(), 0, "{kind:?}: requests left behind");
    }
}

/// A truncated eager receive through a packer keeps the stream bytes that fit, in place, and
/// leaves every other byte alone.
fn run_packed_truncate(kind: Kind, case: u64, len: usize) {
    let mut w = kind.world(case);
    let to = w.recv_rank;
    let (sside, rside) = (
        Side {
            strided: Some((3, 7)),
        },
        Side {
            strided: Some((5, 6)),
        },
    );
    let cap = len / 2;
    let mut sbuf = vec![0x11; sside.span(len)];
    (0..len).for_each(|i| sbuf[sside.at(i)] = byte(2, i));
    let mut rbuf = vec![0xEE; rside.span(cap) + 16];
    let (skey, _sd) = register(w.sender(), sside, &mut sbuf, len);
    let (rkey, rd) = register(w.receiver(), rside, &mut rbuf, cap);
    let env = Envelope {
        ctx: 0,
        src: 0,
        tag: 1,
    };
    // SAFETY: both buffers and descriptors outlive their requests, completed below.
    unsafe {
        let s = w
            .sender()
            .isend(SendMode::Standard, skey, len, to, env)
            .unwrap();
        let st = match w
            .receiver()
            .irecv_from(rkey, cap, 0, 0, 1, Some(0))
            .unwrap()
        {
            RecvStart::Done(st) => st,
            RecvStart::Pending(id) => w.wait_recv(id),
        };
        assert_eq!(
            st.error,
            Some(crate::error::ErrorClass::Truncate),
            "{kind:?} {len}"
        );
        assert_eq!(st.bytes as usize, cap);
        if let Some(d) = rd.as_ref().filter(|d| !d.direct()) {
            if let Some(p) = d.packed(cap) {
                let p = p.to_vec();
                d.chunks().unwrap().unpack(0, &p);
            }
        }
        if let Some(s) = s {
            w.wait_send(s);
        }
    }
    let mut want = vec![0xEE; rbuf.len()];
    (0..cap).for_each(|k| want[rside.at(k)] = byte(2, k));
    assert!(rbuf == want, "{kind:?} {len}: truncated bytes differ");
}

/// An eager-size message through packers on both sides, posted first or arriving unexpected,
/// is packed straight into the transport and unpacked straight out of it: neither side ever
/// allocates packed bytes (no Busy here: one message at a time into empty rings and pools).
fn run_packed_in_place(kind: Kind, case: u64) {
    let mut w = kind.world(case);
    let to = w.recv_rank;
    let side = Side {
        strided: Some((8, 16)),
    };
    for (m, len) in [1usize, 64, 65, 700, 1024, 1025, 8192, 8193, 65536, 100_000]
        .into_iter()
        .enumerate()
    {
        for post_first in [true, false] {
            let mut sbuf = vec![0x11; side.span(len)];
            (0..len).for_each(|i| sbuf[side.at(i)] = byte(m, i));
            let mut rbuf = vec![0xEE; side.span(len)];
            let (skey, sd) = register(w.sender(), side, &mut sbuf, len);
            let env = Envelope {
                ctx: 0,
                src: 0,
                tag: 3,
            };
            let recv = |w: &mut World, rbuf: &mut Vec<u8>| {
                let (rkey, rd) = register(w.receiver(), side, rbuf, len);
                // SAFETY: `rbuf` and `rd` outlive the receive, completed below.
                let r = unsafe { w.receiver().irecv_from(rkey, len, 0, 0, 3, Some(0)) };
                (r.expect("receive starts"), rd.expect("registered"))
            };
            let posted = post_first.then(|| recv(&mut w, &mut rbuf));
            // SAFETY: `sbuf` and `sd` outlive the send, completed below.
            let s = unsafe { w.sender().isend(SendMode::Standard, skey, len, to, env) };
            let s = s.expect("send starts");
            if !post_first {
                // Arrived unexpected first.
                for _ in 0..100 {
                    w.progress();
                }
            }
            let (r, rd) = posted.unwrap_or_else(|| recv(&mut w, &mut rbuf));
            let st = match r {
                RecvStart::Done(st) => st,
                RecvStart::Pending(id) => w.wait_recv(id),
            };
            if let Some(s) = s {
                w.wait_send(s);
            }
            assert_eq!((st.error, st.bytes as usize), (None, len), "{kind:?} {len}");
            let sd = sd.expect("registered");
            // SAFETY: both operations completed.
            unsafe {
                assert!(sd.packed(len).is_none(), "{kind:?} {len}: the send staged");
                assert!(
                    rd.packed(len).is_none(),
                    "{kind:?} {len}: the receive staged"
                );
            }
            assert!(rd.direct(), "{kind:?} {len}");
            let mut want = vec![0xEE; side.span(len)];
            (0..len).for_each(|k| want[side.at(k)] = byte(m, k));
            assert!(rbuf == want, "{kind:?} {len} post_first {post_first}");
        }
    }
}

#[test]
fn eager_packed_messages_never_stage() {
    for (i, kind) in [Kind::SelfLoop, Kind::Shm, Kind::ShmPushed, Kind::Tcp]
        .into_iter()
        .enumerate()
    {
        run_packed_in_place(kind, 200 + i as u64);
    }
}

macro_rules! conformance {
    ($($name:ident: $kind:expr,)*) => {$(
        mod $name {
            use super::*;

            proptest! {
                #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

                #[test]
                fn every_byte_arrives_in_order(
                    msgs in prop::collection::vec(msg(), 1..12),
                    post_first in any::<bool>(),
                    case in any::<u64>(),
                ) {
                    run_case($kind, case, &msgs, post_first);
                }
            }

            proptest! {
                #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

                #[test]
                fn packed_messages_arrive_in_place(
                    msgs in prop::collection::vec(
                        (packed_len(), side(), side(), prop::bool::weighted(0.2)),
                        1..10,
                    ),
                    post_first in any::<bool>(),
                    case in any::<u64>(),
                ) {
                    run_packed_case($kind, case, &msgs, post_first);
                }
            }

            #[test]
            fn packed_truncation_keeps_what_fits_in_place() {
                for (i, len) in [2usize, 100, 3000, 20_000, 100_000, 400_000].into_iter().enumerate() {
                    run_packed_truncate($kind, 100 + i as u64, len);
                }
            }

            #[test]
            fn truncation_keeps_what_fits() {
                for (i, len) in [2usize, 100, 3000, 20_000, 400_000].into_iter().enumerate() {
                    run_truncate($kind, i as u64, len);
                }
            }
        }
    )*};
}

conformance! {
    selfloop: Kind::SelfLoop,
    shm: Kind::Shm,
    shm_pushed: Kind::ShmPushed,
    shm_tight: Kind::ShmTight,
    tcp: Kind::Tcp,
    tcp_tight: Kind::TcpTight,
    tcp_rails: Kind::TcpRails,
}
