//! Rules about what each layer may contain: headers, unique ids and
//! symbols, forbidden fields per layer, target names and target dialects.

use melior::ir::{operation::OperationLike, OperationRef};

use super::checker::{position_of, Checker};
use crate::ir::{
    ods::OpKind,
    read::{dialect_of, name_of, str_attr, visit_nested, AttrClass, Nested},
};

/// Attribute names that state placement or target facts, which ModelIR must
/// never contain.
const MODEL_FORBIDDEN: &[&str] = &[
    "tp",
    "pp",
    "dp",
    "tensor_parallel",
    "pipeline_parallel",
    "data_parallel",
    "placement",
    "mesh",
    "rank",
    "ranks",
    "sharding",
    "split_axes",
    "device",
    "device_id",
    "physical_device",
    "kernel",
    "kernel_id",
    "implementation_id",
    "duration",
    "latency",
    "queue",
    "stream",
    "address",
    "memory_address",
    "start_time",
    "end_time",
    "bandwidth",
];

/// The reserved names of the distributed layer (seed 003,
/// `_DISTRIBUTED_RESERVED`): semantic fields of other layers and target facts.
const DIST_FORBIDDEN: &[&str] = &[
    "model_spec",
    "workload_spec",
    "mapping_spec",
    "inference_mapping_spec",
    "inference_phase",
    "batch_size",
    "query_tokens",
    "context_tokens",
    "datatype",
    "invocation",
    "block_memory",
    "scope",
    "physical_device",
    "device_id",
    "route",
    "queue",
    "stream",
    "kernel",
    "implementation_id",
    "start",
    "start_time",
    "end",
    "end_time",
    "duration",
    "latency",
    "bandwidth",
];

/// Target fields a portable plan must not contain.
const PLAN_FORBIDDEN: &[&str] = &[
    "kernel",
    "kernel_id",
    "implementation_id",
    "physical_device",
    "device_id",
    "memory_bank",
    "bank",
    "queue",
    "stream",
    "route",
    "duration",
    "latency",
    "start",
    "start_time",
    "end",
    "end_time",
    "timestamp",
    "address",
];

/// Names of target libraries and runtimes; no target-neutral layer may
/// mention them in any string.
const TARGET_NAMES: &[&str] =
    &["cuda", "rocm", "hip", "nccl", "rccl", "cublas", "cudnn", "cutlass", "miopen", "oneccl", "lpu", "ptx", "sass", "hsaco"];

/// Dialects that bind a target; none may appear beside Blueprint IR.
const TARGET_DIALECTS: &[&str] =
    &["gpu", "nvvm", "rocdl", "nvgpu", "amdgpu", "xegpu", "xevm", "spirv", "amx", "x86vector", "arm_neon", "arm_sve", "arm_sme"];

struct Layer {
    dialect: &'static str,
    header: OpKind,
    schema: &'static str,
    forbidden: &'static [&'static str],
    digest_attribute: Option<&'static str>,
}

const LAYERS: [Layer; 3] = [
    Layer { dialect: "model", header: OpKind::ModelHeader, schema: "blueprint.model", forbidden: MODEL_FORBIDDEN, digest_attribute: None },
    Layer {
        dialect: "dist",
        header: OpKind::DistHeader,
        schema: "blueprint.dist",
        forbidden: DIST_FORBIDDEN,
        digest_attribute: Some("model_digest"),
    },
    Layer {
        dialect: "plan",
        header: OpKind::PlanHeader,
        schema: "blueprint.plan",
        forbidden: PLAN_FORBIDDEN,
        digest_attribute: Some("source_digest"),
    },
];

/// Whether `name` is a forbidden field in `dialect`'s layer (the layering
/// rule reports it; other rules skip it to avoid a second message).
#[must_use]
pub fn is_forbidden(dialect: &str, name: &str) -> bool {
    let bare = bare_name(name);
    LAYERS.iter().any(|layer| layer.dialect == dialect && names_forbidden(layer.forbidden, bare))
}

