//! ferry's crates keep to the floors their crate docs list (`## Floors`
//! in each `src/lib.rs`). A crate joins by a test here.

use std::path::PathBuf;

fn src_of(crate_dir: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(crate_dir)
        .join("src")
}

fn assert_floors(crate_dir: &str) {
    if let Err(report) = ferry_floors::check_crate(&src_of(crate_dir)) {
        panic!("{report}");
    }
}

#[test]
fn ferry_core_keeps_to_its_floors() {
    assert_floors("core");
}

#[test]
fn ferry_keeps_to_its_floors() {
    assert_floors("devices");
}

#[test]
fn ferry_mpi_keeps_to_its_floors() {
    assert_floors("mpi");
}
