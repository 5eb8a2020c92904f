//! A small, bounded decoder of server-sent events (the `text/event-stream` format).
//!
//! [`SseDecoder`] takes the body of a streamed reply in whatever chunks the network delivers
//! and yields complete [`SseEvent`]s. Lines may end in LF, CR or CRLF, and a line ending (even
//! the CR and LF of one CRLF) may be split across chunks. `event` and `data` fields are kept;
//! `id`, `retry`, comments (`:` lines) and unknown fields are ignored, as the format says. A
//! leading byte-order mark is skipped.
//!
//! Every line is bounded by [`SSE_LINE_BYTES_MAX`] and every event's data by
//! [`SSE_EVENT_BYTES_MAX`]; going over, or a line that is not UTF-8, is an [`SseError`] that
//! quotes a bounded snippet of what arrived. Nothing here panics on server input.
//!
//! ```
//! use ctxbed_providers::sse::SseDecoder;
//! let mut decoder = SseDecoder::new();
//! let mut events = decoder.push(b"event: ping\r").unwrap();
//! events.extend(decoder.push(b"\ndata: {\"a\":").unwrap());
//! events.extend(decoder.push(b"1}\r\n\r\ndata: [DONE]\n\n").unwrap());
//! assert_eq!(events.len(), 2);
//! assert_eq!(events[0].event.as_deref(), Some("ping"));
//! assert_eq!(events[0].data, "{\"a\":1}");
//! assert_eq!(events[1].data, "[DONE]");
//! assert!(decoder.finish().unwrap().is_none());
//! ```

use crate::limits::{PROVIDER_RAW_CHARS_MAX, SSE_EVENT_BYTES_MAX, SSE_LINE_BYTES_MAX};

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SseEvent {
    /// The `event:` field, when the server named the event.
    pub event: Option<String>,
    /// The `data:` lines, joined with `\n`.
    pub data: String,
}

/// A stream that breaks the decoder's bounds or is not text. The message names the bound;
/// [`SseError::snippet`] holds what arrived.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SseError {
    /// One line is longer than [`SSE_LINE_BYTES_MAX`].
    #[error("a server-sent-events line exceeds {max} bytes (limits::SSE_LINE_BYTES_MAX)")]
    LineTooLong { max: usize, snippet: String },
    /// One event's data is longer than [`SSE_EVENT_BYTES_MAX`].
    #[error("a server-sent event's data exceeds {max} bytes (limits::SSE_EVENT_BYTES_MAX)")]
    EventTooLarge { max: usize, snippet: String },
    /// A line is not valid UTF-8.
    #[error("a server-sent-events line is not UTF-8")]
    NotUtf8 { snippet: String },
}

impl SseError {
    /// The bounded snippet of what arrived.
    pub fn snippet(&self) -> &str {
        match self {
            SseError::LineTooLong { snippet, .. }
            | SseError::EventTooLarge { snippet, .. }
            | SseError::NotUtf8 { snippet } => snippet,
        }
    }
}

/// Incremental decoder state: the partial line and the event being built.
#[derive(Debug, Default)]
pub struct SseDecoder {
    line: Vec<u8>,
    /// The previous chunk ended in CR: an LF at the start of the next one ends nothing.
    after_cr: bool,
    /// Still at the very start of the stream (a byte-order mark may follow).
    at_start: bool,
    event: Option<String>,
    data: Option<String>,
}

impl SseDecoder {
    /// A decoder at the start of a stream.
    pub fn new() -> Self {
        SseDecoder {
            at_start: true,
            ..SseDecoder::default()
        }
    }

    /// Feeds one chunk and returns the events it completed, in order.
    ///
    /// # Errors
    /// A line or event over its bound, or a line that is not UTF-8.
    pub fn push(&mut self, chunk: &[u8]) -> Result<Vec<SseEvent>, SseError> {
        let mut events = Vec::new();
        let mut bytes = chunk;
        if self.at_start && !bytes.is_empty() {
            self.skip_bom(&mut bytes);
        }
        for &byte in bytes {
            let after_cr = std::mem::replace(&mut self.after_cr, false);
            match byte {
                b'\n' if after_cr => {}
                b'\n' | b'\r' => {
                    self.after_cr = byte == b'\r';
                    if let Some(event) = self.end_line()? {
                        events.push(event);
                    }
                }
                _ => {
                    if self.line.len() >= SSE_LINE_BYTES_MAX {
                        return Err(SseError::LineTooLong {
                            max: SSE_LINE_BYTES_MAX,
                            snippet: lossy_snippet(&self.line),
                        });
                    }
                    self.line.push(byte);
                }
            }
        }
        Ok(events)
    }

    /// Ends the stream. An event whose blank line never came is returned, since some servers
    /// close right after the last `data:` line; the caller decides whether the stream was
    /// complete.
    ///
    /// # Errors
    /// The last line breaks a bound or is not UTF-8.
    pub fn finish(mut self) -> Result<Option<SseEvent>, SseError> {
        if !self.line.is_empty() {
            self.end_line()?;
        }
        Ok(self.take_event())
    }

