//! The session tools: `session_list`, `session_history` and `session_search`, over the agent's
//! session log, so the model can look up evidence that compaction removed from its context.
//!
//! - `session_list(agentId?)` lists the sessions of the calling user, with message and call
//!   counts; the calling session is marked.
//! - `session_history(sessionId, agentId?, lastN?)` shows the last messages of one session's
//!   durable history (every committed message, latest version, as the log keeps it).
//! - `session_search(query, agentId?)` finds messages containing the query (case-insensitive)
//!   across the calling user's sessions.
//!
//! **Invariant:** the user whose sessions are read is always the runtime context's user
//! ([`ToolContext::runtime`]), never an argument: the model cannot name another user, so a user
//! only ever sees their own sessions. `agentId` (default: the calling agent) selects among the
//! agents sharing the log, within that user. A session without an id is listed and named `-`.
//!
//! ```
//! use std::sync::Arc;
//! use ctxbed_harness::message::ToolCall;
//! use ctxbed_harness::runtime::RuntimeContext;
//! use ctxbed_harness::session::{MemorySessionLog, SessionLog};
//! use ctxbed_harness::tools::session::SessionTool;
//! use ctxbed_harness::tools::{Tool, ToolContext};
//! let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
//! runtime.block_on(async {
//!     let log: Arc<dyn SessionLog> = Arc::new(MemorySessionLog::new());
//!     let tool = SessionTool::list(log);
//!     let call = ToolCall { id: "c1".into(), name: "session_list".into(), arguments: serde_json::json!({}) };
//!     let context = ToolContext { agent_id: "a".into(), runtime: RuntimeContext::new().with_user("alice"), call_id: "call-1".into() };
//!     let outcome = tool.call(&call, &context).await;
//!     assert_eq!(outcome, ctxbed_harness::tools::ToolOutcome::text("no sessions of agent `a` for this user"));
//! });
//! ```

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::json;

use crate::format::snippet;
use crate::limits::{
    SESSION_HISTORY_DEFAULT, SESSION_HISTORY_MAX, SESSION_QUERY_CHARS_MAX,
    SESSION_SEARCH_RESULTS_MAX, SESSION_SNIPPET_CHARS_MAX, SESSIONS_LISTED_MAX,
};
use crate::message::{ContentPart, Message, ToolCall};
use crate::session::{SessionLog, SessionLogKey, durable_history};
use crate::tools::args::Arguments;
use crate::tools::{Tool, ToolContext, ToolOutcome, ToolSchema};

/// Characters of an agent or session id argument.
const ID_CHARS_MAX: usize = 200;

/// How a session without an id is named in listings and arguments.
pub const NO_SESSION_ID: &str = "-";

/// One of the session tools over a session log.
pub struct SessionTool {
    kind: Kind,
    schema: ToolSchema,
    log: Arc<dyn SessionLog>,
}

#[derive(Debug, Clone, Copy)]
enum Kind {
    List,
    History,
    Search,
}

/// The three session tools over one log.
pub fn session_tools(log: Arc<dyn SessionLog>) -> Vec<Arc<dyn Tool>> {
    vec![
        Arc::new(SessionTool::list(log.clone())),
        Arc::new(SessionTool::history(log.clone())),
        Arc::new(SessionTool::search(log)),
    ]
}

fn agent_property() -> serde_json::Value {
    json!({"type": "string", "description": "The agent whose sessions to read (default: you)."})
}

impl SessionTool {
    /// `session_list` over `log`.
    pub fn list(log: Arc<dyn SessionLog>) -> Self {
        SessionTool {
            kind: Kind::List,
            schema: ToolSchema {
                name: "session_list".to_string(),
                description: "List your earlier sessions with this user, with message counts; \
                              read one with session_history."
                    .to_string(),
                parameters: json!({
                    "type": "object",
                    "properties": { "agentId": agent_property() },
                }),
            },
            log,
        }
    }

