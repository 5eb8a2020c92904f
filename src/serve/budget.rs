//! The memory budget for request bodies in flight, across every connection, and the reading of
//! one body within it. A body's declared `Content-Length` is taken from the budget before a byte
//! of it is read (a body without one is charged as it arrives), and held until its request is
//! answered; a body the budget cannot take is refused with the provider's 413
//! (`request_too_large`) instead of being buffered (its bytes are read and dropped as they come,
//! so the client reads the 413 rather than a connection closed under it). A body is read into one buffer of its
//! declared size, so a body held one byte short costs what arrived, not a doubled buffer.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http_body_util::BodyExt;
use hyper::body::Body;
use serde_json::json;

use ctxbed_sim::host::{Api, HostBody, full};

/// Bytes of request bodies held now, across every connection, and the most allowed.
#[derive(Debug)]
pub(super) struct Budget {
    held: AtomicUsize,
    most: usize,
}

impl Budget {
    pub(super) fn new(most: usize) -> Self {
        Budget {
            held: AtomicUsize::new(0),
            most,
        }
    }

    /// Bytes of request bodies held now.
    pub(super) fn held(&self) -> usize {
        self.held.load(Ordering::Relaxed)
    }

    /// Takes `bytes` more for `share`; false (and nothing taken) past the budget.
    fn take(&self, share: &mut Share, bytes: usize) -> bool {
        let taken = self
            .held
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |held| {
                held.checked_add(bytes).filter(|after| *after <= self.most)
            });
        if taken.is_ok() {
            share.bytes += bytes;
        }
        taken.is_ok()
    }
}

/// What one request holds of the budget; given back when dropped.
#[derive(Debug)]
pub(super) struct Share {
    budget: Arc<Budget>,
    bytes: usize,
}

impl Drop for Share {
    fn drop(&mut self) {
        self.budget.held.fetch_sub(self.bytes, Ordering::Relaxed);
    }
}

/// How reading a body ended.
#[derive(Debug)]
pub(super) enum Read {
    /// The whole body, and its share of the budget (held while the request is answered).
    Body(Bytes, Share),
    /// The client went away, or sent more than the largest body: answered as a reset.
    Gone,
    /// The budget cannot take it.
    OverBudget,
    /// It did not arrive within the body timeout.
    Late,
}

/// Reads `body`, at most `largest` bytes, within `timeout`, charging it to `budget`.
pub(super) async fn read(
    body: hyper::body::Incoming,
    budget: &Arc<Budget>,
    largest: usize,
    timeout: Duration,
) -> Read {
    let mut share = Share {
        budget: budget.clone(),
        bytes: 0,
    };
    let declared = body
        .size_hint()
        .exact()
        .map(|n| usize::try_from(n).unwrap_or(usize::MAX));
    if declared.is_some_and(|n| n > largest) {
        return Read::Gone;
    }
    if let Some(declared) = declared
        && !budget.take(&mut share, declared)
    {
        discard(body, timeout).await;
        return Read::OverBudget;
    }
    let mut body = body;
    let mut buffer = BytesMut::with_capacity(declared.unwrap_or(0));
    let collect = async {
        while let Some(frame) = body.frame().await {
            let Ok(frame) = frame else {
                return Err(Read::Gone);
            };
            let Ok(data) = frame.into_data() else {
                continue;
            };
            let after = buffer.len() + data.len();
            if after > largest {
                return Err(Read::Gone);
            }
            let more = after.saturating_sub(share.bytes);
            if more > 0 && !budget.take(&mut share, more) {
                return Err(Read::OverBudget);
            }
            buffer.extend_from_slice(&data);
        }
        Ok(())
    };
    match tokio::time::timeout(timeout, collect).await {
        Err(_) => Read::Late,
        Ok(Err(Read::OverBudget)) => {
            drop((buffer, share));
            discard(body, timeout).await;
            Read::OverBudget
        }
        Ok(Err(refused)) => refused,
        Ok(Ok(())) => Read::Body(buffer.freeze(), share),
    }
}

/// Reads the rest of a refused body and drops it as it comes (holding nothing), within
/// `timeout`, so the client gets to read the 413 instead of a connection closed while it
/// sends.
async fn discard(mut body: hyper::body::Incoming, timeout: Duration) {
    let drain = async { while let Some(Ok(_)) = body.frame().await {} };
    let _ = tokio::time::timeout(timeout, drain).await;
}

/// The provider's 413 for a body the budget cannot take: Anthropic's `request_too_large`
/// (`Request exceeds the maximum size`, anthropics/anthropic-sdk-python#938), and the same
/// words in OpenAI's envelope.
pub(super) fn too_large(api: Api) -> http::Response<HostBody> {
    const MESSAGE: &str = "Request exceeds the maximum size";
    let body = match api {
        Api::Anthropic => ctxbed_sim::host::anthropic::error_body("request_too_large", MESSAGE),
        Api::OpenAi | Api::Responses => json!({"error": {"message": MESSAGE, "type": "invalid_request_error", "param": null, "code": "request_too_large"}}).to_string(),
    };
    full(413, body)
}
