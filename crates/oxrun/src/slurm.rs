//! Running inside a Slurm allocation: hosts and slots from Slurm's environment, agents through
//! `srun`.
//!
//! When `SLURM_JOB_ID` is set outside any step (a batch script or an `salloc` shell: no
//! `SLURM_STEP_ID`) and neither `--host` nor `--hostfile` is given, the job's hosts
//! are the allocation's nodes (`SLURM_JOB_NODELIST`, Slurm's compressed form such as
//! `node[01-03,07],gpu5`) and each node's slots its task count (`SLURM_TASKS_PER_NODE`, or
//! `SLURM_JOB_CPUS_PER_NODE` when the job gave no task count; both as `2(x3),1`). Agents then
//! start through [`SRUN_LAUNCHER`]: one `srun` step of one task on that node, which Slurm
//! tracks, signals and cleans up like any step.

use crate::hosts::Host;

/// The launch command inside an allocation: one task on `{host}`, sharing the allocation's
/// CPUs with other steps (`--overlap`), unbound (the agent binds its ranks itself, inside the
/// cpuset Slurm gives the step), no PMI plugin (oxrun serves PMI), ended when it fails.
pub const SRUN_LAUNCHER: &str = "srun --overlap --nodes=1 --ntasks=1 --nodelist={host} \
    --cpu-bind=none --mpi=none --kill-on-bad-exit=1 --quiet";

/// The allocation's hosts with their slots, if `lookup` shows a Slurm job with a node list.
pub fn allocation(lookup: &dyn Fn(&str) -> Option<String>) -> Result<Option<Vec<Host>>, String> {
    // Inside a step (`srun oxrun ...`) the step's own node and cpuset are the job's: no
    // allocation-wide placement, no nested srun.
    let in_job = lookup("SLURM_JOB_ID").is_some_and(|v| !v.is_empty());
    if !in_job || lookup("SLURM_STEP_ID").is_some() {
        return Ok(None);
    }
    let Some(list) = lookup("SLURM_JOB_NODELIST").or_else(|| lookup("SLURM_NODELIST")) else {
        return Ok(None);
    };
    let nodes = expand_nodelist(&list).map_err(|e| format!("SLURM_JOB_NODELIST={list:?}: {e}"))?;
    let (var, counts) = match lookup("SLURM_TASKS_PER_NODE") {
        Some(c) => ("SLURM_TASKS_PER_NODE", c),
        None => (
            "SLURM_JOB_CPUS_PER_NODE",
            lookup("SLURM_JOB_CPUS_PER_NODE").unwrap_or_default(),
        ),
    };
    let slots = if counts.is_empty() {
        vec![1; nodes.len()]
    } else {
        expand_counts(&counts).map_err(|e| format!("{var}={counts:?}: {e}"))?
    };
    if slots.len() != nodes.len() {
        return Err(format!(
            "{var}={counts:?} gives {} counts for the {} nodes of SLURM_JOB_NODELIST={list:?}",
            slots.len(),
            nodes.len()
        ));
    }
    Ok(Some(
        nodes
            .into_iter()
            .zip(slots)
            .map(|(name, slots)| Host { name, slots })
            .collect(),
    ))
}

/// Expands a Slurm host list: comma-separated items, each a name with at most one bracketed
/// range list (`n[1-3,7]`, zero padding kept: `n[01-02]` is `n01,n02`).
pub fn expand_nodelist(text: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut rest = text.trim();
    while !rest.is_empty() {
        // An item ends at the first comma outside brackets.
        let mut depth = 0;
        let end = rest
            .char_indices()
            .find(|&(_, c)| {
                match c {
                    '[' => depth += 1,
                    ']' => depth -= 1,
                    _ => {}
                }
                c == ',' && depth == 0
            })
            .map_or(rest.len(), |(i, _)| i);
        expand_item(&rest[..end], &mut out)?;
        rest = rest.get(end + 1..).unwrap_or("");
    }
    if out.is_empty() {
        return Err("no nodes".into());
    }
    Ok(out)
}

