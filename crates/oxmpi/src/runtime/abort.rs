//! `MPI_Abort`'s code as the job's exit status where the launcher cannot carry it (Slurm).
//!
//! Slurm answers a PMI `abort` by SIGKILLing every task of the step, and srun's exit status is
//! the largest task status with a killed task counting as 128 + 9, so a PMI abort always gives
//! 137. srun does report a code when every task exits normally with it. So under Slurm each
//! rank listens on a TCP port of its own (a thread blocked in `accept`, nothing on any message
//! path), published in its business card with a random token. The aborting rank connects to
//! every peer and sends token and code; a peer answers one byte and `_exit`s with that code at
//! once, whatever its other threads are doing. When every peer has answered and closed (it has
//! exited), the aborting rank exits with the code too, so every task of the step ends with it
//! before Slurm kills anything. A peer that cannot be reached before the deadline (a stopped
//! process, a lost host) leaves the PMI abort as the fallback: the step still ends, with 137.

use std::io::{ErrorKind, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

use std::sync::atomic::{AtomicBool, Ordering};

use super::card::Card;

/// Set once this process's listener runs: its peers under the same launcher run one too.
static LISTENING: AtomicBool = AtomicBool::new(false);

/// Whether this process started a listener (so an abort tells the peers first).
pub fn listening() -> bool {
    LISTENING.load(Ordering::Acquire)
}

/// Card field with the listener's port.
pub const PORT_FIELD: &str = "abort";
/// Card field with the listener's token (hex).
pub const TOKEN_FIELD: &str = "aborttok";
/// Bytes of randomness in a token.
const TOKEN_BYTES: usize = 16;
/// Longest notice a listener reads: token, space, code, newline.
const MAX_NOTICE: usize = 2 * TOKEN_BYTES + 16;
/// What a listener answers before it exits.
const ACK: u8 = b'k';
/// How long the aborting rank waits for all its peers before falling back to the launcher.
pub const DEADLINE: Duration = Duration::from_secs(5);
/// How long a listener waits for a connected stranger's notice.
const READ_LIMIT: Duration = Duration::from_secs(2);

/// Whether this process is a task of a Slurm job step (not under oxrun, which returns the
/// code itself).
pub fn in_slurm_step() -> bool {
    std::env::var_os("SLURM_STEP_ID").is_some() && std::env::var_os("SLURM_JOB_ID").is_some()
}

/// A running listener: what goes into the business card.
#[derive(Debug, Clone)]
pub struct Listener {
    /// Port on every IPv4 address of the host.
    pub port: u16,
    /// The secret a notice must carry.
    pub token: String,
}

impl Listener {
    /// Binds a port and starts the thread that waits for a notice. Errors (no socket, no
    /// thread) leave the job without it: an abort then ends it through the launcher only.
    pub fn start() -> std::io::Result<Listener> {
        let mut bytes = [0u8; TOKEN_BYTES];
        getrandom::getrandom(&mut bytes).map_err(|e| std::io::Error::other(e.to_string()))?;
        let token: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        let socket = TcpListener::bind((Ipv4Addr::UNSPECIFIED, 0))?;
        let port = socket.local_addr()?.port();
        let expect = token.clone();
        std::thread::Builder::new()
            .name("oxmpi-abort".into())
            .stack_size(64 * 1024)
            .spawn(move || serve(socket, &expect))?;
        LISTENING.store(true, Ordering::Release);
        Ok(Listener { port, token })
    }

    /// Adds the listener's fields to a business card.
    pub fn publish(&self, card: Card) -> Card {
        card.with(PORT_FIELD, self.port)
            .with(TOKEN_FIELD, &self.token)
    }
}

/// Accepts connections until one brings a notice with our token, then exits with its code.
fn serve(socket: TcpListener, token: &str) {
    loop {
        let Ok((mut conn, _)) = socket.accept() else {
            // Out of descriptors or similar: keep listening after a pause rather than spin.
            std::thread::sleep(Duration::from_millis(50));
            continue;
        };
        let _ = conn.set_read_timeout(Some(READ_LIMIT));
        if let Some(code) = read_notice(&mut conn).and_then(|n| parse_notice(&n, token)) {
            let _ = conn.write_all(&[ACK]);
            // SAFETY: _exit has no preconditions. It ends the process without unwinding or
            // running destructors, which is the point: other threads may hold any lock and
            // may be inside MPI; nothing of this process is used again. The kernel closes our
            // sockets, which tells the aborting rank we are gone.
            unsafe { libc::_exit(code) };
        }
        // A stranger, or a notice without our token: ignored.
    }
}

/// Reads one line of at most [`MAX_NOTICE`] bytes.
fn read_notice(conn: &mut TcpStream) -> Option<String> {
    let mut buf = [0u8; MAX_NOTICE];
    let mut len = 0;
    while len < buf.len() {
        match conn.read(&mut buf[len..]) {
            Ok(0) => return None,
            Ok(n) => {
                len += n;
                if let Some(end) = buf[..len].iter().position(|&b| b == b'\n') {
                    return String::from_utf8(buf[..end].to_vec()).ok();
                }
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => return None,
        }
    }
    None
}

/// The notice an aborting rank sends: `TOKEN CODE`.
fn notice(token: &str, code: i32) -> String {
    format!("{token} {code}\n")
}

/// The code of a notice carrying `token`, or `None` for anything else.
fn parse_notice(line: &str, token: &str) -> Option<i32> {
    let (t, code) = line.split_once(' ')?;
    // Compare every byte so the time taken says nothing about where a guess went wrong.
    let same = t.len() == token.len()
        && t.bytes()
            .zip(token.bytes())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0;
    if !same {
        return None;
    }
    code.parse().ok()
}

/// Where a peer's listener is: its token and the addresses to try, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The peer's world rank.
    pub rank: u32,
    /// Addresses to try, in order.
    pub addrs: Vec<SocketAddr>,
    /// The token its listener expects.
    pub token: String,
}

/// The peer's listener from its card. Peers on our host (same host name) are tried on
/// loopback first, then on the addresses of their TCP endpoint. `None` if the card has no
/// listener (the peer could not start one).
pub fn target(rank: u32, card: &Card, our_host: &str) -> Option<Target> {
    let port: u16 = card.get(PORT_FIELD)?.parse().ok()?;
    let token = card.get(TOKEN_FIELD)?.to_owned();
    let mut addrs = Vec::new();
    if card.get("host") == Some(our_host) {
        addrs.push(SocketAddr::from((Ipv4Addr::LOCALHOST, port)));
    }
    if let Some(tcp) = card.get("tcp") {
        for a in tcp.split(',').skip(1) {
            if let Ok(ip) = a.parse::<Ipv4Addr>() {
                let sa = SocketAddr::from((ip, port));
                if !addrs.contains(&sa) {
                    addrs.push(sa);
                }
            }
        }
    }
    (!addrs.is_empty()).then_some(Target { rank, addrs, token })
}

/// Tells every target to exit with `code` and waits until each has answered (and, within the
/// deadline, exited). Returns the ranks that could not be told (no answer); empty means every
/// peer is gone or going. A peer whose listener refuses connections on every address has
/// exited already.
pub fn notify(targets: &[Target], code: i32, deadline: Instant) -> Vec<u32> {
    let left = |d: Instant| d.saturating_duration_since(Instant::now());
    let mut failed = Vec::new();
    // First reach everyone, so all peers exit at about the same time; then collect answers.
    let mut told = Vec::new();
    for t in targets {
        let mut refused = 0;
        let mut sent = None;
        for addr in &t.addrs {
            let limit = left(deadline).min(Duration::from_secs(1));
            if limit.is_zero() {
                break;
            }
            match TcpStream::connect_timeout(addr, limit) {
                Ok(mut s) => {
                    let _ = s.set_nodelay(true);
                    if s.write_all(notice(&t.token, code).as_bytes()).is_ok() {
                        sent = Some(s);
                        break;
                    }
                }
                Err(e) if e.kind() == ErrorKind::ConnectionRefused => refused += 1,
                Err(_) => {}
            }
        }
        match sent {
            Some(s) => told.push((t.rank, s)),
            None if refused == t.addrs.len() => {}
            None => failed.push(t.rank),
        }
    }
    for (rank, mut s) in told {
        let mut answered = false;
        let mut b = [0u8; 1];
        loop {
            let limit = left(deadline);
            if limit.is_zero() || s.set_read_timeout(Some(limit)).is_err() {
                break;
            }
            match s.read(&mut b) {
                // Closed: after the answer, the peer has exited; without it, a listener that
                // did not take our token (or a peer that died first) — not told.
                Ok(0) => break,
                Ok(_) => answered |= b[0] == ACK,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                // Reset by an exiting peer, or a timeout after the answer: nothing more to wait for.
                Err(_) => break,
            }
        }
        if !answered {
            failed.push(rank);
        }
    }
    failed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notices_carry_the_code_and_need_the_token() {
        let t = "00ff".repeat(8);
        assert_eq!(parse_notice(notice(&t, 7).trim_end(), &t), Some(7));
        assert_eq!(parse_notice(&format!("{t} -3"), &t), Some(-3));
        assert_eq!(parse_notice(&format!("{t}0 7"), &t), None);
        assert_eq!(parse_notice(&format!("{} 7", "00fe".repeat(8)), &t), None);
        assert_eq!(parse_notice(&format!("{t} seven"), &t), None);
        assert_eq!(parse_notice(&t, &t), None);
        assert_eq!(parse_notice("", &t), None);
    }

    #[test]
    fn targets_come_from_cards() {
        let card = Card::new()
            .with("host", "n1")
            .with(PORT_FIELD, 4000)
            .with(TOKEN_FIELD, "ab")
            .with("tcp", "5000,10.0.0.1,127.0.0.1");
        let local = target(3, &card, "n1").unwrap();
        assert_eq!(local.rank, 3);
        assert_eq!(local.token, "ab");
        let addrs: Vec<String> = local.addrs.iter().map(|a| a.to_string()).collect();
        assert_eq!(addrs, ["127.0.0.1:4000", "10.0.0.1:4000"]);
        let remote = target(3, &card, "n2").unwrap();
        let addrs: Vec<String> = remote.addrs.iter().map(|a| a.to_string()).collect();
        assert_eq!(addrs, ["10.0.0.1:4000", "127.0.0.1:4000"]);
        // No listener, a bad port, or nowhere to reach it: no target.
        assert_eq!(target(1, &Card::new().with("host", "n1"), "n1"), None);
        let bad = Card::new()
            .with("host", "n1")
            .with(PORT_FIELD, "x")
            .with(TOKEN_FIELD, "ab");
        assert_eq!(target(1, &bad, "n1"), None);
        let far = Card::new()
            .with("host", "n9")
            .with(PORT_FIELD, 1)
            .with(TOKEN_FIELD, "ab");
        assert_eq!(target(1, &far, "n1"), None);
    }

    #[test]
    fn wrong_tokens_and_silence_fail_and_a_closed_port_counts_as_gone() {
        // A real listener with another token: it reads the notice, ignores it (the process
        // lives on) and closes without answering, so the peer counts as not told.
        let l = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let port = l.local_addr().unwrap().port();
        std::thread::spawn(move || serve(l, "the-right-token"));
        let wrong = Target {
            rank: 3,
            addrs: vec![SocketAddr::from((Ipv4Addr::LOCALHOST, port))],
            token: "a-wrong-token".into(),
        };
        let failed = notify(&[wrong], 7, Instant::now() + Duration::from_secs(5));
        assert_eq!(failed, [3]);
        // A socket that nobody serves: the notice is sent but never answered.
        let silent = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let port = silent.local_addr().unwrap().port();
        let t = Target {
            rank: 1,
            addrs: vec![SocketAddr::from((Ipv4Addr::LOCALHOST, port))],
            token: "aa".into(),
        };
        let failed = notify(&[t], 7, Instant::now() + Duration::from_millis(300));
        assert_eq!(failed, [1]);
        // A port nobody listens on: the peer has exited already.
        drop(silent);
        let gone = Target {
            rank: 2,
            addrs: vec![SocketAddr::from((Ipv4Addr::LOCALHOST, port))],
            token: "aa".into(),
        };
        assert!(notify(&[gone], 7, Instant::now() + Duration::from_secs(2)).is_empty());
    }

    #[test]
    fn a_listener_reads_only_its_own_notice() {
        // serve() exits the process, so the reading half is checked on its own.
        let l = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let addr = l.local_addr().unwrap();
        let mut c = TcpStream::connect(addr).unwrap();
        c.write_all(b"tok 42\n").unwrap();
        let (mut s, _) = l.accept().unwrap();
        assert_eq!(read_notice(&mut s).as_deref(), Some("tok 42"));
        // An endless line is cut off, not buffered.
        let mut c = TcpStream::connect(addr).unwrap();
        c.write_all(&[b'x'; 200]).unwrap();
        let (mut s, _) = l.accept().unwrap();
        assert_eq!(read_notice(&mut s), None);
        // A stranger who connects and closes.
        drop(TcpStream::connect(addr).unwrap());
        let (mut s, _) = l.accept().unwrap();
        assert_eq!(read_notice(&mut s), None);
    }
}
