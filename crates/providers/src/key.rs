//! The API key ([`ApiKey`]): never shown, redacted from any text that quotes it, and sent only
//! in the authentication header.

use crate::ProviderError;
use crate::config::ProviderKind;

/// An API key. `Debug` and `Display` never show it.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// Wraps a key.
    pub fn new(key: impl Into<String>) -> Self {
        ApiKey(key.into())
    }

    /// Replaces every occurrence of the key in `text` with `<redacted>`.
    pub fn redact(&self, text: &str) -> String {
        if self.0.is_empty() {
            text.to_string()
        } else {
            text.replace(&self.0, "<redacted>")
        }
    }
}

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ApiKey(<redacted>)")
    }
}

/// The authentication header for `kind` carrying `key`, marked sensitive.
pub(crate) fn auth_header(
    kind: ProviderKind,
    key: &ApiKey,
) -> Result<(http::HeaderName, http::HeaderValue), ProviderError> {
    let (name, value) = match kind {
        ProviderKind::OpenAi | ProviderKind::Responses => {
            (http::header::AUTHORIZATION, format!("Bearer {}", key.0))
        }
        ProviderKind::Anthropic => (http::HeaderName::from_static("x-api-key"), key.0.clone()),
    };
    let mut value = http::HeaderValue::from_str(&value).map_err(|_| ProviderError::BadHeader {
        what: "API key".into(),
    })?;
    value.set_sensitive(true);
    Ok((name, value))
}
