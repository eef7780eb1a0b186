"""The user guides (docs/guide/*.md), shown offline from the Help menu: one for each of
Lumen's users, with screenshots of the window (docs/screenshots, made by `make
screenshots`)."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QByteArray, Qt, QUrl
from PySide6.QtGui import QImage, QTextDocument
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QTextBrowser, QVBoxLayout, QWidget

from ..core.results import resource_root

GUIDES = {"ward-staff": "Guide for ward staff: answering questions",
          "patient-liaisons": "Guide for patient liaisons: handouts",
          "it": "Guide for IT: installing and validating"}


def guide_file(name: str) -> Path:
    return resource_root() / "docs" / "guide" / f"{name}.md"


IMAGE_WIDTH = 820  # a screenshot (1280 pixels wide) drawn to fit the 900-pixel dialog


class GuideBrowser(QTextBrowser):
    """The guide's text, its screenshots scaled down to fit the dialog's width."""

    def loadResource(self, kind: int, url: QUrl):  # noqa: N802 (Qt's name)
        resource = super().loadResource(kind, url)
        if kind != QTextDocument.ResourceType.ImageResource.value:
            return resource
        image = resource if isinstance(resource, QImage) else QImage()
        if isinstance(resource, (bytes, QByteArray)):
            image.loadFromData(resource)
        if not image.isNull() and image.width() > IMAGE_WIDTH:
            return image.scaledToWidth(IMAGE_WIDTH, Qt.TransformationMode.SmoothTransformation)
        return resource


class GuideDialog(QDialog):
    def __init__(self, name: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("guideDialog")
        self.setWindowTitle(GUIDES[name])
        self.resize(900, 760)
        self.browser = GuideBrowser()
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
