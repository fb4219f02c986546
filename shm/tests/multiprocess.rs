//! Multi-process tests: each test re-executes this binary once per rank
//! (the child runs the same test function, which sees
//! `FERRY_SHM_TEST_RANK` and plays its rank), with a file-based bootstrap.
//! Every job is checked to leave nothing in `/dev/shm`.

mod common;

use std::process::ExitStatus;
use std::time::{Duration, Instant};

use common::{check_message, launch, message, FileBootstrap, PollPark};
use ferry_core::{
    Bootstrap, Buf, Check, CheckMode, Config, Engine, Error, PeerError, Rank, RndvMode,
};
use ferry_shm::{ShmDevice, ShmOptions};

/// One rank of a test job.
struct Ctx {
    rank: Rank,
    size: u32,
    engine: Engine<ShmDevice>,
    park: PollPark,
    boot: FileBootstrap,
}

/// Plays this process's rank of test `name` if it is a child; otherwise
/// launches `size` children and returns their exit statuses.
/// The sizes these tests send sit around an 8 KiB eager limit, so that
/// every rendezvous protocol runs: they pin it (the device's own default
/// is a whole cell, 64 KiB, which the conformance suite covers).
fn job(name: &str, size: u32, cma: bool, body: fn(&mut Ctx)) -> Option<Vec<ExitStatus>> {
    let config = Config {
        eager_limit: Some(8192),
        ..Config::default()
    };
    job_with(name, size, cma, config, body)
}

/// [`job`] with an engine configuration.
fn job_with(
    name: &str,
    size: u32,
    cma: bool,
    config: Config,
    body: fn(&mut Ctx),
) -> Option<Vec<ExitStatus>> {
    if let Some(mut boot) = FileBootstrap::from_env() {
        let opts = ShmOptions::from_env().unwrap();
        let ranks: Vec<Rank> = (0..boot.size() as Rank).collect();
        let dev = ShmDevice::new(&mut boot, &ranks, opts).unwrap();
        let (rank, size) = (boot.rank(), boot.size());
        let engine = Engine::new(rank, size, dev, config).unwrap();
        let park = PollPark::new(engine.device());
        let mut ctx = Ctx {
            rank,
            size,
            engine,
            park,
            boot,
        };
        body(&mut ctx);
        // One job per child process: a test that launches several jobs must
        // not set up again in the same bootstrap directory.
        drop(ctx);
        std::process::exit(0);
    }
    let env = [("FERRY_SHM_CMA", if cma { "1" } else { "0" })];
    let results = launch(
        &[
            name,
            "--exact",
            "--nocapture",
            "--test-threads=1",
            "--include-ignored",
        ],
        size,
        name,
        &env,
        Duration::from_secs(120),
    );
    for (r, res) in results.iter().enumerate() {
        for line in res.output.lines() {
            if let Some(at) = line.find("note:") {
                println!("rank {r}: {}", &line[at..]);
            }
        }
    }
    Some(results.into_iter().map(|r| r.status).collect())
}

fn all_succeeded(statuses: Option<Vec<ExitStatus>>) {
    if let Some(s) = statuses {
        assert!(s.iter().all(ExitStatus::success), "ranks failed: {s:?}");
    }
}

/// Eager, fragmented/CMA rendezvous, multi-chunk CMA sizes.
const SIZES: [usize; 9] = [0, 1, 8, 1000, 8192, 8193, 100_000, 1 << 20, (5 << 20) + 3];

