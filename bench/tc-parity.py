"""Model-level check of the tensor-core matmul on the GPU machine: `troupe logits` and `troupe grad` on the
committed fixture checkpoints (test/fixtures/models, made by Hugging Face transformers + PEFT) with every
matmul forced onto tensor cores (TROUPE_MATMUL=tc) and with the f32 kernels (TROUPE_MATMUL=f32), each against
the fixture's reference: the error the tensor cores' f16 inputs add to the forward and to the LoRA backward.
usage: python3 bench/tc-parity.py "node .device/dist/troupe.mjs" OUT_DIR"""
import json, os, subprocess, sys
import numpy as np

troupe, out = sys.argv[1].split(), sys.argv[2]
root = "test/fixtures/models"


def load_file(path):
    """The F32 / I32 tensors of a safetensors file."""
    with open(path, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        header, data = json.loads(f.read(n)), f.read()
    dtypes = {"F32": "<f4", "I32": "<i4"}
    return {k: np.frombuffer(data[v["data_offsets"][0]:v["data_offsets"][1]], dtype=dtypes[v["dtype"]]).reshape(v["shape"])
            for k, v in header.items() if k != "__metadata__" and v["dtype"] in dtypes}


def run(env_matmul, args):
    env = dict(os.environ, TROUPE_MATMUL=env_matmul)
    r = subprocess.run(troupe + args, env=env, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"troupe {' '.join(args)} (TROUPE_MATMUL={env_matmul}) failed: {r.stderr[-2000:]}")


def rel(got, want):
    return float(np.abs(got - want).max() / max(np.abs(want).max(), 1e-30))


for name in ["gqa-tied", "mha-untied"]:
    d = os.path.join(root, name)
    ref = load_file(os.path.join(d, "reference.safetensors"))
    grad = load_file(os.path.join(d, "grad.safetensors"))
    for mode in ["f32", "tc"]:
        for dtype in ["f32", "f16"]:
            ids = ",".join(str(int(i)) for i in ref["ids"])
            f = os.path.join(out, f"{name}-{mode}-{dtype}.logits")
            run(mode, ["logits", "--model", d, "--ids", ids, "--out", f, "--dtype", dtype])
            logits = np.fromfile(f, dtype="<f4").reshape(ref["logits"].shape)
            g = os.path.join(out, f"{name}-{mode}-{dtype}.grad.safetensors")
            gids = ",".join(str(int(i)) for i in grad["ids"])
            run(mode, ["grad", "--model", d, "--adapter", os.path.join(d, "adapter"), "--ids", gids, "--out", g, "--dtype", dtype])
            got = load_file(g)
            keys = [k for k in got if k in grad and k not in ("ids", "loss", "logits")]
            worst = max(rel(got[k], grad[k]) for k in keys)
            print(f"{name:11} matmul {mode:3} weights {dtype}: logits rel err {rel(logits, ref['logits']):.2e}; "
                  f"{len(keys)} LoRA grads worst rel err {worst:.2e}", flush=True)
