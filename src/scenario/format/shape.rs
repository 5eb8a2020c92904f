//! Shape checking: a file is checked against its format's JSON Schema ([`super::schema`] lists them) before
//! serde reads it, so every unknown field, wrong type and missing field is reported in one pass,
//! in file order, each at its place with the field's path and a fix. Serde stops at its first
//! error; this does not. Files whose shape is right go on to serde and the range and cross-field
//! checks, which collect their own problems the same way.
//!
//! Each schema error names a JSON pointer; the pointer is walked through the spanned TOML
//! document to find the bytes to point at (the key, for an unknown field; the value, for a wrong
//! type; the table, for a missing field).

use std::ops::Range;
use std::sync::OnceLock;

use jsonschema::ValidationError;
use jsonschema::error::{TypeKind, ValidationErrorKind};
use serde_json::Value;
use toml::Spanned;
use toml::de::{DeTable, DeValue};

use super::diagnostic::{Diagnostic, closest};

/// A format's schema, compiled once, to check files against.
#[derive(Debug)]
pub struct Compiled {
    schema: Value,
    validator: jsonschema::Validator,
}

impl Compiled {
    /// Compiles `schema`; `None` if it is not a valid JSON Schema.
    pub fn new(schema: Value) -> Option<Compiled> {
        let validator = jsonschema::validator_for(&schema).ok()?;
        Some(Compiled { schema, validator })
    }

    /// Every shape problem of `source` against this schema (see [`LazyShape::problems`]).
    pub fn problems(&self, file: &str, source: &str) -> Vec<Diagnostic> {
        check(self, file, source)
    }
}

/// A format's schema, compiled on first use (from the function that derives it).
#[derive(Debug)]
pub struct LazyShape {
    cell: OnceLock<Option<Compiled>>,
    schema: fn() -> Value,
}

impl LazyShape {
    /// The shape `schema()` gives, compiled when first asked for.
    pub const fn new(schema: fn() -> Value) -> LazyShape {
        LazyShape {
            cell: OnceLock::new(),
            schema,
        }
    }

    /// Every shape problem of `source`, in file order. Empty when the shape is right, and also
    /// when the text is not TOML at all (the TOML parser's own error is reported instead).
    pub fn problems(&self, file: &str, source: &str) -> Vec<Diagnostic> {
        match self.cell.get_or_init(|| Compiled::new((self.schema)())) {
            Some(compiled) => check(compiled, file, source),
            None => Vec::new(),
        }
    }
}

/// `schema` with a title and description, and every 64-bit count given its minimum of 0.
pub(crate) fn titled(mut schema: Value, title: &str, description: &str) -> Value {
    non_negative(&mut schema);
    if let Some(object) = schema.as_object_mut() {
        object.insert("title".into(), title.into());
        object.insert("description".into(), description.into());
    }
    schema
}

/// Every count, size, time and seed in the formats is a whole number of at least 0 (the loader
/// refuses negatives), so each 64-bit integer without a stated minimum gets `minimum: 0`; fields
/// whose least value is higher say so with `range(min = …)` beside their declaration.
fn non_negative(node: &mut Value) {
    match node {
        Value::Object(object) => {
            let int64 = object.get("format").and_then(Value::as_str) == Some("int64");
            if int64 && !object.contains_key("minimum") {
                object.insert("minimum".into(), 0.into());
            }
            object.values_mut().for_each(non_negative);
        }
        Value::Array(items) => items.iter_mut().for_each(non_negative),
        _ => {}
    }
}

fn check(compiled: &Compiled, file: &str, source: &str) -> Vec<Diagnostic> {
    let Ok(document) = DeTable::parse(source) else {
        return Vec::new();
    };
    let Ok(instance) = toml::from_str::<Value>(source) else {
        return Vec::new();
    };
    let reporter = Reporter {
        file,
        source,
        schema: &compiled.schema,
        document: &document,
    };
    let mut found = Vec::new();
    let mut ranges = Vec::new();
    for error in compiled.validator.iter_errors(&instance) {
        reporter.report(&error, &mut found, &mut ranges);
    }
    if found.is_empty() {
        // The loader's own checks report ranges beside every other problem it finds.
        return Vec::new();
    }
    found.append(&mut ranges);
    super::diagnostic::sort(&mut found);
    found
}