/// Whether `name` is one of `forbidden`, ignoring ASCII case (no allocation:
/// this runs for every attribute of every op).
fn names_forbidden(forbidden: &[&str], name: &str) -> bool {
    forbidden.iter().any(|f| f.len() == name.len() && f.eq_ignore_ascii_case(name))
}

/// The op's full name without allocating.
fn op_name<'c>(op: OperationRef<'c, '_>) -> &'c str {
    crate::ir::raw::identifier_str(op.name())
}

/// Major version of the schemas this build reads.
const SCHEMA_MAJOR: &str = "1";

pub fn check(checker: &mut Checker, all: &[OperationRef], ops: &[(OpKind, OperationRef)]) {
    // Ops of one name are many: a name seen in no target dialect is not
    // looked at again.
    let mut clean: crate::ir::raw::PtrMap<()> = crate::ir::raw::PtrMap::default();
    let mut last_clean = None;
    for &op in all {
        // SAFETY: a live op.
        let name = unsafe { mlir_sys::mlirOperationGetName(op.to_raw()) }.ptr as usize;
        if last_clean == Some(name) || clean.contains_key(&name) {
            last_clean = Some(name);
            continue;
        }
        let dialect = dialect_of(op_name(op));
        if TARGET_DIALECTS.contains(&dialect) {
            checker.error(op, format!("belongs to target dialect '{dialect}', which is not allowed beside target-neutral Blueprint IR"));
        } else {
            clean.insert(name, ());
        }
    }
    // Each op's layer, found once.
    let mut layer_of = vec![None; OpKind::ALL.len()];
    for kind in OpKind::ALL {
        layer_of[kind as usize] = LAYERS.iter().position(|layer| layer.dialect == kind.dialect());
    }
    let mut by_layer: [Vec<(OpKind, OperationRef)>; 3] = Default::default();
    for &(kind, op) in ops {
        if let Some(index) = layer_of[kind as usize] {
            by_layer[index].push((kind, op));
        }
    }
    let classes = crate::ir::read::AttrClasses::new();
    for (layer, layer_ops) in LAYERS.iter().zip(&by_layer) {
        if layer_ops.is_empty() {
            continue;
        }
        check_header(checker, layer, layer_ops);
        // One read of each op's attributes serves the unique-id, unique-
        // symbol and forbidden-field rules (reported in that order). No
        // per-op record is kept: the rules run as the ops are read.
        let mut names = NameCache::default();
        let mut texts = TextCache::new();
        let mut ids = Unique::new("id", layer_ops.len());
        let mut symbols = Unique::new("symbol", 0);
        let mut problems = Vec::new();
        for &(kind, op) in layer_ops {
            let (id, sym_name) = read_fields(op, kind, layer, &classes, &mut names, &mut texts, &mut problems);
            ids.see(op, id);
            symbols.see(op, sym_name);
        }
        for (op, problem) in ids.errors.into_iter().chain(symbols.errors).chain(problems) {
            checker.error(op, problem);
        }
    }
}

/// One uniqueness rule over a layer's ops: the first op of each value, and
/// the diagnostics of those that repeat one (or give an empty one).
struct Unique<'c, 'a> {
    what: &'static str,
    seen: crate::ir::raw::FxMap<&'c str, OperationRef<'c, 'a>>,
    errors: Vec<(OperationRef<'c, 'a>, String)>,
}

impl<'c, 'a> Unique<'c, 'a> {
    fn new(what: &'static str, capacity: usize) -> Self {
        let mut seen = crate::ir::raw::FxMap::default();
        seen.reserve(capacity);
        Self { what, seen, errors: Vec::new() }
    }

    fn see(&mut self, op: OperationRef<'c, 'a>, value: Option<&'c str>) {
        let Some(value) = value else { return };
        let what = self.what;
        if value.is_empty() {
            self.errors.push((op, format!("{what} must not be empty")));
            return;
        }
        match self.seen.entry(value) {
            std::collections::hash_map::Entry::Occupied(first) => {
                self.errors.push((op, format!("redefines {what} '{value}' (first defined at {})", position_of(*first.get()))));
            }
            std::collections::hash_map::Entry::Vacant(slot) => {
                slot.insert(op);
            }
        }
    }
}

