//! The machine a TaskManager runs on, as it tells the leader when it
//! registers (shown by `GET /taskmanagers` as Flink's `hardware`): its
//! CPU cores, and its memory as `/proc/meminfo` gives it (0 where the
//! system does not say).

use holdfast_rpc::proto;

/// This machine, now.
pub(super) fn this_machine() -> proto::Hardware {
    let cpu_cores = std::thread::available_parallelism()
        .map(|n| u32::try_from(n.get()).unwrap_or(u32::MAX))
        .unwrap_or(1);
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    proto::Hardware {
        cpu_cores,
        physical_memory_bytes: meminfo_bytes(&meminfo, "MemTotal"),
        free_memory_bytes: meminfo_bytes(&meminfo, "MemAvailable"),
    }
}

/// The value of `key` in `/proc/meminfo`'s text (in kB there), in bytes;
/// 0 when absent or malformed.
fn meminfo_bytes(meminfo: &str, key: &str) -> u64 {
    meminfo
        .lines()
        .find_map(|line| {
            let (name, rest) = line.split_once(':')?;
            (name.trim() == key).then_some(rest)
        })
        .and_then(|rest| rest.split_whitespace().next()?.parse::<u64>().ok())
        .map_or(0, |kb| kb.saturating_mul(1024))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meminfo_is_read_in_bytes() {
        let text = "MemTotal:       24000000 kB\nMemFree:  100 kB\nMemAvailable:   12000 kB\n";
        assert_eq!(meminfo_bytes(text, "MemTotal"), 24_000_000 * 1024);
        assert_eq!(meminfo_bytes(text, "MemAvailable"), 12_000 * 1024);
        assert_eq!(meminfo_bytes(text, "SwapTotal"), 0);
        assert_eq!(meminfo_bytes("MemTotal: lots kB", "MemTotal"), 0);
    }

    #[test]
    fn this_machine_has_cores_and_memory() {
        let machine = this_machine();
        assert!(machine.cpu_cores >= 1);
        assert!(machine.physical_memory_bytes > 0, "{machine:?}");
    }
}
