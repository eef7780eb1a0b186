"""The llama.cpp runtime on the real embedded model."""

import pytest

from desktop_app.core.errors import Cancelled, ContextOverflowError, ModelOutputError
from desktop_app.core.progress import CancelToken
from desktop_app.core.config import Paths, Settings

QUESTION = [{"role": "system", "content": "You are a concise assistant."},
            {"role": "user", "content": "What is the capital of France?"}]

ANSWER_SCHEMA = {
    "type": "object",
    "properties": {
        "answer": {"type": "string", "maxLength": 80},
        "confidence": {"type": "string", "enum": ["high", "medium", "low"]},
    },
    "required": ["answer", "confidence"],
    "additionalProperties": False,
}


def test_generation_is_deterministic_at_temperature_zero(runtime):
    model = runtime.for_role("generator")
    first = model.generate(QUESTION, max_tokens=24, temperature=0.0)
    second = model.generate(QUESTION, max_tokens=24, temperature=0.0)
    assert first.text == second.text  # what it says differs by CPU; that it repeats does not
    assert first.finish_reason in ("stop", "length") and first.prompt_tokens > 10
    assert first.completion_tokens <= 24
    assert first.model_sha256 == model.sha256 and len(model.sha256) == 64


def endless(model, monkeypatch) -> dict:
    """Make `model` write words until its token limit, whatever it would have said: a
    grammar that never ends.  Returns the json_schema argument that switches it on."""
    from llama_cpp import LlamaGrammar

    grammar = LlamaGrammar.from_string('root ::= [a-z] [a-z ]* " " root', verbose=False)
    monkeypatch.setattr(model, "_grammar", lambda schema: grammar)
    return {"type": "string"}


def test_streaming_callback_receives_the_whole_text(runtime, monkeypatch):
    model = runtime.for_role("generator")
    pieces = []
    generation = model.generate(QUESTION, max_tokens=24, on_token=pieces.append,
                                json_schema=endless(model, monkeypatch))
    assert len(pieces) == 24 and generation.finish_reason == "length"
    assert "".join(pieces) == generation.text


def test_cancel_stops_generation(runtime, monkeypatch):
    token = CancelToken()
    pieces = []
    model = runtime.for_role("generator")

    def on_token(piece):
        pieces.append(piece)
        token.cancel()
    with pytest.raises(Cancelled):
        model.generate([{"role": "user", "content": "Count from one to one hundred in words."}],
                       max_tokens=200, on_token=on_token, cancel=token,
                       json_schema=endless(model, monkeypatch))
    assert len(pieces) == 1


