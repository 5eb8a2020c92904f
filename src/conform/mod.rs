//! `ctxbed conform`: wire scenarios run against any harness, through its adapter.
//!
//! For each (scenario, harness) pair, [`run_one`] starts a [`Server`] on
//! an ephemeral loopback port with the scenario's mock model, starts the harness's adapter
//! (`peers/<name>/run`, see docs/peer-protocol.md), sends it the scenario's tools and steps, and
//! collects its replies while a watchdog stops a run that exceeds the scenario's request limit.
//! Then it checks the wire invariants ([`checks`]) and the scenario's expectations over the
//! requests the mock actually received, renders the canonical [`trace`], and compares it with
//! `golden/<scenario>/<harness>.snap` (an insta snapshot) when that golden exists (or blesses it). [`matrix`] turns
//! the reports into `docs/peers.md`.
//!
//! **Invariant:** the adapter's account is never trusted for a check; only its replies and
//! error kinds are (for expectations on them). Every run ends: each read and write has a timeout
//! and ends early on [`INTERRUPTED`], and the server and the adapter's whole process group
//! ([`process`]) are stopped on every path.

pub mod builtin;
mod cell;
pub mod checks;
pub mod continuity;
pub mod explore;
pub mod file;
pub mod generate;
pub mod interrupt;
pub mod matrix;
pub mod mutants;
pub mod peer;
pub mod plant;
pub mod png;
pub mod pool;
pub mod process;
mod reaper;
pub mod record_rules;
pub mod reference;
pub mod refusals;
pub mod report;
mod restart;
pub mod trace;
mod verdict;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use crate::scenario::check::golden::GoldenMode;
use crate::scenario::format::file::Layout;
use crate::serve::{Models, ServeOptions, Server};
use checks::{StepEnd, StepRun};
use ctxbed_harness::model::provider::Provider;
use ctxbed_sim::host::{Api, Exchange, Outcome, ProviderHost};
use file::WireScenario;
use peer::{Launch, Peer, PeerError};
pub use pool::release as release_adapters;

pub use cell::{Source, run_builtin, run_one, run_source};
pub use verdict::{Cell, CellReport};

/// Set when the user asks a conformance run to stop (Ctrl-C, SIGTERM): the running adapter is
/// killed and no further run starts.
pub static INTERRUPTED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

fn interrupted() -> bool {
    INTERRUPTED.load(std::sync::atomic::Ordering::Relaxed)
}

/// What an adapter's `ready` line may say of its harness's context management: its `own`, the
/// `docs recipe` its docs give (used unchanged, where the harness has no token-aware trimming of
/// its own), or `none`.
pub const CONTEXT_KINDS: [&str; 3] = ["own", "docs recipe", "none"];

/// What an adapter's `ready` line may say its harness is: a `library` (the default) or a
/// coding-agent `cli`; the matrix groups a CLI's row under CLIs.
pub const ADAPTER_KINDS: [&str; 2] = ["library", "cli"];

/// How long an adapter may take to start and answer `setup` (Python imports are slow).
pub const SETUP_TIMEOUT: Duration = Duration::from_secs(120);

/// Where a conformance run finds its adapters and writes its logs.
#[derive(Debug, Clone)]
pub struct ConformOptions {
    /// The directory holding one adapter directory per harness (`peers/`).
    pub peers_dir: PathBuf,
    /// Where adapters' standard error goes, one file per (scenario, harness).
    pub logs_dir: PathBuf,
    /// The `ctxbed` executable, given to adapters as `CTXBED_BIN` (the reference adapter runs it).
    pub ctxbed_bin: PathBuf,
    pub mode: GoldenMode,
    /// Adapters given as command lines (`--adapter CMD`), by the name their runs are reported
    /// under; any other harness name is a directory under `peers_dir`. Runs of these have no
    /// goldens: their verdict is the rules alone.
    pub adapters: Vec<(String, String)>,
    /// Let an adapter that declares `"reset": true` serve the next scenario of its harness in
    /// the same process ([`pool`]); false starts a new process for every scenario.
    pub reuse: bool,
}

impl ConformOptions {
    /// How to start the adapter of `harness`.
    pub fn launch(&self, harness: &str) -> Launch {
        match self.adapters.iter().find(|(name, _)| name == harness) {
            Some((_, line)) => Launch::Shell(line.clone()),
            None => Launch::Dir(self.peers_dir.join(harness)),
        }
    }

    fn pins_goldens(&self, harness: &str) -> bool {
        !self.adapters.iter().any(|(name, _)| name == harness)
    }
}

