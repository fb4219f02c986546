//! Declares the `loom` cfg (the model-checking build of the queue tests), so
//! `RUSTFLAGS="--cfg loom"` passes `unexpected_cfgs` without a lints table
//! (the crate inherits the workspace's `[lints]`).
fn main() {
    println!("cargo::rustc-check-cfg=cfg(loom)");
}
