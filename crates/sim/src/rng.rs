//! Seeded randomness, forked per concern.
//!
//! One scenario seed feeds every random draw. Each concern (a tool's generated output, a model's
//! jitter, the id generator) gets its own stream derived from the seed and the concern's name, so
//! adding a draw in one place never shifts the others.
//!
//! ```
//! use ctxbed_sim::rng::SeedTree;
//! use rand_core::Rng;
//! let tree = SeedTree::new(42);
//! assert_eq!(tree.fork("tool/execute").next_u64(), SeedTree::new(42).fork("tool/execute").next_u64());
//! assert_ne!(tree.seed_for("a"), tree.seed_for("b"));
//! ```

use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;
use sha2::{Digest, Sha256};

/// The root of a scenario's randomness.
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
        let mut hasher = Sha256::new();
        hasher.update(self.seed.to_le_bytes());
        hasher.update(concern.as_bytes());
        let digest = hasher.finalize();
        let mut bytes = [0u8; 8];
        bytes.copy_from_slice(&digest[..8]);
        u64::from_le_bytes(bytes)
    }

    /// An independent random stream for one concern.
    pub fn fork(&self, concern: &str) -> ChaCha8Rng {
        ChaCha8Rng::seed_from_u64(self.seed_for(concern))
    }
}
