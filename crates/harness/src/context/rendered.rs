//! Rendered material messages remembered across preparations, per thread.
//!
//! Each reasoning step renders the same instructions, workspace files and source blocks into the
//! same System, transient and reference messages, unless one of them changed. Rendering escapes
//! every material, and every fresh message is then hashed twice more (by the token cache and for
//! the manifest). This memo hands back the messages of an earlier rendering of exactly the same
//! input instead: equal texts are compared, not hashed, and the returned messages share their
//! content with the earlier ones, so the token cache recognises them by address.
//!
//! A hit is a rendering of input equal in every field, so it is the rendering itself. The memo
//! holds at most [`RENDER_MEMO_ENTRIES_MAX`] renderings per thread (the oldest replaced first),
//! and never one whose materials exceed [`RENDER_MEMO_BYTES_MAX`] bytes.
//!
//! Each rendering also has a slot for the manifest items of its materials (their tokens and
//! content hashes), filled by the first preparation that lists them with an estimator that
//! caches counts and handed to later ones with the same counting method: the materials are equal
//! in every field, so their items are too.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

use super::block::Material;
use super::manifest::ManifestItem;
use crate::limits::{RENDER_MEMO_BYTES_MAX, RENDER_MEMO_ENTRIES_MAX};
use crate::message::Message;

/// The three material messages of a layout: System, transient, reference.
pub(super) type Rendered = [Option<Message>; 3];

