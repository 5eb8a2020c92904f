//! Tool schemas as OpenAI's models read them: the JSON Schema of each function rendered as a
//! TypeScript-like declaration in a `namespace functions` block of the system (or developer)
//! message. The layout is the one the models themselves repeat when asked for their tool
//! instructions, as public write-ups of OpenAI's function calling describe it:
//!
//! ```text
//! # Tools
//!
//! ## functions
//!
//! namespace functions {
//!
//! // Get the weather for a city.
//! type get_weather = (_: {
//! // The city's name.
//! city: string,
//! unit?: "c" | "f",
//! }) => any;
//!
//! } // namespace functions
//! ```
//!
//! Counts of the rendering are exact o200k counts; what the rendering leaves out (separators
//! around the block) is a constant per family, fitted in [`super::openai`].

use serde_json::{Map, Value};

use ctxbed_harness::tools::ToolSchema;

/// Nesting deeper than this renders as `any` (a recursive `$ref` stops there).
const DEPTH_MAX: usize = 8;

/// The `namespace functions` block for `tools`, or an empty string for none.
pub fn functions(tools: &[ToolSchema]) -> String {
    if tools.is_empty() {
        return String::new();
    }
    let mut out = String::from("# Tools\n\n## functions\n\nnamespace functions {\n\n");
    for tool in tools {
        function(&mut out, tool);
    }
    out.push_str("} // namespace functions");
    out
}

/// One function's declaration, its description as a comment above it.
fn function(out: &mut String, tool: &ToolSchema) {
    comment(out, &tool.description, "");
    let schema = &tool.parameters;
    // The parameters' own description is read as a second comment (the 6 requests with one
    // were 13 or 14 under without it, within 2 with it).
    let about = schema.get("description").and_then(Value::as_str);
    comment(out, about.unwrap_or_default(), "");
    let defs = schema.get("$defs").or(schema.get("definitions"));
    let properties = schema.get("properties").and_then(Value::as_object);
    match properties {
        Some(properties) if !properties.is_empty() => {
            out.push_str(&format!("type {} = (_: {{\n", tool.name));
            members(out, properties, schema, defs, 0);
            out.push_str("}) => any;\n\n");
        }
        _ => out.push_str(&format!("type {} = () => any;\n\n", tool.name)),
    }
}

/// `text` as a `//` comment at `indent`, when there is any: only its first line is marked, the
/// others follow with their own indentation taken off (a docstring's `    Args:` reads as
/// `Args:`; fitted on the calibration corpus: the 37 requests whose tool descriptions hold
/// indented lines are within 4 tokens with it, up to 18 over without).
fn comment(out: &mut String, text: &str, indent: &str) {
    let text = text.trim();
    if text.is_empty() {
        return;
    }
    out.push_str(indent);
    out.push_str("// ");
    for (at, line) in text.lines().enumerate() {
        if at > 0 {
            out.push('\n');
        }
        out.push_str(line.trim());
    }
    out.push('\n');
}

/// An object's members, one a line, optional ones marked `?`.
fn members(
    out: &mut String,
    properties: &Map<String, Value>,
    schema: &Value,
    defs: Option<&Value>,
    depth: usize,
) {
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let indent = "  ".repeat(depth);
    for (name, property) in properties {
        let property = resolve(property, defs);
        let description = property.get("description").and_then(Value::as_str);
        comment(out, description.unwrap_or_default(), &indent);
        let optional = if required.contains(&name.as_str()) {
            ""
        } else {
            "?"
        };
        let kind = type_text(property, defs, depth);
        out.push_str(&format!("{indent}{name}{optional}: {kind},\n"));
    }
}

/// The schema a `$ref` points to in `defs`, or the schema itself.
fn resolve<'a>(schema: &'a Value, defs: Option<&'a Value>) -> &'a Value {
    let target = schema
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|reference| reference.rsplit('/').next())
        .and_then(|name| defs?.get(name));
    target.unwrap_or(schema)
}

/// A schema as a TypeScript type.
fn type_text(schema: &Value, defs: Option<&Value>, depth: usize) -> String {
    if depth >= DEPTH_MAX {
        return "any".into();
    }
    let schema = resolve(schema, defs);
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        return literals(values);
    }
    if let Some(value) = schema.get("const") {
        return value.to_string();
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(options) = schema.get(key).and_then(Value::as_array) {
            let kinds: Vec<String> = options
                .iter()
                .map(|option| type_text(option, defs, depth + 1))
                .collect();
            return kinds.join(" | ");
        }
    }
    match schema.get("type") {
        Some(Value::Array(kinds)) => kinds
            .iter()
            .map(|kind| named_type(kind.as_str().unwrap_or("any"), schema, defs, depth))
            .collect::<Vec<_>>()
            .join(" | "),
        Some(Value::String(kind)) => named_type(kind, schema, defs, depth),
        _ => "any".into(),
    }
}

/// One JSON Schema type name as TypeScript.
fn named_type(kind: &str, schema: &Value, defs: Option<&Value>, depth: usize) -> String {
    match kind {
        "integer" | "number" => "number".into(),
        "string" | "boolean" | "null" => kind.into(),
        "array" => match schema.get("items") {
            Some(items) => format!("{}[]", type_text(items, defs, depth + 1)),
            None => "any[]".into(),
        },
        "object" => match schema.get("properties").and_then(Value::as_object) {
            Some(properties) if !properties.is_empty() => {
                let mut out = String::from("{\n");
                members(&mut out, properties, schema, defs, depth + 1);
                out.push_str(&"  ".repeat(depth));
                out.push('}');
                out
            }
            _ => "object".into(),
        },
        _ => "any".into(),
    }
}

/// Enum values as a union of literals.
fn literals(values: &[Value]) -> String {
    let literals: Vec<String> = values.iter().map(Value::to_string).collect();
    literals.join(" | ")
}
