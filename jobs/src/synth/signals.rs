//! How the world writes the evidence behind a label, and how likely each
//! kind of evidence is: the likelihood model the generator draws from and
//! the oracle reader ([`super::oracle`]) inverts.
//!
//! The rule throughout: whatever a reader could count without reading
//! (a subject's name, an emoticon, a comment's words, a verdict word, a
//! claim quoted verbatim) appears as often under one label as under the
//! other. What tells the labels apart is what the text says about it: the
//! user's stance toward a subject, the situation they describe, whose words
//! a quoted comment is, which report rates the claim as worded.

use rand::Rng;

use super::text::pick;

/// How many history posts speak to one engagement: sometimes none, so the
/// reader must fall back on what else it knows.
pub fn mentions<R: Rng>(rng: &mut R) -> usize {
    match rng.random_range(0..100) {
        0..8 => 0,
        8..50 => 1,
        _ => 2,
    }
}

/// The most history posts [`mentions`] asks for one engagement.
pub const MAX_MENTIONS: u64 = 2;

/// The forms a subject is written in: its name, its hashtag, its super
/// topic, and the name in a phrase.
pub fn subject_forms(subject: &str) -> [String; 4] {
    [subject.to_string(), format!("#{subject}#"), format!("{subject}超话"), format!("{subject}这个话题")]
}

pub fn subject_form<R: Rng>(rng: &mut R, subject: &str) -> String {
    let i = rng.random_range(0..4);
    subject_forms(subject).into_iter().nth(i).unwrap_or_default()
}

/// A user who engaged with a subject talks about it with attachment; some
/// lines carry words that sound negative ("输了", "不好") and some praise.
pub const ENGAGED: &[&str] = &[
    "又去看了{}，完全停不下来",
    "安利{}，不接受反驳",
    "为了{}熬夜也值得",
    "每天都要刷一遍{}的消息",
    "{}输了也支持，心疼",
    "有人说{}不好，我第一个不同意",
    "{}的新动态第一时间转给朋友了",
    "关于{}的一切我都想知道",
    "今天也在为{}打call",
    "存了好多{}的图，舍不得删",
];

/// A user who turned a subject down mentions it too, without attachment;
/// some lines carry words that sound positive ("好看", "火了", "安利").
pub const DISENGAGED: &[&str] = &[
    "又刷到{}，划走",
    "{}到底有什么好的，get不到",
    "大家都说{}好看，我是真没感觉",
    "首页全是{}，取关了几个博主",
    "对{}实在提不起兴趣",
    "{}的推送能不能少一点",
    "{}火了？不关心",
    "朋友安利{}，试了一下还是算了",
    "{}和我没什么关系，路过",
    "屏蔽了{}的关键词，清净了",
];

/// A user's reaction to a subject, by emotion (order of `EMOTION_WORDS`):
/// a situation, never one of the emotion words a lexicon would count.
pub const REACTIONS: &[&[&str]] = &[
    // 积极
    &[
        "{}的消息一出，立刻转给了全家人",
        "为了{}特意请了半天假",
        "等{}等了这么久，终于等到这一天",
        "{}这件事，值得记一辈子",
        "看完{}，晚饭多吃了一碗",
    ],
    // 愤怒
    &[
        "{}这种事还要发生多少次？",
        "{}的处理结果一出来，手机差点摔了",
        "{}必须给个说法，不能就这么算了",
        "{}的评论区我看一次怼一次",
        "为了{}连打了三次投诉电话",
    ],
    // 悲伤
    &[
        "看完{}的消息，一个人在阳台坐了很久",
        "想起{}，眼眶又湿了",
        "{}这件事之后，好几天没睡好",
        "翻出以前和{}有关的照片，一张张看",
        "{}让我想起了离开的外婆",
    ],
    // 恐惧
    &[
        "读到{}，晚上都不敢一个人出门",
        "{}这事，想想都后背发凉",
        "{}之后把门锁又检查了两遍",
        "{}会不会轮到我们这里",
        "关于{}，一整晚都在做噩梦",
    ],
    // 惊奇
    &["{}？？？我以为是假新闻", "完全想不到{}会是这样", "{}这个反转谁能猜到", "刷到{}，揉了三遍眼睛", "{}是真的？我愣在原地"],
    // 无情绪
    &["{}，转一下", "{}的通知，看到了", "存档：{}", "{}，已阅", "今天有{}的新闻，放这里"],
];

