//! Code shared by several test suites (each includes this module with `mod common;`).

pub mod netns;
