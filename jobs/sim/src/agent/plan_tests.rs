//! Plans in the forms models write them, and replies that are not plans.

use super::*;
use crate::platform::ids::TURNS_PER_DAY;

const FIGURE_5: &str = "Browse time: 20:00 - 21:00 (every day)
Post time: 19:00 - 20:00
Post day: Tuesday, Saturday
Like probability: 60%
Reblog probability: 30%
Comment probability: 20%
Number of posts times per posting: 3";

fn expected() -> Plan {
    Plan {
        browse: Window { start: 20, end: 21 },
        post_days: vec![1, 5],
        post_window: Window { start: 19, end: 20 },
        like: 0.6,
        reblog: 0.3,
        comment: 0.2,
        posts_per_week: 6,
    }
}

#[test]
fn the_papers_figure_5_plan_is_read() {
    assert_eq!(Plan::parse(FIGURE_5).unwrap(), expected());
}

#[test]
fn our_prompt_format_json_and_markdown_forms_are_read() {
    let ours = "Browsing time: 20:00-21:00\nPosting days: Tuesday, Saturday\nPosting time: 19:00-20:00\nLike probability: 60%\nReblog probability: 30%\nComment probability: 20%\nPosts per week: 6";
    assert_eq!(Plan::parse(ours).unwrap(), expected());
    let json = r#"```json
{"browsing_time": "20:00-21:00", "posting_days": ["Tuesday", "Saturday"], "posting_time": "19:00-20:00",
 "like_probability": 60, "reblog_probability": 30, "comment_probability": 20, "posts_per_week": 6}
```"#;
    assert_eq!(Plan::parse(json).unwrap(), expected());
    let markdown = "Here is my plan:\n- **Browsing time period:** 20:00–21:00\n- **Probability of liking:** 0.6\n- **Probability of reblogging:** 30 %\n- **Probability of commenting:** 20%\n- **Posting time period:** day 2, 6-19:00-20:00\n- **Frequency of posting:** 6 times per week";
    assert_eq!(Plan::parse(markdown).unwrap(), expected());
}

#[test]
fn windows_cover_the_hours_they_touch_and_wrap_past_midnight() {
    let p = Plan::parse(&FIGURE_5.replace("20:00 - 21:00", "23:30-01:00").replace("19:00 - 20:00", "07:15-07:45")).unwrap();
    assert_eq!((p.browse, p.post_window), (Window { start: 23, end: 1 }, Window { start: 7, end: 8 }));
    assert!(p.browse.contains(23) && p.browse.contains(0) && !p.browse.contains(1));
    assert!(p.browsing_at(Turn(TURNS_PER_DAY * 3 + 23)));
    assert!(p.posting_at(Turn(TURNS_PER_DAY + 7)) && !p.posting_at(Turn(7)), "Tuesday, not Monday");
    assert_eq!((p.posts_per_posting(), p.quotas(10)), (3, (6, 3, 2)));
}

#[test]
fn a_reply_that_is_not_a_plan_is_a_typed_error() {
    let e = Plan::parse("I'd rather not plan my week, thanks.").unwrap_err();
    assert_eq!(e, ReplyError::Unreadable { what: "plan", cause: "it names none of the plan's fields".into() });
    let e = Plan::parse(&FIGURE_5.replace("Reblog probability: 30%\n", "")).unwrap_err();
    assert_eq!(e.to_string(), "plan reply lacks the field \"reblog probability\"");
    let e = Plan::parse(&FIGURE_5.replace("Post day: Tuesday, Saturday\n", "")).unwrap_err();
    assert_eq!(e, ReplyError::MissingField { what: "plan", field: "posting days".into() });
    let e = Plan::parse(&FIGURE_5.replace("60%", "often")).unwrap_err();
    assert_eq!(e.to_string(), "plan reply: field \"Like probability\" cannot be read from \"often\"");
    let e = Plan::parse(&FIGURE_5.replace("20:00 - 21:00", "evenings")).unwrap_err();
    assert!(matches!(e, ReplyError::BadValue { ref field, .. } if field == "browsing time"), "{e}");
    let e = Plan::parse(&FIGURE_5.replace("60%", "160%")).unwrap_err();
    assert!(matches!(e, ReplyError::BadValue { .. }));
}

#[test]
fn the_schema_requires_every_field() {
    let s = json_schema();
    assert_eq!(s["required"].as_array().unwrap().len(), 7);
    assert_eq!(s["additionalProperties"], false);
}

#[test]
fn planning_sends_the_schema_and_a_retry_names_the_problem() {
    let model = crate::agent::test_model::Scripted::new(["I'd rather not plan.", FIGURE_5]);
    let persona = crate::agent::test_model::persona(2, "a baker");
    let got = futures::executor::block_on(make(&model, &persona, 0.5, 2, Some(11))).unwrap();
    assert_eq!((got.value, got.calls), (expected(), 2));
    let sent = model.requests();
    let schema = sent[0].response_format.as_ref().expect("planning asks for its schema");
    assert_eq!((schema.name.as_str(), schema.value()), ("plan", json_schema()));
    assert_eq!(sent[1].response_format, sent[0].response_format);
    assert_eq!((sent[0].seed, sent[1].seed), (Some(11), Some(12)));
    assert_eq!(
        sent[1].messages[2].content,
        "Your reply could not be used: plan reply cannot be read: it names none of the plan's fields. Answer the request above again, in exactly the form it asks for, and write nothing else."
    );
}

#[test]
fn the_idle_plan_never_acts() {
    let idle = Plan::idle();
    assert!((0..168).all(|t| !idle.browsing_at(Turn(t)) && !idle.posting_at(Turn(t))));
    assert_eq!(idle.quotas(10), (0, 0, 0));
}

#[test]
fn json_probabilities_are_percentages_above_one_and_fractions_below() {
    let reply = r#"{"browsing_time": "20:00-21:00", "posting_days": ["Monday"], "posting_time": "19:00-20:00",
        "like_probability": 0.64, "reblog_probability": 30, "comment_probability": 1, "posts_per_week": 2}"#;
    let p = Plan::parse(reply).unwrap();
    assert_eq!((p.like, p.reblog, p.comment), (0.64, 0.3, 1.0), "0.64 is the 64% a small model means, not 0.64%");
}