def _just_over_one_batch(llama) -> str:
    """A prompt a little longer than one of llama.cpp's batches: long enough to be
    evaluated in two, short enough that the cancel tests stay quick (each evaluates it
    three times)."""
    sentence = "The patient was admitted with chest pain. "
    per_sentence = len(llama.tokenize(sentence.encode("utf-8"), add_bos=False))
    prompt = sentence * (llama.n_batch // per_sentence + 8)
    assert len(llama.tokenize(prompt.encode("utf-8"))) > llama.n_batch
    return prompt


def test_a_cancel_stops_a_long_prompt_between_batches(runtime, monkeypatch):
    """Issue #33: Ctrl+Q during Simplify held the window while a long prompt was evaluated.
    The prompt is evaluated a batch at a time and a cancel stops it at the next batch; the
    batches are the ones llama.eval makes, so the answer is the same as before."""
    model = runtime.for_role("generator")
    llama = model.llama
    token = CancelToken()
    batches = []
    real_eval = llama.eval

    def eval_and_cancel(tokens):
        batches.append(len(tokens))
        real_eval(tokens)
        token.cancel()  # as the window's closing would, while the prompt is evaluated
    monkeypatch.setattr(llama, "eval", eval_and_cancel)
    long_prompt = _just_over_one_batch(llama)
    llama.reset()
    with pytest.raises(Cancelled):
        model.generate([{"role": "user", "content": long_prompt}], max_tokens=8, cancel=token)
    assert batches == [llama.n_batch]  # stopped after the first batch, not at the end
    monkeypatch.setattr(llama, "eval", real_eval)
    llama.reset()
    whole = model.generate([{"role": "user", "content": long_prompt}], max_tokens=8,
                           temperature=0.0)
    llama.reset()
    assert model.generate([{"role": "user", "content": long_prompt}], max_tokens=8,
                          temperature=0.0).text == whole.text


def test_a_cancel_stops_the_prompt_batch_being_evaluated(runtime, monkeypatch):
    """A cancel that comes while llama.cpp evaluates a batch stops that batch inside
    llama.cpp (its abort callback), not at the batch's end; what llama.cpp had written of
    the batch is dropped, so the next call answers as a fresh one does."""
    model = runtime.for_role("generator")
    llama = model.llama
    monkeypatch.setattr(llama, "cache", None)  # every call evaluates its prompt
    long_prompt = _just_over_one_batch(llama)
    llama.reset()
    fresh = model.generate([{"role": "user", "content": long_prompt}], max_tokens=8,
                           temperature=0.0).text
    token = CancelToken()
    real_eval = llama.eval
    finished = []

    def cancel_during_the_batch(tokens):
        token.cancel()  # arrives while the batch is being evaluated
        real_eval(tokens)
        finished.append(len(tokens))
    monkeypatch.setattr(llama, "eval", cancel_during_the_batch)
    llama.reset()
    with pytest.raises(Cancelled):
        model.generate([{"role": "user", "content": long_prompt}], max_tokens=8, cancel=token)
    assert finished == [] and llama.n_tokens == 0  # the batch did not run to its end
    monkeypatch.setattr(llama, "eval", real_eval)
    assert model.generate([{"role": "user", "content": long_prompt}], max_tokens=8,
                          temperature=0.0).text == fresh
    # A call with no cancel of its own is never stopped by an earlier call's.
    assert model.generate([{"role": "user", "content": "Say yes."}], max_tokens=4).text


def test_the_abort_flag_reads_as_llama_cpp_reads_it_and_follows_the_cancel(runtime):
    """The flag is read by a C function (no Python, no GIL, between llama.cpp's steps): set
    by the call's cancel token while the call runs, and down again after it."""
    import llama_cpp

    model = runtime.for_role("generator")
    flag = model.abort_flag
    assert not flag.reads_as_set()
    flag.raise_flag()
    assert flag.reads_as_set() and flag.raised
    flag.lower()
    assert not flag.reads_as_set()
    # It is the callback llama.cpp was given (the same C function, the same buffer).
    assert (llama_cpp.ctypes.cast(flag.callback, llama_cpp.ctypes.c_void_p).value
            == llama_cpp.ctypes.cast(llama_cpp.ctypes.CDLL(None).strlen,
                                     llama_cpp.ctypes.c_void_p).value)
    token, seen = CancelToken(), []

    def cancel_at_the_first_token(_text: str) -> None:
        token.cancel()
        seen.append(flag.reads_as_set())
    with pytest.raises(Cancelled):
        model.generate([{"role": "user", "content": "Count to twenty."}], max_tokens=32,
                       on_token=cancel_at_the_first_token, cancel=token)
    assert seen[:1] == [True] and not flag.reads_as_set()
    # A token cancelled before the call raises the flag as soon as the call listens.
    with token.listening(flag.raise_flag):
        assert flag.reads_as_set()
    flag.lower()


def test_both_model_classes_offer_what_the_pipelines_use(runtime):
    """The pipelines are written against TextModel; the local and the server model each
    have every member it names, with the same parameters."""
    import inspect

    from desktop_app.core.models.generation import TextModel
    from desktop_app.core.models.runtime import LlamaModel
    from desktop_app.core.models.server import ServerModel

    members = [name for name in vars(TextModel) if not name.startswith("_")]
    assert {"generate", "generate_json", "count_tokens", "identity"} <= set(members)
    for cls in (LlamaModel, ServerModel):
        for name in members:
            wanted, offered = vars(TextModel)[name], getattr(cls, name, None)
            assert offered is not None, f"{cls.__name__} has no {name}"
            if isinstance(wanted, property):
                assert isinstance(offered, property), f"{cls.__name__}.{name}"
            else:
                assert (list(inspect.signature(offered).parameters)
                        == list(inspect.signature(wanted).parameters)), f"{cls.__name__}.{name}"
    assert isinstance(runtime.for_role("generator"), TextModel)


def test_json_schema_output_is_parsed_from_the_real_model(runtime):
    value, generation = runtime.for_role("judge").generate_json(
        [{"role": "user", "content": "What is the capital of France? Reply as JSON with your "
                                     "answer and your confidence."}],
        ANSWER_SCHEMA)
    assert set(value) == {"answer", "confidence"}
    assert value["confidence"] in ("high", "medium", "low")
    assert len(value["answer"].encode("utf-8")) <= 80
    assert generation.finish_reason == "stop"


def test_generation_stops_at_the_token_limit(runtime, monkeypatch):
    model = runtime.for_role("judge")
    generation = model.generate([{"role": "user", "content": "Describe Paris."}], max_tokens=4,
                                json_schema=endless(model, monkeypatch))
    assert generation.finish_reason == "length" and generation.completion_tokens == 4


def test_prompt_longer_than_the_context_is_refused_with_numbers(runtime):
    model = runtime.for_role("generator")
    long_text = "The patient reports mild chest pain after exercise. " * 400
    with pytest.raises(ContextOverflowError) as info:
        model.generate([{"role": "user", "content": long_text}], max_tokens=64)
    error = info.value
    assert error.n_ctx == model.n_ctx and error.prompt_tokens > error.n_ctx
    assert str(error.n_ctx) in error.message and "Longest text a model reads at once" in error.fix


def test_roles_on_the_same_file_share_one_instance(runtime):
    assert runtime.for_role("generator") is runtime.for_role("reviewer")
    assert runtime.for_role("reviewer") is runtime.for_role("judge")
    assert len(runtime.loaded()) == 1


def test_calls_sharing_a_prefix_reuse_llama_state(runtime):
    model = runtime.for_role("generator")
    document = ("Discharge summary. The patient, a 58-year-old woman, was admitted with "
                "cellulitis of the left leg and treated with intravenous cefazolin. ") * 12

    def ask(question, role_text):
        return model.generate([{"role": "system", "content": "Answer from the document."},
                               {"role": "user", "content": f"{document}\n{role_text}: {question}"}],
                              max_tokens=12)
    first = ask("Why was she admitted?", "Question")
    second = ask("Which antibiotic was given?", "Question")
    assert first.prompt_tokens > 150
    # Only the question after the shared document is evaluated again.
    assert second.prompt_tokens_evaluated < 30 < second.prompt_tokens
    # An unrelated call in between, then the document again: the state cache restores it.
    model.generate(QUESTION, max_tokens=4)
    third = ask("How old is she?", "Question")
    assert third.prompt_tokens_evaluated < 30


def test_counting_tokens_matches_the_generation(runtime):
    model = runtime.for_role("generator")
    generation = model.generate(QUESTION, max_tokens=8)
    assert model.count_tokens(QUESTION) == generation.prompt_tokens


def test_same_prompt_same_answer_after_other_calls(runtime):
    model = runtime.for_role("generator")
    prompt = [{"role": "user", "content": "Give one tip for sleeping well."}]
    first = model.generate(prompt, max_tokens=20)
    model.generate(QUESTION, max_tokens=8)
    model.generate([{"role": "user", "content": "Give one tip for eating well."}], max_tokens=8)
    again = model.generate(prompt, max_tokens=20)
    assert again.text == first.text
    assert again.prompt_tokens_evaluated <= 2  # restored from the state cache


def test_saved_prompt_states_keep_no_table_of_logits(runtime):
    """Issue #35: each saved state copied llama-cpp-python's scores (batch size ×
    vocabulary floats, 100 MB for SmolLM2), which nothing reads without prompt lookup;
    the restore above still gives the same answer."""
    model = runtime.for_role("generator")
    model.generate([{"role": "user", "content": "Name one fruit."}], max_tokens=6)
    model.generate(QUESTION, max_tokens=6)
    states = list(model.llama.cache.cache_state.values())
    row = model.llama.n_vocab() * 4
    assert states and all(state.scores.nbytes <= row for state in states)
    assert model.llama.scores.nbytes == row
    assert model.llama.cache.cache_size < sum(s.llama_state_size for s in states) + len(states) * (
        row + model.llama.input_ids.nbytes) + 1


@pytest.mark.parametrize("stale_to_the_end", [False, True])
def test_a_cached_state_is_reused_only_as_far_as_it_goes(runtime, stale_to_the_end):
    """llama-cpp-python saves a state with its whole token buffer, stale tokens of older
    and longer prompts after its n_tokens.  When those match the next prompt, only the
    state's own tokens may be reused: evaluating from past its end made llama_decode fail
    (-1) in a consultation replay."""
    model = runtime.for_role("generator")
    llama = model.llama
    # A prompt of its own: no state another test left in the cache shares much of it.
    messages = [{"role": "system", "content": f"Case {int(stale_to_the_end)}: you are a "
                                              "patient in a consultation."},
                {"role": "user", "content": "Write your first message to the doctor."},
                {"role": "assistant", "content": "I have an itchy rash on my arms."},
                {"role": "user", "content": "The doctor wrote: Since when?"}]
    tokens = model.tokenize(model.render(messages))
    part = len(tokens) // 2
    with model._turn():
        llama.reset()
        llama.eval(tokens[:part])
        state = llama.save_state()
        assert state.n_tokens == part
        # The buffer past n_tokens as an older prompt would have left it: the same for a
        # while, then different.
        # while, then different (llama_decode refused it), or to the prompt's end (the
        # reply was read against keys and values that were never computed).
        stale = len(tokens) if stale_to_the_end else part + (len(tokens) - part) // 2
        state.input_ids[part:stale] = tokens[part:stale]
        state.input_ids[stale] = tokens[stale - 1] + 1
        llama.cache[tokens[:part]] = state
        llama.reset()  # nothing of this prompt is in the live state now
    generation = model.generate(messages, max_tokens=4, temperature=0.0)
    assert generation.prompt_tokens == len(tokens)
    assert generation.prompt_tokens_evaluated >= len(tokens) - part  # the rest, evaluated


def test_prompt_state_reuse_can_be_turned_off(profile, runtime_settings):
    import dataclasses

    from desktop_app.core.models.runtime import ModelRuntime

    settings = dataclasses.replace(runtime_settings, reuse_prompt_state=False)
    fresh = ModelRuntime(profile, settings)
    try:
        model = fresh.for_role("generator")
        first = model.generate(QUESTION, max_tokens=8)
        second = model.generate(QUESTION, max_tokens=8)
        assert second.prompt_tokens_evaluated == second.prompt_tokens
        assert second.text == first.text
    finally:
        fresh.close()


def test_the_context_starts_small_and_grows_when_a_prompt_needs_it(profile, runtime_settings):
    """Issue #35: llama.cpp allocates a context's key-value memory whole, so a model loads
    with room for context_start_size tokens and doubles it when a prompt and its answer
    need more.  The reply is the one a model loaded with its whole context gives, and the
    prompt limit stays the context size."""
    import dataclasses

    from desktop_app.core.errors import ModelError
    from desktop_app.core.models.runtime import ModelRuntime

    growing = ModelRuntime(profile, dataclasses.replace(runtime_settings, context_start_size=512))
    whole = ModelRuntime(profile, dataclasses.replace(runtime_settings, context_start_size=0))
    try:
        model = growing.for_role("generator")
        assert (model.llama.n_ctx(), model.n_ctx) == (512, runtime_settings.context_size)
        short = model.generate(QUESTION, max_tokens=8, temperature=0.0)
        assert model.llama.n_ctx() == 512
        sentence = "She was admitted with chest pain and went home on aspirin 81 mg daily. "
        long = [{"role": "user", "content": sentence * 40 + "What dose of aspirin?"}]
        # A larger context that cannot be made (memory): the old one stays, and the error
        # says what to do.
        load = model._load

        def no_memory(n_ctx):
            if n_ctx > 512:
                raise ModelError("llama.cpp could not load the model file (failed to allocate).")
            return load(n_ctx)
        model._load = no_memory
        with pytest.raises(ModelError, match="could not make room") as refused:
            model.generate(long, max_tokens=16, temperature=0.0)
        assert "Longest text a model reads at once" in refused.value.fix
        assert model.generate(QUESTION, max_tokens=8, temperature=0.0).text == short.text
        del model._load
        grown = model.generate(long, max_tokens=16, temperature=0.0)
        assert 512 < grown.prompt_tokens + 16 <= model.llama.n_ctx() == 1024
        reference = whole.for_role("generator")
        assert reference.llama.n_ctx() == runtime_settings.context_size
        assert grown.text == reference.generate(long, max_tokens=16, temperature=0.0).text
        assert model.generate(QUESTION, max_tokens=8, temperature=0.0).text == short.text
        with pytest.raises(ContextOverflowError):
            model.generate([{"role": "user", "content": sentence * 200}], max_tokens=16)
        assert model.llama.n_ctx() == 1024  # a refused prompt makes no room
    finally:
        growing.close()
        whole.close()


def test_unloading_while_generating_finishes_the_call_then_refuses(profile, runtime_settings,
                                                                   monkeypatch):
    """Settings changed while a background task generates: no crash, a clear error after."""
    import threading

    from desktop_app.core.errors import ModelError
    from desktop_app.core.models.runtime import ModelRuntime

    own = ModelRuntime(profile, runtime_settings)
    model = own.for_role("generator")
    started, results = threading.Event(), []

    schema = endless(model, monkeypatch)

    def work():
        results.append(model.generate(
            [{"role": "user", "content": "Count from one to twenty in words."}],
            max_tokens=48, on_token=lambda _piece: started.set(), json_schema=schema))
    thread = threading.Thread(target=work)
    thread.start()
    assert started.wait(30)
    own.close()  # while generating
    thread.join(60)
    assert results and results[0].completion_tokens == 48  # the call in progress finished
    with pytest.raises(ModelError):
        model.generate(QUESTION, max_tokens=4)
    with pytest.raises(ModelError):
        own.for_role("generator")


def test_json_errors_do_not_quote_the_model_output(runtime, monkeypatch):
    """A reply that breaks the schema: the message names the rule, never the text."""
    from desktop_app.core.models.runtime import Generation

    model = runtime.for_role("judge")
    secret = "Mrs Example, 71, has HIV"
    fake = Generation(text=f'{{"answer": "{secret}", "confidence": "certain"}}',
                      finish_reason="stop", prompt_tokens=1, prompt_tokens_evaluated=1,
                      completion_tokens=1, seconds=0.1, model_id="x", model_sha256="y")
    monkeypatch.setattr(model, "generate", lambda *args, **kwargs: fake)
    with pytest.raises(ModelOutputError) as info:
        model.generate_json([{"role": "user", "content": "q"}], ANSWER_SCHEMA)
    assert secret not in str(info.value) and info.value.__cause__ is None
    assert "enum" in info.value.message
    assert secret in info.value.raw_text  # kept for the encrypted trace


def test_prompt_state_cache_counts_the_logits_each_state_keeps(shared_models, tmp_path):
    """A 150 MB cache must hold at most 150 MB, copies of the logits included."""
    from desktop_app.core.models.runtime import ModelRuntime

    paths = Paths.resolve(tmp_path / "cache-profile")
    paths.ensure()
    rt = ModelRuntime(paths, Settings(models_dir=str(shared_models), context_size=1024,
                                      state_cache_mb=150))
    try:
        model = rt.for_role("generator")
        for topic in ("apples", "rivers", "clocks", "boats"):
            model.generate([{"role": "user", "content": f"Name one fact about {topic}."}], max_tokens=4)
        cache = model.llama.cache
        states = list(cache.cache_state.values())
        assert states, "the cache was never used"
        logits = sum(state.scores.nbytes for state in states)
        assert logits > 0 and cache.cache_size >= logits
        assert cache.cache_size <= 150 << 20
    finally:
        rt.close()


def _until(condition, seconds: float = 5.0) -> None:
    import time

    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.05)


