//! The wire format of data connections: [`frame`] is the codec,
//! [`fault`] maps channel faults to `Error` frames and back. Both pure.

pub(crate) mod fault;
pub(crate) mod frame;

#[cfg(test)]
mod tests;
