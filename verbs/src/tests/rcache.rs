//! The registration cache (`mr.rs`): every cached path reuses a key only
//! for the memory it registered. Each test frees or remaps memory and gets
//! it back at the same address, and checks that the old key is never used
//! for it: a fresh key for new memory, the new contents read through it,
//! and the old key refused by the HCA once its memory is gone.

use ferry_core::device::{Access, Device, OpToken, Sent};
use ferry_core::recorder::Recorder;
use ferry_core::wire::RemoteKey;
use ferry_core::Buf;

use super::{assert_refused, devices, rdma_present, read_remote, small, vec_at, wait_rdma};
use crate::ffi::testmem::Mapping;
use crate::VerbsDevice;

const LEN: usize = 64 * 1024;

/// Reads `LEN` bytes at `key` of rank 0 into a fresh buffer of rank 1 and
/// returns them.
fn read(devs: &mut [VerbsDevice], key: RemoteKey, sink: &mut Recorder) -> Vec<u8> {
    let (res, buf) = read_remote(devs, key, LEN, sink);
    res.unwrap();
    buf.to_vec()
}

/// A registration attached to an owned `Buf` is reused with it, ends when
/// it drops or its memory leaves it, and is never reused by new memory at
/// the same address.
#[test]
fn attached_registrations_are_reused_and_end_with_their_buffer() {
    if !rdma_present("attached_registrations_are_reused") {
        return;
    }
    let mut devs = devices(2, small());
    let mut sink = Recorder::default();
    let reg = |d: &mut VerbsDevice, b: Buf| d.register(1, b, Access::RemoteRead).unwrap();

    // Reused: the same key, no new registration.
    let (h, k1) = reg(&mut devs[0], Buf::from_vec(vec![1; LEN]));
    let buf = devs[0].deregister(h).unwrap();
    assert_eq!(devs[0].registry.cached().0, 1, "attached to the Buf");
    let (h, again) = reg(&mut devs[0], buf);
    assert_eq!(again, k1, "the attached registration is reused");
    assert_eq!(devs[0].registration_cache_stats(), (1, 1));
    assert!(read(&mut devs, again, &mut sink).iter().all(|&b| b == 1));
    // The receiving side (an engine-allocated buffer, as an ARecv's): its
    // LocalWrite registrations were cached with each zeroed Buf, and ended
    // when `read` dropped it.
    assert_eq!(devs[1].registry.cached().0, 0);

    // Freed: the registration ends with the Buf; new memory at the same
    // address gets a fresh key that reads the new contents.
    let buf = devs[0].deregister(h).unwrap();
    let addr = buf.id();
    drop(buf);
    assert_eq!(devs[0].registry.cached().0, 0, "ended with its Buf");
    let (h, k2) = reg(&mut devs[0], Buf::from_vec(vec_at(addr, LEN, 2)));
    assert_eq!(k2.addr, k1.addr, "same memory");
    assert_ne!(k2.key, k1.key, "a fresh registration");
    assert!(read(&mut devs, k2, &mut sink).iter().all(|&b| b == 2));

    // The memory leaves the Buf (into_vec): the registration ends first, so
    // the same memory wrapped again is registered anew.
    let v = devs[0].deregister(h).unwrap().into_vec().unwrap();
    assert_eq!(devs[0].registry.cached().0, 0, "ended by into_vec");
    let (h, k3) = reg(&mut devs[0], Buf::from_vec(v));
    assert_ne!(k3.key, k2.key);
    // Another device's attachment is never taken for this one's.
    let buf = devs[0].deregister(h).unwrap();
    let (h1, k4) = devs[1].register(0, buf, Access::RemoteRead).unwrap();
    assert_ne!(k4.key, k3.key);
    assert_eq!(devs[0].registry.cached().0, 0, "replaced, so ended");
    let buf = devs[1].deregister(h1).unwrap();

    // Write access for a peer is never cached.
    let (h, w1) = devs[0].register(1, buf, Access::RemoteWrite).unwrap();
    let buf = devs[0].deregister(h).unwrap();
    let (h, w2) = devs[0].register(1, buf, Access::RemoteWrite).unwrap();
    assert_ne!(w1.key, w2.key, "RemoteWrite is registered per use");
    drop(devs[0].deregister(h));

    // A registration that outlives its device is ended by it (no leak, no
    // use of a freed PD when the Buf drops later).
    let (h, _) = reg(&mut devs[0], Buf::from_vec(vec![5; LEN]));
    let survivor = devs[0].deregister(h).unwrap();
    assert_eq!(devs[0].registry.cached().0, 1);

    // The first key, whose memory went: refused.
    assert_refused(&mut devs, k1, &mut sink);
    drop(devs);
    assert!(survivor.iter().all(|&b| b == 5));
    drop(survivor);
}

