//! ferry-shm: placeholder, being written (issue 3).
