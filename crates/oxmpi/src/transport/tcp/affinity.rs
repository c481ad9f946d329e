//! Which cores handle a TCP connection: the rank's own, the one the kernel processes the
//! connection's incoming packets on (`SO_INCOMING_CPU`), and the NUMA node of the interface
//! that carries it.
//!
//! Placement is the launcher's: for jobs that span hosts, oxrun puts a host's ranks on the
//! cores of its network interface's NUMA node first (`--report-bindings` names that node).
//! Under srun the cpuset is Slurm's and nobody rebinds. What a rank can still do is ask the
//! kernel: [`on_connect`] runs once per TCP connection (after connect, and after an accepted
//! peer proved itself). If the rank is bound to one core it sets `SO_INCOMING_CPU` to that
//! core's first CPU, which Linux accepts on any socket; on an established TCP socket the
//! kernel records it but overwrites it with the CPU that processes the next packet, so it is a
//! hint, not steering (receive processing follows the NIC's interrupt and RPS/RFS settings).
//! With `OXMPI_TCP_LOG_ROUTES=1` it then prints the CPU that processed the connection's last
//! packet, the rank's CPUs and the interface's NUMA node, so a mismatch is visible.

use std::net::{IpAddr, TcpStream};
use std::os::fd::AsRawFd;

use super::iface;

