"""Derive the questions' model from the pinned all-MiniLM-L6-v2 int8 model: `.venv/bin/python
layers/embedding/derive_questions_model.py [--check]`.

Why a second model: the shipped model stores int8 weights but computes in float32 (ONNX Runtime turns
the weights back into float32 when it loads them), so a one-question run reads 42 MB of weights: ~4.5 ms
on one thread, as long as lexical search's whole query at 10,000 memories. The same weights computed in
int8 (ONNX Runtime's dynamic quantization: MatMulInteger over int8 weights, one int8 scale per output
column, activations quantized per run) embed a question in ~1.9 ms, and its vector agrees with the
shipped model's to a cosine of ~0.99, which moves no answer on the question bench (docs/search.md,
"Speed"). Only questions use it: stored vectors stay the shipped model's, so no mind is re-embedded, and a
memory compared with a memory (`similar`) stays exact.

What it does, with the pinned onnx and onnxruntime of requirements/dev.txt (the output is byte for byte
the same on every run, so its sha256 is pinned in synapse/embedding/minilm.py and a test derives it
again):
1. the pinned model.onnx (sha256-checked), its weights folded to float32 by ONNX Runtime's basic graph
   optimisation (constant folding only);
2. `onnxruntime.quantization.quantize_dynamic` over its MatMuls, int8, per channel;
3. the token and position tables put back as the source has them (int8 rows and their scales),
   rows turned into float32 after they are looked up;
4. each layer's attention as one MultiHeadAttention node (the same arithmetic, fewer nodes);
5. written to synapse_minilm_questions/model.onnx beside this script, which the EmbeddingLayer ships
   (layers/embedding/Makefile) and which synapse.embedding.minilm finds locally.
"""

from __future__ import annotations

import argparse
import hashlib
import logging
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
OUTPUT = HERE / "synapse_minilm_questions" / "model.onnx"
LAYERS, HEADS = 6, 12  # all-MiniLM-L6-v2: 6 layers of 12 heads of 32 dimensions


def derive(output: Path) -> None:
    import onnx
    import onnxruntime
    from onnxruntime.quantization import QuantType, quantize_dynamic

    sys.path.insert(0, str(HERE.parent / "synapse"))
    from synapse.embedding.minilm import MODEL_SHA256, model_path, verified

    source = verified(model_path(), MODEL_SHA256)
    with tempfile.TemporaryDirectory(prefix="synapse-questions-model-") as folder:
        folded, quantized = Path(folder) / "float32.onnx", Path(folder) / "int8.onnx"
        options = onnxruntime.SessionOptions()
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_BASIC
        options.optimized_model_filepath = str(folded)
        options.log_severity_level = 3
        onnxruntime.InferenceSession(source, sess_options=options, providers=["CPUExecutionProvider"])
        quantize_dynamic(
            folded, quantized, weight_type=QuantType.QInt8, op_types_to_quantize=["MatMul"], per_channel=True
        )
        model = onnx.load(quantized)
    with_source_tables(model, onnx.load_from_string(source))
    with_fused_attention(model)
    output.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(model, output)


def with_source_tables(model: Any, source: Any) -> None:
    """Put back the source's own int8 token and position tables (int8 rows, a scale a row) where
    folding left them float32, and look words up in them before turning the rows found into float32
    (Gather, then Cast and Mul: the same values as the source's Cast and Mul, then Gather). The
    tables a question looks words up in are then exactly the stored texts' model's, the file stays
    the source's size, and the session holds them in int8: 47 MB less than the folded float32
    table, which matters where a function holds both models. Quantized again instead
    (quantize_dynamic's Gather), they cost the conversation bench 0.017 of MRR."""
    from onnx import helper

    made_by = {out: node for node in source.graph.node for out in node.output}
    tables = {t.name: t for t in source.graph.initializer}
    nodes: list[Any] = []
    for node in model.graph.node:
        scaled = made_by.get(node.input[0]) if node.op_type == "Gather" else None
        if scaled is None or scaled.op_type != "Mul":
            nodes.append(node)
            continue
        rows, scales = made_by[scaled.input[0]].input[0], scaled.input[1]  # Cast(rows) x scales
        found = node.output[0]
        nodes += [
            helper.make_node("Gather", [rows, node.input[1]], [f"{found}_q"], axis=0, name=f"{found}_q"),
            helper.make_node("Cast", [f"{found}_q"], [f"{found}_f"], to=1, name=f"{found}_f"),
            helper.make_node("Gather", [scales, node.input[1]], [f"{found}_s"], axis=0, name=f"{found}_s"),
            helper.make_node("Mul", [f"{found}_f", f"{found}_s"], [found], name=found),
        ]
        model.graph.initializer.remove(next(t for t in model.graph.initializer if t.name == node.input[0]))
        model.graph.initializer.extend([tables[rows], tables[scales]])
    model.graph.ClearField("node")
    model.graph.node.extend(nodes)