/// Every rank sends every size to every rank (itself included) and checks
/// what it receives byte for byte.
fn all_to_all(ctx: &mut Ctx) {
    let size = ctx.size as Rank;
    let cma = ctx.engine.device().cma_enabled();
    assert_eq!(
        cma,
        std::env::var("FERRY_SHM_CMA").unwrap() == "1",
        "CMA as asked"
    );
    exchange(ctx, &SIZES);
    let c = ctx.engine.counters();
    let big = SIZES.iter().filter(|&&l| l > 8192).count() as u64 * size as u64;
    if cma {
        assert_eq!(c.rndv_get_sent, big, "rendezvous went by CMA get");
    } else {
        assert_eq!(c.rndv_frag_sent, big, "rendezvous went through the cells");
        assert_eq!(c.rndv_get_sent, 0);
    }
    // Everyone is done before anyone exits (a peer that exits is a death).
    ctx.boot.barrier().unwrap();
}

#[test]
fn two_ranks_eager_and_rendezvous_cma() {
    all_succeeded(job(
        "two_ranks_eager_and_rendezvous_cma",
        2,
        true,
        all_to_all,
    ));
}

#[test]
fn two_ranks_eager_and_rendezvous_no_cma() {
    all_succeeded(job(
        "two_ranks_eager_and_rendezvous_no_cma",
        2,
        false,
        all_to_all,
    ));
}

#[test]
fn four_ranks_all_to_all_cma() {
    all_succeeded(job("four_ranks_all_to_all_cma", 4, true, all_to_all));
}

#[test]
fn four_ranks_all_to_all_no_cma() {
    all_succeeded(job("four_ranks_all_to_all_no_cma", 4, false, all_to_all));
}

/// More ranks than the receiver polls on every call (`active.rs`): small
/// messages from every peer, in rounds where only some peers talk, so
/// peers join and leave the set of polled rings; nothing is lost or
/// reordered, and quiet peers are still heard.
#[test]
fn twelve_ranks_small_messages_through_the_active_set() {
    fn body(ctx: &mut Ctx) {
        for round in 0..20 {
            // Every round, an exchange among all; every other round, a few
            // extra messages to rank 0 from a rotating subset only.
            exchange(ctx, &[8, 200]);
            let talkers: Vec<Rank> = (0..ctx.size as Rank)
                .filter(|&r| r != 0 && (r as usize + round) % 4 == 0)
                .collect();
            if ctx.rank == 0 {
                for &from in &talkers {
                    for i in 0..3u8 {
                        let done = ctx
                            .engine
                            .recv(from, 50, 0, Buf::zeroed(1).unwrap(), &mut ctx.park)
                            .unwrap();
                        assert_eq!(done.buf.unwrap().as_slice(), [i], "order from {from}");
                    }
                }
            } else if talkers.contains(&ctx.rank) {
                for i in 0..3u8 {
                    let s = ctx.engine.isend(0, 50, 0, Buf::from(vec![i])).unwrap();
                    assert!(s.request.is_empty());
                }
            }
            ctx.boot.barrier().unwrap();
        }
    }
    all_succeeded(job(
        "twelve_ranks_small_messages_through_the_active_set",
        12,
        false,
        body,
    ));
}

/// Rendezvous by put (receiver exposes, sender writes with
/// `process_vm_writev`), forced through the engine's config.
#[test]
fn two_ranks_rendezvous_put() {
    fn body(ctx: &mut Ctx) {
        let (rank, peer) = (ctx.rank, 1 - ctx.rank);
        let len = 3 << 20;
        let mut r = ctx
            .engine
            .irecv(peer, 1, 0, Buf::zeroed(len).unwrap())
            .unwrap()
            .request;
        let mut s = ctx
            .engine
            .isend(peer, 1, 0, Buf::from(message(rank, peer, len)))
            .unwrap()
            .request;
        let got = ctx.engine.wait(&mut r, &mut ctx.park).unwrap();
        check_message(peer, rank, &got.buf.unwrap(), len);
        ctx.engine.wait(&mut s, &mut ctx.park).unwrap();
        assert_eq!(ctx.engine.counters().rndv_put_sent, 1);
        ctx.boot.barrier().unwrap();
    }
    let config = Config {
        rndv_mode: RndvMode::Put,
        ..Config::default()
    };
    all_succeeded(job_with("two_ranks_rendezvous_put", 2, true, config, body));
}

