//! A request read as its API's provider reads it, and a scripted reply made into what that
//! provider would send: thinking only where the request turned it on (Anthropic), and the
//! prompt cache's reads and writes in its usage.

use serde_json::Value;

use super::{Api, Exchange, ProviderHost, anthropic, cache, openai, responses};
use ctxbed_harness::model::{ModelReply, ModelRequest};

/// The request as the provider reads it, and (Anthropic) its cache breakpoints.
pub(super) fn parse(api: Api, json: &Value) -> (ModelRequest, Vec<usize>) {
    match api {
        Api::OpenAi => (openai::parse_request(json), Vec::new()),
        Api::Anthropic => anthropic::parse_request_with_breakpoints(json),
        Api::Responses => (responses::parse_request(json), Vec::new()),
    }
}

/// What a request asked that shapes its answer.
pub(super) struct Asked<'a> {
    pub api: Api,
    /// Anthropic's extended thinking is on.
    pub thinking_on: bool,
    pub request: &'a ModelRequest,
    pub breakpoints: &'a [usize],
}

impl ProviderHost {
    /// The scripted reply as the API sends it, with the cache's figures (kept in `exchange`).
    pub(super) fn as_sent(
        &self,
        mut reply: ModelReply,
        asked: &Asked<'_>,
        exchange: &mut Exchange,
    ) -> ModelReply {
        if asked.api == Api::Anthropic && anthropic::shape_thinking(&mut reply, asked.thinking_on) {
            let output = self.model.output_tokens(&reply.message);
            if let Some(usage) = &mut reply.usage {
                usage.output_tokens = output;
            }
        }
        exchange.cache = self.cache_use(asked.api, asked.request, asked.breakpoints);
        if let Some(usage) = &mut reply.usage {
            usage.cache_read_tokens = exchange.cache.read;
            usage.cache_write_tokens = exchange.cache.written;
        }
        reply
    }

    /// What an answered request reads from and writes to the prompt cache: OpenAI's caching by
    /// itself, Anthropic's at the breakpoints the body marks.
    fn cache_use(
        &self,
        api: Api,
        request: &ModelRequest,
        breakpoints: &[usize],
    ) -> cache::CacheUse {
        let model = &self.model.script().info.name;
        let tokens = self.model.prefix_tokens(request);
        let prefixes = cache::Prefixes::new(api, model, request, tokens);
        match api {
            Api::Anthropic => self.cache.anthropic(&prefixes, breakpoints),
            Api::OpenAi | Api::Responses => self.cache.openai(&prefixes),
        }
    }
}
