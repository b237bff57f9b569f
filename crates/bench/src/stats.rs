//! Summaries of latency samples: nearest-rank percentiles over signed
//! milliseconds (a sample can be negative when the event it is measured
//! from is observed after the one it is measured to).

use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// `later − earlier` in milliseconds, negative if `later` is earlier.
pub fn signed_ms(later: Instant, earlier: Instant) -> f64 {
    match later.checked_duration_since(earlier) {
        Some(after) => ms(after),
        None => -ms(earlier.duration_since(later)),
    }
}

/// A duration in milliseconds.
pub fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e3
}

/// Count, extremes, mean and percentiles of a set of samples (ms).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Summary {
    /// Number of samples.
    pub count: usize,
    /// Smallest.
    pub min: f64,
    /// Median (nearest rank).
    pub p50: f64,
    /// 99th percentile (nearest rank).
    pub p99: f64,
    /// Largest.
    pub max: f64,
    /// Arithmetic mean.
    pub mean: f64,
}

impl Summary {
    /// The summary of `samples`, `None` if there are none.
    pub fn of(samples: &[f64]) -> Option<Summary> {
        if samples.is_empty() {
            return None;
        }
        let mut sorted = samples.to_vec();
        sorted.sort_by(f64::total_cmp);
        Some(Summary {
            count: sorted.len(),
            min: sorted[0],
            p50: percentile(&sorted, 0.50),
            p99: percentile(&sorted, 0.99),
            max: sorted[sorted.len() - 1],
            mean: sorted.iter().sum::<f64>() / sorted.len() as f64,
        })
    }

    /// As JSON, milliseconds rounded to microseconds.
    pub fn to_json(self) -> Value {
        json!({
            "count": self.count, "min_ms": round(self.min), "p50_ms": round(self.p50),
            "p99_ms": round(self.p99), "max_ms": round(self.max), "mean_ms": round(self.mean),
        })
    }
}

/// JSON for an optional summary (`null` without samples).
pub fn summary_json(samples: &[f64]) -> Value {
    Summary::of(samples).map_or(Value::Null, |summary| summary.to_json())
}

/// The nearest-rank `q`-quantile of sorted samples.
fn percentile(sorted: &[f64], q: f64) -> f64 {
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Milliseconds rounded to microseconds, for JSON.
pub fn round(value: f64) -> f64 {
    (value * 1e3).round() / 1e3
}

/// Milliseconds for a table cell: one decimal below 100 ms, whole above.
pub fn cell(value: f64) -> String {
    if value.abs() < 100.0 {
        format!("{value:.1}")
    } else {
        format!("{value:.0}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let samples: Vec<f64> = (1..=100).map(f64::from).collect();
        let summary = Summary::of(&samples).unwrap();
        assert_eq!((summary.p50, summary.p99, summary.max), (50.0, 99.0, 100.0));
        let one = Summary::of(&[-3.0]).unwrap();
        assert_eq!((one.min, one.p50, one.p99), (-3.0, -3.0, -3.0));
        assert!(Summary::of(&[]).is_none());
    }

    #[test]
    fn signed_differences() {
        let start = Instant::now();
        let later = start + Duration::from_millis(5);
        assert_eq!(signed_ms(later, start), 5.0);
        assert_eq!(signed_ms(start, later), -5.0);
    }
}
