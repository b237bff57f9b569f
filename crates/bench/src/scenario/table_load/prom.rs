//! Reading a `/metrics` answer (OpenMetrics text as `prometheus_client`
//! writes it): samples by name and labels, and histograms whose bucket
//! deltas between two scrapes give a quantile's upper bound.
//!
//! ```text
//!   scrape ─► Metrics { name{labels} → value }
//!                 ├─ sum(name, [(label, value)…])          counters, gauges
//!                 └─ histogram(name, [(label, value)…])    cumulative buckets
//!   later.minus(&earlier) ─► Histogram of the window ─► bound(0.99) = "p99 ≤ le"
//! ```

use std::collections::BTreeMap;

use anyhow::{Context, Result};

/// One sample: its labels (in order) and value.
#[derive(Clone, Debug, PartialEq)]
struct Sample {
    labels: Vec<(String, String)>,
    value: f64,
}

/// Every sample of one scrape, by metric name.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Metrics {
    samples: BTreeMap<String, Vec<Sample>>,
}

impl Metrics {
    /// Parses a scrape; comment lines (`# TYPE`, `# EOF`, …) are skipped.
    pub fn parse(text: &str) -> Result<Metrics> {
        let mut metrics = Metrics::default();
        for line in text.lines() {
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (series, value) = line
                .rsplit_once(' ')
                .with_context(|| format!("a sample without a value: {line}"))?;
            let value = parse_value(value).with_context(|| format!("bad value in: {line}"))?;
            let (name, labels) = match series.split_once('{') {
                Some((name, rest)) => {
                    let inner = rest
                        .strip_suffix('}')
                        .with_context(|| format!("unclosed labels in: {line}"))?;
                    (name, parse_labels(inner).with_context(|| line.to_owned())?)
                }
                None => (series, Vec::new()),
            };
            metrics
                .samples
                .entry(name.to_owned())
                .or_default()
                .push(Sample { labels, value });
        }
        Ok(metrics)
    }

    /// The samples of `name` that carry every label of `filter`.
    fn matching<'a>(
        &'a self,
        name: &str,
        filter: &'a [(&str, &str)],
    ) -> impl Iterator<Item = &'a Sample> + 'a {
        self.samples
            .get(name)
            .into_iter()
            .flatten()
            .filter(move |sample| {
                filter
                    .iter()
                    .all(|(key, value)| sample.labels.iter().any(|(k, v)| k == key && v == value))
            })
    }

    /// The sum of the samples of `name` matching `filter`; `None` if there
    /// are none.
    pub fn sum(&self, name: &str, filter: &[(&str, &str)]) -> Option<f64> {
        let mut found = self.matching(name, filter).peekable();
        found.peek()?;
        Some(found.map(|sample| sample.value).sum())
    }

    /// The histogram `name` (its `_bucket`, `_count` and `_sum` samples)
    /// of the one series matching `filter`, if it is there.
    pub fn histogram(&self, name: &str, filter: &[(&str, &str)]) -> Option<Histogram> {
        let mut buckets: Vec<(f64, f64)> = self
            .matching(&format!("{name}_bucket"), filter)
            .filter_map(|sample| {
                let le = sample.labels.iter().find(|(key, _)| key == "le")?;
                Some((parse_value(&le.1).ok()?, sample.value))
            })
            .collect();
        if buckets.is_empty() {
            return None;
        }
        buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
        Some(Histogram {
            buckets,
            count: self.sum(&format!("{name}_count"), filter)?,
            sum: self.sum(&format!("{name}_sum"), filter)?,
        })
    }
}

/// A histogram: cumulative bucket counts by upper bound (ascending, the
/// last `+Inf`), the count and the sum (seconds).
#[derive(Clone, Debug, PartialEq)]
pub struct Histogram {
    /// `(le, observations ≤ le)`.
    pub buckets: Vec<(f64, f64)>,
    /// Observations.
    pub count: f64,
    /// Their sum.
    pub sum: f64,
}

impl Histogram {
    /// What was observed after `earlier` (a scrape of the same series).
    pub fn minus(&self, earlier: &Histogram) -> Histogram {
        let before = |le: f64| {
            earlier
                .buckets
                .iter()
                .find(|(bound, _)| *bound == le)
                .map_or(0.0, |(_, count)| *count)
        };
        Histogram {
            buckets: self
                .buckets
                .iter()
                .map(|&(le, count)| (le, count - before(le)))
                .collect(),
            count: self.count - earlier.count,
            sum: self.sum - earlier.sum,
        }
    }

