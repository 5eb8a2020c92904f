//! Checked tool arguments: read a model's JSON arguments against the tool's schema, and turn
//! every mistake into an error result that says what was wrong and what the tool expects.
//!
//! Models send missing, misspelt, mistyped and oversized arguments. [`Arguments`] reads them
//! field by field; each failure is an [`ArgumentError`], which [`ArgumentError::outcome`] renders
//! as an error [`ToolOutcome`] ending with the expected arguments, generated from the schema:
//!
//! ```text
//! invalid read_file arguments: `offset` must be an integer from 1 to 18446744073709551615, got "3" (a string)
//! expected: {"path": string (required), "offset": integer, "limit": integer, "char_offset": integer}
//! ```
//!
//! ```
//! use ctxbed_harness::tools::ToolSchema;
//! use ctxbed_harness::tools::args::Arguments;
//! use serde_json::json;
//! let schema = ToolSchema {
//!     name: "greet".into(),
//!     description: "Say hello.".into(),
//!     parameters: json!({"type": "object", "properties": {"name": {"type": "string"}},
//!                        "required": ["name"]}),
//! };
//! let arguments = json!({"name": "Ada"});
//! let checked = Arguments::parse(&schema, &arguments).unwrap();
//! assert_eq!(checked.required_string("name", 100).unwrap(), "Ada");
//!
//! let wrong = json!({"nme": "Ada"});
//! let error = Arguments::parse(&schema, &wrong).unwrap_err();
//! assert!(error.outcome(&schema).is_error);
//! assert_eq!(error.to_string(), "unknown argument `nme`; did you mean `name`?");
//! ```

use serde_json::{Map, Value};

use super::{ToolOutcome, ToolSchema};
use crate::format::snippet;

/// Characters of a wrong value quoted back to the model.
const QUOTED_VALUE_CHARS: usize = 40;

/// The arguments of one call, known to be a JSON object with only schema properties.
#[derive(Debug, Clone, Copy)]
pub struct Arguments<'a> {
    object: &'a Map<String, Value>,
}

/// What is wrong with a call's arguments.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ArgumentError(String);

impl ArgumentError {
    /// A problem described in a sentence that names the argument.
    pub fn new(message: impl Into<String>) -> Self {
        ArgumentError(message.into())
    }

    /// The error result the model sees: the problem, then the expected arguments.
    pub fn outcome(&self, schema: &ToolSchema) -> ToolOutcome {
        ToolOutcome::error(format!(
            "invalid {} arguments: {}\nexpected: {}",
            schema.name,
            self.0,
            expected_arguments(&schema.parameters)
        ))
    }
}

impl<'a> Arguments<'a> {
    /// Checks that the arguments are an object whose keys are all schema properties.
    ///
    /// # Errors
    /// The arguments are not an object, or hold an argument the schema does not define (a
    /// misspelt name would otherwise be silently ignored).
    pub fn parse(schema: &ToolSchema, arguments: &'a Value) -> Result<Self, ArgumentError> {
        let Value::Object(object) = arguments else {
            return Err(ArgumentError(format!(
                "arguments must be a JSON object, got {}",
                describe(arguments)
            )));
        };
        let properties = property_names(&schema.parameters);
        for key in object.keys() {
            if properties.iter().any(|name| name == key) {
                continue;
            }
            let missing: Vec<String> = required_names(&schema.parameters)
                .into_iter()
                .filter(|name| !object.contains_key(name.as_str()))
                .collect();
            let similar = properties
                .iter()
                .find(|name| key.contains(name.as_str()) || name.contains(key.as_str()));
            let suggestion = match (similar, missing.as_slice()) {
                (Some(name), _) => format!("; did you mean `{name}`?"),
                (None, [only]) => format!("; did you mean `{only}`?"),
                _ => String::new(),
            };
            return Err(ArgumentError(format!(
                "unknown argument `{}`{suggestion}",
                snippet(key, QUOTED_VALUE_CHARS)
            )));
        }
        Ok(Arguments { object })
    }

    /// A required string of at most `max_chars` characters.
    ///
    /// # Errors
    /// Missing, not a string, or too long.
    pub fn required_string(&self, name: &str, max_chars: usize) -> Result<&'a str, ArgumentError> {
        self.optional_string(name, max_chars)?
            .ok_or_else(|| ArgumentError(format!("missing required argument `{name}`")))
    }

    /// An optional string of at most `max_chars` characters; `null` counts as absent.
    ///
    /// # Errors
    /// Not a string, or too long.
    pub fn optional_string(
        &self,
        name: &str,
        max_chars: usize,
    ) -> Result<Option<&'a str>, ArgumentError> {
        match self.object.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(text)) => {
                let chars = text.chars().count();
                if chars > max_chars {
                    return Err(ArgumentError(format!(
                        "`{name}` is {chars} characters long; at most {max_chars}"
                    )));
                }
                Ok(Some(text.as_str()))
            }
            Some(other) => Err(ArgumentError(format!(
                "`{name}` must be a string, got {}",
                describe(other)
            ))),
        }
    }

    /// An optional whole number from `min` to `max`; `null` counts as absent.
    ///
    /// # Errors
    /// Not a whole number, or out of range.
    pub fn optional_count(
        &self,
        name: &str,
        min: u64,
        max: u64,
    ) -> Result<Option<u64>, ArgumentError> {
        let value = match self.object.get(name) {
            None | Some(Value::Null) => return Ok(None),
            Some(value) => value,
        };
        match value.as_u64() {
            Some(count) if (min..=max).contains(&count) => Ok(Some(count)),
            _ => Err(ArgumentError(format!(
                "`{name}` must be an integer from {min} to {max}, got {}",
                describe(value)
            ))),
        }
    }
}

