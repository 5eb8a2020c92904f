//! Context sources: registration, options, and loading once per reasoning preparation.
//!
//! A [`ContextSource`] returns the [`ContextBlock`]s that should be visible before each reasoning
//! request. Sources are registered by name (`[A-Za-z0-9][A-Za-z0-9_.-]*`, unique) with
//! [`SourceOptions`]: a timeout (default 5 s, must be positive) and a failure policy (FAIL by
//! default: the preparation fails; OMIT: the source contributes nothing and the manifest records
//! `source_unavailable:source/<name>/:<kind>`). Sources load sequentially, so their latencies add
//! up; a timed-out source is cancelled (its future is dropped). "No list" (`Ok(None)`) is a
//! failure; an empty list is not. Duplicate block ids, invalid blocks, a required block from an
//! OMIT source and a panicking source are structural errors that OMIT never hides. A
//! SUMMARY-purpose preparation loads no source.
//!
//! **Invariant:** sources are read-only and hold no per-session state; the same instance serves
//! every session and every copy of an agent.
//!
//! ```
//! use std::sync::Arc;
//! use ctxbed_harness::context::block::ContextBlock;
//! use ctxbed_harness::context::source::{FailurePolicy, SourceOptions, SourceRegistry, StaticSource};
//! let mut registry = SourceRegistry::new();
//! let record = StaticSource::new(vec![ContextBlock::runtime("status", "Change 42 open")]);
//! registry.register("change-record", Arc::new(record), SourceOptions::default()).unwrap();
//! let notes = StaticSource::new(vec![]);
//! let options = SourceOptions::default().on_failure(FailurePolicy::Omit);
//! assert!(registry.register("change-record", Arc::new(notes), options).is_err());
//! assert_eq!(registry.names(), vec!["change-record"]);
//! ```

use std::collections::BTreeSet;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures_util::FutureExt;

use super::block::{ContextBlock, Material};
use super::transform::Transform;
use crate::model::Purpose;

/// Default time a source may take.
pub const SOURCE_TIMEOUT_DEFAULT: Duration = Duration::from_secs(5);

/// What a source is told about the preparation. Identities may be absent and do not establish
/// authorisation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextRequest {
    pub agent_id: Option<String>,
    pub user_id: Option<String>,
    pub session_id: Option<String>,
    /// The preparation's id.
    pub call_id: String,
    pub purpose: Purpose,
}

/// A source's own failure.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
#[error("{message}")]
pub struct SourceError {
    pub message: String,
}

/// Information loaded before each reasoning request.
#[async_trait]
pub trait ContextSource: Send + Sync {
    /// The blocks to show; `Ok(None)` means "no list" and is a failure.
    async fn load(
        &self,
        request: &ContextRequest,
    ) -> Result<Option<Vec<ContextBlock>>, SourceError>;
}

/// A source that always returns the same blocks.
#[derive(Debug, Clone)]
pub struct StaticSource {
    blocks: Vec<ContextBlock>,
}

impl StaticSource {
    pub fn new(blocks: Vec<ContextBlock>) -> Self {
        StaticSource { blocks }
    }
}

#[async_trait]
impl ContextSource for StaticSource {
    async fn load(
        &self,
        _request: &ContextRequest,
    ) -> Result<Option<Vec<ContextBlock>>, SourceError> {
        Ok(Some(self.blocks.clone()))
    }
}

/// What happens when a source fails to load.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum FailurePolicy {
    /// The preparation fails (`build_failed`). The default.
    #[default]
    Fail,
    /// The source contributes nothing; the manifest records `source_unavailable`.
    Omit,
}

/// Per-source options.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SourceOptions {
    pub timeout: Duration,
    pub on_failure: FailurePolicy,
}

impl Default for SourceOptions {
    fn default() -> Self {
        SourceOptions {
            timeout: SOURCE_TIMEOUT_DEFAULT,
            on_failure: FailurePolicy::Fail,
        }
    }
}

impl SourceOptions {
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    #[must_use]
    pub fn on_failure(mut self, policy: FailurePolicy) -> Self {
        self.on_failure = policy;
        self
    }
}

