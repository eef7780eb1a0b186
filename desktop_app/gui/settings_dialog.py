"""The Settings dialog, built from the Settings dataclass: each field's label, help
text, limits and choices come from its metadata, so the dialog never lags behind
the settings object.  Each setting shows a plain label, a one-line explanation and its
default; the paper's or library's term (τ, FKGL, top-p) and the name `lumen settings`
uses are in the tooltip."""

from __future__ import annotations

import dataclasses

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (QCheckBox, QComboBox, QDialog, QDialogButtonBox, QDoubleSpinBox,
                               QFormLayout, QLabel, QLineEdit, QScrollArea, QSpinBox, QTabWidget,
                               QVBoxLayout, QWidget)

from ..core.results import Settings
from ..core.errors import LumenError
from ..core.session import Session


OPENING_SIZE = (900, 680)  # the least the dialog opens at, in pixels


class SettingsDialog(QDialog):
    def __init__(self, session: Session, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Lumen settings")
        self.setObjectName("settingsDialog")
        self.session = session
        self.editors: dict[str, QWidget] = {}
        self.result_settings: Settings | None = None
        models = [spec for spec in session.models.specs() if spec.files]
        tabs = QTabWidget()
        forms: dict[str, QFormLayout] = {}
        self.descriptions: dict[str, QLabel] = {}
        for f in Settings.describe():
            group = f.metadata["group"]
            if group not in forms:
                page = QWidget()
                forms[group] = QFormLayout(page)
                scroll = QScrollArea()
                scroll.setWidgetResizable(True)
                scroll.setWidget(page)
                tabs.addTab(scroll, group)
            editor = self._editor(f, getattr(session.settings, f.name), models)
            editor.setObjectName(f.name)
            meta = f.metadata
            technical = f"{meta['technical']}; " if meta.get("technical") else ""
            editor.setToolTip(f"{meta['help']}\n\nTechnical name: {technical}'{f.name}' in "
                              f"'lumen settings'.")
            label = QLabel(meta["label"] + ":")
            label.setToolTip(editor.toolTip())
            label.setBuddy(editor)
            description = QLabel(f"{first_sentence(meta['help'])} Default: {shown_default(f)}.")
            description.setObjectName(f"{f.name}Description")
            description.setWordWrap(True)
            description.setStyleSheet("color: #555; font-size: 9pt")
            column = QVBoxLayout()
            column.setSpacing(1)
            column.addWidget(editor)
            column.addWidget(description)
            forms[group].addRow(label, column)
            self.editors[f.name] = editor
            self.descriptions[f.name] = description
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
        layout.addWidget(QLabel("Each setting says what it does and its default; hover for "
                                "details. Changes apply to the next model call."))
        layout.addWidget(tabs)
        self.tabs = tabs
        # Opens wide enough for every tab's name in full ("Ger" was all of "General" at
        # Qt's own size) and tall enough for a page of settings, within the screen.
        tabs.setElideMode(Qt.TextElideMode.ElideNone)
        tabs.setUsesScrollButtons(False)
        wanted_width = max(OPENING_SIZE[0], tabs.tabBar().sizeHint().width() + 48)
        screen = self.screen().availableGeometry() if self.screen() is not None else None
        self.resize(min(wanted_width, screen.width()) if screen else wanted_width,
                    min(OPENING_SIZE[1], screen.height()) if screen else OPENING_SIZE[1])
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
                box.addItem(meta["choice_labels"].get(choice, choice), choice)
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
            # As many decimals as a calibrated value has (`lumen calibrate` gives 0.034), so
            # saving the dialog never rounds a setting nobody touched.
            spin.setDecimals(3)
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


def first_sentence(text: str) -> str:
    """The help text's first sentence: the one-line explanation under a setting.  A full
    stop or semicolon inside brackets, or in "e.g.", ends no sentence ("(incorrect <
    contradictory; 'off' ...)" was cut after "contradictory")."""
    depth = 0
    for index, char in enumerate(text):
        depth += {"(": 1, ")": -1}.get(char, 0)
        ends_here = index + 1 == len(text) or text[index + 1].isspace()
        if (char in ".;" and depth <= 0 and ends_here
                and not text[max(0, index - 3):index + 1].endswith(("e.g.", "i.e."))):
            return text[:index] + "."
    return text


def shown_default(f: dataclasses.Field) -> str:
    """The default as a user reads it: a choice by its label, a switch as on or off."""
    value = f.default
    if isinstance(value, bool):
        return "on" if value else "off"
    if f.metadata.get("choice_labels"):
        return f.metadata["choice_labels"].get(value, value)
    if f.name == "threads" and value == 0:
        return "one per core Lumen may use"
    if f.name == "models_dir" and not value:
        return "Lumen's own folder"
    return str(value) if value != "" else "none"
