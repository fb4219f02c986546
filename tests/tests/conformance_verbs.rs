//! The conformance suite on the verbs device (feature `verbs`): every body
//! through `ferryrun` with 2 and 4 ranks, all traffic (self-traffic
//! included) over InfiniBand / RoCE verbs. The bodies cover eager and
//! rendezvous (RDMA READ, the default when the device has `rdma_get`),
//! ARecv, and passive waits.
//!
//! It needs an RDMA device: CI runs it inside the Soft-RoCE VM (`rxe0`)
//! through `ci/verbs.sh`, with `FERRY_VERBS_DEVICE` unset so the default
//! device selection is what is tested. Hydra is not in the VM image, so no
//! `hydra` runs are configured here.
#![cfg(feature = "verbs")]

ferry_tests::conformance_suite!(
    verbs,
    env = [("FERRY_DEVICE", "verbs")],
    ranks = [2, 4],
    expect = [("rdma_get", true)],
);
