"""Which of ONNX's backend node test cases form the "core" subset: the inference-relevant cases,
as ``shared/conformance/run_node_tests.py`` defines them (no training, loss, sequence, optional,
random, ai.onnx.ml, preview, string or fp8/fp4/int4/int2 cases).

The definition is repeated here rather than imported so that the frontend's test suite does not
depend on a file outside the repository; :data:`NON_CORE_TAGS` and the op sets are the
harness's.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import onnx
from onnx import GraphProto, TypeProto

SEQUENCE_OPS = {"SequenceAt", "SequenceConstruct", "SequenceEmpty", "SequenceErase", "SequenceInsert",
                "SequenceLength", "SequenceMap", "SplitToSequence", "ConcatFromSequence"}
OPTIONAL_OPS = {"Optional", "OptionalGetElement", "OptionalHasElement"}
RANDOM_OPS = {"RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike", "Bernoulli", "Multinomial"}
LOSS_OPS = {"SoftmaxCrossEntropyLoss", "NegativeLogLikelihoodLoss"}
LOWBIT_TYPES = {"FLOAT8E4M3FN", "FLOAT8E4M3FNUZ", "FLOAT8E5M2", "FLOAT8E5M2FNUZ", "FLOAT8E8M0", "FLOAT4E2M1",
                "INT4", "UINT4", "INT2", "UINT2"}
TRAINING_DOMAIN = "ai.onnx.preview.training"
NON_CORE_TAGS = ("training", "loss", "sequence", "optional", "random", "ml", "preview", "string", "lowbit_dtype")

_EXPANDED = re.compile(r"_expanded(_ver\d+)?$")


def base_name(name: str) -> str:
    """The case an ``*_expanded`` variant was generated from."""
    return _EXPANDED.sub("", name)


def _walk(graph: GraphProto, ops: set[tuple[str, str]], types: list[TypeProto]) -> None:
    for vi in [*graph.input, *graph.output, *graph.value_info]:
        types.append(vi.type)
    for node in graph.node:
        ops.add((node.domain or "ai.onnx", node.op_type))
        for a in node.attribute:
            if a.HasField("g"):
                _walk(a.g, ops, types)
            for g in a.graphs:
                _walk(g, ops, types)


def _type_facts(t: TypeProto, kinds: set[str], elems: set[str]) -> None:
    which = t.WhichOneof("value")
    if which is None:
        return
    kinds.add(which)
    if which == "tensor_type":
        if t.tensor_type.elem_type:
            elems.add(onnx.TensorProto.DataType.Name(t.tensor_type.elem_type))
    elif which == "sequence_type":
        _type_facts(t.sequence_type.elem_type, kinds, elems)
    elif which == "optional_type":
        _type_facts(t.optional_type.elem_type, kinds, elems)
    elif which == "map_type":
        _type_facts(t.map_type.value_type, kinds, elems)


def tags(name: str, model: onnx.ModelProto) -> set[str]:
    """The harness's tags of one case that decide whether it is core (a loss op is recognised by
    the single node's type; expanded variants inherit it by name)."""
    ops: set[tuple[str, str]] = set()
    types: list[TypeProto] = []
    _walk(model.graph, ops, types)
    kinds: set[str] = set()
    elems: set[str] = set()
    for t in types:
        _type_facts(t, kinds, elems)
    names = {op for _, op in ops}
    domains = {d for d, _ in ops}
    out: set[str] = set()
    if TRAINING_DOMAIN in domains or "training" in name:
        out.add("training")
    if names & SEQUENCE_OPS or "sequence_type" in kinds:
        out.add("sequence")
    if names & OPTIONAL_OPS or "optional_type" in kinds:
        out.add("optional")
    if names & RANDOM_OPS:
        out.add("random")
    if "ai.onnx.ml" in domains:
        out.add("ml")
    if "ai.onnx.preview" in domains:
        out.add("preview")
    if "STRING" in elems:
        out.add("string")
    if elems & LOWBIT_TYPES:
        out.add("lowbit_dtype")
    if len(model.graph.node) == 1 and model.graph.node[0].op_type in LOSS_OPS:
        out.add("loss")
    return out


def core_names(cases: Iterable[tuple[str, onnx.ModelProto]]) -> set[str]:
    """Names of the core cases among ``(name, model)`` pairs."""
    all_cases = list(cases)
    tagged = {name: tags(name, model) for name, model in all_cases}
    # an expanded variant is a loss case when the case it was expanded from is
    for name in tagged:
        b = base_name(name)
        if b != name and "loss" in tagged.get(b, set()):
            tagged[name].add("loss")
    return {n for n, t in tagged.items() if not t & set(NON_CORE_TAGS)}