/// The name a scenario file has in the suite (`wire/overflow-openai`).
pub fn scenario_name(path: &Path) -> String {
    Layout::of(path).name
}

#[derive(Default)]
struct DriveOutcome {
    /// The harness's name as its `ready` line gives it.
    name: String,
    version: String,
    context: String,
    /// What the `ready` line says the harness is (`cli`: a coding-agent CLI acting through its
    /// own tools), empty when it says nothing.
    kind: String,
    /// The step stopped for sending more than the scenario's `request_limit` (rule `loop`).
    looped: Option<usize>,
    window: Option<u64>,
    steps: Vec<StepRun>,
    /// Per step, the host's request count before it and after its answer: its requests are
    /// the numbers in between (none sent during `setup` are counted in a step).
    ranges: Vec<(u64, u64)>,
    problem: Option<String>,
    unsupported: Option<String>,
    /// The APIs a request may speak: the one the scenario pins, or those of the provider its
    /// mock imitates.
    apis: Vec<Api>,
}

/// Runs one scenario against one harness: serves its mock, talks to the adapter step by step,
/// stops the server, keeps the requests beside the log and gives each step its exchanges.
async fn drive(
    scenario: &WireScenario,
    harness: &str,
    options: &ConformOptions,
    models: Models,
    serve: ServeOptions,
    log: &Path,
    pool: &mut pool::Pool,
) -> DriveOutcome {
    let mut outcome = DriveOutcome::default();
    let server = match Server::bind(models, &serve).await {
        Ok(server) => server,
        Err(error) => {
            outcome.problem = Some(format!("cannot start the mock server: {error}"));
            return outcome;
        }
    };
    let addr = server.local_addr();
    let served = server.models();
    let Some((_, host)) = served.iter().next() else {
        outcome.problem = Some("the mock server has no model".into());
        return outcome;
    };
    let host: Arc<ProviderHost> = host.clone();
    let script = host.model().script();
    // The harness is told of the advertised window when the scenario has one, and judged by it:
    // a request the enforced window refuses is its provider's overflow to recover from.
    outcome.window = scenario.advertised_window.or(script.info.context_window);
    outcome.apis = match apis_for(scenario, script.imitates) {
        Ok(apis) => apis,
        Err(problem) => {
            outcome.problem = Some(problem);
            return outcome;
        }
    };
    // The API named to the adapter: the pinned one, else the provider's first (Chat Completions
    // for OpenAI, whose Responses API a harness may speak instead).
    let api = outcome.apis[0].as_str();
    let mut env = adapter_env(scenario, api, addr, outcome.window, &options.ctxbed_bin);
    match restart::state_dir(scenario, log) {
        Ok(dir) => env.extend(dir.map(|dir| (restart::STATE_DIR_VARIABLE.into(), dir))),
        Err(problem) => {
            outcome.problem = Some(problem);
            return outcome;
        }
    }
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server_task = tokio::spawn(server.run(async {
        let _ = stopped.await;
    }));
    let adapter = Adapter {
        launch: options.launch(harness),
        env,
        reuse: options.reuse,
    };
    let problem = talk(scenario, &adapter, log, &host, &mut outcome, pool).await;
    outcome.problem = problem;
    let _ = stop.send(());
    let _ = server_task.await;
    settle(scenario, &host, log, &mut outcome);
    outcome
}

/// Gives each step its own exchanges by number (they complete after the step's answer) and
/// keeps them beside the log; a host that kept only some is the run's problem.
fn settle(scenario: &WireScenario, host: &ProviderHost, log: &Path, outcome: &mut DriveOutcome) {
    let exchanges = host.exchanges();
    if host.dropped() > 0 && outcome.problem.is_none() {
        outcome.problem = Some(format!(
            "the mock kept only the first {} requests; {} more were answered but not checked",
            exchanges.len(),
            host.dropped()
        ));
    }
    keep_requests(scenario, host, &exchanges, log);
    assign_exchanges(outcome, &exchanges);
}

/// The APIs a request may speak: those of the provider the mock imitates, or the one the
/// scenario pins (a problem when that provider does not speak it).
fn apis_for(scenario: &WireScenario, imitates: Provider) -> Result<Vec<Api>, String> {
    let provider_apis = if imitates == Provider::Anthropic {
        vec![Api::Anthropic]
    } else {
        vec![Api::OpenAi, Api::Responses]
    };
    match scenario.api {
        Some(pinned) if provider_apis.contains(&pinned) => Ok(vec![pinned]),
        Some(pinned) => Err(format!(
            "the scenario pins api = \"{}\", but its model {} imitates {}, which does not speak it",
            pinned.as_str(),
            scenario.model,
            imitates.as_str()
        )),
        None => Ok(provider_apis),
    }
}

