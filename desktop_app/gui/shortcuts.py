"""Keyboard shortcuts: made in one way, and listed in Help → Keyboard shortcuts from the
window itself, so the list is never out of date."""

from __future__ import annotations

from typing import Callable

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QKeySequence, QShortcut
from PySide6.QtWidgets import (QAbstractButton, QDialog, QDialogButtonBox, QTabWidget,
                               QTableWidget, QTableWidgetItem, QVBoxLayout, QWidget)


def keyboard_shortcut(parent: QWidget, keys: str | QKeySequence.StandardKey, action: Callable,
                      description: str) -> QShortcut:
    """A shortcut without a button, described for the shortcut list."""
    shortcut = QShortcut(QKeySequence(keys), parent, action)
    shortcut.setWhatsThis(description)
    return shortcut


def _plain(text: str) -> str:
    return text.replace("&&", "\0").replace("&", "").replace("\0", "&").rstrip("…").strip()


def shortcut_rows(tabs: QTabWidget, window: QWidget) -> list[tuple[str, str, str]]:
    """(where, what, keys) for every shortcut of the window: menu actions, the tabs'
    mnemonics, buttons with a shortcut and described shortcuts, tab by tab."""
    native = QKeySequence.SequenceFormat.NativeText
    rows = []
    for action in window.findChildren(QAction):
        if not action.shortcut().isEmpty() and action.text():
            rows.append(("Menus", _plain(action.text()), action.shortcut().toString(native)))
    for shortcut in window.findChildren(QShortcut):
        if shortcut.parent() is window and shortcut.whatsThis():
            rows.append(("Anywhere", shortcut.whatsThis(), shortcut.key().toString(native)))
    for index in range(tabs.count()):
        name = _plain(tabs.tabText(index))
        mnemonic = tabs.tabText(index).split("&", 1)
        if len(mnemonic) == 2 and mnemonic[1]:
            rows.append(("Anywhere", f"Go to the {name} tab", f"Alt+{mnemonic[1][0].upper()}"))
        page = tabs.widget(index)
        for button in page.findChildren(QAbstractButton):
            if not button.shortcut().isEmpty() and button.text():
                rows.append((name, _plain(button.text()), button.shortcut().toString(native)))
        for shortcut in page.findChildren(QShortcut):
            if shortcut.whatsThis():
                rows.append((name, shortcut.whatsThis(), shortcut.key().toString(native)))
    merged: dict[tuple[str, str], list[str]] = {}  # one row per thing, its keys together
    for where, what, keys in rows:
        known = merged.setdefault((where, what), [])
        if keys not in known:
            known.append(keys)
    return [(where, what, ", ".join(keys)) for (where, what), keys in merged.items()]


class ShortcutsDialog(QDialog):
    def __init__(self, tabs: QTabWidget, window: QWidget) -> None:
        super().__init__(window)
        self.setObjectName("shortcutsDialog")
        self.setWindowTitle("Keyboard shortcuts")
        self.resize(640, 620)
        rows = shortcut_rows(tabs, window)
        self.table = QTableWidget(len(rows), 3)
        self.table.setObjectName("shortcutsTable")
        self.table.setHorizontalHeaderLabels(["Where", "What", "Keys"])
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().setVisible(False)
        for row, values in enumerate(rows):
            for column, value in enumerate(values):
                self.table.setItem(row, column, QTableWidgetItem(value))
        self.table.resizeColumnsToContents()
        self.table.horizontalHeader().setStretchLastSection(True)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.table)
        layout.addWidget(buttons)
        self.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
