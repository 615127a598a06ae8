//! `data_folder` (DataFolder): reads `[start_idx, end_idx)` of a folder.

use super::spec::{Param, ParamType, ToolSpec};
use super::{Args, Folders, ToolContext, ToolError};

pub static SPEC: ToolSpec = ToolSpec {
    name: "data_folder",
    paper_name: "DataFolder",
    description: "存放社交媒体贴文、用户信息等数据的文件夹，输入文件夹名称和数据索引可以取出对应数据，需要注意数据长度不能超过大模型的上下文长度上限。",
    params: &[
        Param { name: "folder_name", kind: ParamType::String, description: "文件夹名称" },
        Param { name: "start_idx", kind: ParamType::Int, description: "数据的开始索引（包含）" },
        Param { name: "end_idx", kind: ParamType::Int, description: "数据的结束索引（不包含）" },
    ],
};

pub(super) fn run(ctx: &ToolContext<'_>, folders: &mut Folders, args: &Args<'_>) -> Result<String, ToolError> {
    let name = args.str("folder_name")?;
    let start = args.int("start_idx")?;
    let end = args.int("end_idx")?;
    folders.read(&name, start, end, ctx.settings.reference_quirks)
}
