//! A run's budget: how many tokens, or how much money, the run may spend in
//! all (`--max-run-tokens`, `--max-run-cost` with `--prices FILE`).
//!
//! What was spent is read from the lake, never counted in memory, so every
//! worker of a run sees the same figure: the tokens of the run's episodes
//! (every attempt and epoch) and of its primary judging's scores. Before a
//! worker starts a shard it compares them with the budget; once the budget
//! is reached it records why (a `stopped` event of the run) and drops the
//! shard, as for a cancelled run, while shards already running finish. So
//! a run overshoots by at most the shards in flight. `some rerun
//! --max-run-tokens N` records the run again with the new budget, which
//! lifts the stop; budgets count the whole run, earlier spending included.

use std::collections::BTreeMap;
use std::path::Path;

use arrow::array::{Array, AsArray};
use arrow::datatypes::Int64Type;
use datafusion::prelude::{col, lit};
use serde::{Deserialize, Serialize};
use some_schemas::{PRIMARY_JUDGING, RunId, episodes, scores};

use crate::error::{Error, Result};
use crate::lake::Lake;

/// Dollars (or any currency) per million tokens of one model.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    pub prompt: f64,
    pub completion: f64,
    /// Prompt tokens the endpoint took from its cache (default: `prompt`).
    #[serde(default)]
    pub cached_prompt: Option<f64>,
}

/// What a run may spend. Empty: no limit.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunBudget {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_cost: Option<f64>,
    /// Prices by model name, for the cost.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub prices: BTreeMap<String, Price>,
}

/// Tokens of one model.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Tokens {
    pub prompt: u64,
    pub completion: u64,
    pub cached_prompt: u64,
}

impl Tokens {
    pub fn total(&self) -> u64 {
        self.prompt + self.completion
    }
}

/// What a run has spent, per model.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Spent {
    pub by_model: BTreeMap<String, Tokens>,
}

impl Spent {
    pub fn tokens(&self) -> u64 {
        self.by_model.values().map(Tokens::total).sum()
    }

    /// The cost at `prices`; `None` if a model that spent has no price.
    pub fn cost(&self, prices: &BTreeMap<String, Price>) -> Option<f64> {
        self.by_model
            .iter()
            .map(|(model, t)| {
                let p = prices.get(model)?;
                let cached = t.cached_prompt.min(t.prompt);
                let fresh = t.prompt - cached;
                Some(
                    (fresh as f64 * p.prompt + cached as f64 * p.cached_prompt.unwrap_or(p.prompt) + t.completion as f64 * p.completion)
                        / 1e6,
                )
            })
            .sum()
    }
}

impl RunBudget {
    pub fn is_empty(&self) -> bool {
        self.max_tokens.is_none() && self.max_cost.is_none()
    }

    /// Checks, before a run is recorded, that a cost limit can be computed:
    /// every model the run calls has a price.
    pub fn check(&self, models: &[&str]) -> Result<()> {
        if self.max_cost.is_none() {
            return Ok(());
        }
        let missing: Vec<&str> = models.iter().copied().filter(|m| !self.prices.contains_key(*m)).collect();
        if missing.is_empty() {
            return Ok(());
        }
        let known: Vec<&str> = self.prices.keys().map(String::as_str).collect();
        Err(Error::Invalid(format!(
            "--max-run-cost needs a price for every model the run calls; none for {} (prices are given for: {})",
            missing.join(", "),
            if known.is_empty() { "no model".to_string() } else { known.join(", ") }
        )))
    }

    /// Why the run must stop, if `spent` reached the budget.
    pub fn reached(&self, spent: &Spent) -> Option<String> {
        if let Some(max) = self.max_tokens
            && spent.tokens() >= max
        {
            return Some(format!("token budget reached: {} of {max} tokens spent", spent.tokens()));
        }
        if let Some(max) = self.max_cost {
            // Prices were checked when the run was recorded; a model without
            // one (spent by an older spec) counts as free.
            let cost: f64 = spent.by_model.iter().map(|(m, t)| spent_one(m, t, &self.prices)).sum();
            if cost >= max {
                return Some(format!("cost budget reached: {cost:.4} of {max:.4} spent"));
            }
        }
        None
    }

    /// The budget in one line, for status and the report.
    pub fn describe(&self) -> Option<String> {
        let parts: Vec<String> = [self.max_tokens.map(|t| format!("{t} tokens")), self.max_cost.map(|c| format!("a cost of {c}"))]
            .into_iter()
            .flatten()
            .collect();
        (!parts.is_empty()).then(|| parts.join(" and "))
    }
}

fn spent_one(model: &str, tokens: &Tokens, prices: &BTreeMap<String, Price>) -> f64 {
    let one = Spent { by_model: BTreeMap::from([(model.to_string(), *tokens)]) };
    one.cost(prices).unwrap_or(0.0)
}

/// Reads a prices file: a JSON object from model name to
/// `{"prompt": P, "completion": C, "cached_prompt": K}`, in money per
/// million tokens.
pub fn read_prices(path: &Path) -> Result<BTreeMap<String, Price>> {
    let text = std::fs::read_to_string(path).map_err(|source| Error::Io { what: format!("reading {}", path.display()), source })?;
    let prices: BTreeMap<String, Price> = serde_json::from_str(&text).map_err(|e| {
        Error::Invalid(format!(
            "{}: {e} (expected {{\"MODEL\": {{\"prompt\": P, \"completion\": C}}}}, prices per million tokens)",
            path.display()
        ))
    })?;
    for (model, p) in &prices {
        let all = [Some(p.prompt), Some(p.completion), p.cached_prompt];
        if all.into_iter().flatten().any(|v| !v.is_finite() || v < 0.0) {
            return Err(Error::Invalid(format!("{}: model {model:?}: prices must be finite and not negative", path.display())));
        }
    }
    Ok(prices)
}

