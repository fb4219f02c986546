//! [`OfiDevice::new`]: choosing the provider, opening the endpoint, and
//! exchanging addresses through the bootstrap KVS.

use std::time::Duration;

use ferry_core::device::Caps;
use ferry_core::wire::MAX_HEADER;
use ferry_core::{Bootstrap, Rank};

use crate::buffers::{RecvBufs, SendBufs};
use crate::cq::Completions;
use crate::device::OfiDevice;
use crate::eager::MAX_RANKS;
use crate::error::OfiError;
use crate::failure::Watch;
use crate::ffi::Fabric;
use crate::liveness::{random_32, Listener, Liveness};
use crate::peers::Peers;
use crate::rma::Registrations;
use crate::transfers::Transfers;
use crate::{info, sys, OfiOptions};
use ferry_core::auth::handshake::Gate;
use ferry_core::auth::{job_secret, publish_secret};

/// Concurrent `fi_read`/`fi_write` operations per device.
const RMA_SLOTS: usize = 256;

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
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

/// What a rank publishes: `hexaddr;rma;max_payload;liveness-addr`.
#[derive(Debug, Clone)]
struct Published {
    addr: Vec<u8>,
    rma: bool,
    max_payload: usize,
    live: Option<String>,
}

impl Published {
    fn encode(&self) -> String {
        format!(
            "{};{};{};{}",
            hex(&self.addr),
            u8::from(self.rma),
            self.max_payload,
            self.live.as_deref().unwrap_or("-")
        )
    }

    fn decode(rank: Rank, s: &str) -> Result<Published, OfiError> {
        let bad = |what| OfiError::BadPeer { rank, what };
        let mut it = s.split(';');
        let addr = it
            .next()
            .and_then(unhex)
            .filter(|a| !a.is_empty())
            .ok_or(bad("address is not hex"))?;
        let rma = match it.next() {
            Some("1") => true,
            Some("0") => false,
            _ => return Err(bad("rma flag")),
        };
        let max_payload = it
            .next()
            .and_then(|v| v.parse().ok())
            .ok_or(bad("max payload"))?;
        let live = match it.next() {
            Some("-") => None,
            Some(a) => Some(a.to_owned()),
            None => return Err(bad("liveness address missing")),
        };
        Ok(Published {
            addr,
            rma,
            max_payload,
            live,
        })
    }
}

