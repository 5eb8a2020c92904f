//! Byte-pair merging over a rank table: the number of tokens one pre-tokenizer piece encodes to.
//!
//! The encoding starts from the piece's single bytes and merges, while it can, the adjacent
//! pair of parts whose joined bytes are the token of lowest rank (the leftmost of equal ranks).
//! Short pieces, nearly all of them, are merged in place on the stack by scanning for the
//! lowest pair each time (quadratic in a piece of at most [`SHORT_PIECE_BYTES`] bytes); longer
//! ones keep their pairs in a heap, so a piece of megabytes costs `n log n`, not `n²`.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::RankTable;

/// Pieces up to this many bytes are merged on the stack.
const SHORT_PIECE_BYTES: usize = 64;

/// No pair: its bytes are not a token.
const NO_RANK: u32 = u32::MAX;

/// The number of tokens `piece` encodes to.
pub(super) fn count(ranks: &RankTable, piece: &[u8]) -> usize {
    match piece.len() {
        0 => 0,
        1 => 1,
        _ if ranks.rank(piece).is_some() => 1,
        n if n <= SHORT_PIECE_BYTES => count_short(ranks, piece),
        _ => count_long(ranks, piece),
    }
}

fn rank_or_none(ranks: &RankTable, bytes: &[u8]) -> u32 {
    ranks.rank(bytes).unwrap_or(NO_RANK)
}

/// Merging by scanning: `bounds[i]` is where part `i` starts (`bounds[parts]` is the end), and
/// `pair[i]` the rank of parts `i` and `i + 1` joined.
fn count_short(ranks: &RankTable, piece: &[u8]) -> usize {
    let n = piece.len();
    debug_assert!((2..=SHORT_PIECE_BYTES).contains(&n));
    let mut bounds = [0usize; SHORT_PIECE_BYTES + 1];
    let mut pair = [NO_RANK; SHORT_PIECE_BYTES];
    for (i, bound) in bounds.iter_mut().enumerate().take(n + 1) {
        *bound = i;
    }
    let mut parts = n;
    for i in 0..parts - 1 {
        pair[i] = rank_or_none(ranks, &piece[i..i + 2]);
    }
    while parts > 1 {
        let mut best = 0;
        for i in 1..parts - 1 {
            if pair[i] < pair[best] {
                best = i;
            }
        }
        if pair[best] == NO_RANK {
            break;
        }
        // Parts `best` and `best + 1` become one: drop the bound between them.
        bounds.copy_within(best + 2..=parts, best + 1);
        pair.copy_within(best + 1..parts - 1, best);
        parts -= 1;
        if best + 1 < parts {
            pair[best] = rank_or_none(ranks, &piece[bounds[best]..bounds[best + 2]]);
        }
        if best > 0 {
            pair[best - 1] = rank_or_none(ranks, &piece[bounds[best - 1]..bounds[best + 1]]);
        }
    }
    parts
}

/// Merging with a heap of candidate pairs `(rank, start)`. Parts are a linked list over their
/// start offsets; a candidate is stale when its start was merged away or the pair starting
/// there is no longer its token (a token's rank fixes its bytes, so the same rank at the same
/// start is the same pair).
fn count_long(ranks: &RankTable, piece: &[u8]) -> usize {
    let n = piece.len();
    let mut next: Vec<usize> = (1..=n).collect();
    let mut prev: Vec<usize> = (0..n).map(|i| i.wrapping_sub(1)).collect();
    let mut alive = vec![true; n];
    let mut heap = BinaryHeap::with_capacity(n);
    for i in 0..n - 1 {
        if let Some(rank) = ranks.rank(&piece[i..i + 2]) {
            heap.push(Reverse((rank, i)));
        }
    }
    let mut parts = n;
    while let Some(Reverse((rank, start))) = heap.pop() {
        if !alive[start] || next[start] >= n {
            continue;
        }
        let middle = next[start];
        let end = next[middle];
        if ranks.rank(&piece[start..end]) != Some(rank) {
            continue;
        }
        alive[middle] = false;
        next[start] = end;
        if end < n {
            prev[end] = start;
        }
        parts -= 1;
        if start > 0 {
            let before = prev[start];
            if let Some(rank) = ranks.rank(&piece[before..end]) {
                heap.push(Reverse((rank, before)));
            }
        }
        if end < n
            && let Some(rank) = ranks.rank(&piece[start..next[end]])
        {
            heap.push(Reverse((rank, start)));
        }
    }
    parts
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokens::Vocabulary;
    use crate::tokens::bpe::vocab;

    /// The two merge strategies agree on pieces either could take.
    #[test]
    fn the_stack_and_the_heap_merge_alike() {
        let ranks = &vocab(Vocabulary::O200k).ranks;
        for piece in [
            "abracadabra",
            " internationalisation",
            "zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz",
            "ÄÖÜäöüßÄÖÜäöüß",
            "中文字符测试一下",
            "!!!???...,,,;;;",
            "\u{1F600}\u{1F601}\u{1F602}",
        ] {
            let bytes = piece.as_bytes();
            assert_eq!(
                count_short(ranks, bytes),
                count_long(ranks, bytes),
                "{piece:?}"
            );
        }
    }
}
