//! The pieces of a request's layout ([`Parts`]): the System prompt, the conversation as
//! scanned, the projections, and the material messages rendered around them, remembered for
//! the last set of materials so omission and layout render (and count) each set once.

use std::cell::RefCell;
use std::ops::Range;
use std::rc::Rc;
use std::sync::Arc;

use super::block::{Material, Placement};
use super::history::HistoryRef;
use super::manifest::{ItemKind, ManifestItem};
use super::{render, rendered, scanned};
use crate::message::Message;
use crate::shared_vec::SharedVec;
use crate::tokens::TokenEstimator;

/// The pieces of a layout: one System message → conversation → transient state → references.
/// Messages rendered by an earlier preparation are dropped and rendered afresh; other System
/// messages in the conversation are merged into the single System message.
pub(super) struct Parts<'a> {
    system_prompt: Option<&'a str>,
    foreign_system: Vec<&'a Message>,
    projections: &'a [Message],
    /// The history as read: classes, tokens, items and pairing of its messages.
    pub(super) scan: Rc<scanned::Scan>,
    /// The material messages last rendered, by the ids of the materials they were rendered
    /// for. Omission measures the kept set, and the layout then renders the same set: the
    /// memo renders (and the estimator hashes) each set once. The materials all come from one
    /// input, so their ids name them.
    rendered: RefCell<Option<LastRendering>>,
}

impl<'a> Parts<'a> {
    pub(super) fn split(
        system_prompt: Option<&'a str>,
        history: HistoryRef<'a>,
        projections: &'a [Message],
        estimator: &dyn TokenEstimator,
    ) -> Self {
        let scan = scanned::scan(history, estimator);
        Parts {
            system_prompt,
            foreign_system: scan.foreign_system(history.messages()),
            projections,
            scan,
            rendered: RefCell::new(None),
        }
    }

    /// The System, transient and reference messages for a set of materials.
    pub(super) fn material_messages(&self, materials: &[Material]) -> rendered::Rendered {
        if let Some(last) = &*self.rendered.borrow()
            && last.is_for(materials)
        {
            return last.messages.clone();
        }
        let (messages, slot) =
            rendered::rendered(self.system_prompt, materials, &self.foreign_system, || {
                self.render_materials(materials)
            });
        let ids = materials.iter().map(|m| m.id.clone()).collect();
        *self.rendered.borrow_mut() = Some(LastRendering {
            ids,
            messages: messages.clone(),
            items: slot,
        });
        messages
    }

    /// The manifest items of the kept materials, in layout order (System, transient,
    /// reference). With an estimator that caches counts they are remembered with the rendering
    /// of exactly this set, so an unchanged set is not counted and hashed again at every step.
    pub(super) fn material_items(
        &self,
        kept: &[Material],
        estimator: &dyn TokenEstimator,
    ) -> Rc<[Arc<ManifestItem>]> {
        let compute = || -> Rc<[Arc<ManifestItem>]> {
            render::in_layout_order(kept)
                .map(|material| Arc::new(material_item(material, estimator)))
                .collect()
        };
        if !estimator.caches_counts() {
            return compute();
        }
        // The layout rendered exactly this set just before, so the memo holds its slot.
        let slot = match &*self.rendered.borrow() {
            Some(
                last @ LastRendering {
                    items: Some(slot), ..
                },
            ) if last.is_for(kept) => Rc::clone(slot),
            _ => return compute(),
        };
        let method = estimator.method();
        if let Some((counted_by, items)) = &*slot.borrow()
            && *counted_by == method
        {
            return Rc::clone(items);
        }
        let items = compute();
        *slot.borrow_mut() = Some((method, Rc::clone(&items)));
        items
    }

    pub(super) fn render_materials(&self, materials: &[Material]) -> rendered::Rendered {
        let transient = render::material_message(materials, Placement::Transient);
        let reference = render::material_message(materials, Placement::Reference);
        let guidance = transient.is_some() || reference.is_some();
        let system = render::system_message(
            self.system_prompt,
            materials,
            &self.foreign_system,
            guidance,
        );
        [system, transient, reference]
    }

    pub(super) fn material_tokens(
        &self,
        materials: &[Material],
        estimator: &dyn TokenEstimator,
    ) -> u64 {
        self.material_messages(materials)
            .iter()
            .flatten()
            .map(|m| estimator.message_tokens(m))
            .sum()
    }

    /// The request's messages, and where the conversation lies among them.
    pub(super) fn assemble(&self, materials: &[Material]) -> (SharedVec<Message>, Range<usize>) {
        let [system, transient, reference] = self.material_messages(materials);
        // The conversation is the scan's, shared: laying a request out around it costs the
        // same whatever its length.
        let mut messages = self.scan.conversation().clone();
        let start = usize::from(system.is_some());
        if let Some(system) = system {
            messages.push_front(system);
        }
        let conversation = start..messages.len();
        messages.extend(transient);
        messages.extend(self.projections.iter().cloned());
        messages.extend(reference);
        (messages, conversation)
    }
}

/// The material messages a preparation rendered last, by the ids of the materials they were
/// rendered for, with the memo's slot for those materials' manifest items.
struct LastRendering {
    ids: Vec<String>,
    messages: rendered::Rendered,
    items: Option<rendered::ItemSlot>,
}

impl LastRendering {
    /// Whether this rendering was made for `materials`. They all come from one input, so their
    /// ids name them.
    fn is_for(&self, materials: &[Material]) -> bool {
        self.ids
            .iter()
            .map(String::as_str)
            .eq(materials.iter().map(|m| m.id.as_str()))
    }
}

/// A material's manifest item: its kind and placement, its tokens and content hash.
pub(super) fn material_item(material: &Material, estimator: &dyn TokenEstimator) -> ManifestItem {
    ManifestItem {
        kind: ItemKind::Material {
            kind: material.kind,
            placement: material.placement,
            revision: material.revision.clone(),
            required: material.required,
            priority: material.priority,
        },
        id: material.id.clone(),
        tokens: estimator.text_tokens(&material.text),
        content_hash: material.content_hash(),
    }
}
