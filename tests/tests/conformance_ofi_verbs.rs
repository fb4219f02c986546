//! The conformance suite on the libfabric device over `verbs;ofi_rxm`: the
//! one provider of Debian's libfabric 1.17 that needs local registration
//! (FI_MR_LOCAL, with FI_MR_PROV_KEY, FI_MR_VIRT_ADDR and FI_MR_ALLOCATED),
//! so the device's registration of its eager buffers and of rendezvous
//! regions, and the provider's keys and virtual addresses, carry every
//! message. Every body through `ferryrun` with 4 ranks: each rank has
//! three peers, so every registration path runs several times over, and
//! the 2-rank runs (which add no provider path: the tcp;ofi_rxm and
//! verbs device suites run both sizes) would cost CI's emulated VM about
//! a minute of job start-ups.
//!
//! It needs an RDMA device, so it needs the `verbs` feature as well as
//! `ofi`: CI runs it inside the Soft-RoCE VM (`rxe0`) through
//! `ci/verbs.sh`, which first checks that `ferry-info` reports the provider
//! with `mr_mode` including `local` (so this cannot silently test a
//! provider that registers nothing).
#![cfg(all(feature = "ofi", feature = "verbs"))]

ferry_tests::conformance_suite!(
    ofi_verbs,
    env = [
        ("FERRY_DEVICE", "ofi"),
        ("FERRY_OFI_PROVIDER", "verbs;ofi_rxm")
    ],
    ranks = [4],
    expect = [("rdma_get", true), ("drives_transfers", true)],
);
