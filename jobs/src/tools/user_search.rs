//! `user_search` (SearchUser): a user's profile, and their posts as a folder.
//!
//! Fixed on purpose: the reference prints `followers_count` as 关注数
//! (following) and `friends_count` as 粉丝数 (fans), the reverse of their
//! Weibo meaning; the fix swaps them back (`reference_quirks` keeps the
//! reference's labels).

use some_schemas::PostRow;

use super::folders::{FolderData, PostStyle, Record};
use super::post_search::{text, time_text};
use super::spec::{Param, ParamType, ToolSpec};
use super::{Args, Folders, ToolContext, ToolError};

pub static SPEC: ToolSpec = ToolSpec {
    name: "user_search",
    paper_name: "SearchUser",
    description: "社交媒体用户信息搜索服务，输入用户ID，可以查询到该ID用户的个人信息和发表的贴文。用户发表的贴文存放入文件夹'{uid}_weibo'。",
    params: &[Param { name: "uid", kind: ParamType::String, description: "用户的ID" }],
};

fn count(v: Option<i64>) -> String {
    v.map_or_else(|| "None".to_string(), |n| n.to_string())
}

/// A timeline post as the reference projects it (`weibo_key2entry`).
fn weibo_record(p: &PostRow) -> Record {
    vec![
        ("id", p.post_id.clone()),
        ("内容", p.content.clone()),
        ("发布时间", time_text(p.published_at)),
        ("来自", text(&p.client)),
        ("发布地点", text(&p.location)),
        ("转发数", count(p.reposts)),
        ("评论数", count(p.comments)),
        ("点赞数", count(p.likes)),
        ("图片数量", count(p.pic_num)),
        ("图片", text(&p.pictures)),
        ("视频", text(&p.video)),
        ("rca_list", text(&p.rca_list)),
    ]
}

pub(super) async fn run(ctx: &ToolContext<'_>, folders: &mut Folders, args: &Args<'_>) -> Result<String, ToolError> {
    let uid = args.str("uid")?;
    let Some(user) = ctx.backend.user(&uid).await? else {
        return Ok(format!("未找到用户ID为 {uid} 的数据，请检查用户ID是否正确。\n"));
    };
    let posts = ctx.backend.user_posts(&uid).await?;
    let (following, fans) =
        if ctx.settings.reference_quirks { (user.followers_count, user.friends_count) } else { (user.friends_count, user.followers_count) };
    let description = format!(
        "该用户的信息包括：\n用户ID：{}\n用户名：{}\n关注数：{}\n粉丝数：{}\n转赞评数：{}\n认证信息：{}\n个人简介：{}\nIP定位：{}\n",
        user.uid,
        text(&user.name),
        count(following),
        count(fans),
        count(user.total_rcl_count),
        text(&user.verified_reason),
        text(&user.description),
        text(&user.location),
    );
    let n = posts.len();
    let records = posts.iter().map(weibo_record).collect();
    let keys = posts.into_iter().map(|p| (p.bucket, p.post_id)).collect();
    folders.insert(format!("{uid}_weibo"), FolderData::Posts { style: PostStyle::Timeline, records, keys });
    Ok(format!("用户发表的 {n} 条微博已存储在数据文件夹 '{uid}_weibo' 中。可以通过工具'data_folder'调用。\n{description}"))
}
