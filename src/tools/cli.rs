//! What every command-line tool shares: arguments kept as the bytes they
//! are (`OsString`: a non-UTF-8 path names the file it names), the work
//! run on a thread with a large stack, printing that never panics, and
//! outputs written so that a failure leaves nothing half-written.

use std::ffi::{OsStr, OsString};
use std::io::Write;
use std::path::Path;

/// Stack of the thread the tools run on. MLIR's parser, verifier, walks and
/// printer recurse once per nesting level; with nesting capped at
/// [`crate::tools::opt::MAX_NESTING_DEPTH`] levels this leaves a wide margin (the
/// memory is reserved, not committed, until used).
pub const TOOL_STACK_BYTES: usize = 512 << 20;

/// Runs `main` on the command-line arguments (without the program name,
/// as the bytes they are) on a thread with a [`TOOL_STACK_BYTES`] stack;
/// returns its exit code.
#[must_use]
pub fn run(main: fn(&[OsString]) -> i32) -> i32 {
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    let worker = std::thread::Builder::new().name("main".into()).stack_size(TOOL_STACK_BYTES).spawn(move || main(&args));
    match worker.map(std::thread::JoinHandle::join) {
        Ok(Ok(code)) => code,
        Ok(Err(_)) => {
            report("internal error: the tool failed unexpectedly; please report this with the input");
            2
        }
        Err(error) => {
            report(&format!("error: cannot start the worker thread: {error}"));
            1
        }
    }
}

/// Writes `line` and a newline to stderr in one write. A stderr that
/// cannot be written (closed, full) loses the line: the exit code still
/// says what happened, and nothing panics.
pub fn report(line: &str) {
    let mut stderr = std::io::stderr().lock();
    let mut bytes = Vec::with_capacity(line.len() + 1);
    bytes.extend_from_slice(line.as_bytes());
    bytes.push(b'\n');
    let _ = stderr.write_all(&bytes);
    let _ = stderr.flush();
}

/// Writes `bytes` to stdout and flushes.
///
/// # Errors
/// The write error (a full disk, a closed pipe), never a panic.
pub fn print(bytes: &[u8]) -> std::io::Result<()> {
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(bytes).and_then(|()| stdout.flush())
}

/// Prints `text` (help, version) for `tool`: exit code 0, or 1 with a
/// diagnostic when stdout cannot take it.
#[must_use]
pub fn print_info(tool: &str, text: &str) -> i32 {
    match print(text.as_bytes()) {
        Ok(()) => 0,
        Err(error) => {
            report(&format!("{tool}: cannot write <stdout>: {error}"));
            1
        }
    }
}

/// `; did you mean '--x'?` for an unknown option `arg`, from the options
/// a tool's help text lists (empty when none is near).
#[must_use]
pub fn did_you_mean(arg: &str, help: &str) -> String {
    let flag = arg.split('=').next().unwrap_or(arg);
    let mut options: Vec<&str> =
        help.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-')).filter(|word| word.starts_with("--") && word.len() > 2).collect();
    options.sort_unstable();
    options.dedup();
    crate::tools::suggest::suggest(flag, &options).map(|o| format!("; did you mean '{o}'?")).unwrap_or_default()
}

/// What `--version` prints: `<tool> 0.1.0 (MLIR 22)`.
#[must_use]
pub fn version_text(tool: &str) -> String {
    format!("{tool} {} (MLIR 22)\n", env!("CARGO_PKG_VERSION"))
}

/// An argument as text (option names and values that are not paths).
///
/// # Errors
/// The argument is not UTF-8; the message names `what` it is.
pub fn text<'a>(arg: &'a OsStr, what: &str) -> Result<&'a str, String> {
    arg.to_str().ok_or_else(|| format!("{what} is not UTF-8: {}", arg.to_string_lossy()))
}

/// Whether `path` is `-` (standard input or output).
#[must_use]
pub fn is_dash(path: &OsStr) -> bool {
    path.as_encoded_bytes() == b"-"
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
/// or `-`. Returns the name diagnostics use (the path, shown lossily if it
/// is not UTF-8, or `<stdin>`) with the bytes.
pub fn read_input(path: Option<&OsStr>) -> Result<(String, Vec<u8>), InputError> {
    use std::io::Read;
    let file = path.filter(|p| !is_dash(p));
    let name = file.map_or_else(|| "<stdin>".to_string(), |p| p.to_string_lossy().into_owned());
    let read = match file {
        None => {
            let mut bytes = Vec::new();
            std::io::stdin().read_to_end(&mut bytes).map(|_| bytes)
        }
        Some(path) => std::fs::read(path),
    };
    read.map(|bytes| (name.clone(), bytes)).map_err(|source| InputError { name, source })
}

/// Writes `bytes` to `path` so that a failure leaves nothing half-written:
/// the output is first written whole into a uniquely named temporary file
/// beside the target, which then replaces it by a rename (keeping the
/// existing file's permissions and, where allowed, its owner and group).
/// A file the rename would change otherwise — one with other hard links,
/// or whose owner cannot be kept — is rewritten in place instead, from the
/// complete temporary file, so its links, owner and inode stay. A symlink
/// is written through to its target; a FIFO, device or other special file
/// is written directly.
///
/// # Errors
/// The I/O error of creating, writing, renaming or copying.
pub fn write_file_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_file_atomically_with(path, |file| file.write_all(bytes))
}