    async fn list_sessions(
        &self,
        call: &ToolCall,
        context: &ToolContext,
    ) -> Result<String, ToolOutcome> {
        let agent = Arguments::parse(&self.schema, &call.arguments)
            .and_then(|arguments| arguments.optional_string("agentId", ID_CHARS_MAX))
            .map_err(|error| error.outcome(&self.schema))?
            .unwrap_or(&context.agent_id);
        let sessions = list(self.log.as_ref(), agent, context).await?;
        if sessions.is_empty() {
            return Ok(format!("no sessions of agent `{agent}` for this user"));
        }
        let mut lines = vec![format!(
            "{} of agent `{agent}` for this user:",
            counted(sessions.len(), "session", "sessions")
        )];
        for session in sessions.iter().take(SESSIONS_LISTED_MAX) {
            let records = load(self.log.as_ref(), agent, context, session).await?;
            let messages = durable_history(&records).map_or(0, |messages| messages.len());
            let calls = records.iter().filter(|r| r.kind == "run/start").count();
            let current = if agent == context.agent_id
                && session.as_deref() == context.runtime.session_id.as_deref()
            {
                " (this session)"
            } else {
                ""
            };
            lines.push(format!(
                "- {}: {}, {}{current}",
                name(session),
                counted(messages, "message", "messages"),
                counted(calls, "call", "calls")
            ));
        }
        if sessions.len() > SESSIONS_LISTED_MAX {
            lines.push(format!(
                "({} more not listed)",
                sessions.len() - SESSIONS_LISTED_MAX
            ));
        }
        Ok(lines.join("\n"))
    }

    /// `session_history` over `log`.
    pub fn history(log: Arc<dyn SessionLog>) -> Self {
        SessionTool {
            kind: Kind::History,
            schema: ToolSchema {
                name: "session_history".to_string(),
                description: "Read the last messages of one of your sessions, as committed \
                              (compaction never shortens it)."
                    .to_string(),
                parameters: json!({
                    "type": "object",
                    "properties": {
                        "sessionId": {"type": "string", "description": format!("A session from session_list (`{NO_SESSION_ID}` for the one without an id).")},
                        "agentId": agent_property(),
                        "lastN": {
                            "type": "integer",
                            "minimum": 1,
                            "maximum": SESSION_HISTORY_MAX,
                            "description": format!("Messages to show (default {SESSION_HISTORY_DEFAULT})."),
                        },
                    },
                    "required": ["sessionId"],
                }),
            },
            log,
        }
    }

    async fn read_history(
        &self,
        call: &ToolCall,
        context: &ToolContext,
    ) -> Result<String, ToolOutcome> {
        let (session, agent, last) = Arguments::parse(&self.schema, &call.arguments)
            .and_then(|arguments| {
                Ok((
                    arguments.required_string("sessionId", ID_CHARS_MAX)?,
                    arguments.optional_string("agentId", ID_CHARS_MAX)?,
                    arguments.optional_count("lastN", 1, SESSION_HISTORY_MAX as u64)?,
                ))
            })
            .map_err(|error| error.outcome(&self.schema))?;
        let agent = agent.unwrap_or(&context.agent_id);
        let last = last.map_or(SESSION_HISTORY_DEFAULT, |n| {
            usize::try_from(n).unwrap_or(SESSION_HISTORY_MAX)
        });
        let sessions = list(self.log.as_ref(), agent, context).await?;
        let Some(session) = sessions.iter().find(|s| name(s) == session) else {
            let known: Vec<String> = sessions
                .iter()
                .take(SESSIONS_LISTED_MAX)
                .map(name)
                .collect();
            return Err(ToolOutcome::error(format!(
                "no session `{session}` of agent `{agent}` for this user; sessions: {}",
                if known.is_empty() {
                    "none".to_string()
                } else {
                    known.join(", ")
                }
            )));
        };
        let records = load(self.log.as_ref(), agent, context, session).await?;
        let messages = durable_history(&records).map_err(|(index, reason)| {
            ToolOutcome::error(format!(
                "session `{}` has an unreadable message record ({index}): {reason}",
                name(session)
            ))
        })?;
        let start = messages.len().saturating_sub(last);
        let mut lines = vec![format!(
            "session {}: last {} of {}",
            name(session),
            messages.len() - start,
            counted(messages.len(), "message", "messages")
        )];
        lines.extend(messages[start..].iter().map(|message| {
            format!(
                "[{}] {}",
                message.id,
                snippet(&describe(message), SESSION_SNIPPET_CHARS_MAX)
            )
        }));
        Ok(lines.join("\n"))
    }

