//! SHA-256 fed through a small buffer.
//!
//! The content hashes (a message's JSON text, the token cache's keys) are written by
//! serialisers in many short fragments: quotes, keys, separators, escapes, length prefixes.
//! Handing each fragment to the hasher costs more than copying it, so [`BufferedSha256`]
//! collects them and hashes [`BUFFER_BYTES`] at a time. The digest is that of the bytes written,
//! in order, whatever their fragments: only the cost changes.

use sha2::{Digest, Sha256};

/// Bytes collected before they are hashed: eight SHA-256 blocks.
const BUFFER_BYTES: usize = 512;

/// A SHA-256 hasher with a write buffer; see the module documentation.
pub(crate) struct BufferedSha256 {
    sha: Sha256,
    buffer: [u8; BUFFER_BYTES],
    len: usize,
}

impl BufferedSha256 {
    pub(crate) fn new() -> Self {
        BufferedSha256 {
            sha: Sha256::new(),
            buffer: [0; BUFFER_BYTES],
            len: 0,
        }
    }

    /// Adds `bytes` to what is hashed.
    pub(crate) fn update(&mut self, bytes: impl AsRef<[u8]>) {
        let bytes = bytes.as_ref();
        if self.len + bytes.len() > BUFFER_BYTES {
            self.sha.update(&self.buffer[..self.len]);
            self.len = 0;
            if bytes.len() >= BUFFER_BYTES {
                self.sha.update(bytes);
                return;
            }
        }
        self.buffer[self.len..self.len + bytes.len()].copy_from_slice(bytes);
        self.len += bytes.len();
    }

    /// The digest of every byte added.
    pub(crate) fn finalize(mut self) -> [u8; 32] {
        self.sha.update(&self.buffer[..self.len]);
        self.sha.finalize().into()
    }
}

impl std::io::Write for BufferedSha256 {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.update(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Any split of the input into fragments, small or larger than the buffer, gives the
    /// digest of the whole.
    #[test]
    fn fragments_hash_as_the_whole() {
        let whole: Vec<u8> = (0..3_000u32).map(|i| (i * 31 % 251) as u8).collect();
        let expected: [u8; 32] = Sha256::digest(&whole).into();
        for fragment in [1, 7, 63, 64, 65, 511, 512, 513, 2_000, 3_000] {
            let mut hasher = BufferedSha256::new();
            for chunk in whole.chunks(fragment) {
                hasher.update(chunk);
            }
            assert_eq!(hasher.finalize(), expected, "fragments of {fragment} bytes");
        }
        let mut mixed = BufferedSha256::new();
        let (head, tail) = whole.split_at(10);
        mixed.update(head);
        mixed.update(&tail[..1_000]);
        mixed.update(&tail[1_000..]);
        assert_eq!(mixed.finalize(), expected);
    }
}
