"""Chat templates are resolved explicitly, never llama-cpp-python's llama-2 fallback."""

import pytest

from desktop_app.core.errors import ChatTemplateError
from desktop_app.core.models.catalog import ModelFile, ModelSpec
from desktop_app.core.models.chat import known_formats, resolve_chat_template
from desktop_app.core.models.runtime import LlamaModel

MESSAGES = [{"role": "system", "content": "You help patients."},
            {"role": "user", "content": "What does BID mean on a prescription?"}]
LLAMA2_MARKERS = ("<<SYS>>", "[INST]")


def test_smollm2_uses_its_own_template(runtime):
    model = runtime.for_role("generator")
    assert model.chat_template_source == "gguf"
    prompt = model.render(MESSAGES)
    assert prompt.startswith("<|im_start|>system\nYou help patients.<|im_end|>")
    assert prompt.endswith("<|im_start|>assistant\n")
    assert not any(marker in prompt for marker in LLAMA2_MARKERS)


def _spec(path, chat_format):
    return ModelSpec(id="no-template", name="no template", kind="gguf", roles=("generator",),
                     chat_format=chat_format, source="user",
                     files=(ModelFile(name=path.name, location=str(path)),))


@pytest.mark.slow
def test_gguf_without_template_uses_the_catalog_format(gguf_without_template, runtime_settings,
                                                       runtime):
    """SmolLM2 stripped of its template, run with the catalog's chatml, prompts and answers
    exactly as SmolLM2 with its own template does."""
    original = runtime.for_role("generator")
    model = LlamaModel(_spec(gguf_without_template, "chatml"), gguf_without_template,
                       runtime_settings, sha256="")
    try:
        assert "tokenizer.chat_template" not in model.llama.metadata
        assert model.chat_template_source == "format:chatml"
        prompt = model.render(MESSAGES)
        assert prompt == original.render(MESSAGES)
        assert not any(marker in prompt for marker in LLAMA2_MARKERS)
        stripped = model.generate(MESSAGES, max_tokens=24)
        reference = original.generate(MESSAGES, max_tokens=24)
        assert stripped.text.strip() and stripped.text == reference.text
    finally:
        model.close()


def test_gguf_without_template_or_format_is_refused(gguf_without_template, runtime_settings):
    with pytest.raises(ChatTemplateError) as info:
        LlamaModel(_spec(gguf_without_template, ""), gguf_without_template, runtime_settings, "")
    assert "no chat template" in info.value.message
    assert "--chat-format" in info.value.fix


@pytest.mark.parametrize("name,first_marker", [
    ("chatml", "<|im_start|>system"), ("phi3", "<|system|>"), ("llama3", "<|start_header_id|>system"),
    ("gemma", "<start_of_turn>user\nYou help patients."),
])
def test_known_formats_render_their_own_markers(name, first_marker):
    from desktop_app.core.models.chat import ChatRenderer

    template = resolve_chat_template(None, name, model_label="test")
    prompt = ChatRenderer(template, bos_token="<s>", eos_token="</s>").render(MESSAGES)
    assert first_marker in prompt
    assert "What does BID mean" in prompt
    assert not any(marker in prompt for marker in LLAMA2_MARKERS)
    assert set(known_formats()) >= {"chatml", "phi3", "gemma", "llama3"}
