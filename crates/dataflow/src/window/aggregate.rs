//! [`Aggregate`]: how a window folds its records into one value, and the
//! ready-made ones: [`Count`], [`Sum`], [`Min`], [`Max`] and [`Reduce`].
//!
//! Every aggregate here gives the same result whatever the order its
//! records arrive in (except [`Reduce`] with a non-commutative function),
//! so out-of-order input does not change window results.

use std::marker::PhantomData;

/// An incremental aggregation over the records of one (key, window): Flink's
/// `AggregateFunction` without `merge`.
pub trait Aggregate<T>: Send + 'static {
    /// The running state of one (key, window).
    type Acc: crate::data::Data;
    /// What a firing emits.
    type Out;
    /// A fresh accumulator, before any record.
    fn create(&self) -> Self::Acc;
    /// Folds one record into `acc`.
    fn add(&self, acc: &mut Self::Acc, value: &T);
    /// The value to emit for `acc`; called on every firing, so the window
    /// may go on accumulating afterwards (late records).
    fn result(&self, acc: &Self::Acc) -> Self::Out;
}

/// Counts records.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Count;

impl<T> Aggregate<T> for Count {
    type Acc = u64;
    type Out = u64;

    fn create(&self) -> u64 {
        0
    }

    fn add(&self, acc: &mut u64, _value: &T) {
        *acc = acc.saturating_add(1);
    }

    fn result(&self, acc: &u64) -> u64 {
        *acc
    }
}

/// A number that [`Sum`] can add up.
pub trait SumValue: Copy + crate::data::Data {
    /// The sum of nothing.
    const ZERO: Self;
    /// `self + other`, never panicking.
    fn plus(self, other: Self) -> Self;
}

impl SumValue for i64 {
    const ZERO: i64 = 0;

    /// Wraps on overflow, like Java's `long` (and unlike saturation, keeps
    /// the sum independent of the order of records).
    fn plus(self, other: i64) -> i64 {
        self.wrapping_add(other)
    }
}

impl SumValue for u64 {
    const ZERO: u64 = 0;

    /// Wraps on overflow (order-independent).
    fn plus(self, other: u64) -> u64 {
        self.wrapping_add(other)
    }
}

impl SumValue for f64 {
    const ZERO: f64 = 0.0;

    fn plus(self, other: f64) -> f64 {
        self + other
    }
}

/// Sums a number extracted from each record: `Sum::new(|r: &Trade| r.qty)`.
/// Integer sums wrap on overflow.
pub struct Sum<F, N> {
    extract: F,
    _n: PhantomData<fn() -> N>,
}

impl<F, N> Clone for Sum<F, N>
where
    F: Clone,
{
    fn clone(&self) -> Self {
        Sum {
            extract: self.extract.clone(),
            _n: PhantomData,
        }
    }
}

impl<F, N> Sum<F, N> {
    /// Sums `extract(record)` over a window's records.
    pub fn new(extract: F) -> Self {
        Sum {
            extract,
            _n: PhantomData,
        }
    }
}

impl<T, F, N> Aggregate<T> for Sum<F, N>
where
    F: Fn(&T) -> N + Send + 'static,
    N: SumValue,
{
    type Acc = N;
    type Out = N;

    fn create(&self) -> N {
        N::ZERO
    }

    fn add(&self, acc: &mut N, value: &T) {
        *acc = acc.plus((self.extract)(value));
    }

    fn result(&self, acc: &N) -> N {
        *acc
    }
}

/// Keeps `candidate` in `acc` when `better(candidate, current)`; values not
/// comparable with themselves (NaN) are skipped so the outcome does not
/// depend on record order.
fn keep_if<V: PartialOrd>(acc: &mut Option<V>, candidate: V, better: impl Fn(&V, &V) -> bool) {
    if candidate.partial_cmp(&candidate).is_none() {
        return;
    }
    match acc {
        Some(current) if !better(&candidate, current) => {}
        _ => *acc = Some(candidate),
    }
}

/// The smallest value extracted from a window's records:
/// `Min::new(|r: &Reading| r.celsius)`. Emits `None` only for a window
/// whose every value was NaN (NaN is ignored).
pub struct Min<F, V> {
    extract: F,
    _v: PhantomData<fn() -> V>,
}

impl<F, V> Clone for Min<F, V>
where
    F: Clone,
{
    fn clone(&self) -> Self {
        Min {
            extract: self.extract.clone(),
            _v: PhantomData,
        }
    }
}

impl<F, V> Min<F, V> {
    /// Minimum of `extract(record)` over a window's records.
    pub fn new(extract: F) -> Self {
        Min {
            extract,
            _v: PhantomData,
        }
    }
}

