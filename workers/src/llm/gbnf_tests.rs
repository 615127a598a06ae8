//! The grammars of the simulation's schemas, as llama.cpp will read them,
//! and the schemas the converter refuses.

use serde_json::json;
use some_sim::{AgentId, agent::decide, agent::decide_feed, agent::enrich, agent::plan, agent::reflect, evaluation::quality};

use super::*;

#[test]
fn the_plan_schema_becomes_this_grammar() {
    assert_eq!(to_gbnf(&plan::json_schema()).unwrap(), PLAN);
}

/// Properties in `required` order; the time pattern as classes and
/// literals; days one to seven of the enum; numbers without a sign (minimum
/// 0) and with at most 3 integer digits (maximum 100).
const PLAN: &str = r#"root ::= "{" ws "\"browsing_time\"" ws ":" ws browsing-time "," ws "\"posting_days\"" ws ":" ws posting-days "," ws "\"posting_time\"" ws ":" ws posting-time "," ws "\"like_probability\"" ws ":" ws like-probability "," ws "\"reblog_probability\"" ws ":" ws reblog-probability "," ws "\"comment_probability\"" ws ":" ws comment-probability "," ws "\"posts_per_week\"" ws ":" ws posts-per-week ws "}"
browsing-time ::= "\"" [0-2]? [0-9] ":" [0-5] [0-9] "-" [0-2]? [0-9] ":" [0-5] [0-9] "\""
posting-days ::= "[" ws posting-days-item ("," ws posting-days-item){0,6} ws "]"
posting-days-item ::= "\"Monday\"" | "\"Tuesday\"" | "\"Wednesday\"" | "\"Thursday\"" | "\"Friday\"" | "\"Saturday\"" | "\"Sunday\""
posting-time ::= "\"" [0-2]? [0-9] ":" [0-5] [0-9] "-" [0-2]? [0-9] ":" [0-5] [0-9] "\""
like-probability ::= ("0" | [1-9] [0-9]{0,2}) ("." [0-9]{1,16})?
reblog-probability ::= ("0" | [1-9] [0-9]{0,2}) ("." [0-9]{1,16})?
comment-probability ::= ("0" | [1-9] [0-9]{0,2}) ("." [0-9]{1,16})?
posts-per-week ::= ("0" | [1-9] [0-9]{0,2})
ws ::= | " " | "\n" [ \t]{0,20}
"#;

#[test]
fn a_feed_decision_has_one_entry_per_post_numbered_within_the_feed() {
    let g = to_gbnf(&decide_feed::json_schema(3)).unwrap();
    let lines: Vec<&str> = g.lines().collect();
    assert_eq!(lines[1], r#"reactions ::= "[" ws reactions-item ("," ws reactions-item){2} ws "]""#, "{g}");
    assert!(lines.contains(&r#"reactions-item-post ::= "1" | "2" | "3""#), "{g}");
    assert!(lines.contains(&r#"reactions-item-comment ::= "\"" char{0,280} "\"""#), "{g}");
    assert!(to_gbnf(&decide::decision_schema()).unwrap().contains(r#"like ::= "true" | "false""#));
    let g = to_gbnf(&quality::json_schema()).unwrap();
    assert!(g.contains(r#""\"humanness\"" ws ":" ws humanness ws "}""#) && g.contains(r#"humanness ::= "1" | "2" | "3""#), "{g}");
}

#[test]
fn enrichment_strings_are_bounded_and_follows_are_the_authors_shown() {
    let g = to_gbnf(&enrich::json_schema()).unwrap();
    let lines: Vec<&str> = g.lines().collect();
    assert_eq!(lines[1], r#"name ::= "\"" char{1,40} "\"""#);
    assert_eq!(lines[2], r#"age ::= ("0" | [1-9] [0-9]{0,2})"#);
    assert_eq!(lines[7], r#"detailed-historical-behaviour-information ::= "\"" char{1,400} "\"""#);
    assert!(
        lines[0].contains(
            r#""," ws "\"detailed historical behaviour information\"" ws ":" ws detailed-historical-behaviour-information "," ws"#
        ),
        "{}",
        lines[0]
    );
    assert_eq!(lines.len(), 12, "root, 9 fields, char, ws:\n{g}");

    let g = to_gbnf(&reflect::json_schema(&[AgentId(17), AgentId(4)]).unwrap()).unwrap();
    assert_eq!(
        g,
        concat!(
            r#"root ::= "{" ws "\"follow\"" ws ":" ws follow ws "}""#,
            "\n",
            r#"follow ::= "[" ws (follow-item ("," ws follow-item){0,2})? ws "]""#,
            "\n",
            r#"follow-item ::= "17" | "4""#,
            "\n",
            r#"ws ::= | " " | "\n" [ \t]{0,20}"#,
            "\n"
        )
    );
}

#[test]
fn what_the_grammar_cannot_hold_is_refused_by_name() {
    let refused = |schema: serde_json::Value| to_gbnf(&schema).unwrap_err().to_string();
    let optional = json!({"type": "object", "required": ["a"], "properties": {"a": {"type": "boolean"}, "b": {"type": "boolean"}}});
    assert_eq!(refused(optional), "JSON schema at #: the optional property \"b\" is not supported by the built-in model's grammar");
    let any_of = json!({"type": "object", "required": ["a"], "properties": {"a": {"anyOf": [{"type": "string"}]}}});
    assert_eq!(refused(any_of), "JSON schema at #/properties/a: the keyword \"anyOf\" is not supported by the built-in model's grammar");
    let unanchored = json!({"type": "string", "pattern": "[0-9]+"});
    assert_eq!(
        refused(unanchored),
        "JSON schema at #: the pattern \"[0-9]+\" (it is not anchored with ^ and $) is not supported by the built-in model's grammar"
    );
    let group = json!({"type": "string", "pattern": "^(a|b)$"});
    assert_eq!(
        refused(group),
        "JSON schema at #: the pattern \"^(a|b)$\" (the character '(') is not supported by the built-in model's grammar"
    );
}
