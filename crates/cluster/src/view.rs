//! The REST API's answers under their first path: the types live in
//! [`crate::rest::answers`], re-exported here for the code that imports
//! them from `holdfast_cluster::view`.

pub use crate::rest::answers::*;
