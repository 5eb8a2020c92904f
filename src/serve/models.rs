//! The models a server answers for ([`Models`]): mock-model files or text loaded into
//! provider hosts (their latencies scaled), and which host answers a request.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{ServeError, ServeOptions, TIME_SCALE_MAX, scaled};
use crate::limits;
use crate::scenario::format::diagnostic::Diagnostics;
use crate::scenario::format::mock_file::parse_mock;
use crate::scenario::format::source::read_source;
use ctxbed_sim::host::{Api, ProviderHost};
use ctxbed_sim::mock::MockModel;

/// The models a server answers for, by name (the mock file's stem).
#[derive(Debug)]
pub struct Models {
    hosts: BTreeMap<String, Arc<ProviderHost>>,
    /// One model answers every request, whatever `model` it names.
    pub(super) single: bool,
    /// The mock-model files loaded (the record may not overwrite them).
    pub(super) files: Vec<PathBuf>,
    /// The window `GET …/models` reports instead of each model's own
    /// ([`ServeOptions::advertised_window`]).
    pub(super) advertised: Option<u64>,
}

impl Models {
    /// One mock-model file, answering every request.
    ///
    /// # Errors
    /// The file cannot be read or has problems (each with line, column and field).
    pub fn load_file(path: &Path, options: &ServeOptions) -> Result<Models, ServeError> {
        let host = load_host(path, options)?;
        let name = stem(path);
        Ok(Models {
            hosts: BTreeMap::from([(name, Arc::new(host))]),
            single: true,
            files: vec![path.to_path_buf()],
            advertised: options.advertised_window,
        })
    }

    /// A mock model given as text (a built-in one, say), answering every request; `label`
    /// names it in diagnostics.
    ///
    /// # Errors
    /// The text has problems (each with line, column and field).
    pub fn load_source(
        name: &str,
        label: &str,
        source: &str,
        options: &ServeOptions,
    ) -> Result<Models, ServeError> {
        let host = host_from_source(name, label, source, options)?;
        Ok(Models {
            hosts: BTreeMap::from([(name.to_string(), Arc::new(host))]),
            single: true,
            files: Vec::new(),
            advertised: options.advertised_window,
        })
    }

    /// Every `*.toml` of a directory, each answering requests that name it.
    ///
    /// # Errors
    /// The directory cannot be listed, holds no model, or a file has problems (all reported).
    pub fn load_dir(dir: &Path, options: &ServeOptions) -> Result<Models, ServeError> {
        let label = dir.display().to_string();
        let entries = std::fs::read_dir(dir).map_err(|source| ServeError::ListModels {
            dir: label.clone(),
            source,
        })?;
        let mut paths: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|entry| entry.path())
            .filter(|path| path.extension().is_some_and(|ext| ext == "toml"))
            .collect();
        paths.sort();
        paths.truncate(limits::SERVE_MODELS_MAX);
        let mut hosts = BTreeMap::new();
        let mut problems = Vec::new();
        for path in &paths {
            match load_host(path, options) {
                Ok(host) => {
                    hosts.insert(stem(path), Arc::new(host));
                }
                Err(ServeError::Load(Diagnostics(found))) => problems.extend(found),
                Err(other) => return Err(other),
            }
        }
        if !problems.is_empty() {
            return Err(ServeError::Load(Diagnostics(problems)));
        }
        if hosts.is_empty() {
            return Err(ServeError::NoModels { dir: label });
        }
        Ok(Models {
            hosts,
            single: false,
            files: paths,
            advertised: options.advertised_window,
        })
    }

    /// Hosts built elsewhere (a conformance run builds its own); `single` as in
    /// [`Models::load_file`].
    pub fn from_hosts(hosts: BTreeMap<String, Arc<ProviderHost>>, single: bool) -> Models {
        Models {
            hosts,
            single,
            files: Vec::new(),
            advertised: None,
        }
    }

    /// The host of a model, by name.
    pub fn host(&self, name: &str) -> Option<&Arc<ProviderHost>> {
        self.hosts.get(name)
    }

    /// Every model, by name.
    pub fn iter(&self) -> impl Iterator<Item = (&String, &Arc<ProviderHost>)> {
        self.hosts.iter()
    }

    /// The provider each model imitates, in name order.
    pub(super) fn providers(&self) -> Vec<ctxbed_harness::model::provider::Provider> {
        self.hosts
            .values()
            .map(|host| host.model().script().imitates)
            .collect()
    }

    /// The API whose wording answers a request no model can take: the only model's provider,
    /// or OpenAI's when several are served.
    pub(super) fn imitated(&self) -> Api {
        match self.hosts.values().next() {
            Some(host) if self.single || self.hosts.len() == 1 => {
                if host.model().script().imitates
                    == ctxbed_harness::model::provider::Provider::Anthropic
                {
                    Api::Anthropic
                } else {
                    Api::OpenAi
                }
            }
            _ => Api::OpenAi,
        }
    }

    /// The host that answers a request naming `model`.
    pub(super) fn route(&self, model: Option<&str>) -> Option<(&String, &Arc<ProviderHost>)> {
        if self.single {
            return self.hosts.iter().next();
        }
        model.and_then(|name| self.hosts.get_key_value(name))
    }
}

