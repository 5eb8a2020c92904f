//! The streamed-reply assembler of each wire format, behind one type.

use crate::{ProviderKind, anthropic, openai, responses, sse};
use ctxbed_harness::model::{ModelError, ModelReply};

/// The streamed-reply assembler of one wire format.
pub(crate) enum Assembler {
    OpenAi(openai::StreamAssembler),
    Anthropic(anthropic::StreamAssembler),
    Responses(responses::StreamAssembler),
}

impl Assembler {
    pub(crate) fn new(kind: ProviderKind) -> Self {
        match kind {
            ProviderKind::OpenAi => Assembler::OpenAi(openai::StreamAssembler::default()),
            ProviderKind::Anthropic => Assembler::Anthropic(anthropic::StreamAssembler::default()),
            ProviderKind::Responses => Assembler::Responses(responses::StreamAssembler::default()),
        }
    }

    pub(crate) fn event(&mut self, event: &sse::SseEvent) -> Result<bool, ModelError> {
        match self {
            Assembler::OpenAi(assembler) => assembler.event(&event.data),
            Assembler::Anthropic(assembler) => assembler.event(event.event.as_deref(), &event.data),
            Assembler::Responses(assembler) => assembler.event(event.event.as_deref(), &event.data),
        }
    }

    pub(crate) fn finish(self) -> Result<ModelReply, ModelError> {
        match self {
            Assembler::OpenAi(assembler) => assembler.finish(),
            Assembler::Anthropic(assembler) => assembler.finish(),
            Assembler::Responses(assembler) => assembler.finish(),
        }
    }
}
