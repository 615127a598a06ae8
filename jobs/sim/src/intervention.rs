//! Interventions: what a researcher does to a run from outside it, at the
//! start of a turn, as part of that turn's transaction (OASIS's manual
//! actions, AgentSociety's message interception).
//!
//! An interventions file has one JSON event per line, with a `type`:
//! - `post`: `{"type": "post", "by": 3 | "Daily News", "text": ..., "label": ...}`,
//!   a post as agent 3 or as the news account of that name (opened at its
//!   first post; news accounts never act). `label` names the post for
//!   later events of the file.
//! - `remove`: `{"type": "remove", "post": 12 | "LABEL"}` deletes a post;
//!   actions on it are refused from then on, as for any missing post.
//! - `follow` / `unfollow`: `{"follower": 3, "followee": 5 | "Daily News"}`.
//! - `persona`: `{"agent": 3, "set": {"personality": "Sceptical", ...}}`
//!   changes persona fields (the enriched fields, or `description`).
//! - `mute` / `unmute` / `boost` / `unboost`: `{"account": 3 | "Daily News"}`:
//!   feeds leave a muted account's posts out, and show a boosted account's
//!   posts first (newest first, before the ranker's order).
//!
//! Each event may carry `"turn": T`; `some sim intervene --at T` gives the
//! turn to events without one. [`parse`] reads a file whole and [`check`]
//! validates it against the run before anything is stored: a malformed
//! line, an unknown type or field, an unknown agent, post, label or news
//! account, or a turn already committed is refused with its line, and
//! nothing of the file is applied. What can only fail when applied (a
//! follow that exists by then, a profile field of an agent whose
//! enrichment failed) is recorded as a refused intervention, like a
//! refused action.
//!
//! Posts injected at turn T are created in T and shown from T + 1, like
//! every post made in a turn.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::agent::persona::{Persona, Profile};
use crate::platform::ids::{AgentId, PostId, Turn};
use crate::platform::{ApplyError, Platform};

/// An agent by id, or a news account by name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Account {
    Agent(u32),
    News(String),
}

/// A post by id, or an injected post by its label.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum PostRef {
    Id(u64),
    Label(String),
}

/// One intervention.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum Event {
    Post {
        by: Account,
        text: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        label: Option<String>,
    },
    Remove {
        post: PostRef,
    },
    Follow {
        follower: u32,
        followee: Account,
    },
    Unfollow {
        follower: u32,
        followee: Account,
    },
    Persona {
        agent: u32,
        set: BTreeMap<String, serde_json::Value>,
    },
    Mute {
        account: Account,
    },
    Unmute {
        account: Account,
    },
    Boost {
        account: Account,
    },
    Unboost {
        account: Account,
    },
}

/// An event of a file, with its line and turn.
#[derive(Debug, Clone, PartialEq)]
pub struct Timed {
    pub line: u32,
    /// `None` where the file left it to `--at`.
    pub turn: Option<Turn>,
    pub event: Event,
}

/// A refused file: the line and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {cause}")]
pub struct BadEvent {
    pub line: u32,
    pub cause: String,
}

fn bad(line: u32, cause: impl Into<String>) -> BadEvent {
    BadEvent { line, cause: cause.into() }
}

/// Reads an interventions file's text: one event per line; blank lines and
/// lines starting with `#` are skipped.
pub fn parse(text: &str) -> Result<Vec<Timed>, BadEvent> {
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i as u32 + 1;
        let raw = raw.trim();
        if raw.is_empty() || raw.starts_with('#') {
            continue;
        }
        let mut value: serde_json::Value = serde_json::from_str(raw).map_err(|e| bad(line, format!("not JSON: {e}")))?;
        let object = value.as_object_mut().ok_or_else(|| bad(line, "an event is a JSON object"))?;
        let turn = match object.remove("turn") {
            None => None,
            Some(t) => Some(Turn(
                t.as_u64().and_then(|t| u32::try_from(t).ok()).ok_or_else(|| bad(line, format!("turn {t} is not a turn number")))?,
            )),
        };
        let event: Event = serde_json::from_value(value).map_err(|e| bad(line, e.to_string()))?;
        out.push(Timed { line, turn, event });
    }
    if out.is_empty() {
        return Err(bad(0, "the file has no event"));
    }
    Ok(out)
}

