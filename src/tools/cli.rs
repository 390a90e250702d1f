//! What every command-line tool shares: arguments read lossily, and the
//! work run on a thread with a large stack.

/// Stack of the thread the tools run on. MLIR's parser, verifier, walks and
/// printer recurse once per nesting level; with nesting capped at
/// [`crate::tools::opt::MAX_NESTING_DEPTH`] levels this leaves a wide margin (the
/// memory is reserved, not committed, until used).
pub const TOOL_STACK_BYTES: usize = 512 << 20;

/// Runs `main` on the command-line arguments (without the program name,
/// converted lossily: a non-UTF-8 argument never panics) on a thread with a
/// [`TOOL_STACK_BYTES`] stack; returns its exit code.
#[must_use]
pub fn run(main: fn(&[String]) -> i32) -> i32 {
    let args: Vec<String> = std::env::args_os().skip(1).map(|a| a.to_string_lossy().into_owned()).collect();
    let worker = std::thread::Builder::new().name("main".into()).stack_size(TOOL_STACK_BYTES).spawn(move || main(&args));
    match worker.map(std::thread::JoinHandle::join) {
        Ok(Ok(code)) => code,
        Ok(Err(_)) => {
            eprintln!("internal error: the tool failed unexpectedly; please report this with the input");
            2
        }
        Err(error) => {
            eprintln!("error: cannot start the worker thread: {error}");
            1
        }
    }
}

/// A tool's input that could not be read: the name diagnostics use (the
/// path, or `<stdin>`) and why.
#[derive(Debug, thiserror::Error)]
#[error("cannot read '{name}': {source}")]
pub struct InputError {
    pub name: String,
    pub source: std::io::Error,
}

/// Reads a tool's input: the file at `path`, or standard input for `None`
/// or `-`. Returns the name diagnostics use (the path, or `<stdin>`) with
/// the bytes.
pub fn read_input(path: Option<&str>) -> Result<(String, Vec<u8>), InputError> {
    use std::io::Read;
    let name = match path {
        None | Some("-") => "<stdin>",
        Some(path) => path,
    };
    let read = match path {
        None | Some("-") => {
            let mut bytes = Vec::new();
            std::io::stdin().read_to_end(&mut bytes).map(|_| bytes)
        }
        Some(path) => std::fs::read(path),
    };
    read.map(|bytes| (name.to_string(), bytes)).map_err(|source| InputError { name: name.to_string(), source })
}

/// Writes `bytes` to `path` so that a failure leaves nothing half-written:
/// a regular file (or a missing one) is replaced by renaming a uniquely
/// named temporary file beside it, which keeps the existing file's
/// permissions; a symlink is written through to its target the same way;
/// a FIFO, device or other special file is written directly.
///
/// # Errors
/// The I/O error of creating, writing or renaming.
pub fn write_file_atomically(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    write_file_atomically_with(path, |file| std::io::Write::write_all(file, bytes))
}

/// [`write_file_atomically`] with the bytes written by `write` (buffered),
/// so a large output need not be held in memory first.
///
/// # Errors
/// The I/O error of creating, writing (including `write`'s) or renaming.
pub fn write_file_atomically_with(
    path: &std::path::Path,
    write: impl FnOnce(&mut dyn std::io::Write) -> std::io::Result<()>,
) -> std::io::Result<()> {
    use std::io::Write;
    // Follow symlinks so the link stays a link and its target is replaced.
    let target = match std::fs::canonicalize(path) {
        Ok(resolved) => resolved,
        Err(_) => match std::fs::read_link(path) {
            // A dangling link: create its target.
            Ok(link) => path.parent().map_or(link.clone(), |dir| dir.join(link)),
            Err(_) => path.to_path_buf(),
        },
    };
    let existing = std::fs::metadata(&target).ok();
    if existing.as_ref().is_some_and(|m| !m.is_file()) {
        let mut file = std::io::BufWriter::new(std::fs::OpenOptions::new().write(true).open(&target)?);
        return write(&mut file).and_then(|()| file.flush());
    }
    let directory = match target.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    let stem = target.file_name().map_or_else(|| "output".into(), |n| n.to_string_lossy().into_owned());
    let (temporary, file) = create_unique(&directory, &stem)?;
    let mut buffered = std::io::BufWriter::with_capacity(1 << 16, file);
    let written = write(&mut buffered)
        .and_then(|()| buffered.into_inner().map_err(std::io::IntoInnerError::into_error))
        .and_then(|file| file.sync_all())
        .and_then(|()| match &existing {
            Some(metadata) => std::fs::set_permissions(&temporary, metadata.permissions()),
            None => Ok(()),
        })
        .and_then(|()| std::fs::rename(&temporary, &target));
    if written.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    written
}

/// A new file `.<stem>.<pid>.<n>.tmp` in `directory`, created exclusively.
fn create_unique(directory: &std::path::Path, stem: &str) -> std::io::Result<(std::path::PathBuf, std::fs::File)> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    loop {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let candidate = directory.join(format!(".{stem}.{}.{n}.tmp", std::process::id()));
        match std::fs::OpenOptions::new().write(true).create_new(true).open(&candidate) {
            Ok(file) => return Ok((candidate, file)),
            Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(error) => return Err(error),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::write_file_atomically;
    use std::os::unix::fs::PermissionsExt;

    fn scratch(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("blueprint-tool-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("scratch dir");
        dir
    }

    #[test]
    fn keeps_mode_and_writes_through_symlinks() {
        let dir = scratch("mode");
        let file = dir.join("out.mlir");
        std::fs::write(&file, "old").expect("write");
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        write_file_atomically(&file, b"new").expect("written");
        assert_eq!(std::fs::read_to_string(&file).expect("read"), "new");
        assert_eq!(std::fs::metadata(&file).expect("stat").permissions().mode() & 0o777, 0o600);

        let link = dir.join("link.mlir");
        std::os::unix::fs::symlink(&file, &link).expect("symlink");
        write_file_atomically(&link, b"through").expect("written");
        assert!(std::fs::symlink_metadata(&link).expect("lstat").file_type().is_symlink());
        assert_eq!(std::fs::read_to_string(&file).expect("read"), "through");
        // No temporary files are left behind.
        let names: Vec<_> = std::fs::read_dir(&dir).expect("ls").map(|e| e.expect("entry").file_name()).collect();
        assert_eq!(names.len(), 2, "{names:?}");
    }

    #[test]
    fn writes_devices_directly() {
        // /dev/null stays a device: no temporary file is renamed over it.
        write_file_atomically(std::path::Path::new("/dev/null"), b"x").expect("written");
        use std::os::unix::fs::FileTypeExt;
        assert!(std::fs::metadata("/dev/null").expect("stat").file_type().is_char_device());
    }

    #[test]
    fn a_failed_write_leaves_nothing() {
        let dir = scratch("fail");
        let missing = dir.join("no-such-dir").join("out.mlir");
        assert!(write_file_atomically(&missing, b"x").is_err());
        assert!(!missing.exists());
    }
}
