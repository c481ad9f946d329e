//! The Rust API's second round through oxrun: the fixes (receive_vec under `Multiple`, a
//! dropped matched message, a panic with an operation in flight, the cancel guard), requests
//! as futures under tokio (the async examples, also on spawned tasks), and collectives over
//! single values and `bool`/`char` (`api_coll`), also in nonblocking and persistent forms.

use oxmpi_tests::{example, oxrun_job, text};

/// Runs the `api_fixes` program: (exit code, stdout, stderr).
fn fixes(np: usize, mode: &str) -> (Option<i32>, String, String) {
    fixes_env(np, mode, &[])
}

fn fixes_env(np: usize, mode: &str, env: &[(&str, &str)]) -> (Option<i32>, String, String) {
    let prog = env!("CARGO_BIN_EXE_api_fixes");
    let out = oxrun_job(np, std::path::Path::new(prog), &[mode], env);
    let (so, se) = text(&out);
    (out.status.code(), so, se)
}

/// oxrun's exit status when its `--timeout` ends the job.
const TIMED_OUT: Option<i32> = Some(124);

fn fixes_ok(np: usize, mode: &str) {
    let (code, so, se) = fixes(np, mode);
    assert!(code == Some(0), "{mode} np {np}:\n{so}\n{se}");
    let want = format!("api_fixes {mode} OK");
    assert_eq!(so.matches(&want).count(), np, "{mode} np {np}:\n{so}\n{se}");
}

#[test]
fn receive_vec_under_multiple_threads_never_tears_a_message() {
    fixes_ok(2, "receive_vec");
    fixes_ok(3, "receive_vec");
}

#[test]
fn a_dropped_matched_message_is_discarded_and_its_sender_completes() {
    fixes_ok(2, "message_drop");
}

#[test]
fn a_cancel_guard_cancels_a_receive_that_never_matches() {
    fixes_ok(2, "cancel_guard");
    fixes_ok(3, "cancel_guard");
}

#[test]
fn a_panic_with_a_pending_receive_ends_the_job() {
    // The receive is cancelled, the panic goes on, and the dead rank ends the job (rank 0
    // waits in a receive that never matches, so only that ends it).
    let (code, so, se) = fixes(2, "panic_recv");
    assert!(
        code != Some(0) && code != TIMED_OUT,
        "exit {code:?}:\n{so}\n{se}"
    );
    assert!(se.contains("rank 1 gives up"), "{so}\n{se}");
}

#[test]
fn a_panic_with_a_send_that_cannot_complete_aborts_the_job() {
    let (code, so, se) = fixes(2, "panic_send");
    assert!(
        code != Some(0) && code != TIMED_OUT,
        "exit {code:?}:\n{so}\n{se}"
    );
    assert!(
        se.contains("panicked with an operation still in flight"),
        "{so}\n{se}"
    );
}

#[test]
fn an_unfinished_future_is_woken_by_the_progress_thread() {
    for spin in ["1", "1000"] {
        let (code, so, se) = fixes_env(2, "future_wake", &[("OXMPI_ASYNC_SPIN", spin)]);
        assert!(code == Some(0), "spin {spin}:\n{so}\n{se}");
        assert_eq!(
            so.matches("api_fixes future_wake OK").count(),
            2,
            "{so}\n{se}"
        );
    }
}

#[test]
fn a_future_dropped_before_its_message_cancels_the_receive() {
    fixes_ok(2, "future_drop");
    fixes_ok(3, "future_drop");
}

fn async_ring(np: usize, env: &[(&str, &str)]) {
    let out = oxrun_job(np, &example("async_ring"), &[], env);
    let (so, se) = text(&out);
    assert!(out.status.success(), "np {np} {env:?}:\n{so}\n{se}");
    assert_eq!(so.matches("async_ring OK").count(), np, "{so}\n{se}");
}

#[test]
fn awaited_requests_under_tokio_multi_thread_np2_np3() {
    for np in [2, 3] {
        async_ring(np, &[]);
        // Every unfinished poll handed to the progress thread.
        async_ring(np, &[("OXMPI_ASYNC_SPIN", "1")]);
    }
}

#[test]
fn requests_awaited_on_spawned_tokio_tasks_np2_np3() {
    for np in [2, 3] {
        for spin in ["1", "1000"] {
            let out = oxrun_job(
                np,
                &example("async_spawn"),
                &[],
                &[("OXMPI_ASYNC_SPIN", spin)],
            );
            let (so, se) = text(&out);
            assert!(out.status.success(), "np {np} spin {spin}:\n{so}\n{se}");
            assert_eq!(so.matches("async_spawn OK").count(), np, "{so}\n{se}");
        }
    }
}

/// Runs `api_coll MODE` at np 2 and 3; every rank must print `api_coll MODE OK`.
fn api_coll(mode: &str) {
    let prog = env!("CARGO_BIN_EXE_api_coll");
    for np in [2, 3] {
        let out = oxrun_job(np, std::path::Path::new(prog), &[mode], &[]);
        let (so, se) = text(&out);
        assert!(out.status.success(), "{mode} np {np}:\n{so}\n{se}");
        let want = format!("api_coll {mode} OK");
        assert_eq!(so.matches(&want).count(), np, "{mode} np {np}:\n{so}\n{se}");
    }
}

#[test]
fn collectives_take_single_values_arrays_and_vectors() {
    api_coll("values");
}

#[test]
fn bool_and_char_travel_in_collectives_and_reduce_with_their_ops() {
    api_coll("checked");
}

#[test]
fn invalid_bool_or_char_received_is_an_error_and_wrong_ops_are_refused() {
    api_coll("invalid");
}

#[test]
fn bool_and_char_in_immediate_persistent_and_nonblocking_collective_forms() {
    api_coll("nonblocking");
}

#[test]
fn a_request_cannot_become_send_below_serialized() {
    api_coll("single");
}

#[test]
fn awaited_latency_benchmark_reports_both_paths() {
    let out = oxrun_job(2, &example("async_latency"), &["200", "1"], &[]);
    let (so, se) = text(&out);
    assert!(out.status.success(), "{so}\n{se}");
    assert!(
        so.contains("blocking") && so.contains("awaited") && so.contains("ratio"),
        "{so}\n{se}"
    );
}

/// The examples, one per topic, each checking its own results and printing `NAME OK` per
/// rank.
const EXAMPLES: &[&str] = &[
    "send_receive",
    "immediate",
    "probes",
    "collectives",
    "user_ops",
    "structs_views",
    "cartesian",
    "groups",
    "attributes",
    "buffered_ready",
    "async_ring",
    "async_spawn",
];

#[test]
fn every_topic_example_passes_its_checks_np2_np3() {
    for name in EXAMPLES {
        for np in [2, 3] {
            let out = oxrun_job(np, &example(name), &[], &[]);
            let (so, se) = text(&out);
            assert!(out.status.success(), "{name} np {np}:\n{so}\n{se}");
            let want = format!("{name} OK");
            assert_eq!(so.matches(&want).count(), np, "{name} np {np}:\n{so}\n{se}");
        }
    }
}
