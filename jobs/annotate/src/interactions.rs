//! Who liked, commented on or reposted which post: the data the UBP, UCS and
//! MCR annotations are drawn from, and the posts a query may show.
//!
//! Neither the SoMe release nor a lake holds interactions (the crawled ones
//! were never published), so they come from a JSONL file a team exports from
//! its own data, or from a query set: every positive of a UBP, UCS or MCR
//! query is an interaction the world was built to show.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;

use serde_json::Value;
use some_jobs::InputError;
use some_jobs::json::{read_file, type_name};
use some_jobs::solvers::Sources;
use some_schemas::{QueryRow, RefPostRow, Task};

/// How a user interacted with a post.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    Like,
    Comment,
    Repost,
    /// An interaction whose type the source does not record (an MCR
    /// positive says only that the user engaged with the post).
    Other,
}

impl Kind {
    /// The three types UBP asks about, in the release's order.
    pub const UBP: [Kind; 3] = [Kind::Like, Kind::Comment, Kind::Repost];

    /// The name in files and in UBP's ground truth.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Like => "like",
            Kind::Comment => "comment",
            Kind::Repost => "repost",
            Kind::Other => "other",
        }
    }

    fn parse(s: &str) -> Option<Kind> {
        [Kind::Like, Kind::Comment, Kind::Repost, Kind::Other].into_iter().find(|k| k.as_str() == s)
    }

    /// Whether the interaction carries a text (the comment, the repost's words).
    pub fn has_text(self) -> bool {
        matches!(self, Kind::Comment | Kind::Repost)
    }
}

/// One interaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Interaction {
    /// Who interacted; only numeric ids can be a query's user (the release's
    /// layout keys users by number), others still count as "someone else".
    pub uid: String,
    pub post_id: String,
    pub kind: Kind,
    /// The comment or the repost's words.
    pub text: Option<String>,
}

/// Reads a JSONL file of interactions, one object per line:
/// `{"uid": "123", "post_id": "456", "kind": "comment", "text": "..."}`
/// (`kind` one of like, comment, repost, other; `text` required for
/// comments). A bad line fails the whole file, naming the line and field.
pub fn read_jsonl(path: &Path) -> Result<Vec<Interaction>, InputError> {
    let bytes = read_file(path)?;
    let text = std::str::from_utf8(&bytes).map_err(|e| InputError::new(path, "", format!("not UTF-8: {e}")))?;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let at = format!("line {}", i + 1);
        if line.trim().is_empty() {
            continue;
        }
        let value: Value = serde_json::from_str(line).map_err(|e| InputError::new(path, &at, format!("not a JSON object: {e}")))?;
        let object =
            value.as_object().ok_or_else(|| InputError::new(path, &at, format!("expected an object, found {}", type_name(&value))))?;
        let field = |name: &str, required: bool| -> Result<Option<String>, InputError> {
            match object.get(name) {
                None | Some(Value::Null) if !required => Ok(None),
                None | Some(Value::Null) => Err(InputError::new(path, format!("{at}.{name}"), "required field is missing")),
                Some(Value::String(s)) if !s.trim().is_empty() => Ok(Some(s.clone())),
                Some(Value::Number(n)) if name != "text" => Ok(Some(n.to_string())),
                Some(other) => {
                    Err(InputError::new(path, format!("{at}.{name}"), format!("expected a non-empty string, found {}", type_name(other))))
                }
            }
        };
        let kind_name = field("kind", true)?.unwrap_or_default();
        let kind = Kind::parse(&kind_name).ok_or_else(|| {
            InputError::new(path, format!("{at}.kind"), format!("unknown kind {kind_name:?}; expected like, comment, repost or other"))
        })?;
        out.push(Interaction {
            uid: field("uid", true)?.unwrap_or_default(),
            post_id: field("post_id", true)?.unwrap_or_default(),
            kind,
            text: field("text", kind == Kind::Comment)?,
        });
    }
    if out.is_empty() {
        return Err(InputError::new(path, "", "the file holds no interactions"));
    }
    Ok(out)
}

