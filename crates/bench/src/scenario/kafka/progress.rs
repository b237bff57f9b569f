//! A throughput run's progress: samples of lines read against time, and
//! the two rates reported — **steady**, between the moments 10 % and 90 %
//! of the input had been read (linear between the samples around each),
//! which leaves out start-up and the end; and **whole**, all lines over the
//! whole run, start-up and the last commit included.

use std::time::Duration;

use serde_json::{Value, json};

/// Samples of one run.
#[derive(Clone, Debug)]
pub struct Marks {
    total: u64,
    samples: Vec<(Duration, u64)>,
    end: Option<Duration>,
}

impl Marks {
    /// A run over `total` lines, nothing read yet.
    pub fn new(total: u64) -> Marks {
        Marks {
            total,
            samples: Vec::new(),
            end: None,
        }
    }

    /// `read` lines had been read `at` after the start.
    pub fn observe(&mut self, at: Duration, read: u64) {
        self.samples.push((at, read));
    }

    /// The run ended (every output committed, or the job finished) `at`
    /// after the start.
    pub fn end(&mut self, at: Duration) {
        self.end = Some(at);
    }

    /// When `fraction` of the lines had been read, between the samples
    /// around it.
    fn crossing(&self, fraction: f64) -> Option<Duration> {
        let goal = fraction * self.total as f64;
        let after = self.samples.iter().position(|(_, n)| *n as f64 >= goal)?;
        let (t1, n1) = self.samples[after];
        let Some(&(t0, n0)) = after.checked_sub(1).map(|i| &self.samples[i]) else {
            return Some(t1);
        };
        let share = (goal - n0 as f64) / (n1 - n0).max(1) as f64;
        Some(t0 + (t1 - t0).mul_f64(share))
    }

    /// Lines per second between the 10 % and 90 % marks.
    pub fn steady(&self) -> Option<f64> {
        let (from, to) = (self.crossing(0.1)?, self.crossing(0.9)?);
        let seconds = (to - from).as_secs_f64();
        (seconds > 0.0).then(|| 0.8 * self.total as f64 / seconds)
    }

    /// Lines per second over the whole run.
    pub fn whole(&self) -> Option<f64> {
        let seconds = self.end?.as_secs_f64();
        (seconds > 0.0).then(|| self.total as f64 / seconds)
    }

    /// The whole run's length.
    pub fn duration(&self) -> Option<Duration> {
        self.end
    }

    /// As JSON.
    pub fn to_json(&self) -> Value {
        json!({
            "lines": self.total,
            "steady_per_second": self.steady(),
            "whole_per_second": self.whole(),
            "seconds": self.end.map(|end| end.as_secs_f64()),
            "ten_percent_at": self.crossing(0.1).map(|t| t.as_secs_f64()),
            "ninety_percent_at": self.crossing(0.9).map(|t| t.as_secs_f64()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steady_rate_is_interpolated_between_samples() {
        let mut marks = Marks::new(1000);
        for (second, read) in [(0, 0), (1, 0), (2, 50), (3, 150), (11, 950), (12, 1000)] {
            marks.observe(Duration::from_secs(second), read);
        }
        marks.end(Duration::from_secs(20));
        // 10 % (100) at 2.5 s, 90 % (900) at 10.5 s: 800 lines in 8 s.
        assert_eq!(marks.steady(), Some(100.0));
        assert_eq!(marks.whole(), Some(50.0));
    }
}
