//! `ferry-instr`: the program `benches/instr/run.sh` runs under callgrind
//! to count the instructions one 8-byte message costs each rank.
//!
//! A ping-pong under callgrind cannot simply be counted: the rank that
//! waits spins, and its spin rounds would be counted as message cost. So
//! the program waits by hand (`test` in a loop), counts the rounds that
//! found nothing, and measures what such an idle round costs in a phase of
//! its own, which callgrind dumps separately (`--dump-after=*phase_idle*`).
//! The script then subtracts idle rounds × idle cost.
//!
//! Every API call of interest sits in its own `#[inline(never)]` function
//! (`call_*`), so callgrind's inclusive cost of that function is the cost
//! of the call, whatever the library inlines inside it:
//! - `call_isend`: the sender's `isend` plus taking the buffer back from
//!   the request it returns (empty for an eager send: no wait happens);
//! - `call_irecv`: the receiver's `irecv`;
//! - `call_test_pingpong`: the receiver's `test`s until one completes;
//! - `call_test_idle`: `test` on a receive that nothing will match.
//!
//! With more than 2 ranks, ranks 2 and up only wait in the barriers: they
//! make the node larger, as a bigger job would, for ranks 0 and 1 to poll.
//!
//! It prints one line per rank: `rank R messages N idle_pingpong I
//! idle_phase K`, which the script reads.
//!
//! `ferry-instr blocking N` does the same for the blocking slice API
//! (`Comm::send`, `Comm::recv`: `MPI_Send` and `MPI_Recv`), collected in
//! `call_send_slice` and `call_recv_slice`. A blocking receive waits inside
//! the library, so its idle rounds are the world's spin counter: the idle
//! phase is one receive that spins until the peer, after a pause, sends.

use std::hint::black_box;
use std::process::ExitCode;

use ferry::{Buf, Comm, Rank, Request, SendMode, Tag};

const TAG: Tag = 1;
/// A tag nothing is sent with: the idle phase's receive never matches.
const NEVER: Tag = 0x7fff;
const SIZE: usize = 8;

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ferry-instr: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), String> {
    let mode = std::env::args().nth(1);
    if mode.as_deref() == Some("self") {
        return run_self();
    }
    let blocking = mode.as_deref() == Some("blocking");
    let messages: usize = match std::env::args().nth(if blocking { 2 } else { 1 }) {
        Some(n) => n.parse().map_err(|_| format!("bad message count {n:?}"))?,
        None => 2000,
    };
    // As ferry-bench: one thread, no lock, unless FERRY_THREAD_LEVEL says.
    let mut config = ferry::Config::from_env().map_err(|e| format!("config: {e}"))?;
    if std::env::var("FERRY_THREAD_LEVEL").map_or(true, |v| v.is_empty()) {
        config.thread_level = ferry::ThreadLevel::Funneled;
    }
    if blocking {
        config.wait_mode = ferry::WaitMode::Spin;
    }
    let world = config.init().map_err(|e| format!("init: {e}"))?;
    if world.size() < 2 {
        return Err(format!("needs at least 2 ranks, got {}", world.size()));
    }
    let comm = world.world();
    if world.rank() >= 2 {
        // Bystanders: they only make the node bigger (more rings for ranks
        // 0 and 1 to poll), and wait in the barriers.
        comm.barrier().map_err(|e| format!("barrier: {e}"))?;
        comm.barrier().map_err(|e| format!("barrier: {e}"))?;
        return world.finalize().map_err(|e| format!("finalize: {e}"));
    }
    let (rank, peer) = (world.rank(), 1 - world.rank());
    if blocking {
        return run_blocking(world, &comm, messages);
    }
    let mut side = Side {
        comm: &comm,
        rank,
        peer,
        send: Some(Buf::from_vec(vec![rank as u8; SIZE])),
        recv: Some(Buf::from_vec(vec![0; SIZE])),
    };
    // Warm-up, not collected: first-touch faults, lazily made state.
    ping_pong(&mut side, 200)?;
    let idle_phase = messages;
    phase_idle(&comm, peer, idle_phase)?;
    comm.barrier().map_err(|e| format!("barrier: {e}"))?;
    let idle_pingpong = phase_pingpong(&mut side, messages)?;
    comm.barrier().map_err(|e| format!("barrier: {e}"))?;
    println!(
        "rank {rank} messages {messages} idle_pingpong {idle_pingpong} idle_phase {idle_phase}"
    );
    world.finalize().map_err(|e| format!("finalize: {e}"))
}

