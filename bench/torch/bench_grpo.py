"""PyTorch (CUDA) baseline for bench/grpo-step.ts: one GRPO step of the Voting workflow on random weights of a
Qwen3 shape (transformers Qwen3ForCausalLM built from a config, no download, bf16, sdpa), the same shape as
troupe's step, timed by phase around torch.cuda.synchronize(): one untimed step, then one timed.

Shape: 8 tasks x 8 rollouts = 64 episodes; each 3 generators (prompt GEN_PROMPT = 36 tokens, troupe's
generator turn under the Qwen3 tokenizer), then the aggregator, whose prompt is its task's header and the three
candidates' tokens (AGG_PROMPT = 459 tokens, the mean length of troupe's aggregator prompt over 128-token
random candidates). 128 new tokens per call at T = 0.7, top-p 1, EOS never ends a call. Two PEFT LoRA adapters,
r64 / alpha 32 on all seven linears (troupe's DEFAULT_LORA), f32 like troupe's: `generator` and `aggregator`.

- rollout: a hand-written decode loop (as ../shared/bench/rollout_anchor_graphs.py): static KV cache, eager
  batched prefill, each decode step one CUDA graph replay (forward + Gumbel-max sampling + the token's log-prob
  and entropy, which troupe's sampler returns too), q/k/v and gate/up fused: a fused copy of the PEFT model's
  frozen base weights and bf16 copies of the adapter's LoRA weights (refreshed at the start of each rollout, as
  the adapters change every step). Generators (192 rows, generator adapter) first, then aggregators (64 rows,
  aggregator adapter).
- reward: troupe's bench reward without the grade (a random model never boxes the right sum): the share of even
  token ids in the aggregator's pick, taken to be candidate 1 (what troupe's parseChoice falls back to on
  random text); advantages (r - mean) / (std + 1e-6) per task (every slot of a task has the episode's reward).
- update: per adapter, micro-batches of at most 8192 tokens (whole sequences of one role, no padding: a role's
  sequences have one length), forward with logits for the response positions only, log-probs and entropy at
  T = 0.7, the GRPO clipped loss (verl: clip 0.2 / 0.28, dual clip 3, seq-mean-token-mean over the adapter's
  sequences; logp_old = this forward's, as troupe's with one epoch and one mini-batch), backward, grad norm
  clipped to 1, torch.optim.AdamW (lr 2e-5, weight decay 0.01). No gradient checkpointing.

Rows (names as troupe's): grpo_voting_<preset>_{step,rollout,reward,update}_s, _tok_per_s (prompt + response
tokens of every sequence / step seconds) and _tokens (that count).

    python3 bench/torch/bench_grpo.py --out bench/torch/grpo.json [--preset Qwen3-0.6B] [--filter TEXT]
"""
import argparse
import json
import sys
import time

import torch
import torch.nn.functional as F
from peft import LoraConfig, get_peft_model
from transformers import Qwen3Config, Qwen3ForCausalLM

PRESETS = {
    "Qwen3-0.6B": dict(hidden_size=1024, intermediate_size=3072, num_hidden_layers=28, num_attention_heads=16),
    "Qwen3-1.7B": dict(hidden_size=2048, intermediate_size=6144, num_hidden_layers=28, num_attention_heads=16),
    "Qwen3-4B": dict(hidden_size=2560, intermediate_size=9728, num_hidden_layers=36, num_attention_heads=32),
}
TASKS, GROUP, VOTERS, NEW = 8, 8, 3, 128
GEN_PROMPT, AGG_PROMPT = 36, 459
NKV, HD, VOCAB, ROPE_THETA, EPS = 8, 128, 151936, 1e6, 1e-6
# Prompt ids are drawn below Qwen3's first special token.
TEXT_VOCAB = 151643
RANK, ALPHA = 64, 32
TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
ROLES = ("generator", "aggregator")
TEMPERATURE = 0.7
CLIP_LOW, CLIP_HIGH, DUAL_CLIP = 0.2, 0.28, 3.0
LR, WEIGHT_DECAY, MAX_GRAD_NORM = 2e-5, 0.01, 1.0
MICRO_BATCH_TOKENS = 8192
DEV, BF16 = "cuda", torch.bfloat16


def lora_config():
    return LoraConfig(r=RANK, lora_alpha=ALPHA, target_modules=TARGETS, lora_dropout=0.0, bias="none", task_type="CAUSAL_LM")


