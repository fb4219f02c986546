//! The raw API (`isend_raw` / `irecv_raw`, the C ABI's path) must not
//! allocate per message: a loan of the caller's memory is a lent `Buf` (an
//! address, no box), and a small send that completes in its call makes no
//! loan at all. A counting global allocator and a singleton
//! world on the shm device sending to itself; the count is per thread.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use ferry::{Config, DeviceChoice, SendMode};

struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

fn allocations() -> u64 {
    ALLOCATIONS.with(Cell::get)
}

// SAFETY: every method forwards to `System` with the caller's arguments
// unchanged; the counter is a thread-local `Cell` that never allocates.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
        // SAFETY: forwarded; the caller upholds `alloc`'s contract.
        unsafe { System.alloc(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
        // SAFETY: forwarded; `ptr` came from this allocator, i.e. `System`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded; `ptr` came from this allocator, i.e. `System`.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn raw_sends_and_receives_allocate_nothing_when_warm() {
    // The shm device (a singleton's default is the loopback test device,
    // which copies every packet into a vector).
    let config = Config {
        device: DeviceChoice::Shm,
        ..Config::default()
    };
    let world = config.init().expect("singleton init on shm");
    let comm = world.world();
    let mut out = [7u8; 64];
    let mut inb = [0u8; 64];
    let mut round = |i: usize| {
        out[0] = i as u8;
        // SAFETY: both arrays outlive the operations, which are finished
        // (waited for) before the next round touches them.
        let mut r = unsafe { comm.irecv_raw(inb.as_mut_ptr(), inb.len(), 0, 5) }.unwrap();
        // SAFETY: as above.
        let mut s =
            unsafe { comm.isend_raw(out.as_ptr(), out.len(), 0, 5, SendMode::Standard) }.unwrap();
        let sent = s.wait().unwrap().into_status();
        let got = r.wait().unwrap().into_status();
        assert!(sent.ok().is_ok() && got.ok().is_ok());
        assert_eq!((got.bytes, inb[0]), (64, i as u8));
        // The blocking forms lend the same way.
        comm.send(&out[..8], 0, 6).unwrap();
        assert_eq!(comm.recv(&mut inb[..8], 0, 6).unwrap().bytes, 8);
    };
    for i in 0..1_000 {
        round(i);
    }
    let before = allocations();
    for i in 0..10_000 {
        round(i);
    }
    assert_eq!(
        allocations() - before,
        0,
        "allocations in 10 000 warm rounds"
    );
}