    /// `session_search` over `log`.
    pub fn search(log: Arc<dyn SessionLog>) -> Self {
        SessionTool {
            kind: Kind::Search,
            schema: ToolSchema {
                name: "session_search".to_string(),
                description: "Search the committed messages of your sessions for a phrase \
                              (case-insensitive); read around a hit with session_history."
                    .to_string(),
                parameters: json!({
                    "type": "object",
                    "properties": {
                        "query": {"type": "string", "description": "Text to look for."},
                        "agentId": agent_property(),
                    },
                    "required": ["query"],
                }),
            },
            log,
        }
    }

    async fn search_messages(
        &self,
        call: &ToolCall,
        context: &ToolContext,
    ) -> Result<String, ToolOutcome> {
        let (query, agent) = Arguments::parse(&self.schema, &call.arguments)
            .and_then(|arguments| {
                Ok((
                    arguments.required_string("query", SESSION_QUERY_CHARS_MAX)?,
                    arguments.optional_string("agentId", ID_CHARS_MAX)?,
                ))
            })
            .map_err(|error| error.outcome(&self.schema))?;
        let agent = agent.unwrap_or(&context.agent_id);
        let needle = query.trim().to_lowercase();
        if needle.is_empty() {
            return Err(ToolOutcome::error(
                "the query is blank; search for a phrase, e.g. \"export timeout\"",
            ));
        }
        let sessions = list(self.log.as_ref(), agent, context).await?;
        let searched = sessions.len().min(SESSIONS_LISTED_MAX);
        let mut found = Found::default();
        for session in sessions.iter().take(SESSIONS_LISTED_MAX) {
            let records = load(self.log.as_ref(), agent, context, session).await?;
            // A session with an unreadable record is skipped by search; session_history names it.
            let messages = durable_history(&records).unwrap_or_default();
            found.search(session, &messages, &needle);
        }
        if found.matched == 0 {
            return Ok(format!(
                "no messages contain {} in {} of agent `{agent}` for this user",
                quoted(query),
                counted(searched, "session", "sessions")
            ));
        }
        Ok(found.render(query, searched))
    }
}

/// What a search found so far: the listed hits, and how many messages and sessions matched.
#[derive(Default)]
struct Found {
    hits: Vec<String>,
    matched: usize,
    matched_sessions: usize,
}

impl Found {
    /// Searches one session's messages for `needle` (already folded to lower case).
    fn search(&mut self, session: &Option<String>, messages: &[Message], needle: &str) {
        let before = self.matched;
        for message in messages {
            let text = describe(message);
            let Some(at) = find_folded(&text, needle) else {
                continue;
            };
            self.matched += 1;
            if self.hits.len() < SESSION_SEARCH_RESULTS_MAX {
                self.hits.push(format!(
                    "- {} [{}] {}",
                    name(session),
                    message.id,
                    around(&text, at, SESSION_SNIPPET_CHARS_MAX)
                ));
            }
        }
        if self.matched > before {
            self.matched_sessions += 1;
        }
    }

    /// The result of a search that matched: a count line, the hits, and how many are not listed.
    fn render(self, query: &str, searched: usize) -> String {
        let mut lines = vec![format!(
            "{} for {} in {} (of {} searched):",
            counted(self.matched, "match", "matches"),
            quoted(query),
            counted(self.matched_sessions, "session", "sessions"),
            searched
        )];
        lines.extend(self.hits);
        if self.matched > SESSION_SEARCH_RESULTS_MAX {
            lines.push(format!(
                "({} more not listed; search for a longer phrase)",
                self.matched - SESSION_SEARCH_RESULTS_MAX
            ));
        }
        lines.join("\n")
    }
}

