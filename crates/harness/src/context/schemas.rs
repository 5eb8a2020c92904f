//! The tool schemas' token total and manifest items, remembered per thread for the schema list
//! an agent shares among all its requests.
//!
//! Every request of an agent holds the same `Arc<[ToolSchema]>`. Counting the schemas walks
//! each one, and listing them in the manifest prints and hashes each one; for an unchanged list
//! both give the same answer at every step. This memo keeps the last lists it answered for (a
//! copy of each `Arc`, so a list stays alive and unchanged while remembered) by counting method,
//! and recognises the same list by its address.
//!
//! Only estimators that remember counts
//! ([`caches_counts`](crate::tokens::TokenEstimator::caches_counts)) use the memo, as for the
//! conversation memo: two such estimators with one method name count alike. At most
//! [`SCHEMA_MEMO_ENTRIES_MAX`] lists are remembered per thread (the oldest replaced first).
//!
//! **Invariant:** a remembered listing equals a fresh one (`tests::a_remembered_listing_equals_a_fresh_one`).

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

use super::manifest::{self, ItemKind, ManifestItem};
use crate::limits::SCHEMA_MEMO_ENTRIES_MAX;
use crate::message::ToolSchema;
use crate::tokens::TokenEstimator;

/// The schemas of one request, counted and listed.
#[derive(Debug, PartialEq)]
pub(super) struct Listed {
    /// Their tokens, summed.
    pub(super) tokens: u64,
    /// One manifest item per schema, in order.
    pub(super) items: Vec<Arc<ManifestItem>>,
}

struct Entry {
    tools: Arc<[ToolSchema]>,
    method: &'static str,
    listed: Rc<Listed>,
}

thread_local! {
    /// Most recently used first.
    static MEMO: RefCell<Vec<Entry>> = const { RefCell::new(Vec::new()) };
}

/// The listing of `tools`: remembered, or made and remembered when the estimator caches counts.
pub(super) fn listed(tools: &Arc<[ToolSchema]>, estimator: &dyn TokenEstimator) -> Rc<Listed> {
    if !estimator.caches_counts() {
        return Rc::new(list(tools, estimator));
    }
    let method = estimator.method();
    let found = MEMO.with_borrow_mut(|memo| {
        let position = memo
            .iter()
            .position(|entry| entry.method == method && Arc::ptr_eq(&entry.tools, tools))?;
        let entry = memo.remove(position);
        let listed = Rc::clone(&entry.listed);
        memo.insert(0, entry);
        Some(listed)
    });
    if let Some(listed) = found {
        return listed;
    }
    let listed = Rc::new(list(tools, estimator));
    MEMO.with_borrow_mut(|memo| {
        memo.insert(
            0,
            Entry {
                tools: Arc::clone(tools),
                method,
                listed: Rc::clone(&listed),
            },
        );
        memo.truncate(SCHEMA_MEMO_ENTRIES_MAX);
    });
    listed
}

fn list(tools: &[ToolSchema], estimator: &dyn TokenEstimator) -> Listed {
    let mut total = 0;
    let items = tools
        .iter()
        .map(|schema| {
            let tokens = estimator.tool_schema_tokens(schema);
            total += tokens;
            let serialised = format!(
                "{}\n{}\n{}",
                schema.name, schema.description, schema.parameters
            );
            Arc::new(ManifestItem {
                kind: ItemKind::ToolSchema,
                id: schema.name.clone(),
                tokens,
                content_hash: manifest::content_hash(serialised.as_bytes()),
            })
        })
        .collect();
    Listed {
        tokens: total,
        items,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokens::{ApproximateEstimator, CachedEstimator, RatioEstimator};

    fn schemas(names: &[&str]) -> Arc<[ToolSchema]> {
        names
            .iter()
            .map(|name| ToolSchema {
                name: (*name).to_string(),
                description: format!("Runs {name} on the workspace."),
                parameters: serde_json::json!({"type": "object", "properties": {"path": {"type": "string"}}}),
            })
            .collect()
    }

    /// The same list gives the same listing, remembered or fresh, per counting method; an equal
    /// list at another address is listed afresh with the same result; the memo is bounded.
    #[test]
    fn a_remembered_listing_equals_a_fresh_one() {
        let tools = schemas(&["read_file", "execute"]);
        let approx = CachedEstimator::new(ApproximateEstimator::default());
        let ratio = CachedEstimator::new(RatioEstimator);
        for _ in 0..2 {
            assert_eq!(
                *listed(&tools, &approx),
                list(&tools, &ApproximateEstimator::default())
            );
            assert_eq!(*listed(&tools, &ratio), list(&tools, &RatioEstimator));
        }
        assert_ne!(
            list(&tools, &ApproximateEstimator::default()).tokens,
            list(&tools, &RatioEstimator).tokens,
            "the two methods count these schemas apart"
        );
        let first = listed(&tools, &approx);
        assert!(Rc::ptr_eq(&first, &listed(&tools, &approx)), "remembered");
        let equal = schemas(&["read_file", "execute"]);
        let equal_listed = listed(&equal, &approx);
        assert_eq!(*equal_listed, *first);
        assert!(
            !Rc::ptr_eq(&equal_listed, &first),
            "an equal list at another address is listed afresh"
        );
        for index in 0..SCHEMA_MEMO_ENTRIES_MAX + 2 {
            listed(&schemas(&[&format!("tool{index}")]), &approx);
        }
        MEMO.with_borrow(|memo| assert_eq!(memo.len(), SCHEMA_MEMO_ENTRIES_MAX));
    }
}
