//! `oxmpi-bench rawtcp`: the floor under the TCP transport. A ping-pong (one-way latency, half
//! the round trip) and a one-way stream (bandwidth) over a plain blocking socket with
//! TCP_NODELAY, between a client and a server: in one process over loopback by default, or
//! across hosts (`--serve ADDR:PORT` on one, `--connect ADDR:PORT` on the other).

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::Instant;

use clap::Args;

/// Options of `oxmpi-bench rawtcp`.
#[derive(Debug, Args, Clone)]
pub struct RawTcpArgs {
    /// Serve one client on this address (`0.0.0.0:5000`), then exit.
    #[arg(long, conflicts_with = "connect")]
    pub serve: Option<SocketAddr>,
    /// Measure against a server started with `--serve` at this address.
    #[arg(long)]
    pub connect: Option<SocketAddr>,
    /// Ping-pong message sizes in bytes, comma-separated.
    #[arg(long, default_value = "1,8,1024,65536", value_delimiter = ',')]
    pub lat_sizes: Vec<usize>,
    /// Stream message sizes in bytes, comma-separated.
    #[arg(long, default_value = "65536,1048576,4194304", value_delimiter = ',')]
    pub bw_sizes: Vec<usize>,
    /// Round trips per latency size (after as many warm-up ones).
    #[arg(long, default_value_t = 10000)]
    pub iters: u32,
    /// Bytes streamed per bandwidth size.
    #[arg(long, default_value_t = 1 << 30)]
    pub stream_bytes: u64,
    /// Also measure a ping-pong whose client and server spin on nonblocking sockets instead
    /// of sleeping in the kernel until data arrives (how MPI libraries that poll wait).
    #[arg(long)]
    pub spin: bool,
}

const PING: u8 = 1;
const STREAM: u8 = 2;
const DONE: u8 = 3;
/// A ping-pong with both sides spinning on nonblocking sockets.
const SPIN_PING: u8 = 4;

/// Reads exactly `buf.len()` bytes from a nonblocking socket, polling it without sleeping.
fn spin_read(s: &mut TcpStream, buf: &mut [u8]) -> io::Result<()> {
    let mut got = 0;
    while got < buf.len() {
        match s.read(&mut buf[got..]) {
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => std::hint::spin_loop(),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Writes all of `buf` to a nonblocking socket, polling it without sleeping.
fn spin_write(s: &mut TcpStream, buf: &[u8]) -> io::Result<()> {
    let mut put = 0;
    while put < buf.len() {
        match s.write(&buf[put..]) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => put += n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => std::hint::spin_loop(),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// One request of the client: what to do, the message size and the count.
fn command(kind: u8, size: usize, count: u64) -> [u8; 17] {
    let mut b = [0u8; 17];
    b[0] = kind;
    b[1..9].copy_from_slice(&(size as u64).to_le_bytes());
    b[9..17].copy_from_slice(&count.to_le_bytes());
    b
}

/// Answers the client's requests on `s` until it says it is done.
fn serve_one(mut s: TcpStream) -> io::Result<()> {
    s.set_nodelay(true)?;
    let mut buf = Vec::new();
    loop {
        let mut c = [0u8; 17];
        s.read_exact(&mut c)?;
        let size = u64::from_le_bytes(c[1..9].try_into().expect("8 bytes")) as usize;
        let count = u64::from_le_bytes(c[9..17].try_into().expect("8 bytes"));
        if size > 1 << 30 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "message size over 1 GiB",
            ));
        }
        buf.resize(size, 0);
        match c[0] {
            PING => {
                for _ in 0..count {
                    s.read_exact(&mut buf)?;
                    s.write_all(&buf)?;
                }
            }
            STREAM => {
                for _ in 0..count {
                    s.read_exact(&mut buf)?;
                }
                s.write_all(&[1])?;
            }
            SPIN_PING => {
                s.set_nonblocking(true)?;
                for _ in 0..count {
                    spin_read(&mut s, &mut buf)?;
                    spin_write(&mut s, &buf)?;
                }
                s.set_nonblocking(false)?;
            }
            DONE => return Ok(()),
            k => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("unknown request {k}"),
                ))
            }
        }
    }
}

/// One-way latency in microseconds of `size`-byte ping-pongs.
fn latency(s: &mut TcpStream, size: usize, iters: u32) -> io::Result<f64> {
    let mut buf = vec![0x5a; size];
    s.write_all(&command(PING, size, 2 * iters as u64))?;
    for _ in 0..iters {
        s.write_all(&buf)?;
        s.read_exact(&mut buf)?;
    }
    let t = Instant::now();
    for _ in 0..iters {
        s.write_all(&buf)?;
        s.read_exact(&mut buf)?;
    }
    Ok(t.elapsed().as_secs_f64() * 1e6 / iters as f64 / 2.0)
}

