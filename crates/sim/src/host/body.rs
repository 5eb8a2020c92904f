//! Response bodies: a whole JSON answer ([`full`]), a reset ([`reset`]), server-sent events
//! rendered from a [`Plan`] as the connection takes them, whole or cut mid-event, and the
//! reply-text helpers the wire writers share (a reply's thinking, the seal that signs what a
//! harness must hand back unaltered).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use http_body_util::{Either, Full, StreamBody};
use hyper::body::Frame;
use sha2::{Digest, Sha256};

use ctxbed_harness::message::ContentPart;
use ctxbed_harness::model::ModelReply;

use super::plan::Plan;

/// A response body: whole, or a stream of frames that may end in an error (a cut).
pub type HostBody = Either<Full<Bytes>, StreamBody<FrameStream>>;

/// The frames of a streamed answer: data, then (for a cut or reset) an error.
pub type FrameStream = std::pin::Pin<
    Box<dyn futures_util::Stream<Item = Result<Frame<Bytes>, std::io::Error>> + Send + Sync>,
>;

/// A whole JSON response.
pub fn full(status: u16, body: String) -> http::Response<HostBody> {
    let mut response = http::Response::new(Either::Left(Full::new(Bytes::from(body))));
    *response.status_mut() =
        http::StatusCode::from_u16(status).unwrap_or(http::StatusCode::INTERNAL_SERVER_ERROR);
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    response
}

/// A response whose body fails at once: hyper closes the connection without an answer.
pub fn reset() -> http::Response<HostBody> {
    let frames = futures_util::stream::iter([Err(std::io::Error::new(
        std::io::ErrorKind::ConnectionReset,
        "reset by the provider host",
    ))]);
    http::Response::new(Either::Right(StreamBody::new(Box::pin(frames))))
}

/// Server-sent events, framed as the connection takes them from `plan` (so a client that stops
/// reading holds the plan, not the whole stream rendered); each event's bytes are added to
/// `rendered`. A cut stream sends the status, the headers, its first half of events and half of
/// the next one's bytes, lets the connection flush them, and only then fails, so the client sees
/// a stream broken mid-event.
pub(super) fn streamed(
    plan: Plan,
    cut: bool,
    rendered: Arc<AtomicU64>,
) -> http::Response<HostBody> {
    use futures_util::StreamExt;
    let keep = if cut {
        plan.planned() / 2
    } else {
        plan.planned()
    };
    let mut plan = plan.fuse();
    let mut taken = 0;
    let events = std::iter::from_fn(move || {
        if taken < keep {
            taken += 1;
            return plan.next();
        }
        taken += 1;
        // After the half kept, a cut stream sends half of the next event's bytes once.
        let next = plan.next().filter(|_| cut && taken == keep + 1)?;
        let half = (0..=next.len() / 2)
            .rev()
            .find(|&at| next.is_char_boundary(at))
            .unwrap_or(0);
        (half > 0).then(|| next[..half].to_string())
    });
    let frames = futures_util::stream::iter(events.map(move |event| {
        rendered.fetch_add(event.len() as u64, Ordering::Relaxed);
        Ok(Frame::data(Bytes::from(event)))
    }));
    let body: FrameStream = if cut {
        let failure = futures_util::stream::once(async {
            // Pending once, so the connection writes out what came before the cut.
            tokio::task::yield_now().await;
            Err(std::io::Error::new(
                std::io::ErrorKind::ConnectionReset,
                "stream cut by the provider host",
            ))
        });
        Box::pin(frames.chain(failure))
    } else {
        Box::pin(frames)
    };
    let mut response = http::Response::new(Either::Right(StreamBody::new(body)));
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("text/event-stream"),
    );
    response
}

/// The reply's thinking parts joined, when it has any.
pub(super) fn thinking(reply: &ModelReply) -> Option<String> {
    let texts: Vec<&str> = reply
        .message
        .parts
        .iter()
        .filter_map(|part| match part {
            ContentPart::Thinking { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    (!texts.is_empty()).then(|| texts.join("\n"))
}

/// A deterministic seal of `text` under `purpose` (a keyed SHA-256, in hex): the same text gives
/// the same seal in every run, and any change to it another.
pub(super) fn seal(purpose: &str, text: &str) -> String {
    let digest = Sha256::new()
        .chain_update(purpose.as_bytes())
        .chain_update(b"\0")
        .chain_update(text.as_bytes())
        .finalize();
    digest.iter().map(|byte| format!("{byte:02x}")).collect()
}
