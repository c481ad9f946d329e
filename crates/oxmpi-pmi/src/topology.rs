//! The machine as the kernel describes it in sysfs: packages, NUMA nodes, cores, caches and
//! network interfaces with their NUMA node.
//!
//! Shared by the launcher (placement and binding by core, socket or NUMA node) and
//! `oxmpi-info --topology`. Two readers give the same [`Topology`]: hwloc (the `hwlocality`
//! crate over the system libhwloc, cargo feature `hwloc`, on by default) and `/sys`, which every
//! Linux has. [`Topology::detect`] takes hwloc when it is built in and works, and falls back to
//! sysfs otherwise (or when `OXMPI_TOPOLOGY=sysfs`). The sysfs reader works relative to a root
//! directory so tests can use a fabricated tree.

use std::fs;
use std::path::Path;

#[cfg(feature = "hwloc")]
mod hwloc;

/// The environment variable choosing the reader: `auto` (hwloc, then sysfs), `hwloc` or `sysfs`.
pub const BACKEND_ENV: &str = "OXMPI_TOPOLOGY";

/// Which reader produced a [`Topology`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Backend {
    /// hwloc (the `hwloc` feature).
    Hwloc,
    /// sysfs, with the reason hwloc was not used.
    Sysfs(String),
}

impl std::fmt::Display for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Backend::Hwloc => write!(f, "hwloc"),
            Backend::Sysfs(why) => write!(f, "sysfs ({why})"),
        }
    }
}

/// One logical CPU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cpu {
    /// Its number (what `sched_setaffinity` takes).
    pub id: usize,
    /// The CPUs sharing its physical core (itself included), in increasing order.
    pub core_cpus: Vec<usize>,
    /// Its package (socket).
    pub package: u32,
    /// Its NUMA node (0 when the kernel has none).
    pub numa: u32,
}

/// A CPU cache.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cache {
    /// 1, 2, 3...
    pub level: u32,
    /// `Data`, `Instruction` or `Unified`.
    pub kind: String,
    /// Size as the kernel prints it (`32K`).
    pub size: String,
    /// The CPUs sharing it.
    pub cpus: Vec<usize>,
}

/// A network interface.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Nic {
    /// Its name (`eth0`).
    pub name: String,
    /// Its device's NUMA node, if it is a device the kernel ties to one.
    pub numa: Option<u32>,
    /// Whether it is virtual (loopback, bridges, veths: no device behind it).
    pub virtual_: bool,
}

/// What sysfs says about this machine.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Topology {
    /// Every online CPU, by number.
    pub cpus: Vec<Cpu>,
    /// Every distinct cache.
    pub caches: Vec<Cache>,
    /// Every network interface, by name.
    pub nics: Vec<Nic>,
}

/// Parses a kernel CPU list such as `0-3,8,10-11`.
pub fn parse_cpu_list(text: &str) -> Option<Vec<usize>> {
    let mut cpus = Vec::new();
    for part in text.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (usize, usize) = (a.parse().ok()?, b.parse().ok()?);
                if a > b || b - a > 1 << 16 {
                    return None;
                }
                cpus.extend(a..=b);
            }
            None => cpus.push(part.parse().ok()?),
        }
    }
    Some(cpus)
}

fn read(path: &Path) -> Option<String> {
    fs::read_to_string(path).ok().map(|s| s.trim().to_owned())
}

impl Topology {
    /// This machine's topology (`/sys`).
    pub fn host() -> Topology {
        Topology::read_from(Path::new("/"))
    }

    /// This machine's topology through hwloc, if built in (`Err` says why not or what failed).
    /// With `io`, hwloc also places the network devices (slower); without, their NUMA nodes
    /// are sysfs's.
    pub fn from_hwloc(io: bool) -> Result<Topology, String> {
        #[cfg(feature = "hwloc")]
        {
            let nics = Topology::read_from(Path::new("/")).nics;
            hwloc::read(nics, io)
        }
        #[cfg(not(feature = "hwloc"))]
        {
            let _ = io;
            Err("built without the hwloc feature".into())
        }
    }

    /// This machine's topology from the reader [`BACKEND_ENV`] asks for (default: hwloc, and
    /// sysfs when hwloc is not built in or fails), with the reader that gave it; `io` as in
    /// [`Topology::from_hwloc`].
    pub fn detect(io: bool) -> (Topology, Backend) {
        Topology::detect_with(&std::env::var(BACKEND_ENV).unwrap_or_default(), io)
    }

