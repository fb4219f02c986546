//! [`ShmDevice::new`]: the collective setup.
//!
//! 1. Every rank publishes `ferry-shm-<rank>` = `<pid>-<probe addr>-<probe
//!    bytes>` (its pid, and a 32-byte random buffer for the CMA probe). The
//!    lowest local rank creates the segment (`O_EXCL`, mode 0600, name
//!    `ferry-<job id>-<64 random bits>`), sizes it, initialises the queues,
//!    writes the header with its magic last, and publishes the name as
//!    `ferry-shm-seg-<creator rank>`.
//! 2. **Barrier 1.** The others open and map the segment and check its
//!    header. Everyone claims its rank block and cells, binds its wake socket,
//!    opens a pidfd per peer and, if CMA is requested, reads every peer's
//!    probe buffer with `process_vm_readv`, recording the outcome in its rank
//!    block.
//! 3. **Barrier 2.** The creator unlinks the file: from now on a crash leaks
//!    nothing. Everyone checks that every peer attached, and enables CMA
//!    only if every rank's probe succeeded (so all agree on the caps).
//!
//! Every rank of the job calls `new` (exactly two `Bootstrap::barrier`s),
//! also on nodes with a single rank. A rank whose setup fails after barrier 1
//! still joins barrier 2 before returning its error, so the others fail
//! (a peer did not attach) instead of hanging.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::atomic::Ordering::{Acquire, Release};
use std::sync::Arc;

use ferry_core::device::Caps;
use ferry_core::{Bootstrap, Rank};

use crate::device::{Peer, ShmDevice, Wake, NOT_LOCAL, WAKE_TAG};
use crate::error::ShmError;
use crate::fastbox::{Lane, CTRL_LEN};
use crate::ffi::{header_of, Segment};
use crate::layout::{Geometry, FINGERPRINT, MAGIC, VERSION};
use crate::names;
use crate::options::ShmOptions;
use crate::os::{self, CmaError, Epoll};
use crate::rdma::Rdma;

const PROBE: usize = 32;
/// Published instead of a segment name by a creator that failed.
const CREATE_FAILED: &str = "failed";

/// Removes the segment file when dropped (on every path out of setup).
#[derive(Debug)]
struct Unlink(Option<PathBuf>);

impl Unlink {
    fn now(&mut self) {
        if let Some(path) = self.0.take() {
            if let Err(e) = std::fs::remove_file(&path) {
                tracing::warn!(path = %path.display(), error = %e, "could not unlink the shm segment");
            }
        }
    }
}

impl Drop for Unlink {
    fn drop(&mut self) {
        self.now();
    }
}

