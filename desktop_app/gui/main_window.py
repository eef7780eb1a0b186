"""Lumen's main window: a tab per job, a File menu with the settings and a Help menu
with the user guides."""

from __future__ import annotations

from typing import Callable

from PySide6.QtCore import QUrl, Signal
from PySide6.QtGui import QAction, QCloseEvent, QDesktopServices, QKeySequence
from PySide6.QtWidgets import QLabel, QMainWindow, QMessageBox, QStackedWidget, QTabWidget

from .. import __version__
from ..core.startup import network_guard_installed
from ..core.session import Changes, Session
from .ask_page import AskPage
from .evaluation_page import EvaluationPage
from .glossary_page import GlossaryPage
from .help_window import GUIDES, GuideDialog
from .key_dialogs import back_up_profile, change_database_key
from .knowledge_page import KnowledgePage
from .lock_screen import IdleWatch, LockScreen
from .models_page import ModelsPage
from .settings_dialog import SettingsDialog
from .shortcuts import ShortcutsDialog, keyboard_shortcut
from .simplify_page import SimplifyPage
from .status_page import StatusPage
from .workers import cancel_all, wait_for_all


class MainWindow(QMainWindow):
    # What a Session action changed (core Changes), carried to this window's thread: a
    # background import tells it from a worker thread, and Qt queues the call.
    changes_seen = Signal(object)

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
        self.evaluation_page = EvaluationPage(session)
        self.tabs.addTab(self.glossary_page, "&Glossary")
        self.tabs.addTab(self.evaluation_page, "&Evaluation")
        self.tabs.addTab(self.models_page, "&Models")
        # The tabs, or the lock screen in their place (automatic logoff).
        self.lock_screen = LockScreen(session)
        self.lock_screen.unlocked.connect(self.unlock)
        self.stack = QStackedWidget()
        self.stack.addWidget(self.tabs)
        self.stack.addWidget(self.lock_screen)
        self.setCentralWidget(self.stack)
        self.idle = IdleWatch(session.settings.auto_lock_minutes, self.lock_when_idle, self)
        self.status_page.action_requested.connect(self.carry_out)
        self.status_page.models_restored.connect(lambda _results: self.models_page.refresh())
        self._build_menus()
        self._tab_shortcuts()
        self._apply_editor_settings()
        self.offline_label = QLabel()
        self.statusBar().addPermanentWidget(self.offline_label)
        self.show_network_state()
        self.changes_seen.connect(self.apply_changes)
        session.on_changes(self.changes_seen.emit)

    def show_network_state(self) -> None:
        """The status bar: the guard, the model servers it lets through, the database key."""
        session = self.session
        key = session.records.key_source if session.is_open else "not open"
        servers = sum(spec.is_server for spec in session.models.specs())
        guard = ("Network guard OFF" if not network_guard_installed() else
                 "Offline: network guard on" if not servers else
                 f"Network guard on: only {servers} model server{'s' if servers > 1 else ''} "
                 "allowed")
        self.offline_label.setText(f"{guard} · database: {'OS keyring' if key == 'keyring' else key}")

    @property
    def locked(self) -> bool:
        return self.stack.currentWidget() is self.lock_screen

    def lock_when_idle(self) -> None:
        self.lock(f"Locked after {self.session.settings.auto_lock_minutes} minutes without use.",
                  idle=True)

    def lock(self, reason: str, *, idle: bool = False) -> None:
        """Hide every tab (and so all patient text) behind the lock screen."""
        if self.locked:
            return
        self.lock_screen.prepare(reason)
        self.stack.setCurrentWidget(self.lock_screen)
        self.menuBar().setEnabled(False)
        for action in self._unlocked_only:
            action.setEnabled(False)
        if self.session.is_open:
            self.session.audit("window.locked", {"idle": idle})

    def unlock(self) -> None:
        self.stack.setCurrentWidget(self.tabs)
        self.menuBar().setEnabled(True)
        for action in self._unlocked_only:
            action.setEnabled(True)
        self.idle.set_minutes(self.session.settings.auto_lock_minutes)
        if self.session.is_open:
            self.session.audit("window.unlocked", {})

    def apply_changes(self, changes: Changes) -> None:
        """Every page that shows what a Session action changed is brought up to date here,
        whichever page (or command) made the change."""
        if changes.glossary:
            glossary = self.session.glossary  # built again once, shared by every tab
            for page in (self.ask_page, self.simplify_page, self.knowledge_page):
                page.glossary = glossary
            for view in (self.ask_page.answer, self.simplify_page.original,
                         self.simplify_page.plain):
                view.glossary = glossary
            self.glossary_page.reload()
        if changes.settings:
            self.idle.set_minutes(self.session.settings.auto_lock_minutes)
            self.ask_page.apply_settings()
            self.knowledge_page.apply_settings()
            self._apply_editor_settings()
        if changes.settings or changes.models:
            self.models_page.refresh()
            self.show_network_state()
        if changes.models:
            self.status_page.run_checks()
        if changes.knowledge:
            self.knowledge_page.refresh_library()

    def _build_menus(self) -> None:
        file_menu = self.menuBar().addMenu("&File")
        settings = QAction("&Settings…", self)
        settings.setShortcuts([QKeySequence("Ctrl+,")])
        settings.triggered.connect(self.open_settings)
        file_menu.addAction(settings)
        file_menu.addSeparator()
        lock_action = QAction("&Lock", self)
        lock_action.setObjectName("lockWindow")
        lock_action.setShortcut(QKeySequence("Ctrl+L"))
        lock_action.triggered.connect(lambda: self.lock("Locked from the File menu."))
        file_menu.addAction(lock_action)
        backup_action = QAction("&Back up profile…", self)
        backup_action.setObjectName("backUpProfile")
        backup_action.triggered.connect(lambda: back_up_profile(self, self.session))
        file_menu.addAction(backup_action)
        key_action = QAction("Change database &key…", self)
        key_action.setObjectName("changeDatabaseKey")
        key_action.triggered.connect(lambda: change_database_key(self, self.session))
        file_menu.addAction(key_action)
        # What must wait while the window is locked (their shortcuts too).
        self._unlocked_only = [settings, lock_action, backup_action, key_action]
        file_menu.addSeparator()
        quit_action = QAction("&Quit", self)
        quit_action.setShortcut(QKeySequence("Ctrl+Q"))
        quit_action.triggered.connect(self.close)
        file_menu.addAction(quit_action)
        help_menu = self.menuBar().addMenu("&Help")
        for index, (name, title) in enumerate(GUIDES.items()):
            guide = QAction(title, self)
            guide.setObjectName(f"guide-{name}")
            if index == 0:
                guide.setShortcut(QKeySequence(QKeySequence.StandardKey.HelpContents))  # F1
            guide.triggered.connect(lambda _checked=False, n=name: self.open_guide(n))
            help_menu.addAction(guide)
        keys = QAction("&Keyboard shortcuts", self)
        keys.setShortcut(QKeySequence("Ctrl+/"))
        keys.triggered.connect(self.show_shortcuts)
        help_menu.addAction(keys)
        help_menu.addSeparator()
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
                # Audits what changed; apply_changes brings every tab up to date.
                self.session.change_settings(dialog.result_settings)
        dialog.accepted.connect(applied)
        dialog.open()
        return dialog

    def first_checks(self) -> None:
        """At start: a profile without the embedded models (a fresh one) gets them copied
        in, with progress on the Status page, before the checks run; then the checks."""
        if self.session.models.embedded_missing():
            self.tabs.setCurrentWidget(self.status_page)
            self.status_page.restore_models()
        else:
            self.status_page.run_checks()

    def carry_out(self, action: str) -> None:
        """A Status-page finding's button: the same work as the tab that owns it."""
        if action == "restore-models":
            self.status_page.restore_models()
        elif action == "verify-models":
            self.tabs.setCurrentWidget(self.models_page)
            self.models_page.verify()
        elif action == "add-model":
            self.tabs.setCurrentWidget(self.models_page)
            self.models_page.choose_and_add()
        elif action == "verify-offline":
            self.status_page.run_verification()
        elif action == "make-private":
            self.session.make_files_private()
            self.status_page.run_checks(measure_speed=False)
        elif action == "import-glossary":
            self.tabs.setCurrentWidget(self.glossary_page)
            self.glossary_page.choose_import()

    def _apply_editor_settings(self) -> None:
        for editor in (self.ask_page.summary, self.simplify_page.editor):
            editor.set_tab_types_tab(self.session.settings.tab_types_tab)

    def _tab_shortcuts(self) -> None:
        """Next and previous tab from anywhere in the window: text boxes would otherwise
        take Ctrl+Tab for themselves."""
        def step(by: int) -> Callable[[], None]:
            return lambda: self.tabs.setCurrentIndex((self.tabs.currentIndex() + by) % self.tabs.count())
        for keys, by, what in (("Ctrl+Tab", 1, "Next tab"), ("Ctrl+PgDown", 1, "Next tab"),
                               ("Ctrl+Shift+Tab", -1, "Previous tab"),
                               ("Ctrl+PgUp", -1, "Previous tab")):
            keyboard_shortcut(self, keys, step(by), what)

    def show_shortcuts(self) -> ShortcutsDialog:
        dialog = ShortcutsDialog(self.tabs, self)
        dialog.open()
        return dialog

    def open_guide(self, name: str) -> GuideDialog:
        dialog = GuideDialog(name, self)
        dialog.open()
        return dialog

    def about(self) -> None:
        QMessageBox.about(self, "About Lumen",
                          f"<b>Lumen {__version__}</b><br>A private medical text assistant that "
                          "runs entirely on this computer.<br><br>Lumen supports decisions; it "
                          "does not replace clinical judgement.<br><br>"
                          f"Data: {self.session.paths.data_dir}<br>Logs: {self.session.paths.log_dir}")

    def closeEvent(self, event: QCloseEvent) -> None:
        self.hide()  # gone at once; a model call stops within milliseconds (its abort callback)
        cancel_all("quit")
        wait_for_all(60000)
        self.session.close()
        super().closeEvent(event)