/// [`write_file_atomically`] with the bytes written by `write` (buffered),
/// so a large output need not be held in memory first.
///
/// # Errors
/// The I/O error of creating, writing (including `write`'s), renaming or
/// copying.
pub fn write_file_atomically_with(path: &Path, write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>) -> std::io::Result<()> {
    use std::os::unix::fs::MetadataExt;
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
    let stem = target.file_name().map_or_else(|| OsString::from("output"), OsStr::to_os_string);
    let (temporary, file) = create_unique(&directory, &stem)?;
    let mut buffered = std::io::BufWriter::with_capacity(1 << 16, file);
    let written = write(&mut buffered)
        .and_then(|()| buffered.into_inner().map_err(std::io::IntoInnerError::into_error))
        .and_then(|file| file.sync_all().map(|()| file))
        .and_then(|file| match &existing {
            None => std::fs::rename(&temporary, &target),
            Some(metadata) => {
                std::fs::set_permissions(&temporary, metadata.permissions())?;
                let owner_kept = file.metadata().is_ok_and(|own| own.uid() == metadata.uid() && own.gid() == metadata.gid())
                    || std::os::unix::fs::fchown(&file, Some(metadata.uid()), Some(metadata.gid())).is_ok();
                if metadata.nlink() > 1 || !owner_kept {
                    rewrite_in_place(&temporary, &target)
                } else {
                    std::fs::rename(&temporary, &target)
                }
            }
        });
    // After a rename there is no temporary file left; otherwise remove it.
    let _ = std::fs::remove_file(&temporary);
    written
}

/// Copies the complete `source` over `target`'s contents (same inode).
fn rewrite_in_place(source: &Path, target: &Path) -> std::io::Result<()> {
    let mut from = std::fs::File::open(source)?;
    let mut to = std::fs::OpenOptions::new().write(true).open(target)?;
    let length = std::io::copy(&mut from, &mut to)?;
    to.set_len(length)?;
    to.sync_all()
}

/// A new file `.<stem>.<pid>.<n>.tmp` in `directory`, created exclusively.
fn create_unique(directory: &Path, stem: &OsStr) -> std::io::Result<(std::path::PathBuf, std::fs::File)> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    loop {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let mut name = OsString::from(".");
        name.push(stem);
        name.push(format!(".{}.{n}.tmp", std::process::id()));
        let candidate = directory.join(name);
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
    fn keeps_hard_links_and_owner() {
        use std::os::unix::fs::MetadataExt;
        let dir = scratch("links");
        let file = dir.join("out.mlir");
        let other = dir.join("other-name.mlir");
        std::fs::write(&file, "old contents, longer than the new").expect("write");
        std::fs::hard_link(&file, &other).expect("link");
        let inode = std::fs::metadata(&file).expect("stat").ino();
        write_file_atomically(&file, b"new").expect("written");
        // One file under both names, with the new bytes only.
        assert_eq!(std::fs::read_to_string(&other).expect("read"), "new");
        assert_eq!(std::fs::metadata(&file).expect("stat").ino(), inode);
        assert_eq!(std::fs::metadata(&file).expect("stat").nlink(), 2);
        let names: Vec<_> = std::fs::read_dir(&dir).expect("ls").map(|e| e.expect("entry").file_name()).collect();
        assert_eq!(names.len(), 2, "no temporary file left: {names:?}");

        // Owner and group stay (when this process may give a file away,
        // i.e. as root; otherwise there is no other owner to keep).
        let owned = dir.join("owned.mlir");
        std::fs::write(&owned, "old").expect("write");
        if std::os::unix::fs::chown(&owned, Some(1), Some(1)).is_ok() {
            write_file_atomically(&owned, b"new").expect("written");
            let metadata = std::fs::metadata(&owned).expect("stat");
            assert_eq!((metadata.uid(), metadata.gid()), (1, 1));
            assert_eq!(std::fs::read_to_string(&owned).expect("read"), "new");
        }
    }

    #[test]
    fn keeps_the_bytes_of_a_path() {
        use std::os::unix::ffi::OsStrExt;
        let dir = scratch("bytes");
        let path = dir.join(std::ffi::OsStr::from_bytes(b"out\xff.mlir"));
        write_file_atomically(&path, b"x").expect("written");
        let names: Vec<_> = std::fs::read_dir(&dir).expect("ls").map(|e| e.expect("entry").file_name()).collect();
        assert_eq!(names, vec![std::ffi::OsString::from(std::ffi::OsStr::from_bytes(b"out\xff.mlir"))]);
    }

    #[test]
    fn a_failed_write_leaves_nothing() {
        let dir = scratch("fail");
        let missing = dir.join("no-such-dir").join("out.mlir");
        assert!(write_file_atomically(&missing, b"x").is_err());
        assert!(!missing.exists());
    }
}
