//! A tool's one definition, and the three forms the models and clients see:
//! the reference's list form inside the text protocol, OpenAI function
//! schemas for native calling, and MCP tool schemas.

use serde_json::{Map, Value, json};

/// The type of a parameter as the reference declares it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamType {
    String,
    Int,
}

impl ParamType {
    /// The reference's spelling (`string`, `int`).
    pub fn reference(self) -> &'static str {
        match self {
            ParamType::String => "string",
            ParamType::Int => "int",
        }
    }

    /// The JSON Schema type.
    pub fn json_schema(self) -> &'static str {
        match self {
            ParamType::String => "string",
            ParamType::Int => "integer",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Param {
    pub name: &'static str,
    pub kind: ParamType,
    pub description: &'static str,
}

/// A tool as the model sees it. Every parameter of the eight tools is
/// required, as in the reference.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolSpec {
    /// The name the model calls (`post_search`).
    pub name: &'static str,
    /// The paper's name (`SearchPost`).
    pub paper_name: &'static str,
    pub description: &'static str,
    pub params: &'static [Param],
}

impl ToolSpec {
    /// The reference's legacy list form: `{"name", "description", "parameters": [...]}`.
    pub fn reference_schema(&self) -> Value {
        let params: Vec<Value> = self
            .params
            .iter()
            .map(|p| json!({"name": p.name, "type": p.kind.reference(), "description": p.description, "required": true}))
            .collect();
        json!({"name": self.name, "description": self.description, "parameters": params})
    }

    /// A JSON Schema object for the parameters.
    pub fn input_schema(&self) -> Value {
        let mut properties = Map::new();
        for p in self.params {
            properties.insert(p.name.into(), json!({"type": p.kind.json_schema(), "description": p.description}));
        }
        let required: Vec<&str> = self.params.iter().map(|p| p.name).collect();
        json!({"type": "object", "properties": properties, "required": required})
    }

    /// The OpenAI `tools` entry for native function calling.
    pub fn openai_schema(&self) -> Value {
        json!({"type": "function", "function": {"name": self.name, "description": self.description, "parameters": self.input_schema()}})
    }
}

/// The tool block of the reference's text protocol (Nous template, as the
/// reference's Qwen-Agent renders it after the task prompt).
pub fn text_protocol_block(tools: &[&ToolSpec]) -> String {
    let mut out = String::from(
        "# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>\n",
    );
    for t in tools {
        out.push_str(&json!({"type": "function", "function": t.reference_schema()}).to_string());
        out.push('\n');
    }
    out.push_str(
        "</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call>",
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPEC: ToolSpec = ToolSpec {
        name: "data_folder",
        paper_name: "DataFolder",
        description: "d",
        params: &[Param { name: "start_idx", kind: ParamType::Int, description: "数据的开始索引（包含）" }],
    };

    #[test]
    fn one_definition_three_forms() {
        assert_eq!(
            SPEC.reference_schema().to_string(),
            r#"{"name":"data_folder","description":"d","parameters":[{"name":"start_idx","type":"int","description":"数据的开始索引（包含）","required":true}]}"#
        );
        assert_eq!(SPEC.openai_schema()["function"]["parameters"]["properties"]["start_idx"]["type"], "integer");
        assert_eq!(SPEC.input_schema()["required"], json!(["start_idx"]));
        let block = text_protocol_block(&[&SPEC]);
        assert!(block.contains("<tools>\n{\"type\":\"function\",\"function\":{\"name\":\"data_folder\""), "{block}");
        assert!(block.ends_with("</tool_call>"));
    }
}
