//! `ferry-bench` smoke test: every subcommand, with tiny iteration counts,
//! through `ferryrun -n 2` (and `latency` through `mpiexec.hydra`), with
//! `--validate` and `--json`; the table and the JSON must parse.

use std::collections::BTreeMap;
use std::time::Duration;

use ferry_tests::harness::{hydra_installed, Finished, Job, Launcher};

const BENCH: &str = env!("CARGO_BIN_EXE_ferry-tests-bench");
const FERRYRUN: &str = env!("CARGO_BIN_EXE_ferry-tests-ferryrun");

/// The table: header column names, and `size -> values`.
fn parse_table(f: &Finished) -> (Vec<String>, BTreeMap<usize, Vec<f64>>) {
    let mut columns = Vec::new();
    let mut rows = BTreeMap::new();
    for line in f.stdout.lines().filter(|l| !l.trim().is_empty()) {
        if let Some(h) = line.strip_prefix('#') {
            let words: Vec<&str> = h.split_whitespace().collect();
            if words.first() == Some(&"size") {
                columns = words[1..].iter().map(|w| (*w).to_owned()).collect();
            }
            continue;
        }
        let mut words = line.split_whitespace();
        let size = words.next().and_then(|w| w.parse().ok());
        let values: Option<Vec<f64>> = words.map(|w| w.parse().ok()).collect();
        match (size, values) {
            (Some(size), Some(values)) => {
                assert_eq!(
                    values.len(),
                    columns.len(),
                    "row {line:?} vs columns {columns:?}\n{f}"
                );
                assert!(values[0].is_finite(), "row {line:?}\n{f}");
                rows.insert(size, values);
            }
            _ => panic!("not a `size value ...` row: {line:?}\n{f}"),
        }
    }
    (columns, rows)
}

fn bench(launcher: Launcher, args: &[&str], sizes: &[usize]) -> Vec<String> {
    bench_ranks(launcher, 2, args, sizes)
}

fn bench_ranks(launcher: Launcher, ranks: u32, args: &[&str], sizes: &[usize]) -> Vec<String> {
    let json = std::env::temp_dir().join(format!(
        "ferry-bench-smoke-{}-{}-{launcher:?}-{ranks}.json",
        std::process::id(),
        args[0]
    ));
    let list: Vec<String> = sizes.iter().map(usize::to_string).collect();
    let mut job = Job::new(launcher, FERRYRUN, ranks, BENCH)
        .args(args)
        .args(&["--reps", "2", "--sizes", &list.join(","), "--json"])
        .args(&[json.to_str().expect("utf-8 temp dir")]);
    job.timeout = Duration::from_secs(120);
    let f = job.run();
    assert_eq!(f.code, Some(0), "{f}");
    let (columns, rows) = parse_table(&f);
    assert_eq!(rows.keys().copied().collect::<Vec<_>>(), sizes, "{f}");
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("the --json file"))
            .expect("JSON");
    let _ = std::fs::remove_file(&json);
    assert_eq!(doc["benchmark"], args[0]);
    let results = doc["results"].as_array().expect("results");
    assert_eq!(results.len(), sizes.len());
    for r in results {
        let first = &r["columns"][&columns[0]];
        assert_eq!(first["values"].as_array().map(Vec::len), Some(2), "{r}");
        assert!(first["median"].is_f64() && first["spread"].is_f64(), "{r}");
    }
    columns
}

#[test]
fn latency_parses() {
    let cols = bench(
        Launcher::Ferryrun,
        &["latency", "--iters", "20", "--warmup", "2", "--validate"],
        &[0, 8, 9000, 1 << 20],
    );
    assert_eq!(cols[..3], ["avg_us", "p50_us", "min_us"]);
}

#[test]
fn latency_parses_under_hydra() {
    if hydra_installed() {
        bench(Launcher::Hydra, &["latency", "--iters", "10"], &[8, 65536]);
    }
}

#[test]
fn bw_parses() {
    let cols = bench(
        Launcher::Ferryrun,
        &["bw", "--iters", "3", "--warmup", "1", "--validate"],
        &[1, 8192, 65536, 1 << 20],
    );
    assert_eq!(cols[..3], ["MB/s", "p50_MB/s", "msgs/s"]);
}

#[test]
fn bw_parses_without_cma() {
    let json = std::env::temp_dir().join(format!("ferry-bench-nocma-{}.json", std::process::id()));
    let f = Job::new(Launcher::Ferryrun, FERRYRUN, 2, BENCH)
        .args(&[
            "bw",
            "--iters",
            "2",
            "--sizes",
            "100000",
            "--validate",
            "--json",
        ])
        .args(&[json.to_str().expect("utf-8")])
        .envs(&[("FERRY_SHM_CMA", "0")])
        .run();
    assert_eq!(f.code, Some(0), "{f}");
    assert!(f.stdout.contains("rendezvous Fragmented"), "{f}");
    let _ = std::fs::remove_file(json);
}