    fn skip_bom(&mut self, bytes: &mut &[u8]) {
        // A BOM split across chunks is not worth handling: it would only ever be a first
        // chunk of one or two bytes.
        const BOM: &[u8] = b"\xEF\xBB\xBF";
        if let Some(rest) = bytes.strip_prefix(BOM) {
            *bytes = rest;
        }
        self.at_start = false;
    }

    /// Processes the completed line; a blank line dispatches the event being built.
    fn end_line(&mut self) -> Result<Option<SseEvent>, SseError> {
        let raw = std::mem::take(&mut self.line);
        if raw.is_empty() {
            return Ok(self.take_event());
        }
        let line = std::str::from_utf8(&raw).map_err(|_| SseError::NotUtf8 {
            snippet: lossy_snippet(&raw),
        })?;
        if line.starts_with(':') {
            return Ok(None);
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        match field {
            "event" => self.event = Some(value.to_string()),
            "data" => {
                let data = self.data.get_or_insert_with(String::new);
                let joined = data.len() + usize::from(!data.is_empty()) + value.len();
                if joined > SSE_EVENT_BYTES_MAX {
                    return Err(SseError::EventTooLarge {
                        max: SSE_EVENT_BYTES_MAX,
                        snippet: ctxbed_harness::format::snippet(data, PROVIDER_RAW_CHARS_MAX),
                    });
                }
                if !data.is_empty() {
                    data.push('\n');
                }
                data.push_str(value);
            }
            _ => {}
        }
        Ok(None)
    }

    /// The event built so far, if it has data (an event without data is not dispatched).
    fn take_event(&mut self) -> Option<SseEvent> {
        let event = self.event.take();
        let data = self.data.take()?;
        Some(SseEvent { event, data })
    }
}

fn lossy_snippet(bytes: &[u8]) -> String {
    let head = &bytes[..bytes.len().min(4 * PROVIDER_RAW_CHARS_MAX)];
    ctxbed_harness::format::snippet(&String::from_utf8_lossy(head), PROVIDER_RAW_CHARS_MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_in_chunks(input: &[u8], size: usize) -> Vec<SseEvent> {
        let mut decoder = SseDecoder::new();
        let mut events = Vec::new();
        for chunk in input.chunks(size) {
            events.extend(decoder.push(chunk).expect("valid stream"));
        }
        events.extend(decoder.finish().expect("valid end"));
        events
    }

    #[test]
    fn every_line_ending_and_every_split_gives_the_same_events() {
        let lf = "event: a\ndata: one\ndata: two\n\n: comment\ndata: three\n\n";
        let expected = vec![
            SseEvent {
                event: Some("a".into()),
                data: "one\ntwo".into(),
            },
            SseEvent {
                event: None,
                data: "three".into(),
            },
        ];
        for text in [
            lf.to_string(),
            lf.replace('\n', "\r\n"),
            lf.replace('\n', "\r"),
        ] {
            for size in 1..=text.len() {
                assert_eq!(
                    decode_in_chunks(text.as_bytes(), size),
                    expected,
                    "{text:?} in chunks of {size}"
                );
            }
        }
    }

    #[test]
    fn fields_follow_the_format() {
        let events = decode_in_chunks(
            b"\xEF\xBB\xBFdata:no-space\nid: 7\nretry: 10\nunknown: x\n\nevent: empty\n\ndata\n\n",
            5,
        );
        // The event without data is not dispatched; a bare `data` line is an empty data line.
        assert_eq!(
            events,
            vec![
                SseEvent {
                    event: None,
                    data: "no-space".into()
                },
                SseEvent {
                    event: None,
                    data: String::new()
                },
            ]
        );
    }

    #[test]
    fn an_unterminated_last_event_is_returned_by_finish() {
        let mut decoder = SseDecoder::new();
        assert!(decoder.push(b"data: partial").unwrap().is_empty());
        assert_eq!(decoder.finish().unwrap().unwrap().data, "partial");
    }

    #[test]
    fn bounds_are_typed_errors() {
        let mut decoder = SseDecoder::new();
        let long = vec![b'x'; SSE_LINE_BYTES_MAX + 1];
        let error = decoder.push(&long).unwrap_err();
        assert!(matches!(error, SseError::LineTooLong { .. }));
        assert!(error.snippet().chars().count() <= PROVIDER_RAW_CHARS_MAX);

        let mut decoder = SseDecoder::new();
        let line = format!("data: {}\n", "y".repeat(SSE_LINE_BYTES_MAX - 10));
        let mut result = Ok(Vec::new());
        for _ in 0..(SSE_EVENT_BYTES_MAX / SSE_LINE_BYTES_MAX + 1) {
            result = decoder.push(line.as_bytes());
            if result.is_err() {
                break;
            }
        }
        assert!(matches!(result, Err(SseError::EventTooLarge { .. })));

        let mut decoder = SseDecoder::new();
        let error = decoder.push(b"data: \xFF\xFE\n").unwrap_err();
        assert!(matches!(error, SseError::NotUtf8 { .. }));
    }
}
