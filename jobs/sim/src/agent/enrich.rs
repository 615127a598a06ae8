//! Persona enrichment: the model turns a short persona into the paper's
//! fields ([`Profile`]).
//!
//! The prompt (`jobs/sim/prompts/enrich.txt`, our wording of the paper's
//! Appendix A instructions) asks for one JSON object with the paper's keys,
//! and [`json_schema`] is that object for endpoints with structured output.
//!
//! The reply must fit its length limit ([`MAX_TOKENS`]). Asked for "detail"
//! without a length, the built-in 0.5B model wrote passages of 1,500
//! characters and more and was cut off mid-string at the default 512 tokens,
//! on every retry. So the prompt states a length for each field (the three
//! passages in sentences and words, which models can follow), the schema
//! bounds each string ([`MAX_CHARS`], which grammar-constrained endpoints
//! enforce), and the request's limit covers the longest reply the schema
//! allows.
//! The reply is read strictly: a Markdown fence around the object is the
//! only slack; anything else that is not exactly the object (invalid JSON,
//! an unknown or missing key, a duplicate key, a wrong type, an empty value)
//! is a [`ReplyError`] naming the cause. [`enrich`] asks again up to
//! `max_attempts` times and then reports the last cause: a persona is never
//! filled with defaults.

use std::sync::OnceLock;

use serde_json::Value;

use crate::agent::persona::{Persona, Profile};
use crate::error::{Answered, AskError, Question, ReplyError, ask, json_body};
use some_jobs::chat::{ChatModel, JsonSchema};

const PROMPT: &str = include_str!("../../prompts/enrich.txt");
const WHAT: &str = "enrichment";

/// The longest value of each string field, in characters, in
/// [`Profile::KEYS`] order ("age" is a number): about 60 words for the
/// history, 40 for the preferences and the knowledge, as the prompt asks.
pub const MAX_CHARS: [(&str, u32); 8] = [
    ("name", 40),
    ("gender", 20),
    ("nationality", 30),
    ("personality", 80),
    ("hobbies", 80),
    ("detailed historical behaviour information", 400),
    ("preferences for social media content", 280),
    ("knowledge", 280),
];

/// The reply's length limit: the values allow 1,210 characters, about 300
/// tokens of English, and keys, quotes and spaces add about 80; the rest is
/// room for text that tokenizes poorly (names, escapes).
pub const MAX_TOKENS: u32 = 640;

/// The JSON schema of an enriched persona: every key required, no other,
/// strings non-empty and bounded by [`MAX_CHARS`].
pub fn json_schema() -> serde_json::Value {
    let mut properties = serde_json::Map::new();
    for key in Profile::KEYS {
        let value = match MAX_CHARS.iter().find(|(k, _)| *k == key) {
            Some((_, max)) => serde_json::json!({"type": "string", "minLength": 1, "maxLength": max}),
            None => serde_json::json!({"type": "integer", "minimum": 0, "maximum": 150}),
        };
        properties.insert(key.to_string(), value);
    }
    serde_json::json!({"type": "object", "additionalProperties": false, "required": Profile::KEYS, "properties": properties})
}

/// The enrichment question for one persona.
pub fn question(persona: &Persona) -> Question {
    // Asked of every agent at setup: built once.
    static SCHEMA: OnceLock<JsonSchema> = OnceLock::new();
    let schema = SCHEMA.get_or_init(|| JsonSchema::new("persona", json_schema()));
    Question { schema: Some(schema.clone()), max_tokens: Some(MAX_TOKENS), ..Question::new(prompt(persona)) }
}

/// The enrichment prompt for one persona.
pub fn prompt(persona: &Persona) -> String {
    PROMPT.replace("{persona}", &persona.description)
}

/// Reads the model's enriched persona.
pub fn parse_profile(reply: &str) -> Result<Profile, ReplyError> {
    let body = json_body(reply);
    let value = some_jobs::json::parse_strict(body.as_bytes()).map_err(|e| ReplyError::InvalidJson { what: WHAT, cause: e.to_string() })?;
    let Value::Object(map) = &value else {
        return Err(ReplyError::Unreadable {
            what: WHAT,
            cause: format!("expected a JSON object, found {}", some_jobs::json::type_name(&value)),
        });
    };
    if let Some(k) = map.keys().find(|k| !Profile::KEYS.contains(&k.as_str())) {
        return Err(ReplyError::UnknownField { what: WHAT, field: k.clone() });
    }
    for key in Profile::KEYS {
        let bad = |cause: &str| ReplyError::BadValue { what: WHAT, field: key.to_string(), cause: cause.to_string() };
        match (key, map.get(key)) {
            (_, None) => return Err(ReplyError::MissingField { what: WHAT, field: key.to_string() }),
            ("age", Some(v)) => {
                if v.as_u64().is_none_or(|a| a > 150) {
                    return Err(bad(&format!("is not an age in years: {v}")));
                }
            }
            (_, Some(Value::String(s))) if s.trim().is_empty() => return Err(bad("is empty")),
            (_, Some(Value::String(_))) => {}
            (_, Some(v)) => return Err(bad(&format!("is {}, not a string", some_jobs::json::type_name(v)))),
        }
    }
    serde_json::from_value(value).map_err(|e| ReplyError::Unreadable { what: WHAT, cause: e.to_string() })
}

