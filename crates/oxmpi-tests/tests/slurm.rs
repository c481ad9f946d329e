//! oxmpi under a real Slurm: a single-machine cluster (`xtask::slurm::TestCluster`: munged,
//! slurmctld and two slurmd nodes `n1`, `n2` on loopback), started once for the whole matrix
//! and stopped afterwards (also when a case fails).
//!
//! The matrix: `srun --mpi=pmi2` with 1 to 4 ranks running the point-to-point and collective
//! test programs (on one node, and on two nodes over TCP on loopback); business cards larger
//! than one Slurm PMI request; a rank killed under `srun -K` ends the step and the epilog
//! leaves no shared memory behind; `MPI_Abort` under srun ends the step with the code as
//! srun's exit status (np 2 and 4 over two nodes), a bare PMI abort ends it and says the
//! code; `sbatch` of a script that calls `oxrun`, which takes its hosts from the allocation
//! and starts its agents through `srun`; Slurm's CPU binding kept under srun.
//!
//! Without root (or where Slurm cannot be installed or started) the test prints one line
//! saying why and passes. `cargo xtask slurm-test` runs it on a cluster of its own.

use std::fs;
use std::process::Output;
use std::time::{Duration, Instant};

use oxmpi_tests::{example, oxrun, run_with_deadline, shm_files, target_dir, text};
use xtask::slurm::TestCluster;

/// Only loopback carries TCP between the two "nodes".
const TCP_IF: &str = "127.0.0.0/8";

fn bin(name: &str) -> String {
    let p = target_dir().join(name);
    assert!(p.exists(), "{} not found", p.display());
    p.display().to_string()
}

/// `srun ARGS` against the cluster, under a deadline.
fn srun(c: &TestCluster, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = c.command("srun");
    cmd.args(["--time=2"]).args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    run_with_deadline(cmd, Duration::from_secs(90))
}