def with_fused_attention(model: Any) -> None:
    """Each layer's attention (28 nodes as exported: reshapes, transposes, scaled scores, the mask,
    softmax and a NaN guard) as one `com.microsoft.MultiHeadAttention` over its Q, K and V
    projections, then every node and table nothing reads any more dropped: 451 nodes become 277 and
    a question embeds ~12 % faster (ONNX Runtime's own BERT optimizer does not recognise this
    export's attention). The arithmetic is the same up to float rounding, which now and then tips
    an activation's int8 rounding the other way: vectors agree with the unfused graph's to a cosine
    of 0.99995 on average (0.996 at worst), and with the stored texts' model exactly as well."""
    from onnx import TensorProto, helper

    graph = model.graph
    made_by = {out: node for node in graph.node for out in node.output}
    read_by: dict[str, list[Any]] = {}
    for node in graph.node:
        for name in node.input:
            read_by.setdefault(name, []).append(node)

    def after(name: str, *ops: str) -> Any:
        """The node reached from tensor `name` through one reader of each op in turn."""
        for op in ops:
            (node,) = [reader for reader in read_by.get(name, []) if reader.op_type == op]
            name = node.output[0]
        return node

    def projection(name: str) -> str:
        node = made_by[name]
        while node.op_type in ("Mul", "Reshape", "Transpose"):  # the heads' split, the 1/sqrt(d) scale
            node = made_by[node.input[0]]
        if node.op_type != "Add":
            raise ValueError(f"attention input {name!r} does not lead back to a projection's bias")
        return str(node.output[0])

    mask = "attention_mask_int32"
    fused: dict[str, Any] = {}
    for softmax in [node for node in graph.node if node.op_type == "Softmax"]:
        scores = made_by[made_by[softmax.input[0]].input[0]]  # MatMul(Q, K^T), then + the mask
        weighted = after(softmax.output[0], "IsNaN", "Where", "MatMul")  # probabilities x V
        merged = after(weighted.output[0], "Transpose", "Reshape")  # the heads joined again
        query, key, value = (projection(name) for name in (*scores.input, weighted.input[1]))
        inputs = [query, key, value, "", mask]
        fused[merged.output[0]] = helper.make_node(
            "MultiHeadAttention", inputs, [merged.output[0]], domain="com.microsoft", num_heads=HEADS,
            name=f"attention_{len(fused)}",
        )  # fmt: skip
    if len(fused) != LAYERS:
        raise ValueError(f"found {len(fused)} attentions, expected {LAYERS}")
    nodes = [helper.make_node("Cast", ["attention_mask"], [mask], to=TensorProto.INT32, name=mask)]
    nodes += [fused.get(node.output[0], node) for node in graph.node]
    needed = {out.name for out in graph.output}
    kept: list[Any] = []
    for node in reversed(nodes):
        if needed.intersection(node.output):
            kept.append(node)
            needed.update(name for name in node.input if name)
    graph.ClearField("node")
    graph.node.extend(reversed(kept))
    tables = [table for table in graph.initializer if table.name in needed]
    graph.ClearField("initializer")
    graph.initializer.extend(tables)
    if not any(opset.domain == "com.microsoft" for opset in model.opset_import):
        model.opset_import.append(helper.make_opsetid("com.microsoft", 1))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="derive into a temp file, compare with the pin")
    args = parser.parse_args()
    logging.disable(logging.WARNING)  # quantize_dynamic's advice to pre-process is for image models
    sys.path.insert(0, str(HERE.parent / "synapse"))
    from synapse.embedding.minilm import QUESTIONS_SHA256

    with tempfile.TemporaryDirectory(prefix="synapse-questions-check-") as folder:
        target = Path(folder) / "model.onnx" if args.check else OUTPUT
        derive(target)
        digest = hashlib.sha256(target.read_bytes()).hexdigest()
    pinned = digest == QUESTIONS_SHA256
    print(f"{target}: {digest} ({'the pinned file' if pinned else 'NOT the pinned file'})")
    return 0 if pinned or not args.check else 1


if __name__ == "__main__":
    raise SystemExit(main())
