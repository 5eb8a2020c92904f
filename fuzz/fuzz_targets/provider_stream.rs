//! Fuzzes the provider reply path: the server-sent-events decoder over arbitrary chunking, each
//! format's stream assembler over the decoded events, and each format's whole-reply parser.
//! Any bytes give events or typed errors, never a panic.
#![no_main]

use ctxbed_providers::sse::SseDecoder;
use ctxbed_providers::{anthropic, openai};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&cut, body)) = data.split_first() else {
        return;
    };
    // Whole replies.
    let _ = openai::parse_reply(body);
    let _ = anthropic::parse_reply(body);
    // The same bytes as a stream, split into chunks of a fuzzed size.
    let chunk = usize::from(cut % 64) + 1;
    let mut decoder = SseDecoder::new();
    let mut events = Vec::new();
    for piece in body.chunks(chunk) {
        match decoder.push(piece) {
            Ok(decoded) => events.extend(decoded),
            Err(error) => {
                let _ = error.to_string();
                let _ = error.snippet();
                return;
            }
        }
    }
    if let Ok(Some(last)) = decoder.finish() {
        events.push(last);
    }
    let mut chat = openai::StreamAssembler::default();
    let mut messages = anthropic::StreamAssembler::default();
    let (mut chat_ok, mut messages_ok) = (true, true);
    for event in &events {
        if chat_ok {
            chat_ok = matches!(chat.event(&event.data), Ok(false));
        }
        if messages_ok {
            messages_ok = matches!(messages.event(event.event.as_deref(), &event.data), Ok(false));
        }
    }
    let _ = chat.finish();
    let _ = messages.finish();
});
