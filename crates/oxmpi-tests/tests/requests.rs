//! The request layer through oxrun: handle-layer ids and the typed API's request
//! regressions (see the `requests` program), with more ranks than cores too.

use oxmpi_tests::{oxrun_job, text};

fn run_ok(np: usize, env: &[(&str, &str)]) -> String {
    let prog = env!("CARGO_BIN_EXE_requests");
    let out = oxrun_job(np, std::path::Path::new(prog), &[], env);
    let (so, se) = text(&out);
    assert!(out.status.success(), "np {np} {env:?}:\n{so}\n{se}");
    so
}

#[test]
fn handle_ids_and_typed_request_regressions_np1_to_3() {
    for np in [1, 2, 3] {
        let so = run_ok(np, &[]);
        assert_eq!(so.matches("requests OK").count(), np, "{so}");
    }
    let so = run_ok(2, &[("OXMPI_SINGLE_COPY", "0")]);
    assert_eq!(so.matches("requests OK").count(), 2, "{so}");
}