    fn detect_with(choice: &str, io: bool) -> (Topology, Backend) {
        if choice == "sysfs" {
            return (
                Topology::host(),
                Backend::Sysfs(format!("{BACKEND_ENV}=sysfs")),
            );
        }
        match Topology::from_hwloc(io) {
            Ok(t) => (t, Backend::Hwloc),
            Err(why) => (Topology::host(), Backend::Sysfs(why)),
        }
    }

    /// The topology in the sysfs tree under `root`. Missing files give defaults: a CPU without
    /// topology is a core of its own on package 0, NUMA node 0.
    pub fn read_from(root: &Path) -> Topology {
        let cpu_dir = root.join("sys/devices/system/cpu");
        let online = read(&cpu_dir.join("online"))
            .and_then(|s| parse_cpu_list(&s))
            .unwrap_or_else(|| {
                // No `online` file: every cpuN directory.
                let mut ids: Vec<usize> = fs::read_dir(&cpu_dir)
                    .into_iter()
                    .flatten()
                    .flatten()
                    .filter_map(|e| e.file_name().to_str()?.strip_prefix("cpu")?.parse().ok())
                    .collect();
                ids.sort_unstable();
                ids
            });
        let mut topo = Topology::default();
        for id in online {
            let dir = cpu_dir.join(format!("cpu{id}"));
            let t = dir.join("topology");
            let core_cpus = read(&t.join("core_cpus_list"))
                .or_else(|| read(&t.join("thread_siblings_list")))
                .and_then(|s| parse_cpu_list(&s))
                .unwrap_or_else(|| vec![id]);
            let package = read(&t.join("physical_package_id"))
                .and_then(|s| s.parse::<i64>().ok())
                .map_or(0, |p| p.max(0) as u32);
            let numa = fs::read_dir(&dir)
                .into_iter()
                .flatten()
                .flatten()
                .find_map(|e| e.file_name().to_str()?.strip_prefix("node")?.parse().ok())
                .unwrap_or(0);
            for i in 0.. {
                let c = dir.join(format!("cache/index{i}"));
                if !c.exists() {
                    break;
                }
                let cache = Cache {
                    level: read(&c.join("level"))
                        .and_then(|s| s.parse().ok())
                        .unwrap_or(0),
                    kind: read(&c.join("type")).unwrap_or_default(),
                    size: read(&c.join("size")).unwrap_or_default(),
                    cpus: read(&c.join("shared_cpu_list"))
                        .and_then(|s| parse_cpu_list(&s))
                        .unwrap_or_else(|| vec![id]),
                };
                if !topo.caches.contains(&cache) {
                    topo.caches.push(cache);
                }
            }
            topo.cpus.push(Cpu {
                id,
                core_cpus,
                package,
                numa,
            });
        }
        topo.caches
            .sort_by(|a, b| (a.level, &a.kind, &a.cpus).cmp(&(b.level, &b.kind, &b.cpus)));
        let net = root.join("sys/class/net");
        let mut names: Vec<String> = fs::read_dir(&net)
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| e.file_name().into_string().ok())
            .collect();
        names.sort();
        for name in names {
            let dev = net.join(&name).join("device");
            let numa = read(&dev.join("numa_node"))
                .and_then(|s| s.parse::<i64>().ok())
                .filter(|&n| n >= 0)
                .map(|n| n as u32);
            topo.nics.push(Nic {
                virtual_: !dev.exists(),
                name,
                numa,
            });
        }
        topo
    }

    /// The CPU `id`, if online.
    pub fn cpu(&self, id: usize) -> Option<&Cpu> {
        self.cpus.iter().find(|c| c.id == id)
    }

    /// Distinct values of `key` over the CPUs, in increasing order.
    fn distinct(&self, key: impl Fn(&Cpu) -> u32) -> Vec<u32> {
        let mut v: Vec<u32> = self.cpus.iter().map(key).collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    /// The packages (sockets).
    pub fn packages(&self) -> Vec<u32> {
        self.distinct(|c| c.package)
    }

    /// The NUMA nodes.
    pub fn numa_nodes(&self) -> Vec<u32> {
        self.distinct(|c| c.numa)
    }

    /// The CPUs of package `p`, or of NUMA node `n`, in increasing order.
    pub fn cpus_where(&self, keep: impl Fn(&Cpu) -> bool) -> Vec<usize> {
        self.cpus.iter().filter(|c| keep(c)).map(|c| c.id).collect()
    }

    /// The human-readable report `oxmpi-info --topology` prints.
    pub fn report(&self) -> String {
        use std::fmt::Write;
        let list = |v: &[usize]| format_cpu_list(v);
        let mut out = String::new();
        let mut cores: Vec<Vec<usize>> = self.cpus.iter().map(|c| c.core_cpus.clone()).collect();
        cores.sort();
        cores.dedup();
        let _ = writeln!(
            out,
            "machine: {} packages, {} NUMA nodes, {} cores, {} CPUs",
            self.packages().len(),
            self.numa_nodes().len(),
            cores.len(),
            self.cpus.len()
        );
        for p in self.packages() {
            let cpus = self.cpus_where(|c| c.package == p);
            let _ = writeln!(out, "  package {p}: cpus {}", list(&cpus));
        }
        for n in self.numa_nodes() {
            let cpus = self.cpus_where(|c| c.numa == n);
            let _ = writeln!(out, "  numa node {n}: cpus {}", list(&cpus));
        }
        for core in &cores {
            let first = self.cpu(core[0]);
            let _ = writeln!(
                out,
                "  core cpus {} (package {}, numa {})",
                list(core),
                first.map_or(0, |c| c.package),
                first.map_or(0, |c| c.numa)
            );
        }
        for c in &self.caches {
            let _ = writeln!(
                out,
                "  cache L{} {} {}: cpus {}",
                c.level,
                c.kind,
                c.size,
                list(&c.cpus)
            );
        }
        for n in &self.nics {
            let where_ = match (n.virtual_, n.numa) {
                (true, _) => "virtual".to_owned(),
                (false, Some(numa)) => format!("numa node {numa}"),
                (false, None) => "numa node unknown".to_owned(),
            };
            let _ = writeln!(out, "  nic {}: {where_}", n.name);
        }
        out
    }
}