/// A model's name: its file's stem.
fn stem(path: &Path) -> String {
    path.file_stem()
        .map_or_else(String::new, |stem| stem.to_string_lossy().into_owned())
}

/// The host of a mock-model file.
fn load_host(path: &Path, options: &ServeOptions) -> Result<ProviderHost, ServeError> {
    let label = path.display().to_string();
    let source = read_source(path, &label)
        .map_err(|problem| ServeError::Load(Diagnostics(vec![*problem])))?;
    host_from_source(&stem(path), &label, &source, options)
}

/// The host of a mock model given as text, its latencies and hang scaled by the time scale
/// (which must be in range).
fn host_from_source(
    name: &str,
    label: &str,
    source: &str,
    options: &ServeOptions,
) -> Result<ProviderHost, ServeError> {
    if !(0.0..=TIME_SCALE_MAX).contains(&options.time_scale) {
        return Err(ServeError::TimeScale(options.time_scale));
    }
    let mut script =
        parse_mock(name, label, source).map_err(|found| ServeError::Load(Diagnostics(found)))?;
    for turn in &mut script.turns {
        turn.latency = scaled(turn.latency, options.time_scale);
    }
    let mut host = options.host.clone();
    host.hang = scaled(host.hang, options.time_scale);
    Ok(ProviderHost::with_options(MockModel::new(script), host))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// `GET /v1/models` of a served mock, as text.
    async fn listed(options: ServeOptions) -> String {
        let mock = "window = 8000\n[[turns]]\nreply = \"x\"\n";
        let models = Models::load_source("wire", "mock", mock, &options).expect("a mock");
        let server = super::super::Server::bind(models, &options)
            .await
            .expect("a server");
        let addr = server.local_addr();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(server.run(async {
            let _ = stopped.await;
        }));
        let mut stream = tokio::net::TcpStream::connect(addr)
            .await
            .expect("a connection");
        let request = "GET /v1/models HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
        stream.write_all(request.as_bytes()).await.expect("sent");
        let mut text = String::new();
        stream.read_to_string(&mut text).await.expect("an answer");
        let _ = stop.send(());
        let _ = task.await;
        text
    }

    #[tokio::test]
    async fn the_model_list_reports_the_advertised_window_when_there_is_one() {
        let own = listed(ServeOptions::default()).await;
        assert!(own.contains(r#""context_window":8000"#), "{own}");
        let options = ServeOptions {
            advertised_window: Some(32_000),
            ..ServeOptions::default()
        };
        let advertised = listed(options).await;
        assert!(
            advertised.contains(r#""context_window":32000"#),
            "{advertised}"
        );
    }
}
