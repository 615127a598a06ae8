//! A scripted model for simulations over real HTTP ([`ScriptedEndpoint`]),
//! answering with [`some_sim::testing::sim_answer`].

use serde_json::Value;

use some_sim::testing::sim_answer as answer;

use crate::scripted::{Reply, ScriptedEndpoint};

/// An endpoint that answers every simulation prompt at once.
pub fn sim_model() -> ScriptedEndpoint {
    ScriptedEndpoint::start(|_, body| Reply::Text(answer(&prompt_of(body))))
}

/// An endpoint that answers like [`sim_model`] but replies to planning
/// with something that is not a plan.
pub fn sim_model_that_cannot_plan() -> ScriptedEndpoint {
    ScriptedEndpoint::start(|_, body| {
        let prompt = prompt_of(body);
        if prompt.contains("Plan a typical week") { Reply::Text("I would rather not say.".into()) } else { Reply::Text(answer(&prompt)) }
    })
}

/// The last message of a chat request body.
pub fn prompt_of(body: &Value) -> String {
    body["messages"].as_array().and_then(|m| m.last()).and_then(|m| m["content"].as_str()).unwrap_or_default().to_string()
}
