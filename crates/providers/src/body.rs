//! Request-body pieces the wire formats share: each names its tools its own way, over the same
//! walk of the request's schemas.

use serde_json::Value;

use ctxbed_harness::model::ModelRequest;
use ctxbed_harness::tools::ToolSchema;

/// The request's tool schemas, each as `shape` writes it; `None` when it offers no tools (the
/// field is then left out, as every format expects).
pub(crate) fn tools(request: &ModelRequest, shape: impl Fn(&ToolSchema) -> Value) -> Option<Value> {
    if request.tools.is_empty() {
        return None;
    }
    Some(request.tools.iter().map(shape).collect::<Vec<_>>().into())
}
