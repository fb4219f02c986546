//! # ferry
//!
//! MPI-style tagged messaging for Rust: point-to-point operations with
//! typed buffers, the full request-completion family (including
//! `REQUEST_EMPTY`, ARecv and MPI 4.1's `get_status_*`), many threads at
//! once, and passive waiting. The engine is [`ferry_core`]; this crate is
//! the API users depend on, and the place where the devices meet it: the
//! choice of device per peer ([`select`]), configuration ([`config`]) and
//! waiting ([`waiter`]). The devices themselves are the crates
//! `ferry-shm`, `ferry-ofi` and `ferry-verbs`; the bootstrap is
//! `ferry-pmi`, the launcher `ferryrun` is `ferry-launch`, and the MPI C
//! ABI on top of this crate (`libmpi_abi.so`) is `ferry-mpi`.
//!
//! ## Quick start
//! ```
//! let world = ferry::init()?; // a singleton here; under `ferryrun -n N`, rank i of N
//! let comm = world.world();
//! let peer = (comm.rank() + 1) % comm.size() as i32;
//!
//! // Nonblocking, owned buffers: the vector comes back on completion.
//! let recv = comm.irecv(vec![0u64; 4], ferry::ANY_SOURCE, 7)?;
//! let send = comm.isend(vec![1u64, 2, 3, 4], peer, 7)?;
//! let mut all = [recv, send];
//! let done = ferry::wait_all(&mut all)?;
//! let got: Vec<u64> = done.into_iter().next().unwrap().into_vec()?;
//! assert_eq!(got, [1, 2, 3, 4]);
//!
//! // Blocking, borrowed slices.
//! comm.send(&[1.5f32, 2.5], peer, 8)?;
//! let mut buf = [0f32; 2];
//! let status = comm.recv(&mut buf, ferry::ANY_SOURCE, 8)?;
//! assert_eq!(status.count(4), Some(2));
//!
//! world.finalize()?;
//! # Ok::<(), ferry::Error>(())
//! ```
//! Run a job with `ferryrun -n 4 target/debug/my-program` (crate
//! `ferry-launch`; `cargo build` at the workspace root builds it), or
//! `mpiexec.hydra -n 4 ...`.
//!
//! ## Buffers: three styles
//! - **Owned** (the default): nonblocking calls take a `Vec<T>` of any
//!   [`Element`] (`bytemuck::Pod`) type and hand it back in the
//!   [`Completion`] ([`Completion::into_vec`], no copy). [`Comm::iarecv`]
//!   lets the library allocate the buffer.
//! - **Scoped** ([`Comm::scope`]): nonblocking calls borrow slices; the
//!   scope completes every request before it returns.
//! - **Raw** (`unsafe`: [`Comm::isend_raw`], [`Comm::irecv_raw`]): pointers
//!   and lengths, for zero-overhead callers and the MPI C ABI (`ferry-mpi`).
//!
//! Blocking calls ([`Comm::send`], [`Comm::recv`], ...) borrow slices.
//!
//! ## Requests
//! One untyped [`Request`] type for every operation, so that any mix goes
//! into [`wait_all`], [`wait_any`], [`wait_some`], their `test_*` forms and
//! [`get_status_all`] / [`get_status_any`] / [`get_status_some`].
//! [`Request::is_empty`] recognises `REQUEST_EMPTY` without a lock.
//! Persistent requests: [`Comm::send_init`], [`Comm::recv_init`],
//! [`Request::start`], [`start_all`]. [`Comm::batch`] lets the device post
//! a window of sends with one doorbell.
//!
//! ## Collectives and communicators
//! Every MPI 4 collective, in three forms: blocking on borrowed slices
//! ([`Comm::allreduce`], [`Comm::bcast`], ...; `*_in_place` for
//! `MPI_IN_PLACE`), nonblocking on owned vectors returning a [`Request`]
//! ([`Comm::iallreduce`], [`Comm::ibarrier`], ...), and persistent
//! ([`Comm::allreduce_init`], ... then [`Request::start`]). Reductions take
//! an [`Op`]. Communicators come from [`Comm::dup`], [`Comm::idup`],
//! [`Comm::split`], [`Comm::split_type`] and [`Comm::create`] with a
//! [`Group`]; their context ids are agreed by every member; a Cartesian
//! grid is a [`topology::CartComm`] ([`Comm::cart`]: coordinates,
//! shifts, subgrids, reorder by node), a distributed graph a
//! [`topology::DistGraphComm`] ([`Comm::dist_graph_adjacent`]), and both
//! have the neighborhood collectives ([`topology::Neighborhood`]:
//! `neighbor_allgather(v)`, `neighbor_alltoall(v)`, blocking and
//! nonblocking). A [`World`] names the process sets of MPI's sessions
//! ([`World::pset_group`]: `mpi://WORLD`, `mpi://SELF`, `mpi://shared`).
//! What a tool lists and reads: [`tools`] (the settings in force, the
//! counters). See the `coll` and `contexts` module docs in the source for
//! the algorithms.
//!
//! ## One-sided communication
//! A [`rma::Window`] of `T`s on every member ([`Comm::win_allocate`]; also
//! over lent memory, dynamic, and shared on a node): `put`, `get`,
//! `accumulate`, `get_accumulate`, `fetch_and_op`, `compare_and_swap`
//! (fetched values come back in owned [`Request`]s, or at once into the
//! caller's slice: [`rma::Window::get_now`], `fetch_and_op_now`, ...), in
//! fence epochs ([`rma::Window::fence_epoch`]), under locks whose guards
//! unlock on drop ([`rma::Window::lock`], [`rma::Window::lock_all`]) or in
//! post/start/complete/wait epochs; misuse is a typed error. When every
//! member shares the node, `win_allocate`'s window lives in shared memory
//! and the origin does each operation itself, in its call (a node
//! window); elsewhere the target applies each operation when its engine
//! progresses, on every device.
//!
//! ## Features
//! - `shm` (default): the shared-memory device; needs nothing but Rust.
//! - `ofi`, `verbs`: the network devices over libfabric and InfiniBand /
//!   RoCE verbs (they need libfabric-dev, or libibverbs-dev and
//!   librdmacm-dev, and clang). Without them, `FERRY_DEVICE=ofi`/`verbs`,
//!   or a job spanning nodes, is a typed [`SetupError`], never a panic.
//!
//! Configuration: [`Config`] and the `FERRY_*` variables (see [`config`]).
//!
//! ## Floors
//! A module uses only modules on its own floor or below it, through
//! `use crate::…` or a `crate::` path (the crate root's re-exports count as
//! the module they come from; an entry such as `select::node` places that
//! child apart from its parent). `ferry-floors` checks it in CI, reading
//! this list. Bottom first:
//! 1. `error`, `config`, `typed`, `group`: the words every module speaks:
//!    errors, configuration, element types, groups.
//! 2. `select::node`, `select::boot`, `select::mixed`, `select::shm`,
//!    `select::ofi`, `select::verbs`, `select::stub`, `select::across`,
//!    `raw::cell`, `raw::fd`, `contexts::pool`: the parts the world's
//!    shared state is made of: the devices and the bootstrap, the engine's
//!    cell, the pool of context ids.
//! 3. `shared`, `waiter`, `progress`, `counters`, `tools`: what a world's
//!    handles share, the engine's lock and waiting on it, the progress
//!    thread, the counters (and the tools interface's variables).
//! 4. `comm`: communicators.
//! 5. `request`, `raw`, `completion`, `persistent`, `p2p`, `batch`:
//!    requests, their completion, and point-to-point operations (the raw
//!    layer, with all the `unsafe` code, both lends requests their
//!    borrowed buffers and runs the blocking operations on slices).
//! 6. `coll`, `contexts`, `create`, `inter`, `idup`, `topology`, `rma`:
//!    collectives, and what is made with them: communicators (context ids
//!    agreed by allreduce; Cartesian grids) and one-sided windows.
//! 7. `world`, `select`, `psets`: the world and [`init`], which makes it,
//!    and the process sets a world names.
//!
//! ## Safety
//! The safe API is sound even when a [`Request`] is leaked with
//! `mem::forget`: nonblocking operations own their buffers (a leaked request
//! leaks its buffer, it never leaves a dangling borrow), and borrowed
//! buffers are only lent inside a call or a scope that completes their
//! requests first. All of this crate's `unsafe` code is in one module,
//! `raw` (the pointer layer and scopes), with a `// SAFETY:` comment on
//! each block; the rest of the crate denies `unsafe`. If completing a borrowed request
//! fails with a fatal device error, the engine is torn down rather than left
//! holding the borrow; later calls report the error.
//!
//! ## Thread safety
//! [`World`], [`Comm`] and [`Request`] are `Send + Sync`; any number of
//! threads may post, test and wait at once (`MPI_THREAD_MULTIPLE`). The
//! engine sits behind one lock that is never held while sleeping; waiting
//! spins, then sleeps in `epoll_wait` on the device's fd and a per-thread
//! eventfd. The protocol that makes this lose no wake-up is in [`waiter`].
//! With `FERRY_ASYNC_PROGRESS=1` ([`Config::async_progress`]) a thread per
//! world, `ferry-progress`, advances transfers and collectives while the
//! application computes, under the same protocol ([`progress`]).
//!
//! ## Cleanup
//! [`World::finalize`] is collective: a barrier with the other ranks, then
//! device teardown (the shm segment was already unlinked at setup) and PMI
//! finalize. Dropping the last handle without finalizing does the safe
//! minimum (teardown and PMI finalize, no barrier). `FERRY_PRINT_COUNTERS=1`
//! prints [`World::counters`] at either. Both stop and join the progress
//! thread, if any, before the device goes.
#![deny(unsafe_code)]
#![warn(missing_docs)]

