//! Text makers for synthetic posts and reports: cheap (a few picks and one
//! allocation per post), deterministic for a given generator state.

use rand::Rng;
use rand::seq::IndexedRandom;

use super::lexicon::*;

/// Picks one item; the lists are static and never empty.
pub fn pick<'a, R: Rng>(rng: &mut R, items: &'a [&'a str]) -> &'a str {
    items.choose(rng).copied().unwrap_or_default()
}

/// Fills the single `{}` of a template.
pub fn fill_blank(template: &str, value: &str) -> String {
    template.replacen("{}", value, 1)
}

pub fn nickname<R: Rng>(rng: &mut R) -> String {
    let mut s = String::with_capacity(16);
    s.push_str(pick(rng, NICK_HEADS));
    s.push_str(pick(rng, NICK_BODIES));
    if rng.random_bool(0.5) {
        s.push_str(&rng.random_range(1..1000).to_string());
    }
    s
}

/// A remark about a subject of a category, sometimes with an emoticon.
pub fn remark<R: Rng>(rng: &mut R, category: &Category, subject: &str, emoticons: &[&str]) -> String {
    let mut s = fill_blank(pick(rng, category.remarks), subject);
    if !emoticons.is_empty() && rng.random_bool(0.4) {
        s.push_str(pick(rng, emoticons));
    }
    s
}

/// A post about nothing in particular, optionally naming a place.
pub fn chatter<R: Rng>(rng: &mut R, place: Option<&str>, emoticons: &[&str]) -> String {
    let mut s = match place {
        Some(p) => fill_blank(pick(rng, PLACE_CHATTER), p),
        None => pick(rng, CHATTER).to_string(),
    };
    if !emoticons.is_empty() && rng.random_bool(0.3) {
        s.push_str(pick(rng, emoticons));
    }
    s
}

/// Noise of a topic collection: mostly reactions to the topic, some
/// unrelated remarks, chatter and spam.
pub fn topic_noise<R: Rng>(rng: &mut R, topic: &str) -> String {
    match rng.random_range(0..10) {
        0..=6 => fill_blank(pick(rng, TOPIC_REACTIONS), topic),
        7 => {
            let category = CATEGORIES.choose(rng).expect("categories");
            let subject = pick(rng, category.subjects);
            remark(rng, category, subject, EMOTICONS)
        }
        8 => pick(rng, SPAM).to_string(),
        _ => chatter(rng, None, EMOTICONS),
    }
}

/// Common words and the words a post may say them with instead.
const REWORDINGS: &[(&str, &str)] = &[
    ("表示", "称"),
    ("宣布", "公布"),
    ("目前", "眼下"),
    ("已经", "已"),
    ("进行", "开展"),
    ("因为", "由于"),
    ("但是", "不过"),
    ("随后", "之后"),
    ("发布", "发出"),
    ("要求", "要"),
    ("引发", "引起"),
    ("相关", "有关"),
    ("通过", "经由"),
    ("事件", "事"),
];

const LEADS: &[&str] = &["", "据说", "听说", "有消息称，", "最新：", "刚看到，", "据网友说，", "转：", "整理一下："];
const TAILS: &[&str] = &["", "", "大家怎么看？", "[吃瓜]", "持续关注。", "。"];

/// A fact in a post's words: common words swapped, clauses turned round,
/// a lead-in and a tail; never the fact's sentence verbatim.
pub fn paraphrase<R: Rng>(rng: &mut R, fact: &str) -> String {
    let core = fact.trim().trim_end_matches(['。', '！', '？', '；']);
    let mut text = core.to_string();
    for (from, to) in REWORDINGS {
        if text.contains(from) && rng.random_bool(0.7) {
            text = text.replacen(from, to, 1);
        }
    }
    let clauses: Vec<&str> = text.split('，').filter(|c| !c.is_empty()).collect();
    if clauses.len() >= 3 && rng.random_bool(0.5) {
        // The second clause first: "A，B，C" becomes "B，A，C".
        let mut turned = clauses.clone();
        turned.swap(0, 1);
        text = turned.join("，");
    }
    if text.contains(core) {
        // Nothing changed inside: cut the end off, as a post that trails away.
        let chars: Vec<char> = text.chars().collect();
        let keep = (chars.len() * 17 / 20).max(1).min(chars.len().saturating_sub(1)).max(1);
        text = chars[..keep].iter().collect::<String>() + "……";
    }
    format!("{}{text}{}", pick(rng, LEADS), pick(rng, TAILS))
}

/// Splits a reference text (markdown) into plain fact sentences.
pub fn fact_sentences(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.trim().trim_start_matches(['#', '-', '*', '>', ' ']).trim();
        let line = strip_list_number(line).replace("**", "");
        for sentence in line.split_inclusive(['。', '；', '！', '？']) {
            let s = sentence.trim();
            // Headings and fragments carry no fact worth a post.
            if s.chars().count() >= 12 {
                out.push(s.to_string());
            }
        }
    }
    out
}

