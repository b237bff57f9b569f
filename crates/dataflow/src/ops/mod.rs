//! The operators inside a chain, each a [`Push`](crate::push::Push) that
//! transforms batches and passes them on: stateless ones ([`stateless`]),
//! event-time assignment ([`timestamps`]), keyed rolling state ([`keyed`]),
//! windows ([`windowed`]) and sinks ([`sink`]).

pub(crate) mod keyed;
pub(crate) mod sink;
pub(crate) mod stateless;
pub(crate) mod timestamps;
pub(crate) mod windowed;
