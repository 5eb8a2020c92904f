//! Response bodies: a whole JSON answer ([`full`]), a reset ([`reset`]), server-sent events
//! whole or cut mid-event, and the reply-text helpers the wire writers share (a reply's
//! thinking, text in pieces for streaming, the seal that signs what a harness must hand back
//! unaltered).

use bytes::Bytes;
use http_body_util::{Either, Full, StreamBody};
use hyper::body::Frame;
use sha2::{Digest, Sha256};

use ctxbed_harness::message::ContentPart;
use ctxbed_harness::model::ModelReply;

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

/// Server-sent events, each already framed (`data: …\n\n`). A cut stream sends the status, the
/// headers, its first half of events and half of the next one's bytes, lets the connection
/// flush them, and only then fails, so the client sees a stream broken mid-event.
pub(super) fn streamed(events: Vec<String>, cut: bool) -> http::Response<HostBody> {
    use futures_util::StreamExt;
    let keep = if cut { events.len() / 2 } else { events.len() };
    let mut data: Vec<Bytes> = Vec::with_capacity(keep + 1);
    let mut rest = events.into_iter();
    data.extend(rest.by_ref().take(keep).map(Bytes::from));
    if cut && let Some(next) = rest.next() {
        let half = (0..=next.len() / 2)
            .rev()
            .find(|&at| next.is_char_boundary(at))
            .unwrap_or(0);
        if half > 0 {
            data.push(Bytes::from(next[..half].to_string()));
        }
    }
    let frames = futures_util::stream::iter(data.into_iter().map(|bytes| Ok(Frame::data(bytes))));
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

/// `text` in pieces of at most `chars` characters.
pub(super) fn pieces(text: &str, chars: usize) -> Vec<String> {
    let characters: Vec<char> = text.chars().collect();
    characters
        .chunks(chars)
        .map(|chunk| chunk.iter().collect())
        .collect()
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