def build(preset):
    common = dict(num_key_value_heads=NKV, head_dim=HD, vocab_size=VOCAB, tie_word_embeddings=True, rms_norm_eps=EPS,
                  max_position_embeddings=40960, attn_implementation="sdpa")
    try:
        config = Qwen3Config(**PRESETS[preset], **common, rope_parameters={"rope_type": "default", "rope_theta": ROPE_THETA})
    except TypeError:
        config = Qwen3Config(**PRESETS[preset], **common, rope_theta=ROPE_THETA)
    torch.manual_seed(0)
    with torch.device(DEV):
        model = Qwen3ForCausalLM(config).to(BF16)
    model = get_peft_model(model, lora_config(), adapter_name=ROLES[0])
    model.add_adapter(ROLES[1], lora_config())
    # troupe keeps LoRA weights (and their gradients and moments) in f32.
    for name, p in model.named_parameters():
        if "lora_" in name:
            p.data = p.data.float()
    return model.train(), config


def rms(x, weight):
    return (x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + EPS)).to(BF16) * weight


class FusedLinear:
    """PEFT LoRA linears that share an input (q/k/v, gate/up, or one alone) as one base matmul plus the LoRA of one
    adapter: A stacked, each B on its own, bf16 copies refreshed from the PEFT weights by load()."""

    def __init__(self, modules):
        self.modules = modules
        self.weight = torch.cat([m.base_layer.weight for m in modules]).contiguous()
        self.a = torch.zeros(len(modules) * RANK, self.weight.shape[1], device=DEV, dtype=BF16)
        self.bs = [torch.zeros(m.base_layer.weight.shape[0], RANK, device=DEV, dtype=BF16) for m in modules]

    def load(self, role):
        for i, m in enumerate(self.modules):
            self.a[i * RANK:(i + 1) * RANK].copy_(m.lora_A[role].weight)
            self.bs[i].copy_(m.lora_B[role].weight)

    def __call__(self, x):
        xa = (x @ self.a.T).split(RANK, -1)
        return x @ self.weight.T + torch.cat([h @ b.T for h, b in zip(xa, self.bs)], -1) * (ALPHA / RANK)


class Layer:
    def __init__(self, layer, config):
        attn, mlp = layer.self_attn, layer.mlp
        self.heads, self.inter = config.num_attention_heads, config.intermediate_size
        self.norm1, self.norm2 = layer.input_layernorm.weight, layer.post_attention_layernorm.weight
        self.q_norm, self.k_norm = attn.q_norm.weight, attn.k_norm.weight
        self.qkv = FusedLinear([attn.q_proj, attn.k_proj, attn.v_proj])
        self.o = FusedLinear([attn.o_proj])
        self.gate_up = FusedLinear([mlp.gate_proj, mlp.up_proj])
        self.down = FusedLinear([mlp.down_proj])
        self.linears = [self.qkv, self.o, self.gate_up, self.down]

    def qkv_heads(self, x, pos, inv_freq):
        """q [B, heads, T, HD], k and v [B, NKV, T, HD] of x [B, T, H] at positions pos [B, T]."""
        b, t, _ = x.shape
        q, k, v = self.qkv(rms(x, self.norm1)).split([self.heads * HD, NKV * HD, NKV * HD], -1)
        q = rope(rms(q.view(b, t, self.heads, HD), self.q_norm).transpose(1, 2), pos, inv_freq)
        k = rope(rms(k.view(b, t, NKV, HD), self.k_norm).transpose(1, 2), pos, inv_freq)
        return q, k, v.view(b, t, NKV, HD).transpose(1, 2)

    def finish(self, x, attn):
        """The residual of the attention output [B, heads, T, HD], then the MLP block."""
        b, t, _ = x.shape
        x = x + self.o(attn.transpose(1, 2).reshape(b, t, self.heads * HD))
        gate, up = self.gate_up(rms(x, self.norm2)).split([self.inter, self.inter], -1)
        return x + self.down(F.silu(gate) * up)