/// Owned memory that the `Buf` cannot write (a shared read-only block, as
/// the bandwidth benchmark sends): its registration pins the pages for
/// reading only, so a page can be replaced under it (copy-on-write of the
/// zero page on the first write). Its frames are checked at each reuse:
/// the key used always reads the memory mapped now.
#[test]
fn owned_read_only_memory_is_reused_only_on_the_same_pages() {
    let Some(mut devs) = pagemap_devices("owned_read_only_memory_is_reused_only_on_the_same_pages")
    else {
        return;
    };
    let mut sink = Recorder::default();
    let mut m = Mapping::untouched(LEN);
    let reg = |d: &mut VerbsDevice, b: Buf| d.register(1, b, Access::RemoteRead).unwrap();
    let (h, k1) = reg(&mut devs[0], m.read_only());
    let buf = devs[0].deregister(h).unwrap();
    assert_eq!(devs[0].registry.cached().0, 1, "cached, with its frames");
    let (h, k) = reg(&mut devs[0], buf);
    assert_eq!(k, k1, "nothing changed: reused");
    assert!(read(&mut devs, k, &mut sink).iter().all(|&b| b == 0));
    let buf = devs[0].deregister(h).unwrap();
    // The first write: the zero page is replaced by the process's own
    // (unless the pin already made them its own; then the key stays right).
    m.fill(6);
    let (h, k2) = reg(&mut devs[0], buf);
    eprintln!(
        "after copy-on-write: {}",
        if k2 == k1 {
            "same pages, key reused"
        } else {
            "other pages, registered anew"
        }
    );
    assert!(
        read(&mut devs, k2, &mut sink).iter().all(|&b| b == 6),
        "never the old pages"
    );
    drop(devs[0].deregister(h).unwrap());
}

/// Two devices, if there is an RDMA device and the page-frame check works
/// here (it must in the VM).
fn pagemap_devices(test: &str) -> Option<Vec<VerbsDevice>> {
    if !rdma_present(test) {
        return None;
    }
    let devs = devices(2, small());
    if crate::pagemap::Pagemap::open().is_some() {
        return Some(devs);
    }
    assert!(
        std::env::var("FERRY_VERBS_REQUIRE").as_deref() != Ok("1"),
        "no page-frame check in the VM (pagemap needs CAP_SYS_ADMIN)"
    );
    eprintln!("SKIPPED {test}: /proc/self/pagemap gives no frame numbers here");
    None
}

/// Lent memory: a key is reused while the same pages are mapped at its
/// address (new contents included), never after the address was mapped to
/// other pages.
#[test]
fn lent_registrations_are_reused_only_on_the_same_pages() {
    let Some(mut devs) = pagemap_devices("lent_registrations_are_reused_only_on_the_same_pages")
    else {
        return;
    };
    let mut sink = Recorder::default();
    let mut m = Mapping::new(LEN, 1);
    let reg =
        |d: &mut VerbsDevice, m: &mut Mapping| d.register(1, m.lend(), Access::RemoteRead).unwrap();

    let (h, k1) = reg(&mut devs[0], &mut m);
    assert_eq!(k1.addr as usize, m.addr());
    drop(devs[0].deregister(h).unwrap());
    assert_eq!(devs[0].registry.cached().1, 1, "kept after the loan");
    // Same pages: the same key, reading what is there now.
    m.fill(3);
    let (h, again) = reg(&mut devs[0], &mut m);
    assert_eq!(again, k1, "same pages, same key");
    assert!(read(&mut devs, again, &mut sink).iter().all(|&b| b == 3));
    drop(devs[0].deregister(h).unwrap());
    assert_eq!(devs[0].registration_cache_stats(), (1, 1));

    // Other pages at the same address (unmapped and mapped again): the old
    // key is not used; a fresh one reads the new pages.
    m.remap(4);
    let (h, k2) = reg(&mut devs[0], &mut m);
    assert_eq!(k2.addr, k1.addr, "same address");
    assert_ne!(k2.key, k1.key, "other pages, a fresh registration");
    assert_eq!(devs[0].registration_cache_stats(), (1, 2));
    assert!(read(&mut devs, k2, &mut sink).iter().all(|&b| b == 4));
    drop(devs[0].deregister(h).unwrap());
    assert_eq!(
        devs[0].registry.cached().1,
        1,
        "the stale entry was evicted"
    );

    // The receiving side: a lent destination remapped between two reads
    // gets the data in its new pages (a stale lkey would land it in the
    // old ones, which nothing maps any more).
    let mut dst = Mapping::new(LEN, 0);
    for round in 0..2u8 {
        let (hd, _) = devs[1].register(0, dst.lend(), Access::LocalWrite).unwrap();
        sink.events.clear();
        assert_eq!(devs[1].get(0, k2, hd, LEN, OpToken(7)).unwrap(), Sent::Done);
        wait_rdma(&mut devs[1], &mut sink, 1);
        sink.rdma().pop().unwrap().1.unwrap();
        let seen = devs[1].deregister(hd).unwrap();
        assert!(seen.iter().all(|&b| b == 4), "round {round}");
        drop(seen);
        dst.remap(0);
    }
    assert_eq!(devs[1].registration_cache_stats().0, 0, "never reused");

    // The first key, whose pages are no longer mapped: refused.
    assert_refused(&mut devs, k1, &mut sink);
}
