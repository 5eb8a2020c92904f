//! Finds a vocabulary's whole-character flags ([`atomic`](super::atomic) has the conditions
//! and why they suffice) from its tokens. The build script runs it and writes the flags in the
//! layout of [`atomic_format`](super::atomic_format); tests run it again on the reference
//! vocabularies and compare.

use std::collections::HashMap;

use super::atomic_format::{CODE_POINTS, FLAGS_BYTES, KINDS, Kind, decode, flag};

/// The flags of the vocabulary whose tokens, by rank, are `tokens`, as the bytes to store.
pub fn find(tokens: &[&[u8]]) -> Vec<u8> {
    let ranks: HashMap<&[u8], u32> = tokens
        .iter()
        .enumerate()
        .map(|(rank, &bytes)| (bytes, u32::try_from(rank).expect("ranks fit in u32")))
        .collect();
    let boundaries = Boundaries::of(tokens);
    let mut flags = vec![0u16; CODE_POINTS];
    let mut before_lead = vec![0u16; CODE_POINTS];
    for &bytes in tokens {
        let Some((code_point, length)) = decode(bytes, 0) else {
            continue;
        };
        if length != bytes.len() {
            continue;
        }
        let Some(highest) = highest_merge_rank(&ranks, bytes) else {
            continue;
        };
        // The lowest rank of a token joining the character with what is on either side.
        let before = KINDS.map(|kind| boundaries.lowest_ending(bytes, Neighbour::Of(kind)));
        let after = KINDS.map(|kind| boundaries.lowest_starting(bytes, Neighbour::Of(kind)));
        for (b, lowest_before) in KINDS.into_iter().zip(before) {
            for (a, lowest_after) in KINDS.into_iter().zip(after) {
                if highest < lowest_before.min(lowest_after) {
                    flags[code_point] |= flag(b, a);
                }
            }
        }
        let after_continuation = before[Kind::Continuation as usize];
        for j in 0..16 {
            let lowest_after = boundaries.lowest_starting(bytes, Neighbour::Byte(0xE0 + j));
            if highest < after_continuation.min(lowest_after) {
                before_lead[code_point] |= 1 << j;
            }
        }
    }
    let mut stored = Vec::with_capacity(FLAGS_BYTES);
    for word in flags.iter().chain(&before_lead) {
        stored.extend_from_slice(&word.to_le_bytes());
    }
    stored
}

/// The highest rank among the merges that turn the bytes of a two- or three-byte token into
/// that one token when merged alone, or `None` when they end as more than one part.
fn highest_merge_rank(ranks: &HashMap<&[u8], u32>, bytes: &[u8]) -> Option<u32> {
    let rank = |bytes: &[u8]| ranks.get(bytes).copied();
    match *bytes {
        [first, second] => rank(&[first, second]),
        [first, second, third] => {
            let left = rank(&[first, second]);
            let right = rank(&[second, third]);
            // The lower rank merges first (the leftmost of equals), then the whole token.
            let first_merge = match (left, right) {
                (Some(l), Some(r)) => l.min(r),
                (Some(l), None) => l,
                (None, Some(r)) => r,
                (None, None) => return None,
            };
            let whole = rank(bytes)?;
            Some(first_merge.max(whole))
        }
        _ => None,
    }
}

/// The lowest ranks of the tokens that hold a fragment of non-ASCII bytes and more: the
/// merges across a character's boundaries.
struct Boundaries {
    /// (fragment, kind of the byte before it) → the lowest rank of a token ending with both.
    ending: FragmentRanks,
    /// (fragment, kind of the byte after it, or that byte) → the lowest rank of a token
    /// starting with both.
    starting: FragmentRanks,
}

/// What a fragment's neighbour is known to be: a byte of a kind, or that very byte.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Neighbour {
    Of(Kind),
    Byte(u8),
}

/// Lowest ranks by [`fragment_key`].
type FragmentRanks = HashMap<u64, u32>;

/// A fragment of one to three bytes and what its neighbour is, as one word.
fn fragment_key(fragment: &[u8], neighbour: Neighbour) -> u64 {
    debug_assert!((1..=3).contains(&fragment.len()));
    let mut word = [0u8; 8];
    word[..fragment.len()].copy_from_slice(fragment);
    word[3] = fragment.len() as u8;
    match neighbour {
        Neighbour::Of(kind) => word[4] = kind as u8,
        Neighbour::Byte(byte) => [word[5], word[6]] = [1, byte],
    }
    u64::from_le_bytes(word)
}

impl Boundaries {
    fn of(tokens: &[&[u8]]) -> Self {
        let mut boundaries = Boundaries {
            ending: FragmentRanks::new(),
            starting: FragmentRanks::new(),
        };
        let lower = |map: &mut FragmentRanks, key: u64, rank: u32| {
            let lowest = map.entry(key).or_insert(rank);
            *lowest = (*lowest).min(rank);
        };
        for (rank, &bytes) in (0u32..).zip(tokens) {
            let length = bytes.len();
            for k in 1..=3.min(length.saturating_sub(1)) {
                let suffix = &bytes[length - k..];
                if suffix[0] >= 0x80 {
                    let before = Neighbour::Of(Kind::of(bytes.get(length - k - 1)));
                    lower(&mut boundaries.ending, fragment_key(suffix, before), rank);
                }
                let prefix = &bytes[..k];
                if prefix[0] >= 0x80 {
                    let after = Neighbour::Of(Kind::of(bytes.get(k)));
                    lower(&mut boundaries.starting, fragment_key(prefix, after), rank);
                    let after = Neighbour::Byte(bytes[k]);
                    lower(&mut boundaries.starting, fragment_key(prefix, after), rank);
                }
            }
        }
        boundaries
    }

    /// The lowest rank of a token that ends with a nonempty prefix of `character`'s bytes
    /// after a byte `before` ([`u32::MAX`] when none does, or at the piece's edge).
    fn lowest_ending(&self, character: &[u8], before: Neighbour) -> u32 {
        let prefixes = (1..=character.len()).map(|k| &character[..k]);
        lowest(&self.ending, prefixes, before)
    }

    /// The lowest rank of a token that starts with a nonempty suffix of `character`'s bytes
    /// before a byte `after` ([`u32::MAX`] when none does, or at the piece's edge).
    fn lowest_starting(&self, character: &[u8], after: Neighbour) -> u32 {
        let suffixes = (0..character.len()).map(|k| &character[k..]);
        lowest(&self.starting, suffixes, after)
    }
}

/// The lowest rank `ranks` holds for any of `fragments` beside `neighbour` ([`u32::MAX`] when
/// it holds none, or at the piece's edge, where nothing joins).
fn lowest<'c>(
    ranks: &FragmentRanks,
    fragments: impl Iterator<Item = &'c [u8]>,
    neighbour: Neighbour,
) -> u32 {
    if neighbour == Neighbour::Of(Kind::Edge) {
        return u32::MAX;
    }
    fragments
        .filter_map(|fragment| ranks.get(&fragment_key(fragment, neighbour)).copied())
        .min()
        .unwrap_or(u32::MAX)
}