/// The manifest items of a rendering's materials, by the counting method that made them.
pub(super) type ItemSlot = Rc<RefCell<Option<(&'static str, Rc<[Arc<ManifestItem>]>)>>>;

struct Entry {
    prompt: Option<String>,
    materials: Vec<Material>,
    foreign_system: Vec<Message>,
    rendered: Rendered,
    items: ItemSlot,
}

impl Entry {
    fn matches(&self, prompt: Option<&str>, materials: &[Material], foreign: &[&Message]) -> bool {
        self.prompt.as_deref() == prompt
            && self.materials == materials
            && self.foreign_system.len() == foreign.len()
            && self
                .foreign_system
                .iter()
                .zip(foreign)
                .all(|(a, b)| a == *b)
    }
}

#[derive(Default)]
struct Memo {
    entries: Vec<Entry>,
    /// The slot the next new entry replaces once the memo is full.
    next: usize,
}

thread_local! {
    static MEMO: RefCell<Memo> = RefCell::new(Memo::default());
}

/// The rendering of this input: remembered, or made by `render` and remembered; with the slot
/// for its materials' manifest items when it is remembered.
pub(super) fn rendered(
    prompt: Option<&str>,
    materials: &[Material],
    foreign_system: &[&Message],
    render: impl FnOnce() -> Rendered,
) -> (Rendered, Option<ItemSlot>) {
    let found = MEMO.with_borrow(|memo| {
        memo.entries
            .iter()
            .find(|entry| entry.matches(prompt, materials, foreign_system))
            .map(|entry| (entry.rendered.clone(), Rc::clone(&entry.items)))
    });
    if let Some((rendered, items)) = found {
        return (rendered, Some(items));
    }
    let rendered = render();
    let bytes: usize = materials.iter().map(|m| m.text.len()).sum::<usize>()
        + prompt.map_or(0, str::len)
        + foreign_system.iter().map(|m| m.text().len()).sum::<usize>();
    if bytes > RENDER_MEMO_BYTES_MAX {
        return (rendered, None);
    }
    let items = ItemSlot::default();
    {
        let entry = Entry {
            prompt: prompt.map(str::to_string),
            materials: materials.to_vec(),
            foreign_system: foreign_system.iter().map(|m| (*m).clone()).collect(),
            rendered: rendered.clone(),
            items: Rc::clone(&items),
        };
        MEMO.with_borrow_mut(|memo| {
            if memo.entries.len() < RENDER_MEMO_ENTRIES_MAX {
                memo.entries.push(entry);
            } else {
                let slot = memo.next;
                memo.entries[slot] = entry;
                memo.next = (slot + 1) % RENDER_MEMO_ENTRIES_MAX;
            }
        });
    }
    (rendered, Some(items))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::block::ContextBlock;

    fn render_count(prompt: Option<&str>, materials: &[Material], calls: &mut u32) -> Rendered {
        rendered(prompt, materials, &[], || {
            *calls += 1;
            let text = materials
                .iter()
                .map(|m| m.text.as_str())
                .collect::<String>();
            [Some(Message::system("system", &text)), None, None]
        })
        .0
    }

    #[test]
    fn equal_input_renders_once_and_shares_the_result() {
        let materials = vec![Material::from_block(
            "memo-test",
            &ContextBlock::runtime("clock", "It is noon, said the memo test."),
        )];
        let mut calls = 0;
        let first = render_count(Some("p"), &materials, &mut calls);
        let again = render_count(Some("p"), &materials.clone(), &mut calls);
        assert_eq!(calls, 1);
        assert_eq!(first, again);
        // A changed text, prompt or material set renders afresh.
        let mut changed = materials.clone();
        changed[0].text.push('!');
        render_count(Some("p"), &changed, &mut calls);
        render_count(Some("q"), &materials, &mut calls);
        render_count(Some("p"), &[], &mut calls);
        assert_eq!(calls, 4);
    }

    #[test]
    fn the_memo_is_bounded() {
        let mut calls = 0;
        for n in 0..(RENDER_MEMO_ENTRIES_MAX + 3) {
            let materials = vec![Material::instruction("bounded", &format!("rule {n}"))];
            render_count(None, &materials, &mut calls);
        }
        assert!(MEMO.with_borrow(|memo| memo.entries.len()) <= RENDER_MEMO_ENTRIES_MAX);
        // Too large to keep: rendered every time.
        let big = vec![Material::instruction(
            "big",
            &"x".repeat(RENDER_MEMO_BYTES_MAX + 1),
        )];
        let before = calls;
        render_count(None, &big, &mut calls);
        render_count(None, &big, &mut calls);
        assert_eq!(calls, before + 2);
    }

    fn render_with(prompt: Option<&str>, materials: &[Material], foreign: &[&Message]) -> u32 {
        let mut calls = 0;
        rendered(prompt, materials, foreign, || {
            calls += 1;
            [None, None, None]
        });
        calls
    }

    #[test]
    fn foreign_system_messages_are_part_of_the_input() {
        let rules = Message::system("rules", "Be brief.");
        let other = Message::system("rules", "Be thorough.");
        assert_eq!(render_with(None, &[], &[&rules]), 1);
        assert_eq!(
            render_with(None, &[], &[&rules]),
            0,
            "the same input is remembered"
        );
        assert_eq!(
            render_with(None, &[], &[&other]),
            1,
            "another message is another input"
        );
        assert_eq!(render_with(None, &[], &[&rules, &other]), 1);
    }

    #[test]
    fn every_part_of_the_input_counts_toward_the_size_bound() {
        let big = "x".repeat(RENDER_MEMO_BYTES_MAX + 1);
        for _ in 0..2 {
            assert_eq!(render_with(Some(&big), &[], &[]), 1, "a prompt too large");
        }
        let message = Message::system("big", &big);
        for _ in 0..2 {
            assert_eq!(
                render_with(None, &[], &[&message]),
                1,
                "a System message too large"
            );
        }
        // Exactly at the bound is kept.
        let at_bound = vec![Material::instruction(
            "at",
            &"y".repeat(RENDER_MEMO_BYTES_MAX),
        )];
        assert_eq!(render_with(None, &at_bound, &[]), 1);
        assert_eq!(render_with(None, &at_bound, &[]), 0);
    }

    #[test]
    fn a_full_memo_replaces_its_oldest_entry() {
        let input = |n: usize| vec![Material::instruction("ring", &format!("rule {n}"))];
        let total = RENDER_MEMO_ENTRIES_MAX + 3;
        for n in 0..total {
            assert_eq!(render_with(None, &input(n), &[]), 1);
        }
        // The last RENDER_MEMO_ENTRIES_MAX inputs are all still remembered.
        for n in total - RENDER_MEMO_ENTRIES_MAX..total {
            assert_eq!(render_with(None, &input(n), &[]), 0, "input {n}");
        }
        assert_eq!(
            render_with(None, &input(0), &[]),
            1,
            "the oldest went first"
        );
    }
}
