//! Output forwarding and stdin: tagging, environment passing, stdin to rank 0 only, and line
//! integrity under heavy concurrent output.

mod common;

use common::{probe, run, run_with};
use std::collections::HashMap;

#[test]
fn tag_output_prefixes_every_line_with_its_rank() {
    let r = run(&[
        "--timeout",
        "20",
        "--tag-output",
        "-n",
        "3",
        "sh",
        "-c",
        "echo out$PMI_RANK; echo err$PMI_RANK >&2; echo more$PMI_RANK",
    ]);
    assert_eq!(r.code, Some(0), "{r:?}");
    let mut out = r.out_lines();
    out.sort_unstable();
    assert_eq!(
        out,
        vec![
            "[0] more0",
            "[0] out0",
            "[1] more1",
            "[1] out1",
            "[2] more2",
            "[2] out2"
        ]
    );
    let mut err: Vec<&str> = r.stderr.lines().collect();
    err.sort_unstable();
    assert_eq!(err, vec!["[0] err0", "[1] err1", "[2] err2"]);
}

#[test]
fn x_passes_environment_variables() {
    let r = run_with(
        &[
            "--timeout",
            "20",
            "-x",
            "OXRUN_T_A=set here",
            "-x",
            "OXRUN_T_B",
            "-x",
            "OXRUN_T_UNSET",
            "-n",
            "2",
            "sh",
            "-c",
            "echo \"$OXRUN_T_A|$OXRUN_T_B|${OXRUN_T_UNSET-unset}\"",
        ],
        None,
        &[("OXRUN_T_B", "from oxrun")],
    );
    assert_eq!(r.code, Some(0), "{r:?}");
    assert_eq!(r.out_lines(), vec!["set here|from oxrun|unset"; 2]);
}

#[test]
fn ranks_see_the_launcher_variables() {
    let r = run(&[
        "--timeout",
        "20",
        "-n",
        "2",
        "sh",
        "-c",
        "echo $PMI_RANK $PMI_SIZE ${#OXMPI_SECRET} ${#OXMPI_JOBKEY} $PMI_FD",
    ]);
    assert_eq!(r.code, Some(0), "{r:?}");
    let lines = r.sorted_out_lines();
    assert_eq!(lines.len(), 2);
    for (i, l) in lines.iter().enumerate() {
        let f: Vec<&str> = l.split(' ').collect();
        assert_eq!(&f[..4], &[i.to_string().as_str(), "2", "64", "16"], "{l}");
        assert!(f[4].parse::<i32>().unwrap() > 2, "{l}");
    }
}

#[test]
fn stdin_goes_to_rank_0_only() {
    let r = run_with(
        &["--timeout", "20", "-n", "2", "sh", "-c", "cat"],
        Some(b"hi\n"),
        &[],
    );
    assert_eq!(r.code, Some(0), "{r:?}");
    assert_eq!(r.stdout, "hi\n");
}

#[test]
fn large_stdin_is_forwarded_completely() {
    let data: Vec<u8> = (0..300_000u32)
        .flat_map(|i| format!("{i}\n").into_bytes())
        .collect();
    let r = run_with(
        &["--timeout", "20", "-n", "3", "sh", "-c", "wc -c"],
        Some(&data),
        &[],
    );
    assert_eq!(r.code, Some(0), "{r:?}");
    let mut counts: Vec<usize> = r
        .out_lines()
        .iter()
        .map(|l| l.trim().parse().unwrap())
        .collect();
    counts.sort_unstable();
    assert_eq!(counts, vec![0, 0, data.len()]);
}

