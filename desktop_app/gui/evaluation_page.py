"""The Evaluation tab: hospital IT validates an installation here.

Pick a dataset and one or more systems; each runs in the background with progress,
an estimate of the time left, and Cancel (a cancelled or interrupted run resumes
where it stopped).  The results table has LAMP-MedQA's Table 1 layout: one row per
run, the mean of each metric with its 95% interval, and a star where a run differs
from the chosen baseline after Bonferroni correction.  Any sample can be opened to see
its input, output, trace, scores and judge replies.  Reports go to HTML, PDF or CSV.
"""

from __future__ import annotations

import html
import json
import time
from pathlib import Path

from PySide6.QtCore import QByteArray, QRectF, Qt
from PySide6.QtGui import QBrush, QColor, QKeySequence, QPainter
from PySide6.QtSvg import QSvgRenderer
from PySide6.QtWidgets import (QCheckBox, QComboBox, QDialog, QDialogButtonBox, QFileDialog,
                               QFormLayout, QGridLayout, QHBoxLayout, QHeaderView, QLabel,
                               QListWidget, QListWidgetItem, QPushButton, QSpinBox, QSplitter, QTableWidget,
                               QTableWidgetItem, QTextBrowser, QVBoxLayout, QWidget)

from ..core.errors import LumenError
from ..core.choices import FORMATS
from ..core.evaluation.scorers import SCORERS, default_scorers, judge_titles, result_metrics
from ..core.evaluation.systems import systems
from ..core.results import (VERDICT_COLOURS, Bar, axis_label, axis_range, bar_chart_svg,
                            benchmark_file_columns, detect_column_mapping, metric_info,
                            report_kind)
from ..core.session import Session
from ..core.templates import render
from ..export import write_report
from .messages import show_error, show_info
from .progress_bar import TaskProgress
from .workers import SessionOp, show_failure

# The verdict as the Results table names it (its report's headline in the tooltip).
VERDICT_WORDS = {"passed": "passed", "failed": "FAILED", "undecided": "not decided",
                 "no claim": "no claim"}


def readable_scores(scores: dict) -> str:
    """A sample's scores one per line by their labels, two decimals ("SARI: 36.67"), in
    place of the stored JSON and its internal names."""
    info = metric_info()
    return "\n".join(f"{info.get(name, {}).get('label', name)}: "
                     + ("not scored" if value is None else f"{value:.2f}")
                     for name, value in scores.items()) or "(not scored)"


def readable_judge(judge: dict, scores: dict | None = None) -> str:
    """Each judge's verdict in words, one line per label or score, with its reasoning and
    any reply that could not be read, in place of the stored JSON.  The similarity judge's
    score is the sample's judge_similarity in `scores`."""
    from ..core.results import ASSESSOR_ITEM_NAMES

    def shown(value: object) -> str:
        return f"{value:.2f}" if isinstance(value, float) else str(value)

    def named(key: str) -> str:
        if key in ASSESSOR_ITEM_NAMES:
            return f"{key} {ASSESSOR_ITEM_NAMES[key]}"
        return key.replace("_", " ").capitalize()
    titles = judge_titles()
    parts = []
    for name, detail in judge.items():
        lines: list[str] = []
        if not isinstance(detail, dict):
            lines.append(shown(detail))
        elif detail.get("blank") or detail.get("reason") == "blank prediction":
            lines.append("Not asked: the answer was blank, which scores the lowest.")
        elif detail.get("unparseable"):
            lines.append("The judge's reply could not be read"
                         + (f" ({detail['reason']})." if detail.get("reason") else ".")
                         + " It is left out of the scores.")
            if detail.get("reply"):
                lines.append(f"Its reply: {detail['reply']}")
        else:
            verdict = detail.get("labels") or detail.get("scores") or detail.get("marks")
            if isinstance(verdict, dict):
                lines += [f"{named(key)}: {shown(value)}" for key, value in verdict.items()
                          if key != "brief_analysis"]
                if verdict.get("brief_analysis"):
                    lines.append(f"Its reasoning: {verdict['brief_analysis']}")
            elif name == "similarity" and (scores or {}).get("judge_similarity") is not None:
                lines.append(f"Score: {(scores or {})['judge_similarity']:g}")
            elif detail.get("reply"):
                lines.append(f"Its reply: {detail['reply']}")
        parts.append("\n".join([titles.get(name, name)] + [f"  {line}" for line in lines]))
    return "\n\n".join(parts) or "(no judge was asked)"


