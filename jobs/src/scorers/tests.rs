//! Scorers against the paper's formulas, with a scripted judge.

use some_schemas::QueryRow;

use super::*;
use crate::chat::ChatResponse;
use crate::testing::{ScriptedModel, unreachable};

/// A judge that answers with `replies` in order (then with nothing).
fn scripted_judge(replies: &[&str]) -> ScriptedModel {
    let replies = replies
        .iter()
        .map(|r| {
            Ok(ChatResponse {
                content: r.to_string(),
                usage: Usage { prompt_tokens: 50, completion_tokens: 2, cached_tokens: 0 },
                ..Default::default()
            })
        })
        .collect();
    ScriptedModel::replies("judge", replies, |_| {
        Ok(ChatResponse { usage: Usage { prompt_tokens: 50, completion_tokens: 2, cached_tokens: 0 }, ..Default::default() })
    })
}

fn query(task: &str, label: Option<&str>, reference: Option<&str>) -> QueryRow {
    let task: some_schemas::Task = task.parse().unwrap();
    QueryRow {
        source_key: "k".into(),
        action: Some("comment".into()),
        label: label.map(str::to_string),
        reference: reference.map(str::to_string),
        entry: "{}".into(),
        ..QueryRow::blank(format!("{}-1", task.code().to_lowercase()).into(), task)
    }
}

fn run(judge: &ScriptedModel, q: &QueryRow, answer: Option<&str>) -> Scored {
    let settings = JudgeSettings::default();
    let j = Judge { model: judge, settings: &settings };
    futures::executor::block_on(score(&j, q, "问题", answer))
}

#[test]
fn labels_are_taken_directly_when_the_answer_is_one() {
    let judge = scripted_judge(&[]);
    let s = run(&judge, &query("MCR", Some("是"), None), Some(" 是。"));
    assert_eq!((s.extracted.as_deref(), s.score, s.completed, s.judge_calls), (Some("是"), 100.0, true, 0));
    let s = run(&judge, &query("MID", Some("half"), None), Some("barely-true"));
    assert_eq!((s.extracted.as_deref(), s.score), (Some("half"), 100.0), "MID's verdicts map to three labels");
}

#[test]
fn other_answers_go_through_the_papers_extraction_prompt() {
    let judge = scripted_judge(&["maybe", "\"No\""]);
    let s = run(&judge, &query("UBP", Some("否"), None), Some("综合来看，该用户不太可能评论这条微博。"));
    assert_eq!((s.extracted.as_deref(), s.score, s.completed, s.judge_calls), (Some("否"), 100.0, true, 2));
    let seen = judge.requests();
    // As the reference sends it: the rubric as the system message, the line
    // quoting the answer as the user message.
    let (rubric, user) = (&seen[0].messages[0], &seen[0].messages[1]);
    assert_eq!(rubric.role, crate::chat::Role::System);
    assert!(rubric.content.contains("performed the comment action on the post"), "{}", rubric.content);
    assert!(!rubric.content.contains("综合来看"), "{}", rubric.content);
    assert_eq!(user.content, "The given input text is “综合来看，该用户不太可能评论这条微博。”");
    assert_eq!((seen[0].temperature, seen[0].seed), (Some(0.0), Some(0)));

    let judge = scripted_judge(&["Fear"]);
    let s = run(&judge, &query("UEA", Some("积极"), None), Some("用户会感到担忧"));
    assert_eq!((s.extracted.as_deref(), s.score, s.completed), (Some("恐惧"), 0.0, true));
    let judge = scripted_judge(&["Error"]);
    let s = run(&judge, &query("UCS", Some("是"), None), Some("无法判断"));
    assert_eq!((s.extracted.as_deref(), s.score, s.completed), (Some("error"), 0.0, false));
}

#[test]
fn long_or_missing_answers_score_zero_without_a_judge() {
    let judge = scripted_judge(&[]);
    let long = "是".repeat(5_001);
    let s = run(&judge, &query("MCR", Some("是"), None), Some(&long));
    assert_eq!((s.extracted.as_deref(), s.score, s.completed, s.judge_calls), (Some("error"), 0.0, false, 0));
    let s = run(&judge, &query("SES", None, Some("ref")), Some(&long));
    assert_eq!((s.score, s.completed, s.judge_calls), (0.0, false, 0));
    assert_eq!(s.dimensions.unwrap().len(), 2);
    let s = run(&judge, &query("SMQ", None, Some("ref")), None);
    assert_eq!((s.score, s.completed, s.judge_calls), (0.0, false, 0));
}

