//! The checks of registration and RDMA.

use super::{skip, Bench, DeviceKit, Setup};
use crate::buffer::Buf;
use crate::device::{Access, Device, OpToken};
use crate::envelope::Rank;
use crate::error::{DeviceError, Error};

/// *Memory and RDMA*, *Visibility*: `get` reads a peer's region into a local
/// one and `put` writes a local region into a peer's (to another rank and to
/// itself), byte for byte, at sizes from 1 byte to past a megabyte; each
/// completes once through `rdma_done` with its token; a packet sent after a
/// put's completion finds the data at the target; deregistering gives the
/// buffers back intact.
pub fn get_and_put_move_the_bytes<K: DeviceKit>(mut kit: K) {
    let check = "get_and_put_move_the_bytes";
    if !kit.available(check) {
        return;
    }
    if !kit.expect().rdma {
        return skip(check, "the device has no RDMA (its caps say so)");
    }
    let n = kit.expect().max_ranks.clamp(1, 2);
    let other = n - 1;
    let mut b = Bench::new(&mut kit, n, Setup::Default, false).expect("a default setup");
    let mut token = 0;
    for len in [1usize, 4096, (1 << 20) + 3] {
        let data: Vec<u8> = (0..len).map(|i| (i % 253) as u8).collect();
        // get: `other` reads rank 0's region.
        let (src, key) = b.devs[0]
            .register(
                other as Rank,
                Buf::from_vec(data.clone()),
                Access::RemoteRead,
            )
            .expect("register");
        let (dst, _) = b.devs[other]
            .register(0, Buf::zeroed(len).unwrap(), Access::LocalWrite)
            .expect("register");
        token += 1;
        let t = OpToken(token);
        b.rdma(other, |d| d.get(0, key, dst, len, t));
        b.drive("the get", |s| !s[other].rdma().is_empty());
        assert_eq!(b.sinks[other].rdma(), vec![(t, Ok(()))], "get of {len} B");
        b.sinks[other].events.clear();
        let got = b.devs[other].deregister(dst).expect("deregister");
        assert!(got[..] == data[..], "get of {len} B: the bytes");
        // put: rank 0 writes into `other`'s region, then into its own.
        for target in [other, 0] {
            let (tgt, key) = b.devs[target]
                .register(0, Buf::zeroed(len).unwrap(), Access::RemoteWrite)
                .expect("register");
            let (out, _) = b.devs[0]
                .register(
                    target as Rank,
                    Buf::from_vec(data.clone()),
                    Access::LocalRead,
                )
                .expect("register");
            token += 1;
            let t = OpToken(token);
            b.rdma(0, |d| d.put(target as Rank, out, key, len, t));
            b.drive("the put", |s| !s[0].rdma().is_empty());
            assert_eq!(b.sinks[0].rdma(), vec![(t, Ok(()))], "put of {len} B");
            b.sinks[0].events.clear();
            // Visibility: a packet sent after the completion finds the data.
            b.send(0, target, b"fin", b"");
            b.drive("the FIN", |s| !s[target].packets().is_empty());
            b.sinks[target].events.clear();
            let got = b.devs[target].deregister(tgt).expect("deregister");
            assert!(got[..] == data[..], "put of {len} B to {target}: the bytes");
            let back = b.devs[0].deregister(out).expect("deregister");
            assert!(back[..] == data[..], "the put's source is intact");
        }
        let back = b.devs[0].deregister(src).expect("deregister");
        assert!(back[..] == data[..], "the get's source is intact");
    }
    // Nothing else completes later: once each.
    for _ in 0..20 {
        b.round();
    }
    assert!(
        b.sinks.iter().all(|s| s.rdma().is_empty()),
        "completed once"
    );
}

/// *Memory*: `register` takes the buffer and `deregister` gives the same
/// bytes back, once; an unknown handle is `None`, not a panic.
pub fn deregister_gives_the_buffer_back_once<K: DeviceKit>(mut kit: K) {
    let check = "deregister_gives_the_buffer_back_once";
    if !kit.available(check) {
        return;
    }
    let n = kit.expect().max_ranks.clamp(1, 2);
    let mut devs = kit.devices(n, Setup::Default).expect("a default setup");
    let peer = (n - 1) as Rank;
    for access in [
        Access::RemoteRead,
        Access::RemoteWrite,
        Access::LocalRead,
        Access::LocalWrite,
    ] {
        let data: Vec<u8> = (0..5000u32).map(|i| (i * 3) as u8).collect();
        let (h, _) = devs[0]
            .register(peer, Buf::from_vec(data.clone()), access)
            .expect("register");
        let back = devs[0].deregister(h).expect("the buffer comes back");
        assert!(back[..] == data[..], "{access:?}: the same bytes");
        assert!(devs[0].deregister(h).is_none(), "{access:?}: only once");
    }
}

/// A device without RDMA: its caps say so, and `get` and `put` return
/// [`DeviceError::Unsupported`].
pub fn without_rdma_get_and_put_are_unsupported<K: DeviceKit>(mut kit: K) {
    let check = "without_rdma_get_and_put_are_unsupported";
    if !kit.available(check) {
        return;
    }
    let n = kit.expect().max_ranks.clamp(1, 2);
    let other = n - 1;
    let mut devs = match kit.devices(n, Setup::NoRdma) {
        Some(devs) => devs,
        None if kit.expect().rdma => {
            return skip(check, "the device cannot turn RDMA off");
        }
        // The default devices have no RDMA: check those.
        None => kit.devices(n, Setup::Default).expect("a default setup"),
    };
    for d in &devs {
        for peer in 0..n as Rank {
            let caps = d.caps(peer);
            assert!(!caps.rdma_get && !caps.rdma_put, "caps say no RDMA");
        }
    }
    let (h, key) = devs[0]
        .register(other as Rank, Buf::zeroed(4).unwrap(), Access::RemoteRead)
        .expect("register");
    let (local, _) = devs[other]
        .register(0, Buf::zeroed(4).unwrap(), Access::LocalWrite)
        .expect("register");
    assert!(
        matches!(
            devs[other].get(0, key, local, 4, OpToken(0)),
            Err(Error::Device(DeviceError::Unsupported(_)))
        ),
        "get is unsupported"
    );
    assert!(
        matches!(
            devs[other].put(0, local, key, 4, OpToken(1)),
            Err(Error::Device(DeviceError::Unsupported(_)))
        ),
        "put is unsupported"
    );
    assert!(devs[0].deregister(h).is_some());
}
