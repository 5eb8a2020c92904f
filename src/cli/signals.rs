//! The stop signals (SIGTERM, SIGINT): held from the first instruction of `main` until the
//! command is ready for them, so a stop in a command's first milliseconds is not lost to the
//! default action (`serve` killed without its summary), and the handlers that turn them into a
//! future ([`Stop`]). A command that does not handle them releases them at once after parsing,
//! and a signal that came meanwhile then acts as it always did.

/// The stop signals held back on this thread (and on every thread it starts while they are
/// held); released when dropped.
pub struct Held {
    #[cfg(unix)]
    previous: libc::sigset_t,
}

/// Holds SIGTERM and SIGINT back on this thread. Call first in `main`, before any thread starts.
pub fn hold() -> Held {
    #[cfg(unix)]
    {
        // SAFETY: the sets are initialised by sigemptyset before use; pthread_sigmask only
        // reads `held` and writes `previous`.
        unsafe {
            let mut held: libc::sigset_t = std::mem::zeroed();
            let mut previous: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&raw mut held);
            libc::sigemptyset(&raw mut previous);
            libc::sigaddset(&raw mut held, libc::SIGTERM);
            libc::sigaddset(&raw mut held, libc::SIGINT);
            libc::pthread_sigmask(libc::SIG_BLOCK, &raw const held, &raw mut previous);
            Held { previous }
        }
    }
    #[cfg(not(unix))]
    Held {}
}

impl Drop for Held {
    fn drop(&mut self) {
        // SAFETY: restores the mask saved by `hold`; a signal that came meanwhile is delivered.
        #[cfg(unix)]
        unsafe {
            libc::pthread_sigmask(
                libc::SIG_SETMASK,
                &raw const self.previous,
                std::ptr::null_mut(),
            );
        }
    }
}

/// Handlers for Ctrl-C and (on Unix) SIGTERM, installed when it is made (inside a runtime), so
/// a signal from then on is kept until [`Stop::wait`] sees it.
pub struct Stop {
    #[cfg(unix)]
    terminate: Option<tokio::signal::unix::Signal>,
    #[cfg(unix)]
    interrupt: Option<tokio::signal::unix::Signal>,
}

impl Stop {
    /// Installs the handlers. Call within a tokio runtime.
    pub fn listen() -> Stop {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            Stop {
                terminate: signal(SignalKind::terminate()).ok(),
                interrupt: signal(SignalKind::interrupt()).ok(),
            }
        }
        #[cfg(not(unix))]
        Stop {}
    }

    /// Completes at the first stop signal (or, when no handler could be installed, Ctrl-C).
    pub async fn wait(self) {
        #[cfg(unix)]
        {
            let Stop {
                terminate,
                interrupt,
            } = self;
            match (terminate, interrupt) {
                (Some(mut terminate), Some(mut interrupt)) => {
                    tokio::select! {
                        _ = terminate.recv() => {}
                        _ = interrupt.recv() => {}
                    }
                }
                (Some(mut one), None) | (None, Some(mut one)) => {
                    let _ = one.recv().await;
                }
                (None, None) => {
                    let _ = tokio::signal::ctrl_c().await;
                }
            }
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}
