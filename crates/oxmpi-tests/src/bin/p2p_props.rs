//! Property test program: every rank derives the same random schedule of messages (sizes from
//! 0 B to 8 MiB, random tags, wildcard receives, blocking/nonblocking/synchronous sends),
//! pre-posts its receives, sends, waits, and verifies every byte, every status and MPI's
//! non-overtaking order. Exits non-zero on any mismatch.
//!
//! `p2p_props SEED MESSAGES MAX_SIZE`

use std::collections::{HashMap, VecDeque};

use oxmpi::{Source, Tag};

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // splitmix64
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

#[derive(Clone, Copy, Debug)]
struct Msg {
    seq: u32,
    src: i32,
    dst: i32,
    size: usize,
    tag: i32,
    send_mode: u8,
    any_source: bool,
    any_tag: bool,
}

fn byte(seed: u64, m: &Msg, i: usize) -> u8 {
    (seed as usize ^ (m.src as usize * 131) ^ (m.seq as usize * 7919) ^ i ^ (i >> 8)) as u8
}

/// Wildcards are drawn so that every valid MPI matching completes every receive: a pair of
/// ranks either receives all its messages with `ANY_TAG`, or uses tag 2 only for `ANY_SOURCE`
/// receives (which then accept every tag-2 message to that rank) and specific tags otherwise.
fn schedule(seed: u64, n: usize, np: i32, max: usize) -> Vec<Msg> {
    let mut r = Rng(seed);
    let any_tag_pair: Vec<bool> = (0..np * np).map(|_| r.below(4) == 0).collect();
    (0..n)
        .map(|seq| {
            let class = r.below(100);
            let size = match class {
                0..=39 => r.below(65) as usize,
                40..=69 => r.below(4097) as usize,
                70..=89 => r.below(65537) as usize,
                _ => r.below(max as u64 + 1) as usize,
            };
            let src = r.below(np as u64) as i32;
            let dst = r.below(np as u64) as i32;
            let any_tag = any_tag_pair[(src * np + dst) as usize];
            let tag = if any_tag {
                [0, 1, 3][r.below(3) as usize]
            } else {
                r.below(4) as i32
            };
            Msg {
                seq: seq as u32,
                src,
                dst,
                size: size.min(max),
                tag,
                send_mode: r.below(3) as u8,
                any_source: !any_tag && tag == 2,
                any_tag,
            }
        })
        .collect()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let seed: u64 = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(1);
    let n: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(500);
    let max: usize = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(8 << 20);

    let universe = oxmpi::init().expect("init");
    let world = universe.world();
    let (me, np) = (world.rank(), world.size());
    let msgs = schedule(seed, n, np, max);
    if std::env::var_os("P2P_PROPS_DUMP").is_some() && me == 0 {
        for m in &msgs {
            eprintln!("{m:?}");
        }
    }

    let incoming: Vec<Msg> = msgs.iter().filter(|m| m.dst == me).copied().collect();
    let outgoing: Vec<Msg> = msgs.iter().filter(|m| m.src == me).copied().collect();
    // A receive's buffer must hold any message it could match.
    let cap_for = |m: &Msg| {
        incoming
            .iter()
            .filter(|o| (m.any_source || o.src == m.src) && (m.any_tag || o.tag == m.tag))
            .map(|o| o.size)
            .max()
            .unwrap_or(0)
    };
    let mut bufs: Vec<Vec<u8>> = incoming.iter().map(|m| vec![0u8; cap_for(m)]).collect();
    let send_bufs: Vec<Vec<u8>> = outgoing
        .iter()
        .map(|m| (0..m.size).map(|i| byte(seed, m, i)).collect())
        .collect();

    let statuses = oxmpi::scope(|s| {
        let mut recvs = Vec::new();
        for (m, buf) in incoming.iter().zip(bufs.iter_mut()) {
            let src = if m.any_source {
                Source::Any
            } else {
                Source::Rank(m.src)
            };
            let tag = if m.any_tag { Tag::Any } else { Tag::Is(m.tag) };
            recvs.push(
                world
                    .immediate_receive_into(s, &mut buf[..], src, tag)
                    .expect("irecv"),
            );
        }
        let mut sends = Vec::new();
        for (m, buf) in outgoing.iter().zip(send_bufs.iter()) {
            match m.send_mode {
                0 => world.send(&buf[..], m.dst, m.tag).expect("send"),
                1 => sends.push(
                    world
                        .immediate_send(s, &buf[..], m.dst, m.tag)
                        .expect("isend"),
                ),
                _ => sends.push(
                    world
                        .immediate_synchronous_send(s, &buf[..], m.dst, m.tag)
                        .expect("issend"),
                ),
            }
        }
        for r in sends {
            r.wait().expect("send wait");
        }
        recvs
            .into_iter()
            .map(|r| r.wait().expect("recv wait"))
            .collect::<Vec<_>>()
    });

    // Non-overtaking: per (source, tag), receives in posting order got messages in send order.
    let mut expected: HashMap<(i32, i32), VecDeque<Msg>> = HashMap::new();
    for m in &incoming {
        expected.entry((m.src, m.tag)).or_default().push_back(*m);
    }
    let mut errors = 0;
    for (i, st) in statuses.iter().enumerate() {
        let Some(m) = expected
            .get_mut(&(st.source(), st.tag()))
            .and_then(|q| q.pop_front())
        else {
            eprintln!(
                "rank {me}: receive {i} got unexpected (source {}, tag {})",
                st.source(),
                st.tag()
            );
            errors += 1;
            continue;
        };
        if st.count() != Some(m.size as u64) {
            eprintln!(
                "rank {me}: message {} size {} but status says {:?}",
                m.seq,
                m.size,
                st.count()
            );
            errors += 1;
            continue;
        }
        if let Some(k) = (0..m.size).find(|&k| bufs[i][k] != byte(seed, &m, k)) {
            eprintln!(
                "rank {me}: message {} (size {}) wrong at byte {k}",
                m.seq, m.size
            );
            errors += 1;
        }
    }
    let bytes: usize = incoming.iter().map(|m| m.size).sum();
    if errors > 0 {
        eprintln!("rank {me}: {errors} errors");
        universe.abort(3);
    }
    println!(
        "rank {me}: verified {} messages, {bytes} bytes",
        incoming.len()
    );
    universe.finalize().expect("finalize");
}