def test_a_job_waiting_for_the_model_says_who_holds_it_and_can_be_cancelled(runtime, monkeypatch):
    """Simplify holds the model (its first token waits on a gate); Ask must wait, says so
    through its own progress, and its Cancel works while it waits. Then Ask runs once
    Simplify is done."""
    import threading

    from desktop_app.core.progress import job

    model = runtime.for_role("generator")
    schema = endless(model, monkeypatch)
    holding, gate = threading.Event(), threading.Event()
    held: dict = {}

    def hold(piece):
        holding.set()
        gate.wait(30)

    def simplify():
        with job("Simplify"):
            held["generation"] = model.generate(QUESTION, max_tokens=4, on_token=hold, json_schema=schema)
    first = threading.Thread(target=simplify)
    first.start()
    assert holding.wait(60)
    messages, token = [], CancelToken()
    cancelled: dict = {}

    def ask():
        with job("Ask", progress=lambda update: messages.append(update.message), cancel=token):
            try:
                model.generate(QUESTION, max_tokens=4)
            except Cancelled:
                cancelled["yes"] = True
    second = threading.Thread(target=ask)
    second.start()
    _until(lambda: messages)
    assert messages == ["Waiting for the model (Simplify is running)"]
    token.cancel()
    second.join(10)
    assert not second.is_alive() and cancelled == {"yes": True}
    # Ask again, without cancelling: it waits, then runs when Simplify finishes.
    messages.clear()
    token = CancelToken()
    result: dict = {}

    def ask_again():
        with job("Ask", progress=lambda update: messages.append(update.message), cancel=token):
            result["generation"] = model.generate(QUESTION, max_tokens=4, temperature=0.0)
    third = threading.Thread(target=ask_again)
    third.start()
    _until(lambda: messages)
    gate.set()
    first.join(60)
    third.join(60)
    assert held["generation"].completion_tokens == 4
    assert result["generation"].completion_tokens >= 1
    assert messages == ["Waiting for the model (Simplify is running)", "The model is free; Ask goes on"]


