//! The built-in tools by name: what a scenario's `[agent] builtin_tools` list (or an
//! application) turns into registered tools over one workspace [`Storage`].
//!
//! ```
//! use std::sync::Arc;
//! use ctxbed_harness::storage::{MemoryStorage, Storage};
//! use ctxbed_harness::tools::ToolRegistry;
//! use ctxbed_harness::tools::builtin::{BUILTIN_TOOL_NAMES, builtin_tool};
//!
//! let storage: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
//! let mut registry = ToolRegistry::new();
//! for name in BUILTIN_TOOL_NAMES {
//!     registry.register(builtin_tool(name, storage.clone()).unwrap()).unwrap();
//! }
//! assert_eq!(registry.len(), 6);
//! assert!(builtin_tool("read_fille", storage).is_none());
//! ```

use std::sync::Arc;

use super::Tool;
use super::memory::{MemoryGet, MemorySearch};
use super::read::ReadFile;
use super::workspace::{EditFile, ListFiles, WriteFile};
use crate::storage::Storage;

/// Every built-in tool, in the order documentation lists them.
pub const BUILTIN_TOOL_NAMES: [&str; 6] = [
    "read_file",
    "write_file",
    "edit_file",
    "list_files",
    "memory_search",
    "memory_get",
];

/// The built-in tool with this name over `storage`, or `None` for an unknown name.
pub fn builtin_tool(name: &str, storage: Arc<dyn Storage>) -> Option<Arc<dyn Tool>> {
    let tool: Arc<dyn Tool> = match name {
        "read_file" => Arc::new(ReadFile::new(storage)),
        "write_file" => Arc::new(WriteFile::new(storage)),
        "edit_file" => Arc::new(EditFile::new(storage)),
        "list_files" => Arc::new(ListFiles::new(storage)),
        "memory_search" => Arc::new(MemorySearch::new(storage)),
        "memory_get" => Arc::new(MemoryGet::new(storage)),
        _ => return None,
    };
    assert_eq!(
        tool.schema().name,
        name,
        "a built-in tool registers under its own name"
    );
    Some(tool)
}
