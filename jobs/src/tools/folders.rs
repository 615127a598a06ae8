//! DataFolder: the per-episode store every search tool writes into and
//! `data_folder` reads from, with the reference's re-read suppression and
//! read budget.
//!
//! Where the reference is buggy the fix is the default and the reference
//! behaviour is kept behind `reference_quirks`:
//! - re-read suppression: the reference's range subtraction appends the
//!   pieces of a split range at the end of its list, so unread pieces can
//!   be shown out of order (`[0, 30)` after `[10, 20)` and `[2, 4)` shows
//!   20-30, then 0-2, then 4-10); the fix shows them in index order;
//! - cluster display: the reference shows only cluster `start_idx`; the fix
//!   shows clusters `start_idx..end_idx`;
//! - summary display: the reference checks the index against the slice, so
//!   only reads from 0 succeed; the fix checks against the whole list;
//! - id folders (`…_idx`, `…_cluster_key`) have no display in the reference
//!   (a `KeyError`); the fix lists the ids;
//! - user posts: the reference hides `pic_num`, `pictures` and `video` by
//!   their source names after renaming them, so they still show; the fix
//!   hides them.

use std::collections::HashMap;

use super::ToolError;

/// One displayed item: ordered `(key, value)` pairs.
pub type Record = Vec<(&'static str, String)>;

/// How a folder of posts is displayed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PostStyle {
    /// `post_search`: values cut to 512 characters.
    Stream,
    /// `topic_search`, `post_retrieve`: everything.
    Topic,
    /// `user_search`: picture and video fields hidden.
    Timeline,
}

/// What a folder holds.
#[derive(Debug, Clone, PartialEq)]
pub enum FolderData {
    /// Posts, with the `posts` bucket and id of each (for vector lookups).
    Posts { style: PostStyle, records: Vec<Record>, keys: Vec<(String, String)> },
    /// A list of ids (`…_idx`, `…_cluster_key`).
    Ids(Vec<String>),
    /// Clusters of posts, in cluster id order.
    Clusters(Vec<Vec<Record>>),
    /// Event summaries (`…_summarization`).
    Events(Vec<Record>),
}

