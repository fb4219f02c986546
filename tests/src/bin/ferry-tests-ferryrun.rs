//! `ferryrun`, built into this package so that its tests can find it
//! through `CARGO_BIN_EXE_ferry-tests-ferryrun` (a binary of another
//! package has no such variable, and building it from a test would mean
//! running cargo inside cargo). The launcher is the crate `ferry-launch`; the
//! `ferryrun` binary of the `ferry` package is this same one line.

fn main() {
    std::process::exit(ferry_launch::main());
}