impl OfiDevice {
    /// Collective setup over every rank that has a peer on this device
    /// (see the crate docs): chooses the provider, opens an RDM endpoint,
    /// and exchanges addresses through `boot`.
    ///
    /// # Errors
    /// [`OfiError::NoProvider`] (listing what `fi_getinfo` offers) when the
    /// provider asked for does not exist here, a libfabric failure, or a
    /// bootstrap failure.
    pub fn new(
        boot: &mut dyn Bootstrap,
        peers: &[Rank],
        opts: OfiOptions,
    ) -> Result<OfiDevice, OfiError> {
        let rank = boot.rank();
        let size = boot.size();
        if u64::from(size) > MAX_RANKS {
            return Err(OfiError::BadOption {
                var: "job size",
                value: size.to_string(),
                expected: "at most 2^24 ranks (the tag's rank field)",
            });
        }
        let chosen = info::choose(opts.provider.as_deref())?;
        let e = chosen.info.first().ok_or(OfiError::NoProvider {
            wanted: opts.provider.clone(),
            offers: Vec::new(),
        })?;
        let provider = e.provider();
        let mr_mode = e.mr_mode();
        let mr_local = mr_mode & u64::from(sys::FI_MR_LOCAL) != 0;
        let manual_progress = e.manual_progress();
        let shm = provider == "shm";
        let eager_size = match opts.eager_size {
            0 if shm => 8192,
            0 => default_eager_size(
                &provider,
                std::env::var("FI_OFI_RXM_BUFFER_SIZE").ok().as_deref(),
            ),
            n => n,
        };
        let recv = match opts.recv_buffers {
            0 if shm => e.rx_size().clamp(64, 4096),
            0 => 64,
            n => n,
        };
        let buf_size = MAX_HEADER + eager_size;
        if buf_size > e.max_msg_size() {
            return Err(OfiError::BadOption {
                var: "FERRY_OFI_EAGER_SIZE",
                value: eager_size.to_string(),
                expected: "at most the provider's max_msg_size",
            });
        }
        let inject_size = e.inject_size().min(buf_size);
        let send = opts.send_buffers.max(1).min(e.tx_size().max(1));
        let cq_size = (recv + send + RMA_SLOTS) * 2;
        // libfabric's shm provider names its region `<pid>:<n>:<n>` in
        // /dev/shm and leaves it there when the process is killed; a later
        // process that gets the same pid (pids wrap at 32768 in many
        // containers) then fails in fi_enable with EBUSY. A name of our own,
        // unique per job, rank and process, cannot collide.
        let region = shm
            .then(|| shm_region_name(boot.job_id(), rank))
            .transpose()?;
        let fabric = Fabric::open(&chosen.info, cq_size, true, region.as_deref())
            .map_err(|f| open_error(&provider, f))?;
        let provider_rma = chosen.rma;
        drop(chosen);

        let fabric_name = fabric.name()?;
        let listener = if opts.liveness && peers.iter().any(|&p| p != rank) {
            Some(Listener::bind(
                opts.liveness_addr.as_deref(),
                &fabric_name,
                shm,
            )?)
        } else {
            None
        };
        if opts.liveness && rank == 0 {
            // The liveness handshakes prove knowledge of the job secret:
            // ferryrun serves one; under another launcher rank 0 publishes
            // fresh bytes before the barrier below (ferry_core::auth).
            publish_secret(boot, random_32()?)?;
        }
        let mine = Published {
            addr: fabric_name,
            rma: opts.rma && provider_rma,
            max_payload: eager_size,
            live: listener.as_ref().map(|l| l.addr.clone()),
        };
        boot.put(&format!("ferry-ofi-addr-{rank}"), &mine.encode())?;
        boot.barrier()?;

        let mut dev = OfiDevice {
            rank,
            caps: Caps {
                name: "ofi",
                max_payload: eager_size,
                eager_preferred: 8192,
                rdma_get: false,
                rdma_put: false,
                wait_fd: fabric.wait_fd().is_some(),
            },
            provider,
            manual_progress,
            peers: Peers::new(size as usize),
            sends: SendBufs::new(inject_size, send),
            recvs: RecvBufs::new(recv, opts.max_parked, buf_size),
            transfers: Transfers::new(RMA_SLOTS),
            cq: Completions::new(recv, send, RMA_SLOTS),
            watch: Watch::default(),
            mem: Registrations::new(mr_mode, mine.rma),
            fabric,
        };
        let mut rma = mine.rma;
        let mut live = Vec::new();
        for &p in peers {
            if p < 0 || p as u32 >= size {
                return Err(OfiError::BadPeer {
                    rank: p,
                    what: "rank outside the job",
                });
            }
            let theirs = if p == rank {
                mine.clone()
            } else {
                Published::decode(p, &boot.get(&format!("ferry-ofi-addr-{p}"))?)?
            };
            let addr = dev.fabric.av_insert(&theirs.addr)?;
            dev.peers.set_addr(p, addr);
            rma &= theirs.rma;
            dev.caps.max_payload = dev.caps.max_payload.min(theirs.max_payload);
            if p != rank {
                if let Some(a) = theirs.live {
                    live.push((p, a));
                }
            }
        }
        dev.caps.rdma_get = rma;
        dev.caps.rdma_put = rma;
        for _ in 0..send {
            let size = dev.recvs.buf_size();
            let b = dev
                .mem
                .new_bounce(&mut dev.fabric, size, u64::from(sys::FI_SEND))?;
            dev.sends.add(b);
        }
        dev.replenish().map_err(OfiError::PostReceives)?;
        if let Some(l) = listener {
            let below = live
                .iter()
                .map(|(r, _)| *r as u32)
                .filter(|&r| r < rank as u32);
            let mut gate = Gate::new(
                job_secret(boot)?,
                boot.job_id(),
                rank as u32,
                below,
                random_32()?,
            );
            let (liveness, refused) = Liveness::connect(
                rank,
                l,
                &live,
                dev.fabric.wait_fd(),
                &mut gate,
                Duration::from_secs(60),
            )?;
            dev.watch.set(liveness, refused);
        }
        dev.handshake(peers, Duration::from_secs(60))?;
        // Nobody sends a packet before everyone has all its hellos, so the
        // handshake's progress calls never see one.
        boot.barrier()?;
        tracing::debug!(
            rank,
            provider = dev.provider,
            rma,
            max_payload = dev.caps.max_payload,
            wait_fd = dev.caps.wait_fd,
            mr_local,
            inject_size,
            "ofi device ready"
        );
        Ok(dev)
    }
}

/// The sink of the handshake: only failures can happen.
#[derive(Debug, Default)]
struct SetupSink {
    failed: Option<(Rank, ferry_core::Error)>,
    rdma: Option<ferry_core::Result<()>>,
}

