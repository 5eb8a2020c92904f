//! Retrying transient provider faults: bounded exponential backoff with seeded jitter.
//!
//! Retried: [`ModelError::Transient`] (5xx, refused or reset connections, a stream cut before
//! its end) and [`ModelError::RateLimited`] (429). Never retried: overflow and pairing
//! rejections (the same request fails the same way), other rejections, malformed replies and
//! timeouts (an attempt that used its whole time limit is not worth repeating blindly).
//!
//! The delay before retry `n` (1-based) is drawn uniformly from `[cap/2, cap]` where
//! `cap = min(base · 2^(n-1), max)`, from a ChaCha8 stream seeded by [`RetryPolicy::seed`].
//! A rate limit with a `Retry-After` waits exactly that long instead; when the server asks for
//! more than [`RetryPolicy::max_delay`] its error is returned at once. `Retry-After` in
//! HTTP-date form needs the wall clock and is treated as absent.
//!
//! ```
//! use std::time::Duration;
//! use ctxbed_harness::model::ModelError;
//! use ctxbed_providers::retry::{Backoff, RetryPolicy};
//! let policy = RetryPolicy { attempts_max: 3, base_delay: Duration::from_millis(100), max_delay: Duration::from_secs(1), seed: 7 };
//! let backoff = Backoff::new(policy.clone());
//! let fault = ModelError::Transient { status: Some(503), body: String::new() };
//! let first = backoff.delay(&fault, 1).unwrap();
//! assert!(first >= Duration::from_millis(50) && first <= Duration::from_millis(100));
//! assert_eq!(Backoff::new(policy).delay(&fault, 1), Some(first)); // same seed, same delay
//! assert!(backoff.delay(&fault, 3).is_none()); // the third attempt was the last
//! ```

use std::sync::Mutex;
use std::time::Duration;

use rand_chacha::ChaCha8Rng;
use rand_core::{Rng, SeedableRng};

use crate::limits::{PROVIDER_ATTEMPTS_MAX, RETRY_DELAY_MS_MAX};
use ctxbed_harness::model::ModelError;

/// How often and how patiently to retry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts in all, the first included (1 means no retry); at most
    /// [`PROVIDER_ATTEMPTS_MAX`].
    pub attempts_max: u32,
    /// The backoff before the first retry (before jitter).
    pub base_delay: Duration,
    /// The longest wait, for backoff and for `Retry-After`; at most [`RETRY_DELAY_MS_MAX`].
    pub max_delay: Duration,
    /// Seeds the jitter.
    pub seed: u64,
}

impl Default for RetryPolicy {
    /// Four attempts, 500 ms doubling to at most 30 s, seed 0.
    fn default() -> Self {
        RetryPolicy {
            attempts_max: 4,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(30),
            seed: 0,
        }
    }
}

/// A [`RetryPolicy`] with its random stream.
#[derive(Debug)]
pub struct Backoff {
    policy: RetryPolicy,
    rng: Mutex<ChaCha8Rng>,
}

impl Backoff {
    /// Seeds the jitter from the policy.
    pub fn new(policy: RetryPolicy) -> Self {
        let rng = ChaCha8Rng::seed_from_u64(policy.seed);
        Backoff {
            policy,
            rng: Mutex::new(rng),
        }
    }

    /// How long to wait before the next attempt, after attempt `attempt` (1-based) failed with
    /// `error`; `None` when the error is final.
    pub fn delay(&self, error: &ModelError, attempt: u32) -> Option<Duration> {
        let attempts_max = self.policy.attempts_max.clamp(1, PROVIDER_ATTEMPTS_MAX);
        if attempt >= attempts_max {
            return None;
        }
        let max_delay = self
            .policy
            .max_delay
            .min(Duration::from_millis(RETRY_DELAY_MS_MAX));
        match error {
            ModelError::RateLimited {
                retry_after: Some(after),
                ..
            } => (*after <= max_delay).then_some(*after),
            ModelError::RateLimited { .. } | ModelError::Transient { .. } => {
                Some(self.jittered(attempt, max_delay))
            }
            _ => None,
        }
    }

