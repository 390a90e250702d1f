//! The spec reference: JSON Schemas of the training and inference specs,
//! derived from the spec types themselves (`schemars`, which follows their
//! serde attributes and doc comments), and the field tables of
//! `docs/SPEC.md`, generated from those schemas. `blueprint-translate
//! --spec-schema` and `--spec-reference` print them; a lit test holds the
//! committed files equal to what these functions give.

use schemars::{generate::SchemaSettings, JsonSchema};
use serde_json::Value;

use super::{inference_spec::InferenceSpec, spec::TrainingSpec};

/// Where an error about a spec points the reader.
pub const REFERENCE_NOTE: &str =
    "the spec's fields, their types and defaults are in docs/SPEC.md (JSON Schema: docs/spec/*.schema.json, or blueprint-translate --spec-schema training|inference)";

/// Which spec.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpecKind {
    Training,
    Inference,
}

impl SpecKind {
    /// The command-line spelling.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::Training => "training",
            Self::Inference => "inference",
        }
    }

    /// The spelling's kind.
    #[must_use]
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "training" => Some(Self::Training),
            "inference" => Some(Self::Inference),
            _ => None,
        }
    }
}

fn generate<T: JsonSchema>() -> Value {
    // Draft 2020-12; only what deserializes matters.
    let generator = SchemaSettings::draft2020_12().for_deserialize().into_generator();
    generator.into_root_schema_for::<T>().to_value()
}

/// The JSON Schema of a spec.
#[must_use]
pub fn schema(kind: SpecKind) -> Value {
    let mut value = match kind {
        SpecKind::Training => generate::<TrainingSpec>(),
        SpecKind::Inference => generate::<InferenceSpec>(),
    };
    if let Some(root) = value.as_object_mut() {
        let title = match kind {
            SpecKind::Training => "Blueprint training spec (blueprint-translate --import-transformer-training)",
            SpecKind::Inference => "Blueprint inference spec (blueprint-translate --import-transformer-inference)",
        };
        root.insert("title".into(), Value::from(title));
    }
    if kind == SpecKind::Inference {
        // The inference importer defaults `model.seq_len` (a raw form reads
        // the model before the workload is known; see `inference_spec`).
        if let Some(Value::Array(required)) = value.pointer_mut("/$defs/ModelSpec/required") {
            required.retain(|field| field != "seq_len");
        }
    }
    value
}

/// The schema as the committed file holds it: pretty JSON and a newline.
#[must_use]
pub fn schema_text(kind: SpecKind) -> String {
    let mut text = serde_json::to_string_pretty(&schema(kind)).unwrap_or_default();
    text.push('\n');
    text
}

/// One row of a field table.
struct Row {
    path: String,
    kind: String,
    required: bool,
    default: String,
    meaning: String,
}

/// The object a schema names (through `$ref` into `$defs`), if any.
fn resolve<'a>(root: &'a Value, schema: &'a Value) -> &'a Value {
    match schema.get("$ref").and_then(Value::as_str).and_then(|r| r.strip_prefix("#/$defs/")) {
        Some(name) => root.pointer(&format!("/$defs/{name}")).unwrap_or(schema),
        None => schema,
    }
}

/// The non-null alternatives of `anyOf` / `oneOf`, or the schema itself.
fn alternatives(schema: &Value) -> Vec<&Value> {
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(options)) = schema.get(key) {
            if options.iter().all(|o| o.get("const").is_none()) {
                return options.iter().filter(|o| o.get("type").and_then(Value::as_str) != Some("null")).collect();
            }
        }
    }
    vec![schema]
}

/// The enum cases of a schema with their meanings (`oneOf` of `const`s, or `enum`).
fn cases(schema: &Value) -> Option<Vec<(String, String)>> {
    if let Some(Value::Array(options)) = schema.get("oneOf") {
        if options.iter().all(|o| o.get("const").is_some()) {
            return Some(
                options
                    .iter()
                    .map(|o| (literal(&o["const"]), o.get("description").and_then(Value::as_str).map(one_line).unwrap_or_default()))
                    .collect(),
            );
        }
    }
    schema.get("enum").and_then(Value::as_array).map(|values| values.iter().map(|v| (literal(v), String::new())).collect())
}

