//! Gives libmpi_abi.so the soname every implementation of the standard ABI uses
//! (`libmpi_abi.so.1`), so binaries linked against one run on another.

fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libmpi_abi.so.1");
    println!("cargo:rerun-if-changed=build.rs");
}
