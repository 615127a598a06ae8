//! Interviews and surveys tabulated: per interview and question, how many
//! agents were asked and answered, and for a survey question how many
//! chose each option. `some sim interview` prints these after asking, and
//! the report shows every interview of the run.

use std::collections::BTreeMap;

use serde::Serialize;
use some_jobs::render::Table;
use some_schemas::sim::SimInterviewRow;

/// One question of one interview, tabulated.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct QuestionSummary {
    pub interview_id: String,
    pub turn: i64,
    pub question_id: String,
    pub question: String,
    pub asked: usize,
    pub answered: usize,
    /// A survey question's options, each with the agents that chose it, in
    /// the question's order; empty for an open question.
    pub options: Vec<(String, usize)>,
}

/// The questions of `rows`, in the order interviews were asked, then by
/// question id. Options that do not read as a JSON list are an error: the
/// row, and the cause.
pub fn tabulate(rows: &[SimInterviewRow]) -> Result<Vec<QuestionSummary>, (String, String)> {
    // Keyed by interview and question; ordered by when each was first asked.
    let mut by: BTreeMap<(String, String), (i64, QuestionSummary)> = BTreeMap::new();
    for r in rows {
        let options: Vec<String> = match &r.options {
            Some(o) => serde_json::from_str(o).map_err(|e| {
                (
                    format!("interview {}, question {}, agent {}", r.interview_id, r.question_id, r.agent_id),
                    format!("the options do not read: {e}"),
                )
            })?,
            None => Vec::new(),
        };
        let (first, s) = by.entry((r.interview_id.clone(), r.question_id.clone())).or_insert_with(|| {
            (
                r.asked_at.0,
                QuestionSummary {
                    interview_id: r.interview_id.clone(),
                    turn: r.turn,
                    question_id: r.question_id.clone(),
                    question: r.question.clone(),
                    asked: 0,
                    answered: 0,
                    options: options.iter().map(|o| (o.clone(), 0)).collect(),
                },
            )
        });
        *first = (*first).min(r.asked_at.0);
        s.asked += 1;
        if let Some(answer) = &r.answer {
            s.answered += 1;
            if let Some(o) = s.options.iter_mut().find(|(o, _)| o == answer) {
                o.1 += 1;
            }
        }
    }
    let mut out: Vec<(i64, QuestionSummary)> = by.into_values().collect();
    out.sort_by(|(a, x), (b, y)| a.cmp(b).then_with(|| (&x.interview_id, &x.question_id).cmp(&(&y.interview_id, &y.question_id))));
    Ok(out.into_iter().map(|(_, q)| q).collect())
}

/// A table per survey question (options, agents, share of the answers)
/// and one for the open questions.
pub fn tables(questions: &[QuestionSummary]) -> Vec<Table> {
    let share = |n: usize, of: usize| if of == 0 { "-".to_string() } else { format!("{:.1}%", 100.0 * n as f64 / of as f64) };
    let mut out: Vec<Table> = questions
        .iter()
        .filter(|q| !q.options.is_empty())
        .map(|q| Table {
            title: format!(
                "Survey {} at turn {}, {}: {} ({} of {} answered)",
                q.interview_id, q.turn, q.question_id, q.question, q.answered, q.asked
            ),
            header: vec!["Answer".into(), "Agents".into(), "Share".into()],
            left: vec![0],
            highlight: None,
            rows: q.options.iter().map(|(o, n)| vec![o.clone(), n.to_string(), share(*n, q.answered)]).collect(),
        })
        .collect();
    let open: Vec<&QuestionSummary> = questions.iter().filter(|q| q.options.is_empty()).collect();
    if !open.is_empty() {
        out.push(Table {
            title: "Interview questions (open answers are in sim_interviews)".into(),
            header: ["Interview", "Turn", "Question", "Asked", "Answered"].map(String::from).to_vec(),
            left: vec![0, 2],
            highlight: None,
            rows: open
                .iter()
                .map(|q| {
                    vec![
                        q.interview_id.clone(),
                        q.turn.to_string(),
                        format!("{}: {}", q.question_id, q.question),
                        q.asked.to_string(),
                        q.answered.to_string(),
                    ]
                })
                .collect(),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use some_schemas::Timestamp;

    fn row(agent: i64, question: &str, options: Option<&str>, answer: Option<&str>) -> SimInterviewRow {
        SimInterviewRow {
            interview_id: "i1".into(),
            turn: 5,
            agent_id: agent,
            question_id: question.into(),
            question: format!("{question}?"),
            options: options.map(String::from),
            answer: answer.map(String::from),
            error: answer.is_none().then(|| "no usable reply".into()),
            model: "m".into(),
            asked_at: Timestamp(agent),
            run_id: "r".into(),
        }
    }

    #[test]
    fn survey_answers_are_counted_per_option_and_unread_replies_are_asked_not_answered() {
        let o = Some(r#"["Yes","No"]"#);
        let rows = vec![
            row(0, "trust", o, Some("Yes")),
            row(1, "trust", o, Some("No")),
            row(2, "trust", o, Some("Yes")),
            row(3, "trust", o, None),
            row(0, "why", None, Some("Because.")),
        ];
        let t = tabulate(&rows).unwrap();
        let trust = t.iter().find(|q| q.question_id == "trust").unwrap();
        assert_eq!((trust.asked, trust.answered), (4, 3));
        assert_eq!(trust.options, [("Yes".to_string(), 2), ("No".to_string(), 1)]);
        let tables = tables(&t);
        assert_eq!(tables.len(), 2);
        assert_eq!(tables[0].rows[0], ["Yes", "2", "66.7%"]);
        assert!(tabulate(&[row(0, "x", Some("[oops"), Some("a"))]).unwrap_err().0.ends_with("agent 0"));
    }
}