/// An unexpected eager message reaches `arecv` in its cell: the buffer's id
/// lies in the shared segment. So does an expected one (posted first).
#[test]
fn arecv_hands_over_the_cell() {
    fn body(ctx: &mut Ctx) {
        if ctx.rank == 0 {
            for tag in 0..2 {
                let m = message(0, 1, 5000);
                let s = ctx.engine.isend(1, tag, 0, Buf::from(m)).unwrap();
                assert!(s.request.is_empty(), "eager send completes at once");
            }
        } else {
            // Unexpected: wait until it has arrived, then arecv.
            let deadline = Instant::now() + Duration::from_secs(10);
            while ctx.engine.iprobe(0, 0, 0).unwrap().is_none() {
                assert!(Instant::now() < deadline, "message never arrived");
                if ctx.engine.device_check(CheckMode::Blocking).unwrap() == Check::WouldBlock {
                    ctx.park.poll(100);
                }
            }
            let done = ctx.engine.arecv(0, 0, 0, &mut ctx.park).unwrap();
            let buf = done.buf.unwrap();
            check_message(0, 1, &buf, 5000);
            assert!(
                ctx.engine.device().segment_contains(buf.id()),
                "unexpected arecv was handed the cell (id {:#x})",
                buf.id()
            );
            let storage = buf.into_storage().expect("a cell, not a Vec");
            drop(storage);
            // Expected arecv: posted before the message is matched.
            let done = ctx.engine.arecv(0, 1, 0, &mut ctx.park).unwrap();
            let buf = done.buf.unwrap();
            check_message(0, 1, &buf, 5000);
            assert!(ctx.engine.device().segment_contains(buf.id()));
        }
        ctx.boot.barrier().unwrap();
    }
    all_succeeded(job("arecv_hands_over_the_cell", 2, true, body));
}

/// CPU seconds (user + system) this process has used.
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    let after = &stat[stat.rfind(')').unwrap() + 2..];
    let f: Vec<&str> = after.split(' ').collect();
    // Fields 14 and 15 of stat(5), counted from after the command name.
    let ticks: f64 = f[11].parse::<f64>().unwrap() + f[12].parse::<f64>().unwrap();
    ticks / 100.0
}

/// A receiver with nothing to do arms the device and sleeps in `poll` on the
/// wait fd; the peer's send (500 ms later) wakes it, and it used almost no
/// CPU while asleep.
#[test]
fn passive_wait_wakes_on_send() {
    fn body(ctx: &mut Ctx) {
        if ctx.rank == 0 {
            std::thread::sleep(Duration::from_millis(500));
            let s = ctx
                .engine
                .isend(1, 9, 0, Buf::from(message(0, 1, 64)))
                .unwrap();
            assert!(s.request.is_empty());
        } else {
            let mut r = ctx
                .engine
                .irecv(0, 9, 0, Buf::zeroed(64).unwrap())
                .unwrap()
                .request;
            let (t0, cpu0) = (Instant::now(), cpu_seconds());
            let mut check = ctx.engine.device_check(CheckMode::Blocking).unwrap();
            while check != Check::WouldBlock {
                check = ctx.engine.device_check(CheckMode::Blocking).unwrap();
            }
            assert!(ctx.park.poll(10_000), "the send woke the sleeper");
            let (slept, cpu) = (t0.elapsed(), cpu_seconds() - cpu0);
            assert!(
                slept >= Duration::from_millis(300),
                "woke before the send: {slept:?}"
            );
            assert!(cpu < 0.1, "sleeping used {cpu} s of CPU");
            let done = ctx.engine.wait(&mut r, &mut ctx.park).unwrap();
            check_message(0, 1, &done.buf.unwrap(), 64);
            println!("note: passive wait slept {slept:?} using {cpu:.3} s of CPU");
        }
        ctx.boot.barrier().unwrap();
    }
    all_succeeded(job("passive_wait_wakes_on_send", 2, true, body));
}