def rope(x, pos, inv_freq):
    f = pos[:, None, :, None].float() * inv_freq
    c, s = f.cos(), f.sin()
    x1, x2 = x[..., : HD // 2].float(), x[..., HD // 2:].float()
    return torch.cat([x1 * c - x2 * s, x2 * c + x1 * s], -1).to(BF16)


class Net:
    """The PEFT model's weights in the decode loop's form, with one adapter's LoRA loaded at a time."""

    def __init__(self, model, config):
        base = model.get_base_model().model
        self.embed, self.norm = base.embed_tokens.weight, base.norm.weight
        self.layers = [Layer(layer, config) for layer in base.layers]
        self.inv_freq = 1.0 / (ROPE_THETA ** (torch.arange(0, HD, 2, device=DEV).float() / HD))

    def load_adapter(self, role):
        for layer in self.layers:
            for linear in layer.linears:
                linear.load(role)

    def logits(self, h):
        return rms(h, self.norm) @ self.embed.T


class GraphRollout:
    """`rows` sequences of one prompt length: KV cache [layers, rows, NKV, prompt + NEW, HD], an eager prefill
    that samples the first token, then NEW - 1 decode steps, each one replay of a captured CUDA graph."""

    def __init__(self, net, rows, prompt_len):
        self.net, self.rows, self.prompt_len = net, rows, prompt_len
        seq = prompt_len + NEW
        self.k = torch.zeros(len(net.layers), rows, NKV, seq, HD, device=DEV, dtype=BF16)
        self.v = torch.zeros_like(self.k)
        self.slots = torch.arange(seq, device=DEV)
        self.cur = torch.zeros(rows, dtype=torch.long, device=DEV)  # the newest token of each row
        self.pos = torch.zeros((), dtype=torch.long, device=DEV)  # its position (every row's: one prompt length)
        self.col = torch.zeros(1, dtype=torch.long, device=DEV)  # the output column of the next draw
        self.tokens = torch.zeros(rows, NEW, dtype=torch.long, device=DEV)
        self.logprobs = torch.zeros(rows, NEW, device=DEV)
        self.entropies = torch.zeros(rows, NEW, device=DEV)
        self.graph = self._capture()

    def _sample(self, logits):
        """Draws a token per row from softmax(logits / T) (Gumbel-max) into column col, with its log-prob and entropy."""
        logits = logits.float() / TEMPERATURE
        logp = logits.log_softmax(-1)
        gumbel = -torch.log(-torch.log(torch.rand_like(logits).clamp_(1e-20, 1)))
        token = (logits + gumbel).argmax(-1, keepdim=True)
        self.tokens.index_copy_(1, self.col, token)
        self.logprobs.index_copy_(1, self.col, logp.gather(-1, token))
        self.entropies.index_copy_(1, self.col, -(logp.exp() * logp).sum(-1, keepdim=True))
        self.cur.copy_(token[:, 0])
        self.col.add_(1)

    def _decode_step(self):
        net = self.net
        x = net.embed[self.cur][:, None]
        pos = self.pos.view(1, 1).expand(self.rows, 1)
        visible = (self.slots <= self.pos).view(1, 1, 1, -1)
        for li, layer in enumerate(net.layers):
            q, k, v = layer.qkv_heads(x, pos, net.inv_freq)
            self.k[li].index_copy_(2, self.pos.view(1), k)
            self.v[li].index_copy_(2, self.pos.view(1), v)
            attn = F.scaled_dot_product_attention(q, self.k[li], self.v[li], attn_mask=visible, enable_gqa=True)
            x = layer.finish(x, attn)
        self._sample(net.logits(x[:, 0]))
        self.pos.add_(1)

    def _capture(self):
        # Eager steps on a side stream first, as CUDA graph capture asks; what they write, prefill overwrites.
        self.pos.fill_(self.prompt_len)
        self.col.fill_(1)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                self._decode_step()
        torch.cuda.current_stream().wait_stream(side)
        self.pos.fill_(self.prompt_len)
        self.col.fill_(1)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            self._decode_step()
        return graph

    def run(self, ids):
        """NEW tokens after each row of ids [rows, prompt_len]."""
        net = self.net
        x = net.embed[ids]
        pos = torch.arange(self.prompt_len, device=DEV).expand(self.rows, -1)
        for li, layer in enumerate(net.layers):
            q, k, v = layer.qkv_heads(x, pos, net.inv_freq)
            self.k[li, :, :, : self.prompt_len] = k
            self.v[li, :, :, : self.prompt_len] = v
            x = layer.finish(x, F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True))
        self.pos.fill_(self.prompt_len)
        self.col.zero_()
        self._sample(net.logits(x[:, -1]))
        for _ in range(NEW - 1):
            self.graph.replay()
        return self.tokens.clone()


def rollout(net, generators, aggregators, gen_prompts, agg_headers):
    """Generator turns, then aggregator turns: the whole sequences, generators' [episodes * VOTERS, GEN_PROMPT + NEW]
    (episode-major) and aggregators' [episodes, AGG_PROMPT + NEW]."""
    net.load_adapter("generator")
    gen_prompt_ids = gen_prompts.repeat_interleave(GROUP * VOTERS, 0)
    gen_tokens = generators.run(gen_prompt_ids)
    candidates = gen_tokens.view(TASKS * GROUP, VOTERS * NEW)
    agg_prompt_ids = torch.cat([agg_headers.repeat_interleave(GROUP, 0), candidates], 1)
    net.load_adapter("aggregator")
    agg_tokens = aggregators.run(agg_prompt_ids)
    return torch.cat([gen_prompt_ids, gen_tokens], 1), torch.cat([agg_prompt_ids, agg_tokens], 1)


def advantages(gen_ids):
    """Per episode: the even-id share of candidate 1's response, normalised within its task's group."""
    picked = gen_ids[:, -NEW:].view(TASKS, GROUP, VOTERS, NEW)[:, :, 0]
    reward = (picked % 2 == 0).float().mean(-1)
    return ((reward - reward.mean(1, keepdim=True)) / (reward.std(1, keepdim=True) + 1e-6)).flatten()


