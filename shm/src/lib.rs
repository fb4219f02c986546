//! # ferry-shm
//!
//! ferry's shared-memory device: the transport between ranks on one node.
//! It implements [`ferry_core::Device`]: small packets travel through
//! per-pair fastbox rings, other eager packets through cells in one shared
//! segment, large messages by a single copy with
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
//! - **Fastboxes for small packets** (as Open MPI vader's fast boxes, UCX
//!   sysv's rings and MPICH's fastboxes): for every ordered pair of local
//!   ranks, a ring of [`ShmOptions::fastbox_slots`] slots (default 64) of
//!   [`ShmOptions::fastbox_slot_size`] bytes (default 256: an 8-byte
//!   control word, then header and payload inline). A packet that fits
//!   goes into the sender's next slot if it is free, else by cell, so the
//!   rings add no back-pressure. One fastbox packet moves the cache line(s)
//!   of one slot between the two cores, against 4–6 lines for a cell (free
//!   queue, receive queue tail and link, the cell, its return).
//!   **Per-pair FIFO order across both paths** comes from a per-pair
//!   sequence number in every packet: the receiver delivers a slot only when
//!   it is the next it expects, and a cell that arrives ahead of its turn
//!   first pulls the slots sent before it (visible by then: they were
//!   published before the cell was enqueued). The protocol, its checks and
//!   its wake-up argument are in the [`fastbox`] module; loom checks it.
//!   Fastboxes are used on nodes with at most
//!   [`ShmOptions::fastbox_max_ranks`] local ranks (default 32), since their
//!   memory is quadratic; `FERRY_SHM_FASTBOX_SLOTS=0` turns them off.
//! - **Eager** packets are copied once into a cell and once out of it. Every
//!   length and index read from shared memory is validated before use
//!   ([`cell::decode`], fuzzed): a corrupted cell is a
//!   [`PeerError::Protocol`](ferry_core::PeerError) for its sender, never an
//!   out-of-bounds access.
//! - **Rendezvous by CMA** (`caps.rdma_get` and `rdma_put`): a registered
//!   buffer is published in the owner's registration table in the segment;
//!   the peer checks its key there, then copies with `process_vm_readv`
//!   (`get`) or `process_vm_writev` (`put`) in 2 MiB steps. At setup every
//!   rank probes CMA on every peer; if the kernel refuses (Yama, seccomp),
//!   `FERRY_SHM_CMA=0`, or (with `FERRY_SHM_CMA` unset) the CPU runs under a
//!   hypervisor ([`cma_choice`]), all ranks turn it off together and the engine's
//!   fragmented protocol becomes a **pipelined copy through the cells**
//!   (bounce buffers of `cell_size` bytes). See *Performance* for which is
//!   faster where.
//! - **ARecv zero-copy**: an eager message in a cell taken with
//!   [`Incoming::into_payload`](ferry_core::device::Incoming) (an
//!   unexpected message, or an `arecv`) is handed over *in its cell*: the
//!   `Buf`'s bytes are the cell's, and dropping the `Buf` returns the cell
//!   to its owner. At most half of an owner's cells can be parked like
//!   this at once; beyond that the payload is copied and the cell returned
//!   at once, so parked cells can never starve a sender (the **parking
//!   rule**, see the `incoming` module). A fastbox packet's payload is
//!   copied (it is small, and its slot must be freed soon).
//! - **Passive waiting** (`caps.wait_fd`): [`Device::arm`] raises the
//!   receiver's `sleeping` flag and re-checks its queue and the next slot
//!   of every fastbox ring towards it; a sender, after enqueueing or
//!   publishing a slot, takes the flag with an atomic swap and only if it
//!   was set sends one datagram to the receiver's wake socket, on a socket
//!   connected to it at setup (no other process can reach it: see the
//!   `setup` module and `SECURITY.md`). So
//!   the send path makes **no system call while the receiver is awake**,
//!   and no wake-up is lost (the Dekker arguments are in the `queue` and
//!   [`fastbox`] modules). The
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
//! `page(128 + N·2944) + page(N·C·⌈(96 + S)/64⌉·64) + page(N²·K·Z)`
//!
//! for `N` local ranks, `C` cells per rank, `S` payload bytes per cell, `K`
//! fastbox slots per ring and `Z` bytes per slot (2944 bytes is the
//! per-rank block: queue heads and tails, flags, the 64-entry registration
//! table; `page` rounds up to 4 KiB; `K` is 0 above
//! [`ShmOptions::fastbox_max_ranks`]). The cells are linear in `N`, the
//! fastboxes quadratic: `K·Z` = 16 KiB per ordered pair with the defaults.
//! With the defaults (`S` = 64 KiB, `C` = 64, `K` = 64, `Z` = 256, up to
//! 32 ranks), as printed by the test `memory_formula_figures`:
//!
//! | local ranks | segment | of which fastboxes | per rank |
//! |---:|---:|---:|---:|
//! | 2 | 8.1 MiB (8 478 720 B) | 64 KiB | 4.04 MiB |
//! | 8 | 33.1 MiB (34 693 120 B) | 1 MiB | 4.14 MiB |
//! | 16 | 68.2 MiB (71 483 392 B) | 4 MiB | 4.26 MiB |
//! | 32 | 144.3 MiB (151 355 392 B) | 16 MiB | 4.51 MiB |
//! | 33 (no fastboxes) | 132.4 MiB (138 780 672 B) | 0 | 4.01 MiB |
//! | 64 | 256.7 MiB (269 152 256 B) | 0 | 4.01 MiB |
//! | 256 | 1026.7 MiB (1 076 596 736 B) | 0 | 4.01 MiB |
//!
//! Fastboxes at 256 ranks would take 1 GiB with the defaults (64 MiB with
//! `K` = 8, `Z` = 128); per-pair rings as deep as the cell pools would need
//! `N²·C·S`: 128 GiB. A ring's pages are touched only once its pair
//! exchanges small packets. `/dev/shm` pages are allocated only when first touched, and the
//! pools are LIFO, so a rank exchanging small messages touches a few cells
//! only. 64 KiB cells make the copy-through-cells rendezvous fast (it
//! matches the engine's default fragment); on nodes with many ranks,
//! `FERRY_SHM_CELL_SIZE=16k` or `FERRY_SHM_CELLS=16` divide the figure
//! (64 cells, as many as MPICH's shared-memory queue, let a window of 64
//! mid-size messages leave without waiting for cells to come back).
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
//! (That table predates the fastboxes; the large-message rows do not
//! involve them.) **Fastboxes**, measured with `ferry-bench` (two
//! processes, `taskset -c 0,1`, 20 000 iterations), medians of 11
//! alternating runs against the previous, cell-only device built from the
//! same tree, on a shared and busy VM (absolute figures are higher than on
//! an idle one; 1 and 4 KiB go by cell in both):
//!
//! | | cells only | fastboxes |
//! |---|---:|---:|
//! | one-way latency p50, 8 B (spin / hybrid) | 0.310 / 0.310 µs | 0.226 / 0.231 µs |
//! | one-way latency min, 8 B (spin / hybrid) | 0.245 / 0.251 µs | 0.185 / 0.190 µs |
//! | one-way latency p50, 64 B (spin / hybrid) | 0.326 / 0.316 µs | 0.226 / 0.226 µs |
//! | one-way latency p50, 1 KiB (cells either way) | 0.356 / 0.351 µs | 0.331 / 0.336 µs |
//! | one-way latency p50, 4 KiB (cells either way) | 0.506 / 0.511 µs | 0.466 / 0.476 µs |
//! | message rate, 8 B, window 64 (spin / hybrid) | 3.95 / 3.50 M/s | 4.80 / 5.08 M/s |
//! | message rate, 64 B, window 64 (spin / hybrid) | 4.04 / 4.02 M/s | 5.13 / 4.28 M/s |
//!
//! The device alone (`examples/device_pingpong.rs`, two threads, no
//! engine) moves an 8-byte packet one way in 83–98 ns by fastbox against
//! 133–146 ns by cell (the quieter runs). Per round trip both paths execute
//! about the same number of instructions (`examples/pingpong_1thread.rs`
//! under callgrind: 5 591 by fastbox, 5 602 by cell, both engines
//! included): the gain is in the cache lines that cross between the cores,
//! and most of the remaining latency is the engine's.
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
//! All `unsafe` code is in the `ffi` modules, `ffi` and `node::ffi` (the
//! node-collective regions), and in `window` (shared one-sided windows'
//! memory as byte slices, its contract at its top; the crate is
//! `#![deny(unsafe_code)]` elsewhere): creating references to the atomics of
//! the mapped segment and viewing cell bodies and fastbox slots as byte
//! slices. Its invariants (bounds from the checked geometry, alignment
//! asserted at compile time, only atomics in shared structures, one owner
//! per cell through a non-forgeable token, fastbox slots viewed through the
//! rank's consumer token) are documented there. System calls go through the
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
//! file (a launcher can remove it by that prefix). Each rank's wake socket
//! is bound in a private (0700) directory `ferry-<job id>-w<random>` that
//! the rank removes at the second setup barrier too; the socket itself
//! vanishes with its process.
//!
//! ## Limitations
//! - A peer that sends a malformed fastbox slot or a packet out of sequence
//!   is a protocol error, and its later packets are dropped (its sequence
//!   can no longer be trusted). A peer that publishes a slot ahead of its
//!   turn and never sends the cells before it stalls only its own packets.
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

mod active;
pub mod cell;
pub mod cma_choice;
mod device;
mod error;
pub mod fastbox;
#[allow(unsafe_code)]
mod ffi;
mod incoming;
mod layout;
pub mod names;
mod node;
mod options;
mod os;
mod queue;
mod rdma;
mod setup;
#[cfg(test)]
mod sync;
#[cfg(test)]
mod tests;
#[allow(unsafe_code)]
pub mod window;

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