/// Writes every exchange, one JSON line each, to the `.requests.jsonl` beside the log (a
/// warning when it cannot).
fn keep_requests(scenario: &WireScenario, host: &ProviderHost, exchanges: &[Exchange], log: &Path) {
    let window = host.model().script().info.context_window;
    let lines: Vec<String> = exchanges
        .iter()
        .map(|e| crate::serve::record::exchange_line(&scenario.model, window, e))
        .collect();
    let requests = log.with_extension("requests.jsonl");
    if let Err(error) = std::fs::write(&requests, lines.join("\n") + "\n") {
        tracing::warn!(path = %requests.display(), %error, "cannot keep the requests");
    }
}

/// Gives each step the exchanges numbered within its range: token counts are counted apart,
/// the other requests kept.
fn assign_exchanges(outcome: &mut DriveOutcome, exchanges: &[Exchange]) {
    for (run, (before, after)) in outcome.steps.iter_mut().zip(&outcome.ranges) {
        let (counted, requests): (Vec<&Exchange>, Vec<&Exchange>) = exchanges
            .iter()
            .filter(|e| e.number > *before && e.number <= *after)
            .partition(|e| e.outcome == Outcome::CountTokens);
        run.count_tokens = counted.len();
        run.exchanges = requests.into_iter().cloned().collect();
    }
}

fn adapter_env(
    scenario: &WireScenario,
    api: &str,
    addr: std::net::SocketAddr,
    window: Option<u64>,
    ctxbed_bin: &Path,
) -> Vec<(String, String)> {
    let key = "ctxbed-test".to_string();
    let mut env = vec![
        ("CTXBED_API".into(), api.to_string()),
        ("CTXBED_OPENAI_BASE_URL".into(), format!("http://{addr}/v1")),
        ("CTXBED_ANTHROPIC_BASE_URL".into(), format!("http://{addr}")),
        ("CTXBED_MODEL".into(), scenario.model.clone()),
        ("CTXBED_API_KEY".into(), key.clone()),
        (
            "CTXBED_MAX_OUTPUT_TOKENS".into(),
            scenario.max_output_tokens.to_string(),
        ),
        (
            "CTXBED_STREAM".into(),
            if scenario.stream { "1" } else { "0" }.into(),
        ),
        ("CTXBED_BIN".into(), ctxbed_bin.display().to_string()),
        ("OPENAI_API_KEY".into(), key.clone()),
        ("ANTHROPIC_API_KEY".into(), key),
        ("NO_PROXY".into(), "127.0.0.1,localhost".into()),
        ("no_proxy".into(), "127.0.0.1,localhost".into()),
    ];
    if let Some(window) = window {
        env.push(("CTXBED_WINDOW".into(), window.to_string()));
    }
    if let Some(budget) = scenario.thinking_budget {
        env.push(("CTXBED_THINKING_BUDGET".into(), budget.to_string()));
    }
    env
}

/// How a scenario's adapter is started, and with what environment.
struct Adapter {
    launch: Launch,
    env: Vec<(String, String)>,
    /// A kept adapter may serve the scenario, and the adapter may be kept after it.
    reuse: bool,
}

/// Speaks to the adapter for the whole scenario; the steps it ran go into `outcome.steps`
/// (with their request numbers in `outcome.ranges`). Returns the problem
/// that ended the run early, if any. On any problem the adapter's process group is killed, and
/// its log is complete when this returns; after a clean run an adapter that can be reset is
/// kept in `pool` for the next scenario, any other is let exit.
async fn talk(
    scenario: &WireScenario,
    adapter: &Adapter,
    log: &Path,
    host: &ProviderHost,
    outcome: &mut DriveOutcome,
    pool: &mut pool::Pool,
) -> Option<String> {
    let (mut peer, reused) = match pool
        .take(&adapter.launch, &adapter.env, log, adapter.reuse)
        .await
    {
        Ok(taken) => taken,
        Err(error) => return Some(error.to_string()),
    };
    let mut ready = set_up(&mut peer, scenario, outcome).await;
    // A kept adapter that fails to start the scenario is the earlier scenario's leftover, not
    // this scenario's verdict: a new process gets the scenario.
    if reused && let Err(problem) = &ready {
        let (launch, env) = (&adapter.launch, &adapter.env);
        peer = match pool.replace(peer, problem, launch, env, log).await {
            Ok(peer) => peer,
            Err(error) => return Some(error.to_string()),
        };
        ready = set_up(&mut peer, scenario, outcome).await;
    }
    match ready {
        Ok(true) => {
            if outcome.kind == "cli" {
                host.map_calls_to_own_tools(result_counts(scenario));
            }
            match restart::run_segments(peer, scenario, adapter, log, host, outcome).await {
                Ok(last) => peer = last,
                Err(problem) => return Some(problem),
            }
        }
        Ok(false) => {}
        Err(problem) => {
            peer.kill().await;
            return Some(problem);
        }
    }
    let exit = pool.give_back(&adapter.launch, peer, adapter.reuse).await;
    exit.filter(|_| outcome.unsupported.is_none())
}