impl ferry_core::device::Sink for SetupSink {
    fn packet<I: ferry_core::device::Incoming>(&mut self, from: Rank, _packet: I) {
        tracing::warn!(from, "ofi: packet before setup finished dropped");
    }
    fn rdma_done(&mut self, _token: ferry_core::device::OpToken, result: ferry_core::Result<()>) {
        self.rdma = Some(result);
    }
    fn peer_failed(&mut self, peer: Rank, error: ferry_core::Error) {
        self.failed.get_or_insert((peer, error));
    }
}

impl OfiDevice {
    /// Sends a hello to every peer and waits for every peer's: providers
    /// that connect lazily (rxm, shm) would otherwise refuse the first
    /// sends with `-FI_EAGAIN`, and a job's first message would never
    /// complete inside its `isend`.
    fn handshake(&mut self, peers: &[Rank], limit: Duration) -> Result<(), OfiError> {
        use ferry_core::device::{Device, Sent};
        let start = std::time::Instant::now();
        let mut to_send: Vec<Rank> = peers.to_vec();
        let mut sink = SetupSink::default();
        loop {
            let mut err = None;
            to_send.retain(|&p| match self.send_hello(p) {
                Ok(Sent::Done) => false,
                Ok(Sent::Busy) => true,
                Err(e) => {
                    err.get_or_insert(e);
                    false
                }
            });
            let progressed = self.progress(&mut sink);
            if let Some((rank, e)) = sink.failed.take() {
                return Err(OfiError::Handshake(format!("rank {rank}: {e}")));
            }
            if let Some(e) = err.or(progressed.err()) {
                return Err(OfiError::Handshake(e.to_string()));
            }
            if to_send.is_empty() && peers.iter().all(|&p| self.peers.has_hello(p)) {
                return self.warm_up_rma(&mut sink, limit);
            }
            if start.elapsed() > limit {
                let missing: Vec<Rank> = peers
                    .iter()
                    .copied()
                    .filter(|&p| !self.peers.has_hello(p))
                    .collect();
                return Err(OfiError::Handshake(format!(
                    "no hello within {limit:?} from ranks {missing:?}"
                )));
            }
            if to_send.is_empty() {
                std::thread::yield_now();
            }
        }
    }
}

impl OfiDevice {
    /// Reads 8 bytes from this rank itself. rxm over tcp allocates about
    /// 17 MiB of buffers at an endpoint's first RMA: doing it here keeps
    /// that out of the job's first rendezvous (and out of its measured
    /// memory growth).
    fn warm_up_rma(&mut self, sink: &mut SetupSink, limit: Duration) -> Result<(), OfiError> {
        use ferry_core::device::{Access, Device, OpToken, Sent};
        if !self.caps.rdma_get {
            return Ok(());
        }
        let fail = |e: ferry_core::Error| OfiError::Handshake(format!("RMA warm-up: {e}"));
        let me = self.rank;
        let restore = self.peers.stored_addr(me);
        if restore == sys::FI_ADDR_UNSPEC {
            let name = self.fabric.name()?;
            let addr = self.fabric.av_insert(&name)?;
            self.peers.set_addr(me, addr);
        }
        let result = (|| {
            let (src, key) = self
                .register(
                    self.rank,
                    ferry_core::Buf::zeroed(8).map_err(fail)?,
                    Access::RemoteRead,
                )
                .map_err(|(e, _)| fail(e))?;
            let (dst, _) = self
                .register(
                    self.rank,
                    ferry_core::Buf::zeroed(8).map_err(fail)?,
                    Access::LocalWrite,
                )
                .map_err(|(e, _)| fail(e))?;
            let start = std::time::Instant::now();
            while self
                .get(self.rank, key, dst, 8, OpToken(u64::MAX))
                .map_err(fail)?
                == Sent::Busy
            {
                self.progress(sink).map_err(fail)?;
                if start.elapsed() > limit {
                    return Err(fail(ferry_core::Error::Internal(
                        "warm-up read stayed busy",
                    )));
                }
            }
            while sink.rdma.is_none() {
                self.progress(sink).map_err(fail)?;
                if start.elapsed() > limit {
                    return Err(fail(ferry_core::Error::Internal(
                        "warm-up read never completed",
                    )));
                }
            }
            self.deregister(src);
            self.deregister(dst);
            sink.rdma.take().unwrap_or(Ok(())).map_err(fail)
        })();
        // The AV entry stays (AV_TABLE entries cannot be reused); only the
        // rank's reachability is restored.
        self.peers.set_addr(me, restore);
        result
    }
}