/// What the layer rules know of an attribute name: whether it is
/// forbidden in the layer, and whether it is `id` or `sym_name`.
#[derive(Clone, Copy)]
struct NameFact {
    forbidden: bool,
    role: Role,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Role {
    Id,
    SymName,
    Other,
}

/// Each attribute name's fact, by its uniqued address: a step has few
/// distinct names and many ops.
type NameCache = crate::ir::read::NameFacts<NameFact>;

/// The target name each recently read string attribute (by its uniqued
/// address) names, if any, direct-mapped: enum-like strings repeat across
/// ops, ids do not (a task's lineage is its id, the same attribute, read
/// next), so a map of every string would only grow.
struct TextCache {
    slots: Box<[(usize, Option<&'static str>)]>,
}

impl TextCache {
    const SLOTS: usize = 1024;

    fn new() -> Self {
        Self { slots: vec![(0, None); Self::SLOTS].into_boxed_slice() }
    }

    fn target_of(&mut self, attribute: usize, bytes: &[u8]) -> Option<&'static str> {
        let slot = &mut self.slots[(attribute >> 4) % Self::SLOTS];
        if slot.0 != attribute {
            *slot = (attribute, target_name_in_bytes(bytes));
        }
        slot.1
    }
}

fn check_header(checker: &mut Checker, layer: &Layer, ops: &[(OpKind, OperationRef)]) {
    let headers: Vec<OperationRef> = ops.iter().filter(|(kind, _)| *kind == layer.header).map(|(_, op)| *op).collect();
    let Some(&first) = headers.first() else {
        // Reported at the layer's first op: the module itself may have no
        // location of its own.
        checker.error(ops[0].1, format!("is in a module without a '{}' (schema name and version)", layer.header.name()));
        return;
    };
    for &extra in &headers[1..] {
        checker.error(extra, format!("is a second header; the first is at {}", position_of(first)));
    }
    for &header in &headers {
        let at_module_scope = header.parent_operation().is_some_and(|parent| name_of(parent) == "builtin.module");
        if !at_module_scope {
            checker.error(header, "must be at module scope");
        }
        if let Some(schema) = str_attr(header, "schema_name") {
            if schema != layer.schema {
                checker.error(header, format!("expected schema_name '{}', but got '{schema}'", layer.schema));
            }
        }
        if let Some(version) = str_attr(header, "schema_version") {
            let mut parts = version.split('.');
            let major = parts.next().unwrap_or("");
            let well_formed =
                parts.next().is_some_and(|m| !m.is_empty() && m.bytes().all(|b| b.is_ascii_digit())) && parts.next().is_none();
            if major != SCHEMA_MAJOR || !well_formed {
                checker.error(header, format!("unsupported schema_version '{version}' (this build reads {SCHEMA_MAJOR}.x)"));
            }
        }
        if let Some(attribute) = layer.digest_attribute {
            if let Some(digest) = str_attr(header, attribute) {
                if !is_content_digest(digest) {
                    checker.error(
                        header,
                        format!("attribute '{attribute}' must be 'sha256:' followed by 64 lowercase hex digits, but got '{digest}'"),
                    );
                }
            }
        }
    }
}

/// Whether `digest` has the form of a Blueprint content digest.
#[must_use]
pub fn is_content_digest(digest: &str) -> bool {
    digest.strip_prefix("sha256:").is_some_and(|hex| hex.len() == 64 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')))
}

fn read_fields<'c, 'a>(
    op: OperationRef<'c, 'a>,
    kind: OpKind,
    layer: &Layer,
    classes: &crate::ir::read::AttrClasses,
    names: &mut NameCache,
    texts: &mut TextCache,
    problems: &mut Vec<(OperationRef<'c, 'a>, String)>,
) -> (Option<&'c str>, Option<&'c str>) {
    let (mut id, mut sym_name) = (None, None);
    let raw = op.to_raw();
    let mut names = names.group(kind as usize);
    // SAFETY: a live op; its names and attributes live as long as its context.
    for (position, &named) in unsafe { crate::ir::read::named_attributes(raw) }.iter().enumerate() {
        let fact = names.get(position, named.name, |name| NameFact {
            forbidden: names_forbidden(layer.forbidden, bare_name(name)),
            role: match name {
                "id" => Role::Id,
                "sym_name" => Role::SymName,
                _ => Role::Other,
            },
        });
        let class = classes.of(named.attribute);
        let is_string = class == AttrClass::String;
        // Names are read as text only where a message needs them.
        let name = || crate::ir::raw::identifier_str(unsafe { melior::ir::Identifier::from_raw(named.name) });
        if is_string && fact.role != Role::Other {
            let value = crate::ir::read::string_value(unsafe { melior::ir::Attribute::from_raw(named.attribute) });
            if fact.role == Role::Id {
                id = value;
            } else {
                sym_name = value;
            }
        }
        if fact.forbidden {
            problems.push((op, format!("attribute '{}' is a placement or target field, illegal in the '{}' layer", name(), layer.dialect)));
        }
        match class {
            AttrClass::String => {
                let bytes = unsafe { crate::ir::raw::string_ref_bytes(mlir_sys::mlirStringAttrGetValue(named.attribute)) };
                let target = texts.target_of(named.attribute.ptr as usize, bytes);
                // (Text that is not UTF-8 reads as a placeholder naming no target.)
                if let Some(target) = target {
                    if let Ok(text) = std::str::from_utf8(bytes) {
                        problems.push((
                            op,
                            format!(
                                "attribute '{}' names target '{target}' in \"{text}\"; the '{}' layer is target-neutral",
                                name(),
                                layer.dialect
                            ),
                        ));
                    }
                }
            }
            // Integers, dense arrays and symbols (most attributes) nest nothing.
            AttrClass::Other => {}
            AttrClass::Array | AttrClass::Dictionary => {
                let value = unsafe { melior::ir::Attribute::from_raw(named.attribute) };
                let name = name();
                visit_nested(value, &mut |nested| match nested {
                    Nested::Key(key) => {
                        if names_forbidden(layer.forbidden, key) {
                            problems.push((
                                op,
                                format!(
                                    "attribute '{name}' nests field '{key}', a placement or target field illegal in the '{}' layer",
                                    layer.dialect
                                ),
                            ));
                        }
                    }
                    Nested::String(text) => {
                        if let Some(target) = target_name_in(text) {
                            problems.push((
                                op,
                                format!(
                                    "attribute '{name}' names target '{target}' in \"{text}\"; the '{}' layer is target-neutral",
                                    layer.dialect
                                ),
                            ));
                        }
                    }
                });
            }
        }
    }
    (id, sym_name)
}

/// The name after its last `.` (a dialect-prefixed name's own part).
fn bare_name(name: &str) -> &str {
    match name.as_bytes().iter().rposition(|&b| b == b'.') {
        Some(dot) => &name[dot + 1..],
        None => name,
    }
}

/// The first target library or runtime name that appears as a word in `text`.
fn target_name_in(text: &str) -> Option<&'static str> {
    target_name_in_bytes(text.as_bytes())
}

fn target_name_in_bytes(text: &[u8]) -> Option<&'static str> {
    // Words are runs of ASCII letters and digits; only words as long as
    // some target name, starting as one does, are compared (this reads
    // every string of every op: one table look-up per byte).
    let mut start = 0;
    for end in 0..=text.len() {
        if end < text.len() && WORD_BYTES[usize::from(text[end])] {
            continue;
        }
        let word = &text[start..end];
        if (3..=7).contains(&word.len()) && TARGET_FIRST_BYTES[usize::from(word[0])] {
            let key = packed_lowercase(word);
            if let Some(i) = TARGET_PACKED.iter().position(|&t| t == key) {
                return Some(TARGET_NAMES[i]);
            }
        }
        start = end + 1;
    }
    None
}

/// A word of up to 8 ASCII letters and digits, lowercased, as one number
/// (its bytes are nonzero, so words of different lengths differ).
const fn packed_lowercase(word: &[u8]) -> u64 {
    let mut key = 0u64;
    let mut i = 0;
    while i < word.len() && i < 8 {
        key |= (word[i].to_ascii_lowercase() as u64) << (8 * i);
        i += 1;
    }
    key
}

/// [`TARGET_NAMES`] packed by [`packed_lowercase`], index-aligned.
static TARGET_PACKED: [u64; TARGET_NAMES.len()] = {
    let mut table = [0u64; TARGET_NAMES.len()];
    let mut i = 0;
    while i < TARGET_NAMES.len() {
        table[i] = packed_lowercase(TARGET_NAMES[i].as_bytes());
        i += 1;
    }
    table
};

/// Which bytes are ASCII letters and digits.
static WORD_BYTES: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 256 {
        table[b] = (b as u8).is_ascii_alphanumeric();
        b += 1;
    }
    table
};

