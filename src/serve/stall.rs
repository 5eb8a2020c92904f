//! The write timeout of a connection: a connection whose writes make no progress for the
//! limit (a client that stopped reading, its receive window and our send buffer full) fails
//! with [`std::io::ErrorKind::TimedOut`], and hyper closes it, dropping the reply it was
//! sending. The clock runs only while a write waits: an idle connection, or a stream paced by
//! scripted latency, is never timed out by it.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// `T` with a write timeout.
#[derive(Debug)]
pub(super) struct WriteTimeout<T> {
    inner: T,
    limit: Duration,
    /// When the write waiting now gives up; `None` while writes go through.
    stalled: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl<T> WriteTimeout<T> {
    pub(super) fn new(inner: T, limit: Duration) -> Self {
        WriteTimeout {
            inner,
            limit,
            stalled: None,
        }
    }

    /// `polled`, a write's outcome, with the clock started when it waits and stopped when it
    /// goes through; a wait past the limit becomes an error.
    fn progress<R>(
        &mut self,
        cx: &mut Context<'_>,
        polled: Poll<io::Result<R>>,
    ) -> Poll<io::Result<R>> {
        if polled.is_ready() {
            self.stalled = None;
            return polled;
        }
        let limit = self.limit;
        let stalled = self
            .stalled
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
        if stalled.as_mut().poll(cx).is_pending() {
            return Poll::Pending;
        }
        self.stalled = None;
        tracing::debug!(
            ?limit,
            "a client read nothing of its reply; closing the connection"
        );
        Poll::Ready(Err(io::Error::new(
            io::ErrorKind::TimedOut,
            format!("no write went through in {limit:?}"),
        )))
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for WriteTimeout<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for WriteTimeout<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.inner).poll_write(cx, buf);
        this.progress(cx, polled)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
        this.progress(cx, polled)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.inner).poll_flush(cx);
        this.progress(cx, polled)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.inner).poll_shutdown(cx);
        this.progress(cx, polled)
    }
}
