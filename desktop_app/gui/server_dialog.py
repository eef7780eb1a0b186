"""The Models tab's "Add model server…" dialog: what `lumen models add-server` asks for.

It only collects the answers; the Models page checks and registers the server through
Session.models.add_server, in the background."""

from __future__ import annotations

from dataclasses import dataclass, field

from PySide6.QtWidgets import (QCheckBox, QComboBox, QDialog, QDialogButtonBox, QFileDialog,
                               QFormLayout, QHBoxLayout, QLabel, QLineEdit, QPushButton,
                               QSpinBox, QVBoxLayout, QWidget)

from ..core.results import GENERATION_ROLES
from ..core.session import Session
from .workers import SessionOp


@dataclass
class ServerChoice:
    url: str
    name: str
    model: str
    roles: list[str] = field(default_factory=list)
    ca_bundle: str = ""
    api_key: str = ""
    context_length: int = 0


class ServerDialog(QDialog):
    def __init__(self, session: Session, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.session = session
        self.setWindowTitle("Add a model server")
        self.url = QLineEdit()
        self.url.setObjectName("serverUrl")
        self.url.setPlaceholderText("https://llm.hospital.local:8443")
        self.name = QLineEdit()
        self.name.setObjectName("serverName")
        self.name.setPlaceholderText("Ward server Qwen2.5 7B")
        self.model = QComboBox()
        self.model.setObjectName("serverModel")
        self.model.setEditable(True)
        self.model.setToolTip("The model's name on the server; 'Ask the server' lists them")
        self.ask_button = QPushButton("&Ask the server")
        self.ask_button.setToolTip("List the models this server serves (checks the address, "
                                   "certificate and key too)")
        self.ask_button.clicked.connect(self.list_models)
        model_row = QHBoxLayout()
        model_row.addWidget(self.model, 1)
        model_row.addWidget(self.ask_button)
        self.role_boxes = {role: QCheckBox(role) for role in GENERATION_ROLES}
        role_row = QHBoxLayout()
        for box in self.role_boxes.values():
            role_row.addWidget(box)
        role_row.addStretch(1)
        self.ca_bundle = QLineEdit()
        self.ca_bundle.setPlaceholderText("the system's certificates")
        browse = QPushButton("&Browse…")
        browse.clicked.connect(self.choose_ca_bundle)
        ca_row = QHBoxLayout()
        ca_row.addWidget(self.ca_bundle, 1)
        ca_row.addWidget(browse)
        self.api_key = QLineEdit()
        self.api_key.setObjectName("serverApiKey")
        self.api_key.setEchoMode(QLineEdit.EchoMode.Password)
        self.api_key.setPlaceholderText("none")
        self.context = QSpinBox()
        self.context.setRange(0, 1_048_576)
        self.context.setSpecialValueText("as the server says")
        self.context.setSingleStep(1024)
        form = QFormLayout()
        form.addRow("&Address:", self.url)
        form.addRow("&Name in Lumen:", self.name)
        model_label = QLabel("&Model on the server:")
        model_label.setBuddy(self.model)
        form.addRow(model_label, model_row)
        form.addRow("Roles:", role_row)
        ca_label = QLabel("&CA bundle (https):")
        ca_label.setBuddy(self.ca_bundle)
        form.addRow(ca_label, ca_row)
        form.addRow("API &key:", self.api_key)
        form.addRow("Con&text length:", self.context)
        note = QLabel("Lumen connects to this server only, never through a proxy, and writes "
                      "each connection to the audit log. The API key is kept in the system "
                      "keyring, or in Lumen's encrypted database where there is none, never in "
                      "a settings file. Where IT has an allowlist file, the server must be in it.")
        note.setWordWrap(True)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok
                                        | QDialogButtonBox.StandardButton.Cancel)
        self.buttons.button(QDialogButtonBox.StandardButton.Ok).setText("Check and &add")
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        for edit in (self.url, self.name):
            edit.textChanged.connect(self._update_ok)
        self.model.editTextChanged.connect(self._update_ok)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(note)
        layout.addWidget(self.buttons)
        self.resize(620, self.sizeHint().height())
        self._update_ok()

    def _update_ok(self) -> None:
        ready = all(text.strip() for text in (self.url.text(), self.name.text(),
                                               self.model.currentText()))
        self.buttons.button(QDialogButtonBox.StandardButton.Ok).setEnabled(ready)

    def choice(self) -> ServerChoice:
        return ServerChoice(self.url.text().strip(), self.name.text().strip(),
                            self.model.currentText().strip(),
                            [role for role, box in self.role_boxes.items() if box.isChecked()],
                            self.ca_bundle.text().strip(), self.api_key.text().strip(),
                            self.context.value())

    def choose_ca_bundle(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "CA bundle", "",
                                              "Certificates (*.pem *.crt *.cer);;All files (*)")
        if path:
            self.ca_bundle.setText(path)

    def list_models(self) -> None:
        choice = self.choice()

        def done(models: list[str]) -> None:
            current = self.model.currentText()
            self.model.clear()
            self.model.addItems(models)
            if current in models or not models:
                self.model.setEditText(current)
        self._task = SessionOp(
            self, lambda progress, cancel: self.session.models.server_models(
                choice.url, ca_bundle=choice.ca_bundle, api_key=choice.api_key),
            disable=(self.ask_button,), name="Asking the model server",
        ).success(done).run_in_background()
