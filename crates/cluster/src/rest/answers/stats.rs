//! The one percentile the answers use, as Flink's statistics compute it
//! (its vertex aggregates and its checkpoint summaries alike).

/// The `p`th percentile of `sorted`: at position p·(n+1)/100,
/// interpolated between its neighbours, clamped to the smallest and the
/// largest; 0 for no values.
pub fn percentile(sorted: &[i64], p: f64) -> f64 {
    let n = sorted.len();
    if n == 0 {
        return 0.0;
    }
    let position = p * (n as f64 + 1.0) / 100.0;
    if position < 1.0 {
        sorted[0] as f64
    } else if position >= n as f64 {
        sorted[n - 1] as f64
    } else {
        let below = position.floor();
        let lower = sorted[below as usize - 1] as f64;
        let upper = sorted[below as usize] as f64;
        lower + (position - below) * (upper - lower)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_interpolate_at_p_times_n_plus_one() {
        assert_eq!(percentile(&[], 50.0), 0.0);
        assert_eq!(percentile(&[7], 95.0), 7.0);
        // n = 4: the median is at 2.5, between 20 and 30.
        assert_eq!(percentile(&[10, 20, 30, 40], 50.0), 25.0);
        // p25 at 1.25: 10 + 0.25 · 10.
        assert_eq!(percentile(&[10, 20, 30, 40], 25.0), 12.5);
        // p95 at 4.75, past the last: the largest.
        assert_eq!(percentile(&[10, 20, 30, 40], 95.0), 40.0);
    }
}
