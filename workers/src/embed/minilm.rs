//! all-MiniLM-L6-v2 in-process with candle: BERT, mean pooling over the
//! attention mask, L2 normalisation (what sentence-transformers does).

use std::path::Path;
use std::sync::Arc;

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config};
use some_jobs::embed::{EmbedError, Embedder, Purpose};
use tokenizers::{PaddingParams, Tokenizer, TruncationParams};

use crate::error::{Error, Result};
use crate::models::MINILM;

/// sentence-transformers' `max_seq_length` for this model.
const MAX_TOKENS: usize = 256;
/// Texts per forward pass.
const BATCH: usize = 32;

struct Inner {
    model: BertModel,
    tokenizer: Tokenizer,
}

/// The built-in embedder. Cheap to clone; inference runs on blocking threads.
#[derive(Clone)]
pub struct MiniLm {
    inner: Arc<Inner>,
}

fn load_err(e: impl std::fmt::Display) -> Error {
    Error::Invalid(format!("loading {}: {e}", MINILM.name))
}

impl MiniLm {
    pub fn load(dir: &Path) -> Result<MiniLm> {
        let config: Config = serde_json::from_slice(&std::fs::read(dir.join("config.json")).map_err(load_err)?).map_err(load_err)?;
        let mut tokenizer = Tokenizer::from_file(dir.join("tokenizer.json")).map_err(load_err)?;
        tokenizer.with_padding(Some(PaddingParams::default()));
        tokenizer.with_truncation(Some(TruncationParams { max_length: MAX_TOKENS, ..Default::default() })).map_err(load_err)?;
        // SAFETY: the weights file is installed by `some models fetch` and not
        // modified while mapped.
        let vb =
            unsafe { VarBuilder::from_mmaped_safetensors(&[dir.join("model.safetensors")], DType::F32, &Device::Cpu) }.map_err(load_err)?;
        let model = BertModel::load(vb, &config).map_err(load_err)?;
        Ok(MiniLm { inner: Arc::new(Inner { model, tokenizer }) })
    }

    /// Embeds texts on the calling thread.
    pub fn embed_blocking(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, String> {
        let mut out = Vec::with_capacity(texts.len());
        for chunk in texts.chunks(BATCH) {
            out.extend(self.batch(chunk).map_err(|e| e.to_string())?);
        }
        Ok(out)
    }

    fn batch(&self, texts: &[String]) -> std::result::Result<Vec<Vec<f32>>, Box<dyn std::error::Error + Send + Sync>> {
        let encodings = self.inner.tokenizer.encode_batch(texts.to_vec(), true)?;
        let n = encodings.len();
        let len = encodings.first().map_or(0, |e| e.len());
        let flat = |f: &dyn Fn(&tokenizers::Encoding) -> &[u32]| -> Vec<u32> { encodings.iter().flat_map(|e| f(e).to_vec()).collect() };
        let ids = Tensor::from_vec(flat(&|e| e.get_ids()), (n, len), &Device::Cpu)?;
        let types = Tensor::from_vec(flat(&|e| e.get_type_ids()), (n, len), &Device::Cpu)?;
        let mask = Tensor::from_vec(flat(&|e| e.get_attention_mask()), (n, len), &Device::Cpu)?;
        let hidden = self.inner.model.forward(&ids, &types, Some(&mask))?;
        let mask = mask.to_dtype(DType::F32)?.unsqueeze(2)?;
        let summed = hidden.broadcast_mul(&mask)?.sum(1)?;
        let counts = mask.sum(1)?.clamp(1e-9, f32::MAX)?;
        let mean = summed.broadcast_div(&counts)?;
        let norms = mean.sqr()?.sum_keepdim(1)?.sqrt()?.clamp(1e-12, f32::MAX)?;
        Ok(mean.broadcast_div(&norms)?.to_vec2::<f32>()?)
    }
}

#[async_trait::async_trait]
impl Embedder for MiniLm {
    fn model(&self) -> &str {
        MINILM.name
    }

    fn dim(&self) -> usize {
        384
    }

    async fn embed(&self, texts: &[String], _purpose: Purpose) -> Result<Vec<Vec<f32>>, EmbedError> {
        let this = self.clone();
        let texts = texts.to_vec();
        tokio::task::spawn_blocking(move || this.embed_blocking(&texts))
            .await
            .map_err(|e| e.to_string())
            .and_then(|r| r)
            .map_err(|message| EmbedError { model: MINILM.name.into(), message })
    }
}
