//! The built-in chat model: a GGUF model run in-process on CPU with
//! llama.cpp (through `llama-cpp-2`).
//!
//! llama.cpp was chosen by measurement (MODELS.md: 95.6 prompt / 32.3
//! generation tok/s on Qwen2.5-Coder-0.5B Q4_K_M with 2 threads, against
//! 5.5 / 5.6 for candle on the same file).
//!
//! An agent episode resends the whole conversation on every call. The model
//! keeps the KV cache of the last prompts it processed in a few slots and,
//! like llama.cpp's server, reuses the longest matching prefix, so each turn
//! only processes its new tokens.
//!
//! Tools in a native-protocol request are rendered into the system prompt
//! in the text protocol's form and the reply's calls are returned as
//! `tool_calls`, so native and text clients both work.
//!
//! A request with a JSON schema is answered under a grammar made from it
//! ([`super::gbnf`]): llama.cpp's grammar sampler removes every token that
//! would leave the schema. As llama.cpp's own sampler does, the token is
//! first chosen without the grammar and only checked against it; the pass
//! over the whole vocabulary under the grammar runs only when that token
//! is refused, which is rare once a reply is under way.

use std::num::NonZeroU32;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::model::{LlamaChatMessage, LlamaChatTemplate, LlamaModel};
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::LlamaToken;
use llama_cpp_2::token::data::LlamaTokenData;
use llama_cpp_2::token::data_array::LlamaTokenDataArray;
use some_jobs::chat::{ChatModel, ChatRequest, ChatResponse, JsonSchema, Message, ModelError, Role, Usage};
use some_jobs::protocol::{NativeToolCall, parse_reply};

use crate::error::{Error, Result};
use crate::models::{ModelKind, ModelSpec, require};

/// Tokens of context per slot.
pub const CONTEXT_TOKENS: u32 = 8192;
/// Reply length when a request sets none.
pub const DEFAULT_MAX_TOKENS: u32 = 512;
/// Prompt-cache slots (each a llama.cpp context, about 100 MB of KV cache
/// for the 0.5B model): two conversations at once (as the demo runs
/// them), the judge's prompt, and the last finished episode's, whose system
/// prompt the next episode of its task shares.
const SLOTS: usize = 4;

static BACKEND: OnceLock<std::result::Result<LlamaBackend, String>> = OnceLock::new();

fn backend() -> Result<&'static LlamaBackend> {
    BACKEND
        .get_or_init(|| {
            let mut b = LlamaBackend::init().map_err(|e| e.to_string())?;
            b.void_logs();
            Ok(b)
        })
        .as_ref()
        .map_err(|e| Error::Invalid(format!("llama.cpp backend: {e}")))
}

