//! Which hosts a job runs on and which ranks go to each: `--host`, `--hostfile`, `--map-by`.
//!
//! A host list is an ordered list of `(name, slots)`. `--map-by slot` (the default) fills the
//! hosts in order, each up to its slots; `--map-by node` deals ranks round-robin over the hosts
//! that still have a free slot. Asking for more ranks than slots is an error unless
//! `--oversubscribe` is given; then the remaining ranks are dealt round-robin over all hosts.
//!
//! Hosts named `localhost` or this machine's own host name run their ranks as children of
//! oxrun itself, with no agent; every other host gets one agent started through the launch
//! command (see `remote`).

use std::fs;
use std::path::Path;

use clap::ValueEnum;

/// The `--map-by` choices.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum MapBy {
    /// Fill each host up to its slots before the next.
    #[default]
    Slot,
    /// One rank per host in turn.
    Node,
    /// Fill hosts like `slot`; on each host, ranks take cores in order.
    Core,
    /// Fill hosts like `slot`; on each host, ranks are dealt round-robin over the sockets.
    Socket,
    /// Fill hosts like `slot`; on each host, ranks are dealt round-robin over the NUMA nodes.
    Numa,
}

impl MapBy {
    /// The order in which a host's ranks take its cores.
    pub fn within(self) -> crate::binding::Within {
        use crate::binding::Within;
        match self {
            MapBy::Socket => Within::Socket,
            MapBy::Numa => Within::Numa,
            MapBy::Slot | MapBy::Node | MapBy::Core => Within::Core,
        }
    }
}

/// One host of the job and how many ranks it takes before it is oversubscribed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Host {
    /// The name the launch command receives as `{host}`.
    pub name: String,
    /// Its slots.
    pub slots: u32,
}

/// Most slots one host entry may declare.
const MAX_SLOTS: u32 = 1 << 20;

fn parse_slots(text: &str, what: &str) -> Result<u32, String> {
    match text.trim().parse::<u32>() {
        Ok(n) if (1..=MAX_SLOTS).contains(&n) => Ok(n),
        _ => Err(format!(
            "{what}: slots must be a whole number from 1 to {MAX_SLOTS}, not {text:?}"
        )),
    }
}

fn check_name(name: &str, what: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._:[]%@".contains(&b));
    if ok {
        Ok(())
    } else {
        Err(format!("{what}: {name:?} is not a host name"))
    }
}

/// Adds `host` to `list`, merging slots with an earlier entry of the same name.
fn push(list: &mut Vec<Host>, host: Host) {
    match list.iter_mut().find(|h| h.name == host.name) {
        Some(h) => h.slots = h.slots.saturating_add(host.slots).min(MAX_SLOTS),
        None => list.push(host),
    }
}

/// Parses `--host a:2,b,c:4` (a host without `:N` has one slot).
pub fn parse_host_list(text: &str) -> Result<Vec<Host>, String> {
    let mut list = Vec::new();
    for item in text.split(',') {
        let item = item.trim();
        let what = format!("--host {text}");
        if item.is_empty() {
            return Err(format!("{what}: empty host name"));
        }
        let (name, slots) = match item.rsplit_once(':') {
            // A bracketed IPv6 address keeps its colons: `[::1]:2`.
            Some((n, s)) if !n.is_empty() && (!n.contains(':') || n.ends_with(']')) => {
                (n, parse_slots(s, &what)?)
            }
            _ => (item, 1),
        };
        check_name(name, &what)?;
        push(
            &mut list,
            Host {
                name: name.to_owned(),
                slots,
            },
        );
    }
    Ok(list)
}

/// Parses a host file: one host per line, optionally followed by `slots=N` (default 1);
/// blank lines and `#` comments are ignored.
pub fn parse_hostfile(text: &str, file: &str) -> Result<Vec<Host>, String> {
    let mut list = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let what = format!("{file} line {}", i + 1);
        let mut words = line.split_whitespace();
        let name = words.next().unwrap_or_default();
        check_name(name, &what)?;
        let mut slots = 1;
        for w in words {
            match w.split_once('=') {
                Some(("slots", v)) => slots = parse_slots(v, &what)?,
                _ => return Err(format!("{what}: unknown word {w:?} (expected slots=N)")),
            }
        }
        push(
            &mut list,
            Host {
                name: name.to_owned(),
                slots,
            },
        );
    }
    if list.is_empty() {
        return Err(format!("{file}: no hosts in the host file"));
    }
    Ok(list)
}

/// Reads and parses a host file.
pub fn read_hostfile(path: &Path) -> Result<Vec<Host>, String> {
    let name = path.display().to_string();
    let text = fs::read_to_string(path).map_err(|e| format!("--hostfile {name}: {e}"))?;
    parse_hostfile(&text, &name)
}

