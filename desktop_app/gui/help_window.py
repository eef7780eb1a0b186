"""The user guides (docs/guide/*.md), shown offline from the Help menu: one for each of
Lumen's users, with screenshots of the window (docs/screenshots, made by `make
screenshots`)."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QUrl
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QTextBrowser, QVBoxLayout, QWidget

from ..core.config import resource_root

GUIDES = {"ward-staff": "Guide for ward staff: answering questions",
          "patient-liaisons": "Guide for patient liaisons: handouts",
          "it": "Guide for IT: installing and validating"}


def guide_file(name: str) -> Path:
    return resource_root() / "docs" / "guide" / f"{name}.md"


class GuideDialog(QDialog):
    def __init__(self, name: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("guideDialog")
        self.setWindowTitle(GUIDES[name])
        self.resize(900, 760)
        self.browser = QTextBrowser()
        self.browser.setObjectName("guideText")
        self.browser.setOpenExternalLinks(False)
        path = guide_file(name)
        if path.is_file():
            # Relative image paths (../screenshots/ask.png) resolve against the guide's folder.
            self.browser.setSource(QUrl.fromLocalFile(str(path)))
        else:
            self.browser.setPlainText(f"The guide {path} is missing from this installation. "
                                      "Reinstall Lumen, or read docs/guide in its source.")
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.browser)
        layout.addWidget(buttons)
