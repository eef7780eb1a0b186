"""The Models page: which models Lumen has, which role each plays, adding a GGUF
file, and checking hashes.  The same core calls as `lumen models ...`."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtGui import QKeySequence
from PySide6.QtWidgets import (QComboBox, QFileDialog, QFormLayout, QGroupBox, QHBoxLayout,
                               QHeaderView, QInputDialog, QLabel, QMessageBox, QPushButton,
                               QTableWidget, QTableWidgetItem, QVBoxLayout, QWidget)

from ..core.errors import ChatTemplateError
from ..core.results import ROLE_PURPOSES, ROLES, SERVER_NOTES, known_chat_formats
from ..core.session import Session
from .messages import show_error, show_info
from .progress_bar import TaskProgress
from .workers import SessionOp

COLUMNS = ["Model", "Roles", "Kind", "Quantisation", "Context", "Licence", "Source",
           "Files or server"]


COLUMN_MEANINGS = {
    "Kind": "GGUF: a model file this computer runs itself (llama.cpp). Server: a model IT runs "
            "on another machine of the clinical network. ONNX: the small model that compares "
            "sentences by meaning.",
    "Quantisation": "How much the model's numbers were rounded to make the file smaller and "
                    "faster (Q4: about 4 bits each). More rounding, a little less accuracy.",
    "Context": "The most text the model can read and write at once, in tokens (a token is "
               "about three quarters of a word).",
    "Roles": "What Lumen uses the model for (see Roles below).",
}


class ModelsPage(QWidget):
    def __init__(self, session: Session, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.session = session
        self.file_states: dict[str, str] = {}
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setObjectName("modelsTable")
        self.table.setHorizontalHeaderLabels(COLUMNS)
        self.table.verticalHeader().hide()
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QTableWidget.SelectionBehavior.SelectRows)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.table.horizontalHeader().setStretchLastSection(True)
        self.table.itemSelectionChanged.connect(self._selection_changed)
        # The columns' words, for a reader who is not a model engineer (issue #33).
        for column, meaning in COLUMN_MEANINGS.items():
            self.table.horizontalHeaderItem(COLUMNS.index(column)).setToolTip(meaning)

        self.add_button = QPushButton("Add GGUF model…")
        self.add_button.setShortcut(QKeySequence.StandardKey.Open)
        self.add_button.setToolTip("Check and register a .gguf model file (Ctrl+O)")
        self.add_button.clicked.connect(self.choose_and_add)
        self.server_button = QPushButton("Add model server…")
        self.server_button.setShortcut(QKeySequence("Ctrl+Shift+S"))
        self.server_button.setToolTip("Use a model on an inference server IT runs (llama-server, "
                                      "vLLM, Ollama) for a role (Ctrl+Shift+S)")
        self.server_button.clicked.connect(self.choose_server)
        self.verify_button = QPushButton("Verify hashes")
        self.verify_button.setShortcut(QKeySequence("Ctrl+Shift+H"))
        self.verify_button.setToolTip("Read every model file and compare its sha256 with the recorded one")
        self.verify_button.clicked.connect(self.verify)
        self.provision_button = QPushButton("Restore embedded models")
        self.provision_button.setShortcut(QKeySequence("Ctrl+R"))
        self.provision_button.setToolTip("Copy the models that ship with Lumen into the models folder again")
        self.provision_button.clicked.connect(self.provision)
        self.remove_button = QPushButton("Remove model…")
        self.remove_button.setToolTip("Forget the selected model you added (the file itself "
                                      "stays); a model in use for a role cannot be removed (Delete)")
        self.remove_button.setShortcut(QKeySequence(Qt.Key.Key_Delete))
        self.remove_button.setEnabled(False)
        self.remove_button.clicked.connect(self.remove_selected)
        buttons = QHBoxLayout()
        for button in (self.add_button, self.server_button, self.verify_button,
                       self.provision_button, self.remove_button):
            buttons.addWidget(button)
        buttons.addStretch(1)

        self.role_boxes: dict[str, QComboBox] = {}
        roles_group = QGroupBox("Roles")
        form = QFormLayout(roles_group)
        role_help = ROLE_PURPOSES
        for role in ROLES:
            box = QComboBox()
            box.setObjectName(f"role_{role}")
            box.setToolTip(role_help[role])
            box.activated.connect(lambda _index, role=role: self.assign(role))
            self.role_boxes[role] = box
            explained = QLabel(role_help[role])
            explained.setWordWrap(True)
            explained.setStyleSheet("color: #555; font-size: 9pt")
            row = QHBoxLayout()
            row.addWidget(box, 1)
            row.addWidget(explained, 2)
            form.addRow(f"{role.capitalize()}:", row)

        self.progress = TaskProgress()
        self.hint = QLabel(
            "Production models (for example Qwen2.5-7B-Instruct and Phi-3.5-mini-instruct as "
            "Q4_K_M GGUF files) are copied onto this computer by IT and added here, or run by IT "
            "on an inference server and added with 'Add model server…'.")
        self.hint.setWordWrap(True)
        layout = QVBoxLayout(self)
        layout.addLayout(buttons)
        layout.addWidget(self.progress)
        layout.addWidget(self.table, 1)
        layout.addWidget(roles_group)
        layout.addWidget(self.hint)
        self.refresh()

    # ---- display ----

    def selected_model(self) -> dict | None:
        chosen = self.table.selectionModel().selectedRows() if self.table.selectionModel() else []
        return self._rows[chosen[0].row()] if chosen else None

    def _selection_changed(self) -> None:
        model = self.selected_model()
        self.remove_button.setEnabled(model is not None and model["source"] == "user")

    def refresh(self) -> None:
        rows = self._rows = self.session.models.rows()
        self.table.setRowCount(len(rows))
        for row, model in enumerate(rows):
            state = model["state"]
            if state == "present":
                state = self.file_states.get(model["id"], state)
            if model["kind"] == "server":
                state = f"{model['server_model']} on {model['endpoint']}"
            values = [model["name"], ", ".join(model["roles"]) or "—",
                      {"gguf": "text generation", "server": "text generation (server)"}.get(
                          model["kind"], "embedding"),
                      model["quantisation"] or "—",
                      str(model["context_length"] or "—"), model["licence"] or "—",
                      "ships with Lumen" if model["source"] == "embedded" else
                      ("added" if model["source"] == "user" else "recommended"), state]
            for column, value in enumerate(values):
                item = QTableWidgetItem(value)
                item.setToolTip(model["id"] if column == 0 else value)
                self.table.setItem(row, column, item)
        for role, box in self.role_boxes.items():
            box.blockSignals(True)
            box.clear()
            for model in rows:
                eligible = (model["kind"] == "onnx-embedder") == (role == "embedder")
                if eligible and (model["files"] or model["kind"] == "server"):
                    box.addItem(model["name"], model["id"])
            index = box.findData(self.session.settings.role(role))
            box.setCurrentIndex(index)
            box.blockSignals(False)
        self._selection_changed()

    # ---- actions ----

    def _start(self, fn, message: str, on_success, on_error=None) -> None:
        op = SessionOp(self, fn, progress=self.progress, message=message,
                       disable=(self.add_button, self.server_button, self.verify_button,
                                self.provision_button)).success(on_success)
        if on_error is not None:
            op.failure(on_error)
        op.run_in_background()

    def on_error(self, exc: BaseException) -> None:
        show_error(self, exc, log_file=str(self.session.paths.log_file))

    def choose_and_add(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Add a GGUF model", str(Path.home()),
                                              "GGUF models (*.gguf);;All files (*)")
        if path:
            self.add_model(Path(path))

    def add_model(self, path: Path, chat_format: str | None = None) -> None:
        session = self.session

        def added(spec) -> None:
            self.refresh()
            show_info(
                self, "Model added",
                f"{spec.name} was checked and added ({spec.architecture}, {spec.quantisation}, "
                f"context {spec.context_length}). Choose its roles below.")

        def failed(exc: BaseException) -> None:
            if isinstance(exc, ChatTemplateError) and chat_format is None:
                formats = sorted(known_chat_formats())
                choice, ok = QInputDialog.getItem(
                    self, "Chat format needed",
                    f"{path.name} does not say how its prompts are formatted.\n"
                    "Choose the format its publisher documents:", formats, 0, False)
                if ok:
                    self.add_model(path, choice)
                return
            self.on_error(exc)

        self._start(lambda progress, cancel: session.models.add(
                        path, chat_format=chat_format, progress=progress, cancel=cancel),
                    f"Checking {path.name}…", added, failed)

    def choose_server(self) -> None:
        from .server_dialog import ServerDialog

        dialog = ServerDialog(self.session, self)
        if dialog.exec() == ServerDialog.DialogCode.Accepted:
            self.add_server(dialog.choice())

    def add_server(self, choice) -> None:
        """Check the server and register its model (Session.models.add_server), in the
        background: the server may take a while to answer."""
        session = self.session

        def added(spec) -> None:
            self.refresh()
            context = (f"context {spec.context_length}" if spec.context_length else
                       "its context length is not said by the server, so Lumen uses "
                       f"{session.settings.context_size}")
            show_info(self, "Model server added",
                      f"{spec.name}: '{spec.server_model}' on {spec.endpoint} ({spec.server_kind}), "
                      f"{context}." + ("" if choice.roles else " Choose its roles below.")
                      + (f"\n\n{SERVER_NOTES[spec.server_kind]}"
                         if spec.server_kind in SERVER_NOTES else ""))
        self._start(lambda progress, cancel: session.models.add_server(
                        choice.url, name=choice.name, model=choice.model, roles=choice.roles,
                        ca_bundle=choice.ca_bundle, api_key=choice.api_key,
                        context_length=choice.context_length),
                    f"Checking the model server {choice.url}…", added)

    def assign(self, role: str) -> None:
        model_id = self.role_boxes[role].currentData()
        if not model_id or model_id == self.session.settings.role(role):
            return
        try:
            self.session.models.assign_role(role, model_id)
        except Exception as exc:
            self.on_error(exc)
            self.refresh()
            return
        self.refresh()

    def remove_selected(self) -> None:
        model = self.selected_model()
        if model is None or model["source"] != "user":
            return
        answer = QMessageBox.question(
            self, "Remove model", f"Remove {model['name']} from Lumen's list? The file itself "
            "stays where it is; add it again to use it.")
        if answer == QMessageBox.StandardButton.Yes:
            self.remove(model["id"])

    def remove(self, model_id: str) -> None:
        try:
            self.session.models.remove(model_id)  # audited
        except Exception as exc:
            self.on_error(exc)
            return
        self.refresh()

    def verify(self) -> None:
        session = self.session

        def done(rows) -> None:
            self.file_states = {row["id"]: "sha256 OK" if row["state"] == "ok" else row["state"]
                                for row in rows if row["files"]}
            self.refresh()
        self._start(lambda progress, cancel: session.models.rows(verify=True, progress=progress,
                                                                 cancel=cancel),
                    "Verifying model files…", done)

    def provision(self) -> None:
        session = self.session

        def done(_results) -> None:
            self.file_states.clear()
            self.refresh()
        self._start(lambda progress, cancel: session.models.provision(progress, cancel),
                    "Copying embedded models…", done)