/// The calling user's sessions of `agent`, as the log lists them.
async fn list(
    log: &dyn SessionLog,
    agent: &str,
    context: &ToolContext,
) -> Result<Vec<Option<String>>, ToolOutcome> {
    log.sessions(agent, context.runtime.user_id.as_deref())
        .await
        .map_err(|error| ToolOutcome::error(format!("cannot list sessions: {error}")))
}

/// The committed records of one of the calling user's sessions.
async fn load(
    log: &dyn SessionLog,
    agent: &str,
    context: &ToolContext,
    session: &Option<String>,
) -> Result<Vec<crate::session::SessionRecord>, ToolOutcome> {
    let key = SessionLogKey {
        agent_id: agent.to_string(),
        user_id: context.runtime.user_id.clone(),
        session_id: session.clone(),
    };
    log.load(&key)
        .await
        .map(|loaded| loaded.records)
        .map_err(|error| {
            ToolOutcome::error(format!("cannot read session `{}`: {error}", name(session)))
        })
}

fn name(session: &Option<String>) -> String {
    session.clone().unwrap_or_else(|| NO_SESSION_ID.to_string())
}

/// A message as one line of text: role, then its parts.
fn describe(message: &Message) -> String {
    let mut parts = Vec::new();
    for part in &message.parts {
        match part {
            ContentPart::Text { text } => parts.push(text.clone()),
            ContentPart::Thinking { .. } | ContentPart::RedactedThinking { .. } => {}
            ContentPart::ToolCall(call) => {
                parts.push(format!(
                    "calls {}({}) [{}]",
                    call.name, call.arguments, call.id
                ));
            }
            ContentPart::ToolResult(result) => parts.push(format!(
                "result of {} [{}]{}: {}",
                result.tool_name,
                result.call_id,
                if result.is_error { " (error)" } else { "" },
                result.text()
            )),
            ContentPart::Media { .. } => parts.push("[media]".to_string()),
            ContentPart::Image(image) => {
                parts.push(format!("[image {}x{}]", image.width, image.height));
            }
        }
    }
    format!("{}: {}", message.role.as_str(), parts.join(" "))
}

/// The character position of `needle` (already lower-cased) in `text`, ignoring case.
fn find_folded(text: &str, needle: &str) -> Option<usize> {
    let chars: Vec<char> = text.chars().collect();
    let folded: Vec<String> = chars.iter().map(|c| c.to_lowercase().collect()).collect();
    let needle: Vec<char> = needle.chars().collect();
    (0..chars.len()).find(|&start| {
        let mut wanted = needle.iter();
        for piece in &folded[start..] {
            for c in piece.chars() {
                match wanted.next() {
                    Some(w) if *w == c => {}
                    Some(_) => return false,
                    None => return true,
                }
            }
            if wanted.len() == 0 {
                return true;
            }
        }
        wanted.len() == 0
    })
}

/// About `max` characters of `text` around character `at`, escaped.
fn around(text: &str, at: usize, max: usize) -> String {
    let start = at.saturating_sub(max / 4);
    let window: String = text.chars().skip(start).take(max).collect();
    let prefix = if start > 0 { "…" } else { "" };
    format!("{prefix}{}", snippet(&window, max))
}

fn counted(count: usize, one: &str, many: &str) -> String {
    format!("{count} {}", if count == 1 { one } else { many })
}

fn quoted(text: &str) -> String {
    format!("\"{}\"", snippet(text, 80))
}

#[async_trait]
impl Tool for SessionTool {
    fn schema(&self) -> &ToolSchema {
        &self.schema
    }

    async fn call(&self, call: &ToolCall, context: &ToolContext) -> ToolOutcome {
        let result = match self.kind {
            Kind::List => self.list_sessions(call, context).await,
            Kind::History => self.read_history(call, context).await,
            Kind::Search => self.search_messages(call, context).await,
        };
        result.map_or_else(|error| error, ToolOutcome::text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folded_search_ignores_case_and_finds_the_first_hit() {
        assert_eq!(find_folded("Export TIMEOUT in export", "timeout"), Some(7));
        assert_eq!(find_folded("abc", "abcd"), None);
        assert_eq!(find_folded("ÄBC", "äb"), Some(0));
        assert_eq!(find_folded("", "a"), None);
    }
}