#[test]
fn mid_and_uea_read_long_answers_as_the_reference_scripts_do() {
    let judge = scripted_judge(&[]);
    let long = format!("{}false", "分析".repeat(2_600));
    let judge_reply = scripted_judge(&["false"]);
    let s = run(&judge_reply, &query("MID", Some("false"), None), Some(&long));
    assert_eq!((s.extracted.as_deref(), s.score, s.judge_calls), (Some("false"), 100.0, 1), "no cut-off for MID");
    let judge_reply = scripted_judge(&["Fear"]);
    let s = run(&judge_reply, &query("UEA", Some("恐惧"), None), Some(&"担忧".repeat(2_600)));
    assert_eq!((s.extracted.as_deref(), s.score), (Some("恐惧"), 100.0), "no cut-off for UEA");
    let s = run(&judge, &query("UBP", Some("是"), None), Some(&"是".repeat(5_001)));
    assert_eq!((s.extracted.as_deref(), s.judge_calls), (Some("error"), 0), "UBP keeps the cut-off");
}

#[test]
fn judged_scores_are_the_mean_rating_times_twenty() {
    let judge = scripted_judge(&["Accuracy: 4, Completeness: 3, Relevance: 5"]);
    let s = run(&judge, &query("RED", None, Some(r#"[{"标题":"t"}]"#)), Some("事件：地铁故障"));
    assert_eq!(s.score, 80.0);
    assert_eq!(
        s.dimensions.unwrap().into_iter().collect::<Vec<_>>(),
        vec![("accuracy".into(), 4), ("completeness".into(), 3), ("relevance".into(), 5)]
    );
    let seen = judge.requests();
    assert!(seen[0].messages[0].content.contains("reference answer “[{\"标题\": \"t\"}]”"), "{}", seen[0].messages[0].content);
    assert_eq!(seen[0].messages[1].content, "The given event summary is “事件：地铁故障”");

    let judge = scripted_judge(&["准确性：2，完整性：1"]);
    assert_eq!(run(&judge, &query("SES", None, Some("ref")), Some("摘要")).score, 30.0);
    let judge = scripted_judge(&["3"]);
    assert_eq!(run(&judge, &query("SMQ", None, Some("成毅")), Some("成毅")).score, 60.0);
}

#[test]
fn a_zero_score_is_completed_only_if_the_answer_was_an_attempt() {
    let judge = scripted_judge(&["Accuracy: 0", "正确"]);
    let s = run(&judge, &query("SMQ", None, Some("成毅")), Some("肖战"));
    assert_eq!((s.score, s.completed, s.judge_calls), (0.0, true, 2));
    assert!(judge.requests()[1].messages[0].content.starts_with("请仔细阅读问题“问题”"));
    let judge = scripted_judge(&["Accuracy: 0", "错误"]);
    let s = run(&judge, &query("SMQ", None, Some("成毅")), Some("运行错误"));
    assert_eq!((s.score, s.completed), (0.0, false));
}

#[test]
fn an_unreachable_judge_gives_no_verdict() {
    let settings = JudgeSettings::default();
    let down = ScriptedModel::new("judge", |_| unreachable());
    let judge = Judge { model: &down, settings: &settings };
    for q in [query("SMQ", None, Some("成毅")), query("UBP", Some("是"), None)] {
        let s = futures::executor::block_on(score(&judge, &q, "问题", Some("这个问题不好说，可能吧")));
        assert!(s.unavailable, "{}: {s:?}", q.task);
        assert_eq!(s.judge_calls, 1, "{}: a failed call is not asked again", q.task);
        assert!(s.error.as_deref().is_some_and(|e| e.contains("connection refused")), "{s:?}");
    }
    // A judge that answers, however badly, is a verdict.
    let s = run(&scripted_judge(&["嗯", "嗯", "嗯", "嗯"]), &query("SMQ", None, Some("成毅")), Some("不知道"));
    assert!(!s.unavailable);
}