/// What an event may name, as the run stands when the file is submitted.
pub struct Known<'a> {
    /// Agents are `0..agents`.
    pub agents: u32,
    /// The first turn not committed: an event's turn must not be earlier.
    pub next_turn: Turn,
    /// The run's end: an event's turn must be earlier.
    pub end: Turn,
    /// The committed state (posts, news accounts, labels).
    pub platform: &'a Platform,
}

/// Checks a whole file against the run: every event's turn (`at` for
/// those without one), agents, posts, labels and news accounts named.
/// Returns the events with their turns, in the order they will apply
/// (turn, then line).
pub fn check(events: Vec<Timed>, at: Option<Turn>, known: &Known<'_>) -> Result<Vec<(Turn, Timed)>, BadEvent> {
    let mut timed = Vec::with_capacity(events.len());
    for e in events {
        let turn = match (e.turn, at) {
            (Some(t), _) if t < known.next_turn => {
                return Err(bad(e.line, format!("turn {t} is in the past: turns up to {} are committed", known.next_turn.0 as i64 - 1)));
            }
            (Some(t), _) => t,
            (None, Some(at)) => at.max(known.next_turn),
            (None, None) => return Err(bad(e.line, "the event has no turn (give \"turn\", or --at)")),
        };
        if turn >= known.end {
            return Err(bad(e.line, format!("turn {turn} is past the run's end (its last turn is {})", known.end.0.saturating_sub(1))));
        }
        timed.push((turn, e));
    }
    timed.sort_by_key(|(t, e)| (*t, e.line));
    // News accounts that exist by each event: those committed, and those
    // opened by earlier events of the file. Labels of the file's posts,
    // with where they are made.
    let mut news: BTreeSet<String> = known.platform.news_accounts().map(|(n, _)| n.to_string()).collect();
    let mut labels: BTreeMap<String, (Turn, u32)> = BTreeMap::new();
    for (turn, e) in &timed {
        if let Event::Post { label: Some(label), .. } = &e.event
            && (known.platform.labelled(label).is_some() || labels.insert(label.clone(), (*turn, e.line)).is_some())
        {
            return Err(bad(e.line, format!("the label {label:?} is already used")));
        }
    }
    let agent = |line: u32, id: u32| {
        if id < known.agents {
            Ok(())
        } else {
            Err(bad(line, format!("agent {id} is not in the run (its agents are 0 to {})", known.agents.saturating_sub(1))))
        }
    };
    let account = |line: u32, a: &Account, news: &BTreeSet<String>| match a {
        Account::Agent(id) => agent(line, *id),
        Account::News(name) if news.contains(name) => Ok(()),
        Account::News(name) => Err(bad(line, format!("no news account {name:?}: a post by it must come first"))),
    };
    for (turn, e) in &timed {
        let line = e.line;
        match &e.event {
            Event::Post { by, text, .. } => {
                if text.trim().is_empty() {
                    return Err(bad(line, "the post's text is empty"));
                }
                match by {
                    Account::Agent(id) => agent(line, *id)?,
                    Account::News(name) if name.trim().is_empty() => return Err(bad(line, "the news account's name is empty")),
                    Account::News(name) => {
                        news.insert(name.clone());
                    }
                }
            }
            Event::Remove { post: PostRef::Id(id) } => {
                if known.platform.post(PostId(*id)).is_none() {
                    return Err(bad(line, format!("post {id} does not exist (name a post to come by its label)")));
                }
            }
            Event::Remove { post: PostRef::Label(label) } if known.platform.labelled(label).is_some() => {}
            Event::Remove { post: PostRef::Label(label) } => match labels.get(label) {
                None => return Err(bad(line, format!("no post is labelled {label:?}"))),
                Some((made, at)) if (*made, *at) > (*turn, line) => {
                    return Err(bad(line, format!("the post labelled {label:?} is made at turn {made} (line {at}), after this event")));
                }
                Some(_) => {}
            },
            Event::Follow { follower, followee } | Event::Unfollow { follower, followee } => {
                agent(line, *follower)?;
                account(line, followee, &news)?;
                if *followee == Account::Agent(*follower) {
                    return Err(bad(line, "an agent cannot follow itself"));
                }
            }
            Event::Persona { agent: id, set } => {
                agent(line, *id)?;
                if set.is_empty() {
                    return Err(bad(line, "\"set\" names no field"));
                }
                for (field, value) in set {
                    check_field(field, value).map_err(|c| bad(line, c))?;
                }
            }
            Event::Mute { account: a } | Event::Unmute { account: a } | Event::Boost { account: a } | Event::Unboost { account: a } => {
                account(line, a, &news)?;
            }
        }
    }
    Ok(timed)
}