/// The CPU that processed the last packet `sock` received (`SO_INCOMING_CPU`), if the kernel
/// knows one.
pub fn incoming_cpu(sock: &TcpStream) -> Option<u32> {
    let mut cpu: libc::c_int = -1;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: getsockopt writes at most `len` bytes into `cpu`, a live c_int, and `len` into
    // a live socklen_t; an invalid descriptor or option only makes it return -1.
    let rc = unsafe {
        libc::getsockopt(
            sock.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_INCOMING_CPU,
            (&mut cpu as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    (rc == 0 && cpu >= 0).then_some(cpu as u32)
}

/// Asks the kernel to treat `cpu` as `sock`'s receive CPU (`SO_INCOMING_CPU`).
pub fn steer(sock: &TcpStream, cpu: u32) -> std::io::Result<()> {
    let v = libc::c_int::try_from(cpu)
        .map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))?;
    // SAFETY: setsockopt reads `size_of::<c_int>()` bytes from `v`, a live c_int; failures are
    // reported through the return value only.
    let rc = unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_INCOMING_CPU,
            (&v as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// The CPUs this thread may run on.
pub fn own_cpus() -> Vec<u32> {
    // SAFETY: cpu_set_t is plain data for which all zeroes is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: sched_getaffinity writes at most size_of::<cpu_set_t>() bytes into `set`, which
    // lives on this stack; on failure it writes nothing and we return an empty list.
    let rc =
        unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if rc != 0 {
        return Vec::new();
    }
    (0..libc::CPU_SETSIZE as usize)
        // SAFETY: CPU_ISSET reads bit `i` of `set`, and `i` is below CPU_SETSIZE.
        .filter(|&i| unsafe { libc::CPU_ISSET(i, &set) })
        .map(|i| i as u32)
        .collect()
}

/// The CPU to steer to: the first of the rank's CPUs when they are one core's (at most the
/// hyperthreads `siblings` lists for that CPU), none for an unbound or widely bound rank.
pub fn steer_target(own: &[u32], siblings: Option<Vec<u32>>) -> Option<u32> {
    let first = *own.first()?;
    let one_core = own.len() == 1 || siblings.is_some_and(|s| own.iter().all(|c| s.contains(c)));
    one_core.then_some(first)
}

/// The hyperthreads sharing `cpu`'s core, from sysfs.
fn siblings(cpu: u32) -> Option<Vec<u32>> {
    let path = format!("/sys/devices/system/cpu/cpu{cpu}/topology/thread_siblings_list");
    let text = std::fs::read_to_string(path).ok()?;
    let cpus = oxmpi_pmi::topology::parse_cpu_list(&text)?;
    Some(cpus.into_iter().map(|c| c as u32).collect())
}

/// The interface carrying `sock` (by its local address) and that interface's NUMA node as
/// text: `eth0 numa 1`, `eth0 numa ?`, `lo virtual`.
pub fn nic_of(sock: &TcpStream) -> String {
    let Ok(IpAddr::V4(local)) = sock.local_addr().map(|a| a.ip()) else {
        return "? (not IPv4)".into();
    };
    let Some(nic) = iface::list().into_iter().find(|i| i.addr == local) else {
        return format!("? ({local} on no interface)");
    };
    let dev = format!("/sys/class/net/{}/device", nic.name);
    if !std::path::Path::new(&dev).exists() {
        return format!("{} virtual", nic.name);
    }
    let numa = std::fs::read_to_string(format!("{dev}/numa_node"))
        .ok()
        .and_then(|s| s.trim().parse::<i64>().ok())
        .filter(|&n| n >= 0);
    match numa {
        Some(n) => format!("{} numa {n}", nic.name),
        None => format!("{} numa ?", nic.name),
    }
}

/// Once per TCP connection of rank `me` to rank `peer` (rail `rail`): steers the socket's
/// receive CPU to the rank's core when it is bound to one, and with `log` prints where the
/// connection's packets are processed.
#[cold]
pub fn on_connect(sock: &TcpStream, me: u32, peer: u32, rail: usize, log: bool) {
    // Before steering overwrites it: the CPU that processed the connection's last packet.
    let rx = incoming_text(sock);
    let own = own_cpus();
    let target = own.first().and_then(|&c| steer_target(&own, siblings(c)));
    let steered = target.map(|cpu| (cpu, steer(sock, cpu)));
    if !log {
        return;
    }
    let asked = match &steered {
        None => "not steered: rank not bound to one core".to_owned(),
        Some((cpu, Ok(()))) => format!("steered to cpu {cpu}"),
        Some((cpu, Err(e))) => format!("steering to cpu {cpu} refused: {e}"),
    };
    let own_list: Vec<usize> = own.iter().map(|&c| c as usize).collect();
    eprintln!(
        "oxmpi: rank {me}: TCP rail {rail} to rank {peer}: packets processed on cpu {rx}, rank cpus {}, nic {}, {asked}",
        oxmpi_pmi::topology::format_cpu_list(&own_list),
        nic_of(sock),
    );
}

/// The receive CPU the kernel reports for `sock`, as text for route logs.
pub fn incoming_text(sock: &TcpStream) -> String {
    incoming_cpu(sock).map_or_else(|| "unknown".to_owned(), |c| c.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::TcpListener;

    fn pair() -> (TcpStream, TcpStream) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let a = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (b, _) = l.accept().unwrap();
        (a, b)
    }

    #[test]
    fn the_kernel_names_an_online_cpu_for_a_loopback_connection() {
        let (mut a, mut b) = pair();
        a.write_all(b"x").unwrap();
        let mut byte = [0u8; 1];
        b.read_exact(&mut byte).unwrap();
        let online = oxmpi_pmi::topology::Topology::host();
        for s in [&a, &b] {
            let cpu = incoming_cpu(s).expect("SO_INCOMING_CPU after traffic");
            assert!(
                online.cpu(cpu as usize).is_some(),
                "cpu {cpu} is not online"
            );
        }
    }

    #[test]
    fn steering_is_recorded_until_the_next_packet() {
        let (a, _b) = pair();
        let cpu = own_cpus()[0];
        steer(&a, cpu).unwrap();
        assert_eq!(incoming_cpu(&a), Some(cpu));
        assert!(!incoming_text(&a).is_empty());
    }

    #[test]
    fn a_negative_or_huge_cpu_is_refused() {
        let (a, _b) = pair();
        assert!(steer(&a, u32::MAX).is_err());
    }

    #[test]
    fn only_a_rank_bound_to_one_core_is_steered() {
        assert_eq!(steer_target(&[3], None), Some(3));
        assert_eq!(steer_target(&[1, 5], Some(vec![1, 5])), Some(1));
        assert_eq!(steer_target(&[0, 1], Some(vec![0, 4])), None);
        assert_eq!(steer_target(&[0, 1], None), None);
        assert_eq!(steer_target(&[], None), None);
    }

    #[test]
    fn loopback_connections_name_a_virtual_interface() {
        let (a, _b) = pair();
        assert_eq!(nic_of(&a), "lo virtual");
    }

    #[test]
    fn this_thread_may_run_somewhere() {
        assert!(!own_cpus().is_empty());
    }
}