/// The error of a failed [`Fabric::open`], with a hint where the cause is
/// known: `ofi_rxm` over verbs opens its completion queue with
/// `(tx + rx) * FI_UNIVERSE_SIZE` entries (256 * 256 unless set), more
/// than a device with a small `max_cqe` (Soft-RoCE: 32767) creates, and
/// `fi_enable` then fails with `-FI_EINVAL`.
fn open_error(provider: &str, f: crate::ffi::Fail) -> OfiError {
    let mut e = OfiError::from(f);
    if let OfiError::Lib {
        what: "fi_enable",
        code,
        message,
    } = &mut e
    {
        if *code == sys::FI_EINVAL as i32 && provider.starts_with("verbs;") {
            message.push_str(
                "; verbs;ofi_rxm sizes its completion queue for FI_UNIVERSE_SIZE peers \
                 (256 unless set): on a device with fewer CQ entries (Soft-RoCE has \
                 32767) set FI_UNIVERSE_SIZE to at most 127",
            );
        }
    }
    e
}

/// The default largest payload for `provider` (not `shm`). Under
/// `ofi_rxm`, a message up to rxm's buffer size (`FI_OFI_RXM_BUFFER_SIZE`,
/// 16 KiB unless set) goes eagerly and a longer one by rxm's own
/// rendezvous or segmentation, so a whole packet, header included, must fit
/// in it: 1 MiB sent in 16 KiB fragments plus their header measured
/// 110-190 MB/s over `tcp;ofi_rxm`, in 16,320-byte ones about 1.4 GB/s.
/// `rxm_buffer` is `FI_OFI_RXM_BUFFER_SIZE`'s value, if set.
fn default_eager_size(provider: &str, rxm_buffer: Option<&str>) -> usize {
    const PLAIN: usize = 16384;
    if !provider.split(';').any(|p| p == "ofi_rxm") {
        return PLAIN;
    }
    let buffer = rxm_buffer
        .and_then(|v| v.trim().parse::<usize>().ok())
        .unwrap_or(PLAIN);
    buffer.saturating_sub(MAX_HEADER).max(MAX_HEADER)
}

/// A name for this rank's shm-provider region
/// ([`ofi_shm_region_name`](ferry_core::shared_files::ofi_shm_region_name)):
/// the job's prefix, the rank, the process and 64 random bits. The provider
/// unlinks its region itself when the endpoint closes; only a killed
/// process leaves one behind, and `ferryrun` sweeps its job's prefix at the
/// end of the job.
fn shm_region_name(job: &str, rank: Rank) -> Result<std::ffi::CString, OfiError> {
    use std::hash::{BuildHasher, Hasher};
    let nonce = std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish();
    let name = ferry_core::shared_files::ofi_shm_region_name(job, rank, std::process::id(), nonce);
    std::ffi::CString::new(name).map_err(|_| OfiError::BadOption {
        var: "job id",
        value: job.to_owned(),
        expected: "no NUL byte",
    })
}

#[cfg(test)]
mod eager_size_tests {
    use super::default_eager_size;

    #[test]
    fn a_refused_fi_enable_on_verbs_names_fi_universe_size() {
        let fail = |what| crate::ffi::Fail {
            what,
            code: crate::sys::FI_EINVAL as i32,
        };
        let text = super::open_error("verbs;ofi_rxm", fail("fi_enable")).to_string();
        assert!(text.contains("FI_UNIVERSE_SIZE"), "{text}");
        let text = super::open_error("tcp;ofi_rxm", fail("fi_enable")).to_string();
        assert!(!text.contains("FI_UNIVERSE_SIZE"), "{text}");
        let text = super::open_error("verbs;ofi_rxm", fail("fi_cq_open")).to_string();
        assert!(!text.contains("FI_UNIVERSE_SIZE"), "{text}");
    }

    #[test]
    fn under_rxm_a_whole_packet_fits_rxms_buffer() {
        assert_eq!(default_eager_size("tcp;ofi_rxm", None), 16320);
        assert_eq!(default_eager_size("verbs;ofi_rxm", Some("65536")), 65472);
        assert_eq!(default_eager_size("tcp;ofi_rxm", Some("junk")), 16320);
        assert_eq!(default_eager_size("tcp;ofi_rxm", Some("10")), 64);
        assert_eq!(default_eager_size("tcp", Some("65536")), 16384);
        assert_eq!(default_eager_size("sockets", None), 16384);
    }
}
