//! `oxmpi-info` lists every tunable and the protocol table, and reports bad settings.

use std::process::Command;

#[test]
fn lists_every_tunable_and_the_protocols() {
    let out = Command::new(env!("CARGO_BIN_EXE_oxmpi-info"))
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    for t in oxmpi::config::TUNABLES
        .iter()
        .chain(oxmpi::coll::select::COLL_TUNABLES)
    {
        assert!(text.contains(t.name), "{} missing", t.name);
        assert!(text.contains(t.help), "help of {} missing", t.name);
    }
    assert!(text.contains("process_vm_readv"));
    assert!(text.contains("Shared memory per rank"));
    for a in oxmpi::coll::select::algorithm_table() {
        assert!(text.contains(a.algorithm), "{} missing", a.algorithm);
    }
}

#[test]
fn shows_overrides_and_rejects_bad_values() {
    let out = Command::new(env!("CARGO_BIN_EXE_oxmpi-info"))
        .env("OXMPI_SINGLE_COPY", "0")
        .env("OXMPI_EAGER_LIMIT", "2k")
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("2k (default 131072)"), "{text}");
    assert!(text.contains("single copy off"), "{text}");
    let out = Command::new(env!("CARGO_BIN_EXE_oxmpi-info"))
        .env("OXMPI_SHM_POOL_BLOCKS", "many")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("OXMPI_SHM_POOL_BLOCKS"));
}

#[test]
fn topology_lists_the_machine() {
    let out = Command::new(env!("CARGO_BIN_EXE_oxmpi-info"))
        .arg("--topology")
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let topo = oxmpi_pmi::topology::Topology::host();
    let backend = if cfg!(feature = "hwloc") {
        "topology backend: hwloc\n"
    } else {
        "topology backend: sysfs (built without the hwloc feature)\n"
    };
    let machine = text
        .strip_prefix(backend)
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        machine.starts_with("machine: ") && text.contains(&format!(", {} CPUs", topo.cpus.len())),
        "{text}"
    );
    // The sysfs reader, asked for by name, sees the same machine line.
    let sysfs = Command::new(env!("CARGO_BIN_EXE_oxmpi-info"))
        .arg("--topology")
        .env("OXMPI_TOPOLOGY", "sysfs")
        .output()
        .unwrap();
    let sysfs = String::from_utf8(sysfs.stdout).unwrap();
    let rest = sysfs
        .strip_prefix("topology backend: sysfs (OXMPI_TOPOLOGY=sysfs)\n")
        .unwrap_or_else(|| panic!("{sysfs}"));
    assert_eq!(rest.lines().next(), machine.lines().next());
    for n in topo.numa_nodes() {
        assert!(text.contains(&format!("numa node {n}: cpus ")), "{text}");
    }
    for nic in &topo.nics {
        assert!(text.contains(&format!("nic {}: ", nic.name)), "{text}");
    }
    assert!(text.contains("this process may run on cpus "), "{text}");
    let out = Command::new(env!("CARGO_BIN_EXE_oxmpi-info"))
        .arg("--bogus")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}
