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

/// The imports of ferry-mpi that still run up a floor, by file and path
/// (line numbers left out, so that edits elsewhere in a file do not
/// matter). Each goes when its reason does; a new one fails the test.
/// - `state` stores the objects of the chapters above it (the request,
///   message, op, datatype, keyval and info tables, the attached buffer):
///   its tables need to become generic over what they hold.
/// - `request::object`'s request kinds name their chapters' state
///   (persistent, sendrecv pair, buffer flush) and `request::post` the
///   collectives' copy-out: one request type whose kinds are described
///   below `request` (issue 38, part 3).
/// - `comm` makes `MPI_Comm_idup`'s request and asks `p2p` whether a
///   communicator's attached buffer is freed.
const MPI_KNOWN: &[(&str, &str)] = &[
    ("comm/communicators.rs", "crate::request::object::ReqObj"),
    ("comm/communicators.rs", "crate::request::object::State"),
    ("comm/communicators.rs", "crate::p2p::commbuf::freed"),
    ("request/object.rs", "crate::p2p::persist::Persist"),
    ("request/object.rs", "crate::p2p::pair::Pair"),
    ("request/object.rs", "crate::p2p::commbuf::Flush"),
    ("request/post.rs", "crate::coll::Piece"),
    ("request/post.rs", "crate::coll::copy_out"),
];

#[test]
fn ferry_mpi_runs_up_only_where_listed() {
    let src = src_of("mpi");
    let lib = std::fs::read_to_string(src.join("lib.rs")).unwrap();
    let floors = ferry_floors::Floors::from_crate_docs(&lib).unwrap();
    let found = ferry_floors::check(&src, &floors).unwrap();
    let unknown: Vec<String> = found
        .iter()
        .filter(|v| {
            !MPI_KNOWN.iter().any(|(file, path)| {
                v.file == std::path::Path::new(file) && v.what.starts_with(&format!("`{path}`"))
            })
        })
        .map(|v| v.to_string())
        .collect();
    assert!(
        unknown.is_empty(),
        "new imports of ferry-mpi run up a floor:\n{}",
        unknown.join("\n")
    );
    // And the list shrinks as they go: each entry is still found.
    for (file, path) in MPI_KNOWN {
        assert!(
            found.iter().any(|v| v.file == std::path::Path::new(file)
                && v.what.starts_with(&format!("`{path}`"))),
            "{file}: {path} no longer runs up: take it off MPI_KNOWN"
        );
    }
}