/// One rank's half of the ping-pong.
struct Side<'a> {
    comm: &'a Comm,
    rank: Rank,
    peer: Rank,
    send: Option<Buf>,
    recv: Option<Buf>,
}

/// `rounds` tests of a receive nothing matches, then its cancellation.
#[inline(never)]
fn phase_idle(comm: &Comm, peer: Rank, rounds: usize) -> Result<(), String> {
    let mut r = comm
        .irecv_buf(Buf::from_vec(vec![0; SIZE]), None, peer, NEVER)
        .map_err(|e| format!("irecv: {e}"))?;
    for _ in 0..rounds {
        if call_test_idle(&mut r)?.is_some() {
            return Err("a receive nobody sends to completed".into());
        }
    }
    r.cancel().map_err(|e| format!("cancel: {e}"))?;
    r.wait().map_err(|e| format!("wait after cancel: {e}"))?;
    Ok(())
}

/// The collected ping-pong; returns the receive tests that found nothing.
#[inline(never)]
fn phase_pingpong(side: &mut Side<'_>, messages: usize) -> Result<u64, String> {
    ping_pong(side, messages)
}

fn ping_pong(side: &mut Side<'_>, messages: usize) -> Result<u64, String> {
    let mut idle = 0;
    // Each rank sends and receives `messages / 2` times: `messages` one-way
    // messages in all, each counted on both sides.
    for _ in 0..messages / 2 {
        if side.rank == 0 {
            side.send = Some(call_isend(side.comm, side.peer, side.send.take())?);
            idle += receive(side)?;
        } else {
            idle += receive(side)?;
            side.send = Some(call_isend(side.comm, side.peer, side.send.take())?);
        }
    }
    Ok(idle)
}

fn receive(side: &mut Side<'_>) -> Result<u64, String> {
    let mut r = call_irecv(side.comm, side.peer, side.recv.take())?;
    let mut idle = 0;
    loop {
        if let Some(buf) = call_test_pingpong(&mut r)? {
            side.recv = Some(buf);
            return Ok(idle);
        }
        idle += 1;
    }
}

#[inline(never)]
fn call_isend(comm: &Comm, peer: Rank, buf: Option<Buf>) -> Result<Buf, String> {
    let buf = buf.ok_or("send buffer lost")?;
    let mut r = comm
        .isend_buf(black_box(buf), None, peer, TAG, SendMode::Standard)
        .map_err(|e| format!("isend: {e}"))?;
    // An eager send completes in `isend` (an empty request): this takes the
    // buffer back without waiting. Were it pending, the wait would spin and
    // be counted, which the report would show as a jump.
    let done = r.wait().map_err(|e| format!("send wait: {e}"))?;
    done.into_buf()
        .ok_or_else(|| "send buffer not returned".into())
}

#[inline(never)]
fn call_irecv(comm: &Comm, peer: Rank, buf: Option<Buf>) -> Result<Request, String> {
    let buf = buf.ok_or("receive buffer lost")?;
    comm.irecv_buf(black_box(buf), None, peer, TAG)
        .map_err(|e| format!("irecv: {e}"))
}

#[inline(never)]
fn call_test_pingpong(r: &mut Request) -> Result<Option<Buf>, String> {
    match r.test().map_err(|e| format!("test: {e}"))? {
        None => Ok(None),
        Some(done) => {
            done.status.ok().map_err(|e| format!("receive: {e}"))?;
            done.into_buf()
                .map(Some)
                .ok_or_else(|| "receive buffer not returned".into())
        }
    }
}

#[inline(never)]
fn call_test_idle(r: &mut Request) -> Result<Option<Buf>, String> {
    match r.test().map_err(|e| format!("test: {e}"))? {
        None => Ok(None),
        Some(done) => Ok(done.into_buf()),
    }
}