/// One-way latency in microseconds of `size`-byte ping-pongs with both sides spinning.
fn spin_latency(s: &mut TcpStream, size: usize, iters: u32) -> io::Result<f64> {
    let mut buf = vec![0x5a; size];
    s.write_all(&command(SPIN_PING, size, 2 * iters as u64))?;
    s.set_nonblocking(true)?;
    let mut round = |s: &mut TcpStream| -> io::Result<()> {
        for _ in 0..iters {
            spin_write(s, &buf)?;
            spin_read(s, &mut buf)?;
        }
        Ok(())
    };
    round(s)?;
    let t = Instant::now();
    round(s)?;
    let us = t.elapsed().as_secs_f64() * 1e6 / iters as f64 / 2.0;
    s.set_nonblocking(false)?;
    Ok(us)
}

/// Bandwidth in MB/s (10^6 bytes per second) of a stream of `size`-byte messages.
fn bandwidth(s: &mut TcpStream, size: usize, total: u64) -> io::Result<f64> {
    let count = (total / size.max(1) as u64).max(4);
    let buf = vec![0xa5; size];
    s.write_all(&command(STREAM, size, count))?;
    let t = Instant::now();
    for _ in 0..count {
        s.write_all(&buf)?;
    }
    let mut ack = [0u8; 1];
    s.read_exact(&mut ack)?;
    Ok((count * size as u64) as f64 / t.elapsed().as_secs_f64() / 1e6)
}

fn measure(mut s: TcpStream, a: &RawTcpArgs) -> io::Result<()> {
    s.set_nodelay(true)?;
    println!("# raw TCP ping-pong to {}", s.peer_addr()?);
    println!("# {:>10} {:>14}", "size", "latency (us)");
    for &size in &a.lat_sizes {
        println!("{:>12} {:>14.2}", size, latency(&mut s, size, a.iters)?);
    }
    if a.spin {
        println!("# raw TCP ping-pong, both sides spinning on nonblocking sockets");
        println!("# {:>10} {:>14}", "size", "latency (us)");
        for &size in &a.lat_sizes {
            println!(
                "{:>12} {:>14.2}",
                size,
                spin_latency(&mut s, size, a.iters)?
            );
        }
    }
    println!("# raw TCP stream");
    println!("# {:>10} {:>14}", "size", "MB/s");
    for &size in &a.bw_sizes {
        println!(
            "{:>12} {:>14.1}",
            size,
            bandwidth(&mut s, size, a.stream_bytes)?
        );
    }
    s.write_all(&command(DONE, 0, 0))
}

/// Runs `oxmpi-bench rawtcp`.
pub fn run(a: &RawTcpArgs) -> io::Result<()> {
    if a.lat_sizes
        .iter()
        .chain(&a.bw_sizes)
        .any(|&s| s == 0 || s > 1 << 30)
    {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "sizes must be between 1 B and 1 GiB",
        ));
    }
    if a.iters == 0 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "--iters must be at least 1",
        ));
    }
    if let Some(addr) = a.serve {
        let l = TcpListener::bind(addr)?;
        eprintln!("oxmpi-bench rawtcp: serving on {}", l.local_addr()?);
        return serve_one(l.accept()?.0);
    }
    if let Some(addr) = a.connect {
        return measure(TcpStream::connect(addr)?, a);
    }
    let l = TcpListener::bind("127.0.0.1:0")?;
    let addr = l.local_addr()?;
    let server = std::thread::spawn(move || serve_one(l.accept()?.0));
    measure(TcpStream::connect(addr)?, a)?;
    server
        .join()
        .map_err(|_| io::Error::other("server thread panicked"))?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_measures_positive_figures() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let server = std::thread::spawn(move || serve_one(l.accept().unwrap().0));
        let mut s = TcpStream::connect(addr).unwrap();
        assert!(latency(&mut s, 8, 50).unwrap() > 0.0);
        assert!(spin_latency(&mut s, 8, 50).unwrap() > 0.0);
        assert!(
            latency(&mut s, 8, 5).unwrap() > 0.0,
            "blocking again after spinning"
        );
        assert!(bandwidth(&mut s, 65536, 1 << 20).unwrap() > 0.0);
        s.write_all(&command(DONE, 0, 0)).unwrap();
        server.join().unwrap().unwrap();
    }

    #[test]
    fn bad_requests_and_options_are_errors() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let server = std::thread::spawn(move || serve_one(l.accept().unwrap().0));
        let mut s = TcpStream::connect(addr).unwrap();
        s.write_all(&command(9, 1, 1)).unwrap();
        assert!(server.join().unwrap().is_err());
        let mut a = RawTcpArgs {
            serve: None,
            connect: None,
            lat_sizes: vec![0],
            bw_sizes: vec![],
            iters: 1,
            stream_bytes: 1,
            spin: false,
        };
        assert!(run(&a).is_err());
        a.lat_sizes = vec![1];
        a.iters = 0;
        assert!(run(&a).is_err());
    }
}