def test_prompt_lookup_decoding_generates_counts_and_keeps_the_grammar(profile, runtime_settings):
    """With the setting on, llama.cpp checks guessed tokens in batches: the reply is still
    whole and repeatable, its tokens are counted from what was written (not from the
    guesses left in the state), and a JSON schema still holds.  Whether it writes the same
    words as without it is measured (bench/bench_lookup.py), not promised."""
    import dataclasses

    from desktop_app.core.models.runtime import ModelRuntime

    line = "Take amoxicillin 500 mg by mouth three times a day for 7 days. "
    copying = [{"role": "user", "content": "Repeat exactly: " + line * 6 + "Take amoxicillin"}]
    # A prompt longer than one batch: llama-cpp-python sized a draft model's scores for
    # one batch and failed past it, unless Lumen asks for every position's scores.
    fresh = ModelRuntime(profile, dataclasses.replace(runtime_settings, prompt_lookup_tokens=6,
                                                      batch_size=64))
    try:
        model = fresh.for_role("generator")
        assert model.llama.draft_model is not None
        assert model.count_tokens(copying) > 64
        first = model.generate(copying, max_tokens=40)
        second = model.generate(copying, max_tokens=40)
        assert first.text and second.text == first.text
        assert first.completion_tokens == len(model.tokenize(first.text)) <= 40
        assert 0 < second.prompt_tokens_evaluated <= second.prompt_tokens
        value, _ = model.generate_json(
            [{"role": "user", "content": "What is the capital of France? Reply as JSON with "
                                         "your answer and your confidence."}], ANSWER_SCHEMA)
        assert set(value) == {"answer", "confidence"}
    finally:
        fresh.close()


