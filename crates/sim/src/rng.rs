//! Seeded randomness: one seed tree per run, one named stream per consumer.
//!
//! One scenario seed feeds every random draw of a run. The run builds one [`SeedTree`] from it,
//! once, and hands each consumer its own [`SeedStream`] ([`SeedTree::stream`]): generated
//! history text, generated workspace files, scripted tools, the simulated network, the
//! provider's retry jitter, the sweep generator. A stream's draws are seeded from the root seed
//! and the stream's name followed by the consumer's key (a tool's name, a file's path), so
//! adding a draw in one place never shifts the others, and no two consumers share a seed.
//!
//! ```
//! use ctxbed_sim::rng::{SeedTree, Stream};
//! use rand_core::Rng;
//! let tree = SeedTree::new(42);
//! let tools = tree.stream(Stream::Tools);
//! assert_eq!(tools.fork("/execute").next_u64(), SeedTree::new(42).stream(Stream::Tools).fork("/execute").next_u64());
//! // A stream's key follows its name: the concern is `tool/execute`.
//! assert_eq!(tools.seed_for("/execute"), tree.seed_for("tool/execute"));
//! assert_ne!(tree.stream(Stream::Network).seed(), tree.stream(Stream::RetryJitter).seed());
//! assert_ne!(tree.seed_for("a"), tree.seed_for("b"));
//! ```

use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;
use sha2::{Digest, Sha256};

/// The root of a run's randomness.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SeedTree {
    seed: u64,
}

impl SeedTree {
    pub fn new(seed: u64) -> Self {
        SeedTree { seed }
    }

    /// The root seed.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// A 64-bit seed derived from the root seed and a concern name.
    pub fn seed_for(&self, concern: &str) -> u64 {
        self.seed_for_parts(&[concern])
    }

    /// An independent random stream for one concern.
    pub fn fork(&self, concern: &str) -> ChaCha8Rng {
        ChaCha8Rng::seed_from_u64(self.seed_for(concern))
    }

    /// The named stream of one consumer.
    pub fn stream(&self, stream: Stream) -> SeedStream {
        SeedStream {
            tree: *self,
            stream,
        }
    }

    /// The seed for the concern the parts spell one after another.
    fn seed_for_parts(&self, parts: &[&str]) -> u64 {
        let mut hasher = Sha256::new();
        hasher.update(self.seed.to_le_bytes());
        for part in parts {
            hasher.update(part.as_bytes());
        }
        let digest = hasher.finalize();
        let mut bytes = [0u8; 8];
        bytes.copy_from_slice(&digest[..8]);
        u64::from_le_bytes(bytes)
    }
}

/// Shows the root seed.
impl std::fmt::Display for SeedTree {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.seed.fmt(f)
    }
}

/// The consumers of a run's randomness, each with its own stream of the run's [`SeedTree`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    /// Generated text of history messages (key `[<entry>].messages[<position>]/<id>`) and of
    /// generated history rounds (key `/<entry>/<round>`).
    History,
    /// Generated workspace files (key `/<path>`).
    Workspace,
    /// Scripted tools' generated output (key `/<tool name>`).
    Tools,
    /// The simulated network: message latencies and whatever else the simulator draws (one
    /// seed, [`SeedStream::seed`]).
    Network,
    /// The jitter of a provider's retry backoff (one seed).
    RetryJitter,
    /// The sweep generator (key `/<concern>`: `/tools`, `/agent`, ...).
    Generator,
}

impl Stream {
    /// The stream's name: what every concern it draws for starts with.
    pub fn name(self) -> &'static str {
        match self {
            Stream::History => "history",
            Stream::Workspace => "workspace",
            Stream::Tools => "tool",
            Stream::Network => "network",
            Stream::RetryJitter => "retry-jitter",
            Stream::Generator => "generate",
        }
    }
}

/// One consumer's stream of a run's randomness: seeds for the concerns its name starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SeedStream {
    tree: SeedTree,
    stream: Stream,
}

impl SeedStream {
    /// The seed of a consumer that draws from one generator: the seed of the stream's name.
    pub fn seed(&self) -> u64 {
        self.tree.seed_for_parts(&[self.stream.name()])
    }

    /// The seed of one draw: the seed of the concern that is the stream's name followed by
    /// `key`.
    pub fn seed_for(&self, key: &str) -> u64 {
        self.tree.seed_for_parts(&[self.stream.name(), key])
    }

    /// An independent random stream for one key.
    pub fn fork(&self, key: &str) -> ChaCha8Rng {
        ChaCha8Rng::seed_from_u64(self.seed_for(key))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The seeds of the history, workspace, tool and generator draws are those of the concern
    /// names they had before streams were named, so scenario files keep their generated text.
    #[test]
    fn stream_seeds_are_those_of_the_concern_their_name_and_key_spell() {
        let tree = SeedTree::new(7);
        let cases = [
            (Stream::History, "/0/3", "history/0/3"),
            (
                Stream::History,
                "[1].messages[2]/h0003",
                "history[1].messages[2]/h0003",
            ),
            (Stream::Workspace, "/logs/big.log", "workspace/logs/big.log"),
            (Stream::Tools, "/execute", "tool/execute"),
            (Stream::Generator, "/tools", "generate/tools"),
        ];
        for (stream, key, concern) in cases {
            assert_eq!(tree.stream(stream).seed_for(key), tree.seed_for(concern));
        }
        assert_eq!(
            tree.stream(Stream::Network).seed(),
            tree.seed_for("network")
        );
    }

    #[test]
    fn every_stream_has_its_own_seed() {
        let tree = SeedTree::new(7);
        let streams = [
            Stream::History,
            Stream::Workspace,
            Stream::Tools,
            Stream::Network,
            Stream::RetryJitter,
            Stream::Generator,
        ];
        let mut seeds: Vec<u64> = streams.iter().map(|s| tree.stream(*s).seed()).collect();
        seeds.push(tree.seed());
        seeds.sort_unstable();
        seeds.dedup();
        assert_eq!(seeds.len(), streams.len() + 1);
    }
}