/// Formats CPUs (in increasing order) as a kernel CPU list, e.g. `0-3,8`.
pub fn format_cpu_list(cpus: &[usize]) -> String {
    let mut parts = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let mut j = i;
        while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
            j += 1;
        }
        parts.push(if i == j {
            cpus[i].to_string()
        } else {
            format!("{}-{}", cpus[i], cpus[j])
        });
        i = j + 1;
    }
    parts.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(root: &Path, rel: &str, text: &str) {
        let p = root.join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, text).unwrap();
    }

    /// 2 packages x 2 cores x 2 threads, one NUMA node per package, one NIC on node 1.
    fn fabricate() -> std::path::PathBuf {
        let root = std::env::temp_dir().join(format!("oxtopo-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        write(&root, "sys/devices/system/cpu/online", "0-7\n");
        for cpu in 0..8usize {
            let core = cpu % 4; // CPUs c and c+4 are hyperthreads of core c
            let pkg = core / 2;
            let d = format!("sys/devices/system/cpu/cpu{cpu}");
            write(
                &root,
                &format!("{d}/topology/core_cpus_list"),
                &format!("{core},{}", core + 4),
            );
            write(
                &root,
                &format!("{d}/topology/physical_package_id"),
                &pkg.to_string(),
            );
            fs::create_dir_all(root.join(format!("{d}/node{pkg}"))).unwrap();
            write(&root, &format!("{d}/cache/index0/level"), "1");
            write(&root, &format!("{d}/cache/index0/type"), "Data");
            write(&root, &format!("{d}/cache/index0/size"), "32K");
            write(
                &root,
                &format!("{d}/cache/index0/shared_cpu_list"),
                &format!("{core},{}", core + 4),
            );
            write(&root, &format!("{d}/cache/index1/level"), "3");
            write(&root, &format!("{d}/cache/index1/type"), "Unified");
            write(&root, &format!("{d}/cache/index1/size"), "16M");
            let l3 = if pkg == 0 { "0-1,4-5" } else { "2-3,6-7" };
            write(&root, &format!("{d}/cache/index1/shared_cpu_list"), l3);
        }
        write(&root, "sys/class/net/eth0/device/numa_node", "1\n");
        fs::create_dir_all(root.join("sys/class/net/lo")).unwrap();
        root
    }

    #[test]
    fn fabricated_machine_is_read_whole() {
        let root = fabricate();
        let t = Topology::read_from(&root);
        assert_eq!(t.cpus.len(), 8);
        assert_eq!(t.packages(), vec![0, 1]);
        assert_eq!(t.numa_nodes(), vec![0, 1]);
        assert_eq!(t.cpu(6).unwrap().core_cpus, vec![2, 6]);
        assert_eq!(t.cpu(6).unwrap().package, 1);
        assert_eq!(t.cpus_where(|c| c.numa == 1), vec![2, 3, 6, 7]);
        assert_eq!(t.caches.iter().filter(|c| c.level == 1).count(), 4);
        assert_eq!(t.caches.iter().filter(|c| c.level == 3).count(), 2);
        assert_eq!(
            t.nics,
            vec![
                Nic {
                    name: "eth0".into(),
                    numa: Some(1),
                    virtual_: false
                },
                Nic {
                    name: "lo".into(),
                    numa: None,
                    virtual_: true
                },
            ]
        );
        let r = t.report();
        assert!(
            r.starts_with("machine: 2 packages, 2 NUMA nodes, 4 cores, 8 CPUs"),
            "{r}"
        );
        assert!(r.contains("numa node 1: cpus 2-3,6-7"), "{r}");
        assert!(r.contains("cache L3 Unified 16M: cpus 2-3,6-7"), "{r}");
        assert!(r.contains("nic eth0: numa node 1"), "{r}");
        let _ = fs::remove_dir_all(&root);
    }

    #[test]
    fn an_empty_tree_gives_an_empty_machine() {
        let t = Topology::read_from(Path::new("/nonexistent-oxmpi"));
        assert!(t.cpus.is_empty() && t.nics.is_empty());
    }

    #[test]
    fn this_host_has_cpus() {
        let t = Topology::host();
        assert!(!t.cpus.is_empty());
        assert!(t.cpus.iter().all(|c| c.core_cpus.contains(&c.id)));
    }

    /// Cores (distinct sibling sets), packages, NUMA nodes and CPUs.
    fn counts(t: &Topology) -> (usize, usize, usize, Vec<usize>) {
        let mut cores: Vec<&Vec<usize>> = t.cpus.iter().map(|c| &c.core_cpus).collect();
        cores.sort();
        cores.dedup();
        let cpus = t.cpus.iter().map(|c| c.id).collect();
        (cores.len(), t.packages().len(), t.numa_nodes().len(), cpus)
    }

    #[cfg(feature = "hwloc")]
    #[test]
    fn hwloc_and_sysfs_agree_on_this_machine() {
        let hw = Topology::from_hwloc(true).expect("hwloc reads this machine");
        let fs = Topology::host();
        let no_io = Topology::from_hwloc(false).expect("hwloc without I/O");
        assert_eq!((&no_io.cpus, &no_io.caches), (&hw.cpus, &hw.caches));
        assert_eq!(
            counts(&hw),
            counts(&fs),
            "(cores, packages, NUMA nodes, CPUs)"
        );
        for (a, b) in hw.cpus.iter().zip(&fs.cpus) {
            assert_eq!(a, b, "CPU {} as hwloc and sysfs see it", a.id);
        }
        let names = |t: &Topology| t.nics.iter().map(|n| n.name.clone()).collect::<Vec<_>>();
        assert_eq!(names(&hw), names(&fs));
        assert!(hw.caches.iter().all(|c| c.level >= 1 && !c.cpus.is_empty()));
        let (_, backend) = Topology::detect_with("auto", false);
        assert_eq!(backend, Backend::Hwloc);
    }

    #[cfg(not(feature = "hwloc"))]
    #[test]
    fn without_hwloc_detect_falls_back_to_sysfs() {
        assert!(Topology::from_hwloc(false).is_err());
        let (t, backend) = Topology::detect_with("auto", false);
        assert!(matches!(backend, Backend::Sysfs(_)));
        assert_eq!(counts(&t), counts(&Topology::host()));
    }

    #[test]
    fn sysfs_is_chosen_when_asked_for() {
        let (t, backend) = Topology::detect_with("sysfs", true);
        assert_eq!(backend, Backend::Sysfs("OXMPI_TOPOLOGY=sysfs".into()));
        assert_eq!(counts(&t), counts(&Topology::host()));
        assert!(backend.to_string().starts_with("sysfs ("));
    }

    #[test]
    fn cpu_lists_parse_and_format() {
        assert_eq!(
            parse_cpu_list("0-3,8,10-11\n"),
            Some(vec![0, 1, 2, 3, 8, 10, 11])
        );
        assert_eq!(parse_cpu_list("3-1"), None);
        assert_eq!(parse_cpu_list("x"), None);
        assert_eq!(format_cpu_list(&[0, 1, 2, 3, 8, 10, 11]), "0-3,8,10-11");
        assert_eq!(format_cpu_list(&[]), "");
    }
}