/// A llama.cpp context that may move between threads.
struct SendContext(LlamaContext<'static>);

// SAFETY: a llama.cpp context may be used from any thread, one at a time;
// every use goes through the `Mutex` around the slots.
unsafe impl Send for SendContext {}

/// A context with the tokens its KV cache holds.
struct Slot {
    ctx: SendContext,
    tokens: Vec<LlamaToken>,
    last_used: u64,
}

struct Inner {
    slots: Vec<Slot>,
    uses: u64,
}

/// The built-in model. Calls run one at a time (the machine's cores are
/// all one generation uses).
#[derive(Clone)]
pub struct LocalModel {
    name: String,
    model: &'static LlamaModel,
    template: Arc<LlamaChatTemplate>,
    inner: Arc<Mutex<Inner>>,
    threads: i32,
}

fn model_err(name: &str, message: impl std::fmt::Display) -> ModelError {
    ModelError::Permanent { endpoint: format!("builtin:{name}"), message: message.to_string() }
}

impl LocalModel {
    /// Loads an installed chat model by its registry entry.
    pub fn load(spec: &ModelSpec, threads: usize) -> Result<LocalModel> {
        if spec.kind != ModelKind::Chat {
            return Err(Error::Invalid(format!("{} is not a chat model", spec.name)));
        }
        let path = require(spec)?.join(spec.main_file().name);
        let backend = backend()?;
        let model = LlamaModel::load_from_file(backend, &path, &LlamaModelParams::default())
            .map_err(|e| Error::Invalid(format!("loading {}: {e}", path.display())))?;
        // The model lives as long as the process: contexts borrow it.
        let model: &'static LlamaModel = Box::leak(Box::new(model));
        let template = model.chat_template(None).map_err(|e| Error::Invalid(format!("{}: no chat template: {e}", spec.name)))?;
        let threads = threads.max(1) as i32;
        let mut slots = Vec::with_capacity(SLOTS);
        for _ in 0..SLOTS {
            let params = LlamaContextParams::default()
                .with_n_ctx(NonZeroU32::new(CONTEXT_TOKENS))
                .with_n_batch(512)
                .with_n_threads(threads)
                .with_n_threads_batch(threads);
            let ctx = model.new_context(backend, params).map_err(|e| Error::Invalid(format!("{}: context: {e}", spec.name)))?;
            slots.push(Slot { ctx: SendContext(ctx), tokens: Vec::new(), last_used: 0 });
        }
        Ok(LocalModel {
            name: spec.name.to_string(),
            model,
            template: Arc::new(template),
            inner: Arc::new(Mutex::new(Inner { slots, uses: 0 })),
            threads,
        })
    }

    /// The prompt text of a request, by the model's own chat template.
    fn prompt(&self, request: &ChatRequest) -> std::result::Result<String, ModelError> {
        let mut messages: Vec<Message> = request.messages.clone();
        if !request.tools.is_empty() {
            let block = native_tools_block(&request.tools);
            match messages.first_mut().filter(|m| m.role == Role::System) {
                Some(system) => {
                    system.content.push_str("\n\n");
                    system.content.push_str(&block);
                }
                None => messages.insert(0, Message::system(block)),
            }
        }
        let chat: Vec<LlamaChatMessage> = messages
            .iter()
            .map(|m| {
                let (role, content) = match m.role {
                    Role::System => ("system", m.content.clone()),
                    Role::User => ("user", m.content.clone()),
                    Role::Assistant => ("assistant", with_native_calls(m)),
                    // Templates without a tool role read results as the user's.
                    Role::Tool => ("user", format!("<tool_response>\n{}\n</tool_response>", m.content)),
                };
                LlamaChatMessage::new(role.into(), content).map_err(|e| model_err(&self.name, e))
            })
            .collect::<std::result::Result<_, _>>()?;
        self.model.apply_chat_template(&self.template, &chat, true).map_err(|e| model_err(&self.name, e))
    }

    /// The grammar sampler of a request's schema.
    fn grammar(&self, format: &JsonSchema) -> std::result::Result<LlamaSampler, ModelError> {
        let refused = |e: &dyn std::fmt::Display| model_err(&self.name, format!("response_format json_schema {:?}: {e}", format.name));
        let gbnf = super::gbnf::to_gbnf(&format.value()).map_err(|e| refused(&e))?;
        LlamaSampler::grammar(self.model, &gbnf, "root").map_err(|e| refused(&format!("llama.cpp refused its grammar: {e}")))
    }

    /// Runs one completion on the calling thread.
    pub fn complete_blocking(&self, request: &ChatRequest) -> std::result::Result<ChatResponse, ModelError> {
        let started = Instant::now();
        let prompt = self.prompt(request)?;
        let tokens = self.model.vocab().tokenize(prompt.as_bytes(), true, true);
        let max_new = request.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS) as usize;
        if tokens.len() + max_new > CONTEXT_TOKENS as usize {
            return Err(model_err(
                &self.name,
                format!("the prompt has {} tokens; with {max_new} to generate it exceeds the {CONTEXT_TOKENS}-token context", tokens.len()),
            ));
        }
        let mut inner = self.inner.lock().map_err(|_| model_err(&self.name, "a previous call panicked"))?;
        inner.uses += 1;
        let uses = inner.uses;
        let index = choose_slot(inner.slots.iter().map(|s| (s.tokens.as_slice(), s.last_used)), &tokens);
        let slot = &mut inner.slots[index];
        slot.last_used = uses;
        // Keep at least one prompt token to evaluate, so there are logits.
        let keep = shared_prefix(&slot.tokens, &tokens).min(tokens.len().saturating_sub(1));
        if keep < slot.tokens.len() && !matches!(slot.ctx.0.clear_kv_cache_seq(Some(0), Some(keep as u32), None), Ok(true)) {
            slot.ctx.0.clear_kv_cache();
            slot.tokens.clear();
        }
        let keep = keep.min(slot.tokens.len());
        slot.tokens.truncate(keep);
        let err = |e: &dyn std::fmt::Display| model_err(&self.name, e);
        let mut batch = LlamaBatch::new(512, 1);
        for chunk_start in (keep..tokens.len()).step_by(512) {
            batch.clear();
            let end = (chunk_start + 512).min(tokens.len());
            for (i, t) in tokens[chunk_start..end].iter().enumerate() {
                let pos = chunk_start + i;
                batch.add(*t, pos as i32, &[0], pos + 1 == tokens.len()).map_err(|e| err(&e))?;
            }
            slot.ctx.0.decode(&mut batch).map_err(|e| err(&e))?;
        }
        slot.tokens = tokens.clone();
        let mut grammar = request.response_format.as_ref().map(|f| self.grammar(f)).transpose()?;
        let mut sampler = match request.temperature {
            Some(t) if t > 0.0 => LlamaSampler::chain_simple([LlamaSampler::temp(t), LlamaSampler::dist(request.seed.unwrap_or(0) as u32)]),
            _ => LlamaSampler::greedy(),
        };
        let vocab = self.model.vocab();
        let mut out = Vec::new();
        let mut finish = "length";
        let mut last_index = batch.n_tokens() - 1;
        for _ in 0..max_new {
            let token = match grammar.as_mut() {
                Some(g) => constrained(&mut sampler, g, &slot.ctx.0, last_index)
                    .ok_or_else(|| err(&"the schema's grammar allows no next token"))?,
                None => {
                    let token = sampler.sample(&slot.ctx.0, last_index);
                    sampler.accept(token);
                    token
                }
            };
            if vocab.is_eog(token) {
                finish = "stop";
                break;
            }
            out.extend(vocab.token_to_piece(token, false, None));
            batch.clear();
            let pos = slot.tokens.len();
            batch.add(token, pos as i32, &[0], true).map_err(|e| err(&e))?;
            slot.ctx.0.decode(&mut batch).map_err(|e| err(&e))?;
            slot.tokens.push(token);
            last_index = 0;
        }
        let generated = slot.tokens.len() - tokens.len();
        tracing::debug!(
            slot = index,
            prompt = tokens.len(),
            cached = keep,
            generated,
            ms = started.elapsed().as_millis() as u64,
            "completion"
        );
        let content = String::from_utf8_lossy(&out).into_owned();
        let tool_calls = if request.tools.is_empty() { Vec::new() } else { native_calls(&content) };
        Ok(ChatResponse {
            content: if tool_calls.is_empty() { content } else { String::new() },
            finish_reason: Some(if tool_calls.is_empty() { finish } else { "tool_calls" }.to_string()),
            place: None,
            tool_calls,
            usage: Usage {
                prompt_tokens: tokens.len() as u64,
                completion_tokens: generated as u64 + u64::from(finish == "stop"),
                cached_tokens: keep as u64,
            },
            model: self.name.clone(),
            latency_ms: started.elapsed().as_millis() as u64,
        })
    }

    pub fn threads(&self) -> i32 {
        self.threads
    }
}

