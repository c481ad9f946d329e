//! Gives libmpi_abi.so the soname every implementation of the standard ABI uses
//! (`libmpi_abi.so.1`), so binaries linked against one run on another, and compiles the
//! `long double` reduction kernels (csrc/longdouble.c) with the platform's C compiler.

fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libmpi_abi.so.1");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=csrc/longdouble.c");
    cc::Build::new()
        .file("csrc/longdouble.c")
        .flag_if_supported("-std=c11")
        .compile("oxmpi_longdouble");
}