#[test]
fn bibw_parses() {
    // Passive waiting with 64 rendezvous messages each way pushes back on
    // the shm cells: finalize must still deliver the last FINs (it once
    // left them in the outbox and hung the peer).
    let cols = bench(
        Launcher::Ferryrun,
        &[
            "bibw",
            "--iters",
            "3",
            "--warmup",
            "1",
            "--validate",
            "--wait-mode",
            "passive",
        ],
        &[1, 8192, 65536],
    );
    assert_eq!(cols[..3], ["MB/s", "p50_MB/s", "msgs/s"]);
}

#[test]
fn mbw_mr_parses() {
    let cols = bench(
        Launcher::Ferryrun,
        &["mbw-mr", "--iters", "3", "--warmup", "1", "--validate"],
        &[8, 65536],
    );
    assert_eq!(cols[..2], ["MB/s", "msgs/s"]);
}

#[test]
fn mbw_mr_runs_as_two_pairs_on_four_ranks() {
    let cols = bench_ranks(
        Launcher::Ferryrun,
        4,
        &["mbw-mr", "--iters", "3", "--warmup", "1", "--validate"],
        &[8, 65536],
    );
    assert_eq!(cols[..2], ["MB/s", "msgs/s"]);
}

#[test]
fn arecv_parses() {
    let cols = bench(
        Launcher::Ferryrun,
        &["arecv", "--iters", "20", "--warmup", "2", "--validate"],
        &[0, 8, 9000, 1 << 20],
    );
    assert_eq!(cols[..2], ["arecv_us", "preposted_us"]);
}

#[test]
fn request_parses() {
    let cols = bench(
        Launcher::Ferryrun,
        &["request", "--iters", "10", "--warmup", "2"],
        &[0, 8, 4096],
    );
    assert_eq!(cols[..4], ["empty_ns", "real_ns", "empty_pct", "tests/op"]);
}

/// Every one-sided subcommand, each with a synchronization OSU offers
/// for it, on the node window and on the private one, checking the
/// target's memory after the loop.
#[test]
fn one_sided_subcommands_parse_and_validate() {
    let cases: &[(&str, &str, &[usize])] = &[
        ("put-latency", "flush", &[1, 8, 65536]),
        ("get-latency", "lock_all", &[8, 4096]),
        ("acc-latency", "lock", &[8, 65536]),
        ("get-acc-latency", "flush_local", &[8, 64]),
        ("fop-latency", "fence", &[8]),
        ("cas-latency", "pscw", &[8]),
        ("put-bw", "flush", &[8, 65536]),
        ("get-bw", "lock", &[8, 4096]),
        ("put-bibw", "fence", &[8, 4096]),
        ("put-bibw", "pscw", &[64]),
    ];
    for private in [false, true] {
        for &(sub, sync, sizes) in cases {
            let mut args = vec![
                sub,
                "--iters",
                "10",
                "--warmup",
                "2",
                "--validate",
                "--sync",
                sync,
            ];
            if private {
                args.push("--private");
            }
            let cols = bench(Launcher::Ferryrun, &args, sizes);
            let want = if sub.ends_with("bw") {
                "MB/s"
            } else {
                "avg_us"
            };
            assert_eq!(cols[0], want, "{sub}");
        }
    }
}

#[test]
fn wait_parses() {
    let cols = bench(
        Launcher::Ferryrun,
        &[
            "wait",
            "--iters",
            "20",
            "--warmup",
            "2",
            "--block-secs",
            "0.2",
            "--wait-mode",
            "passive",
        ],
        &[8],
    );
    assert_eq!(cols[0], "cpu_pct");
}

#[test]
fn help_lists_the_subcommands() {
    let out = std::process::Command::new(BENCH)
        .arg("--help")
        .output()
        .expect("run");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    for sub in [
        "latency",
        "bw",
        "bibw",
        "mbw-mr",
        "wait",
        "arecv",
        "request",
        "--json",
        "--validate",
        "--reps",
        "--sizes",
    ] {
        assert!(text.contains(sub), "help lacks {sub}:\n{text}");
    }
    let out = std::process::Command::new(BENCH)
        .arg("nonsense")
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn starts_its_own_two_ranks_when_not_launched() {
    let out = std::process::Command::new(BENCH)
        .args(["latency", "--sizes", "8", "--iters", "10"])
        .env_remove("PMI_FD")
        .env_remove("PMI_PORT")
        .output()
        .expect("run");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.lines().any(|l| l.trim_start().starts_with("8 ")),
        "{stdout}"
    );
}
