//! Placeholder: the matching engine is being written (owned by the matching helper).