fn strip_list_number(line: &str) -> &str {
    let digits = line.bytes().take_while(u8::is_ascii_digit).count();
    if digits > 0 && line[digits..].starts_with(['.', '、']) {
        return line[digits + 1..].trim_start();
    }
    line
}

/// The first `YYYY年M月D日` date in a text.
pub fn first_date(text: &str) -> Option<chrono::NaiveDate> {
    let chars: Vec<char> = text.chars().collect();
    for i in 0..chars.len() {
        let number = |start: usize, max: usize| -> Option<(u32, usize)> {
            let digits: String = chars[start..].iter().take(max).take_while(|c| c.is_ascii_digit()).collect();
            if digits.is_empty() { None } else { Some((digits.parse().ok()?, start + digits.len())) }
        };
        let Some((year, j)) = number(i, 4) else { continue };
        if j - i != 4 || chars.get(j) != Some(&'年') {
            continue;
        }
        let Some((month, k)) = number(j + 1, 2) else { continue };
        if chars.get(k) != Some(&'月') {
            continue;
        }
        let day = number(k + 1, 2).filter(|(_, l)| chars.get(*l) == Some(&'日')).map_or(1, |(d, _)| d);
        if let Some(date) = chrono::NaiveDate::from_ymd_opt(year as i32, month, day) {
            return Some(date);
        }
    }
    None
}

/// The bracketed emoticons in a text (`[抱一抱]`).
pub fn emoticons_in(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find('[') {
        let Some(close) = rest[open..].find(']') else { break };
        let e = &rest[open..open + close + 1];
        if e.chars().count() <= 8 {
            out.push(e.to_string());
        }
        rest = &rest[open + close + 1..];
    }
    out
}

/// Content words of an English sentence, for retrieval-friendly reports.
pub fn english_keywords(text: &str) -> Vec<String> {
    const STOP: &[&str] = &[
        "that", "this", "with", "from", "have", "has", "were", "will", "would", "about", "than", "they", "their", "there", "says", "said",
        "more", "most", "over", "into", "only", "been", "just", "when", "what", "which", "while", "because",
    ];
    let mut out: Vec<String> = Vec::new();
    for w in text.split(|c: char| !c.is_alphanumeric() && c != '\'') {
        let w = w.trim_matches('\'');
        if w.len() > 3 && !STOP.contains(&w.to_lowercase().as_str()) && !out.iter().any(|o| o.eq_ignore_ascii_case(w)) {
            out.push(w.to_string());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn facts_come_out_of_markdown_without_its_marks() {
        let facts = fact_sentences("### 背景\n1. **案件背景**：四川成都一名女子在两年内被前夫家暴多达16次。随后她报警求助。\n- 短句。");
        assert_eq!(facts, vec!["案件背景：四川成都一名女子在两年内被前夫家暴多达16次。".to_string()]);
    }

    #[test]
    fn paraphrases_keep_the_fact_but_not_its_sentence() {
        use rand::SeedableRng;
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
        for fact in ["警方表示，目前已经进行调查，结果将随后公布。", "四川成都一名女子在两年内被前夫家暴多达16次。"]
        {
            for _ in 0..50 {
                let p = paraphrase(&mut rng, fact);
                assert!(!p.contains(fact.trim_end_matches('。')), "{fact} kept verbatim in {p}");
            }
        }
    }

    #[test]
    fn dates_and_emoticons_are_found() {
        assert_eq!(first_date("于2025年1月20日发布"), chrono::NaiveDate::from_ymd_opt(2025, 1, 20));
        assert_eq!(first_date("2024年10月"), chrono::NaiveDate::from_ymd_opt(2024, 10, 1));
        assert_eq!(first_date("无日期"), None);
        assert_eq!(emoticons_in("好幸福[抱一抱]啊[心]"), vec!["[抱一抱]", "[心]"]);
        assert_eq!(
            english_keywords("Building a wall on the U.S.-Mexico border will take years."),
            vec!["Building", "wall", "Mexico", "border", "take", "years"]
        );
    }
}