/// The host index of each of `size` ranks.
pub fn map_ranks(
    hosts: &[Host],
    size: u32,
    map_by: MapBy,
    oversubscribe: bool,
) -> Result<Vec<u32>, String> {
    let slots: u64 = hosts.iter().map(|h| u64::from(h.slots)).sum();
    if u64::from(size) > slots && !oversubscribe {
        return Err(format!(
            "{size} ranks requested but the hosts have only {slots} slots (add --oversubscribe to run more ranks than slots)"
        ));
    }
    let mut used = vec![0u32; hosts.len()];
    let mut out = Vec::with_capacity(size as usize);
    let mut next = 0usize;
    for _ in 0..size {
        let free = |h: usize, used: &[u32]| used[h] < hosts[h].slots;
        let h = match map_by {
            MapBy::Slot | MapBy::Core | MapBy::Socket | MapBy::Numa => {
                (0..hosts.len()).find(|&h| free(h, &used))
            }
            MapBy::Node => (0..hosts.len())
                .map(|k| (next + k) % hosts.len())
                .find(|&h| free(h, &used)),
        };
        // Every slot taken: oversubscribe round-robin.
        let h = h.unwrap_or(next % hosts.len());
        used[h] += 1;
        next = h + 1;
        out.push(h as u32);
    }
    Ok(out)
}

/// This machine's host name, if it has one.
pub fn own_hostname() -> Option<String> {
    let mut buf = [0u8; 256];
    // SAFETY: `buf` is a writable buffer of the length passed; gethostname NUL-terminates
    // what fits (we also cut at the buffer's end).
    let ret = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len() - 1) };
    if ret != 0 {
        return None;
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    std::str::from_utf8(&buf[..end]).ok().map(str::to_owned)
}

/// Whether `name` is this host: `localhost` or the machine's own name. Such hosts run their
/// ranks without an agent.
pub fn is_local(name: &str, own: Option<&str>) -> bool {
    name == "localhost" || own == Some(name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn h(name: &str, slots: u32) -> Host {
        Host {
            name: name.into(),
            slots,
        }
    }

    #[test]
    fn host_lists_parse() {
        assert_eq!(
            parse_host_list("a:2,b,c:3").unwrap(),
            vec![h("a", 2), h("b", 1), h("c", 3)]
        );
        assert_eq!(parse_host_list("a,a:2").unwrap(), vec![h("a", 3)]);
        assert_eq!(parse_host_list("[::1]:2").unwrap(), vec![h("[::1]", 2)]);
        assert!(parse_host_list("a:0").unwrap_err().contains("slots"));
        assert!(parse_host_list("a:x").unwrap_err().contains("slots"));
        assert!(parse_host_list("a,,b").unwrap_err().contains("empty"));
        assert!(parse_host_list("a b")
            .unwrap_err()
            .contains("not a host name"));
        assert!(parse_host_list("$(rm)")
            .unwrap_err()
            .contains("not a host name"));
    }

    #[test]
    fn hostfiles_parse() {
        let text = "# cluster\nnode1 slots=2\n\n  node2   # one slot\nnode3 slots=4\n";
        assert_eq!(
            parse_hostfile(text, "hf").unwrap(),
            vec![h("node1", 2), h("node2", 1), h("node3", 4)]
        );
        assert!(parse_hostfile("a cpus=2", "hf")
            .unwrap_err()
            .contains("hf line 1"));
        assert!(parse_hostfile("a slots=0", "hf")
            .unwrap_err()
            .contains("slots"));
        assert!(parse_hostfile("# nothing\n", "hf")
            .unwrap_err()
            .contains("no hosts"));
    }

    #[test]
    fn mapping_fills_or_deals() {
        let hosts = [h("a", 2), h("b", 2)];
        assert_eq!(
            map_ranks(&hosts, 4, MapBy::Slot, false).unwrap(),
            vec![0, 0, 1, 1]
        );
        assert_eq!(
            map_ranks(&hosts, 4, MapBy::Node, false).unwrap(),
            vec![0, 1, 0, 1]
        );
        assert_eq!(
            map_ranks(&[h("a", 1), h("b", 3)], 4, MapBy::Node, false).unwrap(),
            vec![0, 1, 1, 1]
        );
        assert_eq!(
            map_ranks(&hosts, 3, MapBy::Slot, false).unwrap(),
            vec![0, 0, 1]
        );
        assert!(map_ranks(&hosts, 5, MapBy::Slot, false)
            .unwrap_err()
            .contains("--oversubscribe"));
        assert_eq!(
            map_ranks(&hosts, 6, MapBy::Slot, true).unwrap(),
            vec![0, 0, 1, 1, 0, 1]
        );
    }

    #[test]
    fn local_names() {
        assert!(is_local("localhost", None));
        assert!(is_local("me", Some("me")));
        assert!(!is_local("oxh1", Some("me")));
    }

    proptest! {
        #[test]
        fn mapping_respects_slots(slots in proptest::collection::vec(1u32..5, 1..5), extra in 0u32..6, node in any::<bool>()) {
            let hosts: Vec<Host> = slots.iter().enumerate().map(|(i, &s)| h(&format!("h{i}"), s)).collect();
            let total: u32 = slots.iter().sum();
            let map_by = if node { MapBy::Node } else { MapBy::Slot };
            let m = map_ranks(&hosts, total, map_by, false).unwrap();
            for (i, host) in hosts.iter().enumerate() {
                prop_assert_eq!(m.iter().filter(|&&x| x == i as u32).count() as u32, host.slots);
            }
            if !node {
                prop_assert!(m.windows(2).all(|w| w[0] <= w[1]));
            }
            let over = map_ranks(&hosts, total + extra, map_by, true).unwrap();
            prop_assert_eq!(over.len() as u32, total + extra);
            prop_assert!(over.iter().all(|&x| (x as usize) < hosts.len()));
            if extra > 0 {
                prop_assert!(map_ranks(&hosts, total + extra, map_by, false).is_err());
            }
        }
    }
}
