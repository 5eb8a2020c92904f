//! Which open connections are idle between requests, so that a server at its connection cap
//! closes the longest-idle kept-alive connection to make room for a new client (as nginx reuses
//! keep-alive connections) instead of making the newcomer wait for one to time out. A connection
//! that has not finished its first request, or has a request in flight, is never shed.

use std::collections::BTreeMap;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll};

use hyper::body::{Body, Frame, SizeHint};
use tokio::sync::Notify;

/// What a connection is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Open, its first request not yet answered.
    Fresh,
    /// Requests in flight (read, answered or being written).
    Busy(usize),
    /// Between requests since this tick (lower is longer).
    Idle(u64),
    /// Asked to close.
    Shed,
}

#[derive(Debug)]
struct Entry {
    state: State,
    close: Arc<Notify>,
}

#[derive(Debug, Default)]
struct Inner {
    next_id: u64,
    tick: u64,
    open: BTreeMap<u64, Entry>,
}

/// The open connections of a server.
#[derive(Debug, Default)]
pub(super) struct Registry {
    inner: Mutex<Inner>,
    /// Woken each time a connection becomes idle.
    idle_now: Notify,
}

impl Registry {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Registers a new connection; it is forgotten when the handle is dropped.
    pub(super) fn register(self: &Arc<Self>) -> Registered {
        let close = Arc::new(Notify::new());
        let mut inner = self.lock();
        let id = inner.next_id;
        inner.next_id += 1;
        inner.open.insert(
            id,
            Entry {
                state: State::Fresh,
                close: close.clone(),
            },
        );
        Registered {
            registry: self.clone(),
            id,
            close,
        }
    }

    /// Asks the longest-idle connection to close; false when none is idle.
    pub(super) fn shed_one(&self) -> bool {
        let mut inner = self.lock();
        let oldest = inner
            .open
            .iter_mut()
            .filter_map(|(_, entry)| match entry.state {
                State::Idle(since) => Some((since, entry)),
                _ => None,
            })
            .min_by_key(|(since, _)| *since);
        let Some((_, entry)) = oldest else {
            return false;
        };
        entry.state = State::Shed;
        entry.close.notify_one();
        tracing::debug!("at the connection cap: closing the longest-idle kept-alive connection");
        true
    }

    /// Completes when a connection next becomes idle (from the moment it is created, once
    /// enabled or first polled).
    pub(super) fn idle_now(&self) -> tokio::sync::futures::Notified<'_> {
        self.idle_now.notified()
    }

    /// Connections idle between requests now.
    #[cfg(test)]
    fn idle_count(&self) -> usize {
        let inner = self.lock();
        inner
            .open
            .values()
            .filter(|entry| matches!(entry.state, State::Idle(_)))
            .count()
    }

    fn update(&self, id: u64, change: impl FnOnce(State, u64) -> State) {
        let mut inner = self.lock();
        inner.tick += 1;
        let tick = inner.tick;
        if let Some(entry) = inner.open.get_mut(&id) {
            entry.state = change(entry.state, tick);
            if matches!(entry.state, State::Idle(_)) {
                self.idle_now.notify_waiters();
            }
        }
    }
}

/// A registered connection.
#[derive(Debug)]
pub(super) struct Registered {
    registry: Arc<Registry>,
    id: u64,
    /// Notified when the server wants this connection closed.
    pub(super) close: Arc<Notify>,
}

impl Registered {
    /// Marks a request in flight until the returned guard is dropped (with the response body).
    pub(super) fn begin(&self) -> InFlight {
        self.registry.update(self.id, |state, _| match state {
            State::Busy(n) => State::Busy(n + 1),
            State::Shed => State::Shed,
            State::Fresh | State::Idle(_) => State::Busy(1),
        });
        InFlight {
            registry: self.registry.clone(),
            id: self.id,
        }
    }
}

impl Drop for Registered {
    fn drop(&mut self) {
        self.registry.lock().open.remove(&self.id);
    }
}

/// A request in flight on a connection; when the last one ends, the connection is idle.
#[derive(Debug)]
pub(super) struct InFlight {
    registry: Arc<Registry>,
    id: u64,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.registry.update(self.id, |state, tick| match state {
            State::Busy(n) if n > 1 => State::Busy(n - 1),
            State::Shed => State::Shed,
            _ => State::Idle(tick),
        });
    }
}

/// A response body that keeps its request in flight until it is sent (or dropped).
#[derive(Debug)]
pub(super) struct Tracked<B> {
    pub(super) body: B,
    pub(super) _in_flight: InFlight,
}

impl<B: Body + Unpin> Body for Tracked<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.get_mut().body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_connections_between_requests_are_shed_longest_idle_first() {
        let registry = Arc::new(Registry::default());
        let fresh = registry.register();
        let first = registry.register();
        let second = registry.register();
        assert!(!registry.shed_one(), "a fresh connection is not shed");
        let busy = second.begin();
        drop(first.begin());
        drop(busy);
        assert_eq!(registry.idle_count(), 2);
        let held = second.begin();
        assert!(registry.shed_one());
        assert_eq!(registry.idle_count(), 0, "the idle one was asked to close");
        assert!(!registry.shed_one(), "the busy one is not shed");
        drop((held, fresh));
    }
}
