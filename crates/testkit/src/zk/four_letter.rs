//! ZooKeeper's four-letter-word commands (`srvr`, `stat`, `mntr`, …), spoken
//! straight to a member's real client port.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// What a member says it is, from the `Mode:` line of `srvr`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ZkMode {
    /// A standalone server (no ensemble).
    Standalone,
    /// The ensemble's leader.
    Leader,
    /// A follower that is part of a quorum.
    Follower,
    /// An observer.
    Observer,
    /// A read-only server (partitioned, `readonlymode.enabled`).
    ReadOnly,
    /// Running but not serving: no quorum, still electing, or starting up.
    NotServing,
}

impl ZkMode {
    /// Whether clients can use this member for reads and writes.
    pub fn serves_writes(self) -> bool {
        matches!(self, ZkMode::Standalone | ZkMode::Leader | ZkMode::Follower)
    }
}

/// Sends `word` to `addr` and returns the whole answer.
pub(crate) async fn ask(addr: SocketAddr, word: &str, limit: Duration) -> std::io::Result<String> {
    let exchange = async {
        let mut stream = TcpStream::connect(addr).await?;
        stream.write_all(word.as_bytes()).await?;
        let mut answer = String::new();
        stream.read_to_string(&mut answer).await?;
        Ok(answer)
    };
    tokio::time::timeout(limit, exchange)
        .await
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::TimedOut, "no answer in time"))?
}

/// Parses the answer to `srvr`.
pub(crate) fn parse_srvr(answer: &str) -> ZkMode {
    let mode = answer
        .lines()
        .find_map(|line| line.strip_prefix("Mode:"))
        .map(str::trim);
    match mode {
        Some("standalone") => ZkMode::Standalone,
        Some("leader") => ZkMode::Leader,
        Some("follower") => ZkMode::Follower,
        Some("observer") => ZkMode::Observer,
        Some("read-only") => ZkMode::ReadOnly,
        _ => ZkMode::NotServing,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_each_mode_and_treats_anything_else_as_not_serving() {
        let answer = |mode: &str| {
            format!(
                "Zookeeper version: 3.8.0\nLatency min/avg/max: 0/0.0/0\nMode: {mode}\nNode count: 5\n"
            )
        };
        assert_eq!(parse_srvr(&answer("standalone")), ZkMode::Standalone);
        assert_eq!(parse_srvr(&answer("leader")), ZkMode::Leader);
        assert_eq!(parse_srvr(&answer("follower")), ZkMode::Follower);
        assert_eq!(parse_srvr(&answer("observer")), ZkMode::Observer);
        assert_eq!(parse_srvr(&answer("read-only")), ZkMode::ReadOnly);
        assert_eq!(
            parse_srvr("This ZooKeeper instance is not currently serving requests\n"),
            ZkMode::NotServing
        );
        assert_eq!(parse_srvr(""), ZkMode::NotServing);
        assert!(ZkMode::Follower.serves_writes());
        assert!(!ZkMode::NotServing.serves_writes());
    }
}
