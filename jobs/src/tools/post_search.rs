//! `post_search` (SearchPost): the posts of a location stream in a window.
//!
//! Fixed on purpose (the reference behaviour is kept under
//! `reference_quirks`): the reference reads only the start day's stream, so
//! a window crossing midnight misses the next day's posts; the fix reads
//! every day the window touches. A window that ends before it starts is an
//! error rather than an empty folder.

use chrono::NaiveDateTime;
use some_schemas::{PostRow, Timestamp};

use super::folders::{FolderData, PostStyle, Record};
use super::spec::{Param, ParamType, ToolSpec};
use super::{Args, Folders, StreamWindow, ToolContext, ToolError};

pub static SPEC: ToolSpec = ToolSpec {
    name: "post_search",
    paper_name: "SearchPost",
    description: "社交媒体贴文搜索服务，输入搜索地点、开始时间、结束时间，将对应地点发表于开始时间和结束时间之间的贴文存放入文件夹'{location}_{start_time}_{end_time}'。",
    params: &[
        Param { name: "location", kind: ParamType::String, description: "贴文的关联地点" },
        Param {
            name: "start_time", kind: ParamType::String, description: "贴文发表时段的开始时刻，格式为%Y-%m-%d %H:%M:%S"
        },
        Param { name: "end_time", kind: ParamType::String, description: "贴文发表时段的结束时刻，格式为%Y-%m-%d %H:%M:%S" },
    ],
};

const FORMAT: &str = "%Y-%m-%d %H:%M:%S";

fn parse_time(text: &str) -> Result<Timestamp, ToolError> {
    NaiveDateTime::parse_from_str(text, FORMAT)
        .map(Timestamp::from_naive)
        .map_err(|_| ToolError::value(format!("time data '{text}' does not match format '{FORMAT}'")))
}

pub(super) fn text(v: &Option<String>) -> String {
    v.clone().unwrap_or_else(|| "None".to_string())
}

pub(super) fn time_text(t: Option<Timestamp>) -> String {
    t.map_or_else(|| "None".to_string(), |t| t.to_string())
}

/// A stream post as the reference projects it (`post_key2entry`, without `unique_id`).
pub(super) fn stream_record(p: &PostRow) -> Record {
    vec![
        ("内容", p.content.clone()),
        ("发布平台", text(&p.platform)),
        ("标题", text(&p.title)),
        ("发布时间", time_text(p.published_at)),
        ("OCR", text(&p.ocr)),
        ("发布用户", text(&p.nickname)),
        ("发布地点", text(&p.location)),
    ]
}

pub(super) async fn run(ctx: &ToolContext<'_>, folders: &mut Folders, args: &Args<'_>) -> Result<String, ToolError> {
    let location = args.str("location")?;
    let start_text = args.str("start_time")?;
    let end_text = args.str("end_time")?;
    let quirks = ctx.settings.reference_quirks;
    let start = parse_time(&start_text)?;
    let end = parse_time(&end_text)?;
    let first_day = start.naive().date();
    let days: Vec<_> = if quirks || end <= start {
        vec![first_day]
    } else {
        first_day.iter_days().take_while(|d| *d <= Timestamp(end.0 - 1).naive().date()).collect()
    };
    if !quirks && end <= start {
        return Err(ToolError::value(format!("开始时间{start_text}必须早于结束时间{end_text}。")));
    }
    let mut posts = Vec::new();
    let mut found = false;
    for day in days {
        if let Some(day_posts) = ctx.backend.stream_posts(StreamWindow { location: &location, day, start, end }).await? {
            found = true;
            posts.extend(day_posts);
        }
    }
    if !found {
        let day = first_day.format("%Y-%m-%d");
        return Err(if quirks {
            ToolError::new(
                "FileNotFoundError",
                format!("[Errno 2] No such file or directory: './database/raw_data/{day}_{location}_sensitive.jsonl'"),
            )
        } else {
            ToolError::value(format!("没有地点'{location}'在{day}的贴文数据，请检查地点名称和日期。"))
        });
    }
    let folder = format!("{location}_{start_text}_{end_text}");
    let n = posts.len();
    let records = posts.iter().map(stream_record).collect();
    let keys: Vec<(String, String)> = posts.iter().map(|p| (p.bucket.clone(), p.post_id.clone())).collect();
    folders.insert(format!("{folder}_idx"), FolderData::Ids(posts.into_iter().map(|p| p.post_id).collect()));
    folders.insert(folder.clone(), FolderData::Posts { style: PostStyle::Stream, records, keys });
    Ok(format!("{n} 条符合条件的帖子已存储在数据文件夹 '{folder}' 中。可以通过工具'data_folder'调用。\n"))
}
