//! One whole agent call over a long history: what the harness does around `prepare`.
//!
//! `agent_step/N/...` measures `HarnessAgent::call` with a history of N messages loaded (the
//! history of `preparation`: a user turn, then tool exchanges with 400-character results) and
//! a model that answers at once without reading the request, so only the harness is measured:
//! the user message, sources and workspace (none), offload's look at every result, the task
//! projection, `prepare`, the commit, the manifest's delivery and the reply. In `no_log` and
//! `log` compaction is off, so the history keeps its length. Each batch of [`CALLS_PER_AGENT`]
//! timed calls runs on a fresh agent after [`WARM_UP_CALLS`] untimed ones (the first logs the
//! loaded history; the later ones let the per-thread memos drop what the previous batch left
//! in them, which would otherwise be freed inside the timed calls), so the history grows by at
//! most 2 × (`WARM_UP_CALLS` + `CALLS_PER_AGENT`) messages while it is measured.
//!
//! `no_log` runs without a session log; `log` with the default JSON-lines log in the in-memory
//! workspace, which records every message once and every step's manifest (one item per
//! message, as the specification asks), so a step with the log writes a record as long as the
//! history. The log is measured up to 10,000 messages: at 100,000 one manifest is about 12 MB
//! and a few calls reach the log's size limit. `default` is the agent as built by default:
//! the log, and compaction on, so the untimed first call compacts the loaded history and the
//! timed calls work on a short one while the log keeps every message.

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use criterion::{BenchmarkId, Criterion};
use ctxbed_harness::agent::HarnessAgent;
use ctxbed_harness::message::Message;
use ctxbed_harness::model::{Model, ModelError, ModelInfo, ModelReply, ModelRequest};
use ctxbed_harness::runtime::RuntimeContext;

use crate::preparation::history;
use crate::record::{self, Record};

/// History lengths measured; the smoke test stops at the first.
const HISTORY_SIZES: [usize; 4] = [100, 1_000, 10_000, 100_000];
/// The longest history measured with the session log.
const LOGGED_MESSAGES_MAX: usize = 10_000;
/// Timed calls on one agent before a fresh one is built.
const CALLS_PER_AGENT: u64 = 10;
/// Untimed calls on a fresh agent before its timed ones.
const WARM_UP_CALLS: usize = 4;

/// How the measured agent is built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Setup {
    /// Compaction off, no session log.
    NoLog,
    /// Compaction off, the default session log.
    Log,
    /// The defaults: compaction on, the session log.
    Default,
}

impl Setup {
    const ALL: [Setup; 3] = [Setup::NoLog, Setup::Log, Setup::Default];

    fn name(self) -> &'static str {
        match self {
            Setup::NoLog => "no_log",
            Setup::Log => "log",
            Setup::Default => "default",
        }
    }
}

pub struct AgentSteps {
    record: Record,
}

/// A model that replies "done" at once and never reads the request.
struct Answer(ModelInfo);

#[async_trait]
impl Model for Answer {
    fn info(&self) -> &ModelInfo {
        &self.0
    }

    async fn call(&self, _request: &ModelRequest) -> Result<ModelReply, ModelError> {
        Ok(ModelReply {
            message: Message::assistant("reply", "done"),
            usage: None,
        })
    }
}

fn agent(setup: Setup) -> HarnessAgent {
    let model = Answer(ModelInfo {
        name: "answer".into(),
        context_window: Some(1_000_000_000),
        max_output_tokens: None,
    });
    let builder = HarnessAgent::builder().name("bench").model(Arc::new(model));
    let builder = match setup {
        Setup::NoLog => builder.disable_compaction().disable_session_log(),
        Setup::Log => builder.disable_compaction(),
        Setup::Default => builder,
    };
    match builder.build() {
        Ok(agent) => agent,
        Err(error) => panic!("the benchmark agent builds: {error}"),
    }
}

/// Time spent in `iterations` calls over `messages`, in batches on fresh agents.
fn timed_calls(
    runtime: &tokio::runtime::Runtime,
    messages: &[Message],
    setup: Setup,
    iterations: u64,
) -> Duration {
    let mut total = Duration::ZERO;
    let mut left = iterations;
    while left > 0 {
        let batch = left.min(CALLS_PER_AGENT);
        total += runtime.block_on(async {
            let agent = agent(setup);
            let context = RuntimeContext::new();
            agent.load_history(&context, messages.to_vec());
            for _ in 0..WARM_UP_CALLS {
                call(&agent, &context).await;
            }
            let start = Instant::now();
            for _ in 0..batch {
                call(&agent, &context).await;
            }
            start.elapsed()
        });
        left -= batch;
    }
    total
}

async fn call(agent: &HarnessAgent, context: &RuntimeContext) {
    if let Err(error) = agent.call("Go on.", context.clone()).await {
        panic!("the benchmark call succeeds: {error}");
    }
}

pub fn run(criterion: &mut Criterion, smoke_test: bool) -> AgentSteps {
    let record = Record::default();
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
    else {
        panic!("a current-thread runtime builds");
    };
    let sizes = if smoke_test {
        &HISTORY_SIZES[..1]
    } else {
        &HISTORY_SIZES[..]
    };
    for &size in sizes {
        let messages = history(size);
        let mut group = criterion.benchmark_group(format!("agent_step/{size}"));
        for setup in Setup::ALL {
            if setup == Setup::Log && size > LOGGED_MESSAGES_MAX {
                continue;
            }
            let name = setup.name();
            record.bench_custom(
                &mut group,
                BenchmarkId::from_parameter(name),
                &format!("{name}/{size}"),
                |iterations| timed_calls(&runtime, &messages, setup, iterations),
            );
        }
        group.finish();
    }
    AgentSteps { record }
}

impl AgentSteps {
    pub fn print(&self) {
        if self.record.is_empty() {
            return;
        }
        eprintln!("\n## One agent call (the harness around `prepare`), against 100 messages");
        eprintln!(
            "| messages | no session log | × 100 msgs | per message | session log | × 100 msgs | per message | defaults (compaction, log) | × 100 msgs | per message |"
        );
        eprintln!("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
        for size in HISTORY_SIZES {
            eprint!("| {size} |");
            for name in Setup::ALL.map(Setup::name) {
                let at_size = self.record.seconds(&format!("{name}/{size}"));
                let at_100 = self.record.seconds(&format!("{name}/100"));
                eprint!(
                    " {} | {} | {} |",
                    record::time(at_size),
                    record::ratio(at_size, at_100),
                    record::time(at_size.map(|s| s / size as f64)),
                );
            }
            eprintln!();
        }
    }
}
