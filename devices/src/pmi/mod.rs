//! PMI-1: placeholder, being written (issue 3).
