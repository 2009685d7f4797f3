// Types of qwen3-tokenizer-files.js: the parsed tokenizer.json and tokenizer_config.json.
export declare const tokenizer: Record<string, unknown>;
export declare const config: Record<string, unknown>;
