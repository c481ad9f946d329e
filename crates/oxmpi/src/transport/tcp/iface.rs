//! Which local addresses a rank listens on and publishes: every IPv4 interface address, or
//! those `OXMPI_TCP_IF` names (interface names or CIDR blocks); and which pairs of a peer's
//! addresses and ours make rails (same subnet first).

use std::net::Ipv4Addr;

use crate::error::{Error, ErrorClass, Result};

/// One IPv4 address of an interface.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IfAddr {
    /// Interface name (`eth0`).
    pub name: String,
    /// The address.
    pub addr: Ipv4Addr,
    /// Prefix length of its subnet.
    pub prefix: u8,
}

impl IfAddr {
    /// Whether `other` lies in this address's subnet.
    pub fn same_subnet(&self, other: Ipv4Addr) -> bool {
        Cidr {
            net: self.addr,
            prefix: self.prefix,
        }
        .contains(other)
    }
}

/// A block of addresses, `10.1.0.0/16`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cidr {
    net: Ipv4Addr,
    prefix: u8,
}

impl Cidr {
    /// Parses `a.b.c.d/n` (`a.b.c.d` alone is `/32`).
    pub fn parse(s: &str) -> Option<Cidr> {
        let (a, p) = s.split_once('/').unwrap_or((s, "32"));
        let prefix: u8 = p.trim().parse().ok().filter(|&p| p <= 32)?;
        Some(Cidr {
            net: a.trim().parse().ok()?,
            prefix,
        })
    }

    fn mask(&self) -> u32 {
        if self.prefix == 0 {
            0
        } else {
            u32::MAX << (32 - self.prefix)
        }
    }

    /// Whether `a` lies in the block.
    pub fn contains(&self, a: Ipv4Addr) -> bool {
        (u32::from(a) ^ u32::from(self.net)) & self.mask() == 0
    }
}

/// Every IPv4 address of every interface that is up.
pub fn list() -> Vec<IfAddr> {
    let mut out = Vec::new();
    let mut head: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs fills `head` with a list we free below with freeifaddrs; on error it
    // leaves nothing to free.
    if unsafe { libc::getifaddrs(&mut head) } != 0 {
        return out;
    }
    let mut p = head;
    while !p.is_null() {
        // SAFETY: `p` is a node of the list getifaddrs returned, valid until freeifaddrs; each
        // pointer field is checked for null before use, and an AF_INET address (and its
        // netmask) is a `sockaddr_in`.
        unsafe {
            let ifa = &*p;
            let up = ifa.ifa_flags & libc::IFF_UP as u32 != 0;
            if up
                && !ifa.ifa_addr.is_null()
                && (*ifa.ifa_addr).sa_family as i32 == libc::AF_INET
                && !ifa.ifa_name.is_null()
            {
                let sin = &*(ifa.ifa_addr as *const libc::sockaddr_in);
                let addr = Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr));
                let prefix = if ifa.ifa_netmask.is_null() {
                    32
                } else {
                    let m = &*(ifa.ifa_netmask as *const libc::sockaddr_in);
                    u32::from_be(m.sin_addr.s_addr).count_ones() as u8
                };
                let name = std::ffi::CStr::from_ptr(ifa.ifa_name)
                    .to_string_lossy()
                    .into_owned();
                out.push(IfAddr { name, addr, prefix });
            }
            p = ifa.ifa_next;
        }
    }
    // SAFETY: `head` came from getifaddrs and is freed once; no reference into it survives.
    unsafe { libc::freeifaddrs(head) };
    out
}