/// Turns schema errors into diagnostics at their place in the file.
struct Reporter<'a, 'i> {
    file: &'a str,
    source: &'a str,
    schema: &'a Value,
    document: &'a Spanned<DeTable<'i>>,
}

impl Reporter<'_, '_> {
    /// Adds the diagnostics of `error`: shape problems to `found`, values out of range (which
    /// the loader could still read) to `ranges`.
    fn report(
        &self,
        error: &ValidationError<'_>,
        found: &mut Vec<Diagnostic>,
        ranges: &mut Vec<Diagnostic>,
    ) {
        let path = pointer_segments(error.instance_path().as_str());
        let place = resolve(self.document, &path);
        let dotted = dotted(&path);
        let value_span = place.as_ref().map_or(0..0, |p| p.value.clone());
        let (file, source) = (self.file, self.source);
        match error.kind() {
            ValidationErrorKind::AdditionalProperties { unexpected } => {
                self.unknown_fields(&path, place.as_ref(), unexpected, found);
            }
            ValidationErrorKind::Required { property } => {
                let name = property.as_str().unwrap_or_default();
                let span = place.as_ref().map_or(0..0, |p| p.header_span());
                let message = if dotted.is_empty() {
                    format!("missing field `{name}`")
                } else {
                    format!("missing field `{name}` in `{dotted}`")
                };
                found.push(
                    Diagnostic::at(file, source, span, message)
                        .field(join(&dotted, name))
                        .help(format!("add `{name} = …` (see docs/scenario-format.md)")),
                );
            }
            ValidationErrorKind::Type { kind } => {
                let expected = expected_types(&type_names(kind));
                let minimum = minimum_at(self.schema, &path);
                found.push(self.wrong_type(value_span, &dotted, &expected, minimum, error));
            }
            ValidationErrorKind::Maximum { limit } => {
                let range = ("at most", "≤", limit);
                ranges.push(self.out_of_range(value_span, dotted, range, error));
            }
            ValidationErrorKind::Minimum { limit } => {
                let range = ("at least", "≥", limit);
                ranges.push(self.out_of_range(value_span, dotted, range, error));
            }
            // An unknown name of a choice: the loader reports it with the names that parse and
            // the closest one (`did you mean …?`), which the schema's message cannot.
            ValidationErrorKind::Enum { .. } => {}
            ValidationErrorKind::AnyOf { context } => match matching_branch(error, context) {
                Some(branch) => {
                    for inner in branch {
                        self.report(inner, found, ranges);
                    }
                }
                None => {
                    let expected = expected_types(&branch_types(error, context));
                    found.push(self.wrong_type(value_span, &dotted, &expected, None, error));
                }
            },
            _ => {
                found.push(
                    Diagnostic::at(file, source, value_span, error.to_string()).field(dotted),
                );
            }
        }
    }

    fn unknown_fields(
        &self,
        path: &[String],
        place: Option<&Place<'_, '_>>,
        unexpected: &[String],
        found: &mut Vec<Diagnostic>,
    ) {
        let dotted = dotted(path);
        let allowed = allowed_keys(self.schema, path);
        for name in unexpected {
            let span = place.and_then(|p| p.key_span(name)).unwrap_or(0..0);
            let help = match closest(name, allowed.iter().map(String::as_str)) {
                Some(best) => format!("did you mean `{best}`?"),
                None => format!("expected one of: {}", allowed.join(", ")),
            };
            found.push(
                Diagnostic::at(
                    self.file,
                    self.source,
                    span,
                    format!("unknown field `{name}`"),
                )
                .field(join(&dotted, name))
                .help(help),
            );
        }
    }