/// Enriches one persona, asking again when a reply cannot be read.
pub async fn enrich(model: &dyn ChatModel, persona: &Persona, max_attempts: u32, seed: Option<u64>) -> Result<Answered<Profile>, AskError> {
    ask(model, &question(persona), max_attempts, seed, parse_profile).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::test_model::Scripted;

    pub(crate) const GOOD: &str = r#"{"name": "Ana", "age": 34, "gender": "Female", "nationality": "Spanish", "personality": "Calm", "hobbies": "Hiking", "detailed historical behaviour information": "Ana hikes every weekend. She has nursed for ten years.", "preferences for social media content": "Trail photos and health tips.", "knowledge": "Ana knows first aid and the Pyrenees."}"#;

    #[test]
    fn a_well_formed_reply_is_read_with_the_paper_keys() {
        let p = parse_profile(&format!("```json\n{GOOD}\n```")).unwrap();
        assert_eq!((p.name.as_str(), p.age, p.knowledge.as_str()), ("Ana", 34, "Ana knows first aid and the Pyrenees."));
    }

    #[test]
    fn bad_replies_are_typed_errors_with_their_cause() {
        let e = parse_profile("{\"name\": \"Ana\",").unwrap_err();
        assert!(matches!(&e, ReplyError::InvalidJson { cause, .. } if cause.starts_with("EOF while parsing")), "{e}");
        let e = parse_profile(&GOOD.replace("\"hobbies\"", "\"hobby\"")).unwrap_err();
        assert_eq!(e, ReplyError::UnknownField { what: WHAT, field: "hobby".into() });
        let e = parse_profile(&GOOD.replace("\"age\": 34", "\"age\": \"34\"")).unwrap_err();
        assert_eq!(e.to_string(), "enrichment reply: field \"age\" is not an age in years: \"34\"");
        let e = parse_profile(&GOOD.replace("\"Calm\"", "\"\"")).unwrap_err();
        assert_eq!(e.to_string(), "enrichment reply: field \"personality\" is empty");
        let e = parse_profile(&GOOD.replace(", \"knowledge\": \"Ana knows first aid and the Pyrenees.\"", "")).unwrap_err();
        assert_eq!(e, ReplyError::MissingField { what: WHAT, field: "knowledge".into() });
        let e = parse_profile("Here you go: {}").unwrap_err();
        assert!(matches!(e, ReplyError::InvalidJson { .. }));
        let e = parse_profile(&GOOD.replace("\"gender\": \"Female\"", "\"gender\": \"Female\", \"name\": \"B\"")).unwrap_err();
        assert!(e.to_string().contains("duplicate key \"name\""), "{e}");
    }

    #[test]
    fn the_schema_bounds_every_field_and_the_limit_covers_it() {
        let s = json_schema();
        assert_eq!(s["required"], serde_json::json!(Profile::KEYS));
        assert_eq!(s["properties"]["age"], serde_json::json!({"type": "integer", "minimum": 0, "maximum": 150}));
        assert_eq!(s["properties"]["knowledge"], serde_json::json!({"type": "string", "minLength": 1, "maxLength": 280}));
        let chars: u32 = MAX_CHARS.iter().map(|(_, n)| n).sum();
        assert_eq!(chars, 1210);
        // At 3 characters a token (below English's 4) the longest reply still fits.
        assert!(chars / 3 + 9 * 12 < MAX_TOKENS, "{chars}");
        assert!(parse_profile(GOOD).is_ok(), "the example reply is within every bound");
        for (key, max) in MAX_CHARS {
            let value = serde_json::from_str::<serde_json::Value>(GOOD).unwrap()[key].as_str().unwrap().chars().count();
            assert!(value <= max as usize, "{key}: {value} > {max}");
        }
    }

    fn persona() -> Persona {
        crate::agent::test_model::persona(1, "a nurse who hikes")
    }

    #[test]
    fn enrichment_retries_then_reports_the_last_cause() {
        let model = Scripted::new(["not json", GOOD]);
        let got = futures::executor::block_on(enrich(&model, &persona(), 3, Some(7))).unwrap();
        assert_eq!((got.calls, got.value.age), (2, 34));
        let sent = model.requests();
        assert!(sent[0].messages[0].content.contains("Description: a nurse who hikes\n"));
        assert_eq!((sent[0].seed, sent[1].seed), (Some(7), Some(8)));
        assert_eq!((sent[0].max_tokens, sent[1].max_tokens), (Some(MAX_TOKENS), Some(MAX_TOKENS)));
        let schema = sent[0].response_format.as_ref().expect("enrichment asks for its schema");
        assert_eq!((schema.name.as_str(), schema.value()), ("persona", json_schema()));
        assert_eq!(sent[1].messages[1].content, "not json");
        assert!(sent[1].messages[2].content.starts_with("Your reply could not be used: enrichment reply is not valid JSON: expected"));

        let model = Scripted::new(["nope", "{\"name\": \"A\"}"]);
        let err = futures::executor::block_on(enrich(&model, &persona(), 2, None)).unwrap_err();
        match err {
            AskError::Reply { attempts, last, reply } => {
                assert_eq!(attempts, 2);
                assert_eq!(last, ReplyError::MissingField { what: WHAT, field: "age".into() });
                assert_eq!(reply, "{\"name\": \"A\"}");
            }
            other => panic!("{other}"),
        }
    }
}