/// Which bytes start a target name, in either case.
static TARGET_FIRST_BYTES: [bool; 256] = {
    let mut table = [false; 256];
    let mut i = 0;
    while i < TARGET_NAMES.len() {
        let first = TARGET_NAMES[i].as_bytes()[0];
        table[first.to_ascii_lowercase() as usize] = true;
        table[first.to_ascii_uppercase() as usize] = true;
        i += 1;
    }
    table
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn target_names_match_whole_words_only() {
        assert_eq!(target_name_in("nccl_allreduce"), Some("nccl"));
        assert_eq!(target_name_in("use CUDA graphs"), Some("cuda"));
        assert_eq!(target_name_in("relationship.hipster"), None);
        assert_eq!(target_name_in("attn.qkv"), None);
    }

    #[test]
    fn target_names_are_found_at_either_end_and_in_any_case() {
        assert_eq!(target_name_in("CUDA"), Some("cuda"));
        assert_eq!(target_name_in("x.Cutlass"), Some("cutlass"));
        assert_eq!(target_name_in("hsaco-"), Some("hsaco"));
        assert_eq!(target_name_in("a b ptx"), Some("ptx"));
        assert_eq!(target_name_in("cudas ncc lpux"), None);
        assert_eq!(target_name_in(""), None);
        // Non-ASCII bytes end words.
        assert_eq!(target_name_in("é_nccl_é"), Some("nccl"));
    }

    #[test]
    fn target_names_are_found_as_words_were_split() {
        // The scan as it read before the table look-ups.
        let by_split = |text: &str| {
            text.as_bytes()
                .split(|b| !b.is_ascii_alphanumeric())
                .filter(|word| (3..=7).contains(&word.len()))
                .find_map(|word| TARGET_NAMES.iter().copied().find(|t| t.len() == word.len() && word.eq_ignore_ascii_case(t.as_bytes())))
        };
        let words = ["", "s0", "attn", "NCCL", "rocm", "rocmx", "hip", "Miopen", "oneCCL", "sass", "x", "lpu7", "ptx"];
        let separators = ["", ".", "@", "_", " ", "é", "--"];
        for a in words {
            for sep in separators {
                for b in words {
                    let text = format!("{a}{sep}{b}{sep}");
                    assert_eq!(target_name_in(&text), by_split(&text), "{text:?}");
                }
            }
        }
    }

    #[test]
    fn target_names_are_three_to_seven_letters() {
        // target_name_in compares only words of these lengths.
        assert!(TARGET_NAMES.iter().all(|t| (3..=7).contains(&t.len())));
    }

    #[test]
    fn digests_need_the_full_form() {
        let hex = "0".repeat(64);
        assert!(is_content_digest(&format!("sha256:{hex}")));
        assert!(!is_content_digest(&hex));
        assert!(!is_content_digest(&format!("sha256:{}", "A".repeat(64))));
        assert!(!is_content_digest("sha256:abc"));
    }
}