mod batch;
mod coll;
mod comm;
mod completion;
pub mod config;
mod contexts;
mod counters;
mod create;
mod error;
mod group;
mod idup;
mod inter;
mod p2p;
mod persistent;
pub mod progress;
pub mod psets;
#[allow(unsafe_code)]
mod raw;
mod request;
pub mod rma;
pub mod select;
mod shared;
pub mod tools;
pub mod topology;
mod typed;
pub mod waiter;
mod world;

pub use coll::op::{
    DoubleInt, FloatInt, Integer, LocPair, LongInt, Op, Reducible, ShortInt, TwoInt,
};
pub use comm::{Comm, Hints, CONTEXTS_PER_COMM, FIRST_FREE_CONTEXT, PARTITIONED_CONTEXT};
pub use completion::{
    get_status_all, get_status_any, get_status_some, test_all, test_any, test_some, wait_all,
    wait_all_into, wait_any, wait_some, Outcome,
};
pub use config::{Config, DeviceChoice, ThreadLevel, WaitMode};
pub use counters::Counters;
pub use create::{CommCompare, SplitType, UNDEFINED};
pub use error::{ApiError, ConfigError, Error, Fault, Result, SetupError};
pub use group::{Group, GroupCompare};
pub use idup::PendingComm;
pub use p2p::Message;
pub use persistent::start_all;
pub use raw::coll::{lent, lent_mut};
pub use raw::{RawRequest, Scope, ScopedRequest};
pub use request::{Canceller, Completion, Request};
pub use select::{init, NodeDevice};
pub use typed::Element;
pub use world::World;

pub use ferry_core;
pub use ferry_core::protocol::ProtocolTable;
pub use ferry_core::{
    Bootstrap, BootstrapError, Buf, ByteStorage, ContextId, Rank, Segments, SendMode, Status, Tag,
    ANY_SOURCE, ANY_TAG, PROC_NULL, ROOT, TAG_UB,
};
