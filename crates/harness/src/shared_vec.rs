//! [`SharedVec`]: a list whose copies share their structure, so that copying a long list costs
//! the same as copying a short one.
//!
//! A preparation hands the conversation to the model request and its items to the manifest at
//! every step. As plain vectors these copies grew with the history (a reference-count update per
//! message, each a likely cache miss). A `SharedVec` is a persistent vector (a relaxed radix
//! balanced tree of 64-element chunks, from `imbl`): a clone shares every chunk, and a push to
//! either end copies at most the one chunk it writes and the path to it. So a step that extends
//! the remembered conversation by a few messages and lays out a request around it does the same
//! work at 100 messages as at 100,000.
//!
//! **Invariant:** a `SharedVec` is a value. Changing one copy never changes another, and equality,
//! `Debug` and serialisation see only the elements in order, never how they are shared.
//!
//! ```
//! use ctxbed_harness::shared_vec::SharedVec;
//! let mut conversation: SharedVec<u32> = (0..1_000).collect();
//! let mut request = conversation.clone(); // shares every chunk
//! request.push_front(9_999);
//! conversation.push_back(1_000);
//! assert_eq!(request.len(), 1_001);
//! assert_eq!(request[0], 9_999);
//! assert_eq!(conversation.last(), Some(&1_000));
//! assert_eq!(request.iter().skip(1).take(3).copied().collect::<Vec<_>>(), [0, 1, 2]);
//! ```

use std::ops::Index;

use serde::ser::{Serialize, SerializeSeq, Serializer};

/// A list with O(1) clone and amortised O(1) push at either end; indexing is O(log n).
/// See the [module documentation](self).
#[derive(Clone)]
pub struct SharedVec<T: Clone>(imbl::Vector<T>);

impl<T: Clone> SharedVec<T> {
    /// An empty list.
    pub fn new() -> Self {
        SharedVec(imbl::Vector::new())
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The elements in order.
    pub fn iter(&self) -> Iter<'_, T> {
        Iter(self.0.iter())
    }

    /// The elements at `range`, in order; each is found in O(log n), so this suits a short
    /// range of a long list (`iter().skip(n)` walks the first `n`).
    ///
    /// # Panics
    /// When the range reaches past the end.
    pub fn iter_range(&self, range: std::ops::Range<usize>) -> impl DoubleEndedIterator<Item = &T> {
        assert!(
            range.end <= self.len(),
            "range {range:?} past the end ({})",
            self.len()
        );
        range.map(|index| &self.0[index])
    }

    pub fn get(&self, index: usize) -> Option<&T> {
        self.0.get(index)
    }

    pub fn first(&self) -> Option<&T> {
        self.0.front()
    }

    pub fn last(&self) -> Option<&T> {
        self.0.back()
    }

    /// A mutable reference to one element; copies the chunk that holds it first when another
    /// copy of the list shares it.
    pub fn get_mut(&mut self, index: usize) -> Option<&mut T> {
        self.0.get_mut(index)
    }

    /// The elements in order, mutably; copies each shared chunk it reaches first.
    pub fn iter_mut(&mut self) -> impl DoubleEndedIterator<Item = &mut T> {
        self.0.iter_mut()
    }

    pub fn push_back(&mut self, value: T) {
        self.0.push_back(value);
    }

    pub fn push_front(&mut self, value: T) {
        self.0.push_front(value);
    }

    pub fn pop_back(&mut self) -> Option<T> {
        self.0.pop_back()
    }

    /// Keeps the first `len` elements (all of them when there are fewer).
    pub fn truncate(&mut self, len: usize) {
        if len < self.0.len() {
            self.0.truncate(len);
        }
    }

    /// The elements, copied into a plain vector.
    pub fn to_vec(&self) -> Vec<T> {
        self.0.iter().cloned().collect()
    }

    /// True when the two lists are one list, shared: then they are equal without reading them.
    pub fn ptr_eq(&self, other: &Self) -> bool {
        self.0.ptr_eq(&other.0)
    }
}

impl<T: Clone> Default for SharedVec<T> {
    fn default() -> Self {
        SharedVec::new()
    }
}

impl<T: Clone + PartialEq> PartialEq for SharedVec<T> {
    fn eq(&self, other: &Self) -> bool {
        self.ptr_eq(other) || self.0 == other.0
    }
}

