//! The machine through hwloc (the `hwlocality` crate over the system's libhwloc).
//!
//! Gives the same [`Topology`] the sysfs reader gives, so the launcher and `oxmpi-info` do not
//! care which one ran. hwloc sees what sysfs does not spell out the same way on every kernel
//! (cache sharing, NUMA nodes of devices behind bridges), and applies the same rules on every
//! machine it supports. Network interfaces come from sysfs (hwloc lists only devices on a bus,
//! not loopback, bridges or veths); hwloc's view of a device's NUMA node wins where it has one.

use hwlocality::object::attributes::ObjectAttributes;
use hwlocality::object::types::{CacheType, OSDeviceType, ObjectType};
use hwlocality::object::TopologyObject;
use hwlocality::topology::builder::{BuildFlags, TypeFilter};
use hwlocality::Topology as Hw;

use super::{Cache, Cpu, Topology};

/// The CPUs of `obj`'s cpuset, in increasing order.
fn cpus_of(obj: &TopologyObject) -> Vec<usize> {
    obj.cpuset()
        .map(|s| s.iter_set().map(usize::from).collect())
        .unwrap_or_default()
}

/// The first NUMA node of `obj`'s nodeset.
fn first_node(obj: &TopologyObject) -> Option<u32> {
    let node = obj.nodeset()?.first_set()?;
    u32::try_from(usize::from(node)).ok()
}

/// The nearest ancestor of `obj` of type `ty`.
fn ancestor(obj: &TopologyObject, ty: ObjectType) -> Option<&TopologyObject> {
    obj.ancestors().find(|a| a.object_type() == ty)
}

/// Reads this machine through hwloc: every CPU (also those outside this process's cgroup, as
/// sysfs lists them), caches, and with `io` the NUMA node of each network device hwloc finds
/// (I/O discovery walks the PCI tree: tens of milliseconds, so the launcher goes without).
pub(super) fn read(sysfs_nics: Vec<super::Nic>, io: bool) -> Result<Topology, String> {
    let io_filter = if io {
        TypeFilter::KeepImportant
    } else {
        TypeFilter::KeepNone
    };
    let hw = Hw::builder()
        .with_flags(BuildFlags::INCLUDE_DISALLOWED)
        .map_err(|e| format!("hwloc flags: {e}"))?
        .with_io_type_filter(io_filter)
        .map_err(|e| format!("hwloc I/O filter: {e}"))?
        .with_type_filter(ObjectType::L1ICache, TypeFilter::KeepAll)
        .map_err(|e| format!("hwloc cache filter: {e}"))?
        .build()
        .map_err(|e| format!("hwloc topology: {e}"))?;
    let mut topo = Topology::default();
    for pu in hw.objects_with_type(ObjectType::PU) {
        let Some(id) = pu.os_index() else { continue };
        let core_cpus = ancestor(pu, ObjectType::Core)
            .map(cpus_of)
            .filter(|c| c.contains(&id))
            .unwrap_or_else(|| vec![id]);
        let package = ancestor(pu, ObjectType::Package)
            .and_then(TopologyObject::os_index)
            .and_then(|p| u32::try_from(p).ok())
            .unwrap_or(0);
        topo.cpus.push(Cpu {
            id,
            core_cpus,
            package,
            numa: first_node(pu).unwrap_or(0),
        });
    }
    topo.cpus.sort_by_key(|c| c.id);
    for ty in [
        ObjectType::L1Cache,
        ObjectType::L1ICache,
        ObjectType::L2Cache,
        ObjectType::L2ICache,
        ObjectType::L3Cache,
        ObjectType::L3ICache,
        ObjectType::L4Cache,
        ObjectType::L5Cache,
    ] {
        for obj in hw.objects_with_type(ty) {
            let Some(ObjectAttributes::Cache(attr)) = obj.attributes() else {
                continue;
            };
            let kind = match attr.cache_type() {
                CacheType::Data => "Data",
                CacheType::Instruction => "Instruction",
                _ => "Unified",
            };
            // The kernel's notation, so both backends print alike.
            let size = attr
                .size()
                .map_or_else(String::new, |s| format!("{}K", s.get() / 1024));
            topo.caches.push(Cache {
                level: u32::try_from(attr.depth()).unwrap_or(0),
                kind: kind.to_owned(),
                size,
                cpus: cpus_of(obj),
            });
        }
    }
    topo.caches
        .sort_by(|a, b| (a.level, &a.kind, &a.cpus).cmp(&(b.level, &b.kind, &b.cpus)));
    topo.nics = sysfs_nics;
    for dev in hw.objects_with_type(ObjectType::OSDevice) {
        let Some(ObjectAttributes::OSDevice(attr)) = dev.attributes() else {
            continue;
        };
        if attr.device_type() != OSDeviceType::Network {
            continue;
        }
        let Some(name) = dev.name().and_then(|n| n.to_str().ok()) else {
            continue;
        };
        // A device whose first CPU-side ancestor is the whole machine has no NUMA locality.
        let numa = dev
            .first_non_io_ancestor()
            .filter(|a| a.object_type() != ObjectType::Machine)
            .and_then(first_node);
        if let Some(nic) = topo.nics.iter_mut().find(|n| n.name == name) {
            if numa.is_some() {
                nic.numa = numa;
            }
        }
    }
    if topo.cpus.is_empty() {
        return Err("hwloc found no CPU".into());
    }
    Ok(topo)
}