/// A bounded, quoted rendering of a JSON value and its type, e.g. `"3" (a string)`.
fn describe(value: &Value) -> String {
    let kind = match value {
        Value::Null => return "null".to_string(),
        Value::Bool(_) => "a boolean",
        Value::Number(number) if number.is_u64() => "an integer",
        Value::Number(number) if number.is_i64() => "a negative integer",
        Value::Number(_) => "a floating-point number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    };
    format!(
        "{} ({kind})",
        snippet(&value.to_string(), QUOTED_VALUE_CHARS)
    )
}

fn property_names(parameters: &Value) -> Vec<String> {
    parameters
        .get("properties")
        .and_then(Value::as_object)
        .map(|properties| properties.keys().cloned().collect())
        .unwrap_or_default()
}

fn required_names(parameters: &Value) -> Vec<String> {
    parameters
        .get("required")
        .and_then(Value::as_array)
        .map(|names| {
            names
                .iter()
                .filter_map(|name| name.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// One line listing every property with its type, e.g.
/// `{"path": string (required), "offset": integer}`.
pub fn expected_arguments(parameters: &Value) -> String {
    let required = required_names(parameters);
    let Some(properties) = parameters.get("properties").and_then(Value::as_object) else {
        return "{}".to_string();
    };
    let fields: Vec<String> = properties
        .iter()
        .map(|(name, property)| {
            let kind = property
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or("any");
            let flag = if required.contains(name) {
                " (required)"
            } else {
                ""
            };
            format!("\"{name}\": {kind}{flag}")
        })
        .collect();
    format!("{{{}}}", fields.join(", "))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn schema() -> ToolSchema {
        ToolSchema {
            name: "read_file".into(),
            description: String::new(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string"},
                    "offset": {"type": "integer"},
                },
                "required": ["path"],
            }),
        }
    }

    /// Parses `arguments` and reads `path` and `offset`; returns the error text or the values.
    fn check(arguments: Value, expected: &str) {
        let schema = schema();
        let found = Arguments::parse(&schema, &arguments)
            .and_then(|args| {
                let path = args.required_string("path", 8)?;
                let offset = args.optional_count("offset", 1, 100)?;
                Ok(format!("path={path} offset={offset:?}"))
            })
            .unwrap_or_else(|error| error.outcome(&schema).outputs_text());
        assert_eq!(found, expected);
    }

    trait OutputsText {
        fn outputs_text(&self) -> String;
    }

    impl OutputsText for ToolOutcome {
        fn outputs_text(&self) -> String {
            assert!(self.is_error);
            self.outputs
                .iter()
                .map(|output| match output {
                    crate::message::ToolOutput::Text { text } => text.clone(),
                    crate::message::ToolOutput::Media { .. } => String::new(),
                })
                .collect()
        }
    }

    const EXPECTED: &str = "\nexpected: {\"path\": string (required), \"offset\": integer}";

    #[test]
    fn valid_arguments_are_read() {
        check(json!({"path": "a.md"}), "path=a.md offset=None");
        check(
            json!({"path": "a.md", "offset": 3}),
            "path=a.md offset=Some(3)",
        );
        check(
            json!({"path": "a.md", "offset": null}),
            "path=a.md offset=None",
        );
    }

    #[test]
    fn every_mistake_names_the_argument_and_the_schema() {
        let cases = [
            (
                json!("a.md"),
                "arguments must be a JSON object, got \"a.md\" (a string)",
            ),
            (json!({}), "missing required argument `path`"),
            (
                json!({"file_path": "a.md"}),
                "unknown argument `file_path`; did you mean `path`?",
            ),
            (
                json!({"path": 7}),
                "`path` must be a string, got 7 (an integer)",
            ),
            (
                json!({"path": "abcdefghi"}),
                "`path` is 9 characters long; at most 8",
            ),
            (
                json!({"path": "a", "offset": "3"}),
                "`offset` must be an integer from 1 to 100, got \"3\" (a string)",
            ),
            (
                json!({"path": "a", "offset": 0}),
                "`offset` must be an integer from 1 to 100, got 0 (an integer)",
            ),
            (
                json!({"path": "a", "offset": -2}),
                "`offset` must be an integer from 1 to 100, got -2 (a negative integer)",
            ),
            (
                json!({"path": "a", "offset": 1.5}),
                "`offset` must be an integer from 1 to 100, got 1.5 (a floating-point number)",
            ),
        ];
        for (arguments, problem) in cases {
            check(
                arguments,
                &format!("invalid read_file arguments: {problem}{EXPECTED}"),
            );
        }
    }

    #[test]
    fn quoted_values_are_bounded() {
        let long = "x".repeat(500);
        let schema = schema();
        let value = json!({ "path": "a", "offset": long });
        let error = Arguments::parse(&schema, &value)
            .and_then(|args| args.optional_count("offset", 1, 2))
            .unwrap_err();
        assert!(error.to_string().len() < 120, "{error}");
    }
}
