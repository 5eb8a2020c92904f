//! The providers a mock model can imitate, and their real error wordings.
//!
//! Wordings follow what each provider publicly answers (numbers and ids vary per request). Mock
//! models use them so that the overflow classifier is exercised on real text, not on our own.
//!
//! ```
//! use ctxbed_harness::model::provider::Provider;
//! let (status, body) = Provider::Anthropic.overflow_error(200_251, 200_000);
//! assert_eq!(status, 400);
//! assert!(body.contains("prompt is too long: 200251 tokens > 200000 maximum"));
//! ```

/// A model provider whose wire wording a mock imitates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Provider {
    OpenAi,
    Anthropic,
    Gemini,
    DashScope,
    Vllm,
    LlamaCpp,
}

impl Provider {
    /// Every provider, in a fixed order.
    pub const ALL: [Provider; 6] = [
        Provider::OpenAi,
        Provider::Anthropic,
        Provider::Gemini,
        Provider::DashScope,
        Provider::Vllm,
        Provider::LlamaCpp,
    ];

    /// The name used in mock-model files.
    pub fn as_str(self) -> &'static str {
        match self {
            Provider::OpenAi => "openai",
            Provider::Anthropic => "anthropic",
            Provider::Gemini => "gemini",
            Provider::DashScope => "dashscope",
            Provider::Vllm => "vllm",
            Provider::LlamaCpp => "llamacpp",
        }
    }

    /// Parses a mock-model file name.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|p| p.as_str() == name)
    }

    /// Status and body of this provider's context-overflow answer.
    pub fn overflow_error(self, actual_tokens: u64, max_tokens: u64) -> (u16, String) {
        let body = match self {
            Provider::OpenAi => format!(
                r#"{{"error":{{"message":"This model's maximum context length is {max_tokens} tokens. However, your messages resulted in {actual_tokens} tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}}}"#
            ),
            Provider::Anthropic => format!(
                r#"{{"type":"error","error":{{"type":"invalid_request_error","message":"prompt is too long: {actual_tokens} tokens > {max_tokens} maximum"}}}}"#
            ),
            Provider::Gemini => format!(
                r#"{{"error":{{"code":400,"message":"The input token count ({actual_tokens}) exceeds the maximum number of tokens allowed ({max_tokens}).","status":"INVALID_ARGUMENT"}}}}"#
            ),
            Provider::DashScope => format!(
                r#"{{"error":{{"code":"invalid_parameter_error","message":"<400> InternalError.Algo.InvalidParameter: Range of input length should be [1, {max_tokens}]","param":null,"type":"invalid_request_error"}}}}"#
            ),
            Provider::Vllm => format!(
                r#"{{"object":"error","message":"This model's maximum context length is {max_tokens} tokens. However, you requested {actual_tokens} tokens ({actual_tokens} in the messages, 0 in the completion). Please reduce the length of the messages or completion.","type":"BadRequestError","param":null,"code":400}}"#
            ),
            Provider::LlamaCpp => format!(
                r#"{{"error":{{"code":400,"message":"the request exceeds the available context size. try increasing the context size or enable context shift","type":"exceed_context_size_error","n_prompt_tokens":{actual_tokens},"n_ctx":{max_tokens}}}}}"#
            ),
        };
        (400, body)
    }

    /// Status and body of this provider's context-overflow answer to a request of `messages`
    /// input tokens asking for up to `completion` output tokens, in the wording the provider uses
    /// for that case: OpenAI (and vLLM) name both parts once the completion counts ("you requested
    /// 8256 tokens (64 in the messages, 8192 in the completion)"), and messages alone otherwise;
    /// Anthropic says "prompt is too long" when the input alone is over, and "input length and
    /// `max_tokens` exceed context limit: a + b > max" when only the two together are.
    ///
    /// ```
    /// use ctxbed_harness::model::provider::Provider;
    /// let (_, body) = Provider::OpenAi.overflow_error_split(64, 8_192, 8_192);
    /// assert!(body.contains("you requested 8256 tokens (64 in the messages, 8192 in the completion)"));
    /// let (_, body) = Provider::Anthropic.overflow_error_split(199_759, 8_192, 200_000);
    /// assert!(body.contains("input length and `max_tokens` exceed context limit: 199759 + 8192 > 200000"));
    /// ```
    pub fn overflow_error_split(
        self,
        messages: u64,
        completion: u64,
        max_tokens: u64,
    ) -> (u16, String) {
        let total = messages + completion;
        let body = match self {
            Provider::OpenAi if completion > 0 => format!(
                r#"{{"error":{{"message":"This model's maximum context length is {max_tokens} tokens. However, you requested {total} tokens ({messages} in the messages, {completion} in the completion). Please reduce the length of the messages or completion.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}}}"#
            ),
            Provider::Vllm => format!(
                r#"{{"object":"error","message":"This model's maximum context length is {max_tokens} tokens. However, you requested {total} tokens ({messages} in the messages, {completion} in the completion). Please reduce the length of the messages or completion.","type":"BadRequestError","param":null,"code":400}}"#
            ),
            Provider::Anthropic if messages <= max_tokens => format!(
                r#"{{"type":"error","error":{{"type":"invalid_request_error","message":"input length and `max_tokens` exceed context limit: {messages} + {completion} > {max_tokens}, decrease input length or `max_tokens` and try again"}}}}"#
            ),
            Provider::Anthropic => return self.overflow_error(messages, max_tokens),
            _ => return self.overflow_error(total, max_tokens),
        };
        (400, body)
    }

    /// Status and body of this provider's answer to a tool call without a result
    /// (`message_index` is the position of the offending assistant message).
    pub fn call_without_result_error(self, message_index: usize, call_id: &str) -> (u16, String) {
        let message = match self {
            Provider::Anthropic => format!(
                "messages.{message_index}: `tool_use` ids were found without `tool_result` blocks immediately after: {call_id}. Each `tool_use` block must have a corresponding `tool_result` block in the next message."
            ),
            _ => format!(
                "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: {call_id}"
            ),
        };
        (400, self.invalid_request_body(&message, message_index))
    }

    /// Status and body of this provider's answer to a tool result without a preceding call.
    pub fn result_without_call_error(self, message_index: usize, call_id: &str) -> (u16, String) {
        let message = match self {
            Provider::Anthropic => format!(
                "messages.{message_index}.content.0: unexpected `tool_use_id` found in `tool_result` blocks: {call_id}. Each `tool_result` block must have a corresponding `tool_use` block in the previous message."
            ),
            _ => "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.".to_string(),
        };
        (400, self.invalid_request_body(&message, message_index))
    }

    fn invalid_request_body(self, message: &str, message_index: usize) -> String {
        let message = serde_json::Value::String(message.to_string()).to_string();
        match self {
            Provider::Anthropic => format!(
                r#"{{"type":"error","error":{{"type":"invalid_request_error","message":{message}}}}}"#
            ),
            _ => format!(
                r#"{{"error":{{"message":{message},"type":"invalid_request_error","param":"messages.[{message_index}].role","code":null}}}}"#
            ),
        }
    }
}
