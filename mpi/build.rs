//! Gives the C library the MPI-5 ABI's soname, so that programs linked
//! against `libmpi_abi.so` record `libmpi_abi.so.1` and find any
//! implementation's ABI library under that name; and compiles the C
//! helpers for what Rust has no type for (`long double` reductions).
fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libmpi_abi.so.1");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=csrc/longdouble.c");
    cc::Build::new()
        .file("csrc/longdouble.c")
        .warnings(true)
        .compile("ferry_mpi_longdouble");
}
