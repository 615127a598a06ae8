//! `topic_search` (SearchTopic): the posts of one topic collection.

use some_schemas::PostRow;

use super::folders::{FolderData, PostStyle, Record};
use super::post_search::{text, time_text};
use super::spec::{Param, ParamType, ToolSpec};
use super::{Args, Folders, ToolContext, ToolError};

pub static SPEC: ToolSpec = ToolSpec {
    name: "topic_search",
    paper_name: "SearchTopic",
    description: "社交媒体话题搜索服务，输入搜索话题名称，将对应话题的贴文存放入文件夹'{topic_name}'。",
    params: &[Param { name: "topic_name", kind: ParamType::String, description: "贴文的关联话题名称" }],
};

/// A topic post as the reference projects it (`topic_key2entry`).
pub(super) fn topic_record(p: &PostRow) -> Record {
    vec![
        ("标题", text(&p.title)),
        ("描述", text(&p.description)),
        ("内容", p.content.clone()),
        ("发布者", text(&p.nickname)),
        ("发布平台", text(&p.platform)),
        ("发布时间", time_text(p.published_at)),
    ]
}

pub(super) async fn run(ctx: &ToolContext<'_>, folders: &mut Folders, args: &Args<'_>) -> Result<String, ToolError> {
    let topic = args.str("topic_name")?;
    let posts = ctx.backend.topic_posts(&topic).await?;
    if posts.is_empty() {
        return Ok(format!("话题“{topic}”不存在，请检查话题名！"));
    }
    let n = posts.len();
    let records = posts.iter().map(topic_record).collect();
    let keys = posts.into_iter().map(|p| (p.bucket, p.post_id)).collect();
    folders.insert(topic.clone(), FolderData::Posts { style: PostStyle::Topic, records, keys });
    Ok(format!("{n} 条符合条件的帖子已存储在数据文件夹 '{topic}' 中。可以通过工具'data_folder'调用。\n"))
}
