//! A PMI-1 check program: every rank publishes values, meets the others at
//! barriers and verifies everything it reads back.
//!
//! ```text
//! cargo build --example pmi_check
//! ferryrun -n 4 target/debug/examples/pmi_check
//! mpiexec.hydra -n 4 target/debug/examples/pmi_check
//! ```
//!
//! The integration tests also use its other modes to exercise ferryrun:
//! - `fail-rank R CODE`: after the handshake and a barrier, rank R exits
//!   with CODE; the others sleep (ferryrun must kill them);
//! - `abort-rank R CODE`: the same, but rank R calls PMI abort;
//! - `plant-shm`: rank 0 creates `/dev/shm/ferry-<job id>-planted`, then
//!   every rank finalizes and exits 0 (ferryrun must remove the file).
//!
//! Exit status: 0 when every check passed, 1 (with a message) otherwise.

use std::process::ExitCode;
use std::time::Duration;

use ferry_core::{Bootstrap, BootstrapError};
use ferry_pmi::PmiClient;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("pmi_check: {e}");
            ExitCode::FAILURE
        }
    }
}

fn check(ok: bool, what: impl FnOnce() -> String) -> Result<(), String> {
    if ok {
        Ok(())
    } else {
        Err(what())
    }
}

fn number(s: Option<&String>, what: &str) -> Result<i32, String> {
    s.and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("{what}: expected a number"))
}

fn run(args: &[String]) -> Result<(), String> {
    let mut pmi = PmiClient::from_env()
        .map_err(|e| format!("connecting to the launcher: {e}"))?
        .ok_or("no PMI launcher found (run me under ferryrun or mpiexec.hydra)")?;
    let (rank, size) = (pmi.rank(), pmi.size());
    let env_rank = std::env::var("PMI_RANK").ok();
    if let Some(r) = &env_rank {
        check(*r == rank.to_string(), || {
            format!("rank {rank} but PMI_RANK={r}")
        })?;
    }
    if let Ok(job) = std::env::var("FERRY_JOB_ID") {
        check(pmi.job_id() == job, || {
            format!("job id {:?} but FERRY_JOB_ID={job:?}", pmi.job_id())
        })?;
    }
    check(!pmi.job_id().is_empty(), || "empty job id".into())?;
    pmi.barrier().map_err(|e| format!("first barrier: {e}"))?;

    match args.first().map(String::as_str) {
        None | Some("check") => full_check(&mut pmi)?,
        Some("fail-rank") => {
            let victim = number(args.get(1), "fail-rank RANK")?;
            let code = number(args.get(2), "fail-rank RANK CODE")?;
            if rank == victim {
                std::process::exit(code);
            }
            std::thread::sleep(Duration::from_secs(60));
            return Err("still alive after 60 s: the launcher did not kill me".into());
        }
        Some("abort-rank") => {
            let victim = number(args.get(1), "abort-rank RANK")?;
            let code = number(args.get(2), "abort-rank RANK CODE")?;
            if rank == victim {
                pmi.abort(code, "pmi_check was asked to abort")
                    .map_err(|e| format!("abort: {e}"))?;
            }
            // Even the aborting rank waits: the launcher must kill it.
            std::thread::sleep(Duration::from_secs(60));
            return Err("still alive after 60 s: the launcher did not kill me".into());
        }
        Some("plant-shm") => {
            if rank == 0 {
                let path = format!("/dev/shm/ferry-{}-planted", pmi.job_id());
                std::fs::write(&path, b"left behind on purpose")
                    .map_err(|e| format!("creating {path}: {e}"))?;
            }
            pmi.barrier().map_err(|e| format!("barrier: {e}"))?;
        }
        Some(other) => return Err(format!("unknown mode {other:?}")),
    }
    pmi.finalize().map_err(|e| format!("finalize: {e}"))?;
    println!("pmi_check: rank {rank} of {size} ok");
    Ok(())
}

/// Under ferryrun (`FERRY_JOB_ID` set): the job secret is served under its
/// reserved key, and no rank may overwrite it. Under Hydra the key starts
/// absent (rank 0 publishes one at ferry's setup). Never prints the value.
fn check_secret(pmi: &mut PmiClient) -> Result<(), String> {
    use ferry_core::auth::{job_secret, SECRET_KEY};
    if std::env::var_os("FERRY_JOB_ID").is_none() {
        return match pmi.get(SECRET_KEY) {
            Err(BootstrapError::NotFound(_)) => Ok(()),
            other => Err(format!(
                "under Hydra, {SECRET_KEY} should start absent, got {}",
                if other.is_ok() { "a value" } else { "an error" }
            )),
        };
    }
    let secret = job_secret(pmi).map_err(|e| format!("the job secret: {e}"))?;
    match pmi.put(SECRET_KEY, "00") {
        Err(BootstrapError::Refused { .. }) => {}
        other => {
            return Err(format!(
                "put of {SECRET_KEY} gave {other:?}, expected Refused"
            ))
        }
    }
    let again = job_secret(pmi).map_err(|e| format!("the job secret: {e}"))?;
    check(secret == again, || "the job secret changed".into())?;
    check(
        std::env::vars().all(|(_, v)| !v.contains(&secret.to_hex())),
        || "the job secret is in the environment".into(),
    )?;
    Ok(())
}

/// The value rank `r` publishes in round `round`: includes `=` and the job
/// id, so both the value syntax and the job's isolation are exercised.
fn value(job: &str, r: i32, round: u32) -> String {
    format!("v{round}={r}-of-{job}")
}

fn full_check(pmi: &mut PmiClient) -> Result<(), String> {
    let (rank, size) = (pmi.rank(), pmi.size());
    let job = pmi.job_id().to_owned();
    let appnum = pmi.get_appnum().map_err(|e| format!("get_appnum: {e}"))?;
    check(appnum == 0, || format!("appnum {appnum}, expected 0"))?;
    let universe = pmi
        .get_universe_size()
        .map_err(|e| format!("get_universe_size: {e}"))?;
    check(universe.is_none_or(|u| u >= size), || {
        format!("universe size {universe:?} smaller than the job ({size})")
    })?;

    // What PMI-1 cannot carry must be refused locally, and leave the
    // connection usable.
    for (key, val) in [
        ("ok-key", "has space"),
        ("ok-key", "back\\slash"),
        ("bad.key", "v"),
    ] {
        match pmi.put(key, val) {
            Err(BootstrapError::Invalid(_)) => {}
            other => {
                return Err(format!(
                    "put({key:?}, {val:?}) gave {other:?}, expected Invalid"
                ))
            }
        }
    }
    match pmi.get("never-put") {
        Err(BootstrapError::NotFound(k)) if k == "never-put" => {}
        other => return Err(format!("get of a missing key gave {other:?}")),
    }
    check_secret(pmi)?;

    for round in 0..2u32 {
        pmi.put(&format!("r{round}-rank-{rank}"), &value(&job, rank, round))
            .map_err(|e| format!("put: {e}"))?;
        pmi.barrier().map_err(|e| format!("barrier: {e}"))?;
        for r in 0..size as i32 {
            let key = format!("r{round}-rank-{r}");
            let got = pmi.get(&key).map_err(|e| format!("get {key}: {e}"))?;
            let want = value(&job, r, round);
            check(got == want, || {
                format!("get {key}: {got:?}, expected {want:?}")
            })?;
        }
    }
    // Everyone has read everything before anyone finalizes.
    pmi.barrier().map_err(|e| format!("last barrier: {e}"))?;
    Ok(())
}