    /// A number past a bound (`("at least", "≥", 1)`), which the loader could still read.
    fn out_of_range(
        &self,
        span: Range<usize>,
        dotted: String,
        (words, sign, limit): (&str, &str, &Value),
        error: &ValidationError<'_>,
    ) -> Diagnostic {
        let message = format!(
            "`{dotted}` must be {words} {limit}, found {}",
            error.instance()
        );
        Diagnostic::at(self.file, self.source, span, message)
            .field(dotted)
            .help(format!("write a whole number {sign} {limit}"))
    }

    fn wrong_type(
        &self,
        span: Range<usize>,
        dotted: &str,
        expected: &str,
        minimum: Option<i64>,
        error: &ValidationError<'_>,
    ) -> Diagnostic {
        let message = format!(
            "wrong type: `{dotted}` must be {expected}, not {}",
            describe(error.instance())
        );
        Diagnostic::at(self.file, self.source, span, message)
            .field(dotted)
            .help(type_help(expected, minimum))
    }
}

/// The types an `anyOf`'s branches would have taken, for a value none of them does.
fn branch_types(
    error: &ValidationError<'_>,
    context: &[Vec<ValidationError<'static>>],
) -> Vec<String> {
    context
        .iter()
        .flatten()
        .filter(|inner| inner.instance_path() == error.instance_path())
        .filter_map(|inner| match inner.kind() {
            ValidationErrorKind::Type { kind } => Some(type_names(kind)),
            _ => None,
        })
        .flatten()
        .collect()
}

/// The branch of an `anyOf` whose type the value has (its errors lie deeper than the value
/// itself), so a mistake inside a table that may also be `false` is reported as that field's own.
fn matching_branch<'e>(
    error: &ValidationError<'_>,
    context: &'e [Vec<ValidationError<'static>>],
) -> Option<&'e [ValidationError<'static>]> {
    context
        .iter()
        .find(|branch| {
            !branch.is_empty()
                && branch.iter().all(|inner| {
                    !(inner.instance_path() == error.instance_path()
                        && matches!(
                            inner.kind(),
                            ValidationErrorKind::Type { .. } | ValidationErrorKind::AnyOf { .. }
                        ))
                })
        })
        .map(Vec::as_slice)
}

fn pointer_segments(pointer: &str) -> Vec<String> {
    pointer
        .split('/')
        .skip(1)
        .map(|s| s.replace("~1", "/").replace("~0", "~"))
        .collect()
}

fn dotted(path: &[String]) -> String {
    let mut out = String::new();
    for segment in path {
        if segment.parse::<usize>().is_ok() {
            out.push_str(&format!("[{segment}]"));
        } else {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(segment);
        }
    }
    out
}

fn join(parent: &str, name: &str) -> String {
    if parent.is_empty() {
        name.to_string()
    } else {
        format!("{parent}.{name}")
    }
}

/// Where a value sits: its own span, and the table it is (for key lookups), if it is one.
struct Place<'a, 'i> {
    value: Range<usize>,
    table: Option<&'a DeTable<'i>>,
}

impl Place<'_, '_> {
    fn key_span(&self, name: &str) -> Option<Range<usize>> {
        self.table?
            .iter()
            .find(|(key, _)| key.get_ref().as_ref() == name)
            .map(|(key, _)| key.span())
    }

    /// The first line of the table (its header, or its first key), not the whole table.
    fn header_span(&self) -> Range<usize> {
        self.value.start..self.value.start
    }
}

fn resolve<'a, 'i>(document: &'a Spanned<DeTable<'i>>, path: &[String]) -> Option<Place<'a, 'i>> {
    let mut span = document.span();
    let mut table: Option<&'a DeTable<'i>> = Some(document.get_ref());
    let mut array: Option<&'a [Spanned<DeValue<'i>>]> = None;
    for segment in path {
        let next: &'a Spanned<DeValue<'i>> = if let Some(items) = array {
            items.get(segment.parse::<usize>().ok()?)?
        } else {
            table?
                .iter()
                .find(|(key, _)| key.get_ref().as_ref() == segment.as_str())
                .map(|(_, value)| value)?
        };
        span = next.span();
        table = None;
        array = None;
        match next.get_ref() {
            DeValue::Table(inner) => table = Some(inner),
            DeValue::Array(items) => array = Some(items),
            _ => {}
        }
    }
    Some(Place { value: span, table })
}

