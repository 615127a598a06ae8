//! SMQ answers about a user's profile or post metadata (verification,
//! follower and following counts, device, region), read out of the answer
//! so the profile and the posts show the value the answer names. A field
//! the generator filled at random would make the tools contradict the
//! reference answer, and a correct reader would be marked wrong.

/// The all-China regions an answer may name, plus abroad.
pub const REGIONS: &[&str] = &[
    "北京",
    "天津",
    "上海",
    "重庆",
    "河北",
    "山西",
    "辽宁",
    "吉林",
    "黑龙江",
    "江苏",
    "浙江",
    "安徽",
    "福建",
    "江西",
    "山东",
    "河南",
    "湖北",
    "湖南",
    "广东",
    "海南",
    "四川",
    "贵州",
    "云南",
    "陕西",
    "甘肃",
    "青海",
    "台湾",
    "内蒙古",
    "广西",
    "西藏",
    "宁夏",
    "新疆",
    "香港",
    "澳门",
    "海外",
];

#[derive(Debug, Default, Clone, PartialEq)]
pub struct ProfileFacts {
    pub verified: Option<String>,
    pub followers: Option<i64>,
    pub friends: Option<i64>,
    pub device: Option<String>,
    pub regions: Vec<String>,
}

impl ProfileFacts {
    /// Takes in what an SMQ answer says of a profile field; false when the
    /// question asks about none (or about one post, which posts state).
    pub fn learn(&mut self, question: &str, answer: &str) -> bool {
        let facts = read(question, answer);
        let any = facts != ProfileFacts::default();
        if facts.verified.is_some() {
            self.verified = facts.verified;
        }
        self.followers = facts.followers.or(self.followers);
        self.friends = facts.friends.or(self.friends);
        if facts.device.is_some() {
            self.device = facts.device;
        }
        for r in facts.regions {
            if !self.regions.contains(&r) {
                self.regions.push(r);
            }
        }
        any
    }

    /// Timeline posts the facts need to show on (device and region are
    /// read off posts).
    pub fn posts(&self) -> u64 {
        if self.device.is_some() || !self.regions.is_empty() { 3 } else { 0 }
    }
}

/// The fields a question asks about, with the values its answer gives.
pub fn read(question: &str, answer: &str) -> ProfileFacts {
    let mut facts = ProfileFacts::default();
    // A question about one post ("哪一条…") is answered by that post.
    if question.contains("哪一条") || question.contains("哪条") {
        return facts;
    }
    if question.contains("认证") {
        facts.verified = verification(answer);
    }
    let asks = |field: &str| question.contains(&format!("{field}数")) || (question.contains("多少") && question.contains(field));
    let fields: Vec<(usize, bool)> = [("粉丝", true), ("关注", false)]
        .iter()
        .filter(|(f, _)| asks(f))
        .filter_map(|(f, followers)| question.find(f).map(|at| (at, *followers)))
        .collect::<std::collections::BTreeMap<_, _>>()
        .into_iter()
        .collect();
    let numbers = numbers(answer);
    if !fields.is_empty() && numbers.len() >= fields.len() {
        for ((_, followers), n) in fields.iter().zip(numbers) {
            if *followers {
                facts.followers = Some(n);
            } else {
                facts.friends = Some(n);
            }
        }
    }
    if question.contains("设备") || question.contains("客户端") {
        facts.device = device(answer);
    }
    if ["地区", "定位", "IP", "发布地点", "地理"].iter().any(|w| question.contains(w)) {
        facts.regions = regions(answer);
    }
    facts
}

/// Text inside “…” (or 「…」), in order.
fn quoted(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find(['“', '「']) {
        let after = &rest[open + 3..];
        let Some(close) = after.find(['”', '」']) else { break };
        let inner = after[..close].trim();
        if !inner.is_empty() {
            out.push(inner.to_string());
        }
        rest = &after[close + 3..];
    }
    out
}

fn trim_end(text: &str) -> &str {
    text.trim().trim_end_matches(['。', '”', '"', '.', '」', ' '])
}