/// What the run has spent so far: its episodes' tokens by agent model and
/// its primary scores' tokens by judge model. Reads only token columns.
pub async fn spent(lake: &Lake, run_id: &RunId) -> Result<Spent> {
    let ctx = lake.session().await?;
    let mut out = Spent::default();
    let episodes = ctx
        .table(episodes::TABLE)
        .await?
        .filter(col(episodes::run_id).eq(lit(run_id.as_str())))?
        .select_columns(&[episodes::model, episodes::prompt_tokens, episodes::completion_tokens, episodes::cached_prompt_tokens])?
        .collect()
        .await?;
    for b in &episodes {
        add(&mut out, b.column(0), b.column(1), b.column(2), Some(b.column(3)));
    }
    let scores = ctx
        .table(scores::TABLE)
        .await?
        .filter(col(scores::run_id).eq(lit(run_id.as_str())).and(col(scores::judging).eq(lit(PRIMARY_JUDGING))))?
        .select_columns(&[scores::judge_model, scores::judge_prompt_tokens, scores::judge_completion_tokens])?
        .collect()
        .await?;
    for b in &scores {
        add(&mut out, b.column(0), b.column(1), b.column(2), None);
    }
    Ok(out)
}

fn add(out: &mut Spent, model: &dyn Array, prompt: &dyn Array, completion: &dyn Array, cached: Option<&dyn Array>) {
    let (Some(model), Some(prompt), Some(completion)) =
        (model.as_string_opt::<i32>(), prompt.as_primitive_opt::<Int64Type>(), completion.as_primitive_opt::<Int64Type>())
    else {
        return;
    };
    let cached = cached.and_then(|c| c.as_primitive_opt::<Int64Type>());
    let value = |a: &arrow::array::PrimitiveArray<Int64Type>, r: usize| if a.is_null(r) { 0 } else { a.value(r).max(0) as u64 };
    for r in 0..model.len() {
        if model.is_null(r) {
            continue;
        }
        let t = out.by_model.entry(model.value(r).to_string()).or_default();
        t.prompt += value(prompt, r);
        t.completion += value(completion, r);
        t.cached_prompt += cached.map_or(0, |c| value(c, r));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spent(model: &str, prompt: u64, completion: u64, cached: u64) -> Spent {
        Spent { by_model: BTreeMap::from([(model.to_string(), Tokens { prompt, completion, cached_prompt: cached })]) }
    }

    #[test]
    fn tokens_and_cost_reach_their_limits_with_the_reason() {
        let budget = RunBudget { max_tokens: Some(1000), ..Default::default() };
        assert_eq!(budget.reached(&spent("m", 600, 399, 0)), None);
        assert_eq!(budget.reached(&spent("m", 600, 400, 0)).unwrap(), "token budget reached: 1000 of 1000 tokens spent");

        let prices = BTreeMap::from([("m".to_string(), Price { prompt: 1.0, completion: 4.0, cached_prompt: Some(0.5) })]);
        // 1M fresh prompt tokens at 1, 1M cached at 0.5, 0.5M completion at 4.
        assert_eq!(spent("m", 2_000_000, 500_000, 1_000_000).cost(&prices), Some(3.5));
        assert_eq!(spent("other", 1, 1, 0).cost(&prices), None, "a model without a price has no cost");
        let budget = RunBudget { max_cost: Some(3.5), prices, ..Default::default() };
        assert!(budget.reached(&spent("m", 2_000_000, 500_000, 1_000_000)).unwrap().starts_with("cost budget reached: 3.5000 of 3.5000"));
        assert_eq!(budget.reached(&spent("m", 1_000_000, 0, 0)), None);
    }

    #[test]
    fn a_cost_limit_needs_every_model_priced() {
        let budget = RunBudget { max_cost: Some(1.0), ..Default::default() };
        let err = budget.check(&["agent", "judge"]).unwrap_err().to_string();
        assert!(err.contains("none for agent, judge") && err.contains("no model"), "{err}");
        assert!(RunBudget { max_tokens: Some(5), ..Default::default() }.check(&["agent"]).is_ok());
    }

    #[test]
    fn a_prices_file_is_read_strictly() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("prices.json");
        std::fs::write(&file, r#"{"m": {"prompt": 0.15, "completion": 0.6}}"#).unwrap();
        assert_eq!(read_prices(&file).unwrap()["m"], Price { prompt: 0.15, completion: 0.6, cached_prompt: None });
        std::fs::write(&file, r#"{"m": {"prompt": 0.15, "complete": 0.6}}"#).unwrap();
        let err = read_prices(&file).unwrap_err().to_string();
        assert!(err.contains("prices.json") && err.contains("complete"), "{err}");
        std::fs::write(&file, r#"{"m": {"prompt": -1, "completion": 0.6}}"#).unwrap();
        assert!(read_prices(&file).unwrap_err().to_string().contains("not negative"));
    }
}
