//! The checked-in output is what the table gives: a table edited without
//! running the generator (or a generated file edited by hand) fails here.
use std::path::Path;

#[test]
fn generated_files_are_current() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let files = ferry_mpi_abigen::generate(&root).expect("the table reads");
    let stale: Vec<String> = files
        .iter()
        .filter(|(p, text)| std::fs::read_to_string(root.join(p)).ok().as_deref() != Some(text))
        .map(|(p, _)| p.display().to_string())
        .collect();
    assert!(
        stale.is_empty(),
        "not current: {stale:?}; run `cargo run -p ferry-mpi-abigen` and commit the result"
    );
}

#[test]
fn every_exported_function_is_in_the_table_once() {
    // Only the generated shims define exported functions.
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut hand = Vec::new();
    let mut stack = vec![root.join("mpi/src")];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                if !p.ends_with("exports") {
                    stack.push(p);
                }
            } else if p.extension().is_some_and(|x| x == "rs") {
                let text = std::fs::read_to_string(&p).unwrap();
                if text.contains("#[no_mangle]") && !p.ends_with("ffi/mod.rs") {
                    hand.push(p.display().to_string());
                }
            }
        }
    }
    assert!(
        hand.is_empty(),
        "exported by hand, outside the table: {hand:?}"
    );
}
