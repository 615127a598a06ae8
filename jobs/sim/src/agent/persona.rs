//! Personas: who an agent is.
//!
//! A persona starts as the short description of its source set (an OASIS
//! profile, a RecAgent user) and is enriched by the model into the paper's
//! fields ([`Profile`]): the basic information (name, age, gender,
//! nationality, personality, hobbies) and the three advanced attributes
//! (detailed historical behaviour, preferences for social media content,
//! knowledge). The advanced attributes are split into single-sentence
//! [`PersonaItem`]s for the dynamic persona (see [`crate::agent::dynamic`]).

use serde::{Deserialize, Serialize};

use crate::platform::ids::AgentId;

/// Which persona set a persona came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PersonaSource {
    /// OASIS `reddit_user_data_36.json`.
    OasisReddit,
    /// OASIS `twitter_user_all_id_time.csv`.
    OasisTwitter,
    /// RecAgent `user_1000.csv` / `user.csv`.
    Recagent,
}

impl PersonaSource {
    pub fn as_str(self) -> &'static str {
        match self {
            PersonaSource::OasisReddit => "oasis-reddit",
            PersonaSource::OasisTwitter => "oasis-twitter",
            PersonaSource::Recagent => "recagent",
        }
    }
}

/// One agent's persona.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Persona {
    pub id: AgentId,
    pub username: String,
    pub source: PersonaSource,
    /// The initial persona information: what enrichment starts from, and
    /// what the agent uses until it is enriched.
    pub description: String,
    /// Accounts this persona follows in its source's graph.
    pub following: Vec<AgentId>,
    /// Posts per hour of day in the source (OASIS Twitter), if known.
    /// Boxed, as the profile: a coordinator holds every agent's persona, and
    /// most personas have neither (a million inline would be 0.3 GB).
    pub hourly_activity: Option<Box<[u32; 24]>>,
    /// The enriched fields, once enrichment succeeded.
    pub profile: Option<Box<Profile>>,
}

/// The paper's enriched persona (its Appendix A output keys).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    pub name: String,
    pub age: u32,
    pub gender: String,
    pub nationality: String,
    pub personality: String,
    pub hobbies: String,
    #[serde(rename = "detailed historical behaviour information")]
    pub history: String,
    #[serde(rename = "preferences for social media content")]
    pub preferences: String,
    pub knowledge: String,
}

impl Profile {
    /// The JSON keys, in the order the paper lists them.
    pub const KEYS: [&'static str; 9] = [
        "name",
        "age",
        "gender",
        "nationality",
        "personality",
        "hobbies",
        "detailed historical behaviour information",
        "preferences for social media content",
        "knowledge",
    ];
}

/// Which advanced attribute an item belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Attribute {
    History,
    Preferences,
    Knowledge,
}

impl Attribute {
    pub const ALL: [Attribute; 3] = [Attribute::History, Attribute::Preferences, Attribute::Knowledge];

    /// The label used in prompts (the paper's key, capitalised).
    pub fn label(self) -> &'static str {
        match self {
            Attribute::History => "Detailed historical behaviour information",
            Attribute::Preferences => "Preferences for social media content",
            Attribute::Knowledge => "Knowledge",
        }
    }
}

/// One retrievable sentence of an advanced attribute.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PersonaItem {
    pub attribute: Attribute,
    pub text: String,
}

impl Persona {
    /// The advanced attributes split into sentences; empty until enriched.
    pub fn items(&self) -> Vec<PersonaItem> {
        let Some(p) = &self.profile else { return Vec::new() };
        let mut out = Vec::new();
        for (attribute, text) in
            [(Attribute::History, &p.history), (Attribute::Preferences, &p.preferences), (Attribute::Knowledge, &p.knowledge)]
        {
            out.extend(sentences(text).into_iter().map(|s| PersonaItem { attribute, text: s.to_string() }));
        }
        out
    }

    /// The basic information as a prompt line, or the initial description
    /// when the persona is not enriched.
    pub fn basic_text(&self) -> String {
        match &self.profile {
            Some(p) => format!(
                "Name: {}, age: {}, gender: {}, nationality: {}, personality: {}, hobbies: {}",
                p.name, p.age, p.gender, p.nationality, p.personality, p.hobbies
            ),
            None => self.description.clone(),
        }
    }

    /// Every field of the persona, as the prompts that use the whole persona
    /// (planning, topics) show it: the enriched JSON, or the description.
    pub fn full_text(&self) -> String {
        match &self.profile {
            Some(p) => serde_json::to_string(p).unwrap_or_else(|_| self.description.clone()),
            None => self.description.clone(),
        }
    }

    /// The text the knowledge boundary compares passages with.
    pub fn knowledge_text(&self) -> &str {
        self.profile.as_ref().map_or(self.description.as_str(), |p| p.knowledge.as_str())
    }

    /// The text persona-similarity metrics compare posts with: the paper's
    /// evaluation uses only personality, hobbies and content preferences.
    pub fn evaluation_text(&self) -> String {
        match &self.profile {
            Some(p) => format!("{} {} {}", p.personality, p.hobbies, p.preferences),
            None => self.description.clone(),
        }
    }
}

/// Splits text into sentences at `.`, `!` or `?` followed by whitespace.
/// Abbreviations like "Dr. Smith" split too; an item is retrieved by
/// similarity, so a split sentence only costs a little precision.
pub fn sentences(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if matches!(c, '.' | '!' | '?') && chars.peek().is_none_or(|(_, n)| n.is_whitespace()) {
            let end = i + c.len_utf8();
            let s = text[start..end].trim();
            if !s.is_empty() {
                out.push(s);
            }
            start = end;
        }
    }
    let tail = text[start..].trim();
    if !tail.is_empty() {
        out.push(tail);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_persona_holds_its_rare_parts_behind_pointers() {
        // A coordinator (and, in-process, its worker) holds a million.
        assert!(size_of::<Persona>() <= 96, "{} bytes", size_of::<Persona>());
    }

    #[test]
    fn sentences_split_at_terminal_punctuation() {
        assert_eq!(sentences("I run. I read books! Why? Version 2.5 is out"), ["I run.", "I read books!", "Why?", "Version 2.5 is out"]);
        assert!(sentences("  ").is_empty());
    }

    #[test]
    fn items_come_from_the_three_advanced_attributes() {
        let mut p = Persona {
            id: AgentId(1),
            username: "u".into(),
            source: PersonaSource::Recagent,
            description: "a nurse".into(),
            following: vec![],
            hourly_activity: None,
            profile: None,
        };
        assert!(p.items().is_empty());
        assert_eq!(p.basic_text(), "a nurse");
        p.profile = Some(Box::new(Profile {
            name: "Ana".into(),
            age: 34,
            gender: "Female".into(),
            nationality: "Spanish".into(),
            personality: "Calm".into(),
            hobbies: "Hiking".into(),
            history: "Ana hikes. She nurses.".into(),
            preferences: "Trail photos.".into(),
            knowledge: "Knows first aid.".into(),
        }));
        let items = p.items();
        assert_eq!(items.len(), 4);
        assert_eq!(items[2], PersonaItem { attribute: Attribute::Preferences, text: "Trail photos.".into() });
        assert_eq!(p.knowledge_text(), "Knows first aid.");
        assert_eq!(p.evaluation_text(), "Calm Hiking Trail photos.");
    }
}
