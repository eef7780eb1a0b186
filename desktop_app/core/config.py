"""Where Lumen keeps things, and the one settings object.

Paths come from platformdirs.  `--profile DIR` on the command line, or the
LUMEN_HOME environment variable, moves every folder under one directory, which
is how the tests isolate themselves and how IT can keep Lumen on another disk.

Settings are one dataclass.  Each field's metadata carries its label, help text
and limits, which the Settings dialog and `lumen settings` read, so a new
setting is declared in exactly one place.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import sys
import tempfile
import tomllib
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import platformdirs
import tomli_w

from .errors import ConfigError

APP_NAME = "Lumen"
# POSIX modes of Lumen's own folders and files: this account only.
PRIVATE_FOLDER = 0o700
PRIVATE_FILE = 0o600


def private_files() -> None:
    """Files this process creates are readable by this account only (umask 077 on POSIX);
    the command line and the window call it first."""
    if os.name == "posix":
        os.umask(0o077)


def not_private(paths: "Paths") -> list[Path]:
    """Lumen's folders and the files directly in its data and config folders that other
    accounts may read or enter (POSIX; Windows relies on the profile folder's ACLs)."""
    if os.name != "posix":
        return []
    found = []
    for folder in paths.folders:
        if folder.exists() and folder.stat().st_mode & 0o077:
            found.append(folder)
    for folder in (paths.data_dir, paths.config_dir):
        if folder.exists():
            found += [f for f in folder.iterdir() if f.is_file() and f.stat().st_mode & 0o077]
    return found


def make_private(paths: "Paths") -> list[Path]:
    """Give what `not_private` finds its private mode again; returns what was changed."""
    changed = not_private(paths)
    for path in changed:
        path.chmod(PRIVATE_FOLDER if path.is_dir() else PRIVATE_FILE)
    return changed


log = logging.getLogger(__name__)


def usable_cores() -> int:
    """The cores this process may run on: a workstation (or a test runner) that pins Lumen
    to some cores with taskset or a cgroup gets that many threads, not one per core of the
    machine, since more threads than cores make llama.cpp's spinning threads wait on each
    other."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def resource_root() -> Path:
    """The folder holding models/catalog.toml, resources/ and glossary/.

    In a source checkout that is the repository root; in a PyInstaller bundle it
    is the bundle's data folder, laid out the same way.
    """
    bundle = getattr(sys, "_MEIPASS", None)
    if bundle:
        return Path(bundle)
    return Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Paths:
    data_dir: Path
    config_dir: Path
    cache_dir: Path
    log_dir: Path

    @classmethod
    def resolve(cls, profile: str | os.PathLike[str] | None = None) -> "Paths":
        """--profile wins over LUMEN_HOME, which wins over the platform's folders."""
        home = profile or os.environ.get("LUMEN_HOME")
        if home:
            root = Path(home).expanduser().resolve()
            return cls(root / "data", root / "config", root / "cache", root / "logs")
        return cls(
            Path(platformdirs.user_data_dir(APP_NAME, appauthor=False)),
            Path(platformdirs.user_config_dir(APP_NAME, appauthor=False)),
            Path(platformdirs.user_cache_dir(APP_NAME, appauthor=False)),
            Path(platformdirs.user_log_dir(APP_NAME, appauthor=False)),
        )

    @property
    def settings_file(self) -> Path:
        return self.config_dir / "settings.toml"

    @property
    def default_models_dir(self) -> Path:
        return self.data_dir / "models"

    @property
    def model_registry_file(self) -> Path:
        """User-added models (not patient data): path, hash, chat format."""
        return self.config_dir / "models.toml"

    @property
    def profile_files(self) -> dict[str, Path]:
        """The profile's own files a backup carries besides the database (by name)."""
        return {"settings.toml": self.settings_file, "models.toml": self.model_registry_file}

    @property
    def database_file(self) -> Path:
        return self.data_dir / "lumen.db"

    @property
    def log_file(self) -> Path:
        return self.log_dir / "lumen.log"

    @property
    def folders(self) -> tuple[Path, ...]:
        return (self.data_dir, self.config_dir, self.cache_dir, self.log_dir)

    def ensure(self) -> None:
        """Create the folders, private to this account (0700 on POSIX: on a shared
        workstation other accounts cannot read the database or the vector index), failing
        with a clear message when one is not writable."""
        for folder in self.folders:
            try:
                folder.mkdir(parents=True, exist_ok=True, mode=PRIVATE_FOLDER)
                if os.name == "posix":
                    folder.chmod(PRIVATE_FOLDER)
                with tempfile.TemporaryFile(dir=folder):
                    pass
            except OSError as exc:
                raise ConfigError(
                    f"Lumen cannot write to the folder {folder} ({exc.strerror or exc}).",
                    "Give your user write access to it, or start Lumen with "
                    "--profile DIR (or set LUMEN_HOME) to keep its data in a writable folder.",
                ) from exc


def _setting(default: Any, label: str, help: str, *, group: str = "General",
             minimum: float | None = None, maximum: float | None = None,
             choices: tuple[str, ...] | None = None, technical: str = "",
             choice_labels: dict[str, str] | None = None) -> Any:
    """`label` and `help` in plain words (the Settings dialog shows them, with the default);
    `technical`: the term or symbol of the paper or library (τ, FKGL, top-p), shown only
    in the tooltip; `choice_labels`: plain names for coded choices."""
    return field(default=default, metadata={
        "label": label, "help": help, "group": group,
        "minimum": minimum, "maximum": maximum, "choices": choices,
        "technical": technical, "choice_labels": choice_labels or {},
    })


# Settings renamed in a release, still read from a settings file under their old names
# for one release more (the knowledge base's were "kb_*", as the command once was).
RENAMED_SETTINGS = {f"kb_{name}": f"knowledge_{name}" for name in (
    "top_k", "chunk_words", "declarative", "tag_fallback", "near_duplicate", "answer_tokens",
    "refine", "refine_rounds", "critique_tokens")}


@dataclass
class Settings:
    """Every setting a user may need, with its documented default."""

    # Models per role.  Values are model ids from `lumen models list`.
    role_generator: str = _setting(
        "smollm2-135m-instruct-q4_1", "Generator model",
        "Model that extracts answers and simplifies text.", group="Models",
        technical="LAMP-MedQA's model A")
    role_reviewer: str = _setting(
        "smollm2-135m-instruct-q4_1", "Reviewer model",
        "Model that reviews answers and gives feedback.", group="Models",
        technical="LAMP-MedQA's model B")
    role_judge: str = _setting(
        "smollm2-135m-instruct-q4_1", "Judge model",
        "Model that grades answers in evaluations.", group="Models")
    role_patient: str = _setting(
        "smollm2-135m-instruct-q4_1", "Patient model",
        "Model that plays the patient in simulated consultations, when a model is tested "
        "on whole conversations with a patient.", group="Models",
        technical="3MDBench patient agent")
    role_embedder: str = _setting(
        "minilm-l6-v2-int8", "Model that compares meaning",
        "The small model that compares sentences by meaning, to find the summary's lines that "
        "answer and to check an answer fits the question.", group="Models",
        technical="ONNX sentence embedder")
    models_dir: str = _setting(
        "", "Models folder",
        "Folder holding the model files. Empty means the 'models' folder in Lumen's data folder.",
        group="Models")
    verify_hashes_on_load: bool = _setting(
        True, "Check model hashes on load",
        "Compare each model file's sha256 with the recorded one before loading it.", group="Models")

    # llama.cpp runtime.
    context_size: int = _setting(
        4096, "Longest text a model reads at once (word pieces)",
        "How much a model can hold at once, the text it reads plus its answer, in word pieces "
        "(a word piece is about three quarters of a word). Larger uses more memory; it is "
        "capped at what the model itself can hold.",
        group="Generation", minimum=512, maximum=131072, technical="context size in tokens, n_ctx")
    context_start_size: int = _setting(
        1024, "Memory a model starts with (word pieces)",
        "A model loads with room for this many word pieces and makes room for more, up to the "
        "longest text it reads at once, the first time a text needs it (about 0.2 s, once). "
        "Most questions need far less than the longest text, and each 1,000 word pieces of "
        "room hold about 23 MB of memory for the 135M model. 0 makes all the room at load.",
        group="Generation", minimum=0, maximum=131072,
        technical="initial n_ctx; llama.cpp's KV cache is sized at context creation")
    threads: int = _setting(
        0, "Processor cores to use", "How many of the processor's cores the models use. 0 "
        "means one per core Lumen may run on (all of them, unless the workstation limits "
        "it).", group="Generation", minimum=0, maximum=256,
        technical="threads for generation and embedding")
    batch_size: int = _setting(
        512, "Word pieces read per step", "How many word pieces of the text the model reads "
        "in one step; larger is faster and uses more memory.", group="Generation", minimum=32,
        maximum=4096, technical="prompt batch size in tokens, n_batch")
    max_answer_tokens: int = _setting(
        512, "Longest answer (word pieces)", "Most word pieces a model may write in one "
        "reply (about three quarters of a word each).",
        group="Generation", minimum=16, maximum=8192, technical="max_tokens")
    temperature: float = _setting(
        0.0, "Variety of wording", "0 gives the same answer every time; higher varies more.",
        group="Generation", minimum=0.0, maximum=2.0, technical="temperature")
    top_p: float = _setting(
        0.95, "Share of likely words considered", "Only the most likely next words that add up to "
        "this share are considered; used only when variety of wording is above 0.",
        group="Generation", minimum=0.05, maximum=1.0, technical="top-p (nucleus sampling)")
    seed: int = _setting(
        42, "Random seed", "Seed for sampling, so runs can be repeated.",
        group="Generation", minimum=0, maximum=2**31 - 1)
    reuse_prompt_state: bool = _setting(
        True, "Remember a summary between questions",
        "Keep the model's reading of a summary between calls about the same summary, so only "
        "what is new is read again. Turn off only to read every prompt from scratch, for "
        "example to compare with another machine word for word.",
        group="Generation", technical="llama.cpp prompt state reuse")
    state_cache_mb: int = _setting(
        512, "Memory for remembered summaries (MB)",
        "Memory for keeping the model's reading of recent summaries, so coming back to one "
        "does not read it again. 0 turns it off.",
        group="Generation", minimum=0, maximum=65536, technical="llama.cpp prompt state cache")
    prompt_lookup_tokens: int = _setting(
        0, "Words guessed ahead from the text (word pieces)",
        "Up to this many word pieces are guessed by finding the last words written in the prompt "
        "and checked by the model in one step, which can be faster when an answer copies the "
        "summary. 0 turns it off. It keeps the model's scores for every position "
        "(context size × vocabulary × 4 bytes of memory) and can change a word where two "
        "were equally likely; docs/BENCHMARKS.md has the measurements behind the default.",
        group="Generation", minimum=0, maximum=32,
        technical="prompt-lookup decoding, num_pred_tokens")
    gpu_layers: int = _setting(
        0, "Model layers on the GPU",
        "How many of a model's layers run on the graphics card, when Lumen's model engine "
        "was built for one (CUDA, Metal or Vulkan). 'lumen doctor' says which "
        "backend it has. 0 keeps everything on the CPU, -1 puts every layer on the GPU, and "
        "a CPU-only build ignores it.", group="Generation", minimum=-1, maximum=999,
        technical="n_gpu_layers")
    server_timeout_s: int = _setting(
        120, "Model server timeout (seconds)",
        "How long Lumen waits for a model server (added with 'lumen models add-server') to "
        "send the next part of a reply before it gives up with a message.",
        group="Generation", minimum=5, maximum=3600, technical="HTTP read timeout")
    server_parallel_requests: int = _setting(
        4, "Samples sent to a model server at once",
        "When every model an evaluation run uses is on a model server, up to this many "
        "samples are answered and judged at the same time (a server with several slots or "
        "GPUs answers them together). Each finished sample is still saved on its own. Runs "
        "on this computer's own models always go one sample at a time. 1 turns it off.",
        group="Evaluation", minimum=1, maximum=64, technical="parallel replay (N)")
    dialogue_max_utterances: int = _setting(
        28, "Longest simulated consultation (messages)",
        "A simulated consultation ends after this many messages, "
        "patient's and doctor's together, if the patient has not ended it. 28 is the "
        "published protocol's cap; a lower cap makes a quick trial run, not a comparable one.",
        group="Evaluation", minimum=2, maximum=200, technical="3MDBench utterance cap")

    # Embedding.
    embedding_batch_size: int = _setting(
        64, "Sentences compared per step", "How many sentences the meaning model reads at "
        "once; more is faster and uses more memory.",
        group="Embedding", minimum=1, maximum=1024, technical="embedding batch size (ONNX)")
    embedding_tokens_per_step: int = _setting(
        512, "Word pieces compared per step", "The most word pieces (about three quarters of "
        "a word each, counting the padding of shorter sentences) the meaning model reads at "
        "once; long sentences go in smaller steps. More is faster and uses more memory.",
        group="Embedding", minimum=256, maximum=262144,
        technical="padded tokens per ONNX batch")

    # Ask and Simplify (LAMP-MedQA).
    ask_system: str = _setting(
        "lamp", "Answering method",
        "The full pipeline finds the answer in the evidence, has it reviewed, rewrites it "
        "plainly and checks its reading level; the others switch parts off (as in the paper's "
        "ablation) or ask one model directly.", group="Ask",
        choices=("lamp", "lamp-no-reviewer", "lamp-no-verifier", "lamp-no-loops",
                 "zero-shot", "one-shot"), technical="LAMP-MedQA method",
        choice_labels={"lamp": "Full pipeline (recommended)", "lamp-no-reviewer": "Without reviewer",
                       "lamp-no-verifier": "Without reading-level check",
                       "lamp-no-loops": "Without reviewer or reading-level check",
                       "zero-shot": "One model, no example", "one-shot": "One model, one example"})
    ask_variant: str = _setting(
        "glossary", "Help for the plain rewrite",
        "Give the model that rewrites answers plainly the glossary's definitions of the medical "
        "words it meets (the paper's best variant), or nothing.",
        group="Ask", choices=("glossary", "plain"), technical="LAMP-MedQA variant",
        choice_labels={"glossary": "Glossary definitions", "plain": "None"})
    relevance_threshold: float = _setting(
        0.37, "How closely an answer must fit the question",
        "How close in meaning (0 to 1) an extracted answer must be to the question to pass. "
        "Calibrated for Lumen's model that compares meaning (docs/CALIBRATION.md); the "
        "paper's 0.671 belongs to a different one.", group="Ask", minimum=0.0, maximum=1.01,
        technical="relevance threshold τ (LAMP-MedQA), cosine similarity")
    evidence_lines: int = _setting(
        4, "Evidence lines",
        "Lines of the summary that answer a question, found without a model, shown as quotes "
        "and given to the model in place of the whole summary.", group="Ask",
        minimum=1, maximum=12)
    answer_lines: int = _setting(
        3, "Lines in an answer from the summary",
        "Most evidence lines (those scoring close to the best) that Lumen writes out plainly "
        "when it answers in the summary's own words; more lines hold more of the facts asked "
        "for and make a longer answer (docs/BENCHMARKS.md). Evidence lines are found up to "
        "this many when it is the larger.", group="Ask",
        minimum=1, maximum=12)
    evidence_margin: float = _setting(
        0.034, "Evidence closeness margin",
        "An answer passes relevance only when it is closer in meaning to the evidence than "
        "the question itself is, by at least this much (0 to 1), so an echo of the question "
        "fails. Calibrated on the demo benchmark (docs/CALIBRATION.md).", group="Ask",
        minimum=-1.0, maximum=1.0)
    summary_date_order: str = _setting(
        "mdy", "How summaries write dates in numbers",
        "How to read a date such as 05/03/2025 when the summary does not show which way it "
        "writes dates: month first (US: May 3) or day first (UK, Europe: 5 March). A summary "
        "holding a date that reads only one way (24/03/2025) is read its own way whatever this "
        "says.", group="Ask", choices=("mdy", "dmy"),
        choice_labels={"mdy": "Month first (05/03 is May 3)", "dmy": "Day first (05/03 is 5 March)"})
    readability_limit: float = _setting(
        10.0, "Hardest school grade an answer may read at",
        "An answer passes when its reading grade (Flesch-Kincaid) is below this; the paper uses "
        "10.", group="Ask", minimum=1.0, maximum=20.0,
        technical="readability limit, Flesch-Kincaid grade level (FKGL)")
    extraction_attempts: int = _setting(
        3, "Extraction attempts", "Most tries at an answer that passes the relevance check.",
        group="Ask", minimum=1, maximum=10)
    simplification_attempts: int = _setting(
        3, "Simplification attempts", "Most tries at a version that passes the readability check.",
        group="Ask", minimum=1, maximum=10)
    baseline_role: str = _setting(
        "generator", "Model for one-model methods",
        "Which role's model answers in the zero-shot and one-shot methods.",
        group="Ask", choices=("generator", "reviewer"))
    answer_tokens: int = _setting(
        160, "Longest answer (word pieces)", "Most word pieces for an extracted or "
        "simplified answer.", group="Ask", minimum=32, maximum=2048, technical="tokens")
    feedback_tokens: int = _setting(
        96, "Longest feedback (word pieces)", "Most word pieces for the reviewer's and the "
        "checker's feedback.", group="Ask", minimum=16, maximum=1024, technical="tokens")
    section_tokens: int = _setting(
        700, "Longest handout section (word pieces)",
        "Most word pieces for one rewritten section of a handout.", group="Ask",
        minimum=64, maximum=4096, technical="tokens")
    handout_grade_goal: float = _setting(
        6.5, "Reading grade a handout aims for",
        "The school grade (Flesch-Kincaid) the part of a handout a patient reads first aims "
        "to be at or below; shown beside the grade the handout reached. Health-literacy "
        "guidance asks for grade 6 to 8. Medicine names and diagnoses keep their own words "
        "(they are facts), so a handout may stay above it.", group="Ask",
        minimum=1.0, maximum=20.0)
    handout_story_sentences: int = _setting(
        6, "Sentences in \"What happened in hospital\"",
        "Most sentences of a handout's \"What happened in hospital\": the diagnoses first, "
        "then the hospital course's sentences a patient needs (lab values, doses given in "
        "hospital and long detail go to the \"For your care team\" part, as written).",
        group="Ask", minimum=1, maximum=20)
    plain_words: bool = _setting(
        True, "Plain words for patients",
        "On: every sentence a patient reads (answers, handouts) has clinical words in the "
        "patient's words (resources/plain_words.toml), the patient as \"you\" and long "
        "sentences cut, and is shown so only where it keeps every dose, timing, date, "
        "medicine, number and negation of its line. Off: the summary's own words, with "
        "shorthand written out and medical words explained.", group="Ask")
    rewrite_easy_sections: bool = _setting(
        False, "Rewrite handout sections that already read easily",
        "Off: a handout section whose own words, with shorthand written out and medical "
        "words explained, already read below the grade limit is shown that way, since it "
        "passes every check a rewrite is held to, and the model's time goes to the hard "
        "sections (about half the time of a handout, docs/BENCHMARKS.md). On: the model "
        "tries to rewrite those too.", group="Ask")

    # Evaluation.
    # Each kind of system has criteria a useless model fails (issue #33): what a patient
    # is shown must hold the reference's facts, not loop, not invent, and for a model's
    # system be the model's own often enough to say the model was validated.
    acceptance_criteria: str = _setting(
        "key_fact_recall >= 0.6; degenerate <= 0.05; unsupported_facts <= 0.5; "
        "model_answer >= 0.5; fkgl < 10; judge_similarity >= 3; judge_unparseable == 0; "
        "errors == 0",
        "Acceptance criteria (answers about a summary)",
        "What the report of a model's answers about a summary (lamp, zero-shot, one-shot) "
        "checks. Separated by semicolons: a metric's mean (key_fact_recall, "
        "degenerate, unsupported_facts, model_answer, fkgl, sari, sbert, token_f1, bleu, "
        "rouge_l, bertscore_f1, judge_similarity) or a count (judge_unparseable, errors, "
        "findings), an operator (<, <=, >, >=, ==) and a number. model_answer is the share of "
        "answers shown that are the model's own rather than the summary's lines: below it, the "
        "run validated the summary's lines, not the model.", group="Evaluation",
        technical="acceptance criteria")
    evidence_acceptance_criteria: str = _setting(
        "key_fact_recall >= 0.6; degenerate <= 0.05; unsupported_facts <= 0.5; fkgl < 10; "
        "judge_similarity >= 3; judge_unparseable == 0; errors == 0",
        "Acceptance criteria (answers without a model)",
        "What the report of the 'evidence' system (the summary's own lines, no model) checks, "
        "written as the criteria above.", group="Evaluation")
    qa_acceptance_criteria: str = _setting(
        "key_fact_recall >= 0.5; degenerate <= 0.05; judge_similarity >= 3; "
        "judge_unparseable == 0; errors == 0",
        "Acceptance criteria (open questions)",
        "What the report of the 'qa' system (a model answers a question with no document: "
        "MedQuAD, MedicationQA, HIVMedQA) checks, written as the criteria above.",
        group="Evaluation")
    consultation_acceptance_criteria: str = _setting(
        "macro_f1_low > chance; errors == 0",
        "Acceptance criteria (consultations)",
        "What the report of a simulated-consultation run (3MDBench, dialogue:<mode>) checks. "
        "The default: the lower end of the macro F1's 95% interval is above chance (guessing "
        "with the cases' own diagnosis frequencies), so a doctor model that cannot tell the "
        "diagnoses apart fails. Also: macro_f1, diagnosis_correct, ended_by_break, "
        "assessor_1_1 to assessor_3_2 (rates), assessor_4_1 (0-2), dialogue_utterances, errors.",
        group="Evaluation")
    diagnosis_acceptance_criteria: str = _setting(
        "diagnosis_accuracy_low > chance; errors == 0",
        "Acceptance criteria (diagnosis of labelled cases)",
        "What the report of a replay of labelled cases (doctorrag:<set-up>) checks: by default, the "
        "lower end of the accuracy's 95% interval is above picking one of each case's labels "
        "at random.", group="Evaluation")
    run_max_error_share: float = _setting(
        0.1, "Most samples in error",
        "A run in which more than this share of samples ends in an error (no document, a "
        "model that failed, a server down) stops as failed, and its report fails: it measured "
        "too little. Errored samples are tried again when the run is resumed.",
        group="Evaluation", minimum=0.0, maximum=1.0)
    bootstrap_resamples: int = _setting(
        10000, "Resamples for intervals and comparisons",
        "How many times results are resampled to estimate intervals and to compare runs; more "
        "is steadier and slower.", group="Evaluation", minimum=1000, maximum=100000,
        technical="bootstrap resamples")
    report_min_samples: int = _setting(
        10, "Fewest samples for an interval and a verdict",
        "A metric measured on fewer samples is reported with its mean and 'too few samples' "
        "instead of a confidence interval, and a run with fewer samples answered is 'not "
        "enough samples to decide', never passed.", group="Evaluation", minimum=2, maximum=1000)
    report_fail_correctness: str = _setting(
        "contradictory", "Judge correctness that fails a run",
        "A MedJudge answer judged this wrong or worse is a finding (incorrect < contradictory; "
        "'off' ignores correctness).", group="Evaluation",
        choices=("incorrect", "contradictory", "off"))
    report_fail_impact: str = _setting(
        "critical", "Judge clinical impact that fails a run",
        "A MedJudge answer judged to have this clinical impact or worse is a finding "
        "(moderate < significant < critical; 'off' ignores impact).", group="Evaluation",
        choices=("moderate", "significant", "critical", "off"))
    report_allowed_findings: int = _setting(
        0, "Findings a run may have",
        "How many judge findings (see the two settings above) a validation run may have and "
        "still pass; 0: any finding fails it.", group="Evaluation", minimum=0, maximum=100000)
    report_worst_answers: int = _setting(
        5, "Worst answers shown", "How many of the worst-judged answers a report shows, with "
        "their question and reference.", group="Evaluation", minimum=0, maximum=100)

    # Glossary.
    glossary_fuzzy_cutoff: int = _setting(
        85, "Fuzzy lookup cut-off",
        "How close (0-100) a misspelt word must be to a glossary term to be offered as a match.",
        group="Glossary", minimum=50, maximum=100)
    glossary_semantic_min: float = _setting(
        0.45, "Meaning lookup minimum",
        "How close in meaning (0 to 1) an entry must be to a word the glossary does not know "
        "for Lumen to offer it.", group="Glossary", minimum=0.0, maximum=1.0,
        technical="least cosine similarity of the embedder")
    glossary_plain_grade: int = _setting(
        8, "Plain words up to grade",
        "A one-word glossary term that everyday English uses at or below this school grade "
        "(\"normal\", \"stable\", \"discharge\") is not highlighted or explained; rarer "
        "words, names of several words and abbreviations are.", group="Glossary",
        minimum=1, maximum=16)
    glossary_language: str = _setting(
        "English", "Imported topics language",
        "Which language of imported MedlinePlus topics joins the glossary.",
        group="Glossary", choices=("English", "Spanish"))

    # Knowledge (DoctorRAG).
    knowledge_top_k: int = _setting(
        4, "Sources per answer, of each kind",
        "How many knowledge statements and how many similar cases each answer is given; more "
        "than 4 adds little (the published method's finding).", group="Knowledge", minimum=1,
        maximum=20,
        technical="k (DoctorRAG)")
    knowledge_chunk_words: int = _setting(
        120, "Chunk length (words)",
        "About how many words each piece of an added document holds. The model that compares "
        "meaning reads about the first 180 words of a piece.", group="Knowledge", minimum=30,
        maximum=400, technical="the embedder reads at most 256 tokens")
    knowledge_declarative: bool = _setting(
        False, "Rewrite chunks as statements",
        "When adding documents, have the generator model rewrite each piece as plain factual "
        "statements before it is tagged and stored. Slower; worth it with a production "
        "model.", group="Knowledge", technical="DoctorRAG's declarative step")
    knowledge_tag_fallback: str = _setting(
        "fill", "When few statements share the question's chapter",
        "fill: fewer than k statements tagged with the question's ICD-10 chapter are topped up "
        "with the most similar statements from other chapters, marked as such; strict: only "
        "same-chapter statements are used, as in the paper (a wrong tag can leave none).",
        group="Knowledge", choices=("fill", "strict"), technical="knowledge_tag_fallback (DoctorRAG's hard filter)",
        choice_labels={"fill": "Top up from other chapters", "strict": "Same chapter only"})
    knowledge_near_duplicate: float = _setting(
        0.99, "Near-duplicate cut-off",
        "Sources more similar than this to the question are left out, as the question's own "
        "record would be (the published method uses 0.99).", group="Knowledge", minimum=0.5,
        maximum=1.0, technical="near-duplicate threshold (DoctorRAG)")
    knowledge_answer_tokens: int = _setting(
        320, "Longest knowledge answer (word pieces)",
        "Most word pieces for an answer on the Knowledge tab.", group="Knowledge",
        minimum=32, maximum=4096, technical="tokens")
    knowledge_refine: bool = _setting(
        False, "Refine answers by self-critique",
        "Improve each answer with critics, textual gradients and prompt updates. About 8 model "
        "calls per round; off by default.", group="Knowledge", technical="Med-TextGrad")
    knowledge_refine_rounds: int = _setting(
        3, "Refinement rounds", "How many rounds of self-critique (the paper uses 3).",
        group="Knowledge", minimum=1, maximum=10, technical="T (Med-TextGrad)")
    knowledge_critique_tokens: int = _setting(
        200, "Longest critique (word pieces)",
        "Most word pieces for each critique and correction when an answer is improved in rounds.",
        group="Knowledge", minimum=32, maximum=2048,
        technical="Med-TextGrad critique, gradient and prompt update, in tokens")

    # Housekeeping.
    auto_lock_minutes: int = _setting(
        10, "Lock the window after (minutes idle)",
        "With no key press or mouse use for this long, the window hides all patient text "
        "and asks for the passphrase (or, with the key in the OS keyring, a click) before "
        "showing it again; work in progress goes on. 0 never locks (the workstation's own "
        "screen lock still applies). Ctrl+L locks at once.", group="General",
        minimum=0, maximum=240, technical="automatic logoff (HIPAA § 164.312(a)(2)(iii))")
    tab_types_tab: bool = _setting(
        False, "Tab key types a tab in the summary box",
        "Off: Tab and Shift+Tab move to the next and previous control, as everywhere else in "
        "the window (tabs in a pasted or opened summary are kept). On: Tab types a tab in the "
        "Ask and Simplify summary boxes; Ctrl+Tab still moves to the next tab of the window.",
        group="General", technical="QPlainTextEdit.tabChangesFocus")
    log_level: str = _setting(
        "INFO", "Log level", "How much Lumen writes to its log file (never patient text).",
        group="General", choices=("DEBUG", "INFO", "WARNING", "ERROR"))

    # ---- loading and saving -------------------------------------------------

    @classmethod
    def describe(cls) -> list[dataclasses.Field]:
        return list(fields(cls))

    def models_path(self, paths: Paths) -> Path:
        return Path(self.models_dir).expanduser() if self.models_dir else paths.default_models_dir

    def effective_threads(self) -> int:
        return self.threads or usable_cores()

    def role(self, role: str) -> str:
        try:
            return getattr(self, f"role_{role}")
        except AttributeError:
            raise ConfigError(f"There is no model role called '{role}'.",
                              "Roles are generator, reviewer, judge, patient and embedder.") from None

    def with_value(self, name: str, raw: Any) -> "Settings":
        """A copy with one setting changed, checked against its type and limits."""
        by_name = {f.name: f for f in fields(self)}
        name = RENAMED_SETTINGS.get(name, name)
        if name not in by_name:
            raise ConfigError(f"There is no setting called '{name}'.",
                              "Run 'lumen settings show' to list the settings.")
        value = _coerce(by_name[name], raw)
        return dataclasses.replace(self, **{name: value})

    def changed_from(self, other: "Settings") -> list[str]:
        """The names of the settings whose values differ from `other`'s (for the audit
        log, which records names, not values: a path may name a person)."""
        return [f.name for f in dataclasses.fields(self)
                if getattr(self, f.name) != getattr(other, f.name)]

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any], source: str = "settings") -> "Settings":
        by_name = {f.name: f for f in fields(cls)}
        values = {}
        for key, raw in data.items():
            if key in RENAMED_SETTINGS:
                if RENAMED_SETTINGS[key] in data:
                    continue  # saved under both names: the new one holds
                key = RENAMED_SETTINGS[key]
            if key not in by_name:
                log.warning("Ignoring unknown setting %r in %s", key, source)
                continue
            values[key] = _coerce(by_name[key], raw, source)
        return cls(**values)

    @classmethod
    def load(cls, paths: Paths) -> "Settings":
        path = paths.settings_file
        if not path.exists():
            return cls()
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise ConfigError(
                f"The settings file {path} cannot be read: {exc}.",
                "Fix the file, or delete it to go back to the defaults.",
            ) from exc
        return cls.from_dict(data, str(path))

    def save(self, paths: Paths) -> None:
        paths.settings_file.parent.mkdir(parents=True, exist_ok=True)
        tmp = paths.settings_file.with_suffix(".toml.tmp")
        tmp.write_text(tomli_w.dumps(self.to_dict()), encoding="utf-8")
        tmp.replace(paths.settings_file)


