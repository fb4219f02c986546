//! The device on `verbs;ofi_rxm`, the one provider of Debian's libfabric
//! 1.17 that needs registration modes (`tcp;ofi_rxm` needs none, `shm` only
//! FI_MR_VIRT_ADDR): FI_MR_LOCAL, FI_MR_PROV_KEY, FI_MR_VIRT_ADDR and
//! FI_MR_ALLOCATED. It needs an RDMA device: `ci/verbs.sh` runs these
//! inside its Soft-RoCE VM with `FERRY_OFI_RDMA_REQUIRE=1`, which makes
//! every test here fail, rather than skip, when the provider is missing or
//! stops demanding FI_MR_LOCAL. Elsewhere each test skips, saying so.
//!
//! On Soft-RoCE the provider also needs `FI_UNIVERSE_SIZE` of at most 127
//! (see the crate docs), which `ci/verbs.sh` sets.

use ferry_core::ByteStorage;

use super::*;
use crate::sys;

/// The provider these tests run on.
pub(super) const PROVIDER: &str = "verbs;ofi_rxm";

/// The modes the provider is known to demand on rxe.
const DEMANDED: u64 = sys::FI_MR_LOCAL as u64
    | sys::FI_MR_PROV_KEY as u64
    | sys::FI_MR_VIRT_ADDR as u64
    | sys::FI_MR_ALLOCATED as u64;

fn required() -> bool {
    std::env::var("FERRY_OFI_RDMA_REQUIRE").as_deref() == Ok("1")
}

/// The provider's MR modes, if it can be used here; `None` (after saying
/// so) skips the test, and panics under `FERRY_OFI_RDMA_REQUIRE=1`.
pub(super) fn present(test: &str) -> Option<u64> {
    match crate::info::choose(Some(PROVIDER)) {
        Ok(c) => c.info.first().map(|e| e.mr_mode()),
        Err(e) => {
            assert!(
                !required(),
                "{test}: {PROVIDER} is not usable here, and FERRY_OFI_RDMA_REQUIRE=1: {e}"
            );
            eprintln!("SKIPPED {test}: no {PROVIDER} here (needs an RDMA device: ci/verbs.sh)");
            None
        }
    }
}

/// The check CI relies on: the provider demands local registration (else
/// the rest of this module would test nothing of it), and the device
/// follows every mode: its eager buffers carry descriptors, a region's
/// remote address is its virtual address, and its key is the provider's
/// (4 bytes on verbs).
#[test]
fn demands_local_registration_and_the_device_follows() {
    let Some(mode) = present("demands_local_registration") else {
        return;
    };
    assert_eq!(
        mode & DEMANDED,
        DEMANDED,
        "{PROVIDER} no longer demands local|prov_key|virt_addr|allocated: mr_mode {mode:#x}"
    );
    let mut devs = devices(2, opts(PROVIDER), "mrmodes");
    for d in &devs {
        assert!(d.mem.mr_local());
        assert!(d.sends.bufs().iter().all(|b| b.desc != 0), "send buffers");
        assert!(
            d.recvs.posted_bufs().all(|b| b.desc != 0),
            "posted receive buffers"
        );
        assert!(d.mem.bounce_mrs() > 0);
    }
    let buf = Buf::from(vec![5u8; 100_000]);
    let addr = buf.as_slice().as_ptr() as u64;
    let (src, key) = devs[0].register(1, buf, Access::RemoteRead).unwrap();
    assert_eq!(key.addr, addr, "FI_MR_VIRT_ADDR: the virtual address");
    assert!(
        key.key <= u64::from(u32::MAX),
        "a verbs rkey: {:#x}",
        key.key
    );
    let mut sinks = recorders(2, false);
    let (dst, _) = devs[1]
        .register(0, Buf::zeroed(100_000).unwrap(), Access::LocalWrite)
        .unwrap();
    rma_retry(
        &mut devs,
        &mut sinks,
        1,
        RdmaDir::Get,
        0,
        key,
        dst,
        100_000,
        OpToken(1),
    )
    .unwrap();
    drive(&mut devs, &mut sinks, |s| !s[1].rdma().is_empty());
    assert_eq!(sinks[1].rdma(), vec![(OpToken(1), Ok(()))]);
    assert_eq!(
        devs[1].deregister(dst).unwrap().to_vec(),
        vec![5u8; 100_000]
    );
    assert!(devs[0].deregister(src).is_some());
}