    /// The upper bound of the bucket holding the nearest-rank `q`-quantile:
    /// the `q`-quantile is at most this (`+Inf` if it is in the last
    /// bucket); `None` without observations.
    pub fn bound(&self, q: f64) -> Option<f64> {
        if self.count < 1.0 {
            return None;
        }
        let rank = (q * self.count).ceil().max(1.0);
        self.buckets
            .iter()
            .find(|(_, count)| *count >= rank)
            .map(|(le, _)| *le)
    }

    /// The mean observation, `None` without observations.
    pub fn mean(&self) -> Option<f64> {
        (self.count >= 1.0).then(|| self.sum / self.count)
    }
}

fn parse_value(text: &str) -> Result<f64> {
    Ok(match text {
        "+Inf" => f64::INFINITY,
        "-Inf" => f64::NEG_INFINITY,
        other => other.parse()?,
    })
}

/// `a="x",b="y"` (values may hold escaped quotes and commas).
fn parse_labels(text: &str) -> Result<Vec<(String, String)>> {
    let mut labels = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let (key, after) = rest.split_once("=\"").context("a label without a value")?;
        let mut value = String::new();
        let mut chars = after.char_indices();
        let end = loop {
            match chars.next().context("an unterminated label value")? {
                (i, '"') => break i,
                (_, '\\') => match chars.next().context("a dangling escape")?.1 {
                    'n' => value.push('\n'),
                    other => value.push(other),
                },
                (_, c) => value.push(c),
            }
        };
        labels.push((key.trim_start_matches(',').to_owned(), value));
        rest = &after[end + 1..];
        rest = rest.strip_prefix(',').unwrap_or(rest);
    }
    Ok(labels)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCRAPE: &str = "# HELP x_seconds A histogram.\n\
        # TYPE x_seconds histogram\n\
        # UNIT x_seconds seconds\n\
        x_seconds_sum{component=\"tm\"} 0.5\n\
        x_seconds_count{component=\"tm\"} 4\n\
        x_seconds_bucket{le=\"0.01\",component=\"tm\"} 1\n\
        x_seconds_bucket{le=\"0.1\",component=\"tm\"} 3\n\
        x_seconds_bucket{le=\"1.0\",component=\"tm\"} 4\n\
        x_seconds_bucket{le=\"+Inf\",component=\"tm\"} 4\n\
        t_total{component=\"tm\",state=\"suspended\",reason=\"\"} 2\n\
        t_total{component=\"tm\",state=\"lost\",reason=\"closed\"} 1\n\
        t_total{component=\"tm\",state=\"lost\",reason=\"lease_expired\"} 3\n\
        g{table=\"/tmp/a,\\\"b\\\".tsv\"} 7\n\
        plain 1.5\n\
        # EOF\n";

    #[test]
    fn reads_samples_by_name_and_labels() {
        let metrics = Metrics::parse(SCRAPE).unwrap();
        assert_eq!(metrics.sum("t_total", &[("state", "suspended")]), Some(2.0));
        assert_eq!(metrics.sum("t_total", &[("state", "lost")]), Some(4.0));
        assert_eq!(metrics.sum("t_total", &[("state", "read_only")]), None);
        assert_eq!(
            metrics.sum("g", &[("table", "/tmp/a,\"b\".tsv")]),
            Some(7.0)
        );
        assert_eq!(metrics.sum("plain", &[]), Some(1.5));
    }

    #[test]
    fn histogram_deltas_bound_the_quantiles() {
        let metrics = Metrics::parse(SCRAPE).unwrap();
        let later = metrics
            .histogram("x_seconds", &[("component", "tm")])
            .unwrap();
        assert_eq!(later.count, 4.0);
        assert_eq!(later.bound(0.5), Some(0.1));
        assert_eq!(later.bound(0.99), Some(1.0));
        assert_eq!(later.bound(0.25), Some(0.01));
        let earlier = Histogram {
            buckets: vec![(0.01, 1.0), (0.1, 1.0), (1.0, 1.0), (f64::INFINITY, 1.0)],
            count: 1.0,
            sum: 0.005,
        };
        let window = later.minus(&earlier);
        assert_eq!(window.count, 3.0);
        assert_eq!(window.buckets[0], (0.01, 0.0));
        assert_eq!(window.bound(0.5), Some(0.1));
        assert!((window.mean().unwrap() - 0.165).abs() < 1e-9);
        let none = later.minus(&later);
        assert_eq!(none.bound(0.99), None);
        assert!(
            metrics
                .histogram("x_seconds", &[("component", "jm")])
                .is_none()
        );
    }
}