fn hex(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(2 * bytes.len());
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if s.len() % 2 != 0 {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

/// What a peer published at step 1.
struct PeerCard {
    pid: u32,
    probe_addr: u64,
    probe: Vec<u8>,
}

fn parse_card(rank: Rank, v: &str) -> Result<PeerCard, ShmError> {
    let bad = || ShmError::Peer(format!("rank {rank} published a malformed shm card {v:?}"));
    let mut it = v.split('-');
    let pid = it.next().and_then(|p| p.parse().ok()).ok_or_else(bad)?;
    let probe_addr = it
        .next()
        .and_then(|a| u64::from_str_radix(a, 16).ok())
        .ok_or_else(bad)?;
    let probe = it
        .next()
        .and_then(unhex)
        .filter(|p| p.len() == PROBE)
        .ok_or_else(bad)?;
    if it.next().is_some() {
        return Err(bad());
    }
    Ok(PeerCard {
        pid,
        probe_addr,
        probe,
    })
}

/// Checks the caller's rank list: sorted, distinct, in the job, with us.
fn check_ranks(boot: &dyn Bootstrap, local_ranks: &[Rank]) -> Result<u32, ShmError> {
    let size = boot.size();
    if local_ranks.windows(2).any(|w| w[0] >= w[1]) {
        return Err(ShmError::Options(
            "local_ranks must be sorted and distinct".into(),
        ));
    }
    if local_ranks.iter().any(|&r| r < 0 || r as u32 >= size) {
        return Err(ShmError::Options(format!(
            "local_ranks contains a rank outside the job of size {size}"
        )));
    }
    local_ranks
        .iter()
        .position(|&r| r == boot.rank())
        .map(|p| p as u32)
        .ok_or_else(|| ShmError::Options("local_ranks does not contain this rank".into()))
}

/// The creator's part of step 1.
fn create(
    dir: &std::path::Path,
    job: &str,
    geo: Geometry,
) -> Result<(Arc<Segment>, Unlink, String), ShmError> {
    let name = names::segment_name(
        job,
        os::random_u64().map_err(ShmError::os("reading /dev/urandom"))?,
    );
    let path = dir.join(&name);
    let file = os::create_segment_file(&path).map_err(ShmError::os("creating the shm segment"))?;
    let unlink = Unlink(Some(path));
    file.set_len(geo.total as u64)
        .map_err(ShmError::os("sizing the shm segment"))?;
    let map = os::map(&file).map_err(ShmError::os("mapping the shm segment"))?;
    let seg = Segment::new(map, geo).map_err(|e| ShmError::Segment(e.into()))?;
    seg.init_queues()
        .map_err(|_| ShmError::Segment("initialising the queues".into()))?;
    let h = seg.header();
    // Relaxed: published by the Release store of the magic below.
    use std::sync::atomic::Ordering::Relaxed;
    h.version.store(VERSION, Relaxed);
    h.nranks.store(geo.nranks, Relaxed);
    h.cell_payload.store(geo.payload as u32, Relaxed);
    h.cells_per_rank.store(geo.cells_per_rank, Relaxed);
    h.fingerprint.store(FINGERPRINT, Relaxed);
    h.total_len.store(geo.total as u64, Relaxed);
    h.fb_slots.store(geo.fb_slots, Relaxed);
    h.fb_slot_size.store(geo.fb_size as u32, Relaxed);
    // Release: publishes the header and the initialised queues; pairs with
    // the Acquire load of the magic in `attach`.
    h.magic.store(MAGIC, Release);
    Ok((Arc::new(seg), unlink, name))
}

/// A non-creator's part of step 2: map and check the creator's segment.
fn attach(dir: &std::path::Path, name: &str, nranks: usize) -> Result<Arc<Segment>, ShmError> {
    if !names::is_segment_name(name) {
        return Err(ShmError::Segment(format!("bad segment name {name:?}")));
    }
    let file =
        os::open_segment_file(&dir.join(name)).map_err(ShmError::os("opening the shm segment"))?;
    let len = file
        .metadata()
        .map_err(ShmError::os("reading the shm segment's size"))?
        .len();
    let map = os::map(&file).map_err(ShmError::os("mapping the shm segment"))?;
    let bad = |what: &str| Err(ShmError::Segment(format!("{name}: {what}")));
    let Some(h) = header_of(&map) else {
        return bad("too short for a header");
    };
    use std::sync::atomic::Ordering::Relaxed;
    // Acquire: pairs with the creator's Release store of the magic.
    if h.magic.load(Acquire) != MAGIC {
        return bad("bad magic");
    }
    if h.version.load(Relaxed) != VERSION || h.fingerprint.load(Relaxed) != FINGERPRINT {
        return bad("built by an incompatible ferry-shm (version or layout differs)");
    }
    let n = h.nranks.load(Relaxed) as usize;
    if n != nranks {
        return bad("created for a different number of local ranks");
    }
    let geo = match Geometry::new(
        n,
        h.cell_payload.load(Relaxed) as usize,
        h.cells_per_rank.load(Relaxed) as usize,
        h.fb_slots.load(Relaxed) as usize,
        h.fb_slot_size.load(Relaxed) as usize,
    ) {
        Some(g) if g.total as u64 == h.total_len.load(Relaxed) && g.total as u64 <= len => g,
        _ => return bad("geometry does not match the file"),
    };
    let seg = Segment::new(map, geo).map_err(|e| ShmError::Segment(e.into()))?;
    Ok(Arc::new(seg))
}

/// Everything step 2 produces for the device.
struct Attached {
    seg: Arc<Segment>,
    consumer: crate::ffi::Consumer,
    pool: Vec<crate::ffi::OwnedCell>,
    cards: Vec<PeerCard>,
    sock: std::os::fd::OwnedFd,
    addrs: Vec<rustix::net::SocketAddrUnix>,
}

fn wake_name(segment: &str, local: usize) -> String {
    format!("{segment}-w{local}")
}

/// Step 2 for every rank.
#[allow(clippy::too_many_arguments)]
fn join(
    boot: &mut dyn Bootstrap,
    local_ranks: &[Rank],
    me: u32,
    opts: &ShmOptions,
    created: Option<(Arc<Segment>, String)>,
    name_key: &str,
    creator: Rank,
) -> Result<(Attached, String), ShmError> {
    let (seg, name) = match created {
        Some(c) => c,
        None => {
            let name = boot.get(name_key)?;
            if name == CREATE_FAILED {
                return Err(ShmError::Peer(format!(
                    "rank {creator} could not create the shm segment (see its log)"
                )));
            }
            (attach(&opts.dir, &name, local_ranks.len())?, name)
        }
    };
    let (consumer, pool) = seg.claim(me).map_err(|e| ShmError::Segment(e.into()))?;
    let mut cards = Vec::with_capacity(local_ranks.len());
    for &r in local_ranks {
        cards.push(parse_card(r, &boot.get(&format!("ferry-shm-{r}"))?)?);
    }
    let addrs = (0..local_ranks.len())
        .map(|l| os::wake_addr(&wake_name(&name, l)))
        .collect::<Result<Vec<_>, _>>()
        .map_err(ShmError::os("building a wake socket address"))?;
    let sock =
        os::wake_socket(&addrs[me as usize]).map_err(ShmError::os("binding the wake socket"))?;
    let cma_ok = opts.cma && probe_cma(me, local_ranks, &cards);
    let block = seg
        .rank(me)
        .ok_or_else(|| ShmError::Segment("rank block missing".into()))?;
    use std::sync::atomic::Ordering::Relaxed;
    // Relaxed: published by the Release store below.
    block.info.pid.store(std::process::id(), Relaxed);
    block.info.job_rank.store(boot.rank() as u32, Relaxed);
    // Release: publishes pid and rank; peers read it (Acquire) after
    // barrier 2.
    block.info.cma_ok.store(if cma_ok { 1 } else { 2 }, Release);
    Ok((
        Attached {
            seg,
            consumer,
            pool,
            cards,
            sock,
            addrs,
        },
        name,
    ))
}

/// Reads every peer's probe buffer; false (with the reason logged) if any
/// read fails or returns the wrong bytes.
/// `opts` with CMA kept only if the setup probe finds it at least as fast
/// as a memcpy ([`ShmOptions::cma_probe`]); only a node with peers can use
/// CMA at all, so a rank alone on its node skips the probe. Each rank
/// decides alone; the exchange below turns CMA off everywhere if any rank
/// declined.
fn decide_cma(mut opts: ShmOptions, local_ranks: usize) -> ShmOptions {
    if opts.cma && opts.cma_probe && local_ranks > 1 {
        let probe = crate::cma_tune::probe();
        opts.cma = probe.prefer_cma();
        tracing::debug!(
            memcpy_gbs = probe.memcpy / 1e9,
            cma_gbs = probe.cma / 1e9,
            cma = opts.cma,
            "CMA against memcpy"
        );
    }
    opts
}

fn probe_cma(me: u32, local_ranks: &[Rank], cards: &[PeerCard]) -> bool {
    for (l, card) in cards.iter().enumerate() {
        if l as u32 == me {
            continue;
        }
        let mut got = [0u8; PROBE];
        match Rdma::probe(card.pid, &mut got, card.probe_addr) {
            Ok(()) if got[..] == card.probe[..] => {}
            Ok(()) => {
                tracing::warn!(
                    peer = local_ranks[l],
                    "CMA probe read the wrong bytes; CMA disabled"
                );
                return false;
            }
            Err(CmaError::Denied) => {
                tracing::warn!(
                    peer = local_ranks[l],
                    "process_vm_readv refused (EPERM: Yama ptrace_scope, seccomp or another \
                     user); rendezvous falls back to copies through the cells"
                );
                return false;
            }
            Err(e) => {
                tracing::warn!(peer = local_ranks[l], error = ?e, "CMA probe failed; CMA disabled");
                return false;
            }
        }
    }
    true
}

impl ShmDevice {
    /// Sets up the device: collective over the **whole job** (every rank calls
    /// it, with the ranks of its own node; it performs exactly two
    /// [`Bootstrap::barrier`]s). `local_ranks` are the job ranks on this node,
    /// sorted, including `boot.rank()`.
    ///
    /// # Errors
    /// - [`ShmError::Options`]: bad options or rank list;
    /// - [`ShmError::Os`]: creating, mapping or binding failed;
    /// - [`ShmError::Segment`]: the segment is not usable by this build;
    /// - [`ShmError::Peer`]: a local peer published garbage or did not attach;
    /// - [`ShmError::Bootstrap`]: the KVS or a barrier failed.
    pub fn new(
        boot: &mut dyn Bootstrap,
        local_ranks: &[Rank],
        opts: ShmOptions,
    ) -> Result<ShmDevice, ShmError> {
        opts.validate()?;
        let me = check_ranks(boot, local_ranks)?;
        let opts = decide_cma(opts, local_ranks.len());
        let rank = boot.rank();
        let job = os::sanitize_job_id(boot.job_id());
        let geo = opts
            .geometry(local_ranks.len())
            .ok_or_else(|| ShmError::Options("segment geometry overflows".into()))?;
        let seed = os::random_u64().map_err(ShmError::os("reading /dev/urandom"))?;
        if opts.cma {
            os::allow_cma_from_any();
        }
        // Stays at this address until `new` returns (after barrier 2), for
        // the peers' CMA probes.
        let mut probe = Box::new([0u8; PROBE]);
        os::random_bytes(&mut probe[..]).map_err(ShmError::os("reading /dev/urandom"))?;
        let card = format!(
            "{}-{:x}-{}",
            std::process::id(),
            probe.as_ptr() as usize,
            hex(&probe[..])
        );
        boot.put(&format!("ferry-shm-{rank}"), &card)?;
        let creator = local_ranks[0];
        let name_key = format!("ferry-shm-seg-{creator}");
        // A creator that fails still publishes (a marker) and joins both
        // barriers, so that its peers fail too instead of waiting forever.
        let (created, mut unlink) = if rank == creator {
            match create(&opts.dir, &job, geo) {
                Ok((seg, unlink, name)) => {
                    boot.put(&name_key, &name)?;
                    (Ok(Some((seg, name))), unlink)
                }
                Err(e) => {
                    boot.put(&name_key, CREATE_FAILED)?;
                    (Err(e), Unlink(None))
                }
            }
        } else {
            (Ok(None), Unlink(None))
        };
        boot.barrier()?;
        let joined =
            created.and_then(|c| join(boot, local_ranks, me, &opts, c, &name_key, creator));
        if let Err(e) = &joined {
            tracing::error!(rank, error = %e, "shm setup failed; joining the last barrier");
        }
        let barrier = boot.barrier();
        unlink.now();
        let (a, name) = joined?;
        barrier?;
        drop(probe);
        finish(a, name, rank, me, local_ranks, boot.size(), &opts, seed)
    }
}

/// Step 3: check the peers, agree on CMA, build the wake-up set.
#[allow(clippy::too_many_arguments)]
fn finish(
    a: Attached,
    name: String,
    rank: Rank,
    me: u32,
    local_ranks: &[Rank],
    size: u32,
    opts: &ShmOptions,
    seed: u64,
) -> Result<ShmDevice, ShmError> {
    let mut cma = true;
    for (l, &r) in local_ranks.iter().enumerate() {
        let block = a
            .seg
            .rank(l as u32)
            .ok_or_else(|| ShmError::Segment("rank block missing".into()))?;
        // Acquire: pairs with each rank's Release store of `cma_ok` (and the
        // claim's swap of `attached`) before barrier 2.
        let attached = block.info.attached.load(Acquire);
        let ok = block.info.cma_ok.load(Acquire);
        if attached == 0 || ok == 0 {
            return Err(ShmError::Peer(format!(
                "rank {r} did not attach to the shm segment"
            )));
        }
        cma &= ok == 1;
    }
    let epoll = Epoll::new().map_err(ShmError::os("creating the epoll set"))?;
    epoll
        .add(&a.sock, WAKE_TAG)
        .map_err(ShmError::os("watching the wake socket"))?;
    let mut peers = Vec::with_capacity(local_ranks.len());
    for (l, card) in a.cards.iter().enumerate() {
        let pidfd = if l as u32 == me {
            None
        } else {
            match os::pidfd(card.pid) {
                Ok(fd) => {
                    epoll
                        .add(&fd, l as u64)
                        .map_err(ShmError::os("watching a peer's pidfd"))?;
                    Some(fd)
                }
                Err(e) => {
                    tracing::debug!(error = %e, "pidfd_open failed; polling kill(pid, 0)");
                    None
                }
            }
        };
        peers.push(Peer {
            pid: card.pid,
            pidfd,
        });
    }
    let mut local_of = vec![NOT_LOCAL; size as usize];
    for (l, &r) in local_ranks.iter().enumerate() {
        local_of[r as usize] = l as u32;
    }
    let geo = *a.seg.geometry();
    if !cma && opts.cma {
        tracing::info!(
            rank,
            "shm: CMA unavailable on this node; using copies through cells"
        );
    }
    tracing::debug!(rank, segment = %name, bytes = geo.total, cma, "shm device ready");
    Ok(ShmDevice {
        caps: Caps {
            name: "shm",
            max_payload: geo.payload,
            // A whole cell: two copies beat a rendezvous handshake up to here.
            eager_preferred: geo.payload,
            rdma_get: cma,
            rdma_put: cma,
            wait_fd: true,
        },
        consumer: a.consumer,
        me,
        rank,
        local_of,
        ranks: local_ranks.to_vec(),
        pool: a.pool,
        peers,
        lanes: vec![Lane::default(); local_ranks.len()],
        active: crate::active::Active::new(local_ranks.len()),
        fb_slots: geo.fb_slots,
        fb_free_at: crate::fastbox::FREE_AT.min(geo.fb_slots / 2).max(1),
        fb_cap: if geo.fb_slots == 0 {
            0
        } else {
            geo.fb_size - CTRL_LEN
        },
        wake: Wake {
            epoll,
            sock: a.sock,
            addrs: a.addrs,
            ready: Vec::with_capacity(local_ranks.len() + 1),
            armed: false,
            drained: 0,
        },
        rdma: Rdma::new(me, seed),
        batch: opts.progress_batch,
        liveness_interval: opts.liveness_interval,
        until_liveness: opts.liveness_interval,
        node: crate::node::Nodes::new(opts.dir.clone()),
        calls: 0,
        check_now: false,
        last_liveness: std::time::Instant::now(),
        max_parked: geo.cells_per_rank / 2,
        broken: None,
        failures: ferry_core::device::PeerFailures::new(local_ranks.len()),
        seg: a.seg,
        name,
    })
}
