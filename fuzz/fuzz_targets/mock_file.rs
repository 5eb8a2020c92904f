//! Fuzzes the mock-model file parser: any text gives a checked script or diagnostics, never a
//! panic.
#![no_main]

use ctxbed::scenario::format::mock_file::parse_mock;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(source) = std::str::from_utf8(data) else {
        return;
    };
    if let Err(diagnostics) = parse_mock("fuzz", "mock-models/fuzz.toml", source) {
        assert!(
            !diagnostics.is_empty(),
            "a rejected mock model names a problem"
        );
        for diagnostic in &diagnostics {
            let _ = diagnostic.to_string();
        }
    }
});
