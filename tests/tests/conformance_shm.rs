//! The conformance suite on the shared-memory device: with CMA (the
//! single-copy rendezvous, when the kernel permits it) and without it
//! (`FERRY_SHM_CMA=0`: the pipelined copy through the cells).
//!
//! Every body runs through `ferryrun` with 2, 4 and 8 ranks (8 is
//! oversubscribed on a 2-core machine, which is the point) and through
//! `mpiexec.hydra` with 2 and 4. The no-CMA instantiation runs 2 and 4
//! ranks: only the rendezvous path differs from the first.

ferry_tests::conformance_suite!(
    shm,
    // CMA asked for explicitly: left to itself, the device times CMA
    // against a memcpy and may choose the copies through cells instead.
    env = [("FERRY_DEVICE", "shm"), ("FERRY_SHM_CMA", "1")],
    ranks = [2, 4, 8],
    hydra = [2, 4],
);

ferry_tests::conformance_suite!(
    shm_nocma,
    env = [("FERRY_DEVICE", "shm"), ("FERRY_SHM_CMA", "0")],
    ranks = [2, 4],
    hydra = [2],
    expect = [("rdma_get", false)],
);
