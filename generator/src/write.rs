//! Writing generated files: only when the content changed, so an unchanged model does not make
//! cargo rebuild the service.

use std::io;
use std::path::Path;

/// Writes `content` to `path` unless the file already holds exactly that. Returns whether it wrote.
pub fn write_if_changed(path: &Path, content: &str) -> io::Result<bool> {
    if std::fs::read(path).is_ok_and(|old| old == content.as_bytes()) {
        return Ok(false);
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(path, content)?;
    Ok(true)
}
