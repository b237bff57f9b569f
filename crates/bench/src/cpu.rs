//! CPU time a process (or the whole machine) has used, from `/proc`, to
//! show where the time of a scenario went: the server, the benchmark's
//! clients, or other work on the machine.

use std::time::Duration;

/// Clock ticks per second of `/proc/PID/stat` (`USER_HZ`, 100 on Linux).
const TICKS_PER_SECOND: u64 = 100;

/// User plus system CPU time of process `pid`, if it can be read.
pub fn cpu_time(pid: u32) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse(&stat)
}

/// CPU time of this process.
pub fn own_cpu_time() -> Option<Duration> {
    cpu_time(std::process::id())
}

/// CPU time the whole machine has spent busy (every core, every process),
/// from the first line of `/proc/stat`.
pub fn machine_busy_time() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    parse_machine(stat.lines().next()?)
}

/// The load averages (1, 5, 15 min) from `/proc/loadavg`.
pub fn load_average() -> Option<String> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    Some(
        text.split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" "),
    )
}

fn parse_machine(line: &str) -> Option<Duration> {
    // cpu  user nice system idle iowait irq softirq steal …
    let fields: Vec<u64> = line
        .strip_prefix("cpu ")?
        .split_whitespace()
        .take(8)
        .map(|field| field.parse().ok())
        .collect::<Option<_>>()?;
    let idle = fields.get(3)? + fields.get(4)?;
    let busy = fields.iter().sum::<u64>() - idle;
    Some(Duration::from_millis(busy * 1000 / TICKS_PER_SECOND))
}

fn parse(stat: &str) -> Option<Duration> {
    // The command name (field 2) is parenthesised and may hold spaces;
    // utime and stime are fields 14 and 15, the 12th and 13th after it.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let user: u64 = fields.get(11)?.parse().ok()?;
    let system: u64 = fields.get(12)?.parse().ok()?;
    Some(Duration::from_millis(
        (user + system) * 1000 / TICKS_PER_SECOND,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_utime_and_stime() {
        let stat = "4711 (java (zk)) S 1 4711 4711 0 -1 4194560 100 0 0 0 250 30 0 0 20 0 30 0";
        assert_eq!(parse(stat), Some(Duration::from_millis(2800)));
        assert!(own_cpu_time().is_some());
        let machine = "cpu  100 0 50 1000 10 0 5 0 0 0";
        assert_eq!(parse_machine(machine), Some(Duration::from_millis(1550)));
    }
}
