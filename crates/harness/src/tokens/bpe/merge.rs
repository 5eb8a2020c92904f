//! Byte-pair merging over a rank table: the number of tokens one pre-tokenizer piece encodes to.
//!
//! The encoding starts from the piece's single bytes and merges, while it can, the adjacent
//! pair of parts whose joined bytes are the token of lowest rank (the leftmost of equal ranks).
//! A character whose own merges cannot interleave with any other ([`atomic`](super::atomic))
//! starts as one part instead of its bytes: the same parts result, with a third of the merges
//! on Chinese or Japanese text.
//! Parts are a linked list over their start offsets, and the candidate pairs a min-heap keyed
//! by `(rank, start)`, so a piece of `n` bytes costs `n log n`, not `n²`. A candidate is stale
//! when its start was merged away or the pair starting there has changed since (`pair` holds
//! each start's current pair). Pieces up to [`SHORT_PIECE_BYTES`] bytes, nearly all of them,
//! keep everything on the stack.

use std::cell::RefCell;

use super::RankTable;
use super::atomic::Atomic;
use super::table::Recent;

thread_local! {
    /// Each table's recent answers on this thread, by [`RankTable::id`].
    static RECENT: RefCell<[Recent; 2]> = RefCell::new([Recent::default(), Recent::default()]);
}

/// A table, the characters merging starts from whole, and this thread's recent answers from
/// the table.
struct Ranks<'a> {
    table: &'a RankTable,
    atomic: &'a Atomic,
    recent: &'a mut Recent,
}

impl Ranks<'_> {
    fn rank(&mut self, bytes: &[u8]) -> Option<u32> {
        self.recent.rank(self.table, bytes)
    }
}

/// Pieces up to this many bytes are merged on the stack.
const SHORT_PIECE_BYTES: usize = 64;

/// No pair: its bytes are not a token.
const NO_RANK: u32 = u32::MAX;

/// The number of tokens `piece` encodes to; merging starts from the characters of `atomic`
/// whole.
pub(super) fn count(table: &RankTable, atomic: &Atomic, piece: &[u8]) -> usize {
    let n = piece.len();
    if n < 2 {
        return n;
    }
    if table.rank(piece).is_some() {
        return 1;
    }
    RECENT.with_borrow_mut(|recent| {
        let mut ranks = Ranks {
            table,
            atomic,
            recent: &mut recent[table.id()],
        };
        if n <= TINY_PIECE_BYTES {
            on_stack::<{ TINY_PIECE_BYTES + 1 }, { 3 * TINY_PIECE_BYTES }>(&mut ranks, piece)
        } else if n <= SHORT_PIECE_BYTES {
            on_stack::<{ SHORT_PIECE_BYTES + 1 }, { 3 * SHORT_PIECE_BYTES }>(&mut ranks, piece)
        } else {
            let mut next = vec![0u32; n + 1];
            let mut prev = vec![0u32; n + 1];
            let mut pair = vec![0u32; n + 1];
            let mut heap = vec![0u64; 3 * n];
            merge(
                &mut ranks, piece, &mut next, &mut prev, &mut pair, &mut heap,
            )
        }
    })
}

/// Pieces up to this many bytes (most words) are merged in smaller arrays: zeroing the short
/// pieces' arrays (2 KiB) cost more than merging a word.
const TINY_PIECE_BYTES: usize = 16;

/// Merges a piece of fewer than `LIST` bytes in arrays on the stack: `LIST` slots per linked
/// list and `HEAP` heap slots, room for `n - 1` first pairs and at most two new ones per merge
/// (so `HEAP` is three times the longest piece).
fn on_stack<const LIST: usize, const HEAP: usize>(ranks: &mut Ranks, piece: &[u8]) -> usize {
    debug_assert!(piece.len() < LIST && 3 * piece.len() <= HEAP);
    let mut lists = [[0u32; LIST]; 3];
    let mut heap = [0u64; HEAP];
    let [next, prev, pair] = &mut lists;
    merge(ranks, piece, next, prev, pair, &mut heap)
}