/// The number of results the scenario scripts per tool, for a CLI row's result files.
fn result_counts(scenario: &WireScenario) -> BTreeMap<String, usize> {
    let counts = scenario
        .tools
        .iter()
        .map(|t| (t.name.clone(), t.results.len()));
    counts.collect()
}

/// Sends `setup` and reads its answer into `outcome`: true when the adapter is ready, false when
/// it cannot speak the scenario's API or run its interrupts.
async fn set_up(
    peer: &mut Peer,
    scenario: &WireScenario,
    outcome: &mut DriveOutcome,
) -> Result<bool, String> {
    let tools: Vec<Value> = scenario
        .tools
        .iter()
        .map(|tool| {
            let results: Vec<Value> = tool
                .results
                .iter()
                .map(|(text, error)| json!({"text": text, "error": error}))
                .collect();
            json!({"name": tool.name, "description": tool.description, "parameters": tool.parameters, "results": results})
        })
        .collect();
    let mut setup = json!({"type": "setup", "system": scenario.system, "tools": tools});
    let restarts = scenario.restarts();
    if !restarts.is_empty() {
        setup["restarts"] = restarts.into();
    }
    peer.send(&setup).await.map_err(|e| e.to_string())?;
    let line = peer
        .receive(SETUP_TIMEOUT)
        .await
        .map_err(|e| e.to_string())?;
    peer.set_resettable(line.get("reset").and_then(Value::as_bool) == Some(true));
    match line.get("type").and_then(Value::as_str) {
        Some("ready") => {
            let name = line.get("harness").and_then(Value::as_str).unwrap_or("");
            outcome.name = name.to_string();
            outcome.version = line
                .get("version")
                .and_then(Value::as_str)
                .unwrap_or("unknown")
                .to_string();
            let context = line.get("context").and_then(Value::as_str).unwrap_or("own");
            if !CONTEXT_KINDS.contains(&context) {
                return Err(PeerError::Garbage {
                    line: format!("{line} (`context` is one of {})", CONTEXT_KINDS.join(", ")),
                }
                .to_string());
            }
            outcome.context = context.to_string();
            outcome.kind = ready_kind(&line)?;
            outcome.unsupported = interrupt::unsupported(scenario, &line);
            Ok(outcome.unsupported.is_none())
        }
        Some("unsupported") => {
            let reason = line
                .get("reason")
                .and_then(Value::as_str)
                .unwrap_or("no reason given");
            outcome.unsupported = Some(reason.to_string());
            Ok(false)
        }
        _ => Err(PeerError::Garbage {
            line: format!("{line} (expected `ready` or `unsupported`)"),
        }
        .to_string()),
    }
}

/// The `kind` a `ready` line declares (empty when it declares none); one not in
/// [`ADAPTER_KINDS`] is a protocol error.
fn ready_kind(line: &Value) -> Result<String, String> {
    match line.get("kind") {
        None => Ok(String::new()),
        Some(kind) => match kind.as_str() {
            Some(kind) if ADAPTER_KINDS.contains(&kind) => Ok(kind.to_string()),
            _ => Err(PeerError::Garbage {
                line: format!("{line} (`kind` is one of {})", ADAPTER_KINDS.join(", ")),
            }
            .to_string()),
        },
    }
}