type Case = Result<String, String>;
/// One case of the matrix: its name and what runs it.
type Entry = (&'static str, fn(&TestCluster) -> Case);

fn expect_success(what: &str, out: &Output) -> Result<(String, String), String> {
    let (so, se) = text(out);
    if out.status.success() {
        Ok((so, se))
    } else {
        Err(format!(
            "{what}: {}\nstdout:\n{so}\nstderr:\n{se}",
            out.status
        ))
    }
}

/// Checks that every rank of `np` printed a line containing `marker`.
fn every_rank(so: &str, np: usize, marker: impl Fn(usize) -> String) -> Result<(), String> {
    for r in 0..np {
        if !so.lines().any(|l| l.contains(&marker(r))) {
            return Err(format!("no line {:?} in:\n{so}", marker(r)));
        }
    }
    Ok(())
}

fn programs_under_srun(c: &TestCluster) -> Case {
    let mut done = Vec::new();
    for np in 1..=4usize {
        let n = format!("-n{np}");
        for (prog, marker) in [
            ("p2p_semantics", "semantics OK"),
            ("coll_check", "coll_check passed"),
        ] {
            if prog == "p2p_semantics" && np == 1 {
                continue; // it needs a peer
            }
            // Up to the nodes' CPUs on one node; four ranks also across both nodes.
            let mut layouts: Vec<Vec<&str>> = vec![vec!["-N1", "--overcommit"]];
            if np == 4 {
                layouts.push(vec!["-N2"]);
            }
            for layout in layouts {
                let mut args = vec![n.as_str(), "--mpi=pmi2"];
                args.extend(&layout);
                let p = bin(prog);
                args.push(&p);
                let out = srun(c, &args, &[("OXMPI_TCP_IF", TCP_IF)]);
                let (so, _) = expect_success(&format!("srun {}", args.join(" ")), &out)?;
                every_rank(&so, np, |r| format!("rank {r}"))?;
                if so.lines().filter(|l| l.contains(marker)).count() != np {
                    return Err(format!("{prog} np {np}: expected {np} x {marker:?}:\n{so}"));
                }
                done.push(format!("{prog} np{np} {}", layout[0]));
            }
        }
    }
    Ok(done.join(", "))
}

fn hello_across_nodes(c: &TestCluster) -> Case {
    let hello = example("hello").display().to_string();
    let out = srun(c, &["-n4", "-N2", "--mpi=pmi2", &hello], &[]);
    let (so, _) = expect_success("srun hello", &out)?;
    every_rank(&so, 4, |r| format!("rank {r} of 4 on "))?;
    Ok("4 ranks on n1,n2".into())
}

fn big_cards(c: &TestCluster) -> Case {
    let probe = bin("oxrun-pmi-probe");
    let out = srun(
        c,
        &["-n4", "-N2", "--mpi=pmi2", &probe, "bigcards", "5000"],
        &[],
    );
    let (so, _) = expect_success("srun probe bigcards", &out)?;
    every_rank(&so, 4, |r| format!("probe rank={r} bigcards=ok"))?;
    Ok("5000-byte cards with spaces, 4 ranks".into())
}

/// The Slurm job key (see `oxmpi_pmi::launch::slurm_jobkey`) of the job whose id `so` prints
/// as `job=N`.
fn job_shm_prefix(so: &str) -> Option<String> {
    let id: u64 = so
        .lines()
        .find_map(|l| l.strip_prefix("job="))?
        .trim()
        .parse()
        .ok()?;
    Some(format!("oxmpi.{id:016x}."))
}

fn killed_rank_ends_the_step(c: &TestCluster) -> Case {
    let die = bin("p2p_die");
    let start = Instant::now();
    // Rank 1 kills itself mid-transfer; `-K` (kill on bad exit) makes Slurm end the step.
    let out = srun(
        c,
        &[
            "-K",
            "-n2",
            "--mpi=pmi2",
            "sh",
            "-c",
            "[ \"$SLURM_PROCID\" = 0 ] && echo job=$SLURM_JOB_ID; exec \"$0\"",
            &die,
        ],
        &[],
    );
    let (so, se) = text(&out);
    if out.status.success() {
        return Err(format!(
            "the step succeeded although a rank was killed:\n{se}"
        ));
    }
    let prefix = job_shm_prefix(&so).ok_or_else(|| format!("no job id in {so:?}"))?;
    // The epilog runs once the job has ended.
    let t = Instant::now();
    while shm_files().iter().any(|f| f.starts_with(&prefix)) {
        if t.elapsed() > Duration::from_secs(20) {
            return Err(format!("{prefix}* still in /dev/shm: {:?}", shm_files()));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Ok(format!(
        "step ended ({}) in {:.1} s, no /dev/shm files left",
        out.status,
        start.elapsed().as_secs_f64()
    ))
}

fn abort_ends_the_step(c: &TestCluster) -> Case {
    let mut done = Vec::new();
    let abort = bin("abort_code");
    let probe = bin("oxrun-pmi-probe");
    // MPI_Abort: every rank exits with the code, so srun's status is the code, on one node
    // and across two (TCP), whichever rank aborts.
    for (layout, who) in [
        ("-n2", "1"),
        ("-n4 -N2", "1"),
        ("-n4 -N2", "3"),
        ("-n3", "0"),
    ] {
        let mut args: Vec<&str> = layout.split(' ').collect();
        args.extend(["--mpi=pmi2", abort.as_str(), who, "7"]);
        let start = Instant::now();
        let out = srun(c, &args, &[("OXMPI_TCP_IF", TCP_IF)]);
        let (_, se) = text(&out);
        if out.status.code() != Some(7) {
            return Err(format!(
                "MPI abort {layout} by rank {who}: srun ended with {}, not code 7:\n{se}",
                out.status
            ));
        }
        if !se.contains(&format!("rank {who} aborts the job with code 7")) {
            return Err(format!(
                "MPI abort {layout}: the code is not reported:\n{se}"
            ));
        }
        done.push(format!(
            "MPI abort {layout} by rank {who}: srun exit 7 in {:.1} s",
            start.elapsed().as_secs_f64()
        ));
    }
    // With -K, srun ends the step at the first task that exits with 7; the peers have
    // exited by then (the aborting rank exits last), but a slow one may still be killed: 7
    // or a signal status are both legitimate.
    let out = srun(
        c,
        &["-K", "-n4", "-N2", "--mpi=pmi2", abort.as_str(), "2", "7"],
        &[("OXMPI_TCP_IF", TCP_IF)],
    );
    let (_, se) = text(&out);
    if !matches!(out.status.code(), Some(7 | 137 | 143)) || !se.contains("code 7") {
        return Err(format!("MPI abort -K: {}\n{se}", out.status));
    }
    done.push(format!("MPI abort -K -n4 -N2: {}", out.status));
    // A PMI abort alone: Slurm SIGKILLs the step (137); stderr still names the code.
    let out = srun(
        c,
        &["-n3", "--mpi=pmi2", &probe, "abort", "1", "7", "bye"],
        &[],
    );
    let (_, se) = text(&out);
    if out.status.success() {
        return Err(format!("PMI abort: the step succeeded:\n{se}"));
    }
    if !se.contains("code 7") {
        return Err(format!("PMI abort: the abort code is not reported:\n{se}"));
    }
    done.push(format!(
        "PMI abort: step ended ({}), stderr names code 7",
        out.status
    ));
    Ok(done.join("; "))
}

/// The CPUs this process may run on, from /proc.
fn cpus_allowed_line(text: &str) -> Vec<&str> {
    text.lines()
        .filter(|l| l.contains("Cpus_allowed_list"))
        .collect()
}

fn slurm_binding_is_kept(c: &TestCluster) -> Case {
    if c.cpus < 2 {
        return Ok("skipped: one CPU".into());
    }
    // Slurm binds each task to its own core; oxmpi must not undo it.
    let out = srun(
        c,
        &[
            "-n2",
            "-N1",
            "--cpu-bind=cores",
            "--mpi=pmi2",
            "sh",
            "-c",
            "grep Cpus_allowed_list /proc/self/status",
        ],
        &[],
    );
    let (so, _) = expect_success("srun grep", &out)?;
    let lines = cpus_allowed_line(&so);
    if lines.len() != 2 || lines[0] == lines[1] {
        return Err(format!("Slurm did not bind the tasks apart:\n{so}"));
    }
    Ok(format!("tasks bound by Slurm: {}", lines.join(" / ")))
}

fn oxrun_in_a_step_keeps_slurm_cpuset(c: &TestCluster) -> Case {
    // One CPU from Slurm: oxrun binds both ranks inside it, never outside.
    let show = "echo $PMI_RANK $(grep Cpus_allowed_list /proc/self/status)";
    let out = srun(
        c,
        &[
            "-n1",
            "-c1",
            "--cpu-bind=cores",
            &oxrun().display().to_string(),
            "--timeout",
            "30",
            "--bind-to",
            "core",
            "--report-bindings",
            "-n",
            "2",
            "sh",
            "-c",
            show,
        ],
        &[],
    );
    let (so, se) = expect_success("srun oxrun", &out)?;
    let lists: Vec<&str> = so
        .lines()
        .filter_map(|l| l.split_whitespace().last())
        .collect();
    if lists.len() != 2 || lists[0] != lists[1] || lists[0].contains(['-', ',']) {
        return Err(format!("ranks not kept on Slurm's one CPU:\n{so}\n{se}"));
    }
    let reports: Vec<&str> = se.lines().filter(|l| l.contains("bound to cpu")).collect();
    if reports.len() != 2 {
        return Err(format!("expected two binding reports:\n{se}"));
    }
    Ok(format!(
        "both ranks on cpu {} ({})",
        lists[0],
        reports.join("; ")
    ))
}

/// The last word of the line of `so` starting with `rank R cpus `.
fn cpus_of_rank(so: &str, r: usize) -> Option<&str> {
    so.lines()
        .find_map(|l| l.strip_prefix(&format!("rank {r} cpus ")))
        .map(str::trim)
}

fn oxmpi_keeps_slurms_cpuset(c: &TestCluster) -> Case {
    if c.cpus < 2 {
        return Ok("skipped: one CPU".into());
    }
    // Slurm puts task 0 on CPU 1 and task 1 on CPU 0; after MPI_Init and messages between
    // them, each rank must still be exactly there.
    let prog = bin("affinity_report");
    let out = srun(
        c,
        &["-n2", "-N1", "--cpu-bind=map_cpu:1,0", "--mpi=pmi2", &prog],
        &[],
    );
    let (so, se) = expect_success("srun affinity_report", &out)?;
    let got = (cpus_of_rank(&so, 0), cpus_of_rank(&so, 1));
    if got != (Some("1"), Some("0")) {
        return Err(format!("Slurm's map_cpu:1,0 not kept: {got:?}\n{so}\n{se}"));
    }
    // oxmpi-info under the same binding reports Slurm's cpuset and its topology reader.
    let info = target_dir().join("oxmpi-info");
    let info = info.display().to_string();
    let out = srun(
        c,
        &["-n1", "-c2", "--cpu-bind=map_cpu:1", &info, "--topology"],
        &[],
    );
    let (so, _) = expect_success("srun oxmpi-info --topology", &out)?;
    let backend = so.lines().next().unwrap_or("");
    if !so.contains("this process may run on cpus 1\n")
        || !backend.starts_with("topology backend: ")
    {
        return Err(format!("oxmpi-info under map_cpu:1:\n{so}"));
    }
    Ok(format!(
        "ranks stay on Slurm's cpus 1 / 0; oxmpi-info: {backend}, cpus 1"
    ))
}

fn tcp_reports_receive_cpus(c: &TestCluster) -> Case {
    // One rank per node, each bound by Slurm to CPU 0, talking over TCP on loopback: every
    // connection reports the CPU its packets were processed on and is steered to CPU 0.
    let prog = bin("affinity_report");
    let out = srun(
        c,
        &["-n2", "-N2", "--cpu-bind=map_cpu:0", "--mpi=pmi2", &prog],
        &[("OXMPI_TCP_IF", TCP_IF), ("OXMPI_TCP_LOG_ROUTES", "1")],
    );
    let (so, se) = expect_success("srun affinity_report -N2", &out)?;
    let routes: Vec<&str> = se.lines().filter(|l| l.contains(": TCP rail ")).collect();
    let well_formed = |l: &&str| {
        l.split("packets processed on cpu ")
            .nth(1)
            .and_then(|r| r.split(',').next())
            .is_some_and(|cpu| cpu == "unknown" || cpu.parse::<u32>().is_ok())
            && l.contains("rank cpus 0, nic lo virtual, steered to cpu 0")
    };
    if cpus_of_rank(&so, 0) != Some("0") || cpus_of_rank(&so, 1) != Some("0") {
        return Err(format!("ranks not on Slurm's cpu 0:\n{so}"));
    }
    // Each end reports its connection(s): one, or two if both connected at once.
    let of = |r: u32| {
        routes
            .iter()
            .any(|l| l.contains(&format!("rank {r}: TCP rail ")))
    };
    if !of(0) || !of(1) || !routes.iter().all(well_formed) {
        return Err(format!(
            "expected a receive-CPU report from each end:\n{se}"
        ));
    }
    Ok(routes.join(" | "))
}

fn sbatch_runs_oxrun(c: &TestCluster) -> Case {
    let dir = c.dir.join("batch");
    fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let script = dir.join("job.sh");
    let out_file = dir.join("job.out");
    let (oxrun, probe, hello) = (
        oxrun().display().to_string(),
        bin("oxrun-pmi-probe"),
        example("hello").display().to_string(),
    );
    let (p2p, coll) = (bin("p2p_semantics"), bin("coll_check"));
    let body = format!(
        "#!/bin/sh\n\
         echo nodes=$SLURM_JOB_NODELIST tasks=$SLURM_TASKS_PER_NODE\n\
         export OXMPI_TCP_IF={TCP_IF}\n\
         {oxrun} --timeout 60 -n 4 {probe} hosts || echo FAILED probe\n\
         {oxrun} --timeout 60 -n 4 {hello} || echo FAILED hello\n\
         {oxrun} --timeout 60 -n 4 {p2p} || echo FAILED p2p\n\
         {oxrun} --timeout 60 -n 4 --map-by node {coll} || echo FAILED coll\n"
    );
    fs::write(&script, body).map_err(|e| e.to_string())?;
    let mut cmd = c.command("sbatch");
    cmd.args(["--wait", "-N2", "-n4", "--time=3", "-o"])
        .arg(&out_file)
        .arg(&script);
    let out = run_with_deadline(cmd, Duration::from_secs(150));
    let log = fs::read_to_string(&out_file).unwrap_or_default();
    expect_success("sbatch --wait", &out).map_err(|e| format!("{e}\njob output:\n{log}"))?;
    if log.contains("FAILED") {
        return Err(format!("a job step failed:\n{log}"));
    }
    // The ranks ran on both nodes: two per node, as the allocation's task counts say.
    every_rank(&log, 4, |r| format!("probe rank={r} size=4 nodes=0,0,1,1 "))?;
    every_rank(&log, 4, |r| format!("rank {r} of 4 on "))?;
    every_rank(&log, 4, |r| format!("rank {r}: semantics OK"))?;
    every_rank(&log, 4, |r| format!("rank {r} coll_check passed"))?;
    Ok("oxrun in sbatch -N2 -n4: hosts n1:2,n2:2 from the allocation, agents via srun".into())
}

#[test]
fn slurm_matrix() {
    let cluster = match TestCluster::get() {
        Ok(c) => c,
        Err(why) => {
            eprintln!("slurm: skipping the Slurm tests, cannot run a Slurm cluster here: {why}");
            return;
        }
    };
    let cases: [Entry; 10] = [
        ("srun --mpi=pmi2 programs", programs_under_srun),
        ("srun hello on 2 nodes", hello_across_nodes),
        ("srun cards > 1 request", big_cards),
        ("srun -K killed rank", killed_rank_ends_the_step),
        ("srun abort", abort_ends_the_step),
        ("srun binding kept", slurm_binding_is_kept),
        (
            "srun oxrun in Slurm cpuset",
            oxrun_in_a_step_keeps_slurm_cpuset,
        ),
        ("srun oxmpi in Slurm cpuset", oxmpi_keeps_slurms_cpuset),
        ("srun TCP receive cpus", tcp_reports_receive_cpus),
        ("sbatch oxrun", sbatch_runs_oxrun),
    ];
    let mut failures = Vec::new();
    for (name, case) in cases {
        let start = Instant::now();
        let result = case(&cluster);
        let secs = start.elapsed().as_secs_f64();
        match result {
            Ok(detail) => eprintln!("slurm matrix: {name:<28} ok   {secs:5.1} s  {detail}"),
            Err(e) => {
                eprintln!("slurm matrix: {name:<28} FAIL {secs:5.1} s");
                failures.push(format!("{name}: {e}"));
            }
        }
    }
    if !failures.is_empty() {
        panic!(
            "{} Slurm case(s) failed:\n{}\ncluster logs:\n{}",
            failures.len(),
            failures.join("\n\n"),
            cluster.log_tail()
        );
    }
}
