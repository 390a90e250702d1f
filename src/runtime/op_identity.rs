//! Which op a rank's runtime calls belong to. Lowered code announces each
//! op (`_bprt_op`, its `id` and location from a constant global) before its
//! start call; the start puts the op's identity into its contribution, and
//! the participants of an exchange must name the same op
//! ([`super::collective::agree`], and the MPI header): collectives are
//! paired by call order, so two same-shape all-reduces issued in another
//! order on one rank, or one a rank skips, would otherwise combine the
//! wrong data without an error.
//!
//! An announced name is interned once per thread by the address and length
//! of its bytes (a constant global's), so the per-call cost is a lookup and
//! a compare of the bytes with the interned copy, with no allocation; the
//! participants compare 64-bit hashes, and only a mismatch prints names.

use std::cell::RefCell;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

/// An op as the participants compare it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct OpIdentity {
    /// Hash of `name` (the same on every rank and process: SipHash with
    /// fixed keys).
    pub hash: u64,
    /// `'id' at file:line:col`.
    pub name: Arc<str>,
}

impl OpIdentity {
    pub(crate) fn new(name: &str) -> Self {
        #[allow(deprecated)] // SipHasher: fixed keys, so every process hashes alike.
        let mut hasher = std::hash::SipHasher::new_with_keys(0x626c_7565_7072_696e, 0x745f_6f70_5f69_6421);
        name.hash(&mut hasher);
        Self { hash: hasher.finish(), name: Arc::from(name) }
    }
}

thread_local! {
    /// The op the rank announced last.
    static CURRENT: RefCell<Option<OpIdentity>> = const { RefCell::new(None) };
    /// Announced names by the address and length of their bytes.
    static INTERNED: RefCell<HashMap<(usize, usize), OpIdentity>> = RefCell::new(HashMap::new());
}

/// Announces the op whose bytes are `bytes` (UTF-8, or read lossily).
pub(crate) fn announce(bytes: &[u8]) {
    let key = (bytes.as_ptr() as usize, bytes.len());
    let identity = INTERNED.with(|interned| {
        let mut interned = interned.borrow_mut();
        match interned.get(&key) {
            // The same bytes at the same place (a constant global): no new string.
            Some(known) if known.name.as_bytes() == bytes => known.clone(),
            _ => {
                let identity = OpIdentity::new(&String::from_utf8_lossy(bytes));
                interned.insert(key, identity.clone());
                identity
            }
        }
    });
    CURRENT.with(|current| *current.borrow_mut() = Some(identity));
}

/// The op the calling thread announced last.
pub(crate) fn current() -> Option<OpIdentity> {
    CURRENT.with(|current| current.borrow().clone())
}