def _coerce(f: dataclasses.Field, raw: Any, source: str = "settings") -> Any:
    kind = type(f.default)
    meta = f.metadata
    try:
        if kind is bool:
            if isinstance(raw, str):
                lowered = raw.strip().lower()
                if lowered not in ("true", "false", "1", "0", "yes", "no", "on", "off"):
                    raise ValueError(raw)
                value: Any = lowered in ("true", "1", "yes", "on")
            else:
                value = bool(raw)
        elif kind is int:
            if isinstance(raw, bool) or (isinstance(raw, float) and not raw.is_integer()):
                raise ValueError(raw)
            value = int(raw)
        elif kind is float:
            value = float(raw)
        else:
            value = str(raw)
    except (TypeError, ValueError):
        raise ConfigError(
            f"The setting '{f.name}' in {source} must be a {kind.__name__}, not {raw!r}.",
            f"{meta.get('help', '')} Default: {f.default!r}.",
        ) from None
    low, high, choices = meta.get("minimum"), meta.get("maximum"), meta.get("choices")
    if (low is not None and value < low) or (high is not None and value > high):
        raise ConfigError(
            f"The setting '{f.name}' in {source} must be between {low} and {high}, not {value}.",
            f"{meta.get('help', '')} Default: {f.default!r}.",
        )
    if choices and value not in choices:
        raise ConfigError(
            f"The setting '{f.name}' in {source} must be one of {', '.join(choices)}, not {value!r}.",
            f"Default: {f.default!r}.",
        )
    return value
