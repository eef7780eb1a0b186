"""The Settings dialog, built from the Settings dataclass: each field's label, help
text, limits and choices come from its metadata, so the dialog never lags behind
the settings object."""

from __future__ import annotations

import dataclasses

from PySide6.QtWidgets import (QCheckBox, QComboBox, QDialog, QDialogButtonBox, QDoubleSpinBox,
                               QFormLayout, QLabel, QLineEdit, QSpinBox, QTabWidget, QVBoxLayout,
                               QWidget)

from ..core.config import Settings
from ..core.errors import LumenError
from ..core.models.catalog import ModelRegistry
from ..core.session import Session


class SettingsDialog(QDialog):
    def __init__(self, session: Session, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Lumen settings")
        self.setObjectName("settingsDialog")
        self.session = session
        self.editors: dict[str, QWidget] = {}
        self.result_settings: Settings | None = None
        registry = ModelRegistry(session.paths, session.settings)
        models = [spec for spec in registry.all() if spec.files]
        tabs = QTabWidget()
        forms: dict[str, QFormLayout] = {}
        for f in Settings.describe():
            group = f.metadata["group"]
            if group not in forms:
                page = QWidget()
                forms[group] = QFormLayout(page)
                tabs.addTab(page, group)
            editor = self._editor(f, getattr(session.settings, f.name), models)
            editor.setObjectName(f.name)
            editor.setToolTip(f"{f.metadata['help']}\nDefault: {f.default!r}")
            label = QLabel(f.metadata["label"] + ":")
            label.setToolTip(editor.toolTip())
            label.setBuddy(editor)
            forms[group].addRow(label, editor)
            self.editors[f.name] = editor
        self.error = QLabel()
        self.error.setObjectName("settingsError")
        self.error.setStyleSheet("color: #b3261e")
        self.error.setWordWrap(True)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok
                                   | QDialogButtonBox.StandardButton.Cancel
                                   | QDialogButtonBox.StandardButton.RestoreDefaults)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        buttons.button(QDialogButtonBox.StandardButton.RestoreDefaults).clicked.connect(
            self.restore_defaults)
        layout = QVBoxLayout(self)
        layout.addWidget(QLabel("Hover over a setting to see what it does. Changes apply to "
                                "the next model call."))
        layout.addWidget(tabs)
        layout.addWidget(self.error)
        layout.addWidget(buttons)

    def _editor(self, f: dataclasses.Field, value, models) -> QWidget:
        meta = f.metadata
        kind = type(f.default)
        if f.name.startswith("role_"):
            box = QComboBox()
            wants_embedder = f.name == "role_embedder"
            for spec in models:
                if (spec.kind == "onnx-embedder") == wants_embedder:
                    box.addItem(spec.name, spec.id)
            if box.findData(value) < 0:
                box.addItem(value, value)
            box.setCurrentIndex(box.findData(value))
            return box
        if meta.get("choices"):
            box = QComboBox()
            for choice in meta["choices"]:
                box.addItem(choice, choice)
            box.setCurrentIndex(box.findData(value))
            return box
        if kind is bool:
            check = QCheckBox()
            check.setChecked(bool(value))
            return check
        if kind is int:
            spin = QSpinBox()
            spin.setRange(int(meta.get("minimum") or 0), int(meta.get("maximum") or 2**31 - 1))
            spin.setValue(int(value))
            return spin
        if kind is float:
            spin = QDoubleSpinBox()
            spin.setDecimals(2)
            spin.setSingleStep(0.05)
            spin.setRange(float(meta.get("minimum") or 0.0), float(meta.get("maximum") or 1e9))
            spin.setValue(float(value))
            return spin
        line = QLineEdit(str(value))
        if f.name == "models_dir":
            line.setPlaceholderText(str(self.session.paths.default_models_dir))
        return line

    def _set_editor(self, name: str, value) -> None:
        editor = self.editors[name]
        if isinstance(editor, QComboBox):
            editor.setCurrentIndex(editor.findData(value))
        elif isinstance(editor, QCheckBox):
            editor.setChecked(bool(value))
        elif isinstance(editor, (QSpinBox, QDoubleSpinBox)):
            editor.setValue(value)
        elif isinstance(editor, QLineEdit):
            editor.setText(str(value))

    def values(self) -> dict:
        out = {}
        for name, editor in self.editors.items():
            if isinstance(editor, QComboBox):
                out[name] = editor.currentData()
            elif isinstance(editor, QCheckBox):
                out[name] = editor.isChecked()
            elif isinstance(editor, (QSpinBox, QDoubleSpinBox)):
                out[name] = editor.value()
            else:
                out[name] = editor.text()
        return out

    def restore_defaults(self) -> None:
        for f in Settings.describe():
            self._set_editor(f.name, f.default)

    def accept(self) -> None:
        try:
            settings = Settings.from_dict(self.values(), "the Settings dialog")
        except LumenError as exc:
            self.error.setText(f"{exc.message} {exc.fix}")
            return
        self.result_settings = settings
        super().accept()
