//! Anthropic's counts, estimated: Claude's tokenizer is not public, so the count is o200k's
//! with the framing and the hidden tool-use system prompt fitted on the calibration corpus.

use serde_json::Value;

use crate::mock::MockModel;
use ctxbed_harness::model::ModelRequest;

/// What Anthropic counts beyond the harness's count of `request`, read from `json`.
pub(super) fn correction(model: &MockModel, json: &Value, request: &ModelRequest) -> i64 {
    let _ = (model, json, request);
    0
}
