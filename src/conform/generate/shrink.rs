//! The smaller drafts one step away from a draft, most shrinking first: without its fault,
//! without a step, without a tool round, without a parallel call, with results half as long,
//! without streaming, on Chat Completions instead of the Responses API.

use super::{Draft, DraftApi, DraftFault};

/// Results are not halved below this many characters.
const RESULT_CHARS_MIN: usize = 100;

impl Draft {
    /// Every draft one shrinking step smaller than this one, in the order to try them.
    pub fn smaller(&self) -> Vec<Draft> {
        let mut found = Vec::new();
        if self.fault.is_some() {
            found.push(Draft {
                fault: None,
                ..self.clone()
            });
        }
        if self.steps.len() > 1 {
            for index in (0..self.steps.len()).rev() {
                found.push(self.without_step(index));
            }
        }
        for (step, rounds) in self.steps.iter().enumerate() {
            for round in (0..rounds.len()).rev() {
                let mut draft = self.clone();
                draft.steps[step].remove(round);
                found.push(draft);
            }
        }
        found.extend(self.fewer_calls());
        if let Some(halved) = self.halved() {
            found.push(halved);
        }
        if self.stream {
            found.push(Draft {
                stream: false,
                ..self.clone()
            });
        }
        if self.api == DraftApi::Responses {
            found.push(Draft {
                api: DraftApi::OpenAi,
                ..self.clone()
            });
        }
        found
    }

    /// This draft without step `index`; a fault there goes with it, a later one moves up.
    fn without_step(&self, index: usize) -> Draft {
        let mut draft = self.clone();
        draft.steps.remove(index);
        let moved = |step: usize| match step.cmp(&index) {
            std::cmp::Ordering::Less => Some(step),
            std::cmp::Ordering::Equal => None,
            std::cmp::Ordering::Greater => Some(step - 1),
        };
        draft.fault = self.fault.and_then(|fault| match fault {
            DraftFault::Overflow(step) => moved(step).map(DraftFault::Overflow),
            DraftFault::RateLimit(step) => moved(step).map(DraftFault::RateLimit),
        });
        draft
    }

    /// One parallel call fewer, in each round that has several.
    fn fewer_calls(&self) -> Vec<Draft> {
        let mut found = Vec::new();
        for (step, rounds) in self.steps.iter().enumerate() {
            for (round, calls) in rounds.iter().enumerate() {
                if calls.results.len() > 1 {
                    let mut draft = self.clone();
                    draft.steps[step][round].results.pop();
                    found.push(draft);
                }
            }
        }
        found
    }

    /// Every result half as long, when any can be.
    fn halved(&self) -> Option<Draft> {
        let mut draft = self.clone();
        let mut changed = false;
        for (chars, _) in draft
            .steps
            .iter_mut()
            .flatten()
            .flat_map(|round| round.results.iter_mut())
        {
            if *chars > RESULT_CHARS_MIN {
                *chars = (*chars / 2).max(RESULT_CHARS_MIN);
                changed = true;
            }
        }
        changed.then_some(draft)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_smaller_draft_is_smaller_and_a_draft_shrinks_to_its_least() {
        for seed in 0..100 {
            let draft = Draft::draw(seed);
            for smaller in draft.smaller() {
                assert_ne!(smaller, draft, "seed {seed}");
                assert!(smaller.size() <= draft.size(), "seed {seed}");
                if let Some(DraftFault::Overflow(step) | DraftFault::RateLimit(step)) =
                    smaller.fault
                {
                    assert!(step < smaller.steps.len(), "seed {seed}: {smaller:?}");
                }
            }
            // Always taking the first smaller draft ends at one step, no round, no fault.
            let mut least = draft;
            while let Some(next) = least.smaller().into_iter().next() {
                least = next;
            }
            assert_eq!(least.steps.len(), 1);
            assert!(least.steps[0].is_empty() && least.fault.is_none());
        }
    }
}
