//! The published results (the SoMe paper's Tables 3 and 4), printed beside
//! every report for reference. Columns: RED, SES, MID, UBP, UEA, UCS, MCR,
//! SMQ, average.

/// One published row.
pub struct PaperRow {
    pub model: &'static str,
    pub size: &'static str,
    pub values: [f64; 9],
}

const fn row(model: &'static str, size: &'static str, values: [f64; 9]) -> PaperRow {
    PaperRow { model, size, values }
}

/// Table 3: scores.
pub const PAPER_SCORES: [PaperRow; 13] = [
    row("GPT-4o", "N/A", [47.59, 36.17, 50.24, 55.17, 31.53, 52.48, 61.63, 64.21, 49.88]),
    row("Gemini-2.5-Flash", "N/A", [54.92, 44.87, 45.62, 57.50, 41.94, 56.00, 62.75, 71.01, 54.33]),
    row("Kimi-K2-Instruct", "1T", [50.40, 38.57, 47.83, 51.50, 45.94, 58.25, 57.00, 77.38, 53.36]),
    row("DeepSeek-V3", "671B", [35.94, 38.83, 51.00, 55.06, 42.98, 54.92, 56.25, 75.94, 51.37]),
    row("Llama-3.3-70B-Instruct", "70B", [34.84, 33.77, 50.24, 55.83, 32.77, 53.00, 61.40, 64.83, 48.34]),
    row("Qwen3-32B", "32B", [44.25, 41.04, 47.42, 67.03, 33.53, 54.98, 63.28, 80.27, 53.98]),
    row("GLM-4-32B-0414", "32B", [27.55, 27.27, 41.38, 40.17, 26.10, 47.13, 44.08, 57.19, 38.86]),
    row("Devstral-Small-2507", "24B", [30.99, 33.31, 47.07, 47.93, 22.43, 46.68, 47.75, 58.25, 41.80]),
    row("Qwen3-14B", "14B", [43.97, 40.19, 44.80, 66.20, 33.35, 54.43, 62.13, 77.47, 52.82]),
    row("GLM-4-9B-0414", "9B", [14.42, 29.68, 33.63, 48.73, 28.63, 44.10, 49.05, 51.82, 37.51]),
    row("Qwen3-8B", "8B", [40.38, 36.69, 45.21, 61.73, 33.03, 53.33, 60.55, 76.18, 50.89]),
    row("DeepSeek-R1-0528-Qwen3-8B", "8B", [17.71, 28.83, 26.46, 43.53, 21.18, 31.10, 34.33, 51.84, 31.87]),
    row("Llama-3.1-8B-Instruct", "8B", [3.37, 20.78, 40.45, 34.23, 37.11, 33.98, 47.40, 31.05, 31.65]),
];

/// Table 4: task completion rates.
pub const PAPER_TCR: [PaperRow; 13] = [
    row("GPT-4o", "N/A", [94.54, 90.91, 95.11, 98.00, 98.70, 96.45, 97.35, 87.50, 94.82]),
    row("Gemini-2.5-Flash", "N/A", [99.23, 94.81, 88.63, 95.50, 99.04, 99.75, 99.25, 96.63, 96.61]),
    row("Kimi-K2-Instruct", "1T", [98.86, 85.06, 94.21, 97.17, 98.87, 99.75, 99.25, 98.03, 96.40]),
    row("DeepSeek-V3", "671B", [99.36, 92.86, 98.62, 99.78, 99.95, 100.00, 100.00, 98.25, 98.60]),
    row("Llama-3.3-70B-Instruct", "70B", [88.91, 90.26, 98.07, 97.15, 98.86, 97.53, 97.85, 93.72, 95.29]),
    row("Qwen3-32B", "32B", [99.47, 94.16, 97.73, 98.11, 100.00, 99.88, 98.60, 99.68, 98.45]),
    row("GLM-4-32B-0414", "32B", [88.67, 68.18, 87.72, 67.67, 85.52, 86.58, 79.40, 83.73, 80.93]),
    row("Devstral-Small-2507", "24B", [82.92, 86.36, 93.45, 79.73, 70.10, 86.78, 78.70, 82.53, 82.57]),
    row("Qwen3-14B", "14B", [96.23, 94.81, 99.45, 99.39, 99.00, 99.80, 99.80, 98.62, 98.39]),
    row("GLM-4-9B-0414", "9B", [76.06, 79.87, 78.08, 88.90, 93.35, 83.63, 91.50, 79.15, 83.82]),
    row("Qwen3-8B", "8B", [91.37, 92.86, 99.38, 98.07, 98.68, 99.40, 97.33, 98.73, 96.98]),
    row("DeepSeek-R1-0528-Qwen3-8B", "8B", [67.43, 70.78, 64.58, 82.93, 67.88, 62.86, 64.88, 76.51, 69.73]),
    row("Llama-3.1-8B-Instruct", "8B", [29.93, 56.49, 90.63, 67.59, 85.98, 75.86, 86.90, 44.39, 67.20]),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_published_average_is_the_mean_of_its_row() {
        for (table, rows) in [("scores", &PAPER_SCORES), ("tcr", &PAPER_TCR)] {
            for row in rows {
                let mean = row.values[..8].iter().sum::<f64>() / 8.0;
                // The paper prints 31.65 for this row, whose values average
                // 31.05; the values are kept as printed.
                let known_misprint = table == "scores" && row.model == "Llama-3.1-8B-Instruct";
                assert_eq!((mean - row.values[8]).abs() < 0.03, !known_misprint, "{table} {}: {mean:.3} vs {}", row.model, row.values[8]);
            }
        }
    }
}