fn check_field(field: &str, value: &serde_json::Value) -> Result<(), String> {
    // The enriched fields, and the description every persona has.
    if field != "description" && !Profile::KEYS.contains(&field) {
        return Err(format!("unknown persona field {field:?} (description, or one of {})", Profile::KEYS.join(", ")));
    }
    let ok = if field == "age" { value.as_u64().is_some_and(|a| a <= 150) } else { value.as_str().is_some_and(|s| !s.trim().is_empty()) };
    if ok {
        Ok(())
    } else {
        Err(format!("persona field {field:?} takes {}, not {value}", if field == "age" { "an age in years" } else { "a text" }))
    }
}

/// Sets persona fields; an enriched field of a persona that was not
/// enriched is refused.
pub fn set_persona(persona: &mut Persona, set: &BTreeMap<String, serde_json::Value>) -> Result<(), String> {
    for (field, value) in set {
        check_field(field, value)?;
        if field == "description" {
            persona.description = value.as_str().unwrap_or_default().to_string();
            continue;
        }
        let profile =
            persona.profile.as_mut().ok_or_else(|| format!("agent {} was not enriched: only its description can be set", persona.id))?;
        let text = || value.as_str().unwrap_or_default().to_string();
        match field.as_str() {
            "name" => profile.name = text(),
            "age" => profile.age = value.as_u64().unwrap_or_default() as u32,
            "gender" => profile.gender = text(),
            "nationality" => profile.nationality = text(),
            "personality" => profile.personality = text(),
            "hobbies" => profile.hobbies = text(),
            k if k == Profile::KEYS[6] => profile.history = text(),
            k if k == Profile::KEYS[7] => profile.preferences = text(),
            _ => profile.knowledge = text(),
        }
    }
    Ok(())
}

/// What came of one applied event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Applied {
    pub result: Result<(), ApplyError>,
    /// The post an injected post created, or the post removed.
    pub post: Option<PostId>,
    /// The account that posted (a news account is opened at its first post).
    pub account: Option<AgentId>,
}

/// Applies a turn's interventions in order, before its actions; persona
/// events change `personas` (by agent id). Each is checked first, and a
/// refused one changes nothing. Chained into the platform's history like a
/// turn's actions, so the digest covers them.
pub fn intervene(platform: &mut Platform, turn: Turn, events: &[Event], personas: &mut BTreeMap<AgentId, Persona>) -> Vec<Applied> {
    let out: Vec<Applied> = events.iter().map(|e| apply_event(platform, turn, e, personas)).collect();
    let record = serde_json::to_vec(&(events, &out)).unwrap_or_default();
    platform.record(b"intervene", &[turn.0.to_le_bytes().as_slice(), &record].concat());
    out
}

fn resolve(platform: &Platform, a: &Account) -> Result<AgentId, ApplyError> {
    match a {
        Account::Agent(id) if platform.has_account(AgentId(*id)) => Ok(AgentId(*id)),
        Account::Agent(id) => Err(ApplyError::NoSuchAgent(AgentId(*id))),
        Account::News(name) => platform.news_account(name).ok_or_else(|| ApplyError::NoSuchAccount(name.clone())),
    }
}

