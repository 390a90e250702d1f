//! Rules about what each layer may contain: headers, unique ids and
//! symbols, forbidden fields per layer, target names and target dialects.

use melior::ir::{operation::OperationLike, AttributeLike, OperationRef};

use super::{position_of, Checker};
use crate::ir::{dialect_of, name_of, str_attr, visit_nested, Nested};

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
    schema: &'static str,
    forbidden: &'static [&'static str],
    digest_attribute: Option<&'static str>,
}

const LAYERS: [Layer; 3] = [
    Layer { dialect: "model", schema: "blueprint.model", forbidden: MODEL_FORBIDDEN, digest_attribute: None },
    Layer { dialect: "dist", schema: "blueprint.dist", forbidden: DIST_FORBIDDEN, digest_attribute: Some("model_digest") },
    Layer { dialect: "plan", schema: "blueprint.plan", forbidden: PLAN_FORBIDDEN, digest_attribute: Some("source_digest") },
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
    crate::ir::identifier_str(op.name())
}

/// Major version of the schemas this build reads.
const SCHEMA_MAJOR: &str = "1";

pub fn check(checker: &mut Checker, all: &[OperationRef], ops: &[(crate::ods::OpKind, OperationRef)]) {
    for &op in all {
        let dialect = dialect_of(op_name(op));
        if TARGET_DIALECTS.contains(&dialect) {
            checker.error(op, format!("belongs to target dialect '{dialect}', which is not allowed beside target-neutral Blueprint IR"));
        }
    }
    for layer in &LAYERS {
        let layer_ops: Vec<OperationRef> = ops.iter().filter(|(kind, _)| kind.dialect() == layer.dialect).map(|(_, op)| *op).collect();
        if layer_ops.is_empty() {
            continue;
        }
        check_header(checker, layer, &layer_ops);
        // One read of each op's attributes serves the unique-id, unique-
        // symbol and forbidden-field rules (reported in that order).
        let mut names = NameCache::default();
        let mut texts = TextCache::default();
        let read: Vec<OpFields> = layer_ops.iter().map(|&op| read_fields(op, layer, &mut names, &mut texts)).collect();
        check_unique(checker, &read, |f| f.id, "id");
        check_unique(checker, &read, |f| f.sym_name, "symbol");
        for fields in read {
            for problem in fields.problems {
                checker.error(fields.op, problem);
            }
        }
    }
}

/// What the layer rules read from one op.
struct OpFields<'c, 'a> {
    op: OperationRef<'c, 'a>,
    id: Option<&'c str>,
    sym_name: Option<&'c str>,
    problems: Vec<String>,
}

/// Whether each attribute name (by its uniqued address) is forbidden in
/// the layer: a step has few distinct names and many ops.
type NameCache = crate::ir::PtrMap<bool>;

/// The target name each string attribute (by its uniqued address) names,
/// if any: a task's lineage is its id, the same attribute.
type TextCache = crate::ir::PtrMap<Option<&'static str>>;

fn check_header(checker: &mut Checker, layer: &Layer, ops: &[OperationRef]) {
    let header_name = format!("{}.header", layer.dialect);
    let headers: Vec<OperationRef> = ops.iter().copied().filter(|op| op_name(*op) == header_name).collect();
    let Some(&first) = headers.first() else {
        // Reported at the layer's first op: the module itself may have no
        // location of its own.
        checker.error(ops[0], format!("is in a module without a '{header_name}' (schema name and version)"));
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

fn check_unique<'c>(checker: &mut Checker, ops: &[OpFields<'c, '_>], field: impl Fn(&OpFields<'c, '_>) -> Option<&'c str>, what: &str) {
    let mut seen: crate::ir::FxMap<&str, OperationRef> = crate::ir::FxMap::default();
    for fields in ops {
        let op = fields.op;
        let Some(value) = field(fields) else { continue };
        if value.is_empty() {
            checker.error(op, format!("{what} must not be empty"));
            continue;
        }
        match seen.get(value) {
            Some(&first) => checker.error(op, format!("redefines {what} '{value}' (first defined at {})", position_of(first))),
            None => {
                seen.insert(value, op);
            }
        }
    }
}

fn read_fields<'c, 'a>(op: OperationRef<'c, 'a>, layer: &Layer, names: &mut NameCache, texts: &mut TextCache) -> OpFields<'c, 'a> {
    let mut fields = OpFields { op, id: None, sym_name: None, problems: Vec::new() };
    let raw = op.to_raw();
    // SAFETY: a live op; its names and attributes live as long as its context.
    for &named in unsafe { crate::ir::named_attributes(raw) } {
        let identifier = unsafe { melior::ir::Identifier::from_raw(named.name) };
        let name_ref = identifier.as_string_ref().to_raw();
        let name_bytes = if name_ref.data.is_null() {
            &[][..]
        } else {
            unsafe { std::slice::from_raw_parts(name_ref.data.cast::<u8>(), name_ref.length) }
        };
        let value = unsafe { melior::ir::Attribute::from_raw(named.attribute) };
        let is_string = value.is_string();
        match name_bytes {
            b"id" if is_string => fields.id = crate::ir::string_value(value),
            b"sym_name" if is_string => fields.sym_name = crate::ir::string_value(value),
            _ => {}
        }
        // Names are checked as text only where a message needs them.
        let name = || crate::ir::identifier_str(identifier);
        let forbidden = *names.entry(name_ref.data as usize).or_insert_with(|| names_forbidden(layer.forbidden, bare_name(name())));
        if forbidden {
            fields.problems.push(format!(
                "attribute '{}' is a placement or target field, illegal in the '{}' layer",
                name(),
                layer.dialect
            ));
        }
        if is_string {
            let text = unsafe { mlir_sys::mlirStringAttrGetValue(named.attribute) };
            let bytes =
                if text.data.is_null() { &[][..] } else { unsafe { std::slice::from_raw_parts(text.data.cast::<u8>(), text.length) } };
            let target = *texts.entry(named.attribute.ptr as usize).or_insert_with(|| target_name_in_bytes(bytes));
            // (Text that is not UTF-8 reads as a placeholder naming no target.)
            if let (Some(target), Ok(text)) = (target, std::str::from_utf8(bytes)) {
                fields.problems.push(format!(
                    "attribute '{}' names target '{target}' in \"{text}\"; the '{}' layer is target-neutral",
                    name(),
                    layer.dialect
                ));
            }
            continue;
        }
        // Integers, dense arrays and symbols (most attributes) nest nothing.
        if !value.is_array() && !value.is_dictionary() {
            continue;
        }
        let name = name();
        visit_nested(value, &mut |nested| match nested {
            Nested::Key(key) => {
                if names_forbidden(layer.forbidden, key) {
                    fields.problems.push(format!(
                        "attribute '{name}' nests field '{key}', a placement or target field illegal in the '{}' layer",
                        layer.dialect
                    ));
                }
            }
            Nested::String(text) => {
                if let Some(target) = target_name_in(text) {
                    fields.problems.push(format!(
                        "attribute '{name}' names target '{target}' in \"{text}\"; the '{}' layer is target-neutral",
                        layer.dialect
                    ));
                }
            }
        });
    }
    fields
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
    // some target name are compared.
    text.split(|b| !b.is_ascii_alphanumeric())
        .filter(|word| (3..=7).contains(&word.len()))
        .find_map(|word| TARGET_NAMES.iter().copied().find(|t| t.len() == word.len() && word.eq_ignore_ascii_case(t.as_bytes())))
}

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
