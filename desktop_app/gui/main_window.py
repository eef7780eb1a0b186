"""Lumen's main window: a tab per job.  Later features add their tabs here."""

from __future__ import annotations

from PySide6.QtCore import QUrl
from PySide6.QtGui import QAction, QCloseEvent, QDesktopServices, QKeySequence
from PySide6.QtWidgets import QLabel, QMainWindow, QMessageBox, QTabWidget

from .. import __version__
from ..core import offline
from ..core.session import Session
from .ask_page import AskPage
from .evaluation_page import EvaluationPage
from .glossary_page import GlossaryPage
from .knowledge_page import KnowledgePage
from .models_page import ModelsPage
from .settings_dialog import SettingsDialog
from .simplify_page import SimplifyPage
from .status_page import StatusPage
from .workers import cancel_all, wait_for_all


class MainWindow(QMainWindow):
    def __init__(self, session: Session) -> None:
        super().__init__()
        self.session = session
        self.setWindowTitle("Lumen")
        self.setObjectName("mainWindow")
        self.resize(1100, 720)
        self.tabs = QTabWidget()
        self.tabs.setObjectName("mainTabs")
        self.status_page = StatusPage(session)
        self.models_page = ModelsPage(session)
        self.glossary_page = GlossaryPage(session)
        self.ask_page = AskPage(session, self.glossary_page.glossary)
        self.simplify_page = SimplifyPage(session, self.glossary_page.glossary)
        self.tabs.addTab(self.status_page, "&Status")
        self.tabs.addTab(self.ask_page, "&Ask")
        self.tabs.addTab(self.simplify_page, "Sim&plify")
        self.knowledge_page = KnowledgePage(session, self.glossary_page.glossary)
        self.tabs.addTab(self.knowledge_page, "&Knowledge")
        self.evaluation_page = EvaluationPage(session, self.glossary_page.glossary)
        self.tabs.addTab(self.glossary_page, "&Glossary")
        self.tabs.addTab(self.evaluation_page, "&Evaluation")
        self.tabs.addTab(self.models_page, "&Models")
        self.glossary_page.glossary_changed.connect(self._share_glossary)
        self.setCentralWidget(self.tabs)
        self.models_page.settings_changed.connect(lambda _s: self.status_page.run_checks())
        self._build_menus()
        key = session.store.key_source if session.store else "not open"
        self.offline_label = QLabel()
        self.statusBar().addPermanentWidget(self.offline_label)
        self.offline_label.setText(
            ("Offline: network guard on" if offline.guard_installed() else "Network guard OFF")
            + f" · database: {'OS keyring' if key == 'keyring' else key}")

    def _share_glossary(self) -> None:
        glossary = self.glossary_page.glossary
        for page in (self.ask_page, self.simplify_page, self.evaluation_page, self.knowledge_page):
            page.glossary = glossary
        for view in (self.ask_page.answer, self.simplify_page.original, self.simplify_page.plain):
            view.glossary = glossary

    def _build_menus(self) -> None:
        file_menu = self.menuBar().addMenu("&File")
        settings = QAction("&Settings…", self)
        settings.setShortcuts([QKeySequence("Ctrl+,")])
        settings.triggered.connect(self.open_settings)
        file_menu.addAction(settings)
        file_menu.addSeparator()
        quit_action = QAction("&Quit", self)
        quit_action.setShortcut(QKeySequence("Ctrl+Q"))
        quit_action.triggered.connect(self.close)
        file_menu.addAction(quit_action)
        help_menu = self.menuBar().addMenu("&Help")
        logs = QAction("Open &log folder", self)
        logs.triggered.connect(lambda: QDesktopServices.openUrl(
            QUrl.fromLocalFile(str(self.session.paths.log_dir))))
        help_menu.addAction(logs)
        about = QAction("&About Lumen", self)
        about.triggered.connect(self.about)
        help_menu.addAction(about)

    def open_settings(self) -> SettingsDialog:
        dialog = SettingsDialog(self.session, self)

        def applied() -> None:
            if dialog.result_settings is not None:
                self.session.apply_settings(dialog.result_settings)
                if self.session.store is not None:
                    self.session.store.audit("settings.changed", {})
                self.models_page.refresh()
                self.ask_page.apply_settings()
                self.knowledge_page.apply_settings()
        dialog.accepted.connect(applied)
        dialog.open()
        return dialog

    def about(self) -> None:
        QMessageBox.about(self, "About Lumen",
                          f"<b>Lumen {__version__}</b><br>A private medical text assistant that "
                          "runs entirely on this computer.<br><br>Lumen supports decisions; it "
                          "does not replace clinical judgement.<br><br>"
                          f"Data: {self.session.paths.data_dir}<br>Logs: {self.session.paths.log_dir}")

    def closeEvent(self, event: QCloseEvent) -> None:
        cancel_all()
        wait_for_all(60000)
        self.session.close()
        super().closeEvent(event)