@pytest.mark.slow
def test_gpu_layers_reach_llama_cpp_and_the_doctor_names_the_backend(profile, runtime_settings):
    import dataclasses

    from desktop_app.core.doctor import run_doctor
    from desktop_app.core.models.cpu import gpu_backends, parse_backends
    from desktop_app.core.models.runtime import ModelRuntime

    assert parse_backends("CPU : SSE3 = 1 | AVX2 = 1 | CUDA : ARCHS = 890 | USE_GRAPHS = 1 |"
                          ) == ("CPU", "CUDA")
    settings = dataclasses.replace(runtime_settings, gpu_layers=-1)
    fresh = ModelRuntime(profile, settings)
    try:
        model = fresh.for_role("generator")
        assert model.llama.model_params.n_gpu_layers == 0x7FFFFFFF  # llama.cpp: every layer
        assert model.generate(QUESTION, max_tokens=4).text  # a CPU build ignores it
    finally:
        fresh.close()
    report = run_doctor(profile, settings, measure_speed=False)
    (finding,) = [f for f in report.findings if f.check == "GPU offload"]
    if gpu_backends():
        assert finding.status == "ok" and gpu_backends()[0] in finding.detail
    else:  # this machine's build: the setting asks for what the build cannot do
        assert finding.status == "warn" and "CPU only" in finding.detail and finding.fix