/// The addresses to listen on from `all`: those `spec` names (comma-separated interface names
/// or CIDR blocks), or, with an empty spec, every non-loopback address; loopback if
/// `loopback` (every peer on this host) or if nothing else is left.
pub fn select(all: &[IfAddr], spec: &str, loopback: bool) -> Result<Vec<IfAddr>> {
    let lo = || IfAddr {
        name: "lo".into(),
        addr: Ipv4Addr::LOCALHOST,
        prefix: 8,
    };
    if spec.trim().is_empty() {
        if loopback {
            return Ok(vec![lo()]);
        }
        let out: Vec<IfAddr> = all
            .iter()
            .filter(|a| !a.addr.is_loopback())
            .cloned()
            .collect();
        return Ok(if out.is_empty() { vec![lo()] } else { out });
    }
    let mut out = Vec::new();
    for item in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let cidr = item.contains(['.', '/']).then(|| Cidr::parse(item));
        let hits: Vec<&IfAddr> = match cidr {
            Some(Some(c)) => all.iter().filter(|a| c.contains(a.addr)).collect(),
            Some(None) => {
                return Err(Error::new(
                    ErrorClass::Arg,
                    format!("OXMPI_TCP_IF: {item:?} is not an interface name or a CIDR block"),
                ))
            }
            None => all.iter().filter(|a| a.name == item).collect(),
        };
        if hits.is_empty() {
            return Err(Error::new(
                ErrorClass::Arg,
                format!("OXMPI_TCP_IF: no IPv4 interface address matches {item:?}"),
            ));
        }
        for h in hits {
            if !out.contains(h) {
                out.push(h.clone());
            }
        }
    }
    Ok(out)
}

/// The peer addresses rails go to: those in a subnet of one of `ours` (each such pair is a
/// path of its own), else every address the peer published (routed).
pub fn paths(ours: &[IfAddr], theirs: &[Ipv4Addr]) -> Vec<Ipv4Addr> {
    let near: Vec<Ipv4Addr> = theirs
        .iter()
        .copied()
        .filter(|&t| ours.iter().any(|o| o.same_subnet(t)))
        .collect();
    if near.is_empty() {
        theirs.to_vec()
    } else {
        near
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(name: &str, s: &str, prefix: u8) -> IfAddr {
        IfAddr {
            name: name.into(),
            addr: s.parse().unwrap(),
            prefix,
        }
    }

    #[test]
    fn cidr_blocks_contain_their_addresses() {
        let c = Cidr::parse("10.1.0.0/16").unwrap();
        assert!(c.contains("10.1.200.3".parse().unwrap()));
        assert!(!c.contains("10.2.0.1".parse().unwrap()));
        assert!(Cidr::parse("0.0.0.0/0")
            .unwrap()
            .contains("8.8.8.8".parse().unwrap()));
        assert_eq!(Cidr::parse("10.0.0.1").unwrap().prefix, 32);
        assert_eq!(Cidr::parse("10.0.0.1/33"), None);
        assert_eq!(Cidr::parse("ten/8"), None);
    }

    #[test]
    fn selection_by_default_name_or_cidr_and_bad_specs_are_errors() {
        let all = [
            a("lo", "127.0.0.1", 8),
            a("eth0", "10.0.0.1", 24),
            a("eth1", "10.0.1.1", 24),
        ];
        let names = |v: Vec<IfAddr>| v.into_iter().map(|x| x.name).collect::<Vec<_>>();
        assert_eq!(names(select(&all, "", false).unwrap()), ["eth0", "eth1"]);
        assert_eq!(names(select(&all, "", true).unwrap()), ["lo"]);
        assert_eq!(names(select(&all[..1], "", false).unwrap()), ["lo"]);
        assert_eq!(names(select(&all, "eth1", false).unwrap()), ["eth1"]);
        assert_eq!(
            names(select(&all, "10.0.0.0/24, eth1", false).unwrap()),
            ["eth0", "eth1"]
        );
        assert!(select(&all, "wlan0", false)
            .unwrap_err()
            .message()
            .contains("wlan0"));
        assert!(select(&all, "10.0.0.0/40", false).is_err());
    }

    #[test]
    fn rails_prefer_addresses_on_our_subnets() {
        let ours = [a("eth0", "10.0.0.1", 24), a("eth1", "10.0.1.1", 24)];
        let theirs: Vec<Ipv4Addr> = ["192.168.0.9", "10.0.1.2", "10.0.0.2"]
            .iter()
            .map(|s| s.parse().unwrap())
            .collect();
        assert_eq!(paths(&ours, &theirs), [theirs[1], theirs[2]]);
        assert_eq!(paths(&ours, &theirs[..1]), [theirs[0]]);
        assert!(!list().is_empty(), "this host has at least loopback");
    }
}