fn apply_event(platform: &mut Platform, turn: Turn, e: &Event, personas: &mut BTreeMap<AgentId, Persona>) -> Applied {
    let done = |result: Result<(), ApplyError>| Applied { result, post: None, account: None };
    match e {
        Event::Post { by, text, label } => {
            if text.trim().is_empty() {
                return done(Err(ApplyError::EmptyText));
            }
            if let Some(l) = label.as_ref().filter(|l| platform.labelled(l).is_some()) {
                return done(Err(ApplyError::LabelUsed(l.clone())));
            }
            let author = match by {
                Account::News(name) if platform.news_account(name).is_none() => platform.open_news(name),
                other => match resolve(platform, other) {
                    Ok(a) => a,
                    Err(err) => return done(Err(err)),
                },
            };
            let post = platform.inject(turn, author, text, label.as_deref());
            Applied { result: Ok(()), post: Some(post), account: Some(author) }
        }
        Event::Remove { post } => {
            let id = match post {
                PostRef::Id(id) => PostId(*id),
                PostRef::Label(l) => match platform.labelled(l) {
                    Some(p) => p,
                    None => return done(Err(ApplyError::NoSuchLabel(l.clone()))),
                },
            };
            match platform.remove_post(id) {
                Ok(()) => Applied { result: Ok(()), post: Some(id), account: None },
                Err(err) => done(Err(err)),
            }
        }
        Event::Follow { follower, followee } => done(resolve(platform, followee).and_then(|b| platform.add_follow(AgentId(*follower), b))),
        Event::Unfollow { follower, followee } => {
            done(resolve(platform, followee).and_then(|b| platform.cut_follow(AgentId(*follower), b)))
        }
        Event::Persona { agent, set } => done(match personas.get_mut(&AgentId(*agent)) {
            None => Err(ApplyError::UnknownAgent(AgentId(*agent))),
            Some(p) => {
                let mut changed = p.clone();
                set_persona(&mut changed, set).map_err(ApplyError::Persona).map(|()| *p = changed)
            }
        }),
        Event::Mute { account } | Event::Unmute { account } | Event::Boost { account } | Event::Unboost { account } => {
            done(resolve(platform, account).map(|a| match e {
                Event::Mute { .. } => platform.set_muted(a, true),
                Event::Unmute { .. } => platform.set_muted(a, false),
                Event::Boost { .. } => platform.set_boosted(a, true),
                _ => platform.set_boosted(a, false),
            }))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::test_model::{persona, sarah};
    use crate::platform::{Action, AgentAction};

    fn platform() -> Platform {
        let mut p = Platform::new();
        (0..4).for_each(|a| p.register(AgentId(a)));
        p.apply_turn(Turn(0), vec![AgentAction { agent: AgentId(0), seq: 0, action: Action::Post { text: "hello".into() } }]);
        p
    }

    fn known(p: &Platform) -> Known<'_> {
        Known { agents: 4, next_turn: Turn(1), end: Turn(10), platform: p }
    }

    #[test]
    fn a_file_is_checked_whole_and_a_bad_line_is_named() {
        let p = platform();
        let file = r#"
# a rumour, then its removal
{"turn": 2, "type": "post", "by": "Daily News", "text": "Breaking: a comet", "label": "comet"}
{"turn": 4, "type": "remove", "post": "comet"}
{"turn": 2, "type": "boost", "account": "Daily News"}
{"turn": 3, "type": "persona", "agent": 1, "set": {"personality": "Sceptical", "age": 40}}
{"turn": 3, "type": "follow", "follower": 1, "followee": "Daily News"}
{"type": "mute", "account": 2}
"#;
        let events = parse(file).unwrap();
        assert_eq!(events.len(), 6);
        let checked = check(events.clone(), Some(Turn(0)), &known(&p)).unwrap();
        let order: Vec<(u32, u32)> = checked.iter().map(|(t, e)| (t.0, e.line)).collect();
        assert_eq!(order, [(1, 8), (2, 3), (2, 5), (3, 6), (3, 7), (4, 4)], "--at in the past is the next turn");
        assert!(check(events, None, &known(&p)).unwrap_err().to_string().starts_with("line 8: the event has no turn"));

        let refused = |text: &str| check(parse(text).unwrap(), None, &known(&p)).unwrap_err().to_string();
        let refused_parse = |text: &str| parse(text).unwrap_err().to_string();
        assert_eq!(refused(r#"{"turn": 2, "type": "mute", "account": 9}"#), "line 1: agent 9 is not in the run (its agents are 0 to 3)");
        assert_eq!(
            refused(r#"{"turn": 2, "type": "remove", "post": 7}"#),
            "line 1: post 7 does not exist (name a post to come by its label)"
        );
        assert_eq!(refused(r#"{"turn": 0, "type": "mute", "account": 1}"#), "line 1: turn 0 is in the past: turns up to 0 are committed");
        assert!(refused(r#"{"turn": 12, "type": "mute", "account": 1}"#).contains("past the run's end"));
        assert!(refused("{\"turn\": 2, \"type\": \"remove\", \"post\": \"x\"}").contains("no post is labelled \"x\""));
        assert!(refused("{\"turn\": 2, \"type\": \"post\", \"by\": 1, \"text\": \"a\", \"label\": \"x\"}\n{\"turn\": 1, \"type\": \"remove\", \"post\": \"x\"}").starts_with("line 2: the post labelled \"x\" is made at turn 2 (line 1), after this event"));
        assert!(refused(r#"{"turn": 2, "type": "follow", "follower": 1, "followee": "Nobody"}"#).contains("no news account \"Nobody\""));
        assert!(refused(r#"{"turn": 2, "type": "persona", "agent": 1, "set": {"age": "old"}}"#).contains("takes an age in years"));
        assert!(refused(r#"{"turn": 2, "type": "persona", "agent": 1, "set": {"mood": "x"}}"#).contains("unknown persona field \"mood\""));
        assert!(
            refused_parse("{\"turn\": 2, \"type\": \"mute\", \"account\": 1}\n{\"turn\": 2, \"type\": \"shout\"}")
                .starts_with("line 2: unknown variant `shout`")
        );
        assert!(refused_parse(r#"{"turn": 2, "type": "mute", "account": 1, "loud": true}"#).contains("unknown field `loud`"));
        assert!(refused_parse(r#"{"turn": "soon", "type": "mute", "account": 1}"#).contains("not a turn number"));
        assert!(refused_parse("not json").starts_with("line 1: not JSON"));
    }

    #[test]
    fn interventions_change_the_platform_and_personas_and_the_history() {
        let mut p = platform();
        let before = p.history_digest();
        let mut personas: BTreeMap<AgentId, Persona> = [(AgentId(1), sarah()), (AgentId(2), persona(2, "plain"))].into();
        personas.get_mut(&AgentId(1)).unwrap().id = AgentId(1);
        let events = vec![
            Event::Post { by: Account::News("Daily".into()), text: "news".into(), label: Some("n".into()) },
            Event::Follow { follower: 1, followee: Account::News("Daily".into()) },
            Event::Boost { account: Account::News("Daily".into()) },
            Event::Mute { account: Account::Agent(0) },
            Event::Persona { agent: 1, set: [("personality".to_string(), serde_json::json!("Sceptical"))].into() },
            Event::Persona { agent: 2, set: [("personality".to_string(), serde_json::json!("Sceptical"))].into() },
            Event::Remove { post: PostRef::Id(0) },
            Event::Unfollow { follower: 2, followee: Account::Agent(0) },
        ];
        let out = intervene(&mut p, Turn(1), &events, &mut personas);
        let news = AgentId(4);
        assert_eq!((out[0].post, out[0].account), (Some(PostId(1)), Some(news)));
        assert!(out[..5].iter().all(|a| a.result.is_ok()), "{out:?}");
        assert!(matches!(out[5].result, Err(ApplyError::Persona(_))), "agent 2 was not enriched");
        assert_eq!(out[7].result, Err(ApplyError::NotFollowing(AgentId(0))));
        assert!(p.is_following(AgentId(1), news) && p.boosted().contains(&news) && p.is_muted(AgentId(0)));
        assert_eq!(personas[&AgentId(1)].profile.as_ref().unwrap().personality, "Sceptical");
        assert!(p.post(PostId(0)).is_none() && p.labelled("n") == Some(PostId(1)));
        assert_ne!(p.history_digest(), before);
        let again =
            intervene(&mut p, Turn(2), &[Event::Post { by: Account::Agent(1), text: "x".into(), label: Some("n".into()) }], &mut personas);
        assert_eq!(again[0].result, Err(ApplyError::LabelUsed("n".into())));
    }
}
