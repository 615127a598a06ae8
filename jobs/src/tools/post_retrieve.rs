//! `post_retrieve` (RetrievePost): the posts of a folder most similar to a
//! query.
//!
//! Fixed on purpose: the reference retrieves only from topic folders (only
//! topics have stored vectors there), fails when `topk` exceeds the folder
//! ("结束索引不能超过…"), and fails confusingly on `topk <= 0`; the fix
//! retrieves from any post folder, returns at most the folder's size, and
//! says what a bad `topk` is. Results are not counted in the read budget,
//! as in the reference.

use super::folders::{FolderData, PostStyle, missing_folder, show_posts};
use super::spec::{Param, ParamType, ToolSpec};
use super::vectors::{folder_vectors, query_vector};
use super::{Args, Folders, SearchCorpus, ToolContext, ToolError};

pub static SPEC: ToolSpec = ToolSpec {
    name: "post_retrieve",
    paper_name: "RetrievePost",
    description: "社交媒体贴文检索服务，输入检索查询、数据文件夹名称和topk，从对应文件夹中检索匹配查询语义的贴文，并返回topk个最相关的贴文。",
    params: &[
        Param { name: "query", kind: ParamType::String, description: "检索查询" },
        Param { name: "folder_name", kind: ParamType::String, description: "需要查询的数据文件夹名称" },
        Param { name: "topk", kind: ParamType::Int, description: "需要返回的相关贴文个数" },
    ],
};

pub(super) async fn run(ctx: &ToolContext<'_>, folders: &mut Folders, args: &Args<'_>) -> Result<String, ToolError> {
    let query = args.str("query")?;
    let name = args.str("folder_name")?;
    let topk = args.int("topk")?;
    let quirks = ctx.settings.reference_quirks;
    let Some(folder) = folders.get(&name) else { return Err(missing_folder(&name)) };
    let FolderData::Posts { style, records, keys } = folder else {
        return Err(ToolError::value(format!("话题'{name}'的数据不存在。")));
    };
    if quirks && *style != PostStyle::Topic {
        return Err(ToolError::value(format!("话题'{name}'的数据不存在。")));
    }
    if !quirks && topk <= 0 {
        return Err(ToolError::value(format!("topk必须是正整数，收到{topk}。")));
    }
    let q = query_vector(ctx, &query).await?;
    let (vectors, dim) = folder_vectors(ctx, keys, records).await?;
    if dim != q.len() {
        return Err(ToolError::value(format!("the query vector is {}-d but the posts' are {dim}-d", q.len())));
    }
    let k = topk.max(0) as usize;
    let hits = ctx.kernels.top_k(SearchCorpus::Vectors { data: &vectors, dim }, &q, k).await?;
    let retrieved: Vec<_> = hits.iter().map(|h| records[h.index as usize].clone()).collect();
    let shown = if quirks { topk } else { retrieved.len() as i64 };
    show_posts(&retrieved, 0, shown, if quirks { PostStyle::Topic } else { *style }, quirks)
}