/// Why a registration was refused. The registry is unchanged.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum RegistrationError {
    #[error(
        "source name `{0}` is invalid: start with a letter or digit and use only letters, digits, `_`, `.` or `-`"
    )]
    InvalidName(String),
    #[error("a source named `{0}` is already registered; source names must be unique")]
    Duplicate(String),
    #[error("source `{0}` has a zero timeout; give a positive timeout")]
    ZeroTimeout(String),
}

#[derive(Clone)]
struct Registered {
    name: String,
    source: Arc<dyn ContextSource>,
    options: SourceOptions,
}

/// The registered sources, in registration order. Cloning keeps the same source instances.
#[derive(Clone, Default)]
pub struct SourceRegistry {
    entries: Vec<Registered>,
}

impl std::fmt::Debug for SourceRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SourceRegistry")
            .field("sources", &self.names())
            .finish()
    }
}

/// True for `[A-Za-z0-9][A-Za-z0-9_.-]*`.
pub fn is_valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphanumeric())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
}

impl SourceRegistry {
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers a source. Nothing is loaded now.
    ///
    /// # Errors
    /// An invalid or duplicate name, or a zero timeout; the registry is left unchanged.
    pub fn register(
        &mut self,
        name: &str,
        source: Arc<dyn ContextSource>,
        options: SourceOptions,
    ) -> Result<(), RegistrationError> {
        if !is_valid_name(name) {
            return Err(RegistrationError::InvalidName(name.to_string()));
        }
        if self.entries.iter().any(|entry| entry.name == name) {
            return Err(RegistrationError::Duplicate(name.to_string()));
        }
        if options.timeout.is_zero() {
            return Err(RegistrationError::ZeroTimeout(name.to_string()));
        }
        self.entries.push(Registered {
            name: name.to_string(),
            source,
            options,
        });
        Ok(())
    }

    /// Registered names, in order.
    pub fn names(&self) -> Vec<&str> {
        self.entries.iter().map(|e| e.name.as_str()).collect()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// Why loading failed in a way the failure policy decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FailureKind {
    Timeout,
    Error,
    NoList,
}

impl FailureKind {
    /// Every kind.
    pub const ALL: [FailureKind; 3] = [
        FailureKind::Timeout,
        FailureKind::Error,
        FailureKind::NoList,
    ];

    /// The kind [`as_str`](FailureKind::as_str) names, if any.
    pub fn from_name(name: &str) -> Option<FailureKind> {
        FailureKind::ALL
            .into_iter()
            .find(|kind| kind.as_str() == name)
    }

    /// The kind's stable name: `timeout`, `error` or `no_list`.
    pub fn as_str(self) -> &'static str {
        match self {
            FailureKind::Timeout => "timeout",
            FailureKind::Error => "error",
            FailureKind::NoList => "no_list",
        }
    }
}

/// A failed load that fails the preparation.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum SourceLoadError {
    #[error("source `{source_name}` failed ({}): {message}", kind.as_str())]
    Failed {
        source_name: String,
        kind: FailureKind,
        message: String,
    },
    #[error("source `{source_name}` returned invalid blocks: {problem}")]
    Structural {
        source_name: String,
        problem: String,
    },
}

/// Everything the sources contributed to one preparation.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Loaded {
    pub materials: Vec<Material>,
    /// [`Transform::SourceUnavailable`] for each omitted failure.
    pub transforms: Vec<Transform>,
}