/// Read-only memory (a `static`, as an application's constant send buffer
/// is): verbs pins every region for local writing, which such pages refuse.
struct Static(&'static [u8]);

impl ByteStorage for Static {
    fn bytes(&self) -> &[u8] {
        self.0
    }
    fn bytes_mut(&mut self) -> &mut [u8] {
        &mut []
    }
    fn into_any(self: Box<Self>) -> Box<dyn std::any::Any + Send> {
        self
    }
}

const RODATA_LEN: usize = 200_000;
static RODATA: [u8; RODATA_LEN] = {
    let mut a = [0u8; RODATA_LEN];
    let mut i = 0;
    while i < RODATA_LEN {
        a[i] = (i % 251) as u8;
        i += 1;
    }
    a
};

/// A read-only region is the source of a peer's `get` and of this rank's
/// `put`, on any provider.
pub(super) fn read_only_memory_is_a_source(provider: &str) {
    let mut devs = devices(2, opts(provider), "rodata");
    let mut sinks = recorders(2, false);
    let ro = || Buf::from_storage(Box::new(Static(&RODATA)));
    let (src, key) = devs[0].register(1, ro(), Access::RemoteRead).unwrap();
    // Only a provider that pins pages for writing needs the copy; verbs
    // does so through libfabric's registration cache, which ci/verbs.sh
    // turns off for these tests (FI_MR_CACHE_MONITOR=disabled): then it
    // registers the pages as they are. Either way the data must arrive.
    let pins = provider == PROVIDER;
    assert!(devs[0].mem.copies() <= usize::from(pins));
    let (dst, _) = devs[1]
        .register(0, Buf::zeroed(RODATA_LEN).unwrap(), Access::LocalWrite)
        .unwrap();
    rma_retry(
        &mut devs,
        &mut sinks,
        1,
        RdmaDir::Get,
        0,
        key,
        dst,
        RODATA_LEN,
        OpToken(1),
    )
    .unwrap();
    drive(&mut devs, &mut sinks, |s| !s[1].rdma().is_empty());
    assert_eq!(sinks[1].rdma(), vec![(OpToken(1), Ok(()))]);
    assert!(devs[1].deregister(dst).unwrap().as_slice() == &RODATA[..]);
    let back = devs[0].deregister(src).unwrap();
    assert_eq!(
        back.as_slice().as_ptr(),
        RODATA.as_ptr(),
        "the caller's buffer comes back"
    );
    // And as the local source of a put.
    let (target, key) = devs[1]
        .register(0, Buf::zeroed(RODATA_LEN).unwrap(), Access::RemoteWrite)
        .unwrap();
    let (local, _) = devs[0].register(1, ro(), Access::LocalRead).unwrap();
    assert!(devs[0].mem.copies() <= usize::from(pins));
    rma_retry(
        &mut devs,
        &mut sinks,
        0,
        RdmaDir::Put,
        1,
        key,
        local,
        RODATA_LEN,
        OpToken(2),
    )
    .unwrap();
    drive(&mut devs, &mut sinks, |s| !s[0].rdma().is_empty());
    assert_eq!(sinks[0].rdma(), vec![(OpToken(2), Ok(()))]);
    assert!(devs[1].deregister(target).unwrap().as_slice() == &RODATA[..]);
    assert!(devs[0].deregister(local).is_some());
    assert_eq!(devs[0].registrations() + devs[1].registrations(), 0);
    assert_eq!(devs[0].mem.copies(), 0);
}

/// Scattered bytes (a segmented [`Buf`]): no address range to register.
struct Scattered(Vec<u8>);

impl ferry_core::Segments for Scattered {
    fn len(&self) -> usize {
        self.0.len()
    }
    fn gather(&self, offset: usize, out: &mut [u8]) {
        out.copy_from_slice(&self.0[offset..offset + out.len()]);
    }
    fn scatter(&mut self, offset: usize, data: &[u8]) {
        self.0[offset..offset + data.len()].copy_from_slice(data);
    }
}

/// A segmented buffer is refused for every access, comes back intact, and
/// leaves no registration behind (the engine never asks: it sends such
/// buffers in fragments).
pub(super) fn a_segmented_buffer_is_refused(provider: &str) {
    let mut devs = devices(1, opts(provider), "segmented");
    for access in [
        Access::RemoteRead,
        Access::LocalRead,
        Access::RemoteWrite,
        Access::LocalWrite,
    ] {
        let buf = Buf::segmented(Box::new(Scattered(vec![9; 70_000])));
        let (e, back) = devs[0].register(0, buf, access).unwrap_err();
        assert!(
            matches!(e, Error::Usage(UsageError::Unsupported(_))),
            "{access:?}: {e}"
        );
        assert!(!back.is_contiguous() && back.len() == 70_000);
    }
    assert_eq!(devs[0].registrations(), 0);
}

/// A transfer longer than the provider's `max_msg_size` (8 MiB on rxe),
/// both ways.
pub(super) fn rma_longer_than_max_msg_size(provider: &str) {
    let mut devs = devices(2, opts(provider), "longrma");
    let mut sinks = recorders(2, false);
    let len = (20 << 20) + 5;
    let data: Vec<u8> = (0..len).map(|i| (i % 253) as u8).collect();
    let (src, key) = devs[0]
        .register(1, Buf::from(data.clone()), Access::RemoteRead)
        .unwrap();
    let (dst, _) = devs[1]
        .register(0, Buf::zeroed(len).unwrap(), Access::LocalWrite)
        .unwrap();
    rma_retry(
        &mut devs,
        &mut sinks,
        1,
        RdmaDir::Get,
        0,
        key,
        dst,
        len,
        OpToken(7),
    )
    .unwrap();
    drive(&mut devs, &mut sinks, |s| !s[1].rdma().is_empty());
    assert_eq!(
        sinks[1].rdma(),
        vec![(OpToken(7), Ok(()))],
        "one completion"
    );
    assert!(devs[1].deregister(dst).unwrap().as_slice() == &data[..]);
    let (target, key) = devs[1]
        .register(0, Buf::zeroed(len).unwrap(), Access::RemoteWrite)
        .unwrap();
    rma_retry(
        &mut devs,
        &mut sinks,
        0,
        RdmaDir::Put,
        1,
        key,
        src,
        len,
        OpToken(8),
    )
    .unwrap();
    drive(&mut devs, &mut sinks, |s| !s[0].rdma().is_empty());
    assert_eq!(
        sinks[0].rdma(),
        vec![(OpToken(8), Ok(()))],
        "one completion"
    );
    assert!(devs[1].deregister(target).unwrap().as_slice() == &data[..]);
    assert!(devs[0].deregister(src).is_some());
}

mod verbs_rxm {
    use super::{present, PROVIDER};

    macro_rules! on_verbs {
        ($($name:ident),* $(,)?) => {
            $(#[test] fn $name() {
                if present(stringify!($name)).is_some() {
                    super::super::$name(PROVIDER)
                }
            })*
        };
    }

    on_verbs!(
        into_payload_parks_at_most_max_parked_bounce_buffers,
        rma_local_checks_and_in_flight_regions,
        registration_cost,
    );

    #[test]
    fn read_only_memory_is_a_source() {
        if present("read_only_memory_is_a_source").is_some() {
            super::read_only_memory_is_a_source(PROVIDER);
        }
    }

    #[test]
    fn engine_with_rma() {
        if present("engine_with_rma").is_some() {
            super::super::engine::run(PROVIDER, true);
        }
    }

    #[test]
    fn engine_without_rma() {
        if present("engine_without_rma").is_some() {
            super::super::engine::run(PROVIDER, false);
        }
    }

    #[test]
    fn a_segmented_buffer_is_refused() {
        if present("a_segmented_buffer_is_refused").is_some() {
            super::a_segmented_buffer_is_refused(PROVIDER);
        }
    }

    #[test]
    fn rma_longer_than_max_msg_size() {
        if present("rma_longer_than_max_msg_size").is_some() {
            super::rma_longer_than_max_msg_size(PROVIDER);
        }
    }
}
