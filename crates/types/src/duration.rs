//! Flink-style durations, as configuration values spell them (`60 s`,
//! `60000`, `1min`): one parser for every crate that reads a duration key.

use std::time::Duration;

/// Parses `"60000"` (milliseconds), `"60 s"`, `"60s"`, `"1min"`, `"500ms"`,
/// `"2h"`, `"1.5 s"`, `"30 d"`. Returns a message naming what is wrong otherwise.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let value: f64 = number
        .parse()
        .map_err(|_| format!("{text:?} is not a duration (try \"60 s\" or \"60000\")"))?;
    let seconds = match unit.trim() {
        "" | "ms" | "milli" | "millis" | "millisecond" | "milliseconds" => value / 1000.0,
        "s" | "sec" | "secs" | "second" | "seconds" => value,
        "min" | "m" | "minute" | "minutes" => value * 60.0,
        "h" | "hour" | "hours" => value * 3600.0,
        "d" | "day" | "days" => value * 86_400.0,
        other => {
            return Err(format!(
                "{text:?} has an unknown unit {other:?} (use ms, s, min, h or d)"
            ));
        }
    };
    if !seconds.is_finite() || !(0.0..=1.0e9).contains(&seconds) {
        return Err(format!("{text:?} is out of range"));
    }
    Ok(Duration::from_secs_f64(seconds))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_flink_durations() {
        assert_eq!(parse_duration("60000"), Ok(Duration::from_secs(60)));
        assert_eq!(parse_duration("30 d"), Ok(Duration::from_secs(30 * 86_400)));
        assert_eq!(parse_duration("60 s"), Ok(Duration::from_secs(60)));
        assert_eq!(parse_duration("1min"), Ok(Duration::from_secs(60)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration(" 1.5 s "), Ok(Duration::from_millis(1500)));
        assert!(
            parse_duration("soon")
                .unwrap_err()
                .contains("not a duration")
        );
        assert!(
            parse_duration("5 fortnights")
                .unwrap_err()
                .contains("unknown unit")
        );
        assert!(parse_duration("").is_err());
    }
}