/// The merging itself. `next[i]` and `prev[i]` link the part starting at `i` to its
/// neighbours (`n` past the last); `pair[i]` is the rank of the part at `i` joined with the
/// next one, [`NO_RANK`] when that is no token; `heap` has room for `3 n` keys.
fn merge(
    ranks: &mut Ranks,
    piece: &[u8],
    next: &mut [u32],
    prev: &mut [u32],
    pair: &mut [u32],
    heap: &mut [u64],
) -> usize {
    let n = piece.len();
    // Offsets fit in u32: a piece is a slice of a string the caller holds.
    let end_of = u32::try_from(n).expect("a piece shorter than 4 GiB");
    let mut heap = MinHeap { keys: heap, len: 0 };
    let mut parts = first_parts(ranks, piece, next, prev, pair, &mut heap);
    while let Some(top) = heap.pop() {
        let (rank, start) = unkey(top);
        let start_at = start as usize;
        if pair[start_at] != rank {
            continue;
        }
        // Merge the part at `start` with the next one.
        let middle = next[start_at];
        let end = next[middle as usize];
        pair[middle as usize] = NO_RANK;
        next[start_at] = end;
        if end < end_of {
            prev[end as usize] = start;
        }
        parts -= 1;
        // The pair ending here and the pair starting here are new.
        pair[start_at] = NO_RANK;
        if end < end_of {
            let after = next[end as usize] as usize;
            if let Some(rank) = ranks.rank(&piece[start_at..after]) {
                pair[start_at] = rank;
                heap.push(key(rank, start));
            }
        }
        if start > 0 {
            let before = prev[start_at];
            let before_at = before as usize;
            pair[before_at] = NO_RANK;
            if let Some(rank) = ranks.rank(&piece[before_at..end as usize]) {
                pair[before_at] = rank;
                heap.push(key(rank, before));
            }
        }
    }
    parts
}

/// Links the first parts (single bytes, and the characters of `atomic` whole), pushes the
/// pairs of neighbours that are tokens, and gives the number of parts.
fn first_parts(
    ranks: &mut Ranks,
    piece: &[u8],
    next: &mut [u32],
    prev: &mut [u32],
    pair: &mut [u32],
    heap: &mut MinHeap,
) -> usize {
    let n = piece.len();
    let mut parts = 0;
    let mut at = 0;
    let mut before = u32::MAX;
    while at < n {
        let length = ranks.atomic.length_at(piece, at);
        next[at] = (at + length) as u32;
        prev[at] = before;
        pair[at] = NO_RANK;
        before = at as u32;
        at += length;
        parts += 1;
    }
    let mut start = 0;
    while (next[start] as usize) < n {
        let middle = next[start] as usize;
        let after = next[middle] as usize;
        if let Some(rank) = ranks.rank(&piece[start..after]) {
            pair[start] = rank;
            heap.push(key(rank, start as u32));
        }
        start = middle;
    }
    parts
}

/// A heap key: lower rank first, then the leftmost start.
fn key(rank: u32, start: u32) -> u64 {
    (u64::from(rank) << 32) | u64::from(start)
}

fn unkey(key: u64) -> (u32, u32) {
    // Truncation is the point: the low half is the start.
    ((key >> 32) as u32, key as u32)
}

/// A binary min-heap over borrowed room.
struct MinHeap<'a> {
    keys: &'a mut [u64],
    len: usize,
}

impl MinHeap<'_> {
    fn push(&mut self, key: u64) {
        let mut at = self.len;
        self.keys[at] = key;
        self.len += 1;
        while at > 0 {
            let parent = (at - 1) / 2;
            if self.keys[parent] <= self.keys[at] {
                break;
            }
            self.keys.swap(parent, at);
            at = parent;
        }
    }

    fn pop(&mut self) -> Option<u64> {
        if self.len == 0 {
            return None;
        }
        let top = self.keys[0];
        self.len -= 1;
        self.keys[0] = self.keys[self.len];
        let mut at = 0;
        loop {
            let left = 2 * at + 1;
            if left >= self.len {
                break;
            }
            let right = left + 1;
            let child = if right < self.len && self.keys[right] < self.keys[left] {
                right
            } else {
                left
            };
            if self.keys[at] <= self.keys[child] {
                break;
            }
            self.keys.swap(at, child);
            at = child;
        }
        Some(top)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_heap_pops_in_order() {
        let mut room = [0u64; 16];
        let mut heap = MinHeap {
            keys: &mut room,
            len: 0,
        };
        for value in [9, 3, 7, 3, 1, 8, 2, 6] {
            heap.push(value);
        }
        let mut popped = Vec::new();
        while let Some(value) = heap.pop() {
            popped.push(value);
        }
        assert_eq!(popped, [1, 2, 3, 3, 6, 7, 8, 9]);
        assert_eq!(unkey(key(5, 7)), (5, 7));
        assert!(key(1, 9) < key(2, 0), "rank first, then start");
    }

    /// Pushes and pops interleaved, against a sorted reference: a sift that climbs to the
    /// wrong parent keeps some orders right and breaks others.
    #[test]
    fn the_heap_pops_the_least_between_pushes() {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        for round in 0..200 {
            let mut room = [0u64; 64];
            let mut heap = MinHeap {
                keys: &mut room,
                len: 0,
            };
            let mut reference: Vec<u64> = Vec::new();
            for _ in 0..40 {
                // xorshift: fixed, so a failure repeats.
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                if state.is_multiple_of(3) {
                    reference.sort_unstable_by(|a, b| b.cmp(a));
                    assert_eq!(heap.pop(), reference.pop(), "round {round}");
                } else {
                    heap.push(state % 100);
                    reference.push(state % 100);
                }
            }
        }
    }
}
