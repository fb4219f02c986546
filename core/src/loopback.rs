//! Placeholder: the loopback device is being written (owned by the sim helper).
