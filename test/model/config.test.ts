import { describe, expect, it } from 'vitest';
import { ConfigError, parseQwen3Config } from '../../src/model/config.ts';
import { QWEN3_PRESETS, qwen3Preset } from '../../src/model/presets.ts';

// A Qwen3-0.6B config.json as transformers 4 wrote it.
const QWEN3_06B = {
  architectures: ['Qwen3ForCausalLM'],
  attention_bias: false,
  bos_token_id: 151643,
  eos_token_id: 151645,
  head_dim: 128,
  hidden_act: 'silu',
  hidden_size: 1024,
  intermediate_size: 3072,
  max_position_embeddings: 40960,
  model_type: 'qwen3',
  num_attention_heads: 16,
  num_hidden_layers: 28,
  num_key_value_heads: 8,
  rms_norm_eps: 1e-6,
  rope_scaling: null,
  rope_theta: 1000000,
  tie_word_embeddings: true,
  torch_dtype: 'bfloat16',
  use_sliding_window: false,
  vocab_size: 151936,
};

describe('parseQwen3Config', () => {
  it('reads a Qwen3-0.6B config.json, matching the preset', () => {
    const c = parseQwen3Config(QWEN3_06B);
    expect(c).toEqual(qwen3Preset('Qwen3-0.6B'));
  });

  it('head_dim need not be hidden/heads; defaults to it when absent', () => {
    const c = parseQwen3Config({ ...QWEN3_06B, hidden_size: 64, num_attention_heads: 4, num_key_value_heads: 2, head_dim: 24 });
    expect(c.headDim).toBe(24);
    const { head_dim: _, ...noHeadDim } = QWEN3_06B;
    expect(parseQwen3Config({ ...noHeadDim, hidden_size: 48, num_attention_heads: 3, num_key_value_heads: 3 }).headDim).toBe(16);
  });

  it('takes rope theta from transformers 5 rope_parameters', () => {
    const { rope_theta: _, rope_scaling: __, torch_dtype: ___, ...rest } = QWEN3_06B;
    const c = parseQwen3Config({ ...rest, rope_parameters: { rope_theta: 10000, rope_type: 'default' }, dtype: 'float32' });
    expect(c.ropeTheta).toBe(10000);
    expect(c.torchDtype).toBe('float32');
  });

  it('defaults kv heads to heads, eos to a list, tie to false', () => {
    const { num_key_value_heads: _, tie_word_embeddings: __, ...rest } = QWEN3_06B;
    const c = parseQwen3Config({ ...rest, eos_token_id: [151645, 151643], bos_token_id: null });
    expect(c.numKvHeads).toBe(16);
    expect(c.eosTokenIds).toEqual([151645, 151643]);
    expect(c.bosTokenId).toBeNull();
    expect(c.tieWordEmbeddings).toBe(false);
  });

  it('accepts model_type qwen3 without architectures', () => {
    const { architectures: _, ...rest } = QWEN3_06B;
    expect(parseQwen3Config(rest).hiddenSize).toBe(1024);
  });

  it('rejects another architecture, naming the file', () => {
    expect(() => parseQwen3Config({ ...QWEN3_06B, architectures: ['LlamaForCausalLM'], model_type: 'llama' }, 'm/config.json')).toThrow(
      /m\/config.json: architecture \["LlamaForCausalLM"\].*not supported.*Qwen3ForCausalLM/,
    );
  });

  it('rejects rope scaling other than default', () => {
    expect(() => parseQwen3Config({ ...QWEN3_06B, rope_scaling: { rope_type: 'yarn', factor: 4 } })).toThrow(/rope_scaling.rope_type "yarn" is not supported/);
    expect(() => parseQwen3Config({ ...QWEN3_06B, rope_parameters: { rope_type: 'linear', rope_theta: 1e6, factor: 2 } })).toThrow(/rope_parameters.rope_type "linear" is not supported/);
    expect(parseQwen3Config({ ...QWEN3_06B, rope_scaling: { type: 'default' } }).ropeTheta).toBe(1e6);
  });

  it('rejects heads not a multiple of kv heads', () => {
    expect(() => parseQwen3Config({ ...QWEN3_06B, num_key_value_heads: 5 })).toThrow(/num_attention_heads 16 is not a multiple of num_key_value_heads 5/);
  });

  it('names missing and malformed fields, and the file', () => {
    const { hidden_size: _, ...rest } = QWEN3_06B;
    expect(() => parseQwen3Config(rest, 'x/config.json')).toThrow(ConfigError);
    expect(() => parseQwen3Config(rest, 'x/config.json')).toThrow(/x\/config.json: missing field hidden_size/);
    expect(() => parseQwen3Config({ ...QWEN3_06B, vocab_size: -3 })).toThrow(/config.json: field vocab_size must be a positive integer/);
    expect(() => parseQwen3Config({ ...QWEN3_06B, rms_norm_eps: 'small' })).toThrow(/field rms_norm_eps must be a positive number/);
    expect(() => parseQwen3Config({ ...QWEN3_06B, tie_word_embeddings: 'yes' })).toThrow(/tie_word_embeddings must be a boolean/);
    expect(() => parseQwen3Config({ ...QWEN3_06B, eos_token_id: ['a'] })).toThrow(/eos_token_id\[0\] must be a token id/);
    expect(() => parseQwen3Config([1, 2])).toThrow(/not a JSON object/);
    expect(() => parseQwen3Config({ ...QWEN3_06B, use_sliding_window: true })).toThrow(/use_sliding_window/);
    expect(() => parseQwen3Config({ ...QWEN3_06B, attention_bias: true })).toThrow(/attention_bias/);
    expect(() => parseQwen3Config({ ...QWEN3_06B, layer_types: ['full_attention', 'sliding_attention'] })).toThrow(/layer_types\[1\] "sliding_attention" is not supported/);
  });

  it('reads the fixture configs (transformers 5 files)', async () => {
    const { readFile } = await import('node:fs/promises');
    const dir = new URL('../fixtures/models/', import.meta.url);
    const want = { 'gqa-tied': [64, 24, 10000, true], 'mha-untied': [48, 16, 1e6, false], 'sharded-bf16': [64, 16, 10000, false] } as const;
    for (const [name, [hidden, headDim, theta, tied]] of Object.entries(want)) {
      const file = new URL(`${name}/config.json`, dir);
      const c = parseQwen3Config(JSON.parse(await readFile(file, 'utf8')), `${name}/config.json`);
      expect([c.hiddenSize, c.headDim, c.tieWordEmbeddings, c.eosTokenIds, c.bosTokenId, c.maxPositionEmbeddings]).toEqual([hidden, headDim, tied, [2], 1, 512]);
      expect(c.ropeTheta).toBe(theta);
    }
  });

  it('has presets for 0.6B, 1.7B and 4B', () => {
    expect(Object.keys(QWEN3_PRESETS)).toEqual(['Qwen3-0.6B', 'Qwen3-1.7B', 'Qwen3-4B']);
    const p4 = qwen3Preset('Qwen3-4B');
    expect([p4.hiddenSize, p4.intermediateSize, p4.numLayers, p4.numHeads, p4.numKvHeads, p4.headDim, p4.tieWordEmbeddings]).toEqual([2560, 9728, 36, 32, 8, 128, true]);
    const p17 = qwen3Preset('Qwen3-1.7B');
    expect([p17.hiddenSize, p17.intermediateSize, p17.numLayers, p17.numHeads, p17.numKvHeads]).toEqual([2048, 6144, 28, 16, 8]);
    expect(() => qwen3Preset('Qwen3-8B')).toThrow(/unknown Qwen3 preset Qwen3-8B/);
  });
});
