//! Commands of the `ctxbed` binary that live outside `main.rs`.

pub mod sweep;
pub mod wire;