fn literal(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A type in words: `integer 1 .. 2^53`, `number`, `` `a` \| `b` ``.
fn type_words(root: &Value, schema: &Value) -> String {
    let parts: Vec<String> = alternatives(schema)
        .into_iter()
        .map(|alternative| {
            let target = resolve(root, alternative);
            if !std::ptr::eq(target, alternative) && alternatives(target).first().is_some_and(|a| !std::ptr::eq(*a, target)) {
                // A named union (`Dropout`): its own alternatives.
                return type_words(root, target);
            }
            if let Some(cases) = cases(target) {
                return cases.iter().map(|(c, _)| format!("`{c}`")).collect::<Vec<_>>().join(" \\| ");
            }
            let ty = match target.get("type") {
                Some(Value::String(t)) => t.clone(),
                Some(Value::Array(types)) => {
                    types.iter().filter_map(Value::as_str).filter(|t| *t != "null").collect::<Vec<_>>().join(" \\| ")
                }
                _ => "any".into(),
            };
            if ty == "integer" {
                let bound = |key: &str| target.get(key).and_then(Value::as_u64);
                let max = |m: u64| if m == 1 << 53 { "2^53".to_string() } else { m.to_string() };
                return match (bound("minimum"), bound("maximum")) {
                    (Some(lo), Some(hi)) => format!("integer {lo} .. {}", max(hi)),
                    (Some(lo), None) => format!("integer ≥ {lo}"),
                    (None, Some(hi)) => format!("integer 0 .. {}", max(hi)),
                    (None, None) => "integer".into(),
                };
            }
            ty
        })
        .collect();
    parts.join(" \\| ")
}

/// Splits a description into its meaning and its `Absent: …` default.
fn meaning_and_default(description: &str) -> (String, Option<String>) {
    let text = one_line(description);
    match text.split_once("Absent: ") {
        Some((meaning, default)) => (meaning.trim().to_string(), Some(default.trim().trim_end_matches('.').to_string())),
        None => (text, None),
    }
}

fn collect_rows(root: &Value, object: &Value, prefix: &str, rows: &mut Vec<Row>) {
    let Some(properties) = object.get("properties").and_then(Value::as_object) else { return };
    let required: Vec<&str> =
        object.get("required").and_then(Value::as_array).map(|r| r.iter().filter_map(Value::as_str).collect()).unwrap_or_default();
    for (name, field) in properties {
        let path = if prefix.is_empty() { name.clone() } else { format!("{prefix}.{name}") };
        let alternatives = alternatives(field);
        let nested = alternatives.iter().map(|a| resolve(root, a)).find(|t| t.get("properties").is_some());
        let description =
            field.get("description").or_else(|| nested.and_then(|n| n.get("description"))).and_then(Value::as_str).unwrap_or_default();
        let (mut meaning, absent) = meaning_and_default(description);
        let target = alternatives.first().map(|a| resolve(root, a));
        if let Some(cases) = target.and_then(cases) {
            let explained: Vec<String> =
                cases.iter().filter(|(_, m)| !m.is_empty()).map(|(c, m)| format!("`{c}`: {}", m.trim_end_matches('.'))).collect();
            if !explained.is_empty() {
                meaning = format!("{meaning} {}.", explained.join("; "));
            }
        }
        let default =
            field.get("default").filter(|d| !d.is_null()).map(|d| format!("`{}`", literal(d))).or(absent).unwrap_or_else(|| "—".into());
        let is_required = required.contains(&name.as_str());
        let kind = if nested.is_some() { "object".to_string() } else { type_words(root, field) };
        rows.push(Row { path: path.clone(), kind, required: is_required, default, meaning: meaning.replace('|', "\\|") });
        if let Some(nested) = nested {
            collect_rows(root, nested, &path, rows);
        }
    }
}

/// The field table of a spec, as Markdown.
#[must_use]
pub fn field_table(kind: SpecKind) -> String {
    let root = schema(kind);
    let mut rows = Vec::new();
    collect_rows(&root, &root, "", &mut rows);
    let mut text = String::from("| field | type | required | default (when absent) | meaning |\n|---|---|---|---|---|\n");
    for row in rows {
        text.push_str(&format!(
            "| `{}` | {} | {} | {} | {} |\n",
            row.path,
            row.kind,
            if row.required { "yes" } else { "no" },
            row.default,
            row.meaning
        ));
    }
    text
}

/// The generated part of `docs/SPEC.md`: both field tables.
#[must_use]
pub fn reference_markdown() -> String {
    let mut text = String::new();
    for kind in [SpecKind::Training, SpecKind::Inference] {
        let root = schema(kind);
        let title = root.get("title").and_then(Value::as_str).unwrap_or_default();
        text.push_str(&format!("### {title}\n\n"));
        let description = root.get("description").and_then(Value::as_str).map(one_line).unwrap_or_default();
        if !description.is_empty() {
            text.push_str(&format!("{description}\n\n"));
        }
        text.push_str(&field_table(kind));
        text.push('\n');
    }
    text
}

/// Every field path a schema describes (for tests).
#[must_use]
pub fn field_paths(kind: SpecKind) -> Vec<String> {
    let root = schema(kind);
    let mut rows = Vec::new();
    collect_rows(&root, &root, "", &mut rows);
    rows.into_iter().map(|r| r.path).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every field of a fully populated spec is in the schema, and nothing else.
    #[test]
    fn schema_names_every_field() {
        let spec = serde_json::json!({
            "name": "n",
            "model": {"name": "m", "hidden": 8, "ffn_hidden": 32, "seq_len": 16, "heads": 2, "head_dim": 4, "blocks": 2,
                      "vocab": 100, "kv_heads": 2, "gated_mlp": true, "norm": "rms_norm", "rope": true, "rope_theta": 10000.0,
                      "dropout": 0.0},
            "workload": {"global_batch": 4, "microbatch": 1, "datatype": "float32",
                         "optimizer": {"kind": "adam", "lr": 0.001, "beta1": 0.9, "beta2": 0.999, "eps": 1e-8}},
            "mapping": {"tp": 1, "pp": 1, "dp": 1, "pipeline_interleaving": 1, "recompute": "none", "tp_comm": "ar",
                        "seq_par_ag_redo": false, "fused_activation": false, "optimizer_sharding": false,
                        "tp_overlap": "none", "pipeline_schedule": "1f1b"}
        });
        let parsed: TrainingSpec = serde_json::from_value(spec.clone()).expect("a complete spec parses");
        let _ = parsed;
        let mut leaves = Vec::new();
        fn walk(value: &Value, prefix: &str, out: &mut Vec<String>) {
            if let Value::Object(map) = value {
                for (k, v) in map {
                    let path = if prefix.is_empty() { k.clone() } else { format!("{prefix}.{k}") };
                    out.push(path.clone());
                    walk(v, &path, out);
                }
            }
        }
        walk(&spec, "", &mut leaves);
        leaves.sort();
        let mut paths = field_paths(SpecKind::Training);
        paths.sort();
        assert_eq!(paths, leaves);
    }

    #[test]
    fn inference_model_may_omit_seq_len() {
        let schema = schema(SpecKind::Inference);
        let required = schema.pointer("/$defs/ModelSpec/required").and_then(Value::as_array).expect("required list");
        assert!(!required.iter().any(|f| f == "seq_len"));
        assert!(required.iter().any(|f| f == "hidden"));
        let training = super::schema(SpecKind::Training);
        let required = training.pointer("/$defs/ModelSpec/required").and_then(Value::as_array).expect("required list");
        assert!(required.iter().any(|f| f == "seq_len"));
    }

    #[test]
    fn tables_give_defaults() {
        let table = field_table(SpecKind::Training);
        assert!(table.contains("| `model.rope_theta` | number | no | 10000 |"), "{table}");
        assert!(table.contains("| `mapping.tp_overlap` | `none` \\| `ring` \\| `pipe` | no | `none` |"), "{table}");
    }
}
