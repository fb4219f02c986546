//! `ferry-bench`, built into this package for the bench smoke test
//! (`tests/bench_smoke.rs`), for the reason given in
//! `ferry-tests-ferryrun.rs`. The program is `ferry_bench::cli`; the
//! `ferry-bench` binary adds only its allocation counter.

fn main() -> std::process::ExitCode {
    ferry_bench::cli::main(None)
}