/// Rank 1 sends a message and an RTS for a large one, then SIGKILLs itself.
/// Rank 0 still receives the eager message (sent before the death), its
/// receive of the large one fails with `Died` (the sender's memory is
/// gone), and a receive posted afterwards, blocked in a passive wait,
/// completes with `Died` too, all within a bounded time.
#[test]
fn killed_peer_fails_pending_receives() {
    fn body(ctx: &mut Ctx) {
        if ctx.rank == 1 {
            let s = ctx
                .engine
                .isend(0, 1, 0, Buf::from(message(1, 0, 100)))
                .unwrap();
            assert!(s.request.is_empty());
            let _rts = ctx
                .engine
                .isend(0, 2, 0, Buf::from(message(1, 0, 4 << 20)))
                .unwrap();
            ctx.boot.barrier().unwrap();
            let _ = nix::sys::signal::raise(nix::sys::signal::Signal::SIGKILL);
            unreachable!("SIGKILL returned");
        }
        let start = Instant::now();
        let done = ctx
            .engine
            .recv(1, 1, 0, Buf::zeroed(100).unwrap(), &mut ctx.park)
            .unwrap();
        check_message(1, 0, &done.buf.unwrap(), 100);
        ctx.boot.barrier().unwrap();
        std::thread::sleep(Duration::from_millis(200));
        let posted = Instant::now();
        let mut big = ctx
            .engine
            .irecv(1, 2, 0, Buf::zeroed(4 << 20).unwrap())
            .unwrap()
            .request;
        let mut never = ctx
            .engine
            .irecv(1, 3, 0, Buf::zeroed(8).unwrap())
            .unwrap()
            .request;
        for req in [&mut big, &mut never] {
            let done = ctx.engine.wait(req, &mut ctx.park).unwrap();
            match done.status.error {
                Some(Error::Peer(PeerError::Died { rank: 1 })) => {}
                other => panic!("expected Died, got {other:?}"),
            }
        }
        assert!(start.elapsed() < Duration::from_secs(10));
        assert!(matches!(
            ctx.engine.peer_error(1),
            Some(Error::Peer(PeerError::Died { rank: 1 }))
        ));
        let s = ctx.engine.isend(1, 4, 0, Buf::from(vec![1u8])).unwrap();
        let mut r = s.request;
        if !r.is_empty() {
            let done = ctx.engine.wait(&mut r, &mut ctx.park).unwrap();
            assert!(done.status.error.is_some(), "a send to the dead peer fails");
        }
        println!(
            "note: receives from the killed rank failed {:?} after they were posted",
            posted.elapsed()
        );
    }
    if let Some(s) = job("killed_peer_fails_pending_receives", 2, true, body) {
        use std::os::unix::process::ExitStatusExt;
        assert!(s[0].success(), "the survivor passed: {:?}", s[0]);
        assert_eq!(s[1].signal(), Some(9), "rank 1 died of SIGKILL: {:?}", s[1]);
    }
}

/// A killed job (the creator dies before unlinking is impossible to clean up
/// from outside, but once setup is done nothing is left): a rank killed
/// right after setup leaves no segment file.
#[test]
fn dev_shm_is_clean_even_when_every_rank_is_killed() {
    fn body(ctx: &mut Ctx) {
        ctx.boot.barrier().unwrap();
        let _ = nix::sys::signal::raise(nix::sys::signal::Signal::SIGKILL);
    }
    if let Some(s) = job(
        "dev_shm_is_clean_even_when_every_rank_is_killed",
        3,
        true,
        body,
    ) {
        use std::os::unix::process::ExitStatusExt;
        assert!(s.iter().all(|s| s.signal() == Some(9)), "{s:?}");
    }
}