/// Runs the scenario's steps of `indices` in order, recording each; the problem that ended them
/// early, if any (its step is recorded as an adapter error).
async fn run_steps(
    peer: &mut Peer,
    scenario: &WireScenario,
    indices: std::ops::Range<usize>,
    host: &ProviderHost,
    outcome: &mut DriveOutcome,
) -> Result<(), String> {
    let timeout = Duration::from_secs(scenario.step_timeout_seconds);
    for (index, step) in scenario
        .steps
        .iter()
        .enumerate()
        .skip(indices.start)
        .take(indices.len())
    {
        let number = index + 1;
        host.begin_step(number, &step.input);
        let before = host.request_count();
        let mut line = json!({"type": "step", "step": number, "user": step.user, "session": step.session, "input": step.input});
        if !step.images.is_empty() {
            line["images"] = png::step_images(number, &step.images).into();
        }
        for (field, asked) in [("interrupt", step.interrupt), ("crash", step.crash)] {
            if asked {
                line[field] = true.into();
            }
        }
        let answer = match peer.send(&line).await {
            Err(error) => Some(Err(error)),
            Ok(()) => {
                let receive = peer.receive(timeout);
                let limit = over_limit(host, before + scenario.request_limit);
                tokio::select! {
                    biased;
                    answer = receive => Some(answer),
                    () = limit => None,
                }
            }
        };
        let problem = match answer {
            None if interrupted() => PeerError::Interrupted.to_string(),
            None => {
                outcome.looped = Some(number);
                checks::loop_detail(number, scenario.request_limit)
            }
            // The step asked for its process to end: it ended as asked, and a new one takes over.
            Some(Err(PeerError::Exited { .. })) if step.crash => {
                record_step(outcome, host, before, interrupt::crashed());
                continue;
            }
            Some(Err(error)) => error.to_string(),
            Some(Ok(line)) => match parse_end(&line, number, step.interrupt) {
                Ok(end) => {
                    record_step(outcome, host, before, end);
                    continue;
                }
                Err(problem) => problem,
            },
        };
        let end = StepEnd::Error {
            kind: "adapter".into(),
            message: problem.clone(),
        };
        record_step(outcome, host, before, end);
        return Err(problem);
    }
    Ok(())
}

/// Records how a step ended and which request numbers it caused; `drive` fills in the step's
/// exchanges by those numbers once the host has finished recording them.
fn record_step(outcome: &mut DriveOutcome, host: &ProviderHost, before: u64, end: StepEnd) {
    outcome.ranges.push((before, host.request_count()));
    outcome.steps.push(StepRun {
        end,
        exchanges: Vec::new(),
        count_tokens: 0,
    });
}

/// Completes when the host has received more than `limit` requests in all (the step's first
/// request number before it plus the scenario's `request_limit`), or the run is interrupted.
async fn over_limit(host: &ProviderHost, limit: u64) {
    loop {
        if host.request_count() > limit || interrupted() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn parse_end(line: &Value, number: usize, interrupt: bool) -> Result<StepEnd, String> {
    let step = line.get("step").and_then(Value::as_u64);
    if step != Some(number as u64) {
        return Err(format!(
            "the adapter answered {line} to step {number} (wrong or missing `step`)"
        ));
    }
    match line.get("type").and_then(Value::as_str) {
        Some("reply") => Ok(StepEnd::Reply(
            line.get("text")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
        )),
        Some("error") => {
            let kind = line.get("kind").and_then(Value::as_str).unwrap_or("other");
            let kind = if file::ERROR_KINDS.contains(&kind) {
                kind
            } else {
                "other"
            };
            Ok(StepEnd::Error {
                kind: kind.to_string(),
                message: line
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
            })
        }
        Some("interrupted") => interrupt::end(number, interrupt),
        // The adapter gives the step up (a test's code ended it without answering): it fails
        // at once, with the adapter's reason, instead of at the step timeout.
        Some("unanswered") => Err(format!(
            "step {number} was never answered: {}",
            line.get("reason")
                .and_then(Value::as_str)
                .unwrap_or("no reason given")
        )),
        _ => Err(format!(
            "the adapter answered {line} to step {number} (expected `reply`, `error` or `interrupted`)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::ready_kind;
    use serde_json::json;

    #[test]
    fn a_ready_line_may_say_its_harness_is_a_cli_and_nothing_else() {
        let kind = |line| ready_kind(&line);
        assert_eq!(kind(json!({"type": "ready"})), Ok(String::new()));
        assert_eq!(
            kind(json!({"type": "ready", "kind": "cli"})),
            Ok("cli".into())
        );
        assert_eq!(
            kind(json!({"type": "ready", "kind": "library"})),
            Ok("library".into())
        );
        let wrong = kind(json!({"type": "ready", "kind": "gui"})).expect_err("refused");
        assert!(wrong.contains("`kind` is one of library, cli"), "{wrong}");
        assert!(kind(json!({"type": "ready", "kind": 3})).is_err());
    }
}
