//! Free loopback ports for servers that cannot bind port 0 themselves.
//!
//! ZooKeeper needs its ports written into its config file, so the kit has to
//! choose them. Ports are drawn at random from a range below Linux's default
//! ephemeral range (32768–60999), so they do not collide with the kernel's own
//! choices, and each is checked by binding it once. Tests in other processes
//! may still race for the same port; [`crate::ZkCluster`] therefore retries a
//! start whose server reports "Address already in use".

use std::collections::HashSet;
use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use holdfast_types::sync::lock;

use crate::error::{KitError, Result};

const LOW: u16 = 15_000;
const HIGH: u16 = 32_000;
const ATTEMPTS: usize = 1_000;

/// Ports this process handed out already, so that two servers of one test
/// never get the same one.
static HANDED_OUT: Mutex<Option<HashSet<u16>>> = Mutex::new(None);
static COUNTER: AtomicU64 = AtomicU64::new(0);

/// Returns a loopback TCP port that was free a moment ago and that this
/// process has not handed out before.
///
/// ```
/// let port = holdfast_testkit::free_port()?;
/// assert!(port >= 15_000 && port < 32_000);
/// # Ok::<(), holdfast_testkit::KitError>(())
/// ```
pub fn free_port() -> Result<u16> {
    for _ in 0..ATTEMPTS {
        let port = LOW + (random() % u64::from(HIGH - LOW)) as u16;
        let mut handed = lock(&HANDED_OUT);
        let handed = handed.get_or_insert_with(HashSet::new);
        if handed.contains(&port) {
            continue;
        }
        if TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, port))).is_ok() {
            handed.insert(port);
            return Ok(port);
        }
    }
    Err(KitError::Invalid(format!(
        "no free loopback port found in {LOW}..{HIGH} after {ATTEMPTS} attempts"
    )))
}

/// A random number for port choice (not for anything that needs to be secure
/// or reproducible): the standard library's randomly keyed hasher over a
/// counter.
pub(crate) fn random() -> u64 {
    let mut hasher = RandomState::new().build_hasher();
    hasher.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    hasher.write_u32(std::process::id());
    hasher.finish()
}
