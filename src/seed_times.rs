//! What each seed of a sweep cost: a bounded histogram of per-seed times and the slowest seeds.
//!
//! The library never reads a clock (see the module above); the caller measures each seed and
//! hands the figure in as microseconds. [`SeedTimes`] keeps the exact count, sum and maximum, a
//! log-linear histogram (64 buckets per power of two, so a percentile is exact to within 1/64,
//! about 1.6 %, of its value) and the [`SLOWEST_KEPT`] slowest seeds, so its memory is fixed
//! however many seeds a sweep runs.
//!
//! ```
//! use ctxbed::seed_times::SeedTimes;
//! let mut times = SeedTimes::default();
//! for (seed, micros) in [(0, 400), (1, 500), (2, 9_000), (3, 450)] {
//!     times.record(seed, micros);
//! }
//! assert_eq!(times.count(), 4);
//! assert_eq!(times.mean_micros(), Some(2_587.5));
//! assert_eq!(times.slowest()[0], (2, 9_000));
//! let median = times.percentile_micros(50.0).unwrap();
//! assert!((450..=457).contains(&median), "{median}");
//! ```

/// Slowest seeds kept by [`SeedTimes`].
pub const SLOWEST_KEPT: usize = 5;

/// Buckets per power of two (and the values below it, one bucket each).
const SUB_BUCKETS: u64 = 64;
const SUB_BITS: u32 = 6;
/// Enough buckets for every `u64`.
const BUCKETS: usize = ((64 - SUB_BITS as usize) + 1) * SUB_BUCKETS as usize;

/// Per-seed times of one sweep; see the module documentation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeedTimes {
    buckets: Vec<u64>,
    count: u64,
    sum_micros: u128,
    /// Slowest first; ties broken by the lower seed, so the list does not depend on the order
    /// the seeds finished in.
    slowest: Vec<(u64, u64)>,
}

impl Default for SeedTimes {
    fn default() -> Self {
        SeedTimes {
            buckets: vec![0; BUCKETS],
            count: 0,
            sum_micros: 0,
            slowest: Vec::with_capacity(SLOWEST_KEPT + 1),
        }
    }
}

impl SeedTimes {
    /// Records that `seed` took `micros` microseconds.
    pub fn record(&mut self, seed: u64, micros: u64) {
        self.buckets[bucket_of(micros)] += 1;
        self.count += 1;
        self.sum_micros += u128::from(micros);
        let position = self.slowest.partition_point(|&(kept_seed, kept)| {
            (kept, std::cmp::Reverse(kept_seed)) > (micros, std::cmp::Reverse(seed))
        });
        if position < SLOWEST_KEPT {
            self.slowest.insert(position, (seed, micros));
            self.slowest.truncate(SLOWEST_KEPT);
        }
    }

    /// Seeds recorded.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The exact mean, `None` before the first seed.
    pub fn mean_micros(&self) -> Option<f64> {
        (self.count > 0).then(|| self.sum_micros as f64 / self.count as f64)
    }

    /// The time at or below which `percent` % of the seeds fall: the upper end of the bucket
    /// holding that rank (at most 1/64 above the true value), `None` before the first seed.
    ///
    /// # Panics
    /// `percent` outside 0..=100 (a caller's bug, not input).
    pub fn percentile_micros(&self, percent: f64) -> Option<u64> {
        assert!(
            (0.0..=100.0).contains(&percent),
            "a percentile is between 0 and 100, not {percent}"
        );
        if self.count == 0 {
            return None;
        }
        // The rank of the seed at this percentile, counted from 1.
        let rank = ((percent / 100.0 * self.count as f64).ceil() as u64).clamp(1, self.count);
        let mut seen = 0;
        for (index, &in_bucket) in self.buckets.iter().enumerate() {
            seen += in_bucket;
            if seen >= rank {
                let slowest = self.slowest.first().map_or(u64::MAX, |&(_, micros)| micros);
                return Some(bucket_upper(index).min(slowest));
            }
        }
        unreachable!("the buckets hold every recorded seed")
    }

    /// The slowest seeds as `(seed, micros)`, slowest first, at most [`SLOWEST_KEPT`].
    pub fn slowest(&self) -> &[(u64, u64)] {
        &self.slowest
    }
}

/// Values below 64 have a bucket each; above, each power of two is split into 64 equal buckets.
fn bucket_of(micros: u64) -> usize {
    if micros < SUB_BUCKETS {
        return micros as usize;
    }
    let power = 63 - micros.leading_zeros();
    let sub = (micros >> (power - SUB_BITS)) & (SUB_BUCKETS - 1);
    ((u64::from(power - SUB_BITS) + 1) * SUB_BUCKETS + sub) as usize
}

/// The largest value that falls in bucket `index`.
fn bucket_upper(index: usize) -> u64 {
    let index = index as u64;
    if index < SUB_BUCKETS {
        return index;
    }
    let power = (index / SUB_BUCKETS - 1) as u32 + SUB_BITS;
    let sub = index % SUB_BUCKETS;
    let lower = (SUB_BUCKETS + sub) << (power - SUB_BITS);
    lower + ((1u64 << (power - SUB_BITS)) - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_value_lands_in_a_bucket_whose_range_holds_it() {
        let mut values: Vec<u64> = (0..5_000).collect();
        values.extend([u64::MAX, u64::MAX - 1, 1 << 40, (1 << 40) - 1, 123_456_789]);
        for value in values {
            let index = bucket_of(value);
            assert!(index < BUCKETS, "{value} → {index}");
            assert!(bucket_upper(index) >= value, "{value} → {index}");
            let lower = if index == 0 {
                0
            } else {
                bucket_upper(index - 1) + 1
            };
            assert!(lower <= value, "{value} → {index}, lower {lower}");
            // Within 1/64 of the value.
            assert!(
                bucket_upper(index) - value <= value / 64,
                "{value} → {index}"
            );
        }
        assert_eq!(bucket_of(u64::MAX), BUCKETS - 1);
        assert_eq!(bucket_upper(BUCKETS - 1), u64::MAX);
    }

    #[test]
    fn percentiles_follow_the_ranks() {
        let mut times = SeedTimes::default();
        assert_eq!(times.percentile_micros(50.0), None);
        assert_eq!(times.mean_micros(), None);
        for micros in 1..=1_000u64 {
            times.record(micros, micros * 10);
        }
        let check = |percent: f64, exact: u64| {
            let got = times.percentile_micros(percent).unwrap();
            assert!(
                got >= exact && got - exact <= exact / 64,
                "p{percent}: {got} for {exact}"
            );
        };
        check(50.0, 5_000);
        check(90.0, 9_000);
        check(99.0, 9_900);
        assert_eq!(times.percentile_micros(100.0), Some(10_000));
        assert_eq!(times.percentile_micros(0.0), Some(10));
        assert_eq!(times.mean_micros(), Some(5_005.0));
    }

    #[test]
    fn the_slowest_seeds_are_kept_in_order_whatever_the_arrival() {
        let arrivals = [
            (7, 50),
            (3, 900),
            (9, 900),
            (1, 10),
            (4, 700),
            (8, 800),
            (2, 60),
            (5, 900),
        ];
        let mut forward = SeedTimes::default();
        let mut backward = SeedTimes::default();
        for &(seed, micros) in &arrivals {
            forward.record(seed, micros);
        }
        for &(seed, micros) in arrivals.iter().rev() {
            backward.record(seed, micros);
        }
        let expected = [(3, 900), (5, 900), (9, 900), (8, 800), (4, 700)];
        assert_eq!(forward.slowest(), expected);
        assert_eq!(backward, forward);
    }
}