fn verification(answer: &str) -> Option<String> {
    let quoted = quoted(answer);
    if !quoted.is_empty() {
        return Some(quoted.join(" "));
    }
    let mut value = trim_end(answer);
    for prefix in ["该用户的认证信息为", "用户认证信息为", "该用户认证为", "认证身份为", "认证信息为", "该用户是", "该用户为"]
    {
        if let Some(rest) = value.strip_prefix(prefix) {
            value = rest;
        }
    }
    let value = value.split(['，', '。']).next().unwrap_or_default().trim();
    (!value.is_empty() && value.chars().count() <= 60).then(|| value.to_string())
}

fn numbers(text: &str) -> Vec<i64> {
    let mut out = Vec::new();
    let mut digits = String::new();
    for c in text.chars().chain(std::iter::once(' ')) {
        if c.is_ascii_digit() {
            digits.push(c);
        } else if c != ',' || digits.is_empty() {
            if let Ok(n) = digits.parse() {
                out.push(n);
            }
            digits.clear();
        }
    }
    out
}

fn device(answer: &str) -> Option<String> {
    if let Some(q) = quoted(answer).into_iter().next() {
        return Some(q);
    }
    for lead in ["使用", "通过"] {
        if let Some(at) = answer.find(lead) {
            let rest = &answer[at + lead.len()..];
            let end = rest.find(['，', '。', '、']).unwrap_or(rest.len());
            let name = rest[..end].split("设备").next().unwrap_or_default().split("发布").next().unwrap_or_default().trim();
            if !name.is_empty() && name.chars().count() <= 30 {
                return Some(name.to_string());
            }
        }
    }
    let value = trim_end(answer);
    (!value.is_empty() && value.chars().count() <= 24 && !value.contains('，')).then(|| value.to_string())
}

fn regions(answer: &str) -> Vec<String> {
    let mut found: Vec<(usize, &str)> = REGIONS.iter().filter_map(|r| answer.find(r).map(|at| (at, *r))).collect();
    found.sort();
    found.into_iter().map(|(_, r)| r.to_string()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_give_up_their_fields() {
        let f = read("用户ID为1的用户微博粉丝数和关注数分别是多少？", "为7258，关注数为625。");
        assert_eq!((f.followers, f.friends), (Some(7258), Some(625)));
        let f = read("用户ID为1的用户关注了多少人？他的粉丝数是多少？", "关注了84人，他的粉丝数为1215。");
        assert_eq!((f.followers, f.friends), (Some(1215), Some(84)));
        let f = read("用户ID为1的用户拥有哪些微博认证头衔？", "“娱乐博主”“超话粉丝大咖（TFBOYS超话）”和“微博原创视频博主”。");
        assert_eq!(f.verified.as_deref(), Some("娱乐博主 超话粉丝大咖（TFBOYS超话） 微博原创视频博主"));
        let f = read("用户ID为1的用户在微博上认证的身份是什么？", "超话粉丝钻咖（虞书欣超话）”。");
        assert_eq!(f.verified.as_deref(), Some("超话粉丝钻咖（虞书欣超话）"));
        let f = read(
            "用户ID为1的用户微博的发布设备和定位地点有何特征？",
            "所有微博均通过HUAWEI Mate 50 Pro设备发布，且定位地点均显示为黑龙江。",
        );
        assert_eq!((f.device.as_deref(), f.regions.as_slice()), (Some("HUAWEI Mate 50 Pro"), &["黑龙江".to_string()][..]));
        let f = read("用户ID为1的用户最常使用的设备是什么？", "iPhone 14");
        assert_eq!(f.device.as_deref(), Some("iPhone 14"));
        assert_eq!(read("用户ID为1的用户发布的微博中，哪一条来自非山东地区的IP定位？", "微博ID为5发布于吉林"), ProfileFacts::default());
        assert_eq!(read("用户ID为1的用户是否是徐明浩的粉丝？", "是的。"), ProfileFacts::default());
    }
}
