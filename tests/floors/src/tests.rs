use super::*;

/// A crate in a fresh temporary directory: `files` are (path under
/// `src/`, text).
struct Fixture {
    src: PathBuf,
}

impl Fixture {
    fn new(name: &str, files: &[(&str, &str)]) -> Fixture {
        let src = std::env::temp_dir()
            .join(format!("ferry-floors-{name}-{}", std::process::id()))
            .join("src");
        let _ = fs::remove_dir_all(&src);
        for (path, text) in files {
            let path = src.join(path);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, text).unwrap();
        }
        Fixture { src }
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(self.src.parent().unwrap());
    }
}

const LIB: &str = "\
//! # demo
//!
//! ## Floors
//! Bottom first:
//! 1. `error`, `words`: the words; `ignored` here.
//!    More prose, `also::ignored`.
//! 2. `dev::leaf`,
//!    `cell`: low parts of higher modules.
//! 3. `dev`, `api`: the top.
//!
//! ## Safety
//! 4. `not_a_floor`: after the section.
#![forbid(unsafe_code)]

mod api;
mod cell;
mod dev;
mod error;
mod words;

pub use api::{Api, Handle as H};
pub use error::Error;
pub use other_crate::Thing;
";

fn texts(v: &[Violation]) -> Vec<String> {
    v.iter().map(ToString::to_string).collect()
}

#[test]
fn reads_the_floors_from_the_crate_docs() {
    let floors = Floors::from_crate_docs(LIB).unwrap();
    assert_eq!(
        floors,
        Floors::new(&[&["error", "words"], &["dev::leaf", "cell"], &["dev", "api"]])
    );
    assert!(Floors::from_crate_docs("//! # x\n").is_err());
    assert!(Floors::from_crate_docs("//! ## Floors\n//! 1. no module: here\n").is_err());
    assert!(Floors::from_crate_docs("//! ## Floors\n//! 1. `a-b`: bad\n").is_err());
}

#[test]
fn a_clean_crate_passes() {
    let f = Fixture::new(
        "clean",
        &[
            ("lib.rs", LIB),
            ("error.rs", "use crate::words::Word;\npub struct Error;\n"),
            ("words.rs", "use crate::Error;\npub struct Word;\n"),
            (
                "cell.rs",
                "use crate::{error::Error, words::{self, Word}};\n",
            ),
            (
                "dev/mod.rs",
                "mod leaf;\nuse crate::api::Api;\nuse crate::dev::leaf::X;\n",
            ),
            ("dev/leaf.rs", "use crate::cell;\npub struct X;\n"),
            (
                "api.rs",
                "use crate::dev;\nfn f() -> crate::Error { crate::H::new() }\n",
            ),
        ],
    );
    assert_eq!(texts(&check_crate_violations(&f.src)), Vec::<String>::new());
    assert!(check_crate(&f.src).is_ok());
}

fn check_crate_violations(src: &Path) -> Vec<Violation> {
    let lib = fs::read_to_string(src.join("lib.rs")).unwrap();
    check(src, &Floors::from_crate_docs(&lib).unwrap()).unwrap()
}

#[test]
fn an_import_up_a_floor_is_named_with_its_file_and_line() {
    let f = Fixture::new(
        "up",
        &[
            ("lib.rs", LIB),
            ("error.rs", "pub struct Error;\n\nuse crate::cell::Cell;\n"),
            ("words.rs", "fn f() { let _ = crate::Api::new(); }\n"),
            ("cell.rs", "use crate::{words, dev::{leaf::X, Y}};\n"),
            ("dev/mod.rs", ""),
            ("dev/leaf.rs", "use crate::dev::Y;\n"),
            ("api.rs", ""),
        ],
    );
    assert_eq!(
        texts(&check_crate_violations(&f.src)),
        [
            "cell.rs:1: `crate::dev::Y` runs up: `dev` is on floor 3, this module on floor 2",
            "dev/leaf.rs:1: `crate::dev::Y` runs up: `dev` is on floor 3, this module on floor 2",
            "error.rs:3: `crate::cell::Cell` runs up: `cell` is on floor 2, this module on floor 1",
            "words.rs:1: `crate::Api::new` runs up: `api` is on floor 3, this module on floor 1",
        ]
    );
    let report = check_crate(&f.src).unwrap_err();
    assert!(report.contains("4 import(s)"), "{report}");
    assert!(
        report.contains("error.rs:3: `crate::cell::Cell` runs up"),
        "{report}"
    );
}

#[test]
fn comments_strings_and_relative_paths_are_not_imports() {
    let f = Fixture::new(
        "quiet",
        &[
            ("lib.rs", LIB),
            (
                "error.rs",
                "//! See [`Api`](crate::api::Api).\n\
                 /// Unlike [`crate::dev`], /* crate::dev */ this is low.\n\
                 pub struct Error<'a>(&'a str);\n\
                 const S: &str = \"crate::dev::X\";\n\
                 const R: &str = r#\"crate::api\"#;\n\
                 const C: char = '\"';\n\
                 use super::dev;\n\
                 fn f() -> char { 'c' } // crate::api\n",
            ),
            (
                "words.rs",
                "macro_rules! m { () => { $crate::words::w() } }\n",
            ),
            ("cell.rs", ""),
            ("dev/mod.rs", ""),
            ("dev/leaf.rs", ""),
            ("api.rs", "fn g() { crate::m!(); }\n"),
        ],
    );
    assert_eq!(texts(&check_crate_violations(&f.src)), Vec::<String>::new());
}

#[test]
fn a_module_on_no_floor_and_an_unknown_path_are_reported() {
    let f = Fixture::new(
        "unplaced",
        &[
            ("lib.rs", LIB),
            ("error.rs", "use crate::nowhere::X;\n"),
            ("words.rs", ""),
            ("cell.rs", ""),
            ("dev/mod.rs", ""),
            ("dev/leaf.rs", ""),
            ("api.rs", ""),
            ("extra.rs", "use crate::error::Error;\n"),
            ("bin/tool.rs", "use crate::api::Api;\n"),
        ],
    );
    assert_eq!(
        texts(&check_crate_violations(&f.src)),
        [
            "error.rs:1: `crate::nowhere::X`: cannot tell which floor this is on",
            "extra.rs:0: module `extra` is on no floor",
        ]
    );
}

#[test]
fn stripping_keeps_lines_and_code() {
    let text = "a // c\n/* b\n c */ d \"e\nf\" 'g' '\\n' x<'a>\n";
    let s = strip(text);
    assert_eq!(s.lines().count(), text.lines().count());
    assert!(s.contains("x<'a>"));
    assert!(!s.contains('c') && !s.contains('e') && !s.contains('g'));
}