impl FolderData {
    pub fn len(&self) -> usize {
        match self {
            FolderData::Posts { records, .. } | FolderData::Events(records) => records.len(),
            FolderData::Ids(ids) => ids.len(),
            FolderData::Clusters(c) => c.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The read budget after which every read carries a warning.
pub const READ_WARNING_AT: i64 = 100;
const READ_WARNING: &str = "\n\n***读取的数据过多，请尽快结束推理，避免读取数据。***";
const ALREADY_READ: &str = "***该数据已读取过，请查看历史输出***";

/// The folders of one episode.
#[derive(Debug, Clone, Default)]
pub struct Folders {
    folders: HashMap<String, FolderData>,
    read_record: HashMap<String, Vec<(i64, i64)>>,
    read_count: i64,
}

pub fn missing_folder(name: &str) -> ToolError {
    ToolError::value(format!("文件夹'{name}'不存在。请先创建文件夹或检查名称是否正确。"))
}

impl Folders {
    pub fn insert(&mut self, name: impl Into<String>, data: FolderData) {
        self.folders.insert(name.into(), data);
    }

    pub fn get(&self, name: &str) -> Option<&FolderData> {
        self.folders.get(name)
    }

    pub fn read_count(&self) -> i64 {
        self.read_count
    }

    /// `data_folder(folder_name, start_idx, end_idx)`.
    pub fn read(&mut self, name: &str, start: i64, end: i64, quirks: bool) -> Result<String, ToolError> {
        let data = self.folders.get(name).ok_or_else(|| missing_folder(name))?;
        if quirks && matches!(data, FolderData::Ids(_)) {
            return Err(ToolError::new("KeyError", format!("'{name}'")));
        }
        let recorded = self.read_record.entry(name.to_string()).or_default();
        let valid = if quirks { reference_valid_ranges(start, end, recorded) } else { valid_ranges(start, end, recorded) };
        if valid.is_empty() {
            return Ok(ALREADY_READ.to_string());
        }
        let mut out = String::new();
        for (s, e) in valid {
            out.push_str(&show(data, s, e, quirks)?);
            out.push('\n');
            self.read_count += e - s;
            recorded.push((s, e));
        }
        if self.read_count >= READ_WARNING_AT {
            out.push_str(READ_WARNING);
        }
        Ok(out)
    }
}

/// `[start, end)` minus every recorded range, left to right, empty pieces dropped.
fn valid_ranges(start: i64, end: i64, recorded: &[(i64, i64)]) -> Vec<(i64, i64)> {
    let mut pieces = vec![(start, end)];
    for &(rs, re) in recorded {
        pieces = pieces
            .into_iter()
            .flat_map(|(s, e)| {
                if re <= s || rs >= e {
                    return vec![(s, e)];
                }
                [(s, rs.min(e)), (re.max(s), e)].into_iter().filter(|(a, b)| a < b).collect()
            })
            .collect();
    }
    pieces
}

/// The reference's subtraction, empty pieces and all (see the module doc).
fn reference_valid_ranges(start: i64, end: i64, recorded: &[(i64, i64)]) -> Vec<(i64, i64)> {
    let mut valid = vec![Some((start, end))];
    for &(si, ei) in recorded {
        loop {
            let mut edited = false;
            for j in 0..valid.len() {
                let Some((vsi, vei)) = valid[j] else { continue };
                if vsi >= si && ei >= vei {
                    valid[j] = None;
                } else if vsi <= si && ei <= vei {
                    valid[j] = None;
                    valid.push(Some((vsi, si)));
                    valid.push(Some((ei, vei)));
                } else if vsi <= si && ei >= vei && si < vei {
                    valid[j] = Some((vsi, si));
                } else if vsi >= si && ei <= vei && vsi < ei {
                    valid[j] = Some((ei, vei));
                } else {
                    continue;
                }
                edited = true;
                break;
            }
            valid.retain(Option::is_some);
            if !edited {
                break;
            }
        }
    }
    valid.into_iter().flatten().collect()
}

fn check_range(start: i64, end: i64, len: usize) -> Result<(), ToolError> {
    if start < 0 {
        return Err(ToolError::value("起始索引不能小于0。"));
    }
    if end > len as i64 {
        return Err(ToolError::value(format!("结束索引不能超过帖子列表的长度{len}。")));
    }
    if start >= end {
        return Err(ToolError::value("起始索引必须小于结束索引。"));
    }
    Ok(())
}

const NO_POSTS: &str = "没有找到符合条件的帖子。";

/// Renders records `[start, end)` as `帖子 i:` blocks.
pub fn show_posts(records: &[Record], start: i64, end: i64, style: PostStyle, quirks: bool) -> Result<String, ToolError> {
    if records.is_empty() {
        return Ok(NO_POSTS.to_string());
    }
    check_range(start, end, records.len())?;
    let hidden: &[&str] = match (style, quirks) {
        (PostStyle::Timeline, true) => &["id", "rca_list"],
        (PostStyle::Timeline, false) => &["id", "rca_list", "图片数量", "图片", "视频"],
        _ => &[],
    };
    let mut out = String::new();
    for i in start..end {
        out.push_str(&format!("帖子 {}:\n", i + 1));
        for (key, value) in &records[i as usize] {
            if hidden.contains(key) {
                continue;
            }
            let value = if style == PostStyle::Stream { truncate(value, 512) } else { value.as_str() };
            out.push_str(&format!("***{key}***: {value}\n"));
        }
        out.push('\n');
    }
    Ok(out.trim().to_string())
}

/// The first `n` characters (not bytes).
pub fn truncate(text: &str, n: usize) -> &str {
    text.char_indices().nth(n).map_or(text, |(i, _)| &text[..i])
}

fn show(data: &FolderData, start: i64, end: i64, quirks: bool) -> Result<String, ToolError> {
    match data {
        FolderData::Posts { style, records, .. } => show_posts(records, start, end, *style, quirks),
        FolderData::Ids(ids) => {
            if ids.is_empty() {
                return Ok(NO_POSTS.to_string());
            }
            check_range(start, end, ids.len())?;
            Ok((start..end).map(|i| format!("{}. {}", i + 1, ids[i as usize])).collect::<Vec<_>>().join("\n"))
        }
        FolderData::Clusters(clusters) => show_clusters(clusters, start, end, quirks),
        FolderData::Events(events) => show_events(events, start, end, quirks),
    }
}

/// At most this many posts of a cluster are shown, as in the reference.
const CLUSTER_POSTS_SHOWN: usize = 5;

fn cluster_posts(cluster: &[Record], out: &mut String) {
    for (i, post) in cluster.iter().take(CLUSTER_POSTS_SHOWN).enumerate() {
        out.push_str(&format!("帖子 {}:\n", i + 1));
        for (key, value) in post {
            out.push_str(&format!("***{key}***: {value}\n"));
        }
        out.push('\n');
    }
}

fn show_clusters(clusters: &[Vec<Record>], start: i64, end: i64, quirks: bool) -> Result<String, ToolError> {
    if clusters.is_empty() {
        return Ok(NO_POSTS.to_string());
    }
    let mut out = String::new();
    if quirks {
        let Some(cluster) = usize::try_from(start).ok().and_then(|s| clusters.get(s)) else {
            return Err(ToolError::new("IndexError", "list index out of range"));
        };
        cluster_posts(cluster, &mut out);
        return Ok(out);
    }
    check_range(start, end, clusters.len())?;
    for i in start..end {
        let cluster = &clusters[i as usize];
        out.push_str(&format!("聚类 {}（共 {} 条帖子）:\n", i + 1, cluster.len()));
        cluster_posts(cluster, &mut out);
    }
    Ok(out.trim_end().to_string())
}

fn show_events(events: &[Record], start: i64, end: i64, quirks: bool) -> Result<String, ToolError> {
    if events.is_empty() {
        return Ok("没有找到符合条件的话题。".to_string());
    }
    let shown: &[Record] = if quirks {
        let lo = start.clamp(0, events.len() as i64) as usize;
        let hi = end.clamp(lo as i64, events.len() as i64) as usize;
        let slice = &events[lo..hi];
        check_range(start, end, slice.len())?;
        slice
    } else {
        check_range(start, end, events.len())?;
        &events[start as usize..end as usize]
    };
    let mut out = String::new();
    for (i, event) in shown.iter().enumerate() {
        let n = if quirks { i as i64 + 1 } else { start + i as i64 + 1 };
        out.push_str(&format!("事件 {n}:\n"));
        for (key, value) in event {
            out.push_str(&format!("***{key}***: {value}\n"));
        }
        out.push('\n');
    }
    Ok(if quirks { out } else { out.trim_end().to_string() })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn posts(n: usize) -> FolderData {
        let records = (0..n).map(|i| vec![("内容", format!("p{i}"))]).collect();
        FolderData::Posts { style: PostStyle::Topic, records, keys: (0..n).map(|i| ("b".into(), format!("{i}"))).collect() }
    }

    #[test]
    fn rereads_are_suppressed_and_the_budget_warns() {
        let mut f = Folders::default();
        f.insert("t", posts(150));
        assert_eq!(f.read("t", 0, 2, false).unwrap(), "帖子 1:\n***内容***: p0\n\n帖子 2:\n***内容***: p1\n");
        assert_eq!(f.read("t", 0, 2, false).unwrap(), ALREADY_READ);
        // Only the unread part of an overlapping read is shown.
        assert_eq!(f.read("t", 1, 3, false).unwrap(), "帖子 3:\n***内容***: p2\n");
        let out = f.read("t", 0, 120, false).unwrap();
        assert!(out.starts_with("帖子 4:") && out.ends_with(READ_WARNING), "{}", &out[..20]);
        assert_eq!(f.read_count(), 120);
    }

    #[test]
    fn the_reference_shows_split_pieces_out_of_order() {
        let read = |quirks: bool| {
            let mut f = Folders::default();
            f.insert("t", posts(30));
            f.read("t", 10, 20, quirks).unwrap();
            f.read("t", 2, 4, quirks).unwrap();
            let out = f.read("t", 0, 30, quirks).unwrap();
            out.lines().filter(|l| l.starts_with("帖子")).map(|l| l.to_string()).collect::<Vec<_>>()
        };
        assert_eq!(read(false)[..3], ["帖子 1:", "帖子 2:", "帖子 5:"]);
        assert_eq!(read(true)[..3], ["帖子 21:", "帖子 22:", "帖子 23:"]);
    }

    #[test]
    fn reference_ranges_split_like_the_reference() {
        assert_eq!(reference_valid_ranges(0, 30, &[(10, 20)]), vec![(0, 10), (20, 30)]);
        assert_eq!(reference_valid_ranges(0, 30, &[(10, 20), (2, 4)]), vec![(20, 30), (0, 2), (4, 10)]);
        assert_eq!(reference_valid_ranges(0, 20, &[(0, 10)]), vec![(10, 20)]);
        assert_eq!(reference_valid_ranges(5, 15, &[(0, 10)]), vec![(10, 15)]);
        assert_eq!(reference_valid_ranges(0, 10, &[(5, 20)]), vec![(0, 5)]);
        assert_eq!(valid_ranges(0, 30, &[(10, 20), (2, 4)]), vec![(0, 2), (4, 10), (20, 30)]);
    }

    #[test]
    fn bad_ranges_and_unknown_folders_are_errors() {
        let mut f = Folders::default();
        f.insert("t", posts(3));
        assert_eq!(f.read("t", -1, 2, false).unwrap_err().to_string(), "ValueError: 起始索引不能小于0。");
        assert_eq!(f.read("t", 0, 9, false).unwrap_err().to_string(), "ValueError: 结束索引不能超过帖子列表的长度3。");
        assert_eq!(f.read("t", 2, 2, false).unwrap_err().to_string(), "ValueError: 起始索引必须小于结束索引。");
        assert_eq!(f.read("x", 0, 1, false).unwrap_err().to_string(), "ValueError: 文件夹'x'不存在。请先创建文件夹或检查名称是否正确。");
        f.insert("ids", FolderData::Ids(vec!["a".into(), "b".into()]));
        assert_eq!(f.read("ids", 0, 2, false).unwrap(), "1. a\n2. b\n");
        assert_eq!(f.read("ids", 0, 1, true).unwrap_err().to_string(), "KeyError: 'ids'");
    }

    #[test]
    fn clusters_and_events_display_fixed_and_as_the_reference() {
        let c = |n: usize| (0..n).map(|i| vec![("content", format!("c{i}"))]).collect::<Vec<_>>();
        let clusters = FolderData::Clusters(vec![c(7), c(1)]);
        let fixed = show(&clusters, 0, 2, false).unwrap();
        assert!(fixed.starts_with("聚类 1（共 7 条帖子）:\n帖子 1:") && fixed.contains("聚类 2（共 1 条帖子）:"), "{fixed}");
        assert_eq!(fixed.matches("帖子 ").count(), 6, "five of the first cluster, one of the second");
        let quirky = show(&clusters, 1, 2, true).unwrap();
        assert_eq!(quirky, "帖子 1:\n***content***: c0\n\n");
        let events = FolderData::Events(vec![vec![("标题", "a".into())], vec![("标题", "b".into())]]);
        assert_eq!(show(&events, 1, 2, false).unwrap(), "事件 2:\n***标题***: b");
        assert_eq!(show(&events, 1, 2, true).unwrap_err().to_string(), "ValueError: 结束索引不能超过帖子列表的长度1。");
    }

    #[test]
    fn stream_values_are_cut_at_512_characters() {
        let long = "长".repeat(600);
        let out = show_posts(&[vec![("内容", long)]], 0, 1, PostStyle::Stream, false).unwrap();
        assert_eq!(out.chars().filter(|c| *c == '长').count(), 512);
    }
}
