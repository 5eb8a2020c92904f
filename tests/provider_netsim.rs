//! The OpenAI-compatible provider over turmoil's simulated network, against the in-process
//! provider host serving a mock model: latency, resets, cut streams and partitions, all in
//! simulated time and reproducible from the seed.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use ctxbed_harness::message::Message;
use ctxbed_harness::model::{Model, ModelError, ModelInfo, ModelReply, ModelRequest, Purpose};
use ctxbed_providers::{HttpProvider, ProviderConfig, ProviderKind, RetryPolicy};
use ctxbed_sim::mock::{MockModel, MockScript, MockTurn, ScriptedError, TurnAction};
use ctxbed_sim::netsim::{HostFaults, ProviderHost, TurmoilTransport, serve};

/// One network experiment: a script behind the host, faults, and the client's settings.
struct Experiment {
    seed: u64,
    turns: Vec<MockTurn>,
    faults: HostFaults,
    attempts_max: u32,
    request_timeout: Duration,
    /// Partition the client from the provider from the start until this time (`None`: never).
    partition_until: Option<Duration>,
}

impl Experiment {
    fn new(turns: Vec<MockTurn>) -> Self {
        Experiment {
            seed: 7,
            turns,
            faults: HostFaults::default(),
            attempts_max: 1,
            request_timeout: Duration::from_secs(30),
            partition_until: None,
        }
    }
}

/// What happened: the client's result, the requests the host saw, and the simulated time.
#[derive(Debug, PartialEq)]
struct Outcome {
    result: Result<ModelReply, ModelError>,
    host_requests: u64,
    elapsed: Duration,
}

fn script(turns: Vec<MockTurn>) -> MockScript {
    MockScript::new(
        ModelInfo {
            name: "behind-the-network".into(),
            context_window: Some(8_000),
            max_output_tokens: None,
        },
        turns,
    )
}

fn request() -> ModelRequest {
    ModelRequest {
        call_id: "c1".into(),
        purpose: Purpose::Reasoning,
        messages: vec![Message::user("m1", "Is the build green?")].into(),
        tools: Default::default(),
        max_output_tokens: None,
    }
}

fn run(experiment: Experiment) -> Outcome {
    let mut sim = turmoil::Builder::new()
        .rng_seed(experiment.seed)
        .min_message_latency(Duration::from_millis(2))
        .max_message_latency(Duration::from_millis(40))
        .simulation_duration(Duration::from_secs(3_600))
        .build();
    let host = Arc::new(ProviderHost::new(
        MockModel::new(script(experiment.turns)),
        experiment.faults,
    ));
    let serving = host.clone();
    sim.host("provider", move || {
        let host = serving.clone();
        async move {
            serve(host, 8080).await?;
            Ok(())
        }
    });
    let slot: Arc<Mutex<Option<Result<ModelReply, ModelError>>>> = Arc::new(Mutex::new(None));
    let client_slot = slot.clone();
    let mut config = ProviderConfig::new(ProviderKind::OpenAi, "http://provider:8080/v1", "m");
    config.request_timeout = experiment.request_timeout;
    config.retry = RetryPolicy {
        attempts_max: experiment.attempts_max,
        base_delay: Duration::from_millis(500),
        max_delay: Duration::from_secs(4),
        seed: experiment.seed,
    };
    sim.client("agent", async move {
        let transport = TurmoilTransport {
            connect_timeout: Duration::from_secs(2),
        };
        let provider = HttpProvider::new(config, None, Arc::new(transport))?;
        let result = provider.call(&request()).await;
        *client_slot.lock().expect("not poisoned") = Some(result);
        Ok(())
    });
    if experiment.partition_until.is_some() {
        sim.partition("agent", "provider");
    }
    loop {
        if let Some(until) = experiment.partition_until
            && sim.elapsed() >= until
        {
            sim.repair("agent", "provider");
        }
        if sim.step().expect("the simulation runs") {
            break;
        }
    }
    let result = slot
        .lock()
        .expect("not poisoned")
        .take()
        .expect("the client finished");
    Outcome {
        result,
        host_requests: host.request_count(),
        elapsed: sim.elapsed(),
    }
}

fn reply(text: &str) -> MockTurn {
    MockTurn::new(TurnAction::reply(text))
}

#[test]
fn a_streamed_reply_crosses_the_network() {
    let outcome = run(Experiment::new(vec![reply(
        "Green: all 12 checks passed on the last run of the pipeline.",
    )]));
    let reply = outcome.result.expect("a reply");
    assert_eq!(
        reply.message.text(),
        "Green: all 12 checks passed on the last run of the pipeline."
    );
    assert!(reply.usage.is_some_and(|usage| usage.input_tokens > 0));
    assert_eq!(outcome.host_requests, 1);
    // Latency is simulated: at least a round trip for the connection and one for the request.
    assert!(
        outcome.elapsed >= Duration::from_millis(8),
        "{:?}",
        outcome.elapsed
    );
}

