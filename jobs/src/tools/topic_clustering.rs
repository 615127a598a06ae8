//! `topic_clustering` (PostClustering): single-pass clustering of a
//! `post_search` folder's posts by their vectors, at the run's θ (the
//! reference's 0.5 for its embedder; see `ToolSettings::cluster_threshold`).
//!
//! Fixed on purpose: the reference splits the folder name on `_` (a
//! location or time containing `_`, or any other folder, fails with a
//! Python unpacking error) and fails on an empty folder; the fix checks
//! that the folder is a `post_search` result and clusters an empty folder
//! into no clusters.

use super::folders::{FolderData, PostStyle, Record, missing_folder};
use super::spec::{Param, ParamType, ToolSpec};
use super::vectors::folder_vectors;
use super::{Args, Folders, ToolContext, ToolError};

pub static SPEC: ToolSpec = ToolSpec {
    name: "topic_clustering",
    paper_name: "PostClustering",
    description: "社交媒体话题聚类服务，输入文件夹名称，将对应文件夹中的贴文进行聚类。",
    params: &[Param { name: "folder_name", kind: ParamType::String, description: "文件夹名称" }],
};

/// The reference's `folder_name.split("_")` into exactly three parts.
pub(super) fn reference_split(name: &str, expected: usize) -> Result<Vec<&str>, ToolError> {
    let parts: Vec<&str> = name.split('_').collect();
    match parts.len() {
        n if n > expected => Err(ToolError::value(format!("too many values to unpack (expected {expected})"))),
        n if n < expected => Err(ToolError::value(format!("not enough values to unpack (expected {expected}, got {n})"))),
        _ => Ok(parts),
    }
}

/// A cluster member as the reference stores it.
fn cluster_item(id: &str, record: &Record) -> Record {
    let field = |k: &str| record.iter().find(|(key, _)| *key == k).map(|(_, v)| v.clone()).unwrap_or_else(|| "None".into());
    vec![
        ("unique_id", id.to_string()),
        ("like_count", "0".to_string()),
        ("title", field("标题")),
        ("content", field("内容")),
        ("ocr", field("OCR")),
    ]
}

pub(super) async fn run(ctx: &ToolContext<'_>, folders: &mut Folders, args: &Args<'_>) -> Result<String, ToolError> {
    let name = args.str("folder_name")?;
    let quirks = ctx.settings.reference_quirks;
    if quirks {
        reference_split(&name, 3)?;
    }
    let folder = match folders.get(&name) {
        Some(f) => f,
        None if quirks => return Err(ToolError::new("KeyError", format!("'{name}'"))),
        None => return Err(missing_folder(&name)),
    };
    let FolderData::Posts { style: PostStyle::Stream, records, keys } = folder else {
        return Err(ToolError::value(format!("文件夹'{name}'不是贴文搜索（post_search）的结果，无法聚类。")));
    };
    if records.is_empty() && quirks {
        return Err(ToolError::new("AttributeError", "'NoneType' object has no attribute 'keys'"));
    }
    let (records, keys) = (records.clone(), keys.clone());
    let mut clusters: Vec<Vec<Record>> = Vec::new();
    if !records.is_empty() {
        let (vectors, dim) = folder_vectors(ctx, &keys, &records).await?;
        let ids = ctx.kernels.single_pass_cluster(&vectors, dim, ctx.settings.cluster_threshold).await?;
        for (i, cluster) in ids.into_iter().enumerate() {
            let c = cluster as usize - 1;
            if clusters.len() <= c {
                clusters.resize_with(c + 1, Vec::new);
            }
            clusters[c].push(cluster_item(&keys[i].1, &records[i]));
        }
    }
    let ids = (1..=clusters.len()).map(|i| i.to_string()).collect();
    folders.insert(format!("{name}_cluster"), FolderData::Clusters(clusters));
    folders.insert(format!("{name}_cluster_key"), FolderData::Ids(ids));
    Ok(format!("文件夹'{name}'中的帖子已经完成聚类，聚类结果存放在文件夹'{name}_cluster'中。可以通过工具'data_folder'调用。"))
}
