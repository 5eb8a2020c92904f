//! The part of answering that costs in proportion to the body: reading it as JSON, checking it
//! and counting its tokens. A body of [`BLOCKING_BODY_BYTES`] or more is handled off the
//! runtime's worker threads ([`off_the_workers`]), so one huge request does not stall the
//! other connections (`GET /v1/models` included) while it is counted.

use std::cell::RefCell;

use bytes::Bytes;
use serde_json::Value;

use ctxbed_harness::model::provider::Provider;

use super::{
    Api, Exchange, HostBody, Outcome, ProviderHost, anthropic, counting, deepseek, full, reasoning,
    reset, validate,
};

/// Bodies from this size on are read and counted off the worker threads: about a millisecond of
/// work or more (exact counting runs at tens of MB/s).
pub const BLOCKING_BODY_BYTES: usize = 64 * 1024;

/// Runs `work`, which reads a body of `bytes` bytes, in place; when the body is large and the
/// runtime has several workers, inside [`tokio::task::block_in_place`], which hands this
/// worker's other tasks to another thread while it runs. A current-thread runtime (the
/// simulator's, the tests') has no other worker to hand them to, and runs it as it is.
pub fn off_the_workers<R>(bytes: usize, work: impl FnOnce() -> R) -> R {
    use tokio::runtime::{Handle, RuntimeFlavor};
    let several_workers = Handle::try_current()
        .is_ok_and(|handle| handle.runtime_flavor() == RuntimeFlavor::MultiThread);
    if bytes >= BLOCKING_BODY_BYTES && several_workers {
        tokio::task::block_in_place(work)
    } else {
        work()
    }
}

impl ProviderHost {
    /// The body as JSON the provider accepts, with, for the Responses API, the input its
    /// previous response and its references to stored items resolve to (the reasoning rules
    /// hold over that); or the body of the 400 that refuses it.
    pub(super) fn checked_request(
        &self,
        api: Api,
        body: &Bytes,
        exchange: &mut Exchange,
    ) -> Result<(Value, Option<Value>), String> {
        let resolved: RefCell<Option<Value>> = RefCell::new(None);
        let roles = if self.model.script().imitates == Provider::OpenAi {
            validate::ChatRoles::OpenAi
        } else {
            validate::ChatRoles::Any
        };
        let check = |json: &Value| {
            validate::check_with(api, json, roles)?;
            if api == Api::OpenAi && self.model.script().deepseek_thinking {
                deepseek::check(json)?;
            }
            if api == Api::Responses {
                // The request's own references first: the stored conversation it goes on from
                // is kept resolved, and a resolved item keeps its id for the duplicate check.
                let referenced = self.stored.resolve(json)?;
                let own = referenced.as_ref().unwrap_or(json);
                let items = self.chains.resolve(own)?.or(referenced);
                reasoning::check(items.as_ref().unwrap_or(json), &self.reasoned)?;
                *resolved.borrow_mut() = items;
            }
            Ok(())
        };
        let json = self.checked_json(api, body, exchange, check)?;
        Ok((json, resolved.into_inner()))
    }

    /// Answers `POST /v1/messages/count_tokens` with the exact count the window check uses,
    /// as `{"input_tokens": N}`; it uses no turn and is recorded as `count_tokens`.
    pub(super) fn count_tokens(
        &self,
        body: Option<Bytes>,
        exchange: &mut Exchange,
    ) -> http::Response<HostBody> {
        let Some(body) = body else {
            return reset();
        };
        let counted = off_the_workers(body.len(), || {
            let json = self.checked_json(
                Api::Anthropic,
                &body,
                exchange,
                validate::check_count_tokens,
            )?;
            let request = anthropic::parse_request(&json);
            let tokens = counting::input_tokens(&self.model, Api::Anthropic, &json, &request);
            Ok((json, request, tokens))
        });
        let (json, request, tokens) = match counted {
            Ok(counted) => counted,
            Err(refusal) => return full(400, refusal),
        };
        exchange.outcome = Outcome::CountTokens;
        exchange.input_tokens = Some(tokens);
        exchange.side = true;
        exchange.body = json;
        exchange.request = Some(request);
        full(
            200,
            serde_json::json!({ "input_tokens": tokens }).to_string(),
        )
    }
}