#[test]
fn a_final_unterminated_line_is_kept() {
    let r = run(&["--timeout", "20", "-n", "1", "printf", "no newline"]);
    assert_eq!(r.code, Some(0), "{r:?}");
    assert_eq!(r.stdout, "no newline");
    // With several ranks, each fragment still ends up on a line of its own.
    let r = run(&[
        "--timeout",
        "20",
        "-n",
        "3",
        "sh",
        "-c",
        "printf r$PMI_RANK",
    ]);
    assert_eq!(r.code, Some(0), "{r:?}");
    let lines = r.sorted_out_lines();
    assert_eq!(lines, vec!["r0", "r1", "r2"]);
}

/// Checks that every line of `text` is one whole line written by some rank, and returns how
/// many lines each rank contributed (in order, each index exactly once).
fn check_lines(text: &str, payload: &str, parity: usize) -> HashMap<u32, usize> {
    let mut next: HashMap<u32, usize> = HashMap::new();
    for line in text.lines() {
        let mut f = line.splitn(4, ' ');
        let (r, i, p, end) = (f.next(), f.next(), f.next(), f.next());
        let rank: u32 = r
            .and_then(|r| r.strip_prefix('r'))
            .and_then(|r| r.parse().ok())
            .unwrap_or_else(|| panic!("torn line {line:.80}"));
        let idx: usize = i
            .and_then(|i| i.strip_prefix('i'))
            .and_then(|i| i.parse().ok())
            .unwrap_or_else(|| panic!("torn line {line:.80}"));
        assert_eq!(p, Some(payload), "torn payload in line r{rank} i{idx}");
        assert_eq!(end, Some("end"), "torn end in line r{rank} i{idx}");
        let expect = next.entry(rank).or_insert(parity);
        assert_eq!(idx, *expect, "rank {rank}: lines out of order or missing");
        *expect += 2;
    }
    next
}

#[test]
fn concurrent_output_is_never_torn_or_interleaved() {
    let (lines, len) = (2000, 5000);
    let r = run(&[
        "--timeout",
        "25",
        "-n",
        "4",
        probe(),
        "spew",
        &lines.to_string(),
        &len.to_string(),
    ]);
    assert_eq!(r.code, Some(0), "{:?}", r.oxrun_lines());
    let payload: String = (0..len).map(|i| (b'a' + (i % 26) as u8) as char).collect();
    for (text, parity) in [(&r.stdout, 0), (&r.stderr, 1)] {
        let next = check_lines(text, &payload, parity);
        assert_eq!(next.len(), 4, "every rank wrote");
        assert!(next.values().all(|&n| n == lines + parity), "{next:?}");
    }
}

#[test]
fn concurrent_tagged_output_is_never_torn() {
    let r = run(&[
        "--timeout",
        "25",
        "--tag-output",
        "-n",
        "4",
        probe(),
        "spew",
        "500",
        "300",
    ]);
    assert_eq!(r.code, Some(0), "{:?}", r.oxrun_lines());
    for line in r.stdout.lines().chain(r.stderr.lines()) {
        let (tag, rest) = line
            .split_once("] ")
            .unwrap_or_else(|| panic!("untagged {line:.80}"));
        let rank = tag.strip_prefix('[').unwrap();
        assert!(rest.starts_with(&format!("r{rank} i")), "{line:.80}");
        assert!(rest.ends_with(" end"), "{line:.80}");
    }
    assert_eq!(r.stdout.lines().count() + r.stderr.lines().count(), 2000);
}

#[test]
fn a_closed_stdout_ends_the_job_like_a_pipeline() {
    // `yes` never stops on its own; when nobody reads oxrun's output any more, the ranks get
    // SIGPIPE, as they would in a shell pipeline.
    let script = format!(
        "{} --timeout 20 -n 2 yes | head -n 3; echo \"status ${{PIPESTATUS[0]}}\" >&2",
        common::oxrun()
    );
    let r = common::run_shell("bash", &script);
    assert_eq!(r.stdout, "y\ny\ny\n", "{r:?}");
    assert!(r.stderr.contains("SIGPIPE"), "{r:?}");
    assert!(r.stderr.contains("status 141"), "{r:?}");
}