class MappingDialog(QDialog):
    """Which column of a generic file is the question, the answer, the document, the id."""

    def __init__(self, path: Path, parent: QWidget) -> None:
        super().__init__(parent)
        self.setWindowTitle(f"Columns of {path.name}")
        self.boxes: dict[str, QComboBox] = {}
        names = benchmark_file_columns(path)
        guessed = detect_column_mapping(names)  # the usual names, as `lumen evaluate import` detects them
        form = QFormLayout()
        for field, label, required in (("input", "Question", True), ("target", "Reference answer", True),
                                       ("context", "Document (optional)", False),
                                       ("id", "Id (optional)", False)):
            box = QComboBox()
            if not required:
                box.addItem("(none)", "")
            for name in names:
                box.addItem(name, name)
            if field in guessed:
                box.setCurrentIndex(box.findData(guessed[field]))
            self.boxes[field] = box
            form.addRow(label + ":", box)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(buttons)

    def mapping(self) -> dict[str, str]:
        return {field: box.currentData() for field, box in self.boxes.items() if box.currentData()}


class BarChart(QWidget):
    """One metric across runs: the same SVG chart the validation report prints
    (core/evaluation/chart.py), with axis, unit and 95% intervals, scaled to the widget."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setMinimumHeight(160)
        self.rows: list[Bar] = []
        self.title = ""
        self.svg = ""
        self._renderer = QSvgRenderer(self)

    def set_data(self, title: str, scale: str, rows: list[Bar]) -> None:
        self.title, self.rows = title, rows
        if rows:
            highest = max(max(bar.mean, bar.high or bar.mean) for bar in rows)
            self.svg = bar_chart_svg(title, axis_label(scale), [(title, rows)],
                                     axis_range(scale, highest))
        else:
            self.svg = ""
        self._renderer.load(QByteArray(self.svg.encode("utf-8")))
        self.setToolTip(f"{title}: bars are means, whiskers 95% intervals" if rows else "")
        self.update()

    def paintEvent(self, _event) -> None:  # noqa: N802 (Qt's name)
        painter = QPainter(self)
        if not self.rows:
            painter.drawText(self.rect(), Qt.AlignmentFlag.AlignCenter,
                             "Finished runs appear here, one bar each.")
            return
        size = self._renderer.defaultSize()
        scale = min(self.width() / size.width(), self.height() / size.height())
        self._renderer.render(painter, QRectF(0, 0, size.width() * scale, size.height() * scale))


def consultation_html(result: dict) -> str:
    """A simulated consultation as a chat: the patient on the left, the doctor on the right
    (with the hidden reasoning, which the patient never saw, in grey), then the extracted
    diagnosis against the case's label and the assessor's marks
    (resources/templates/consultation.html.j2)."""
    from ..core.results import ASSESSOR_ITEM_NAMES

    consultation = result["trace"]["consultation"]
    ended = {"break": "the patient ended it (BREAK)", "cap": "the utterance cap",
             "context": "the model's context was full", "no-dialogue": "no dialogue in this mode",
             }.get(consultation["ended_by"], consultation["ended_by"] or "—")
    assessor = result["judge"].get("assessor")
    marks = (assessor or {}).get("marks")
    return render(
        "consultation.html.j2", sample_id=result["sample_id"], mode=consultation["mode"],
        temperament=consultation["temperament"], turns=consultation["turns"], ended=ended,
        hint=(", ".join(consultation["hint"]) or "none") if consultation["mode"] == "hint" else None,
        diagnosis=result["output"] or "none", label=result["target"],
        right=result["output"] == result["target"],
        marks=[(f"{item} {name}", "yes" if marks[item] else "no")
               for item, name in ASSESSOR_ITEM_NAMES.items()] if marks else [],
        competence=marks["4.1"] if marks else None, assessor_unreadable=bool(assessor) and not marks,
        error=result["error"])


class EvaluationPage(QWidget):
    def __init__(self, session: Session, parent: QWidget | None = None) -> None:
        """Long: the tab's widgets, shortcuts and signals, built in layout order."""
        super().__init__(parent)
        self.session = session
        self.evaluations = session.evaluation
        self._task = None
        self._import_task = None
        self._queue: list[str] = []
        self._started = 0.0
        self.dataset = QComboBox()
        self.dataset.setObjectName("datasetChoice")
        self.import_button = QPushButton("Import benchmark…")
        self.import_button.setShortcut(QKeySequence("Ctrl+I"))
        self.import_button.clicked.connect(self.choose_import)
        self.systems = QListWidget()
        self.systems.setObjectName("systemChoice")
        for name, description in systems().items():
            item = QListWidgetItem(name)
            item.setToolTip(description)
            item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
            item.setCheckState(Qt.CheckState.Checked if name == "lamp:glossary" else Qt.CheckState.Unchecked)
            self.systems.addItem(item)
        self.scorer_boxes = {name: QCheckBox(name) for name in SCORERS}
        for name, box in self.scorer_boxes.items():
            box.setToolTip(SCORERS[name].description)
            box.clicked.connect(self._scorers_chosen)
        # The boxes follow the systems checked (default_scorers, as the command line's
        # default) until the user changes one; then they are the user's.
        self._scorers_by_hand = False
        self._follow_systems()
        self.systems.itemChanged.connect(self._follow_systems)
        self.limit = QSpinBox()
        self.limit.setRange(0, 100000)
        self.limit.setSpecialValueText("all samples")
        self.limit.setToolTip("Score only the first N samples (0: all)")
        self.run_button = QPushButton("Run")
        self.run_button.setShortcut(QKeySequence("Ctrl+Return"))
        self.run_button.setObjectName("runButton")
        self.run_button.clicked.connect(self.start)
        self.resume_button = QPushButton("Resume selected run")
        self.resume_button.setShortcut(QKeySequence("Ctrl+Shift+R"))
        self.resume_button.clicked.connect(self.resume_selected)
        self.progress = TaskProgress()
        self.eta = QLabel()
        self.runs = QTableWidget(0, 5)
        self.runs.setObjectName("runsTable")
        self.runs.setHorizontalHeaderLabels(["Run", "System", "Status", "Done", "Started"])
        self.runs.setSelectionBehavior(QTableWidget.SelectionBehavior.SelectRows)
        self.runs.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.runs.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.runs.itemSelectionChanged.connect(self.show_samples)
        self.baseline = QComboBox()
        self.baseline.setToolTip("Stars mark significant differences from this run (Bonferroni, α = 0.05)")
        self.baseline.currentIndexChanged.connect(lambda _i: self.refresh_results())
        self.results = QTableWidget(0, 0)
        self.results.setObjectName("resultsTable")
        self.results.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.chart_metric = QComboBox()
        labels = metric_info()
        for name in result_metrics():
            self.chart_metric.addItem(labels.get(name, {}).get("label", name), name)
        self.chart_metric.currentIndexChanged.connect(lambda _i: self.refresh_results())
        self.chart = BarChart()
        self.samples = QTableWidget(0, 3)
        self.samples.setObjectName("samplesTable")
        self.samples.setHorizontalHeaderLabels(["Sample", "Scores", "Error"])
        self.samples.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.samples.setSelectionBehavior(QTableWidget.SelectionBehavior.SelectRows)
        self.samples.horizontalHeader().setStretchLastSection(True)
        self.samples.itemSelectionChanged.connect(self.show_sample)
        self.detail = QTextBrowser()
        self.detail.setObjectName("sampleDetail")
        self.report_button = QPushButton("Report…")
        self.report_button.setShortcut(QKeySequence("Ctrl+R"))
        self.report_button.clicked.connect(self.choose_report)
        self.report_button.setToolTip("Save the selected run's validation report as HTML, PDF or CSV")
        self.report_status = QLabel()
        self.verdict = QLabel()
        self.verdict.setObjectName("verdictLabel")
        self.verdict.setWordWrap(True)
        self.verdict.setToolTip("What the selected run's report concludes, with the acceptance "
                                "criteria of its kind of system (Settings → Evaluation)")

        controls = QFormLayout()
        dataset_row = QHBoxLayout()
        dataset_row.addWidget(self.dataset, 1)
        dataset_row.addWidget(self.import_button)
        controls.addRow("Dataset:", dataset_row)
        controls.addRow("Systems:", self.systems)
        scorer_grid = QGridLayout()  # three to a row, so the tab fits a 1280-pixel screen
        for index, box in enumerate(self.scorer_boxes.values()):
            scorer_grid.addWidget(box, index // 3, index % 3)
        controls.addRow("Scorers:", scorer_grid)
        controls.addRow("Limit:", self.limit)
        buttons = QHBoxLayout()
        buttons.addWidget(self.run_button)
        buttons.addWidget(self.resume_button)
        buttons.addStretch(1)
        controls.addRow("", buttons)
        left = QVBoxLayout()
        left.addLayout(controls)
        left.addWidget(self.progress)
        left.addWidget(self.eta)
        left.addWidget(QLabel("Runs:"))
        left.addWidget(self.runs, 1)
        left_widget = QWidget()
        left_widget.setLayout(left)
        right = QVBoxLayout()
        header = QHBoxLayout()
        results_label = QLabel("Results: mean [95% CI]; * differs from baseline")
        results_label.setToolTip("A metric with too few samples for an interval shows its mean "
                                 "and (n), the number of samples (Settings → Evaluation).")
        header.addWidget(results_label)
        header.addStretch(1)
        header.addWidget(QLabel("Baseline:"))
        header.addWidget(self.baseline)
        header.addWidget(self.report_button)
        header.addWidget(self.report_status)
        right.addLayout(header)
        right.addWidget(self.verdict)
        right.addWidget(self.results, 1)
        chart_row = QHBoxLayout()
        chart_row.addWidget(QLabel("Chart:"))
        chart_row.addWidget(self.chart_metric)
        chart_row.addStretch(1)
        right.addLayout(chart_row)
        right.addWidget(self.chart)
        lower = QSplitter(Qt.Orientation.Horizontal)
        lower.addWidget(self.samples)
        lower.addWidget(self.detail)
        lower.setSizes([300, 500])  # the detail holds the longer text: answers, transcripts
        right.addWidget(QLabel("Samples of the selected run:"))
        right.addWidget(lower, 1)
        right_widget = QWidget()
        right_widget.setLayout(right)
        splitter = QSplitter()
        splitter.addWidget(left_widget)
        splitter.addWidget(right_widget)
        splitter.setSizes([380, 800])
        layout = QVBoxLayout(self)
        layout.addWidget(splitter)
        self.refresh()

    # ---- lists ----

    def refresh(self) -> None:
        current = self.dataset.currentData()
        self.dataset.clear()
        for dataset in self.evaluations.datasets():
            self.dataset.addItem(f"{dataset.name} ({dataset.sample_count} samples, {dataset.format})",
                                 dataset.id)
        if current:
            self.dataset.setCurrentIndex(max(0, self.dataset.findData(current)))
        runs = self._fill_runs()
        self.baseline.blockSignals(True)
        chosen = self.baseline.currentData()
        self.baseline.clear()
        self.baseline.addItem("(none)", "")
        for run in runs:
            self.baseline.addItem(f"{run['system']} ({run['id']})", run["id"])
        if chosen:
            self.baseline.setCurrentIndex(max(0, self.baseline.findData(chosen)))
        self.baseline.blockSignals(False)
        self.refresh_results()

    def _fill_runs(self) -> list[dict]:
        """The Runs table as the store has it now (a run being carried on reads "running")."""
        runs = self.evaluations.runs()
        selected = self.selected_run()
        self.runs.blockSignals(True)
        self.runs.setRowCount(len(runs))
        for row, run in enumerate(runs):
            for column, value in enumerate((run["id"], run["system"], run["status"],
                                            str(run["finished"]), run["created_at"])):
                item = QTableWidgetItem(value)
                item.setData(Qt.ItemDataRole.UserRole, run["id"])
                self.runs.setItem(row, column, item)
            if run["id"] == selected:
                self.runs.selectRow(row)
        self.runs.blockSignals(False)
        return runs

    def selected_run(self) -> str | None:
        items = self.runs.selectedItems()
        return items[0].data(Qt.ItemDataRole.UserRole) if items else None

    def refresh_results(self) -> None:
        """Summaries and paired bootstraps run in the background: with many large runs they
        take seconds, and the window must not pause for them."""
        actions = self.session.evaluation
        resamples = min(self.session.settings.bootstrap_resamples, 2000)
        evaluations = self.evaluations
        baseline = self.baseline.currentData()
        self._results_generation = getattr(self, "_results_generation", 0) + 1
        generation = self._results_generation

        def work(progress, cancel):
            rows = []
            for run in [r for r in evaluations.runs() if r["finished"]]:
                cancel.raise_if_cancelled()
                summary = actions.summary(run["id"], resamples)
                significant: set[str] = set()
                if baseline and baseline != run["id"]:
                    try:
                        comparison = actions.compare(baseline, run["id"], resamples)
                        significant = {r["metric"] for r in comparison["rows"] if r["significant"]}
                    except LumenError:
                        significant = set()  # no samples in common: nothing to compare
                try:
                    decided = actions.verdict(summary)
                except LumenError as exc:  # criteria in the settings not understood
                    decided = {"status": "undecided", "headline": exc.message}
                rows.append((run, summary, significant, decided))
            return rows

        def done(rows) -> None:
            if generation == self._results_generation:  # a newer refresh supersedes this one
                self._show_results(rows)

        def failed(exc: BaseException) -> None:
            if generation == self._results_generation:
                show_failure(self, exc)

        SessionOp(self, work).success(done).failure(failed).run_in_background()

    def _show_results(self, rows: list) -> None:
        info = metric_info()
        # Only the metrics some run has: a consultation run and a question run share none.
        shown = [m for m in result_metrics() if m in info
                 and any(m in summary["metrics"] for _run, summary, _sig, _v in rows)]
        self.results.setColumnCount(len(shown) + 2)
        self.results.setHorizontalHeaderLabels(["Run", "Verdict"] + [
            f"{info[m]['label']} {'↑' if info[m]['higher_is_better'] else '↓'}" for m in shown])
        self._verdicts = {run["id"]: decided for run, _summary, _sig, decided in rows}
        self._show_verdict()
        self.results.setRowCount(len(rows))
        chart_metric = self.chart_metric.currentData()
        if shown and chart_metric not in shown:
            # The chosen metric is in no run (a consultation run has no SARI): chart the first
            # one they have rather than an empty chart.
            chart_metric = shown[0]
            self.chart_metric.blockSignals(True)
            self.chart_metric.setCurrentIndex(self.chart_metric.findData(chart_metric))
            self.chart_metric.blockSignals(False)
        bars = []
        for row, (run, summary, significant, decided) in enumerate(rows):
            self.results.setItem(row, 0, QTableWidgetItem(f"{run['system']} ({run['id']})"))
            verdict_item = QTableWidgetItem(VERDICT_WORDS[decided["status"]])
            verdict_item.setForeground(QBrush(QColor(VERDICT_COLOURS[decided["status"]])))
            verdict_item.setToolTip(decided["headline"])
            self.results.setItem(row, 1, verdict_item)
            for column, metric in enumerate(shown, start=2):
                values = summary["metrics"].get(metric)
                item = QTableWidgetItem("—")
                if values and values["mean"] is not None:
                    interval = (f" (n={values['n']})" if values["ci_low"] is None else
                                f" [{values['ci_low']:.2f}, {values['ci_high']:.2f}]")
                    item.setText(f"{values['mean']:.2f}{interval}" + (" *" if metric in significant else ""))
                    item.setToolTip(f"{values['n']} samples; " + (
                        values["no_interval"] if values["ci_low"] is None else
                        f"95% interval by {values['interval']}"))
                self.results.setItem(row, column, item)
                if metric == chart_metric and values and values["mean"] is not None:
                    bars.append(Bar(f"{run['system']} ({run['id'][:6]})", values["mean"],
                                    values["ci_low"], values["ci_high"]))
        self.results.resizeColumnsToContents()
        meta = info.get(chart_metric, {})
        self.chart.set_data(meta.get("label", chart_metric), meta.get("scale", ""), bars)

    def _show_verdict(self) -> None:
        """The selected run's verdict in words, as its report would give it."""
        decided = getattr(self, "_verdicts", {}).get(self.selected_run() or "")
        if decided is None:
            self.verdict.setText("Select a run to see its verdict." if self.runs.rowCount() else "")
            return
        self.verdict.setText(f"<b style='color:{VERDICT_COLOURS[decided['status']]}'>"
                             f"{html.escape(decided['headline'])}</b>")

    def show_samples(self) -> None:
        self._show_verdict()
        run_id = self.selected_run()
        results = self.evaluations.results(run_id) if run_id else []
        self._language = (self.evaluations.dataset(self.evaluations.run(run_id)["dataset_id"]).language
                          if run_id else "en")
        self.samples.setRowCount(len(results))
        self._results = results
        info = metric_info()
        for row, result in enumerate(results):
            scores = ", ".join(f"{info.get(k, {}).get('label', k)} "
                               + (f"{v:.2f}" if isinstance(v, (int, float)) else "—")
                               for k, v in result["scores"].items())
            for column, value in enumerate((result["sample_id"], scores, result["error"])):
                self.samples.setItem(row, column, QTableWidgetItem(value))

    def show_sample(self) -> None:
        rows = self.samples.selectionModel().selectedRows()
        if not rows:
            return
        result = self._results[rows[0].row()]
        import html

        if "consultation" in result["trace"]:
            self.detail.setHtml(consultation_html(result))
            return

        # Persian (PerMedCQA) and other right-to-left text is shown right to left.
        direction = "rtl" if getattr(self, "_language", "en") in ("fa", "ar", "he", "ur") else "ltr"

        def block(title: str, text: str) -> str:
            return (f"<h3>{html.escape(title)}</h3><div dir='{direction}' style='white-space:pre-wrap'>"
                    f"{html.escape(text)}</div>")
        self.detail.setHtml(
            block("Question", result["input"]) + block("Output", result["output"] or "(blank)")
            + block("Reference answer", result["target"]) + block("Scores", readable_scores(result["scores"]))
            + block("Judges", readable_judge(result["judge"], result["scores"]))
            + (block("Error", result["error"]) if result["error"] else "")
            + (block("Document", result["context"][:4000] + ("…" if len(result["context"]) > 4000 else ""))
               if result["context"].strip() else "")
            + block("Trace (how the answer was made, for support)",
                    json.dumps(result["trace"], indent=1, ensure_ascii=False)[:20000]))

    # ---- importing ----

    def choose_import(self) -> None:
        from PySide6.QtWidgets import QInputDialog

        path, _ = QFileDialog.getOpenFileName(self, "Import a benchmark", str(Path.home()),
                                              "Benchmarks (*.jsonl *.json *.csv *.parquet *.xml);;All files (*)")
        if not path:
            return
        choice, ok = QInputDialog.getItem(self, "Benchmark format", "Which layout is this file?",
                                          [f"{k}: {v}" for k, v in FORMATS.items()], 0, False)
        if ok:
            self.import_file(Path(path), choice.split(":", 1)[0])

    def import_file(self, path: Path, fmt: str, mapping: dict[str, str] | None = None) -> None:
        if fmt == "generic" and mapping is None:
            dialog = MappingDialog(path, self)
            if not dialog.exec():
                return
            mapping = dialog.mapping()
        evaluation = self.session.evaluation

        def work(progress, cancel):  # a file is read whole: neither is used
            return evaluation.import_file(path, fmt, mapping=mapping)

        def done(imported) -> None:
            saved, dataset = imported
            self.refresh()
            self.dataset.setCurrentIndex(self.dataset.findData(saved.id))
            show_info(self, "Benchmark imported", f"{saved.name}: {saved.sample_count} samples"
                      + ("" if saved.new else " (this file was imported before)") + "."
                      + "".join(f"\n\n{note[:1].upper()}{note[1:]}." for note in dataset.notes))

        # A large benchmark (MedQuAD's thousands of files) takes a while to read: off the GUI
        # thread, the import button held until it is kept (a run already going goes on).
        running = not self.run_button.isEnabled()  # a run has the progress bar
        self._import_task = SessionOp(self, work, progress=None if running else self.progress,
                                      message=f"Importing {Path(path).name}…",
                                      disable=(self.import_button,),
                                      name="a benchmark import").success(done).run_in_background()

    # ---- running ----

    def _scorers_chosen(self) -> None:
        self._scorers_by_hand = True

    def _follow_systems(self, _item=None) -> None:
        if self._scorers_by_hand:
            return
        wanted = set(default_scorers(self.checked_systems()))
        for name, box in self.scorer_boxes.items():
            box.setChecked(name in wanted)

    def checked_systems(self) -> list[str]:
        return [self.systems.item(i).text() for i in range(self.systems.count())
                if self.systems.item(i).checkState() == Qt.CheckState.Checked]

    def start(self) -> None:
        dataset_id = self.dataset.currentData()
        chosen = self.checked_systems()
        scorers = [name for name, box in self.scorer_boxes.items() if box.isChecked()]
        if not dataset_id or not chosen:
            show_error(self, LumenError("Choose a dataset and at least one system to run.",
                                        "Import a benchmark first if the dataset list is empty."))
            return
        try:
            self._queue = self.session.evaluation.start(dataset_id, chosen, scorers,
                                                        self.limit.value() or None)
        except Exception as exc:
            show_error(self, exc)
            return
        self.refresh()
        self._next()

    def resume_selected(self) -> None:
        run_id = self.selected_run()
        if run_id:
            self._queue = [run_id]
            self._next()

    def _next(self) -> None:
        if not self._queue:  # the buttons are back: SessionOp gave them back after each run
            self.eta.setText("")
            return
        run_id = self._queue.pop(0)
        actions = self.session.evaluation
        self._started = time.monotonic()
        self._first_done: int | None = None

        def work(progress, cancel):
            return actions.resume(run_id, progress=progress, cancel=cancel)

        def progressed(update) -> None:  # after the progress bar has shown it
            if update.total:
                if self._first_done is None:
                    self._first_done = update.done
                    self._started = time.monotonic()
                    self._fill_runs()  # the run now reads "running", not "paused"
                done_here = update.done - self._first_done
                if done_here > 0:
                    rate = (time.monotonic() - self._started) / done_here
                    left = rate * (update.total - update.done)
                    self.eta.setText(f"About {left / 60:.0f} min left ({rate:.0f} s per sample).")

        def finished(_run) -> None:
            self.refresh()
            self._next()

        def failed(exc: BaseException) -> None:
            self._queue.clear()
            self.refresh()
            self._next()
            show_failure(self, exc)
        # The next run, if any, takes the buttons again before the window paints them.
        self._task = SessionOp(self, work, progress=self.progress, message=f"Run {run_id}…",
                               disable=(self.run_button, self.resume_button),
                               name="an evaluation run").progressed(progressed).success(
            finished).failure(failed).run_in_background()

    # ---- reports ----

    def choose_report(self) -> None:
        run_id = self.selected_run()
        if not run_id:
            show_error(self, LumenError("Select a run first.", "Click a run in the Runs list."))
            return
        path, _ = QFileDialog.getSaveFileName(self, "Save the validation report",
                                              str(Path.home() / f"lumen-validation-{run_id}.html"),
                                              "Web page (*.html);;PDF (*.pdf);;Spreadsheet (*.csv)")
        if path:
            self.write_report(run_id, Path(path))

    def write_report(self, run_id: str, path: Path) -> None:
        """Summaries and bootstraps in the background; the file is drawn here, on the
        window's thread, where Qt's text engine lays out the PDF."""
        actions = self.session.evaluation
        baseline = self.baseline.currentData()
        try:
            report_kind(path.name)
        except LumenError as exc:
            show_error(self, exc)
            return

        def work(progress, cancel):
            return actions.report(run_id, baseline=baseline)

        def done(report) -> None:
            self.report_status.setText("")
            try:
                write_report(report, path, self.session, force=True)  # the save dialog asked
            except LumenError as exc:
                show_error(self, exc)
                return
            self.last_report = report
            show_info(self, "Report saved", f"The validation report was saved as {path}.\n\n"
                      + report.verdict["headline"])

        def failed(exc: BaseException) -> None:
            self.report_status.setText("")
            show_failure(self, exc)

        self.report_status.setText("Writing the report…")
        self._report_task = SessionOp(self, work).success(done).failure(failed).run_in_background()