impl<T, F, V> Aggregate<T> for Min<F, V>
where
    F: Fn(&T) -> V + Send + 'static,
    V: PartialOrd + crate::data::Data,
{
    type Acc = Option<V>;
    type Out = Option<V>;

    fn create(&self) -> Option<V> {
        None
    }

    fn add(&self, acc: &mut Option<V>, value: &T) {
        keep_if(acc, (self.extract)(value), |new, old| new < old);
    }

    fn result(&self, acc: &Option<V>) -> Option<V> {
        acc.clone()
    }
}

/// The largest value extracted from a window's records:
/// `Max::new(|r: &Reading| r.celsius)`. Emits `None` only for a window
/// whose every value was NaN (NaN is ignored).
pub struct Max<F, V> {
    extract: F,
    _v: PhantomData<fn() -> V>,
}

impl<F, V> Clone for Max<F, V>
where
    F: Clone,
{
    fn clone(&self) -> Self {
        Max {
            extract: self.extract.clone(),
            _v: PhantomData,
        }
    }
}

impl<F, V> Max<F, V> {
    /// Maximum of `extract(record)` over a window's records.
    pub fn new(extract: F) -> Self {
        Max {
            extract,
            _v: PhantomData,
        }
    }
}

impl<T, F, V> Aggregate<T> for Max<F, V>
where
    F: Fn(&T) -> V + Send + 'static,
    V: PartialOrd + crate::data::Data,
{
    type Acc = Option<V>;
    type Out = Option<V>;

    fn create(&self) -> Option<V> {
        None
    }

    fn add(&self, acc: &mut Option<V>, value: &T) {
        keep_if(acc, (self.extract)(value), |new, old| new > old);
    }

    fn result(&self, acc: &Option<V>) -> Option<V> {
        acc.clone()
    }
}

/// Folds a window's records pairwise with `f(acc, record)`, Flink's
/// `ReduceFunction`: the first record is the initial value. Emits
/// `Some(value)` (a fired window always has a record).
#[derive(Clone)]
pub struct Reduce<F>(pub F);

impl<T, F> Aggregate<T> for Reduce<F>
where
    F: Fn(&T, &T) -> T + Send + 'static,
    T: crate::data::Data,
{
    type Acc = Option<T>;
    type Out = Option<T>;

    fn create(&self) -> Option<T> {
        None
    }

    fn add(&self, acc: &mut Option<T>, value: &T) {
        *acc = Some(match acc.take() {
            None => value.clone(),
            Some(current) => (self.0)(&current, value),
        });
    }

    fn result(&self, acc: &Option<T>) -> Option<T> {
        acc.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fold<T, A: Aggregate<T>>(agg: &A, values: &[T]) -> A::Out {
        let mut acc = agg.create();
        for v in values {
            agg.add(&mut acc, v);
        }
        agg.result(&acc)
    }

    #[test]
    fn count() {
        assert_eq!(fold(&Count, &["a", "b", "c"]), 3);
        assert_eq!(fold::<u8, _>(&Count, &[]), 0);
    }

    #[test]
    fn sums() {
        let sum = Sum::new(|v: &(i64, f64)| v.0);
        assert_eq!(fold(&sum, &[(1, 0.5), (-4, 1.0)]), -3);
        let sum = Sum::new(|v: &(i64, f64)| v.1);
        assert_eq!(fold(&sum, &[(1, 0.5), (-4, 1.0)]), 1.5);
        let wrapping = Sum::new(|v: &i64| *v);
        assert_eq!(fold(&wrapping, &[i64::MAX, 1, -1]), i64::MAX);
        let unsigned = Sum::new(|v: &u32| u64::from(*v));
        assert_eq!(fold(&unsigned, &[1, 2]), 3);
    }

    #[test]
    fn min_and_max_skip_nan() {
        let min = Min::new(|v: &f64| *v);
        let max = Max::new(|v: &f64| *v);
        let values = [3.0, f64::NAN, -1.5, 7.0];
        assert_eq!(fold(&min, &values), Some(-1.5));
        assert_eq!(fold(&max, &values), Some(7.0));
        assert_eq!(fold(&min, &[f64::NAN]), None);
        let by_len = Max::new(|s: &&str| s.len());
        assert_eq!(fold(&by_len, &["ab", "abcd", "a"]), Some(4));
    }

    #[test]
    fn reduce_starts_from_the_first_record() {
        let concat = Reduce(|a: &String, b: &String| format!("{a}{b}"));
        let values = ["x".to_string(), "y".to_string()];
        assert_eq!(fold(&concat, &values), Some("xy".to_string()));
        let max = Reduce(|a: &i32, b: &i32| *a.max(b));
        assert_eq!(fold(&max, &[2, 9, 4]), Some(9));
    }
}
