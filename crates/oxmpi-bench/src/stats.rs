//! Statistics over repeated runs: min, median, max, the relative spread that flags a noisy
//! row, and ratios between implementations.

/// A row is marked noisy when `(max - min) / median` exceeds this.
pub const NOISE_THRESHOLD: f64 = 0.20;

/// Min, median and max of a set of repeated measurements.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Summary {
    /// Smallest value.
    pub min: f64,
    /// Median (the mean of the two middle values for an even count).
    pub median: f64,
    /// Largest value.
    pub max: f64,
    /// Number of values.
    pub count: usize,
}

impl Summary {
    /// Summarises `values`; `None` when there are none or any is not finite.
    pub fn of(values: &[f64]) -> Option<Summary> {
        if values.is_empty() || values.iter().any(|v| !v.is_finite()) {
            return None;
        }
        let mut v = values.to_vec();
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let median = if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        };
        Some(Summary {
            min: v[0],
            median,
            max: v[n - 1],
            count: n,
        })
    }

    /// `(max - min) / median`; infinite when the median is 0 but the values differ.
    pub fn spread(&self) -> f64 {
        let range = self.max - self.min;
        if range == 0.0 {
            0.0
        } else if self.median == 0.0 {
            f64::INFINITY
        } else {
            range / self.median.abs()
        }
    }

    /// True when the spread exceeds [`NOISE_THRESHOLD`].
    pub fn is_noisy(&self) -> bool {
        self.spread() > NOISE_THRESHOLD
    }
}

/// `a / b`, or `None` when `b` is zero or either is not finite.
pub fn ratio(a: f64, b: f64) -> Option<f64> {
    if !a.is_finite() || !b.is_finite() || b == 0.0 {
        None
    } else {
        Some(a / b)
    }
}

/// The median of `values` (convenience for [`Summary::of`]).
pub fn median(values: &[f64]) -> Option<f64> {
    Summary::of(values).map(|s| s.median)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_of_odd_and_even_counts() {
        let s = Summary::of(&[3.0, 1.0, 2.0]).unwrap();
        assert_eq!((s.min, s.median, s.max, s.count), (1.0, 2.0, 3.0, 3));
        let s = Summary::of(&[4.0, 1.0, 2.0, 10.0]).unwrap();
        assert_eq!((s.min, s.median, s.max), (1.0, 3.0, 10.0));
        let s = Summary::of(&[5.0]).unwrap();
        assert_eq!((s.min, s.median, s.max), (5.0, 5.0, 5.0));
        assert_eq!(median(&[2.0, 9.0, 1.0]), Some(2.0));
    }

    #[test]
    fn summary_rejects_empty_and_non_finite() {
        assert_eq!(Summary::of(&[]), None);
        assert_eq!(Summary::of(&[1.0, f64::NAN]), None);
        assert_eq!(Summary::of(&[f64::INFINITY]), None);
    }

    #[test]
    fn noise_flag_uses_relative_spread() {
        let quiet = Summary::of(&[100.0, 105.0, 110.0]).unwrap();
        assert!((quiet.spread() - 10.0 / 105.0).abs() < 1e-12);
        assert!(!quiet.is_noisy());
        let noisy = Summary::of(&[100.0, 105.0, 130.0]).unwrap();
        assert!(noisy.is_noisy());
        let edge = Summary::of(&[100.0, 100.0, 120.0]).unwrap();
        assert!(!edge.is_noisy(), "exactly 20% is not above the threshold");
        let zeros = Summary::of(&[0.0, 0.0]).unwrap();
        assert_eq!(zeros.spread(), 0.0);
        let zero_median = Summary::of(&[0.0, 0.0, 1.0]).unwrap();
        assert!(zero_median.is_noisy());
    }

    #[test]
    fn ratios() {
        assert_eq!(ratio(1.0, 4.0), Some(0.25));
        assert_eq!(ratio(1.0, 0.0), None);
        assert_eq!(ratio(f64::NAN, 1.0), None);
    }
}