impl<T: Clone + Eq> Eq for SharedVec<T> {}

impl<T: Clone + PartialEq> PartialEq<[T]> for SharedVec<T> {
    fn eq(&self, other: &[T]) -> bool {
        self.len() == other.len() && self.iter().eq(other)
    }
}

impl<T: Clone + PartialEq> PartialEq<Vec<T>> for SharedVec<T> {
    fn eq(&self, other: &Vec<T>) -> bool {
        *self == other[..]
    }
}

impl<T: Clone + std::fmt::Debug> std::fmt::Debug for SharedVec<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl<T: Clone> Index<usize> for SharedVec<T> {
    type Output = T;

    fn index(&self, index: usize) -> &T {
        &self.0[index]
    }
}

impl<T: Clone> From<Vec<T>> for SharedVec<T> {
    fn from(values: Vec<T>) -> Self {
        values.into_iter().collect()
    }
}

impl<T: Clone> FromIterator<T> for SharedVec<T> {
    fn from_iter<I: IntoIterator<Item = T>>(iter: I) -> Self {
        SharedVec(iter.into_iter().collect())
    }
}

impl<T: Clone> Extend<T> for SharedVec<T> {
    fn extend<I: IntoIterator<Item = T>>(&mut self, iter: I) {
        self.0.extend(iter);
    }
}

impl<'a, T: Clone> IntoIterator for &'a SharedVec<T> {
    type Item = &'a T;
    type IntoIter = Iter<'a, T>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

/// The elements of a [`SharedVec`] in order, by reference.
#[derive(Clone)]
pub struct Iter<'a, T>(imbl::vector::Iter<'a, T, imbl::shared_ptr::DefaultSharedPtr>);

impl<'a, T> Iterator for Iter<'a, T> {
    type Item = &'a T;

    fn next(&mut self) -> Option<&'a T> {
        self.0.next()
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.0.size_hint()
    }
}

impl<T> DoubleEndedIterator for Iter<'_, T> {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.0.next_back()
    }
}

impl<T> ExactSizeIterator for Iter<'_, T> {}

impl<T> std::iter::FusedIterator for Iter<'_, T> {}

impl<T: Clone + Serialize> Serialize for SharedVec<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(self.len()))?;
        for value in self {
            seq.serialize_element(value)?;
        }
        seq.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Copies are independent values: a push, a truncation or a change through one never shows
    /// in another, and equality, `Debug` and JSON see elements only.
    #[test]
    fn copies_are_independent_values() {
        let original: SharedVec<String> = (0..200).map(|i| format!("m{i}")).collect();
        let mut front = original.clone();
        let mut back = original.clone();
        let mut cut = original.clone();
        let mut changed = original.clone();
        front.push_front("system".into());
        back.push_back("tail".into());
        cut.truncate(10);
        *changed.get_mut(150).expect("in range") = "rewritten".into();
        assert_eq!(original.len(), 200);
        assert_eq!(original[150], "m150");
        assert_eq!(original.first().map(String::as_str), Some("m0"));
        assert_eq!(original.last().map(String::as_str), Some("m199"));
        assert_eq!(front[0], "system");
        assert_eq!(front[1], "m0");
        assert_eq!(back[200], "tail");
        assert_eq!(
            cut.to_vec(),
            (0..10).map(|i| format!("m{i}")).collect::<Vec<_>>()
        );
        assert_eq!(changed[150], "rewritten");
        assert_ne!(changed, original);
        assert!(original.ptr_eq(&original.clone()));
        assert!(!front.ptr_eq(&original));

        let rebuilt: SharedVec<String> = original.to_vec().into();
        assert!(!rebuilt.ptr_eq(&original));
        assert_eq!(rebuilt, original);
        assert_eq!(original, original.to_vec());
        assert_eq!(format!("{original:?}"), format!("{:?}", original.to_vec()));
        assert_eq!(
            serde_json::to_string(&original).expect("serialises"),
            serde_json::to_string(&original.to_vec()).expect("serialises")
        );
        let popped = back.pop_back();
        assert_eq!(popped.as_deref(), Some("tail"));
        assert_eq!(back, original);
    }
}
