//! `bool` and `char` through every receiving form the typed API cannot give them (the
//! `*_checked` forms): the `api_checked` program at np 2 and 3, one mode per test.

use oxmpi_tests::{oxrun_job, text};

fn api_checked(mode: &str) {
    let prog = env!("CARGO_BIN_EXE_api_checked");
    for np in [2, 3] {
        let out = oxrun_job(np, std::path::Path::new(prog), &[mode], &[]);
        let (so, se) = text(&out);
        assert!(out.status.success(), "{mode} np {np}:\n{so}\n{se}");
        let want = format!("api_checked {mode} OK");
        assert_eq!(so.matches(&want).count(), np, "{mode} np {np}:\n{so}\n{se}");
    }
}

#[test]
fn in_place_v_w_reduce_scatter_and_exscan_forms_check_bool_and_char() {
    api_checked("coll");
}

#[test]
fn neighbourhood_collectives_check_bool_and_char() {
    api_checked("neighbor");
}

#[test]
fn intercommunicator_collectives_check_bool_and_char() {
    api_checked("inter");
}

#[test]
fn sendrecv_and_matched_probe_receives_check_bool_and_char() {
    api_checked("p2p");
}

#[test]
fn process_handles_receive_bool_and_char_checked() {
    api_checked("process");
}
