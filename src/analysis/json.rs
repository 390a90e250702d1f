//! JSON input read with the path of the offending field in its error.

/// Deserializes `json`; an error names the path of the offending field
/// (`mapping.recompute: unknown variant ...`, which serde alone does not for
/// enum values) and serde's line and column. Each reader wraps the message
/// in its own error type.
pub(crate) fn from_json_located<T: serde::de::DeserializeOwned>(json: &str) -> Result<T, String> {
    let mut deserializer = serde_json::Deserializer::from_str(json);
    serde_path_to_error::deserialize(&mut deserializer).map_err(|error| {
        let path = error.path().to_string();
        let inner = error.into_inner();
        if path.is_empty() || path == "." {
            inner.to_string()
        } else {
            format!("{path}: {inner}")
        }
    })
}
