//! Persona enrichment: the model turns a short persona into the paper's
//! fields ([`Profile`]).
//!
//! The prompt (`prompts/sim/enrich.txt`, our wording of the paper's
//! Appendix A instructions) asks for one JSON object with the paper's keys.
//! The reply is read strictly: a Markdown fence around the object is the
//! only slack; anything else that is not exactly the object (invalid JSON,
//! an unknown or missing key, a duplicate key, a wrong type, an empty value)
//! is a [`ReplyError`] naming the cause. [`enrich`] asks again up to
//! `max_attempts` times and then reports the last cause: a persona is never
//! filled with defaults.

use serde_json::Value;

use super::error::{Answered, AskError, ReplyError, ask, json_body};
use super::persona::{Persona, Profile};
use crate::chat::ChatModel;

const PROMPT: &str = include_str!("../../prompts/sim/enrich.txt");
const WHAT: &str = "enrichment";

/// The enrichment prompt for one persona.
pub fn prompt(persona: &Persona) -> String {
    PROMPT.replace("{persona}", &persona.description)
}

/// Reads the model's enriched persona.
pub fn parse_profile(reply: &str) -> Result<Profile, ReplyError> {
    let body = json_body(reply);
    let value = crate::json::parse_strict(body.as_bytes()).map_err(|e| ReplyError::InvalidJson { what: WHAT, cause: e.to_string() })?;
    let Value::Object(map) = &value else {
        return Err(ReplyError::Unreadable {
            what: WHAT,
            cause: format!("expected a JSON object, found {}", crate::json::type_name(&value)),
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
            (_, Some(v)) => return Err(bad(&format!("is {}, not a string", crate::json::type_name(v)))),
        }
    }
    serde_json::from_value(value).map_err(|e| ReplyError::Unreadable { what: WHAT, cause: e.to_string() })
}

/// Enriches one persona, asking again when a reply cannot be read.
pub async fn enrich(model: &dyn ChatModel, persona: &Persona, max_attempts: u32, seed: Option<u64>) -> Result<Answered<Profile>, AskError> {
    ask(model, prompt(persona), max_attempts, seed, parse_profile).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::test_model::Scripted;

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

    fn persona() -> Persona {
        crate::sim::test_model::persona(1, "a nurse who hikes")
    }

    #[test]
    fn enrichment_retries_then_reports_the_last_cause() {
        let model = Scripted::new(["not json", GOOD]);
        let got = futures::executor::block_on(enrich(&model, &persona(), 3, Some(7))).unwrap();
        assert_eq!((got.calls, got.value.age), (2, 34));
        let sent = model.requests();
        assert!(sent[0].messages[0].content.contains("Description: a nurse who hikes\n"));
        assert_eq!(sent[0].seed, Some(7));

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
