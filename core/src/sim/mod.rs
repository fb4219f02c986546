//! Placeholder: the simulation harness is being written.