/// The interactions a query set records: each positive of UBP, UCS and
/// MCR, and each UCS negative's comment (written by someone else, whose id
/// the query does not give).
pub fn from_queries(queries: &[QueryRow]) -> Vec<Interaction> {
    let mut out = Vec::new();
    for q in queries {
        let (Some(uid), Some(post_id)) = (&q.uid, &q.post_id) else { continue };
        let positive = q.label.as_deref() == Some("是");
        let kind = match q.task {
            Task::Ubp => q.action.as_deref().and_then(Kind::parse),
            Task::Ucs => Some(Kind::Comment),
            Task::Mcr => Some(Kind::Other),
            _ => None,
        };
        let Some(kind) = kind else { continue };
        if positive {
            out.push(Interaction { uid: uid.clone(), post_id: post_id.clone(), kind, text: q.comment.clone() });
        } else if q.task == Task::Ucs || (q.task == Task::Ubp && kind.has_text()) {
            // The shown text was written on that post by another user.
            out.push(Interaction { uid: format!("someone-else:{}", q.query_id), post_id: post_id.clone(), kind, text: q.comment.clone() });
        }
    }
    out
}

/// The interactions indexed the ways the sampling rules ask about them.
pub struct Index {
    /// Per user: the posts they interacted with, by kind.
    by_user: BTreeMap<String, BTreeMap<Kind, BTreeSet<String>>>,
    /// Per post and kind: the texts left on it, with their authors.
    texts: BTreeMap<(String, Kind), Vec<(String, String)>>,
    /// What a query may show: post id → its text.
    posts: HashMap<String, String>,
    /// Interactions on posts the catalog lacks, left out.
    pub dropped: usize,
}

impl Index {
    /// Indexes `interactions` on the posts of `posts` (id → text); an
    /// interaction with a post outside it is dropped, since no query could
    /// show that post.
    pub fn new(interactions: &[Interaction], posts: HashMap<String, String>) -> Index {
        let mut index = Index { by_user: BTreeMap::new(), texts: BTreeMap::new(), posts, dropped: 0 };
        for i in interactions {
            if !index.posts.contains_key(&i.post_id) {
                index.dropped += 1;
                continue;
            }
            index.by_user.entry(i.uid.clone()).or_default().entry(i.kind).or_default().insert(i.post_id.clone());
            if let Some(text) = &i.text {
                // The same interaction read twice (two queries show it) is one.
                let texts = index.texts.entry((i.post_id.clone(), i.kind)).or_default();
                let said = (i.uid.clone(), text.clone());
                if !texts.contains(&said) {
                    texts.push(said);
                }
            }
        }
        index
    }

    /// Users who can be a query's user, in id order.
    pub fn users(&self) -> impl Iterator<Item = &str> {
        self.by_user.keys().map(String::as_str).filter(|u| !u.is_empty() && u.bytes().all(|b| b.is_ascii_digit()))
    }

    /// The posts `uid` interacted with by `kind`.
    pub fn posts_of(&self, uid: &str, kind: Kind) -> impl Iterator<Item = &str> {
        self.by_user.get(uid).and_then(|k| k.get(&kind)).into_iter().flatten().map(String::as_str)
    }

    /// Whether `uid` interacted with `post` by `kind`.
    pub fn interacted(&self, uid: &str, post: &str, kind: Kind) -> bool {
        self.by_user.get(uid).and_then(|k| k.get(&kind)).is_some_and(|p| p.contains(post))
    }

    /// Whether `uid` interacted with `post` in any way.
    pub fn interacted_any(&self, uid: &str, post: &str) -> bool {
        self.by_user.get(uid).is_some_and(|k| k.values().any(|p| p.contains(post)))
    }