/// The schema node describing the value at `path` (following `$ref`, `items` and the non-null
/// branch of an optional value).
fn node_at<'a>(schema: &'a Value, path: &[String]) -> Option<&'a Value> {
    let mut node = deref(schema, schema);
    for segment in path {
        let next = if segment.parse::<usize>().is_ok() {
            node.get("items")?
        } else {
            node.get("properties")?.get(segment)?
        };
        node = deref(schema, next);
    }
    Some(node)
}

/// The property names the schema allows at `path`.
fn allowed_keys(schema: &Value, path: &[String]) -> Vec<String> {
    node_at(schema, path)
        .and_then(|node| node.get("properties"))
        .and_then(Value::as_object)
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default()
}

/// The schema's `minimum` for the number at `path`, if it has one.
fn minimum_at(schema: &Value, path: &[String]) -> Option<i64> {
    node_at(schema, path)?.get("minimum")?.as_i64()
}

fn deref<'a>(root: &'a Value, node: &'a Value) -> &'a Value {
    let mut node = node;
    for _ in 0..16 {
        if let Some(reference) = node.get("$ref").and_then(Value::as_str) {
            let name = reference.trim_start_matches("#/$defs/");
            match root.get("$defs").and_then(|d| d.get(name)) {
                Some(target) => node = target,
                None => return node,
            }
        } else if let Some(branches) = node.get("anyOf").and_then(Value::as_array) {
            match branches
                .iter()
                .find(|b| b.get("type") != Some(&Value::from("null")))
            {
                Some(branch) => node = branch,
                None => return node,
            }
        } else {
            return node;
        }
    }
    node
}

fn type_names(kind: &TypeKind) -> Vec<String> {
    match kind {
        TypeKind::Single(one) => vec![one.to_string()],
        TypeKind::Multiple(set) => set.iter().map(|t| t.to_string()).collect(),
    }
}

/// "an integer", "a table or true or false": the types named in words, nothing (`null`) left out
/// as TOML has no way to write it.
fn expected_types(names: &[String]) -> String {
    let mut words: Vec<&str> = Vec::new();
    for name in names {
        let word = match name.as_str() {
            "null" => continue,
            "integer" => "a whole number",
            "number" => "a number",
            "string" => "a string",
            "boolean" => "true or false",
            "array" => "a list",
            "object" => "a table",
            other => other,
        };
        if !words.contains(&word) {
            words.push(word);
        }
    }
    words.join(" or ")
}

fn describe(value: &Value) -> String {
    let shown = ctxbed_harness::format::snippet(&value.to_string(), 40);
    match value {
        Value::String(_) => format!("the string {shown}"),
        Value::Number(_) => format!("the number {shown}"),
        Value::Bool(_) => format!("`{shown}`"),
        Value::Array(_) => "a list".to_string(),
        Value::Object(_) => "a table".to_string(),
        Value::Null => "nothing".to_string(),
    }
}

fn type_help(expected: &str, minimum: Option<i64>) -> String {
    match (expected, minimum) {
        ("a whole number", Some(minimum)) => {
            format!("write a whole number without quotes, ≥ {minimum}")
        }
        ("a whole number", None) => "write a whole number without quotes".to_string(),
        ("a string", _) => "put the text in double quotes".to_string(),
        ("true or false", _) => "write true or false, without quotes".to_string(),
        ("a list", _) => "write a list in brackets, e.g. [\"a\", \"b\"]".to_string(),
        ("a table", _) => "write a table, e.g. { key = 1 } or a [section]".to_string(),
        (other, _) => format!("write {other}"),
    }
}