/// 20,000 small messages sent before the receiver posts anything: the
/// sender runs into back-pressure (full pool) and out of eager credits, the
/// receiver's unexpected messages park cells up to the limit and are copied
/// beyond it, and every message arrives intact and in order.
#[test]
fn flood_of_unexpected_messages() {
    fn body(ctx: &mut Ctx) {
        const N: usize = 20_000;
        if ctx.rank == 0 {
            let mut pending = Vec::new();
            for i in 0..N {
                let s = ctx
                    .engine
                    .isend(1, 5, 0, Buf::from(message(0, 1, 100 + i % 50)))
                    .unwrap();
                if !s.request.is_empty() {
                    pending.push(s.request);
                }
            }
            let mut out = Vec::new();
            ctx.engine
                .waitall(&mut pending, &mut out, &mut ctx.park)
                .unwrap();
            println!(
                "note: flood: {} sends queued behind back-pressure or credits, {} backpressure events",
                out.len(),
                ctx.engine.counters().backpressure
            );
        } else {
            std::thread::sleep(Duration::from_millis(300));
            for i in 0..N {
                let done = ctx.engine.arecv(0, 5, 0, &mut ctx.park).unwrap();
                check_message(0, 1, &done.buf.unwrap(), 100 + i % 50);
            }
        }
        ctx.boot.barrier().unwrap();
    }
    all_succeeded(job("flood_of_unexpected_messages", 2, true, body));
}

/// Eight ranks (oversubscribed four to a core) all-to-all, both rendezvous
/// paths, several rounds. Run by `ci/test.sh` with `--ignored`.
#[test]
#[ignore = "stress: 8 oversubscribed ranks; run with --ignored"]
fn stress_eight_ranks_all_to_all() {
    fn body(ctx: &mut Ctx) {
        for _ in 0..3 {
            all_to_all_rounds(ctx);
        }
        if ctx.rank == 0 {
            let c = ctx.engine.counters();
            println!(
                "note: stress: {} eager, {} get, {} fragmented rendezvous sent by rank 0",
                c.eager_sent, c.rndv_get_sent, c.rndv_frag_sent
            );
        }
    }
    all_succeeded(job("stress_eight_ranks_all_to_all", 8, true, body));
    all_succeeded(job("stress_eight_ranks_all_to_all", 8, false, body));
}

/// One round of [`all_to_all`] without its per-job checks of the counters.
fn all_to_all_rounds(ctx: &mut Ctx) {
    exchange(ctx, &[0usize, 64, 8192, 70_000, 1 << 20]);
    ctx.boot.barrier().unwrap();
}

/// Every rank sends one message of each size (tag = index) to every rank,
/// itself included, receives them all, and checks source and bytes.
fn exchange(ctx: &mut Ctx, sizes: &[usize]) {
    let (rank, size) = (ctx.rank, ctx.size as Rank);
    let mut recvs = Vec::new();
    for peer in 0..size {
        for (t, &len) in sizes.iter().enumerate() {
            let s = ctx
                .engine
                .irecv(peer, t as i32, 0, Buf::zeroed(len).unwrap())
                .unwrap();
            recvs.push((peer, len, s.request));
        }
    }
    let mut sends = Vec::new();
    for k in 0..size {
        let peer = (rank + k) % size;
        for (t, &len) in sizes.iter().enumerate() {
            let s = ctx
                .engine
                .isend(peer, t as i32, 0, Buf::from(message(rank, peer, len)))
                .unwrap();
            sends.push(s.request);
        }
    }
    for (peer, len, mut req) in recvs {
        let done = ctx.engine.wait(&mut req, &mut ctx.park).unwrap();
        assert_eq!(done.status.error, None);
        assert_eq!(done.status.source, peer);
        check_message(peer, rank, &done.buf.unwrap(), len);
    }
    let mut out = Vec::new();
    ctx.engine
        .waitall(&mut sends, &mut out, &mut ctx.park)
        .unwrap();
    assert!(out.iter().all(|c| c.status.error.is_none()));
}
