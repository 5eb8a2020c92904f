//! A streamed answer's events as a plan, rendered one event at a time as the connection asks
//! for the next: the few fixed events are kept framed, and each text sent in pieces is kept once
//! with the function that frames one piece. A client that stops reading therefore holds the
//! reply's text, not every framed delta of it (about twelve times the text for 16-character
//! pieces), and what is rendered but not yet written is what the connection's buffers hold.

use std::collections::VecDeque;

/// Frames the piece numbered `n` (from 0) of a text sent in pieces.
type Render = Box<dyn Fn(&str, usize) -> String + Send + Sync>;

/// One part of a plan.
enum Part {
    /// An event, already framed.
    Event(String),
    /// `text` in pieces of `chars` characters, the next one starting at byte `at`, numbered
    /// `next`, framed by `render` when it is sent.
    Deltas {
        text: String,
        chars: usize,
        at: usize,
        next: usize,
        render: Render,
    },
}

/// The events of a streamed answer, framed as they are taken ([`Iterator`]).
#[derive(Default)]
pub struct Plan {
    parts: VecDeque<Part>,
    /// Events planned in all, taken or not.
    count: usize,
}

impl std::fmt::Debug for Plan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Plan")
            .field("count", &self.count)
            .field("held_bytes", &self.held_bytes())
            .finish()
    }
}

impl Plan {
    /// Adds one framed event.
    pub fn event(&mut self, framed: String) {
        self.parts.push_back(Part::Event(framed));
        self.count += 1;
    }

    /// Adds `text` in pieces of at most `chars` characters, each framed by `render(piece, n)`
    /// when it is taken; returns how many pieces that is.
    pub fn deltas(
        &mut self,
        text: String,
        chars: usize,
        render: impl Fn(&str, usize) -> String + Send + Sync + 'static,
    ) -> usize {
        let chars = chars.max(1);
        let pieces = text.chars().count().div_ceil(chars);
        if pieces > 0 {
            self.parts.push_back(Part::Deltas {
                text,
                chars,
                at: 0,
                next: 0,
                render: Box::new(render),
            });
            self.count += pieces;
        }
        pieces
    }

    /// Events planned in all, taken or not.
    pub fn planned(&self) -> usize {
        self.count
    }

    /// The bytes the plan holds now: its framed events and the texts still to be sent in
    /// pieces.
    pub fn held_bytes(&self) -> usize {
        self.parts
            .iter()
            .map(|part| match part {
                Part::Event(framed) => framed.len(),
                Part::Deltas { text, .. } => text.len(),
            })
            .sum()
    }
}

impl Iterator for Plan {
    type Item = String;

    fn next(&mut self) -> Option<String> {
        loop {
            match self.parts.front_mut()? {
                Part::Event(framed) => {
                    let framed = std::mem::take(framed);
                    self.parts.pop_front();
                    return Some(framed);
                }
                Part::Deltas {
                    text,
                    chars,
                    at,
                    next,
                    render,
                } => {
                    let rest = text.get(*at..).unwrap_or_default();
                    if rest.is_empty() {
                        self.parts.pop_front();
                        continue;
                    }
                    let end = rest
                        .char_indices()
                        .nth(*chars)
                        .map_or(rest.len(), |(at, _)| at);
                    let framed = render(&rest[..end], *next);
                    *at += end;
                    *next += 1;
                    return Some(framed);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Plan;

    #[test]
    fn pieces_are_framed_as_they_are_taken_and_the_text_is_held_once() {
        let text = "é".repeat(1_000);
        let mut plan = Plan::default();
        plan.event("open\n".to_string());
        let pieces = plan.deltas(text.clone(), 16, |piece, n| format!("{n}:{piece}\n"));
        plan.event("close\n".to_string());
        assert_eq!(pieces, 63);
        assert_eq!(plan.planned(), 65);
        assert_eq!(plan.held_bytes(), text.len() + 11);
        assert_eq!(plan.next().as_deref(), Some("open\n"));
        let first = plan.next().expect("a piece");
        assert_eq!(first, format!("0:{}\n", "é".repeat(16)));
        let all: Vec<String> = plan.collect();
        assert_eq!(all.len(), 63);
        assert_eq!(all[61], format!("62:{}\n", "é".repeat(8)));
        assert_eq!(all[62], "close\n");
    }
}