/// Loads every source once, sequentially, each under its timeout.
///
/// # Errors
/// A FAIL-policy failure, or a structural problem from any source.
pub async fn load_all(
    registry: &SourceRegistry,
    request: &ContextRequest,
) -> Result<Loaded, SourceLoadError> {
    let mut loaded = Loaded::default();
    if request.purpose.is_compaction() {
        return Ok(loaded);
    }
    for entry in &registry.entries {
        let attempt = AssertUnwindSafe(entry.source.load(request)).catch_unwind();
        let outcome = match tokio::time::timeout(entry.options.timeout, attempt).await {
            Err(_) => Err((
                FailureKind::Timeout,
                format!(
                    "no answer within {}",
                    crate::format::duration(entry.options.timeout)
                ),
            )),
            Ok(Err(_panic)) => {
                return Err(SourceLoadError::Structural {
                    source_name: entry.name.clone(),
                    problem: "the source panicked while loading".to_string(),
                });
            }
            Ok(Ok(Err(error))) => Err((FailureKind::Error, error.message)),
            Ok(Ok(Ok(None))) => Err((
                FailureKind::NoList,
                "the source returned no list".to_string(),
            )),
            Ok(Ok(Ok(Some(blocks)))) => Ok(blocks),
        };
        match outcome {
            Ok(blocks) => {
                check_blocks(entry, &blocks)?;
                loaded.materials.extend(
                    blocks
                        .iter()
                        .map(|block| Material::from_block(&entry.name, block)),
                );
            }
            Err((kind, message)) => match entry.options.on_failure {
                FailurePolicy::Omit => loaded.transforms.push(Transform::SourceUnavailable {
                    source_name: entry.name.clone(),
                    kind,
                }),
                FailurePolicy::Fail => {
                    return Err(SourceLoadError::Failed {
                        source_name: entry.name.clone(),
                        kind,
                        message,
                    });
                }
            },
        }
    }
    Ok(loaded)
}

/// Structural checks that no failure policy hides.
fn check_blocks(entry: &Registered, blocks: &[ContextBlock]) -> Result<(), SourceLoadError> {
    let structural = |problem: String| SourceLoadError::Structural {
        source_name: entry.name.clone(),
        problem,
    };
    let mut ids = BTreeSet::new();
    for block in blocks {
        if let Some(problem) = block.problem() {
            return Err(structural(problem.to_string()));
        }
        if !ids.insert(block.id()) {
            return Err(structural(format!(
                "block id `{}` appears twice",
                block.id()
            )));
        }
        if block.is_required() && entry.options.on_failure == FailurePolicy::Omit {
            return Err(structural(format!(
                "block `{}` is required, but the source is configured with OMIT; a required block cannot come from an omittable source",
                block.id()
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_options_builders_set_their_field_and_keep_the_other() {
        let options = SourceOptions::default()
            .timeout(Duration::from_millis(250))
            .on_failure(FailurePolicy::Omit);
        let expected = SourceOptions {
            timeout: Duration::from_millis(250),
            on_failure: FailurePolicy::Omit,
        };
        assert_eq!(options, expected);
        let mut registry = SourceRegistry::new();
        let zero = SourceOptions::default().timeout(Duration::ZERO);
        let refused = registry.register("notes", Arc::new(StaticSource::new(Vec::new())), zero);
        assert_eq!(refused, Err(RegistrationError::ZeroTimeout("notes".into())));
    }

    #[test]
    fn a_required_block_may_not_come_from_an_omittable_source() {
        let entry = |on_failure| Registered {
            name: "notes".into(),
            source: Arc::new(StaticSource::new(Vec::new())),
            options: SourceOptions::default().on_failure(on_failure),
        };
        let required = [ContextBlock::runtime("r", "Must stay.").required()];
        let optional = [ContextBlock::runtime("o", "May go.")];
        assert!(check_blocks(&entry(FailurePolicy::Fail), &required).is_ok());
        assert!(check_blocks(&entry(FailurePolicy::Omit), &optional).is_ok());
        let refused = check_blocks(&entry(FailurePolicy::Omit), &required)
            .expect_err("a required block from an OMIT source");
        assert!(refused.to_string().contains("required"), "{refused}");
    }

    #[test]
    fn a_registry_shows_its_sources_by_name() {
        let mut registry = SourceRegistry::new();
        assert!(registry.is_empty());
        let source = Arc::new(StaticSource::new(Vec::new()));
        registry
            .register("notes", source, SourceOptions::default())
            .expect("a valid registration");
        assert!(!registry.is_empty());
        assert_eq!(
            format!("{registry:?}"),
            r#"SourceRegistry { sources: ["notes"] }"#
        );
    }
}