/// The next token under a grammar, accepted by both samplers: the
/// sampler's own choice if the grammar allows it, else its choice among the
/// tokens the grammar allows; `None` if the grammar allows none.
fn constrained(sampler: &mut LlamaSampler, grammar: &mut LlamaSampler, ctx: &LlamaContext<'_>, index: i32) -> Option<LlamaToken> {
    let mut all = ctx.token_data_array_ith(index);
    sampler.apply(&mut all);
    let allowed = |grammar: &mut LlamaSampler, token: LlamaToken| {
        let mut one = LlamaTokenDataArray::new(vec![LlamaTokenData::new(token, 0.0, 0.0)], false);
        grammar.apply(&mut one);
        one.data.first().is_some_and(|d| d.logit().is_finite())
    };
    let token = match all.selected_token() {
        Some(token) if allowed(grammar, token) => token,
        _ => {
            let mut all = ctx.token_data_array_ith(index);
            grammar.apply(&mut all);
            sampler.apply(&mut all);
            let chosen = all.selected.and_then(|i| all.data.get(i)).filter(|d| d.logit().is_finite())?;
            chosen.id()
        }
    };
    grammar.accept(token);
    sampler.accept(token);
    Some(token)
}

/// How many leading tokens two sequences share.
fn shared_prefix<T: PartialEq>(a: &[T], b: &[T]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// The slot a prompt runs in, given each slot's cached tokens and when it
/// was last used: the one it continues (its whole cache is a prefix of the
/// prompt: the next turn of a conversation); else the one sharing the
/// longest prefix if that is at least half the prompt (another episode of
/// the same task: system prompt and tools); else the least recently used,
/// so concurrent conversations keep their own slots rather than evicting
/// each other for a few shared template tokens.
fn choose_slot<'a, T: PartialEq + 'a>(slots: impl IntoIterator<Item = (&'a [T], u64)>, prompt: &[T]) -> usize {
    let slots: Vec<(&[T], u64)> = slots.into_iter().collect();
    let shared: Vec<usize> = slots.iter().map(|(cached, _)| shared_prefix(cached, prompt)).collect();
    // Ties go to the least recently used: not the slot of a conversation still running.
    let best = |eligible: &dyn Fn(usize) -> bool| {
        (0..slots.len()).filter(|&i| eligible(i)).max_by_key(|&i| (shared[i], std::cmp::Reverse(slots[i].1)))
    };
    best(&|i| !slots[i].0.is_empty() && shared[i] == slots[i].0.len())
        .or_else(|| best(&|i| shared[i] > 0 && 2 * shared[i] >= prompt.len()))
        .or_else(|| (0..slots.len()).min_by_key(|&i| slots[i].1))
        .unwrap_or(0)
}

/// A native-protocol conversation, for templates that know only text.
fn with_native_calls(m: &Message) -> String {
    let mut text = m.content.clone();
    for c in &m.tool_calls {
        text.push_str(&format!("\n<tool_call>\n{{\"name\": \"{}\", \"arguments\": {}}}\n</tool_call>", c.name, c.arguments));
    }
    text
}

fn native_tools_block(tools: &[serde_json::Value]) -> String {
    let mut out = String::from(
        "# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>\n",
    );
    for t in tools {
        out.push_str(&t.to_string());
        out.push('\n');
    }
    out.push_str("</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call>");
    out
}

fn native_calls(content: &str) -> Vec<NativeToolCall> {
    parse_reply(content)
        .calls
        .into_iter()
        .enumerate()
        .map(|(i, c)| NativeToolCall {
            id: format!("call_{i}"),
            name: c.name,
            arguments: serde_json::Value::Object(c.arguments).to_string(),
        })
        .collect()
}

#[async_trait::async_trait]
impl ChatModel for LocalModel {
    fn name(&self) -> &str {
        &self.name
    }

    async fn chat(&self, request: &ChatRequest) -> std::result::Result<ChatResponse, ModelError> {
        let this = self.clone();
        let request = request.clone();
        tokio::task::spawn_blocking(move || this.complete_blocking(&request)).await.map_err(|e| model_err(&self.name, e))?
    }
}

#[cfg(test)]
mod tests {
    use super::choose_slot;

    fn choose(slots: &[(&[u32], u64)], prompt: &[u32]) -> usize {
        choose_slot(slots.iter().copied(), prompt)
    }

    #[test]
    fn a_conversation_keeps_its_slot_while_another_runs_beside_it() {
        // Two conversations share only the template's first tokens.
        let (a, b): (&[u32], &[u32]) = (&[1, 2, 10, 11, 12], &[1, 2, 20, 21, 22]);
        assert_eq!(choose(&[(a, 5), (b, 6), (&[], 0)], &[1, 2, 10, 11, 12, 13, 14]), 0);
        assert_eq!(choose(&[(a, 5), (b, 6), (&[], 0)], &[1, 2, 20, 21, 22, 23]), 1);
        // A third one takes the empty slot, not either conversation's.
        assert_eq!(choose(&[(a, 5), (b, 6), (&[], 0)], &[1, 2, 30, 31, 32, 33]), 2);
        // With none empty, the least recently used.
        assert_eq!(choose(&[(a, 5), (b, 6), (&[1, 2, 40], 3)], &[1, 2, 30, 31, 32, 33]), 2);
    }

    #[test]
    fn a_new_episode_reuses_a_finished_one_sharing_its_system_prompt() {
        let finished: &[u32] = &[1, 2, 3, 4, 5, 6, 90, 91];
        let running: &[u32] = &[1, 2, 3, 4, 5, 6, 80, 81];
        let other_task: &[u32] = &[1, 2, 7, 8];
        // Both share the system prompt: the least recently used one is taken.
        assert_eq!(choose(&[(running, 9), (finished, 4), (other_task, 2)], &[1, 2, 3, 4, 5, 6, 70]), 1);
        // A reply the template renders differently from how it was generated
        // still finds its conversation (the longest shared prefix).
        assert_eq!(choose(&[(running, 9), (finished, 4)], &[1, 2, 3, 4, 5, 6, 80, 99, 100]), 0);
    }
}
