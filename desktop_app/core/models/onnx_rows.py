"""The embedder's word table read a row at a time.

The int8 MiniLM Lumen ships stores its word table (30,522 × 384) as int8 with a scale per
row and widens it in the graph: Cast → Mul → Gather.  onnxruntime runs those nodes as
written, so every call, even for one short sentence, widens the whole table to float32
twice over (about 90 MB, for the few rows the sentence uses) before picking its rows.
Picking the rows first and widening only them (Gather → Cast → Mul, and the row scales
gathered the same way) gives bit-identical vectors: a cast and a multiplication by the
row's own scale do not care which rows were taken first.

The rewritten graph is a copy kept in the profile's cache, made once per model file; the
model file itself is never changed.  The edit is done on the protobuf wire format by hand
(about a hundred lines) rather than with the `onnx` package, which would add 31 MB to the
install for this one edit; the copy is used only after onnxruntime has loaded it and it
gave the same vectors as the original on probe sentences (`Embedder`).
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

REWRITE_VERSION = 1

# Field numbers of onnx.proto (ModelProto.graph, GraphProto.node / initializer / output,
# NodeProto.input / output / name / op_type / attribute, TensorProto.dims / name).
MODEL_GRAPH = 7
GRAPH_NODE, GRAPH_INITIALIZER, GRAPH_OUTPUT = 1, 5, 12
NODE_INPUT, NODE_OUTPUT, NODE_NAME, NODE_OP_TYPE, NODE_ATTRIBUTE = 1, 2, 3, 4, 5
TENSOR_DIMS, TENSOR_NAME = 1, 8
VARINT, FIXED64, LENGTH, FIXED32 = 0, 1, 2, 5


class WireFormatError(ValueError):
    """The bytes are not the protobuf this module expects."""


@dataclass(frozen=True)
class Field:
    number: int
    wire_type: int
    value: int | bytes  # a varint's value, or a length-delimited field's payload
    raw: bytes  # the whole field as it was written: tag, length and payload


def _read_varint(data: bytes, position: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if position >= len(data) or shift > 63:
            raise WireFormatError("a varint runs past the end")
        byte = data[position]
        position += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, position
        shift += 7


def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1  # negative int64 values are written as ten bytes
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def fields(data: bytes) -> list[Field]:
    """A message's fields in the order they are written."""
    out: list[Field] = []
    position = 0
    while position < len(data):
        start = position
        tag, position = _read_varint(data, position)
        number, wire_type = tag >> 3, tag & 7
        value: int | bytes
        if wire_type == VARINT:
            value, position = _read_varint(data, position)
        elif wire_type == LENGTH:
            length, position = _read_varint(data, position)
            if position + length > len(data):
                raise WireFormatError("a field runs past the end")
            value, position = data[position:position + length], position + length
        elif wire_type in (FIXED64, FIXED32):
            size = 8 if wire_type == FIXED64 else 4
            value, position = data[position:position + size], position + size
        else:
            raise WireFormatError(f"wire type {wire_type} is not used by ONNX")
        if position > len(data):
            raise WireFormatError("a field runs past the end")
        out.append(Field(number, wire_type, value, data[start:position]))
    return out


def length_field(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | LENGTH) + _varint(len(payload)) + payload


def _strings(parts: list[Field], number: int) -> list[str]:
    return [bytes(f.value).decode("utf-8") for f in parts
            if f.number == number and f.wire_type == LENGTH]


@dataclass
class Node:
    inputs: list[str]
    outputs: list[str]
    op_type: str
    attributes: list[bytes]  # each attribute field as written

    @classmethod
    def parse(cls, payload: bytes) -> "Node":
        parts = fields(payload)
        op = _strings(parts, NODE_OP_TYPE)
        return cls(_strings(parts, NODE_INPUT), _strings(parts, NODE_OUTPUT),
                   op[0] if op else "", [f.raw for f in parts if f.number == NODE_ATTRIBUTE])

    def encode(self, name: str) -> bytes:
        out = b"".join(length_field(NODE_INPUT, i.encode()) for i in self.inputs)
        out += b"".join(length_field(NODE_OUTPUT, o.encode()) for o in self.outputs)
        out += length_field(NODE_NAME, name.encode()) + length_field(NODE_OP_TYPE, self.op_type.encode())
        return out + b"".join(self.attributes)


def _tensor_dims(payload: bytes) -> tuple[str, list[int]]:
    parts = fields(payload)
    dims: list[int] = []
    for f in parts:
        if f.number != TENSOR_DIMS:
            continue
        if f.wire_type == VARINT:
            dims.append(int(f.value))
        elif f.wire_type == LENGTH:  # packed
            packed, position = bytes(f.value), 0
            while position < len(packed):
                value, position = _read_varint(packed, position)
                dims.append(value)
    names = _strings(parts, TENSOR_NAME)
    return (names[0] if names else ""), dims