def policy_loss(model, ids, adv, seq_total):
    """The GRPO clipped loss of whole sequences ids [n, L] (response: the last NEW tokens), and their mean entropy."""
    # Logits at the positions that predict the response tokens only (the last one predicts past the sequence).
    logits = model(input_ids=ids, use_cache=False, logits_to_keep=NEW + 1).logits[:, :-1]
    logp_all = (logits.float() / TEMPERATURE).log_softmax(-1)
    logp = logp_all.gather(-1, ids[:, -NEW:, None]).squeeze(-1)
    with torch.no_grad():
        entropy = -(logp_all.exp() * logp_all).sum(-1).mean()
    ratio = torch.exp((logp - logp.detach()).clamp(-20, 20))
    a = adv[:, None]
    pg = torch.maximum(-a * ratio, -a * ratio.clamp(1 - CLIP_LOW, 1 + CLIP_HIGH))
    pg = torch.where(a < 0, torch.minimum(pg, -a * DUAL_CLIP), pg)
    return pg.mean(-1).sum() / seq_total, entropy


def update(model, optimizers, params, batches):
    """One AdamW step per adapter over its sequences {role: (ids, advantages)}; the mean entropy of each role."""
    entropy = {}
    for role, (ids, adv) in batches.items():
        model.set_adapter(role)
        rows = max(1, MICRO_BATCH_TOKENS // ids.shape[1])
        parts = []
        for start in range(0, ids.shape[0], rows):
            loss, ent = policy_loss(model, ids[start:start + rows], adv[start:start + rows], ids.shape[0])
            loss.backward()
            parts.append(ent)
        torch.nn.utils.clip_grad_norm_(params[role], MAX_GRAD_NORM)
        optimizers[role].step()
        optimizers[role].zero_grad(set_to_none=True)
        entropy[role] = torch.stack(parts).mean()
    return entropy


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="JSON file for the rows [{name, value, unit}]")
    ap.add_argument("--preset", default="Qwen3-0.6B", choices=sorted(PRESETS))
    ap.add_argument("--filter", default="", help="only names containing this text")
    args = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    model, config = build(args.preset)
    params = {role: [p for n, p in model.named_parameters() if f".{role}." in n] for role in ROLES}
    optimizers = {role: torch.optim.AdamW(params[role], lr=LR, weight_decay=WEIGHT_DECAY) for role in ROLES}
    net = Net(model, config)
    with torch.no_grad():
        generators = GraphRollout(net, TASKS * GROUP * VOTERS, GEN_PROMPT)
        aggregators = GraphRollout(net, TASKS * GROUP, AGG_PROMPT)
    gen_prompts = torch.randint(0, TEXT_VOCAB, (TASKS, GEN_PROMPT), device=DEV)
    agg_headers = torch.randint(0, TEXT_VOCAB, (TASKS, AGG_PROMPT - VOTERS * NEW), device=DEV)

    def step():
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        with torch.no_grad():
            gen_ids, agg_ids = rollout(net, generators, aggregators, gen_prompts, agg_headers)
        torch.cuda.synchronize()
        t1 = time.perf_counter()
        with torch.no_grad():
            adv = advantages(gen_ids)
        torch.cuda.synchronize()
        t2 = time.perf_counter()
        entropy = update(model, optimizers, params, {"generator": (gen_ids, adv.repeat_interleave(VOTERS)), "aggregator": (agg_ids, adv)})
        torch.cuda.synchronize()
        t3 = time.perf_counter()
        tokens = gen_ids.numel() + agg_ids.numel()
        stats = f"advantage |mean| {adv.abs().mean().item():.3f}, entropy " + ", ".join(f"{r} {e.item():.2f}" for r, e in entropy.items())
        return dict(step=t3 - t0, rollout=t1 - t0, reward=t2 - t1, update=t3 - t2, tokens=tokens), stats

    step()  # cuBLAS / sdpa kernels chosen, the caching allocator filled
    t, stats = step()
    print(stats, file=sys.stderr)
    prefix = f"grpo_voting_{args.preset.lower()}"
    rows = []
    for name, value, unit in [
        *[(f"{p}_s", t[p], "s") for p in ("step", "rollout", "reward", "update")],
        ("tok_per_s", t["tokens"] / t["step"], "tokens/s"),
        ("tokens", t["tokens"], "tokens"),
    ]:
        full = f"{prefix}_{name}"
        if args.filter in full:
            rows.append({"name": full, "value": value, "unit": unit})
            print(f"{full:40s} {value:12.4g} {unit}", file=sys.stderr)
    with open(args.out, "w") as f:
        json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
