"""Checks on a GGUF file before Lumen trusts it: magic, header, completeness,
architecture, quantisation, size and chat template.  Uses llama.cpp's own `gguf`
reader rather than a hand-written parser."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ..errors import ModelError

GGUF_MAGIC = b"GGUF"

# Architectures llama.cpp loads that cannot generate text (encoders, vision towers,
# vocoders), and file types that are parts of a model rather than a model.
NON_GENERATIVE_ARCHITECTURES = frozenset({
    "bert", "nomic-bert", "nomic-bert-moe", "jina-bert-v2", "jina-bert-v3", "neo-bert",
    "modern-bert", "t5encoder", "clip", "wavtokenizer-dec", "roberta", "xlm-roberta"})
NON_MODEL_TYPES = frozenset({"adapter", "mmproj", "clip-vision", "vocab"})


class _Truncated(Exception):
    def __init__(self, needed: int, size: int) -> None:
        super().__init__(needed, size)
        self.needed, self.size = needed, size


def _checked_reader(path: Path):
    """gguf's reader, made to measure where the tensor data must end before it maps it,
    so a cut-short file is reported as such rather than as a reshape error."""
    import gguf
    import numpy as np

    class CheckedReader(gguf.GGUFReader):
        def _build_tensors(self, start_offs, fields):  # noqa: N802 (gguf's name)
            needed = 0
            for field in fields:
                _name_len, _name, _n_dims, dims, raw_dtype, offset = field.parts
                block, type_size = gguf.GGML_QUANT_SIZES[gguf.GGMLQuantizationType(raw_dtype[0])]
                n_bytes = int(np.prod(dims)) * type_size // block
                needed = max(needed, int(start_offs + offset[0]) + n_bytes)
            if needed > len(self.data):
                raise _Truncated(needed, len(self.data))
            super()._build_tensors(start_offs, fields)

    return CheckedReader(path, "r")


@dataclass(frozen=True)
class GGUFInfo:
    path: Path
    size: int
    version: int
    architecture: str
    quantisation: str
    context_length: int
    chat_template: str | None
    eos_token: str | None
    bos_token: str | None
    model_name: str
    tensor_count: int


def _memory_bytes() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def _quantisation_name(file_type: int | None) -> str:
    import gguf

    if file_type is None:
        return "unknown"
    try:
        return gguf.LlamaFileType(int(file_type)).name.removeprefix("MOSTLY_")
    except ValueError:
        return f"type {file_type}"


def inspect_gguf(path: Path) -> GGUFInfo:
    """Read and check a GGUF file's header; raise ModelError saying what is wrong."""
    path = Path(path)
    fix_copy = "Copy the file again from its source and check its checksum."
    try:
        size = path.stat().st_size
        with path.open("rb") as handle:
            magic = handle.read(4)
    except FileNotFoundError:
        raise ModelError(f"There is no file at {path}.", "Check the path and try again.") from None
    except OSError as exc:
        raise ModelError(f"The file {path} cannot be read ({exc.strerror or exc}).",
                         "Check that your user may read it.") from exc
    if magic != GGUF_MAGIC:
        raise ModelError(
            f"{path.name} is not a GGUF model file (it does not start with 'GGUF').",
            "Lumen runs llama.cpp models in GGUF format; convert or download the GGUF version "
            "(for example a Q4_K_M file).",
        )

    try:
        reader = _checked_reader(path)
    except _Truncated as cut:
        raise ModelError(
            f"{path.name} is truncated: it holds {cut.size:,} bytes but its weights need "
            f"{cut.needed:,}.", fix_copy) from None
    except Exception as exc:  # the reader raises many kinds on a damaged header
        raise ModelError(f"{path.name} is damaged: its GGUF header cannot be read "
                         f"({type(exc).__name__}).", fix_copy) from None

    def value(key: str):
        field = reader.fields.get(key)
        return field.contents() if field is not None else None

    architecture = value("general.architecture") or ""
    if not architecture:
        raise ModelError(f"{path.name} does not say which model architecture it is.",
                         "This is not a usable llama.cpp model file.")
    model_type = str(value("general.type") or "model")
    if model_type in NON_MODEL_TYPES:
        raise ModelError(f"{path.name} is a {model_type} file, not a complete model.",
                         "Add the model file itself (the one without 'mmproj' or 'lora' in its name).")
    if architecture in NON_GENERATIVE_ARCHITECTURES:
        raise ModelError(f"{path.name} is a '{architecture}' model, which cannot write text.",
                         "Add an instruction-tuned chat model (for example Qwen2.5-7B-Instruct).")
    if not reader.tensors:
        raise ModelError(f"{path.name} contains no weights (it may be a vocabulary-only file).",
                         "Use the full model file.")
    if value("tokenizer.ggml.tokens") is None:
        raise ModelError(f"{path.name} has no tokenizer vocabulary.",
                         "Use a complete GGUF model file; llama.cpp cannot run this one.")
    memory = _memory_bytes()
    if memory and size > memory * 0.8:
        raise ModelError(
            f"{path.name} needs about {size / 2**30:.1f} GiB of memory, but this machine "
            f"has {memory / 2**30:.1f} GiB.",
            "Use a smaller or more strongly quantised file (for example Q4_K_M of a smaller model).",
        )
    tokens = value("tokenizer.ggml.tokens")

    def token_text(key: str) -> str | None:
        index = value(key)
        if tokens is None or index is None or not 0 <= int(index) < len(tokens):
            return None
        return tokens[int(index)]

    return GGUFInfo(
        path=path,
        size=size,
        version=int(value("GGUF.version") or 0),
        architecture=str(architecture),
        quantisation=_quantisation_name(value("general.file_type")),
        context_length=int(value(f"{architecture}.context_length") or 0),
        chat_template=value("tokenizer.chat_template") or None,
        eos_token=token_text("tokenizer.ggml.eos_token_id"),
        bos_token=token_text("tokenizer.ggml.bos_token_id"),
        model_name=str(value("general.name") or path.stem),
        tensor_count=len(reader.tensors),
    )