    /// The texts left on `post` by `kind`, with their authors.
    pub fn texts_on(&self, post: &str, kind: Kind) -> &[(String, String)] {
        self.texts.get(&(post.to_string(), kind)).map(Vec::as_slice).unwrap_or_default()
    }

    /// Posts that carry a text of `kind`, in id order.
    pub fn posts_with_texts(&self, kind: Kind) -> Vec<&str> {
        self.texts.keys().filter(|(_, k)| *k == kind).map(|(p, _)| p.as_str()).collect()
    }

    /// Every post a query may show, in id order.
    pub fn catalog(&self) -> Vec<&str> {
        let mut ids: Vec<&str> = self.posts.keys().map(String::as_str).collect();
        ids.sort_unstable();
        ids
    }

    /// A post's text as the catalog holds it.
    pub fn post_text(&self, post: &str) -> Option<&str> {
        self.posts.get(post).map(String::as_str)
    }
}

/// The posts a query may show, from the `ref_posts` rows of a world (or a
/// release's `all_posts.json`): post id → its text.
pub fn catalog(rows: &[RefPostRow]) -> HashMap<String, String> {
    rows.iter().map(|r| (r.post_id.clone(), Sources::post_text(&r.json))).collect()
}

/// Two texts say the same once whitespace is ignored.
pub fn same_text(a: &str, b: &str) -> bool {
    a.split_whitespace().eq(b.split_whitespace())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(lines: &str) -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("interactions.jsonl");
        std::fs::write(&path, lines).unwrap();
        (dir, path)
    }

    #[test]
    fn a_file_reads_every_kind_and_numbers_as_ids() {
        let (_d, path) = write(
            "{\"uid\": 1, \"post_id\": \"9\", \"kind\": \"like\"}\n\n{\"uid\": \"2\", \"post_id\": 9, \"kind\": \"comment\", \"text\": \"好\"}\n",
        );
        let read = read_jsonl(&path).unwrap();
        assert_eq!(read.len(), 2);
        assert_eq!(read[0], Interaction { uid: "1".into(), post_id: "9".into(), kind: Kind::Like, text: None });
        assert_eq!(read[1].text.as_deref(), Some("好"));
    }

    #[test]
    fn a_bad_line_is_refused_naming_its_line_and_field() {
        for (lines, at, says) in [
            ("{\"uid\": \"1\", \"post_id\": \"9\", \"kind\": \"like\"}\n{\"uid\": \"1\", \"kind\": \"like\"}", "line 2.post_id", "missing"),
            ("{\"uid\": \"1\", \"post_id\": \"9\", \"kind\": \"love\"}", "line 1.kind", "unknown kind"),
            ("{\"uid\": \"1\", \"post_id\": \"9\", \"kind\": \"comment\"}", "line 1.text", "missing"),
            ("{\"uid\": [1], \"post_id\": \"9\", \"kind\": \"like\"}", "line 1.uid", "found an array"),
            ("{\"uid\": \"1\", \"post_id\": \"9\", \"ki", "line 1", "not a JSON object"),
        ] {
            let (_d, path) = write(lines);
            let e = read_jsonl(&path).unwrap_err();
            assert_eq!(e.at, at, "{e}");
            assert!(e.message.contains(says), "{e}");
        }
    }

    #[test]
    fn interactions_on_posts_no_query_could_show_are_dropped() {
        let i = |uid: &str, post: &str| Interaction { uid: uid.into(), post_id: post.into(), kind: Kind::Like, text: None };
        let posts = HashMap::from([("9".to_string(), "a post".to_string())]);
        let index = Index::new(&[i("1", "9"), i("1", "8"), i("x", "9")], posts);
        assert_eq!(index.dropped, 1);
        assert!(index.interacted("1", "9", Kind::Like) && !index.interacted("1", "9", Kind::Comment));
        assert_eq!(index.users().collect::<Vec<_>>(), ["1"], "a non-numeric id is never a query's user");
    }
}
