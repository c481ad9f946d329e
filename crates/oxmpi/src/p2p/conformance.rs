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
            single_copy: true,
            recv_write: true,
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
                    // Lone rendezvous below 4 KiB pushed, the rest pulled.
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