#[test]
fn the_same_seed_gives_the_same_run_and_latency_follows_the_seed() {
    let experiment = || Experiment::new(vec![reply("Green.")]);
    let first = run(experiment());
    assert_eq!(first, run(experiment()));
    let elapsed: Vec<Duration> = (1..=6)
        .map(|seed| {
            run(Experiment {
                seed,
                ..experiment()
            })
            .elapsed
        })
        .collect();
    assert!(
        elapsed.iter().any(|e| *e != elapsed[0]),
        "latency never varied with the seed: {elapsed:?}"
    );
}

#[test]
fn a_slow_provider_hits_the_request_timeout() {
    let mut slow = reply("Too late.");
    slow.latency = Duration::from_secs(600);
    let outcome = run(Experiment {
        request_timeout: Duration::from_secs(5),
        ..Experiment::new(vec![slow])
    });
    assert_eq!(
        outcome.result,
        Err(ModelError::Timeout {
            after: Duration::from_secs(5)
        })
    );
    assert!(outcome.elapsed >= Duration::from_secs(5));
    assert!(
        outcome.elapsed < Duration::from_secs(6),
        "{:?}",
        outcome.elapsed
    );
}

#[test]
fn a_stream_cut_mid_reply_is_retried() {
    let mut turn = reply("A reply long enough to be cut in the middle of its stream.");
    turn.times = 2;
    let outcome = run(Experiment {
        faults: HostFaults {
            cut_stream_requests: vec![1],
            ..HostFaults::default()
        },
        attempts_max: 3,
        ..Experiment::new(vec![turn])
    });
    let reply = outcome.result.expect("a reply after the retry");
    assert_eq!(
        reply.message.text(),
        "A reply long enough to be cut in the middle of its stream."
    );
    assert_eq!(outcome.host_requests, 2);
}

#[test]
fn a_reset_connection_is_retried_and_the_budget_is_bounded() {
    let mut turn = reply("Green.");
    turn.times = 3;
    let outcome = run(Experiment {
        faults: HostFaults {
            reset_requests: vec![1, 2],
            ..HostFaults::default()
        },
        attempts_max: 3,
        ..Experiment::new(vec![turn.clone()])
    });
    assert_eq!(outcome.result.expect("third time").message.text(), "Green.");
    assert_eq!(outcome.host_requests, 3);

    let outcome = run(Experiment {
        faults: HostFaults {
            reset_requests: vec![1, 2, 3],
            ..HostFaults::default()
        },
        attempts_max: 3,
        ..Experiment::new(vec![turn])
    });
    let error = outcome.result.expect_err("every attempt reset");
    assert_eq!(error.kind(), "transient", "{error:?}");
    assert_eq!(outcome.host_requests, 3);
}

#[test]
fn a_partition_outlasting_the_retry_budget_is_a_clear_error() {
    let outcome = run(Experiment {
        attempts_max: 3,
        partition_until: Some(Duration::from_secs(3_000)),
        ..Experiment::new(vec![reply("Never sent.")])
    });
    let error = outcome.result.expect_err("partitioned");
    assert_eq!(error.kind(), "transient", "{error:?}");
    // A partitioned simulated link refuses the connection at once.
    assert!(error.to_string().contains("cannot connect"), "{error}");
    assert_eq!(outcome.host_requests, 0);
    // Three refused attempts, two seeded backoffs of 0.25–0.5 s and 0.5–1 s in between.
    let elapsed = outcome.elapsed;
    assert!(elapsed >= Duration::from_millis(750), "{elapsed:?}");
    assert!(elapsed < Duration::from_millis(1_700), "{elapsed:?}");
}

#[test]
fn a_partition_that_heals_within_the_budget_is_survived() {
    // Backoffs of at least 0.25, 0.5, 1 and 2 s: the fifth attempt comes after the repair.
    let outcome = run(Experiment {
        attempts_max: 6,
        partition_until: Some(Duration::from_secs(3)),
        ..Experiment::new(vec![reply("Back online.")])
    });
    assert_eq!(
        outcome.result.expect("healed").message.text(),
        "Back online."
    );
    assert_eq!(outcome.host_requests, 1);
}

#[test]
fn an_overflow_over_the_network_keeps_its_sizes_and_is_not_retried() {
    let mut overflow = MockTurn::new(TurnAction::Error(ScriptedError::Overflow));
    overflow.when.tokens_over = Some(5);
    let outcome = run(Experiment {
        attempts_max: 4,
        ..Experiment::new(vec![overflow])
    });
    let error = outcome.result.expect_err("overflow");
    let ModelError::ContextOverflow {
        actual_tokens,
        max_tokens,
        provider,
        ..
    } = &error
    else {
        panic!("{error:?}");
    };
    assert_eq!(provider, "openai");
    assert_eq!(*max_tokens, Some(5));
    assert!(actual_tokens.is_some_and(|tokens| tokens > 5), "{error:?}");
    assert_eq!(outcome.host_requests, 1);
}