    fn jittered(&self, attempt: u32, max_delay: Duration) -> Duration {
        let doublings = attempt.saturating_sub(1).min(30);
        let cap = self
            .policy
            .base_delay
            .saturating_mul(1 << doublings)
            .min(max_delay);
        let cap_ms = u64::try_from(cap.as_millis()).unwrap_or(u64::MAX);
        let half = cap_ms / 2;
        let spread = cap_ms - half;
        let draw = self
            .rng
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .next_u64();
        Duration::from_millis(half + draw % (spread + 1))
    }
}

/// The wait a rate-limited answer asks for: `retry-after-ms`, or `Retry-After` in whole
/// seconds. The HTTP-date form is ignored (it would need the wall clock).
pub fn retry_after(headers: &http::HeaderMap) -> Option<Duration> {
    let number = |name: &str| {
        headers
            .get(name)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.trim().parse::<f64>().ok())
            .filter(|value| value.is_finite() && *value >= 0.0 && *value < 1e9)
    };
    if let Some(millis) = number("retry-after-ms") {
        return Some(Duration::from_millis(millis.ceil() as u64));
    }
    number("retry-after").map(|seconds| Duration::from_millis((seconds * 1_000.0).ceil() as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> RetryPolicy {
        RetryPolicy {
            attempts_max: 6,
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_millis(1_000),
            seed: 42,
        }
    }

    #[test]
    fn backoff_doubles_within_jitter_and_stops_at_the_cap() {
        let backoff = Backoff::new(policy());
        let fault = ModelError::Transient {
            status: None,
            body: String::new(),
        };
        for (attempt, cap) in [(1, 100), (2, 200), (3, 400), (4, 800), (5, 1_000)] {
            let delay = backoff.delay(&fault, attempt).unwrap().as_millis() as u64;
            assert!(
                (cap / 2..=cap).contains(&delay),
                "attempt {attempt}: {delay}"
            );
        }
        assert_eq!(backoff.delay(&fault, 6), None);
    }

    #[test]
    fn only_transient_faults_and_rate_limits_are_retried() {
        let backoff = Backoff::new(policy());
        let final_errors = [
            ModelError::ContextOverflow {
                provider: "openai".into(),
                status: 400,
                body: String::new(),
                actual_tokens: None,
                max_tokens: None,
            },
            ModelError::PairingRejected {
                provider: "openai".into(),
                status: 400,
                body: String::new(),
            },
            ModelError::Rejected {
                status: 401,
                body: String::new(),
            },
            ModelError::MalformedReply {
                detail: String::new(),
                raw: String::new(),
            },
            ModelError::Timeout {
                after: Duration::from_secs(1),
            },
        ];
        for error in final_errors {
            assert_eq!(backoff.delay(&error, 1), None, "{error:?}");
        }
        let limited = |after: u64| ModelError::RateLimited {
            retry_after: Some(Duration::from_millis(after)),
            body: String::new(),
        };
        assert_eq!(
            backoff.delay(&limited(700), 1),
            Some(Duration::from_millis(700))
        );
        assert_eq!(backoff.delay(&limited(5_000), 1), None);
    }

    #[test]
    fn retry_after_headers_are_parsed() {
        let mut headers = http::HeaderMap::new();
        assert_eq!(retry_after(&headers), None);
        headers.insert("retry-after", "2".parse().unwrap());
        assert_eq!(retry_after(&headers), Some(Duration::from_secs(2)));
        headers.insert("retry-after-ms", "150".parse().unwrap());
        assert_eq!(retry_after(&headers), Some(Duration::from_millis(150)));
        let mut dated = http::HeaderMap::new();
        dated.insert(
            "retry-after",
            "Wed, 21 Oct 2015 07:28:00 GMT".parse().unwrap(),
        );
        assert_eq!(retry_after(&dated), None);
    }
}
