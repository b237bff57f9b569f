//! Numbers, times and durations as the pages show them.

use std::fmt::Write as _;
use std::time::{Duration, UNIX_EPOCH};

/// `1234567` as `1,234,567`.
pub(super) fn count(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A rate per second: `0/s`, `12.5/s`, `3.4k/s`, `1.2M/s`.
pub(super) fn rate(per_second: f64) -> String {
    let r = if per_second.is_finite() {
        per_second.max(0.0)
    } else {
        0.0
    };
    if r >= 1e6 {
        format!("{:.1}M/s", r / 1e6)
    } else if r >= 1e4 {
        format!("{:.0}k/s", r / 1e3)
    } else if r >= 1e3 {
        format!("{:.1}k/s", r / 1e3)
    } else if r >= 10.0 || r == 0.0 {
        format!("{r:.0}/s")
    } else {
        format!("{r:.1}/s")
    }
}

/// A duration of `ms` milliseconds in words: `850 ms`, `4.2 s`, `3 min 05 s`,
/// `2 h 07 min`, `3 d 04 h`.
pub(super) fn duration_ms(ms: u64) -> String {
    let s = ms / 1000;
    match ms {
        0..1_000 => format!("{ms} ms"),
        1_000..60_000 => format!("{:.1} s", ms as f64 / 1000.0),
        60_000..3_600_000 => format!("{} min {:02} s", s / 60, s % 60),
        3_600_000..86_400_000 => format!("{} h {:02} min", s / 3600, (s / 60) % 60),
        _ => format!("{} d {:02} h", s / 86_400, (s / 3600) % 24),
    }
}

/// A wall-clock time (ms since the Unix epoch) as `2026-12-02 03:04:05 UTC`
/// (past the year 9999, which no clock prints: the milliseconds).
pub(super) fn time(ms: u64) -> String {
    match date_time(ms) {
        Some(at) => format!("{at} UTC"),
        None => format!("{ms} ms after the Unix epoch"),
    }
}

/// A wall-clock time with milliseconds, without the zone:
/// `2026-12-02 03:04:05.678`.
pub(super) fn time_ms(ms: u64) -> String {
    match date_time(ms) {
        Some(at) => format!("{at}.{:03}", ms % 1000),
        None => time(ms),
    }
}

/// `2026-12-02 03:04:05`, or None past the year 9999.
fn date_time(ms: u64) -> Option<String> {
    let at = UNIX_EPOCH.checked_add(Duration::from_millis(ms))?;
    let mut rfc = String::new();
    // Fails (rather than printing) past the year 9999.
    write!(rfc, "{}", humantime::format_rfc3339_seconds(at)).ok()?;
    // 2026-12-02T03:04:05Z
    Some(format!("{} {}", rfc.get(..10)?, rfc.get(11..19)?))
}

/// A watermark: none yet, the end of input, or its time.
pub(super) fn watermark(watermark: Option<i64>) -> String {
    match watermark {
        None => "—".to_owned(),
        Some(i64::MAX) => "end of input".to_owned(),
        Some(w) if w < 0 => format!("{w} ms"),
        Some(w) => time(w as u64),
    }
}

/// Flink's backpressure levels of a share of time waiting: `OK` up to 10 %,
/// `LOW` up to 50 %, `HIGH` above.
pub(super) fn backpressure_level(share: f64) -> &'static str {
    if share > 0.5 {
        "HIGH"
    } else if share > 0.1 {
        "LOW"
    } else {
        "OK"
    }
}

/// A share as a percentage: `0 %`, `37 %`.
pub(super) fn percent(share: f64) -> String {
    format!("{:.0} %", (share * 100.0).clamp(0.0, 100.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_have_thousands_separators() {
        assert_eq!(count(0), "0");
        assert_eq!(count(999), "999");
        assert_eq!(count(1_000), "1,000");
        assert_eq!(count(1_234_567), "1,234,567");
        assert_eq!(count(u64::MAX), "18,446,744,073,709,551,615");
    }

    #[test]
    fn rates_are_short() {
        assert_eq!(rate(0.0), "0/s");
        assert_eq!(rate(2.25), "2.2/s");
        assert_eq!(rate(250.4), "250/s");
        assert_eq!(rate(3_456.0), "3.5k/s");
        assert_eq!(rate(20_000.0), "20k/s");
        assert_eq!(rate(1_250_000.0), "1.2M/s");
        assert_eq!(rate(f64::NAN), "0/s");
        assert_eq!(rate(-3.0), "0/s");
    }

    #[test]
    fn durations_read_in_words() {
        assert_eq!(duration_ms(850), "850 ms");
        assert_eq!(duration_ms(4_200), "4.2 s");
        assert_eq!(duration_ms(185_000), "3 min 05 s");
        assert_eq!(duration_ms(7_620_000), "2 h 07 min");
        assert_eq!(duration_ms(273_600_000), "3 d 04 h");
    }

    #[test]
    fn times_and_watermarks() {
        assert_eq!(time(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(time(1_796_180_645_000), "2026-12-02 03:04:05 UTC");
        assert_eq!(time_ms(1_796_180_645_078), "2026-12-02 03:04:05.078");
        assert_eq!(
            time(253_402_300_800_000),
            "253402300800000 ms after the Unix epoch"
        );
        assert_eq!(
            time_ms(u64::MAX),
            format!("{} ms after the Unix epoch", u64::MAX)
        );
        assert_eq!(
            watermark(Some(i64::MAX - 1)),
            format!("{} ms after the Unix epoch", i64::MAX - 1)
        );
        assert_eq!(watermark(None), "—");
        assert_eq!(watermark(Some(i64::MAX)), "end of input");
        assert_eq!(watermark(Some(-5)), "-5 ms");
        assert_eq!(watermark(Some(1_000)), "1970-01-01 00:00:01 UTC");
    }

    #[test]
    fn backpressure_levels_follow_flink() {
        assert_eq!(backpressure_level(0.0), "OK");
        assert_eq!(backpressure_level(0.1), "OK");
        assert_eq!(backpressure_level(0.11), "LOW");
        assert_eq!(backpressure_level(0.5), "LOW");
        assert_eq!(backpressure_level(0.51), "HIGH");
        assert_eq!(percent(0.372), "37 %");
        assert_eq!(percent(3.0), "100 %");
    }
}
