//! `knowledge_retrieve` (RetrieveKnowledge, MID only): the reports of the
//! knowledge base most similar to a query.

use super::spec::{Param, ParamType, ToolSpec};
use super::vectors::query_vector;
use super::{Args, SearchCorpus, ToolContext, ToolError};

pub static SPEC: ToolSpec = ToolSpec {
    name: "knowledge_retrieve",
    paper_name: "RetrieveKnowledge",
    description: "Service for social media knowledge retrieval. Enter the retrieval query and topk, retrieve the knowledge documents matching the query semantics from the knowledge base, and return the topk most relevant knowledge documents.",
    params: &[
        Param { name: "query", kind: ParamType::String, description: "retrieval query" },
        Param { name: "topk", kind: ParamType::Int, description: "number of returned knowledge documents" },
    ],
};

pub(super) async fn run(ctx: &ToolContext<'_>, args: &Args<'_>) -> Result<String, ToolError> {
    let query = args.str("query")?;
    let topk = args.int("topk")?;
    if topk <= 0 {
        return Err(ToolError::value("The value of topk should be positive integer!"));
    }
    let index = ctx.backend.knowledge(&ctx.settings.embedding_model).await?;
    if index.docs.is_empty() {
        return Err(ToolError::value("the knowledge base is empty"));
    }
    if index.vectors.len() != index.docs.len() * index.dim || index.dim == 0 {
        return Err(ToolError::value(format!(
            "the knowledge base has no {} vectors (run `some embed knowledge`)",
            ctx.settings.embedding_model
        )));
    }
    let q = query_vector(ctx, &query).await?;
    if q.len() != index.dim {
        return Err(ToolError::value(format!("the query vector is {}-d but the reports' are {}-d", q.len(), index.dim)));
    }
    let corpus = SearchCorpus::Knowledge { model: &ctx.settings.embedding_model, index: &index };
    let hits = ctx.kernels.top_k(corpus, &q, topk as usize).await?;
    let mut out = String::from("The following are results from the knowledge base:\n\n");
    for (i, hit) in hits.iter().enumerate() {
        let doc = &index.docs[hit.index as usize];
        out.push_str(&format!(
            "Document {}:\n***Content***: {}\n***Source URL***: {}\n\n",
            i + 1,
            doc.content,
            doc.link.as_deref().unwrap_or("None")
        ));
    }
    Ok(out)
}
