//! Choosing agents of a run by who they are: the interview's `--agents`.
//!
//! A selector is one of
//! - `all`, `initial` or `regular`;
//! - ids and ranges, `3`, `0-9,20,31-40` (inclusive);
//! - `share:F`, a share of the agents drawn by a hash of the run's seed and
//!   each id, so the same run and share always give the same agents;
//! - `FIELD=TEXT`, agents whose persona field (`name`, `age`, `gender`,
//!   `nationality`, `personality`, `hobbies`, `username`, `description`)
//!   contains TEXT, ignoring case (`age=` takes a number or a range).

use some_schemas::sim::AgentKind;

use crate::agent::persona::Persona;

/// Which agents of a run.
#[derive(Debug, Clone, PartialEq)]
pub enum Selector {
    All,
    Kind(AgentKind),
    /// Inclusive id ranges.
    Ids(Vec<(u32, u32)>),
    Share(f64),
    Field {
        field: Field,
        text: String,
    },
}

/// A persona field a selector can match.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    Name,
    Age,
    Gender,
    Nationality,
    Personality,
    Hobbies,
    Username,
    Description,
}

impl Field {
    const NAMES: [(&'static str, Field); 8] = [
        ("name", Field::Name),
        ("age", Field::Age),
        ("gender", Field::Gender),
        ("nationality", Field::Nationality),
        ("personality", Field::Personality),
        ("hobbies", Field::Hobbies),
        ("username", Field::Username),
        ("description", Field::Description),
    ];

    /// The field's value; `None` for an enriched field of a persona that
    /// was not enriched.
    fn value(self, p: &Persona) -> Option<String> {
        let profile = p.profile.as_ref();
        Some(match self {
            Field::Username => p.username.clone(),
            Field::Description => p.description.clone(),
            Field::Name => profile?.name.clone(),
            Field::Age => profile?.age.to_string(),
            Field::Gender => profile?.gender.clone(),
            Field::Nationality => profile?.nationality.clone(),
            Field::Personality => profile?.personality.clone(),
            Field::Hobbies => profile?.hobbies.clone(),
        })
    }
}

fn ids(s: &str) -> Option<Vec<(u32, u32)>> {
    s.split(',')
        .map(|part| {
            let part = part.trim();
            match part.split_once('-') {
                Some((a, b)) => Some((a.trim().parse().ok()?, b.trim().parse().ok()?)).filter(|(a, b)| a <= b),
                None => part.parse().ok().map(|n| (n, n)),
            }
        })
        .collect()
}

impl Selector {
    pub fn parse(s: &str) -> Result<Selector, String> {
        let s = s.trim();
        match s {
            "all" => return Ok(Selector::All),
            "initial" => return Ok(Selector::Kind(AgentKind::Initial)),
            "regular" => return Ok(Selector::Kind(AgentKind::Regular)),
            _ => {}
        }
        if let Some(share) = s.strip_prefix("share:") {
            return match share.parse::<f64>() {
                Ok(f) if f > 0.0 && f <= 1.0 => Ok(Selector::Share(f)),
                _ => Err(format!("agents {s:?}: a share is a number above 0 and at most 1")),
            };
        }
        if let Some((name, text)) = s.split_once('=') {
            let field = Field::NAMES.iter().find(|(n, _)| *n == name.trim()).map(|(_, f)| *f).ok_or_else(|| {
                let names: Vec<&str> = Field::NAMES.iter().map(|(n, _)| *n).collect();
                format!("agents {s:?}: unknown persona field {name:?} (one of {})", names.join(", "))
            })?;
            if field == Field::Age && ids(text).is_none() {
                return Err(format!("agents {s:?}: age takes a number or a range, as age=30-39"));
            }
            return Ok(Selector::Field { field, text: text.trim().to_lowercase() });
        }
        ids(s)
            .map(Selector::Ids)
            .ok_or_else(|| format!("agents {s:?}: expected all, initial, regular, ids and ranges (0-9,20), share:F or FIELD=TEXT"))
    }

    /// Whether it reads only what an agent has before setup (ids, kind,
    /// share, username, description), not the enriched fields.
    pub fn before_setup(&self) -> bool {
        !matches!(self, Selector::Field { field, .. } if !matches!(field, Field::Username | Field::Description))
    }

    /// Whether the agent `persona` of kind `kind`, in a run seeded `seed`, is chosen.
    pub fn matches(&self, persona: &Persona, kind: AgentKind, seed: u64) -> bool {
        let id = persona.id.0;
        match self {
            Selector::All => true,
            Selector::Kind(k) => *k == kind,
            Selector::Ids(ranges) => ranges.iter().any(|(a, b)| (*a..=*b).contains(&id)),
            Selector::Share(f) => draw(seed, id) < *f,
            Selector::Field { field: Field::Age, text } => {
                let age = persona.profile.as_ref().map(|p| p.age);
                age.is_some_and(|age| ids(text).unwrap_or_default().iter().any(|(a, b)| (*a..=*b).contains(&age)))
            }
            Selector::Field { field, text } => field.value(persona).is_some_and(|v| v.to_lowercase().contains(text.as_str())),
        }
    }
}

/// Salts the share's draw apart from the activation draws of the same seed.
const SHARE_SALT: u64 = 0x5e1e_c7ed_a9e7_5000;

fn draw(seed: u64, id: u32) -> f64 {
    crate::agent::activity::draw(seed ^ SHARE_SALT, crate::platform::ids::AgentId(id), crate::platform::ids::Turn(0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::test_model::{persona, sarah};

    #[test]
    fn selectors_parse_and_choose_by_id_kind_share_and_field() {
        let s = Selector::parse("0-2, 7").unwrap();
        let chosen: Vec<u32> = (0..10).filter(|i| s.matches(&persona(*i, "x"), AgentKind::Regular, 0)).collect();
        assert_eq!(chosen, [0, 1, 2, 7]);
        assert!(Selector::parse("initial").unwrap().matches(&persona(1, "x"), AgentKind::Initial, 0));
        assert!(!Selector::parse("regular").unwrap().matches(&persona(1, "x"), AgentKind::Initial, 0));
        let half = Selector::parse("share:0.5").unwrap();
        let n = (0..1000).filter(|i| half.matches(&persona(*i, "x"), AgentKind::Regular, 9)).count();
        assert!((430..570).contains(&n), "{n} of 1000");
        let again = (0..1000).filter(|i| half.matches(&persona(*i, "x"), AgentKind::Regular, 9)).count();
        assert_eq!(n, again, "the same seed draws the same agents");
        let sarah = sarah();
        assert!(Selector::parse("nationality=canad").unwrap().matches(&sarah, AgentKind::Regular, 0));
        assert!(Selector::parse("age=20-29").unwrap().matches(&sarah, AgentKind::Regular, 0));
        assert!(!Selector::parse("age=30").unwrap().matches(&sarah, AgentKind::Regular, 0));
        assert!(!Selector::parse("gender=female").unwrap().matches(&persona(3, "x"), AgentKind::Regular, 0), "not enriched");
        assert!(Selector::parse("description=dog").unwrap().before_setup() && !Selector::parse("gender=f").unwrap().before_setup());
        for bad in ["share:0", "share:2", "colour=red", "age=old", "5-2", "some"] {
            assert!(Selector::parse(bad).is_err(), "{bad}");
        }
    }
}
