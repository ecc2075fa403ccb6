//! What the deploy tests share: `deploy/`'s files, typed reads of YAML
//! nodes, and a YAML document as the API server reads it.

use yaml_rust2::Yaml;

/// A file under `deploy/`.
pub fn deploy(file: &str) -> String {
    std::fs::read_to_string(super::metrics::repo().join("deploy").join(file)).unwrap()
}

pub fn s<'a>(y: &'a Yaml, what: &str) -> &'a str {
    y.as_str().unwrap_or_else(|| panic!("{what}: expected a string, found {y:?}"))
}

pub fn list<'a>(y: &'a Yaml, what: &str) -> &'a Vec<Yaml> {
    y.as_vec().unwrap_or_else(|| panic!("{what}: expected a list, found {y:?}"))
}

/// A YAML document as JSON, the way the API server reads it.
pub fn yaml_to_json(y: &Yaml) -> serde_json::Value {
    use serde_json::Value;
    match y {
        Yaml::Real(r) => Value::from(r.parse::<f64>().unwrap()),
        Yaml::Integer(i) => Value::from(*i),
        Yaml::String(s) => Value::from(s.as_str()),
        Yaml::Boolean(b) => Value::from(*b),
        Yaml::Array(a) => Value::Array(a.iter().map(yaml_to_json).collect()),
        Yaml::Hash(h) => Value::Object(h.iter().map(|(k, v)| (s(k, "key").to_string(), yaml_to_json(v))).collect()),
        Yaml::Null => Value::Null,
        other => panic!("unexpected YAML node {other:?}"),
    }
}

/// The document of `kind` among `docs`.
pub fn of_kind<'a>(docs: &'a [Yaml], kind: &str) -> &'a Yaml {
    docs.iter().find(|d| d["kind"].as_str() == Some(kind)).unwrap_or_else(|| panic!("no {kind} rendered"))
}

/// The pinned API server's OpenAPI v3, captured by `deploy/local/openapi.sh`
/// (README in the fixture directory): every schema of the group-versions
/// deploy/ uses, keyed by name, and the schema name of each apiVersion/kind.
pub struct OpenApi {
    schemas: serde_json::Map<String, serde_json::Value>,
    kinds: std::collections::BTreeMap<(String, String), String>,
}

pub const OPENAPI_VERSION: &str = "v1.34.2";

pub fn openapi() -> OpenApi {
    let dir = super::metrics::repo().join("tests/fixtures/k8s-openapi").join(OPENAPI_VERSION);
    let mut schemas = serde_json::Map::new();
    let mut kinds = std::collections::BTreeMap::new();
    for f in ["api_v1.json", "apis_apps_v1.json", "apis_batch_v1.json"] {
        let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(dir.join(f)).unwrap()).unwrap();
        for (name, schema) in doc["components"]["schemas"].as_object().unwrap() {
            for gvk in schema["x-kubernetes-group-version-kind"].as_array().into_iter().flatten() {
                let (g, v, k) = (gvk["group"].as_str().unwrap(), gvk["version"].as_str().unwrap(), &gvk["kind"]);
                let api = if g.is_empty() { v.to_string() } else { format!("{g}/{v}") };
                kinds.insert((api, k.as_str().unwrap().to_string()), name.clone());
            }
            schemas.insert(name.clone(), schema.clone());
        }
    }
    assert!(kinds.len() > 20, "the fixture holds the group-versions' kinds");
    OpenApi { schemas, kinds }
}

/// Strict, as the API server's `fieldValidation=Strict` (kubectl's default):
/// an object with declared properties accepts no other field. The OpenAPI
/// leaves `additionalProperties` out; an object whose fields are free (maps,
/// `x-kubernetes-preserve-unknown-fields`) is left as it is.
fn strict(schema: &mut serde_json::Value) {
    let Some(m) = schema.as_object_mut() else { return };
    if m.contains_key("properties")
        && !m.contains_key("additionalProperties")
        && !m.contains_key("x-kubernetes-preserve-unknown-fields")
    {
        m.insert("additionalProperties".into(), false.into());
    }
    if let Some(props) = m.get_mut("properties").and_then(|p| p.as_object_mut()) {
        props.values_mut().for_each(strict);
    }
    for k in ["items", "additionalProperties", "not"] {
        if let Some(s) = m.get_mut(k) {
            strict(s);
        }
    }
    for k in ["allOf", "anyOf", "oneOf"] {
        if let Some(list) = m.get_mut(k).and_then(|l| l.as_array_mut()) {
            list.iter_mut().for_each(strict);
        }
    }
}

impl OpenApi {
    /// The schema violations of one object, each as "path: message"; Err if
    /// the server has no schema for its apiVersion/kind.
    pub fn violations(&self, obj: &serde_json::Value) -> Result<Vec<String>, String> {
        let api = obj["apiVersion"].as_str().unwrap_or_default().to_string();
        let kind = obj["kind"].as_str().unwrap_or_default().to_string();
        let name = self.kinds.get(&(api.clone(), kind.clone())).ok_or(format!("no schema for {api} {kind}"))?;
        let mut schemas = serde_json::Value::Object(self.schemas.clone());
        schemas.as_object_mut().unwrap().values_mut().for_each(strict);
        let root = serde_json::json!({
            "$ref": format!("#/components/schemas/{name}"),
            "components": { "schemas": schemas },
        });
        let validator = jsonschema::options()
            .with_draft(jsonschema::Draft::Draft4)
            .should_validate_formats(false)
            .build(&root)
            .unwrap_or_else(|e| panic!("the OpenAPI schema of {kind} compiles: {e}"));
        Ok(validator.iter_errors(obj).map(|e| format!("{}: {e}", e.instance_path())).collect())
    }
}
