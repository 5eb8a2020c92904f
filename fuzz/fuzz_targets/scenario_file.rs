//! Fuzzes the scenario file parser: any text gives a checked scenario or diagnostics, never a
//! panic. The suite root is the repository, so scenarios can name its real mock models.
#![no_main]

use std::path::PathBuf;

use ctxbed::scenario::format::file::{Layout, parse_scenario};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(source) = std::str::from_utf8(data) else {
        return;
    };
    let layout = Layout {
        root: PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".."),
        name: "fuzz/input".to_string(),
    };
    if let Err(diagnostics) = parse_scenario(&layout, "scenarios/fuzz/input.toml", source) {
        assert!(
            !diagnostics.is_empty(),
            "a rejected scenario names a problem"
        );
        for diagnostic in &diagnostics {
            let _ = diagnostic.to_string();
        }
    }
});
