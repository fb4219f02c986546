//! The conformance runner: every rank of a test job runs
//! `ferry-conformance <body>` (or `ferry-conformance fault <scenario>`).
//!
//! It starts ferry from the environment (adjusted per body by
//! `bodies::configure`), runs the body, and prints one line per rank:
//! `ferry-conformance <body> rank R of N: ok` or `...: skip: <reason>`.
//! Rank 0 first prints `ferry-conformance job-id <id>` when launched by
//! `ferryrun`, so the harness can check `/dev/shm` for that job exactly.
//! A failed check is printed to stderr and the rank exits 1, which makes
//! the launcher kill the job and fail.

use std::process::ExitCode;
use std::time::Instant;

use ferry_tests::bodies::{self, fault, Ctx, Verdict, BODIES};
use ferry_tests::harness::{Suite, LINE_PREFIX};

/// `FERRY_CONFORMANCE_EXPECT=rdma_get=0,wait_fd=1` as pairs.
fn expectations() -> Vec<(String, bool)> {
    std::env::var(Suite::EXPECT_VAR)
        .unwrap_or_default()
        .split(',')
        .filter_map(|kv| {
            let (k, v) = kv.split_once('=')?;
            Some((k.trim().to_owned(), v.trim() == "1"))
        })
        .collect()
}

fn start(body: &str) -> Result<Ctx, ferry::Error> {
    let mut config = ferry::Config::from_env()?;
    bodies::configure(body, &mut config);
    let world = config.init()?;
    if world.rank() == 0 {
        if let Ok(id) = std::env::var("FERRY_JOB_ID") {
            println!("{LINE_PREFIX} job-id {id}");
        } else if let Some(seg) = world.shm_segment()? {
            // Under Hydra: the segment's name (`ferry-<job>-<nonce>`) is the
            // prefix of every file this job makes, so the harness can
            // check exactly these (concurrent jobs make theirs meanwhile).
            if let Some(id) = seg.strip_prefix("ferry-") {
                println!("{LINE_PREFIX} job-id {id}");
            }
        }
    }
    Ok(Ctx::new(world, expectations()))
}

fn run_body(name: &str) -> ExitCode {
    let Some(&(_, body)) = BODIES.iter().find(|(n, _)| *n == name) else {
        let names: Vec<&str> = BODIES.iter().map(|(n, _)| *n).collect();
        eprintln!(
            "{LINE_PREFIX}: unknown body {name:?}; bodies: {}",
            names.join(" ")
        );
        return ExitCode::from(2);
    };
    let ctx = match start(name) {
        Ok(ctx) => ctx,
        Err(e) => {
            eprintln!("{LINE_PREFIX} {name}: ferry did not start: {e}");
            return ExitCode::FAILURE;
        }
    };
    let t = Instant::now();
    let outcome = body(&ctx);
    let who = format!("{LINE_PREFIX} {name} rank {} of {}", ctx.rank, ctx.size);
    match outcome {
        Ok(verdict) => {
            if let Err(e) = ctx.world.finalize() {
                eprintln!("{who}: finalize failed: {e}");
                return ExitCode::FAILURE;
            }
            match verdict {
                Verdict::Pass => println!("{who}: ok ({:.0?})", t.elapsed()),
                Verdict::Skip(why) => println!("{who}: skip: {why}"),
            }
            ExitCode::SUCCESS
        }
        Err(failure) => {
            eprintln!("{who}: FAILED: {failure}");
            ExitCode::FAILURE
        }
    }
}

fn run_fault(scenario: &str) -> ExitCode {
    // Before any thread exists, so that every thread inherits it.
    fault::block_sigterm();
    let ctx = match start("fault") {
        Ok(ctx) => ctx,
        Err(e) => {
            eprintln!("{LINE_PREFIX} fault: ferry did not start: {e}");
            return ExitCode::FAILURE;
        }
    };
    match fault::run(&ctx, scenario) {
        Ok(line) => {
            println!("{LINE_PREFIX} fault {scenario} rank {}: {line}", ctx.rank);
            if fault::LINGER.contains(&scenario) {
                // A survivor that exited would be a second death, which the
                // slower survivors of a collective could see before the
                // first one: stay up, as a real survivor would, until
                // `ferryrun` kills the job.
                let _ = std::io::Write::flush(&mut std::io::stdout());
                std::thread::sleep(std::time::Duration::from_secs(30));
            }
            // No finalize: its barrier would wait for the dead rank.
            // Dropping the world tears the device down without one.
            drop(ctx);
            ExitCode::SUCCESS
        }
        Err(failure) => {
            eprintln!(
                "{LINE_PREFIX} fault {scenario} rank {}: FAILED: {failure}",
                ctx.rank
            );
            ExitCode::FAILURE
        }
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        ["fault", scenario] => run_fault(scenario),
        [body] => run_body(body),
        _ => {
            eprintln!("usage: ferry-conformance BODY | ferry-conformance fault SCENARIO");
            ExitCode::from(2)
        }
    }
}
