//! Collective operations: schedules of point-to-point steps and local reductions.
pub mod reduce;
