//! # ferry-shm
//!
//! ferry's shared-memory device: the transport between ranks on one node.
//! It implements [`ferry_core::Device`]: eager packets travel through cells
//! in one shared segment, large messages by a single copy with
//! cross-memory attach (CMA, `process_vm_readv`), and a rank with nothing to
//! do sleeps in the kernel on one pollable fd.
//!
//! ## Quick start
//! ```no_run
//! use ferry_core::{Bootstrap, Buf, Config, Engine, SpinPark};
//! use ferry_shm::{ShmDevice, ShmOptions};
//!
//! # fn run(boot: &mut dyn Bootstrap) -> Result<(), Box<dyn std::error::Error>> {
//! // Every rank of the job calls this (collective), with its node's ranks.
//! let local: Vec<i32> = (0..boot.size() as i32).collect();
//! let dev = ShmDevice::new(boot, &local, ShmOptions::from_env()?)?;
//! let mut engine = Engine::new(boot.rank(), boot.size(), dev, Config::default())?;
//! if boot.rank() == 0 {
//!     engine.send(1, 7, 0, Buf::from(&b"hello"[..]), &mut SpinPark)?;
//! } else if boot.rank() == 1 {
//!     let done = engine.recv(0, 7, 0, Buf::zeroed(5)?, &mut SpinPark)?;
//!     assert_eq!(&done.buf.unwrap()[..], b"hello");
//! }
//! # Ok(()) }
//! ```
//! `examples/pingpong_shm.rs` is a complete two-process program (it starts
//! itself twice with a file-based test bootstrap).
//!
//! ## Features
//! - **One segment per job per node**, a file in `/dev/shm` created with
//!   `O_EXCL`, mode 0600, named `ferry-<job id>-<64 random bits>`; the lowest
//!   local rank creates it, the others map it, and it is **unlinked** as
//!   soon as every local rank has mapped it (see *Cleanup*). A magic,
//!   version and layout fingerprint at offset 0 are checked by every mapper.
//! - **Bounded memory: per-receiver MPSC queues, not per-pair rings.** Each
//!   rank owns a pool of cells. A sender takes a cell from its *own* pool,
//!   fills it, and enqueues it on the receiver's queue (Vyukov's intrusive
//!   MPSC queue on cell indices, as in MPICH Nemesis); the receiver, once it
//!   has consumed the packet, returns the cell to its owner's free queue. An
//!   empty pool is back-pressure ([`Sent::Busy`](ferry_core::device::Sent)),
//!   never an error. Memory is linear in the number of local ranks (formula
//!   below). The algorithm is model-checked with loom.
//! - **Eager** packets are copied once into a cell and once out of it. Every
//!   length and index read from shared memory is validated before use
//!   ([`cell::decode`], fuzzed): a corrupted cell is a
//!   [`PeerError::Protocol`](ferry_core::PeerError) for its sender, never an
//!   out-of-bounds access.
//! - **Rendezvous by CMA** (`caps.rdma_get` and `rdma_put`): a registered
//!   buffer is published in the owner's registration table in the segment;
//!   the peer checks its key there, then copies with `process_vm_readv`
//!   (`get`) or `process_vm_writev` (`put`) in 2 MiB steps. At setup every
//!   rank probes CMA on every peer; if the kernel refuses (Yama, seccomp) or
//!   `FERRY_SHM_CMA=0`, all ranks turn it off together and the engine's
//!   fragmented protocol becomes a **pipelined copy through the cells**
//!   (bounce buffers of `cell_size` bytes). See *Performance* for which is
//!   faster where.
//! - **ARecv zero-copy**: an eager message taken with
//!   [`Incoming::into_payload`](ferry_core::device::Incoming) (an
//!   unexpected message, or an `arecv`) is handed over *in its cell*: the
//!   `Buf`'s bytes are the cell's, and dropping the `Buf` returns the cell
//!   to its owner. At most half of an owner's cells can be parked like
//!   this at once; beyond that the payload is copied and the cell returned
//!   at once, so parked cells can never starve a sender (the **parking
//!   rule**, see the `incoming` module).
//! - **Passive waiting** (`caps.wait_fd`): [`Device::arm`] raises the
//!   receiver's `sleeping` flag and re-checks its queue; a sender, after
//!   enqueueing, takes the flag with an atomic swap and only if it was set
//!   sends one datagram to the receiver's abstract Unix socket. So the send
//!   path makes **no system call while the receiver is awake**, and no
//!   wake-up is lost (the Dekker argument is in the `queue` module). The
//!   [`wait_fd`](ferry_core::Device::wait_fd) is an epoll fd holding that socket and a
//!   pidfd per local peer, so a peer's death wakes a sleeper too.
//! - **Peer death** is detected through the pidfds (one `epoll_wait(0)`
//!   every [`ShmOptions::liveness_interval`] progress calls and after every
//!   wake-up) and reported once through `Sink::peer_failed` as
//!   [`PeerError::Died`](ferry_core::PeerError), after the packets the
//!   peer sent before dying have been delivered. Sends to it then fail with
//!   that error.
//!
//! ## Memory
//! The segment takes exactly [`segment_bytes`]`(N, opts)` bytes:
//!
//! `page(128 + N·2944) + page(N·C·⌈(80 + S)/64⌉·64)`
//!
//! for `N` local ranks, `C` cells per rank and `S` payload bytes per cell
//! (2944 bytes is the per-rank block: queue heads and tails, flags, the
//! 64-entry registration table; `page` rounds up to 4 KiB). With the
//! defaults (`S` = 64 KiB, `C` = 32), as printed by the test
//! `memory_formula_figures`:
//!
//! | local ranks | segment | per rank |
//! |---:|---:|---:|
//! | 2 | 4.0 MiB (4 210 688 B) | 2.01 MiB |
//! | 16 | 32.1 MiB (33 669 120 B) | 2.01 MiB |
//! | 64 | 128.4 MiB (134 672 384 B) | 2.01 MiB |
//! | 256 | 513.7 MiB (538 677 248 B) | 2.01 MiB |
//!
//! Per-pair rings of the same depth would need `N²·C·S`: 128 GiB at 256
//! ranks. `/dev/shm` pages are allocated only when first touched, and the
//! pools are LIFO, so a rank exchanging small messages touches a few cells
//! only. 64 KiB cells make the copy-through-cells rendezvous fast (it
//! matches the engine's default fragment); on nodes with many ranks,
//! `FERRY_SHM_CELL_SIZE=16k` or `FERRY_SHM_CELLS=16` divide the figure.
//!
//! ## Performance
//! Measured with `examples/pingpong_shm.rs` (two processes, engine
//! included, busy-polling) on the 2-core AMD EPYC VM of the CI, best of six
//! runs on an idle machine, default options:
//!
//! | | CMA rendezvous | copies through cells (`FERRY_SHM_CMA=0`) |
//! |---|---:|---:|
//! | one-way latency, 8 B | 0.24 µs | 0.26 µs |
//! | one-way latency, 1 KiB | 0.29 µs | 0.30 µs |
//! | one-way latency, 64 KiB | 6.5 µs | 2.2 µs |
//! | one-way latency, 1 MiB | 72 µs | 23 µs |
//! | one-way latency, 16 MiB | 2.2 ms | 0.80 ms |
//! | bandwidth, 1 MiB, window 8 | 12.8 GB/s | 45 GB/s |
//! | bandwidth, 1 MiB, window 64 | 7.9 GB/s | 17.5 GB/s |
//!
//! Eager messages (up to the engine's eager limit, 8 KiB by default) take
//! the same path either way. For large messages, `process_vm_readv` itself
//! is the limit on this machine: alone, it copies 1 MiB in 70 µs
//! (15 GB/s) and streams 6.5 GB/s from DRAM, while a plain `memcpy` does
//! 58 and 20 GB/s; the device adds about 3 µs to it. The pipelined copy
//! through 64 KiB cells uses both cores (sender and receiver copy at once)
//! and wins at every size when both ranks progress. CMA still has two
//! advantages: it needs no progress from the sender once the RTS is out
//! (the receiver pulls), and it costs one copy of CPU time instead of two.
//! The engine's [`Config::rdma_threshold`](ferry_core::Config) chooses per
//! job: messages between the eager limit and the threshold go through the
//! cells, larger ones by CMA.
//!
//! ## Safety
//! All `unsafe` code is in the `ffi` module (the crate is
//! `#![deny(unsafe_code)]` elsewhere): creating references to the atomics of
//! the mapped segment and viewing cell bodies as byte slices. Its invariants
//! (bounds from the checked geometry, alignment asserted at compile time,
//! only atomics in shared structures, one owner per cell through a
//! non-forgeable token) are documented there. System calls go through the
//! safe interfaces of `rustix` and `nix` (the `os` module).
//!
//! Other processes can write the segment: it is mode 0600, so only the
//! job's own user. A process that breaks the protocol can corrupt messages
//! or make its peers fail with protocol errors, but cannot make this
//! process read or write out of bounds: every length, index and remote key
//! taken from shared memory is checked before use.
//!
//! ## Thread safety
//! [`ShmDevice`] is `Send` (not `Sync`): it is a `&mut self` state machine,
//! meant to live inside the engine behind the caller's lock. The buffers
//! it hands out ([`Buf`](ferry_core::Buf)s holding a cell) are `Send` and
//! may be dropped on any thread: returning a cell is a lock-free push onto
//! its owner's free queue, which any number of threads and processes may
//! do at once.
//!
//! ## Cleanup
//! The segment file exists only between the creator's `open(O_EXCL)` and
//! the second setup barrier, after which the creator unlinks it (also on
//! every error path); the mapping stays valid until the last rank unmaps
//! it (at exit, or when the device and every cell buffer are dropped). A
//! job killed after setup therefore leaves nothing in `/dev/shm`; only a
//! creator killed inside the setup window can leave a `ferry-<job id>-*`
//! file (a launcher can remove it by that prefix). Wake sockets live in the
//! abstract namespace and vanish with their process.
//!
//! ## Limitations
//! - A producer killed *between* the two steps of an enqueue (the tail
//!   exchange and the link store, a few instructions) leaves the receiver's
//!   queue cut at that point: later packets to that receiver stay invisible
//!   (the death itself is still detected and reported). Cells a dead peer
//!   had not yet returned are lost to their owners.
//! - `RemoteKey`s for more than 64 simultaneous remote registrations of one
//!   rank are not published; a peer then checks only the length against its
//!   own buffer.
//!
//! [`Device::arm`]: ferry_core::Device::arm
//! [`Device`]: ferry_core::Device
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod cell;
mod device;
mod error;
#[allow(unsafe_code)]
mod ffi;
mod incoming;
mod layout;
mod options;
mod os;
mod queue;
mod rdma;
mod setup;
#[cfg(test)]
mod sync;
#[cfg(test)]
mod tests;

pub use device::ShmDevice;
pub use error::ShmError;
pub use options::{rank_block_bytes, segment_bytes, ShmOptions};

impl ShmDevice {
    /// The segment size for `local_ranks` ranks with `opts`: the memory
    /// formula of the crate docs (see [`segment_bytes`]).
    pub fn segment_bytes(local_ranks: usize, opts: &ShmOptions) -> usize {
        segment_bytes(local_ranks, opts)
    }
}