fn expand_item(item: &str, out: &mut Vec<String>) -> Result<(), String> {
    let Some(open) = item.find('[') else {
        if item.is_empty() || item.contains(']') {
            return Err(format!("bad node name {item:?}"));
        }
        out.push(item.to_owned());
        return Ok(());
    };
    let close = item
        .find(']')
        .filter(|&c| c > open)
        .ok_or_else(|| format!("unbalanced brackets in {item:?}"))?;
    let (prefix, ranges, suffix) = (&item[..open], &item[open + 1..close], &item[close + 1..]);
    if suffix.contains('[') || prefix.is_empty() && suffix.is_empty() && ranges.is_empty() {
        return Err(format!(
            "{item:?}: only one bracketed range per name is supported"
        ));
    }
    for range in ranges.split(',') {
        let (a, b) = range.split_once('-').unwrap_or((range, range));
        let width = a.len();
        let (lo, hi): (u64, u64) = match (a.parse(), b.parse()) {
            (Ok(lo), Ok(hi)) if lo <= hi && hi - lo < 1 << 16 => (lo, hi),
            _ => return Err(format!("bad range {range:?} in {item:?}")),
        };
        for n in lo..=hi {
            out.push(format!("{prefix}{n:0width$}{suffix}"));
        }
    }
    Ok(())
}

/// Expands Slurm's per-node counts: `2(x3),1` is `2,2,2,1`.
pub fn expand_counts(text: &str) -> Result<Vec<u32>, String> {
    let mut out = Vec::new();
    for item in text.trim().split(',') {
        let (n, times) = match item.split_once("(x") {
            Some((n, t)) => (
                n,
                t.strip_suffix(')')
                    .and_then(|t| t.parse::<usize>().ok())
                    .ok_or_else(|| format!("bad repeat in {item:?}"))?,
            ),
            None => (item, 1),
        };
        let n: u32 = n
            .parse()
            .ok()
            .filter(|&n| n > 0)
            .ok_or_else(|| format!("bad count {item:?}"))?;
        if times > 1 << 20 {
            return Err(format!("repeat too large in {item:?}"));
        }
        out.extend(std::iter::repeat(n).take(times));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn node_lists_expand() {
        assert_eq!(expand_nodelist("n[1-2]").unwrap(), vec!["n1", "n2"]);
        assert_eq!(
            expand_nodelist("node[01-03,07],gpu5").unwrap(),
            vec!["node01", "node02", "node03", "node07", "gpu5"]
        );
        assert_eq!(expand_nodelist("a,b").unwrap(), vec!["a", "b"]);
        assert_eq!(
            expand_nodelist("r[8-10]x").unwrap(),
            vec!["r8x", "r9x", "r10x"]
        );
        for bad in ["", "n[2-1]", "n[1-2", "n]", "n[a]", "n[1]-[2]"] {
            assert!(expand_nodelist(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn counts_expand() {
        assert_eq!(expand_counts("2(x3),1").unwrap(), vec![2, 2, 2, 1]);
        assert_eq!(expand_counts("4").unwrap(), vec![4]);
        for bad in ["", "0", "2(x", "2(xa)", "x"] {
            assert!(expand_counts(bad).is_err(), "{bad:?}");
        }
    }

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let m: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| m.get(k).cloned()
    }

    #[test]
    fn allocation_comes_from_the_environment() {
        assert_eq!(allocation(&env(&[])).unwrap(), None);
        let hosts = allocation(&env(&[
            ("SLURM_JOB_ID", "7"),
            ("SLURM_JOB_NODELIST", "n[1-3]"),
            ("SLURM_TASKS_PER_NODE", "2(x2),1"),
        ]))
        .unwrap()
        .unwrap();
        let got: Vec<(&str, u32)> = hosts.iter().map(|h| (h.name.as_str(), h.slots)).collect();
        assert_eq!(got, vec![("n1", 2), ("n2", 2), ("n3", 1)]);
        // Without a task count, the CPUs per node.
        let hosts = allocation(&env(&[
            ("SLURM_JOB_ID", "7"),
            ("SLURM_JOB_NODELIST", "n1"),
            ("SLURM_JOB_CPUS_PER_NODE", "8"),
        ]))
        .unwrap()
        .unwrap();
        assert_eq!(hosts[0].slots, 8);
        // Inside a step, oxrun runs on the step's node only.
        let in_step = allocation(&env(&[
            ("SLURM_JOB_ID", "7"),
            ("SLURM_STEP_ID", "0"),
            ("SLURM_JOB_NODELIST", "n[1-3]"),
        ]));
        assert_eq!(in_step.unwrap(), None);
        let err = allocation(&env(&[
            ("SLURM_JOB_ID", "7"),
            ("SLURM_JOB_NODELIST", "n[1-3]"),
            ("SLURM_TASKS_PER_NODE", "2"),
        ]))
        .unwrap_err();
        assert!(err.contains("3 nodes"), "{err}");
    }
}
