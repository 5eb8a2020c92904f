//! Which routes `serve` answers, as the imitated provider has them. OpenAI and Anthropic serve
//! their APIs at exact paths under `/v1`: `POST /v1/chat/completions`, `POST /v1/responses`,
//! `POST /v1/messages`, `POST /v1/messages/count_tokens` (Anthropic's alone) and
//! `GET /v1/models`; anything else, `/v1/v1/chat/completions` or `/anything/chat/completions`
//! among them, is their 404. Servers whose OpenAI-compatible routes sit under other prefixes
//! (vLLM, llama.cpp, Gemini's and DashScope's compatibility endpoints) are matched by the
//! route's ending, as before.

use ctxbed_harness::model::provider::Provider;

/// The API routes, by their ending.
const ENDINGS: [&str; 4] = [
    "/chat/completions",
    "/responses",
    "/messages",
    "/messages/count_tokens",
];

/// Anthropic's token-counting route, which OpenAI does not have.
const COUNT_TOKENS: &str = "/v1/messages/count_tokens";

/// What a request asks of the server, by its method and path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Route {
    /// `GET …/models`.
    Models,
    /// A `POST` to an API route.
    Api,
    /// A route the imitated provider does not have.
    NotFound,
}

/// The route `method` and `path` name on a server whose models imitate `imitated` (each
/// model's provider).
pub(super) fn route(method: &http::Method, path: &str, imitated: &[Provider]) -> Route {
    let path = match path.trim_end_matches('/') {
        "" => "/",
        trimmed => trimmed,
    };
    let exact = !imitated.is_empty()
        && imitated
            .iter()
            .all(|p| matches!(p, Provider::OpenAi | Provider::Anthropic));
    let names = |end: &str| {
        if exact {
            path.strip_prefix("/v1") == Some(end)
        } else {
            path.ends_with(end)
        }
    };
    if *method == http::Method::GET && names("/models") {
        return Route::Models;
    }
    if *method != http::Method::POST || !ENDINGS.iter().any(|end| names(end)) {
        return Route::NotFound;
    }
    // OpenAI has no token counting: its 404, as for any route it lacks.
    let counts = if exact {
        path == COUNT_TOKENS
    } else {
        path.ends_with(COUNT_TOKENS.trim_start_matches("/v1"))
    };
    if counts && imitated.iter().all(|p| *p == Provider::OpenAi) {
        return Route::NotFound;
    }
    Route::Api
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::Method;

    #[test]
    fn openai_and_anthropic_routes_are_their_exact_paths() {
        let post = |path: &str, imitated: &[Provider]| route(&Method::POST, path, imitated);
        for provider in [Provider::OpenAi, Provider::Anthropic] {
            for path in [
                "/v1/chat/completions",
                "/v1/responses",
                "/v1/messages",
                "/v1/messages/",
            ] {
                assert_eq!(post(path, &[provider]), Route::Api, "{path}");
            }
            for path in [
                "/v1/v1/chat/completions",
                "/anything/chat/completions",
                "/chat/completions",
                "/v2/responses",
                "/api/v1/messages",
            ] {
                assert_eq!(post(path, &[provider]), Route::NotFound, "{path}");
            }
            assert_eq!(
                route(&Method::GET, "/v1/models", &[provider]),
                Route::Models
            );
            assert_eq!(route(&Method::GET, "/models", &[provider]), Route::NotFound);
            assert_eq!(
                route(&Method::GET, "/v1/chat/completions", &[provider]),
                Route::NotFound
            );
        }
        // Token counting is Anthropic's alone.
        let count = "/v1/messages/count_tokens";
        assert_eq!(post(count, &[Provider::Anthropic]), Route::Api);
        assert_eq!(post(count, &[Provider::OpenAi]), Route::NotFound);
        assert_eq!(
            post(count, &[Provider::OpenAi, Provider::Anthropic]),
            Route::Api
        );
    }

    #[test]
    fn other_servers_are_matched_by_the_routes_ending() {
        for path in [
            "/v1/chat/completions",
            "/compatible-mode/v1/chat/completions",
            "/chat/completions",
        ] {
            assert_eq!(
                route(&Method::POST, path, &[Provider::LlamaCpp]),
                Route::Api,
                "{path}"
            );
        }
        assert_eq!(
            route(&Method::POST, "/v1/foo", &[Provider::Vllm]),
            Route::NotFound
        );
        assert_eq!(
            route(
                &Method::POST,
                "/v1/chat/completions",
                &[Provider::OpenAi, Provider::Vllm]
            ),
            Route::Api
        );
    }
}