/// `ferry-instr self [PAIRS]` (`benches/instr/c-overhead.sh`): blocking
/// sends and receives of 8 bytes to this rank itself through the slice
/// API (`Comm::send`, `Comm::recv`), which is what `MPI_Send` and
/// `MPI_Recv` of contiguous data map to; the same loop in C
/// (`benches/instr/c_self.c`) gives the C layer's own cost. Nothing waits
/// (the message is there when the receive is posted), so callgrind counts
/// no spin.
fn run_self() -> Result<(), String> {
    let pairs: usize = match std::env::args().nth(2) {
        Some(n) => n.parse().map_err(|_| format!("bad pair count {n:?}"))?,
        None => 4000,
    };
    let mut config = ferry::Config::from_env().map_err(|e| format!("config: {e}"))?;
    // As MPI_Init: one thread.
    config.thread_level = ferry::ThreadLevel::Single;
    let world = config.init().map_err(|e| format!("init: {e}"))?;
    let comm = world.world();
    let me = world.rank();
    let send = [7u8; SIZE];
    let mut recv = [0u8; SIZE];
    // Warm-up (not collected), then the collected pairs.
    for _ in 0..200 {
        call_send_slice(&comm, me, &send)?;
        call_recv_slice(&comm, me, &mut recv)?;
    }
    for _ in 0..pairs {
        call_send_slice(&comm, me, &send)?;
        call_recv_slice(&comm, me, &mut recv)?;
    }
    if recv != send {
        return Err("received bytes differ from those sent".into());
    }
    println!("pairs {pairs}");
    world.finalize().map_err(|e| format!("finalize: {e}"))
}

/// The blocking mode (see the module docs). Both ranks spin while they
/// wait (`WaitMode::Spin`), so every idle round is a counted spin.
fn run_blocking(world: ferry::World, comm: &Comm, messages: usize) -> Result<(), String> {
    let (rank, peer) = (world.rank(), 1 - world.rank());
    let spins = || world.counters().spins;
    let send = [rank as u8; SIZE];
    let mut recv = [0u8; SIZE];
    let mut pingpong = |pairs: usize, recv: &mut [u8]| -> Result<(), String> {
        for _ in 0..pairs {
            if rank == 0 {
                call_send_slice(comm, peer, &send)?;
                call_recv_slice(comm, peer, recv)?;
            } else {
                call_recv_slice(comm, peer, recv)?;
                call_send_slice(comm, peer, &send)?;
            }
        }
        Ok(())
    };
    pingpong(100, &mut recv)?;
    // Each rank in turn waits in one receive while the other pauses.
    let before = spins();
    for waiter in 0..2 {
        comm.barrier().map_err(|e| format!("barrier: {e}"))?;
        if rank == waiter {
            phase_idle_blocking(comm, peer, &mut recv)?;
        } else {
            std::thread::sleep(std::time::Duration::from_millis(300));
            call_send_slice(comm, peer, &send)?;
        }
    }
    comm.barrier().map_err(|e| format!("barrier: {e}"))?;
    // Spins counted in the barriers after the idle receive are few next to
    // the pause's; the count is an upper bound, the idle cost a lower one.
    let idle_phase = spins() - before;
    let before = spins();
    phase_pingpong_blocking(&mut pingpong, messages / 2, &mut recv)?;
    let idle_pingpong = spins() - before;
    comm.barrier().map_err(|e| format!("barrier: {e}"))?;
    if recv != [peer as u8; SIZE] {
        return Err("received bytes differ from those sent".into());
    }
    println!(
        "rank {rank} messages {messages} idle_pingpong {idle_pingpong} idle_phase {idle_phase}"
    );
    world.finalize().map_err(|e| format!("finalize: {e}"))
}

#[inline(never)]
fn phase_idle_blocking(comm: &Comm, peer: Rank, recv: &mut [u8]) -> Result<(), String> {
    call_recv_slice(comm, peer, recv)
}

#[inline(never)]
fn phase_pingpong_blocking(
    pingpong: &mut impl FnMut(usize, &mut [u8]) -> Result<(), String>,
    pairs: usize,
    recv: &mut [u8],
) -> Result<(), String> {
    pingpong(pairs, recv)
}

#[inline(never)]
fn call_send_slice(comm: &Comm, dest: Rank, data: &[u8]) -> Result<(), String> {
    comm.send(black_box(data), dest, TAG)
        .map_err(|e| format!("send: {e}"))
}

#[inline(never)]
fn call_recv_slice(comm: &Comm, source: Rank, buf: &mut [u8]) -> Result<(), String> {
    let status = comm
        .recv(black_box(buf), source, TAG)
        .map_err(|e| format!("recv: {e}"))?;
    black_box(status);
    Ok(())
}
