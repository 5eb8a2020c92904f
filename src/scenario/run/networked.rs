//! Running a scenario with a `[network]` table ([`crate::scenario::format::network`]): the
//! agent on turmoil host `agent`, its model the OpenAI-compatible [`HttpProvider`] over
//! [`TurmoilTransport`], the scenario's mock model served from host `provider`, partitions
//! opened and repaired on simulated time.
//!
//! **Invariant:** the run is turmoil's simulation seeded by the scenario's network stream, and
//! the provider's retry jitter by its retry-jitter stream ([`Stream`]): the same seed gives the
//! same latencies, faults and record.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::runner::{RunError, Simulated};
use crate::limits;
use crate::scenario::format::file::Scenario;
use crate::scenario::format::network::NetworkSpec;
use ctxbed_providers::{HttpProvider, ProviderConfig, ProviderKind, RetryPolicy};
use ctxbed_sim::mock::MockModel;
use ctxbed_sim::netsim::{ProviderHost, TurmoilTransport, serve};
use ctxbed_sim::recording::RecordingModel;
use ctxbed_sim::rng::Stream;

/// Runs a network scenario: the agent on turmoil host `agent`, the mock model served from
/// host `provider`, both on simulated time.
///
/// # Errors
/// The agent could not be set up, or the simulation failed or ran past
/// [`limits::NETWORK_SIMULATION_SECONDS_MAX`].
pub fn run_networked(scenario: &Scenario, network: &NetworkSpec) -> Result<Simulated, RunError> {
    let mut sim = turmoil::Builder::new()
        .rng_seed(scenario.seed.stream(Stream::Network).seed())
        .min_message_latency(network.latency_min)
        .max_message_latency(network.latency_max)
        .tick_duration(network.tick)
        .simulation_duration(Duration::from_secs(limits::NETWORK_SIMULATION_SECONDS_MAX))
        .build();
    let host = Arc::new(ProviderHost::new(
        MockModel::new(scenario.mock.clone()),
        network.faults.clone(),
    ));
    sim.host("provider", move || {
        let host = host.clone();
        async move {
            serve(host, 8080).await?;
            Ok(())
        }
    });
    let config = provider_config(scenario, network);
    let transport = TurmoilTransport {
        connect_timeout: network.connect_timeout,
    };
    let provider = HttpProvider::new(config, None, Arc::new(transport))
        .map_err(|error| RunError::Network(error.to_string()))?;
    let model = Arc::new(RecordingModel::new(Arc::new(provider)));
    let result = Arc::new(Mutex::new(None));
    let client_result = result.clone();
    let client_scenario = scenario.clone();
    sim.client("agent", async move {
        let outcome = super::runner::simulate(&client_scenario, model).await;
        *client_result
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(outcome);
        Ok(())
    });
    run_with_partitions(&mut sim, &network.partitions)?;
    result
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .take()
        .ok_or_else(|| RunError::Network("the agent host never finished".into()))?
}

/// The agent's provider: the mock model's OpenAI-style endpoint on host `provider`, with the
/// scenario's streaming, timeouts and retry policy (its jitter seeded from the scenario).
fn provider_config(scenario: &Scenario, network: &NetworkSpec) -> ProviderConfig {
    let mut config = ProviderConfig::new(
        ProviderKind::OpenAi,
        "http://provider:8080/v1",
        scenario.mock.info.name.clone(),
    );
    config.stream = network.stream;
    config.request_timeout = network.request_timeout;
    config.read_timeout = network.request_timeout;
    config.context_window = scenario.mock.info.context_window;
    config.retry = RetryPolicy {
        attempts_max: network.retry_attempts,
        base_delay: network.retry_base,
        max_delay: network.retry_max,
        seed: scenario.seed.stream(Stream::RetryJitter).seed(),
    };
    config
}

/// Steps the simulation until every client is done, cutting agent and provider apart while
/// the simulated time is inside a partition.
fn run_with_partitions(
    sim: &mut turmoil::Sim<'_>,
    partitions: &[(Duration, Duration)],
) -> Result<(), RunError> {
    let mut partitions = partitions.to_vec();
    partitions.sort();
    let mut cut = false;
    loop {
        let now = sim.elapsed();
        let inside = partitions
            .iter()
            .any(|(from, until)| *from <= now && now < *until);
        if inside != cut {
            if inside {
                sim.partition("agent", "provider");
            } else {
                sim.repair("agent", "provider");
            }
            cut = inside;
        }
        match sim.step() {
            Ok(true) => return Ok(()),
            Ok(false) => {}
            Err(error) => return Err(RunError::Network(error.to_string())),
        }
    }
}
