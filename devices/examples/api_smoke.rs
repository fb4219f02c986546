//! A multi-process smoke test of the public API, run by
//! `tests/api_multiproc.rs` through `ferryrun -n 2`:
//!
//! - `api_smoke pingpong`: ping-pong across eager and rendezvous sizes
//!   (blocking borrowed slices, nonblocking owned vectors, ARecv, issend,
//!   probe/mprobe, scope), data checked byte for byte;
//! - `api_smoke threads`: 4 threads per rank, each exchanging with its
//!   counterpart on the other rank (MPI_THREAD_MULTIPLE);
//! - `api_smoke peer-death`: rank 1 vanishes while rank 0 waits for it.
//!
//! Prints `api_smoke <mode> ok rank R` on success; any failure exits 1.

use std::process::ExitCode;

use ferry::{Comm, Outcome, Result, ANY_SOURCE, ANY_TAG};

const SIZES: [usize; 7] = [0, 1, 8, 4096, 9000, 65536, 4 << 20];

fn pattern(len: usize, seed: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (i.wrapping_mul(31) ^ seed) as u8)
        .collect()
}

fn pingpong(comm: &Comm) -> Result<()> {
    let (me, peer) = (comm.rank(), 1 - comm.rank());
    for (k, &len) in SIZES.iter().enumerate() {
        let data = pattern(len, k);
        if me == 0 {
            // Blocking borrowed send; the echo comes back as an ARecv.
            comm.send(&data, peer, k as i32)?;
            let (echo, st) = comm.arecv::<u8>(peer, k as i32)?;
            check(
                echo == data && st.source == peer && st.bytes == len,
                "arecv echo",
            )?;
            // Nonblocking owned vectors, both directions at once.
            let recv = comm.irecv(vec![0u8; len], peer, 1000 + k as i32)?;
            let send = comm.isend(data.clone(), peer, 1000 + k as i32)?;
            let mut reqs = [recv, send];
            let done = ferry::wait_all(&mut reqs)?;
            let mut done = done.into_iter();
            check(done.next().unwrap().into_vec::<u8>()? == data, "owned echo")?;
        } else {
            let mut buf = vec![0u8; len];
            let st = comm.recv(&mut buf, ANY_SOURCE, ANY_TAG)?;
            check(st.tag == k as i32 && buf == data, "blocking recv")?;
            comm.send(&buf, peer, k as i32)?;
            let mut r = comm.irecv(vec![0u8; len], peer, 1000 + k as i32)?;
            let got = r.wait()?.into_vec::<u8>()?;
            check(got == data, "owned recv")?;
            let mut s = comm.isend(got, peer, 1000 + k as i32)?;
            s.wait()?;
        }
    }
    // Typed elements, synchronous mode, matched probe, scope.
    let words: Vec<u64> = (0..100_000).map(|i| i * 3).collect();
    if me == 0 {
        comm.ssend(&words, peer, 7)?;
        let mut back = vec![0u64; words.len()];
        comm.scope(|s| -> Result<()> {
            let r = s.irecv(&mut back, peer, 8)?;
            r.wait()?;
            Ok(())
        })?;
        check(back == words, "scope echo")?;
    } else {
        let (msg, st) = comm.mprobe(peer, 7)?;
        check(st.count(8) == Some(words.len()), "mprobe count")?;
        let (got, _) = msg.arecv::<u64>()?;
        check(got == words, "mprobe arecv")?;
        comm.scope(|s| -> Result<()> {
            s.isend(&got, peer, 8)?;
            Ok(())
        })?;
    }
    Ok(())
}

fn threads(comm: &Comm) -> Result<()> {
    let peer = 1 - comm.rank();
    let rounds = 300;
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..4)
            .map(|t| {
                let comm = comm.clone();
                s.spawn(move || -> Result<()> {
                    for i in 0..rounds {
                        let len = if i % 25 == 0 {
                            100_000
                        } else {
                            1 + (i * 7) % 500
                        };
                        let recv = comm.irecv(vec![0u32; len], peer, t)?;
                        let data: Vec<u32> = (0..len as u32)
                            .map(|x| x ^ (i as u32) ^ (t as u32))
                            .collect();
                        let send = comm.isend(data.clone(), peer, t)?;
                        let mut reqs = [recv, send];
                        let mut got = None;
                        while let Outcome::Completed((idx, c)) = ferry::wait_any(&mut reqs)? {
                            if idx == 0 {
                                got = Some(c.into_vec::<u32>()?);
                            }
                        }
                        check(got.as_deref() == Some(&data[..]), "thread exchange")?;
                    }
                    Ok(())
                })
            })
            .collect();
        handles
            .into_iter()
            .try_for_each(|h| h.join().unwrap_or_else(|_| check(false, "thread panicked")))
    })
}

/// Rank 1 exits without a word (exit code 0, so that `ferryrun` lets rank
/// 0 finish); rank 0's blocking receive from it must end with a peer error
/// (not hang), whatever the wait mode.
fn peer_death(comm: &Comm) -> Result<()> {
    if comm.rank() == 1 {
        std::thread::sleep(std::time::Duration::from_millis(200));
        std::process::exit(0);
    }
    let mut buf = [0u8; 8];
    let start = std::time::Instant::now();
    match comm.recv(&mut buf, 1, 0) {
        Err(ferry::Error::Peer(ferry::ferry_core::PeerError::Died { rank: 1 })) => {
            eprintln!("rank 0: peer death seen after {:?}", start.elapsed());
            Ok(())
        }
        Err(e) => Err(e),
        Ok(_) => check(false, "a receive from a dead peer succeeded"),
    }
}

fn check(ok: bool, what: &'static str) -> Result<()> {
    if ok {
        Ok(())
    } else {
        Err(ferry::Error::Internal(what))
    }
}

fn main() -> ExitCode {
    let mode = std::env::args().nth(1).unwrap_or_else(|| "pingpong".into());
    let run = || -> Result<i32> {
        let world = ferry::init()?;
        let comm = world.world();
        if comm.size() != 2 {
            return Err(ferry::Error::Internal("api_smoke needs exactly 2 ranks"));
        }
        match mode.as_str() {
            "pingpong" => pingpong(&comm)?,
            "threads" => threads(&comm)?,
            "peer-death" => {
                peer_death(&comm)?;
                println!("api_smoke {mode} ok rank 0");
                // The job's other rank is gone: no collective finalize.
                std::process::exit(0);
            }
            _ => return Err(ferry::Error::Internal("unknown mode")),
        }
        let rank = comm.rank();
        let c = world.counters();
        // One write for the whole line, so ranks sharing stderr do not
        // interleave inside it.
        let line = format!(
            "rank {rank}: device {} sleeps {} wake-ups device {} kick {} timeout {}\n",
            c.device, c.sleeps, c.wakeups_device, c.wakeups_kick, c.wake_timeouts
        );
        let _ = std::io::Write::write_all(&mut std::io::stderr(), line.as_bytes());
        world.finalize()?;
        Ok(rank)
    };
    match run() {
        Ok(rank) => {
            println!("api_smoke {mode} ok rank {rank}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            // One write, so that ranks failing at once do not interleave
            // their messages (eprintln! writes piece by piece).
            let line = format!("api_smoke {mode} failed: {e}\n");
            let _ = std::io::Write::write_all(&mut std::io::stderr(), line.as_bytes());
            ExitCode::FAILURE
        }
    }
}