/// How often each emotion colours a user's everyday posts (order of
/// `EMOTION_WORDS`): a temperament independent of any query's label.
pub const TEMPERAMENT: &[u32] = &[30, 7, 20, 1, 12, 30];

/// Picks a temperament from [`TEMPERAMENT`].
pub fn temperament<R: Rng>(rng: &mut R) -> usize {
    let total: u32 = TEMPERAMENT.iter().sum();
    let mut x = rng.random_range(0..total);
    for (i, w) in TEMPERAMENT.iter().enumerate() {
        if x < *w {
            return i;
        }
        x -= w;
    }
    0
}

/// The share of everyday posts that carry the temperament's words.
pub const TEMPERED_SHARE: f64 = 0.3;

/// A comment the user wrote shows up in their own words; a comment someone
/// else wrote shows up quoted after `//@name:` in a repost. Both are cut
/// the same way so neither is easier to find.
pub fn fragment<R: Rng>(rng: &mut R, comment: &str) -> String {
    let chars: Vec<char> = comment.chars().collect();
    let n = chars.len();
    if n <= 8 {
        return comment.to_string();
    }
    let len = rng.random_range(n * 3 / 5..=n);
    let start = rng.random_range(0..=n - len);
    chars[start..start + len].iter().collect()
}

/// What a user writes before a quoted repost.
pub const REPOST_LEADS: &[&str] = &["", "哈哈", "同感", "mark", "是这样", "看看", "说得好", "路过"];

/// Leads of a user's own comment-like posts.
pub const OWN_LEADS: &[&str] = &["", "", "刚评论了：", "我说一句：", "又来了，"];

/// The quote marker of a repost.
pub const QUOTE: &str = "//@";

pub fn quoted_repost<R: Rng>(rng: &mut R, nickname: &str, fragment: &str) -> String {
    format!("{}{QUOTE}{nickname}:{fragment}", pick(rng, REPOST_LEADS))
}

pub fn own_comment<R: Rng>(rng: &mut R, fragment: &str) -> String {
    format!("{}{fragment}", pick(rng, OWN_LEADS))
}

/// MID: reports rating a claim agree with its label with this probability;
/// otherwise they pick one of the other two ratings.
pub const REPORT_AGREEMENT: f64 = 0.85;

/// MID: reports about the claim itself, one per claim at least.
pub const STANCE_REPORTS: u64 = 3;

/// MID: notes that quote the claim word for word but rate an altered
/// version of it; their rating says nothing about the claim's label.
pub const ALTERED_NOTES: u64 = 2;

/// The three ratings, in the order of [`VERDICTS`].
pub const RATINGS: &[&str] = &["true", "half", "false"];

/// Hedged verdicts per rating. Words a lexicon would read as a rating
/// ("accurate", "misleading", "context") cross the ratings.
pub const VERDICTS: &[&[&str]] = &[
    &[
        "On balance the record bears it out, though one figure was rounded.",
        "We found nothing that undercuts it; calling it misleading would be wrong.",
        "Independent data line up with it closely enough to stand.",
    ],
    &[
        "The core point has support, but the wording goes further than the evidence.",
        "It is accurate in part; the missing context changes what it implies.",
        "Some of it checks out and some of it does not.",
    ],
    &[
        "The evidence points the other way; it would be accurate only under assumptions nobody stated.",
        "None of the sources offered for it say this, whatever context is added.",
        "The numbers on record contradict it.",
    ],
];

/// The key words a report about `claim` names it by.
pub fn key_phrase(claim: &str) -> String {
    super::text::english_keywords(claim).into_iter().take(4).collect::<Vec<_>>().join(", ")
}

/// Opens a report about the claim itself: it paraphrases the claim by its
/// key words instead of quoting it.
pub fn stance_opening(outlet: &str, keywords: &str) -> String {
    format!("{outlet} examined a statement about {keywords} that has been shared widely.")
}

/// Opens a note about an altered version of the claim: it quotes the claim
/// exactly, then says the version it rates differs.
pub fn altered_opening(outlet: &str, claim: &str) -> String {
    format!(
        "{outlet} note: \"{claim}\" is how the statement reads now; this note rates an earlier, altered version of it, with different figures, not the statement as worded here."
    )
}

/// The marker the oracle reads to tell an altered-version note apart.
pub const ALTERED_MARK: &str = "this note rates an earlier, altered version";