def gather_rows_first(model: bytes) -> bytes | None:
    """The model with its widened-then-gathered tables gathered first, or None when it has
    no such table (another embedder: it is used as it is)."""
    model_fields = fields(model)
    graph_fields = [f for f in model_fields if f.number == MODEL_GRAPH and f.wire_type == LENGTH]
    if len(graph_fields) != 1:
        return None
    graph = fields(bytes(graph_fields[0].value))
    node_fields = [f for f in graph if f.number == GRAPH_NODE and f.wire_type == LENGTH]
    nodes = [Node.parse(bytes(f.value)) for f in node_fields]
    shapes = dict(_tensor_dims(bytes(f.value)) for f in graph
                  if f.number == GRAPH_INITIALIZER and f.wire_type == LENGTH)
    consumers: dict[str, list[int]] = {}
    for index, node in enumerate(nodes):
        for name in node.inputs:
            consumers.setdefault(name, []).append(index)
    producer = {out: index for index, node in enumerate(nodes) for out in node.outputs}
    graph_outputs = {name for f in graph if f.number == GRAPH_OUTPUT and f.wire_type == LENGTH
                     for name in _strings(fields(bytes(f.value)), 1)}

    replaced: dict[int, list[bytes]] = {}  # a Gather's index: the nodes that take its place
    dropped: set[int] = set()
    for g, gather in enumerate(nodes):
        if gather.op_type != "Gather" or len(gather.inputs) != 2 or len(gather.outputs) != 1:
            continue
        m = producer.get(gather.inputs[0])
        if m is None or nodes[m].op_type != "Mul" or len(nodes[m].inputs) != 2:
            continue
        widened, scale = nodes[m].inputs
        c = producer.get(widened)
        if c is None or nodes[c].op_type != "Cast" or len(nodes[c].inputs) != 1:
            continue
        table = nodes[c].inputs[0]
        if (table not in shapes or scale not in shapes or len(shapes[table]) != 2
                or consumers.get(widened) != [m] or consumers.get(gather.inputs[0]) != [g]
                or {widened, gather.inputs[0]} & graph_outputs
                or not _gather_axis_is_zero(gather)):
            continue
        rows = shapes[table][0]
        scale_shape = shapes[scale]
        per_row = scale_shape == [rows, 1]
        if not per_row and any(d != 1 for d in scale_shape):
            continue  # a scale per column or other shape: not a plain row table
        stem = f"lumen_rows_{g}"
        new = [Node([table, gather.inputs[1]], [f"{stem}_q"], "Gather", gather.attributes)]
        scale_rows = scale
        if per_row:
            new.append(Node([scale, gather.inputs[1]], [f"{stem}_scale"], "Gather",
                            gather.attributes))
            scale_rows = f"{stem}_scale"
        new.append(Node([f"{stem}_q"], [f"{stem}_f"], "Cast", nodes[c].attributes))
        new.append(Node([f"{stem}_f", scale_rows], list(gather.outputs), "Mul", []))
        replaced[g] = [length_field(GRAPH_NODE, node.encode(f"{stem}_{i}"))
                       for i, node in enumerate(new)]
        dropped.update((m, c))
    if not replaced:
        return None

    node_position = {id(f): i for i, f in enumerate(node_fields)}
    graph_out = bytearray()
    for f in graph:
        index = node_position.get(id(f))
        if index is None:
            graph_out += f.raw
        elif index in replaced:
            graph_out += b"".join(replaced[index])
        elif index not in dropped:
            graph_out += f.raw
    model_out = bytearray()
    for f in model_fields:
        model_out += length_field(MODEL_GRAPH, bytes(graph_out)) if f is graph_fields[0] else f.raw
    return bytes(model_out)


def _gather_axis_is_zero(node: Node) -> bool:
    for raw in node.attributes:
        attribute = fields(fields(raw)[0].value) if raw else []
        names = _strings(attribute, 1)
        if names and names[0] == "axis":
            values = [int(f.value) for f in attribute if f.number == 3 and f.wire_type == VARINT]
            return bool(values) and values[0] == 0
    return True  # Gather's axis defaults to 0


def rows_first_copy(model_path: Path, cache_dir: Path) -> tuple[Path | None, bool]:
    """The cached rewritten copy of `model_path` (made now if missing) and whether it was
    made now; None when the model has nothing to rewrite or the copy cannot be written.
    The key holds the file's place, size and time, so a replaced model gets a new copy."""
    model_path = Path(model_path)
    stat = model_path.stat()
    key = hashlib.sha256(f"{model_path.resolve()}|{stat.st_size}|{stat.st_mtime_ns}|"
                         f"{REWRITE_VERSION}".encode()).hexdigest()[:20]
    copy = Path(cache_dir) / "embedder" / f"{model_path.stem}-rows-{key}.onnx"
    if copy.is_file():
        return copy, False
    if not_rewritten(copy).is_file():
        return None, False
    rewritten = gather_rows_first(model_path.read_bytes())
    target = copy if rewritten is not None else not_rewritten(copy)
    try:
        copy.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(f"{target.name}.{os.getpid()}.tmp")
        partial.write_bytes(rewritten or b"")
        partial.replace(target)
    except OSError:
        return None, False
    return (copy, True) if rewritten is not None else (None, False)


def not_rewritten(copy: Path) -> Path:
    """The marker saying this model is used as it is (nothing to rewrite, or the copy did
    not give the original's vectors)."""
    return copy.with_suffix(".original")


def refuse(copy: Path) -> None:
    """Use the original from now on: the copy did not load or did not match."""
    try:
        copy.unlink(missing_ok=True)
        not_rewritten(copy).write_bytes(b"")
    except OSError:
        pass
