//! Generates libfabric bindings (with a C shim for the `static inline`
//! data-path calls) against the system's libfabric >= 1.17.

use std::env;
use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-changed=wrapper.h");
    println!("cargo:rerun-if-changed=build.rs");
    let lib = match pkg_config::Config::new()
        .atleast_version("1.17")
        .probe("libfabric")
    {
        Ok(lib) => lib,
        Err(e) => {
            eprintln!(
                "ferry-ofi needs libfabric >= 1.17 and its headers \
                 (Debian/Ubuntu: apt-get install libfabric-dev pkg-config clang libclang-dev): {e}"
            );
            std::process::exit(1);
        }
    };
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let out = PathBuf::from(env::var("OUT_DIR").expect("set by cargo"));
    let header = manifest.join("wrapper.h");
    let includes: Vec<String> = lib
        .include_paths
        .iter()
        .map(|p| format!("-I{}", p.display()))
        .collect();
    let shim = out.join("ofi_shim");
    let bindings = bindgen::Builder::default()
        .header(header.display().to_string())
        .clang_args(&includes)
        .allowlist_function("fi_.*")
        .allowlist_type("fi_.*|fid.*")
        .allowlist_var("FI_.*")
        .derive_default(true)
        .prepend_enum_name(false)
        .layout_tests(false)
        .wrap_static_fns(true)
        .wrap_static_fns_path(&shim)
        .generate();
    let bindings = match bindings {
        Ok(b) => b,
        Err(e) => {
            eprintln!("ferry-ofi: bindgen failed on libfabric's headers (is libclang-dev installed?): {e}");
            std::process::exit(1);
        }
    };
    bindings
        .write_to_file(out.join("bindings.rs"))
        .expect("OUT_DIR is writable");
    let mut cc = cc::Build::new();
    cc.file(shim.with_extension("c"))
        .include(&manifest)
        .warnings(false);
    for p in &lib.include_paths {
        cc.include(p);
    }
    cc.compile("ferry_ofi_shim");
}
