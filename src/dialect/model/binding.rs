//! The strategy binding beside ModelIR: the whole spec (model, workload,
//! mapping) as a dictionary attribute on the module. ModelIR itself stays
//! free of placement; passes that need the strategy read it from here.

use melior::ir::{
    attribute::{ArrayAttribute, DictionaryAttribute},
    operation::OperationLike,
    Attribute, AttributeLike, OperationRef,
};
use serde::{de::DeserializeOwned, Serialize};
use serde_json::Value as Json;
use thiserror::Error;

use crate::ir::{
    raw::identifier_str,
    read::{int_value, string_value},
};

/// Module attribute holding a training spec.
pub const TRAINING_SPEC: &str = "blueprint.training_spec";
/// Module attribute holding an inference spec.
pub const INFERENCE_SPEC: &str = "blueprint.inference_spec";

#[derive(Debug, Error)]
pub enum BindingError {
    #[error("missing strategy: the module has no '{0}' attribute (blueprint-translate --import-transformer-* writes it)")]
    Missing(&'static str),
    /// The module holds the other kind of spec (an inference plan where a
    /// training one is needed, or the reverse).
    #[error("the module holds {found_kind} spec ('{found}'), but this needs {wanted_kind} spec ('{wanted}', which blueprint-translate --import-transformer-{wanted_import} writes)")]
    OtherKind {
        found: &'static str,
        found_kind: &'static str,
        wanted: &'static str,
        wanted_kind: &'static str,
        wanted_import: &'static str,
    },
    #[error("'{attribute}' is not a valid spec: {reason}")]
    Invalid { attribute: &'static str, reason: String },
}

/// Why `attribute` is not on `module`: absent, or the other kind of spec.
fn missing(module: OperationRef, attribute: &'static str) -> BindingError {
    let kind = |attribute: &str| if attribute == TRAINING_SPEC { ("a training", "training") } else { ("an inference", "inference") };
    let other = if attribute == TRAINING_SPEC { INFERENCE_SPEC } else { TRAINING_SPEC };
    if (attribute == TRAINING_SPEC || attribute == INFERENCE_SPEC) && module.attribute(other).is_ok() {
        let ((found_kind, _), (wanted_kind, wanted_import)) = (kind(other), kind(attribute));
        return BindingError::OtherKind { found: other, found_kind, wanted: attribute, wanted_kind, wanted_import };
    }
    BindingError::Missing(attribute)
}

/// The spec stored under `attribute` on `module`, parsed and validated by
/// `validate`.
pub fn read_spec<T: DeserializeOwned>(
    module: OperationRef,
    attribute: &'static str,
    validate: impl FnOnce(&T) -> Result<(), String>,
) -> Result<T, BindingError> {
    let value = module.attribute(attribute).map_err(|_| missing(module, attribute))?;
    let json = attribute_to_json(value).ok_or_else(|| BindingError::Invalid {
        attribute,
        reason: "it holds something other than dictionaries, arrays, strings, numbers and booleans".into(),
    })?;
    let spec: T = serde_json::from_value(json).map_err(|e| BindingError::Invalid { attribute, reason: e.to_string() })?;
    validate(&spec).map_err(|reason| BindingError::Invalid { attribute, reason })?;
    Ok(spec)
}

/// The MLIR attribute text of a serializable spec (a dictionary whose keys
/// are sorted, so the text is deterministic).
#[must_use]
pub fn spec_attribute_text<T: Serialize>(spec: &T) -> String {
    json_to_attribute_text(&serde_json::to_value(spec).unwrap_or(Json::Null))
}

/// An f64 in MLIR's float literal syntax (a digit, a point, digits, an
/// optional exponent): `1e-8` is `1.0e-8`.
fn float_literal(value: f64) -> String {
    let text = format!("{value:?}");
    if text.contains('.') {
        return text;
    }
    match text.split_once('e') {
        Some((mantissa, exponent)) => format!("{mantissa}.0e{exponent}"),
        None => format!("{text}.0"),
    }
}

fn json_to_attribute_text(value: &Json) -> String {
    match value {
        Json::Null => "unit".into(),
        Json::Bool(b) => b.to_string(),
        Json::Number(n) => match n.as_i64() {
            Some(i) => format!("{i} : i64"),
            None => format!("{} : f64", float_literal(n.as_f64().unwrap_or(0.0))),
        },
        Json::String(s) => quote(s),
        Json::Array(items) => {
            format!("[{}]", items.iter().map(json_to_attribute_text).collect::<Vec<_>>().join(", "))
        }
        Json::Object(map) => {
            let mut entries: Vec<(&String, &Json)> = map.iter().filter(|(_, v)| !v.is_null()).collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            let body: Vec<String> = entries.iter().map(|(k, v)| format!("{} = {}", quote(k), json_to_attribute_text(v))).collect();
            format!("{{{}}}", body.join(", "))
        }
    }
}

/// A string as an MLIR string literal.
#[must_use]
pub fn quote(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for byte in text.bytes() {
        match byte {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            0x20..=0x7e => out.push(byte as char),
            _ => out.push_str(&format!("\\{byte:02X}")),
        }
    }
    out.push('"');
    out
}

/// JSON of an attribute made of dictionaries, arrays, strings, integers
/// and booleans.
#[must_use]
pub fn attribute_to_json(attribute: Attribute) -> Option<Json> {
    // Check kinds first: melior's failing conversions print the attribute.
    if attribute.is_dictionary() {
        let dictionary = DictionaryAttribute::try_from(attribute).ok()?;
        let mut map = serde_json::Map::new();
        for i in 0..dictionary.len() {
            let (key, value) = dictionary.element(i).ok()?;
            map.insert(identifier_str(key).to_string(), attribute_to_json(value)?);
        }
        return Some(Json::Object(map));
    }
    if attribute.is_array() {
        let array = ArrayAttribute::try_from(attribute).ok()?;
        return (0..array.len()).map(|i| array.element(i).ok().and_then(attribute_to_json)).collect::<Option<Vec<_>>>().map(Json::Array);
    }
    if attribute.is_bool() {
        return Some(Json::Bool(int_value(attribute)? != 0));
    }
    if let Some(text) = string_value(attribute) {
        return Some(Json::String(text.to_string()));
    }
    if attribute.is_float() {
        let value = melior::ir::attribute::FloatAttribute::try_from(attribute).ok()?.value();
        return serde_json::Number::from_f64(value).map(Json::Number);
    }
    let value = int_value(attribute)?;
    Some(Json::from(value))
}
