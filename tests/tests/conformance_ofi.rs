//! The conformance suite on the libfabric device, over the two providers
//! Debian's libfabric ships: `tcp;ofi_rxm` (RMA, FI_WAIT_FD, manual
//! progress) and `shm` (RMA, no wait fd in libfabric 1.17: passive waits
//! poll, which the suite accepts when the caps say so). A third
//! instantiation turns RMA off (`FERRY_OFI_RMA=0`), so the engine's
//! fragmented rendezvous runs over ofi too.
//!
//! Needs the `ofi` feature (libfabric-dev): `cargo test -p ferry-tests
//! --features ofi --test conformance_ofi`; `ci/ofi.sh` installs what it
//! needs and runs it.
#![cfg(feature = "ofi")]

ferry_tests::conformance_suite!(
    ofi_tcp,
    env = [
        ("FERRY_DEVICE", "ofi"),
        ("FERRY_OFI_PROVIDER", "tcp;ofi_rxm")
    ],
    ranks = [2, 4],
    hydra = [2],
    expect = [("rdma_get", true), ("drives_transfers", true)],
);

ferry_tests::conformance_suite!(
    ofi_shm,
    env = [("FERRY_DEVICE", "ofi"), ("FERRY_OFI_PROVIDER", "shm")],
    ranks = [2, 4],
    hydra = [2],
    expect = [("rdma_get", true), ("drives_transfers", true)],
);

ferry_tests::conformance_suite!(
    ofi_tcp_nordma,
    env = [
        ("FERRY_DEVICE", "ofi"),
        ("FERRY_OFI_PROVIDER", "tcp;ofi_rxm"),
        ("FERRY_OFI_RMA", "0"),
    ],
    ranks = [2],
    expect = [("rdma_get", false), ("rdma_put", false)],
);
