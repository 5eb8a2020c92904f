//! The per-call runtime context: who is calling, in which session.
//!
//! Identities come from the application (never from the model). They may be absent and do not by
//! themselves establish authorisation.
//!
//! ```
//! use ctxbed_harness::runtime::RuntimeContext;
//! let context = RuntimeContext::new()
//!     .with_user("alice")
//!     .with_session("change-42")
//!     .with_attribute("region", "eu-west");
//! assert_eq!(context.session_id.as_deref(), Some("change-42"));
//! assert_eq!(context.attributes["region"], "eu-west");
//! ```
//!
//! **Invariant:** attributes are never shown to the model automatically: no preparation reads
//! them (a [`ContextRequest`](crate::context::source::ContextRequest) carries identities only),
//! and they are never persisted. A tool, which receives the runtime context in its
//! [`ToolContext`](crate::tools::ToolContext), or the application's own sources select
//! explicitly what the model needs.

use std::collections::BTreeMap;

/// Identity and free-form attributes of one agent call.
///
/// Attributes are never shown to the model unless a source selects them explicitly.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RuntimeContext {
    pub user_id: Option<String>,
    pub session_id: Option<String>,
    pub attributes: BTreeMap<String, String>,
}

impl RuntimeContext {
    /// An anonymous context with no session.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the user identity.
    pub fn with_user(mut self, user_id: impl Into<String>) -> Self {
        self.user_id = Some(user_id.into());
        self
    }

    /// Sets the session identity.
    pub fn with_session(mut self, session_id: impl Into<String>) -> Self {
        self.session_id = Some(session_id.into());
        self
    }

    /// Sets a free-form attribute, replacing an earlier value of the key. The model never sees
    /// it unless a tool or source selects it explicitly.
    pub fn with_attribute(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.attributes.insert(key.into(), value.into());
        self
    }
}
