//! Requests and their completion (MPI 4.1 §3.7 and chapter 13's
//! generalized requests): the request object, the completion calls on one
//! request and on arrays, the paths that complete plain requests without
//! lending them out of the table, and requests freed while pending.

#[allow(unsafe_code)]
pub(crate) mod direct;
pub(crate) mod greq;
#[allow(unsafe_code)]
pub(crate) mod multi;
#[allow(unsafe_code)]
pub(crate) mod object;
#[allow(unsafe_code)]
pub(crate) mod orphan;
#[allow(unsafe_code)]
pub(crate) mod plain;
#[allow(unsafe_code)]
pub(crate) mod post;
#[allow(unsafe_code)]
pub(crate) mod single;
#[allow(unsafe_code)]
pub(crate) mod waiting;

pub(crate) use object::ReqObj;
