"""The window, driven with pytest-qt on real widgets (offscreen)."""

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from markupsafe import escape
from PySide6.QtCore import Qt, QUrl
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QMessageBox

from desktop_app.core.config import Settings
from desktop_app.core.pipelines.evidence import RELATED_LABELS
from desktop_app.core.store import open_store
from desktop_app.gui.settings_dialog import SettingsDialog
from desktop_app.gui.unlock_dialog import UnlockDialog
from desktop_app.gui.workers import wait_for_all
from helpers import ROOT, TEST_PASSPHRASE, run_lumen, smollm2_file


def test_status_page_shows_the_doctors_findings(qtbot, window):
    with qtbot.waitSignal(window.status_page.checked, timeout=120_000) as signal_:
        window.status_page.run_checks(measure_speed=False)
    report = signal_.args[0]
    assert report.ok
    table = window.status_page.table
    assert table.rowCount() == len(report.findings)
    # Plain words first (issue #33); the technical names and measurements one click away.
    texts = {table.item(row, 1).text() for row in range(table.rowCount())}
    assert "Lumen cannot send anything to another machine." in texts
    assert {table.item(row, 2).text() for row, finding in enumerate(report.findings)
            if finding.status == "ok"} == {"Works."}
    assert not any("tokens/s" in table.item(row, 2).text() or "dimensional" in
                   table.item(row, 2).text() for row in range(table.rowCount()))
    window.status_page.technical.setChecked(True)
    texts = {table.item(row, 1).text() for row in range(table.rowCount())}
    assert "Offline: Network guard" in texts and "Database: Encrypted database" in texts
    window.status_page.technical.setChecked(False)
    assert "ready" in window.status_page.summary.text()
    assert "network guard on" in window.offline_label.text()


@pytest.mark.slow
def test_status_page_verifies_offline_below_python(qtbot, window):
    page = window.status_page
    assert page.verify.isEnabled() and "Ctrl+Shift+V" in page.verify.toolTip()
    with qtbot.waitSignal(page.verified, timeout=600_000) as signal_:
        page.run_verification(quick=True)
        assert not page.verify.isEnabled() and page.progress.isVisible()
    tour = signal_.args[0].tour
    assert tour.ok, tour.to_dict()
    assert page.summary.text().startswith("Verified offline: nothing tried to leave")
    box = page.findChild(QMessageBox, "verificationResult")
    assert box is not None and "Nothing tried to leave" in box.text()
    assert "OK  window start-up (self-test)" in box.detailedText()
    assert page.verify.isEnabled() and not page.progress.isVisible()
    entry = window.session.records.audit_entries(1)[0]
    assert entry["action"] == "offline.verified"
    assert entry["detail"]["servers"] == [] and entry["detail"]["from"] == "window"
    assert "The audit log records no connection to any other machine." in box.informativeText()


@pytest.mark.slow
def test_models_page_lists_models_and_assigns_roles(qtbot, window, profile, shared_models, tmp_path):
    page = window.models_page
    names = {page.table.item(r, 0).text() for r in range(page.table.rowCount())}
    assert "SmolLM2 135M Instruct (Q4_1)" in names
    copy = tmp_path / "clinic-model.gguf"
    shutil.copyfile(smollm2_file(shared_models), copy)
    page.add_model(copy)
    qtbot.waitUntil(lambda: page.add_button.isEnabled(), timeout=60_000)
    info = page.findChild(QMessageBox, "infoDialog")
    assert info is not None and "was checked and added" in info.text()
    info.close()
    box = page.role_boxes["reviewer"]
    index = box.findData("clinic-model")
    assert index >= 0
    box.setCurrentIndex(index)
    box.activated.emit(index)
    assert Settings.load(profile).role_reviewer == "clinic-model"
    assert window.session.settings.role_reviewer == "clinic-model"
    actions = [e["action"] for e in window.session.records.audit_entries()]
    assert "model.added" in actions and "model.role_assigned" in actions

    # Removing: refused while the model has a role, then done, and audited.
    row = next(r for r in range(page.table.rowCount())
               if page.table.item(r, 0).toolTip() == "clinic-model")
    page.table.selectRow(row)
    assert page.remove_button.isEnabled()
    page.remove("clinic-model")
    error = page.findChild(QMessageBox, "errorDialog")
    assert error is not None and "in use for: reviewer" in error.text()
    error.close()
    box.setCurrentIndex(box.findData("smollm2-135m-instruct-q4_1"))
    box.activated.emit(box.currentIndex())
    page.remove("clinic-model")
    assert "clinic-model" not in {page.table.item(r, 0).toolTip()
                                  for r in range(page.table.rowCount())}
    assert copy.exists()  # the file stays
    assert window.session.records.audit_entries()[0]["action"] == "model.removed"
    page.table.selectRow(0)  # an embedded model cannot be removed
    assert not page.remove_button.isEnabled()


@pytest.mark.slow
def test_adding_a_broken_model_shows_a_clear_message(qtbot, window, truncated_gguf):
    page = window.models_page
    page.add_model(truncated_gguf)
    qtbot.waitUntil(lambda: page.findChild(QMessageBox, "errorDialog") is not None, timeout=60_000)
    dialog = page.findChild(QMessageBox, "errorDialog")
    assert "truncated" in dialog.text() or "damaged" in dialog.text()
    assert "Copy the file again" in dialog.informativeText()
    assert "Traceback" not in dialog.text() + dialog.informativeText()
    dialog.close()


def test_verify_hashes_from_the_models_page(qtbot, window):
    page = window.models_page
    page.verify()
    qtbot.waitUntil(lambda: page.verify_button.isEnabled(), timeout=60_000)
    states = {page.table.item(r, 7).text() for r in range(page.table.rowCount())}
    assert "sha256 OK" in states


def test_settings_dialog_edits_the_settings_object(qtbot, window, profile):
    dialog = window.open_settings()
    assert isinstance(dialog, SettingsDialog)
    # Every number is shown as it is set, so saving rounds none that nobody touched
    # (the calibrated evidence margin is 0.034).
    for name, editor in dialog.editors.items():
        if hasattr(editor, "decimals"):
            assert editor.value() == pytest.approx(getattr(window.session.settings, name)), name
    dialog.editors["threads"].setValue(3)
    dialog.editors["temperature"].setValue(0.4)
    assert dialog.editors["threads"].toolTip().startswith("How many of the processor's cores")
    assert "threads for generation and embedding" in dialog.editors["threads"].toolTip()
    assert "Default: one per core Lumen may use." in dialog.descriptions["threads"].text()
    dialog.accept()
    saved = Settings.load(profile)
    assert saved.threads == 3 and abs(saved.temperature - 0.4) < 1e-9
    assert window.session.settings.threads == 3
    changes = [e["detail"] for e in window.session.records.audit_entries()
               if e["action"] == "settings.changed"]
    assert changes[0]["from"] == "window"
    assert sorted(changes[0]["settings"]) == ["temperature", "threads"]

    again = window.open_settings()
    again.restore_defaults()
    assert again.editors["threads"].value() == Settings().threads
    again.reject()


def test_each_setting_s_one_line_explanation_is_a_whole_sentence():
    """Issue #33: "(incorrect < contradictory. Default: ..." was cut inside its brackets."""
    from desktop_app.gui.settings_dialog import first_sentence

    assert first_sentence("A finding (incorrect < contradictory; 'off' ignores it). More.") \
        == "A finding (incorrect < contradictory; 'off' ignores it)."
    assert first_sentence("Criteria, e.g. macro_f1 >= 0.5; more.") == "Criteria, e.g. macro_f1 >= 0.5."
    for f in Settings.describe():
        shown = first_sentence(f.metadata["help"])
        assert shown.count("(") == shown.count(")") and shown.endswith((".", ")")), f.name


def test_the_settings_dialog_opens_showing_every_tab_name_whole(qtbot, window):
    """Issue #33: it opened at 637 x 456 with "Ger" for General."""
    dialog = window.open_settings()
    qtbot.waitExposed(dialog)
    bar = dialog.tabs.tabBar()
    screen = dialog.screen().availableGeometry()  # offscreen: 800 x 600
    assert dialog.width() >= min(900, screen.width()) and dialog.height() >= min(600, screen.height())
    assert bar.sizeHint().width() <= dialog.tabs.width()
    for index in range(bar.count()):
        shown = bar.tabRect(index)
        assert bar.rect().contains(shown), bar.tabText(index)
        assert shown.width() >= bar.fontMetrics().horizontalAdvance(bar.tabText(index))
    dialog.reject()


def test_tab_leaves_the_summary_box_and_alt_q_reaches_the_question(qtbot, window):
    from PySide6.QtWidgets import QApplication

    page = window.ask_page
    window.tabs.setCurrentWidget(page)
    page.summary.setFocus()
    qtbot.waitUntil(lambda: page.summary.hasFocus(), timeout=5_000)
    qtbot.keyClick(page.summary, Qt.Key.Key_Tab)
    assert "\t" not in page.summary.toPlainText() and not page.summary.hasFocus()
    qtbot.keyClick(QApplication.focusWidget(), Qt.Key.Key_Q, Qt.KeyboardModifier.AltModifier)
    assert page.question.hasFocus()
    # The setting gives Tab back to the text, in both summary boxes, from the dialog.
    dialog = window.open_settings()
    dialog.editors["tab_types_tab"].setChecked(True)
    dialog.accept()
    for tab, editor in ((page, page.summary), (window.simplify_page, window.simplify_page.editor)):
        window.tabs.setCurrentWidget(tab)
        editor.setFocus()
        qtbot.waitUntil(editor.hasFocus, timeout=5_000)
        qtbot.keyClick(editor, Qt.Key.Key_Tab)
        assert "\t" in editor.toPlainText() and editor.hasFocus()
    qtbot.keyClick(window.simplify_page.editor, Qt.Key.Key_Tab, Qt.KeyboardModifier.ControlModifier)
    assert window.tabs.currentWidget() is not window.simplify_page  # still the window's


def test_a_glossary_setting_changed_in_the_dialog_rebuilds_every_tab_s_glossary(qtbot, window):
    before = window.session.glossary
    assert window.ask_page.glossary is before
    dialog = window.open_settings()
    dialog.editors["glossary_plain_grade"].setValue(5)
    dialog.accept()
    rebuilt = window.session.glossary
    assert rebuilt is not before and rebuilt.plain_grade == 5
    assert window.ask_page.glossary is rebuilt and window.simplify_page.glossary is rebuilt
    assert window.glossary_page.glossary is rebuilt


def _answer_next_dialog(qtbot, fill) -> None:
    """Fill the next modal dialog when it opens (it blocks the test until it closes)."""
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    def attempt():
        dialog = QApplication.activeModalWidget()
        if dialog is None:
            QTimer.singleShot(20, attempt)
            return
        fill(dialog)
    QTimer.singleShot(0, attempt)


def test_the_passphrase_is_changed_from_the_file_menu(qtbot, window, profile):
    from PySide6.QtGui import QAction
    from PySide6.QtWidgets import QLineEdit

    from desktop_app.core.errors import WrongKeyError
    from desktop_app.gui.key_dialogs import PassphraseDialog

    tried = []

    def fill(dialog):
        assert isinstance(dialog, PassphraseDialog)
        field = {f.objectName(): f for f in dialog.findChildren(QLineEdit)}
        field["currentPassphrase"].setText("not the passphrase")
        field["newPassphrase"].setText("short")
        field["repeatPassphrase"].setText("short")
        dialog.accept()
        tried.append(dialog.error.text())
        field["newPassphrase"].setText("a brand new passphrase")
        field["repeatPassphrase"].setText("a brand new passphrase")
        dialog.accept()
        tried.append(dialog.error.text())
        field["currentPassphrase"].setText(TEST_PASSPHRASE)
        dialog.accept()

    _answer_next_dialog(qtbot, fill)
    window.findChild(QAction, "changeDatabaseKey").trigger()
    assert "at least 8 characters" in tried[0] and tried[1] == "That is not the current passphrase."
    qtbot.waitUntil(lambda: window.findChild(QMessageBox, "infoDialog") is not None, timeout=10_000)
    with pytest.raises(WrongKeyError):
        open_store(profile.database_file, TEST_PASSPHRASE)
    open_store(profile.database_file, "a brand new passphrase").close()
    actions = [e["action"] for e in window.session.records.audit_entries()]
    assert "database.key_changed" in actions and "database.unlock_failed" in actions


def test_the_profile_is_backed_up_from_the_file_menu(qtbot, window, profile, tmp_path):
    from PySide6.QtWidgets import QLineEdit

    from desktop_app.core.config import Paths
    from desktop_app.core.store.custody import restore
    from desktop_app.gui.key_dialogs import back_up_profile

    def fill(dialog):
        field = {f.objectName(): f for f in dialog.findChildren(QLineEdit)}
        assert "currentPassphrase" not in [name for name, f in field.items() if f.isVisible()]
        field["newPassphrase"].setText("backup passphrase here")
        field["repeatPassphrase"].setText("backup passphrase here")
        dialog.accept()

    finished = []
    _answer_next_dialog(qtbot, fill)
    back_up_profile(window, window.session, finished.append, tmp_path / "profile.db")
    qtbot.waitUntil(lambda: bool(finished), timeout=30_000)
    assert finished[0]["files"] == ["settings.toml"]
    fresh = Paths.resolve(tmp_path / "fresh")
    fresh.ensure()
    _key, files = restore(tmp_path / "profile.db", "backup passphrase here", fresh.database_file,
                          "restored passphrase")
    assert files["settings.toml"] == profile.settings_file.read_text()
    # Again onto the same file: the window asks first, and "No" leaves the file as it was.
    qtbot.waitUntil(lambda: window.findChild(QMessageBox, "infoDialog") is not None,
                    timeout=10_000)
    window.findChild(QMessageBox, "infoDialog").close()
    written = (tmp_path / "profile.db").read_bytes()
    asked = []

    def decline(box):
        asked.append(box.text())
        box.button(QMessageBox.StandardButton.No).click()

    _answer_next_dialog(qtbot, decline)
    back_up_profile(window, window.session, finished.append, tmp_path / "profile.db")
    assert "exists already" in asked[0] and len(finished) == 1
    assert (tmp_path / "profile.db").read_bytes() == written
    # Onto the live database (issue #32): refused before a passphrase is asked for.
    back_up_profile(window, window.session, finished.append, profile.database_file)
    qtbot.waitUntil(lambda: window.findChild(QMessageBox, "errorDialog") is not None,
                    timeout=10_000)
    assert "inside Lumen's profile" in window.findChild(QMessageBox, "errorDialog").text()
    window.findChild(QMessageBox, "errorDialog").close()
    assert len(finished) == 1 and window.session.records.verify_audit().ok
    open_store(profile.database_file, TEST_PASSPHRASE).close()


def test_the_window_locks_when_idle_and_on_ctrl_l_and_hides_patient_text(qtbot, window, tmp_path):
    from PySide6.QtGui import QAction

    page = window.ask_page
    window.tabs.setCurrentWidget(page)
    assert window.session.settings.auto_lock_minutes == 10  # the default, in minutes
    assert window.idle.timer.isActive() and window.idle.timer.interval() == 600_000
    # Work started before the lock goes on behind it.
    page.summary.setPlainText(SHORT_SUMMARY)
    page.question.setText("How long do I take the antibiotic?")
    page.method.setCurrentIndex(page.method.findData("evidence"))
    page.ask()
    window.idle.timer.start(30)  # as if ten idle minutes had passed
    qtbot.waitUntil(lambda: window.locked, timeout=5_000)
    assert not page.isVisible() and not window.tabs.isVisible()
    assert window.lock_screen.isVisible() and window.lock_screen.passphrase.isVisible()
    assert not window.findChild(QAction, "changeDatabaseKey").isEnabled()
    window.grab().save(str(tmp_path / "locked.png"))
    qtbot.waitUntil(lambda: page.result is not None, timeout=60_000)
    assert window.locked
    window.lock_screen.passphrase.setText("not the passphrase")
    window.lock_screen.try_unlock()
    assert window.locked and "not the current passphrase" in window.lock_screen.error.text()
    window.lock_screen.passphrase.setText(TEST_PASSPHRASE)
    qtbot.keyClick(window.lock_screen.passphrase, Qt.Key.Key_Return)
    assert not window.locked and page.isVisible() and window.lock_screen.passphrase.text() == ""
    assert window.idle.timer.isActive()
    # Ctrl+L locks at once.
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow, timeout=5_000)
    qtbot.keyClick(page.question, Qt.Key.Key_L, Qt.KeyboardModifier.ControlModifier)
    assert window.locked
    window.lock_screen.passphrase.setText(TEST_PASSPHRASE)
    window.lock_screen.try_unlock()
    actions = [(e["action"], e["detail"]) for e in reversed(window.session.records.audit_entries())]
    locks = [entry for entry in actions if entry[0].startswith("window.")]
    assert locks == [("window.locked", {"idle": True}), ("window.unlocked", {}),
                     ("window.locked", {"idle": False}), ("window.unlocked", {})]
    assert any(action == "database.unlock_failed" and detail["key_source"] == "passphrase"
               for action, detail in actions)


def test_settings_speak_plainly_with_defaults_and_technical_names_in_tooltips(qtbot, window):
    import dataclasses
    import re

    dialog = window.open_settings()
    symbols = re.compile(r"τ|\bFKGL\b|[Tt]op-p|\((k|T)\)|Med-TextGrad|n_ctx|\bbootstrap\b")
    # Issue #33: "tokens", "cosine" and engine names left for the tooltip; the acceptance
    # criteria are written in metric names, which are what IT types.
    jargon = re.compile(r"\b[Tt]okens?\b|[Cc]osine|llama\.cpp|LAMP-MedQA|3MDBench|\bONNX\b")
    for f in dataclasses.fields(Settings):
        description = dialog.descriptions[f.name].text()
        assert "Default: " in description and description.count(".") >= 1, f.name
        editor = dialog.editors[f.name]
        assert f"'{f.name}' in 'lumen settings'" in editor.toolTip(), f.name
        assert not symbols.search(f.metadata["label"]), f.metadata["label"]
        if not f.name.endswith("acceptance_criteria"):
            plain = f.metadata["label"] + " " + f.metadata["help"]
            assert not jargon.search(plain), (f.name, jargon.search(plain))
        if f.metadata.get("technical"):
            assert f.metadata["technical"] in editor.toolTip()
    method = dialog.editors["ask_system"]
    assert method.currentText() == "Full pipeline (recommended)" and method.currentData() == "lamp"
    assert "Default: Full pipeline (recommended)." in dialog.descriptions["ask_system"].text()
    assert "τ" in dialog.editors["relevance_threshold"].toolTip()
    assert "Default: one per core Lumen may use." in dialog.descriptions["threads"].text()
    dialog.reject()


def test_help_menu_opens_an_illustrated_guide_for_each_user(qtbot, window):
    from PySide6.QtGui import QTextDocument

    from desktop_app.gui.help_window import GUIDES, IMAGE_WIDTH, guide_file

    from PySide6.QtGui import QAction

    actions = {a.objectName(): a for a in window.findChildren(QAction)
               if a.objectName().startswith("guide-")}
    assert set(actions) == {f"guide-{name}" for name in GUIDES}
    assert actions["guide-ward-staff"].shortcut().toString() == "F1"
    for name in GUIDES:
        actions[f"guide-{name}"].trigger()
        dialog = window.findChildren(QDialog, "guideDialog")[-1]
        text = dialog.browser.toPlainText()
        assert text.startswith("Lumen for") and len(text) > 600, name
        images = re.findall(r"\((\.\./screenshots/[a-z]+\.png)\)", guide_file(name).read_text())
        assert images, name
        for image in images:  # every picture the guide shows is there and loads
            assert (guide_file(name).parent / image).resolve().is_file(), image
            url = dialog.browser.source().resolved(QUrl(image))
            picture = dialog.browser.loadResource(QTextDocument.ResourceType.ImageResource.value, url)
            assert picture is not None and not picture.isNull(), image
            # Drawn to fit the dialog (issue #33: a 1280-pixel screenshot in a 900-pixel one).
            assert picture.width() <= IMAGE_WIDTH < dialog.width(), image
        dialog.reject()


def test_summary_highlights_only_words_above_the_readers_grade(qtbot, window):
    page = window.simplify_page
    page.show_original("Discharge home, stable, normal exam. Cellulitis of the left leg. "
                       "ECG: ST depressions in V5. Respiratory depression after morphine.")
    shown = page.original.toHtml()
    links = re.findall(r'href="gloss:([^"]+)"[^>]*>(?:<span[^>]*>)?([^<]+)<', shown)
    linked = {text for _key, text in links}
    assert {"Cellulitis", "ST depressions"} <= linked
    assert not {"Discharge", "stable", "normal", "depression"} & linked
    assert ("lumen:st-depression", "ST depressions") in links


def test_the_window_fits_a_1280_by_800_screen(qtbot, window):
    needed = window.minimumSizeHint()
    assert needed.width() <= 1280 and needed.height() <= 800, needed
    for index in range(window.tabs.count()):
        assert window.tabs.widget(index).minimumSizeHint().width() <= 1260, window.tabs.tabText(index)


def test_screenshots_are_taken_at_1280_by_800(qtbot, tmp_path, monkeypatch, shared_models):
    from PySide6.QtGui import QImage

    from desktop_app.gui import screenshots

    monkeypatch.setenv("LUMEN_HOME", str(tmp_path / "user"))  # restored after the test
    monkeypatch.setenv("XDG_CACHE_HOME", os.environ.get("XDG_CACHE_HOME", ""))  # take() sets it
    written = screenshots.take(tmp_path / "shots", ("models", "glossary"), models_dir=str(shared_models))
    assert [p.name for p in written] == ["models.png", "glossary.png"]
    for path in written:
        image = QImage(str(path))
        assert (image.width(), image.height()) == (1280, 800), path.name


def test_ctrl_tab_switches_tabs_from_a_text_box_and_every_shortcut_is_listed(qtbot, window):
    from PySide6.QtWidgets import QApplication

    window.activateWindow()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is window, timeout=5_000)
    window.tabs.setCurrentWidget(window.ask_page)
    editor = window.ask_page.summary
    editor.setFocus()
    qtbot.keyClick(editor, Qt.Key.Key_Tab, Qt.KeyboardModifier.ControlModifier)
    assert window.tabs.currentWidget() is window.simplify_page
    assert "\t" not in editor.toPlainText()  # not typed into the box
    qtbot.keyClick(window.simplify_page.editor, Qt.Key.Key_PageUp, Qt.KeyboardModifier.ControlModifier)
    assert window.tabs.currentWidget() is window.ask_page
    dialog = window.show_shortcuts()
    table = dialog.table
    rows = {(table.item(r, 0).text(), table.item(r, 1).text()): table.item(r, 2).text()
            for r in range(table.rowCount())}
    assert rows[("Anywhere", "Next tab")] == "Ctrl+Tab, Ctrl+PgDown"
    assert rows[("Anywhere", "Go to the Ask tab")] == "Alt+A"
    assert rows[("Ask", "Ask")] == "Ctrl+Return"
    assert rows[("Ask", "Copy answer")] == "Ctrl+Shift+C"
    assert rows[("Evaluation", "Report")] == "Ctrl+R"
    assert rows[("Menus", "Settings")] == "Ctrl+,"
    # Every button on every tab has a shortcut (its own, or one the tab describes by the
    # button's name), except Cancel's Esc on progress bars.
    from PySide6.QtWidgets import QAbstractButton, QCheckBox

    from desktop_app.gui.shortcuts import _plain

    missing = []
    for index in range(window.tabs.count()):
        window.tabs.setCurrentIndex(index)  # a hidden tab's buttons are not visible to it
        tab = _plain(window.tabs.tabText(index))
        for button in window.tabs.widget(index).findChildren(QAbstractButton):
            if button.text() and not isinstance(button, QCheckBox) and button.isVisibleTo(window):
                if button.shortcut().isEmpty() and (tab, _plain(button.text())) not in rows:
                    missing.append((tab, button.text()))
    assert not missing
    dialog.reject()


def test_a_fresh_profile_gets_its_models_on_first_start_and_findings_offer_buttons(
        qtbot, profile, open_window, tmp_path):
    from desktop_app.core.doctor import DoctorReport, Finding
    from desktop_app.core.models.manage import embedded_missing

    fresh = Settings(models_dir=str(tmp_path / "no-models-yet"))
    fresh.save(profile)
    main = open_window(fresh)
    page = main.status_page
    assert embedded_missing(profile, fresh)
    with qtbot.waitSignal(page.checked, timeout=300_000) as checked:
        main.first_checks()
        assert main.tabs.currentWidget() is page and not page.progress.isHidden()
        assert "embedded models" in page.summary.text()
    assert not embedded_missing(profile, fresh)
    report = checked.args[0]
    assert report.ok, [f for f in report.failures()]
    for row in range(page.table.rowCount()):
        assert "Run 'lumen" not in page.table.item(row, 3).text()
    # A finding the window can fix offers a button; pressing it does the work here.
    page.show_report(DoctorReport([Finding("Models", "Embedder", "fail", "Vectors look wrong.",
                                           "Run 'lumen models provision'.", action="restore-models")]))
    assert "Press the button" in page.table.item(0, 3).text()
    button = page.table.cellWidget(0, 4)
    assert button.text() == "Restore embedded models"
    with qtbot.waitSignal(page.models_restored, timeout=120_000) as restored:
        button.click()
    assert {r.action for r in restored.args[0]} == {"present"}  # already in place: nothing copied
    qtbot.waitUntil(lambda: page.rerun.isEnabled() and page.report is not None
                    and page.report.ok, timeout=300_000)
    wait_for_all()


QUIT_DURING_WORK = """
import json, sys
from desktop_app.core import offline
offline.activate()
from PySide6.QtCore import QTimer
from desktop_app.core.config import Paths, Settings
from desktop_app.core.pipelines.calibration import demo_benchmark
from desktop_app.core.session import Session
from desktop_app.core.store import open_store
from desktop_app.gui.app import application, leave
from desktop_app.gui.main_window import MainWindow
app = application()
paths = Paths.resolve()
window = MainWindow(Session(paths, Settings.load(paths), open_store(paths.database_file)))
window.show()
row = json.loads(demo_benchmark().read_text().splitlines()[0])
window.ask_page.summary.setPlainText(row["summary"])
window.ask_page.question.setText(row["question"])
window.ask_page.ask()
window.simplify_page.editor.setPlainText(row["summary"])
window.simplify_page.simplify()
QTimer.singleShot(int(sys.argv[1]), window.close)  # Quit while both jobs use the model
leave(window, app.exec())
"""


@pytest.mark.slow
@pytest.mark.parametrize("after_ms", [300, 2500])
def test_quitting_during_a_run_is_clean(profile, passphrase_env, after_ms):
    """Lumen's own exit path (gui.app.leave) with jobs running: exit status 0, no fatal
    error, the jobs cancelled, and the encrypted database intact afterwards."""
    result = subprocess.run([sys.executable, "-c", QUIT_DURING_WORK, str(after_ms)], cwd=ROOT,
                            env={**os.environ, "QT_QPA_PLATFORM": "offscreen"},
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "Fatal Python error" not in result.stderr and "Traceback" not in result.stderr
    with open_store(profile.database_file) as store:
        assert store.query("PRAGMA integrity_check")[0][0] == "ok"


@pytest.mark.skipif(os.name != "posix", reason="POSIX file modes")
def test_status_page_makes_files_private_with_one_button(qtbot, window, profile):
    import stat

    settings_file = profile.config_dir / "settings.toml"
    settings_file.chmod(0o644)
    page = window.status_page
    with qtbot.waitSignal(page.checked, timeout=120_000) as checked:
        page.run_checks(measure_speed=False)
    row = next(r for r, f in enumerate(checked.args[0].findings) if f.check == "Private files")
    assert checked.args[0].findings[row].status == "fail"
    button = page.table.cellWidget(row, 4)
    assert button.text() == "Make private" and "Run 'lumen" not in page.table.item(row, 3).text()
    with qtbot.waitSignal(page.checked, timeout=120_000) as again:
        button.click()
    assert stat.S_IMODE(settings_file.stat().st_mode) == 0o600
    assert next(f for f in again.args[0].findings if f.check == "Private files").status == "ok"


def test_unlock_dialog_refuses_a_wrong_passphrase(qtbot, profile):
    open_store(profile.database_file, TEST_PASSPHRASE).close()
    dialog = UnlockDialog(profile)
    qtbot.addWidget(dialog)
    assert not dialog.creating
    dialog.passphrase.setText("not the passphrase")
    dialog.accept()
    assert dialog.store is None and "does not open" in dialog.error.text()
    assert dialog.result() == 0
    dialog.passphrase.setText(TEST_PASSPHRASE)
    dialog.findChild(QDialogButtonBox).button(QDialogButtonBox.StandardButton.Ok).click()
    assert dialog.store is not None and dialog.result() == 1
    dialog.store.close()


def test_unlock_dialog_says_when_wrong_tries_must_wait(qtbot, profile):
    """Issue #32: after five wrong passphrases the next try waits, and the window says so."""
    open_store(profile.database_file, TEST_PASSPHRASE).close()
    dialog = UnlockDialog(profile)
    qtbot.addWidget(dialog)
    for _ in range(5):
        dialog.passphrase.setText("not the passphrase")
        dialog.accept()
        assert "does not open" in dialog.error.text()
    dialog.passphrase.setText(TEST_PASSPHRASE)
    dialog.accept()
    assert dialog.store is None and "Too many wrong tries" in dialog.error.text()
    assert "seconds" in dialog.error.text()


def test_unlock_dialog_sets_up_a_new_passphrase(qtbot, profile):
    dialog = UnlockDialog(profile)
    qtbot.addWidget(dialog)
    assert dialog.creating
    dialog.passphrase.setText("first passphrase")
    dialog.repeat.setText("second passphrase")
    dialog.accept()
    assert "differ" in dialog.error.text() and not profile.database_file.exists()
    dialog.repeat.setText("first passphrase")
    dialog.accept()
    assert dialog.store is not None and dialog.store.key_source == "passphrase"
    dialog.store.close()


def test_selftest_command_passes(profile):
    result = run_lumen("--selftest", env={"QT_QPA_PLATFORM": "offscreen"})
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Self-test passed." in result.stdout
    assert "[FAIL]" not in result.stdout


def test_lumen_opens_the_window_and_stays_up(profile):
    """What `make run` does last: `lumen` with no command opens the window and keeps running."""
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", LUMEN_PASSPHRASE=TEST_PASSPHRASE)
    process = subprocess.Popen([sys.executable, "-m", "desktop_app"], cwd=ROOT, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if profile.log_file.exists() and "Main window shown" in profile.log_file.read_text():
                break
            assert process.poll() is None, process.stdout.read()
            time.sleep(0.2)
        else:
            pytest.fail("the window was not shown within 2 minutes")
        time.sleep(3)
        assert process.poll() is None  # still up: it stays open until closed
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(30)


def test_glossary_tab_search_view_and_local_entry(qtbot, window, profile):
    page = window.glossary_page
    assert window.tabs.tabText(window.tabs.indexOf(page)) == "&Glossary"
    qtbot.keyClicks(page.search, "CHF")
    qtbot.waitUntil(lambda: page.results.count() > 0 and
                    page.current_entry() is not None and
                    page.current_entry().term == "heart failure", timeout=5000)
    shown = page.view.toPlainText()
    assert "heart failure" in shown and "CHF" in shown and "Lumen glossary" in shown
    assert "medlineplus.gov/heartfailure.html" in shown

    dialog = page.new_entry()
    dialog.term.setText("ward round")
    dialog.definition.setPlainText("When the care team visits each patient to check on them.")
    assert dialog.grade.text().startswith("Reading grade")
    dialog.category.setCurrentText("care")
    dialog.accept()
    assert page.current_entry().term == "ward round"
    assert page.current_entry().source == "local" and page.delete_button.isEnabled()

    page.search.clear()
    qtbot.keyClicks(page.search, "edema")
    qtbot.waitUntil(lambda: page.current_entry() is not None and
                    page.current_entry().term == "edema", timeout=5000)
    editor = page.edit_entry()
    editor.definition.setPlainText("Swelling from extra fluid, as our ward explains it.")
    editor.accept()
    edited = page.current_entry()
    assert edited.source == "local" and edited.overrides == "lumen:edema"
    assert "as our ward explains it" in page.view.toPlainText()
    # Every tab got the edited glossary (the Session's Changes, broadcast by the window).
    for holder in (window.ask_page, window.simplify_page, window.knowledge_page,
                   window.ask_page.answer, window.simplify_page.plain):
        assert holder.glossary is window.session.glossary is page.glossary
        assert holder.glossary.by_key[edited.key].definition.endswith("as our ward explains it.")

    bad = page.new_entry()
    bad.accept()  # no term: the dialog says so and stays open
    assert "needs a term" in bad.error.text() and bad.isVisible()
    bad.reject()


def test_glossary_tab_imports_medlineplus_in_the_background(qtbot, window):
    from helpers import SHARED

    xml = SHARED / "data" / "medlineplus" / "mplus_topics_2025-10-12.xml"
    if not xml.exists():
        pytest.skip("../shared/data/medlineplus is not present")
    page = window.glossary_page
    page.import_file(xml)
    qtbot.waitUntil(lambda: page.import_button.isEnabled(), timeout=60_000)
    assert page.glossary.counts().get("medlineplus") == 1017
    assert "1017 MedlinePlus" in page.count.text()
    assert window.ask_page.glossary is page.glossary  # told from the import's worker thread


SHORT_SUMMARY = """Admission Date: 02/03/2025

Hospital Course:
The patient had cellulitis of the left lower leg, treated with IV cefazolin, then cephalexin.

Discharge Medications:
1. Cephalexin 500 mg by mouth four times daily for 7 days

Follow-up:
Primary care clinic on 02/13/2025.
"""


@pytest.fixture
def quick_window(qtbot, window):
    """The window with short replies and single attempts, to keep GUI tests quick."""
    import dataclasses

    window.session.settings = dataclasses.replace(
        window.session.settings, answer_tokens=40, feedback_tokens=24, section_tokens=96,
        extraction_attempts=2, simplification_attempts=1)
    return window


def test_ask_tab_streams_an_answer_with_badges_and_timeline(qtbot, quick_window, tmp_path):
    """The full pipeline on the real model: what the page guarantees whatever the model
    writes.  The box ends with result.answer; a model text is shown only when it passed
    every check, else the evidence answer with its note; badges vouch only for that."""
    page = quick_window.ask_page
    quick_window.tabs.setCurrentWidget(page)
    path = tmp_path / "summary.txt"
    path.write_text(SHORT_SUMMARY)
    assert page.summary.open_file(path)
    assert "Opened summary.txt" in page.source_label.text()
    page.method.setCurrentIndex(page.method.findData("lamp"))
    qtbot.keyClicks(page.question, "How long do I take the antibiotic?")
    events, drafts = [], []

    def seen(kind, data):
        events.append(kind)
        if kind == "token":
            drafts.append((page.showing_draft, page.answer.toPlainText()))
        if kind == "evidence":  # listed before the model is called
            assert page.evidence_list.count() == len(data["evidence"])
            assert "token" not in events and "attempt" not in events

    page.bridge.event.connect(seen)
    qtbot.mouseClick(page.ask_button, Qt.MouseButton.LeftButton)
    assert page.progress.isVisible() and not page.ask_button.isEnabled()
    # The real model on two shared cores: each call can take a minute when the machine is busy.
    qtbot.waitUntil(lambda: page.result is not None, timeout=600_000)
    result, trace = page.result, page.result.trace
    assert events[0] == "evidence" and "token" in events and "attempt" in events
    # While tokens streamed, the box said it held a draft being checked.
    assert drafts and all(draft and text.startswith("Checking…") for draft, text in drafts)
    # Qt's rich-text view folds runs of white space; the words must be the same.
    assert not page.showing_draft
    assert page.answer.toPlainText().split() == result.answer.split()
    assert "Checking" not in page.answer.toPlainText()
    tones = {b.text: b.tone for b in page.badges.items}
    assert "Grounded in the summary" not in tones
    assert any(text.startswith("Reading grade") for text in tones)
    shown_rows = [page.timeline.topLevelItem(i) for i in range(page.timeline.topLevelItemCount())
                  if "✓ shown" in page.timeline.topLevelItem(i).text(0)]
    assert len(shown_rows) == 1
    if result.source == "evidence":
        assert result.answer == trace.evidence_answer
        assert page.answer_note.isVisible() and page.answer_note.text() == result.note != ""
        assert tones["Your summary's own words"] == "neutral" and "Checked answer" not in tones
        assert page.timeline.topLevelItemCount() == len(trace.attempts) + 1
        assert shown_rows[0] is page.timeline.topLevelItem(len(trace.attempts))
        assert shown_rows[0].text(0).startswith("Evidence answer")
    else:
        assert result.source == "model"
        chosen = [a for a in trace.attempts if a.chosen and a.passed and a.text == result.answer]
        assert chosen and not chosen[0].problems()
        assert all(c["passed"] for c in chosen[0].checks)
        assert tones["Checked answer"] == "good" and not page.answer_note.isVisible()
        assert page.timeline.topLevelItemCount() == len(trace.attempts)
        assert shown_rows[0].data(0, Qt.ItemDataRole.UserRole) is chosen[0]
        assert "Relevance" in page.badges.text()
    if result.flags:
        assert "Every fact found in the summary" not in tones
        assert tones[f"{len(result.flags)} to check"] == "bad"
    elif result.source == "model":
        assert tones["Every fact found in the summary"] == "good"
    # No badge is green for what failed: the grade is green only below the limit.
    limit = quick_window.session.settings.readability_limit
    grade = next(b for b in page.badges.items if b.text.startswith("Reading grade"))
    assert (grade.tone == "good") == (trace.final_fkgl < limit)
    # Every attempt row says whether it passed, and each check is a child row.
    for i, attempt in enumerate(trace.attempts):
        row = page.timeline.topLevelItem(i)
        assert row.text(1) == ("passed every check" if attempt.passed else
                               "failed: " + ", ".join(c["name"] for c in attempt.checks
                                                      if not c["passed"]))
        checks = [row.child(j) for j in range(row.childCount())
                  if row.child(j).data(0, Qt.ItemDataRole.UserRole + 1)]
        assert [c.data(0, Qt.ItemDataRole.UserRole + 1) for c in checks] == \
            [c["name"] for c in attempt.checks]
        for child, check in zip(checks, attempt.checks):
            assert child.text(1).startswith("passed" if check["passed"] else "failed")
            assert check["detail"] in child.text(1)
    # A cell too narrow for its text is elided; its tooltip holds all of it.
    pending = [page.timeline.topLevelItem(i) for i in range(page.timeline.topLevelItemCount())]
    while pending:
        item = pending.pop()
        pending += [item.child(j) for j in range(item.childCount())]
        for column in range(page.timeline.columnCount()):
            if item.text(column):
                assert item.toolTip(column), item.text(column)
    assert "does not make them" in page.notice.text()
    page.copy_answer()
    from PySide6.QtGui import QGuiApplication

    copied = QGuiApplication.clipboard().text()
    assert copied.startswith(result.answer) and result.note in copied
    assert all(e["text"] in copied for e in result.evidence)
    assert "<h2>Answer</h2>" in page.answer_html()
    runs = quick_window.session._store.query("SELECT kind FROM pipeline_run")
    assert runs == [("ask",)]


def _plain_selection(cursor) -> str:
    """A cursor's selected text with Qt's paragraph separators as the line breaks they were."""
    return cursor.selectedText().replace("\u2029", "\n").replace("\u2028", "\n")


def _ask_for_evidence(qtbot, page, summary: str, question: str):
    page.summary.setPlainText(summary)
    page.question.setText(question)
    page.method.setCurrentIndex(page.method.findData("evidence"))
    page.ask()
    qtbot.waitUntil(lambda: page.result is not None, timeout=60_000)
    return page.result


def _assert_evidence_marked_and_jumps(qtbot, page, summary: str):
    result = page.result
    spans = [(e["start"], e["end"]) for e in result.evidence]
    assert spans, "the question should find evidence in the summary"
    assert page.evidence_list.count() == len(spans)
    for i, line in enumerate(result.evidence):
        assert line["text"] in page.evidence_list.item(i).text()
        assert (line["section"] or "") in page.evidence_list.item(i).text()
        labels = [label for kind, label in RELATED_LABELS.items()
                  if f"({label})" in page.evidence_list.item(i).text()]
        assert labels == ([RELATED_LABELS[line["related"]]] if line["related"] else [])
    marks = page.summary.extraSelections()
    assert [_plain_selection(m.cursor) for m in marks] == [summary[s:e] for s, e in spans]
    for i, (start, end) in enumerate(spans):
        item = page.evidence_list.item(i)
        rect = page.evidence_list.visualItemRect(item)
        qtbot.mouseClick(page.evidence_list.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
        assert _plain_selection(page.summary.textCursor()) == summary[start:end]
    # Enter on a line jumps too.
    page.evidence_list.setFocus()
    page.evidence_list.setCurrentRow(0)
    page.summary.moveCursor(page.summary.textCursor().MoveOperation.End)
    qtbot.keyClick(page.evidence_list, Qt.Key.Key_Return)
    assert _plain_selection(page.summary.textCursor()) == summary[spans[0][0]:spans[0][1]]


def test_ask_tab_evidence_lines_are_listed_marked_and_jump(qtbot, quick_window):
    page = quick_window.ask_page
    quick_window.tabs.setCurrentWidget(page)
    assert page.method.itemText(page.method.findData("evidence")) == "Summary's own words (no model)"
    result = _ask_for_evidence(qtbot, page, SHORT_SUMMARY, "How long do I take the antibiotic?")
    assert result.source == "evidence" and result.answer == result.trace.evidence_answer
    assert page.answer.toPlainText().split() == result.answer.split()
    _assert_evidence_marked_and_jumps(qtbot, page, SHORT_SUMMARY)
    # The note says the answer is the summary's own words (and, as the user chose them,
    # that no model was used); no badge says "checked".
    assert page.answer_note.isVisible() and "no model was used" in page.answer_note.text()
    tones = {b.text: b.tone for b in page.badges.items}
    assert "Checked answer" not in tones and "Every fact found in the summary" not in tones
    assert tones["Your summary's own words"] == "neutral"
    assert all(label.toolTip() for label in page.badges.labels)
    last = page.timeline.topLevelItem(page.timeline.topLevelItemCount() - 1)
    assert last.text(0) == "Evidence answer  ✓ shown" and last.childCount() >= 1
    # Copy and print carry the note and the quotes; the printed HTML escapes them.
    page.copy_answer()
    from PySide6.QtGui import QGuiApplication

    copied = QGuiApplication.clipboard().text()
    note = page.answer_note.text()
    assert note in copied and all(e["text"] in copied for e in result.evidence)
    assert escape(note) in page.answer_html()  # as the templates escape it
    # Alt+V goes to the evidence list.
    quick_window.activateWindow()
    qtbot.waitUntil(quick_window.isActiveWindow, timeout=5_000)
    page.evidence_list.setCurrentRow(-1)
    page.question.setFocus()
    qtbot.keyClick(page.question, Qt.Key.Key_V, Qt.KeyboardModifier.AltModifier)
    assert page.evidence_list.hasFocus() and page.evidence_list.currentRow() == 0
    # Editing the summary takes the marks away (their offsets no longer hold); a new
    # question clears the list until its own evidence arrives.
    page.summary.appendPlainText("More text.")
    assert page.summary.extraSelections() == [] and not page.summary.evidence_current()
    assert not page.jump_to_evidence(page.evidence_list.item(0))
    assert "changed" in page.evidence_hint.text()
    _ask_for_evidence(qtbot, page, SHORT_SUMMARY, "How long do I take the antibiotic?")
    assert page.jump_to_evidence(page.evidence_list.item(0))
    assert page.summary.textCursor().hasSelection()
    page.question.setText("")
    page.ask()
    assert page.evidence_list.count() == 0 and page.result is None
    assert not page.summary.textCursor().hasSelection() and not page.summary.extraSelections()
    qtbot.waitUntil(lambda: page.findChild(QMessageBox, "errorDialog") is not None, timeout=30_000)
    page.findChild(QMessageBox, "errorDialog").close()


def test_ask_tab_marks_the_right_text_after_an_emoji(qtbot, quick_window):
    """Offsets are Python indices; Qt counts UTF-16 units, so a character outside the BMP
    before the evidence shifts every position by one unless they are converted."""
    page = quick_window.ask_page
    summary = SHORT_SUMMARY.replace("The patient had cellulitis",
                                    "😀 Patient 🩺 notes: the patient had cellulitis")
    summary = "🏥 " + summary
    result = _ask_for_evidence(qtbot, page, summary, "How long do I take the antibiotic?")
    assert any(summary[:e["start"]].count("🏥") for e in result.evidence)
    _assert_evidence_marked_and_jumps(qtbot, page, summary)


def test_ask_tab_says_why_a_related_line_is_listed(qtbot, quick_window):
    """The medicine-list line of a medicine the answer names joins the evidence, and the
    list says why it is there."""
    page = quick_window.ask_page
    summary = (Path(__file__).parent / "data" / "summaries" / "switched_medicine.txt").read_text(
        encoding="utf-8")
    result = _ask_for_evidence(qtbot, page, summary,
                               "Why was I switched from spironolactone to furosemide?")
    related = {e["text"]: e["related"] for e in result.evidence if e["related"]}
    assert related.get("- Blood test for potassium on 04/14") == "follow-up", related
    # A "why" question's answer says the new dose; the follow-up is one click away, listed
    # under the evidence with why it is there.
    # (The evidence answer, Lumen's own: a model's text, when one passes, is its own.)
    assert "20 mg" in result.trace.evidence_answer and "04/14" not in result.trace.evidence_answer
    shown = [page.evidence_list.item(i).text() for i in range(page.evidence_list.count())]
    assert any("04/14" in text and "(the follow-up for it)" in text for text in shown), shown
    _assert_evidence_marked_and_jumps(qtbot, page, summary)


def _result(page, *, attempts, source, answer, fkgl, flags=(), reason=""):
    """A finished run as the pipeline hands it to the page, for the page's own logic."""
    from desktop_app.core.pipelines.ask import AskResult
    from desktop_app.core.pipelines.trace import Trace

    line = "1. Cephalexin 500 mg by mouth four times daily for 7 days"
    start = SHORT_SUMMARY.index(line)
    trace = Trace(kind="ask", method="lamp", variant="glossary", prompt_version="test",
                  app_version="test", models={}, settings={}, summary_sha256="",
                  attempts=attempts, answer_source=source, final_fkgl=fkgl,
                  grounding_flags=list(flags), fallback_reason=reason,
                  shown_attempt=next((i for i, a in enumerate(attempts)
                                      if source == "model" and a.text == answer), -1),
                  evidence_answer="Take cephalexin 500 mg by mouth four times a day for 7 days.",
                  evidence=[{"text": line, "start": start, "end": start + len(line),
                             "section": "Discharge Medications", "section_kind": "medications",
                             "score": 0.9, "lexical": 0.5, "meaning": 0.5, "bonus": 0.1}])
    return AskResult(answer, trace)


def _check(name, passed, detail="", score=None):
    return {"name": name, "passed": passed, "detail": detail, "score": score}


def _attempts(*, simplification_passes: bool):
    from desktop_app.core.pipelines.trace import Attempt, Gate

    failed = Attempt("extraction", 1, "How long do I take the antibiotic?",
                     gate=Gate("relevance", 0.9, 0.3, True, "cosine ≥ 0.300"),
                     checks=[_check("relevance", False, "it says no more of the summary's lines "
                                                        "than the question does", 0.9),
                             _check("degeneracy", False, "it repeats the question"),
                             _check("support", True), _check("coverage", True)])
    extraction = Attempt("extraction", 2, "Cephalexin 500 mg four times daily for 7 days.",
                         gate=Gate("relevance", 0.71, 0.3, True, "cosine ≥ 0.300"), chosen=True,
                         checks=[_check("relevance", True, "", 0.71), _check("degeneracy", True),
                                 _check("support", True), _check("coverage", True)])
    grade = 5.0 if simplification_passes else 14.0
    simple = Attempt("simplification", 1, "Take cephalexin 500 mg four times a day for 7 days.",
                     gate=Gate("readability", grade, 8, simplification_passes, "FKGL < 8"),
                     chosen=True,
                     checks=[_check("degeneracy", True), _check("support", True),
                             _check("coverage", True),
                             _check("readability", simplification_passes,
                                    "" if simplification_passes else
                                    "it reads at grade 14.0; it must be below 8", grade)])
    return [failed, extraction, simple]


def _top_rows(page):
    return [page.timeline.topLevelItem(i) for i in range(page.timeline.topLevelItemCount())]


def test_ask_tab_badges_and_timeline_vouch_only_for_what_passed(qtbot, quick_window):
    """Whatever a model writes, a green badge and "✓ shown" mean a check passed."""
    page = quick_window.ask_page
    quick_window.tabs.setCurrentWidget(page)
    page.summary.setPlainText(SHORT_SUMMARY)
    page._asked_summary = SHORT_SUMMARY
    limit = quick_window.session.settings.readability_limit
    # A model text that passed every check, with every fact in the summary.
    attempts = _attempts(simplification_passes=True)
    page._on_event("stage", {"stage": "simplification", "attempt": 1})
    page._on_event("token", {"text": "Take cephalexin"})
    assert page.showing_draft and page.answer.toPlainText().startswith("Checking…")
    assert "Take cephalexin" in page.answer.toPlainText()
    page._done(_result(page, attempts=attempts, source="model", answer=attempts[2].text,
                       fkgl=limit - 3))
    assert not page.showing_draft and page.answer.toPlainText() == attempts[2].text
    tones = {b.text: b.tone for b in page.badges.items}
    assert tones["Checked answer"] == "good" and tones["Every fact found in the summary"] == "good"
    assert tones[f"Reading grade {limit - 3:.1f}"] == "good" and tones["Relevance 0.71"] == "good"
    assert not page.answer_note.isVisible()
    # Ward staff read how the answer was made in plain words; the attempts are one click away.
    assert page.trace_account.text().startswith("The model's answer is shown: it passed every")
    assert page.timeline.isHidden()
    qtbot.mouseClick(page.details_button, Qt.MouseButton.LeftButton)
    assert page.timeline.isVisible() and page.details_button.text() == "Hide details"
    rows = _top_rows(page)
    assert [("✓ shown" in r.text(0)) for r in rows] == [False, False, True]
    assert rows[0].text(1) == "failed: relevance, degeneracy"
    assert rows[1].text(1) == rows[2].text(1) == "passed every check"
    checks = {rows[0].child(i).text(0): rows[0].child(i).text(1) for i in range(4)}
    assert checks["Relevance"].startswith("failed (0.90): it says no more")
    assert checks["Support"] == "passed"
    assert page.evidence_list.count() == 1 and page.summary.extraSelections()

    # The same text with a fact the summary lacks: no "every fact" badge, a red one.
    flag = {"kind": "number", "text": "500", "value": "500", "start": 16, "end": 19}
    page._done(_result(page, attempts=attempts, source="model", answer=attempts[2].text,
                       fkgl=limit - 3, flags=[flag]))
    tones = {b.text: b.tone for b in page.badges.items}
    assert "Every fact found in the summary" not in tones and tones["1 to check"] == "bad"

    # No model text passed: the evidence answer, the note, no green "checked", an honest
    # grade, and no "✓ shown" on any attempt.
    attempts = _attempts(simplification_passes=False)
    reason = "no simplification passed: readability: it reads at grade 14.0; it must be below 8"
    result = _result(page, attempts=attempts, source="evidence", fkgl=limit + 2, reason=reason,
                     answer="Take cephalexin 500 mg by mouth four times a day for 7 days.")
    page._done(result)
    assert page.answer.toPlainText() == result.answer
    assert page.answer_note.isVisible() and page.answer_note.text() == result.note != ""
    tones = {b.text: b.tone for b in page.badges.items}
    assert "Checked answer" not in tones and tones["Your summary's own words"] == "neutral"
    assert tones[f"Reading grade {limit + 2:.1f}"] != "good"
    assert "good" not in tones.values()
    account = page.trace_account.text()
    assert account == ("The model's answers did not pass: they did not answer the question, "
                       "they were not usable text (repeated, cut off or empty) and they were "
                       "too hard to read. Showing the summary's own lines, in plain words.")
    assert "relevance" not in account and "/" not in account  # no check names, no token counts
    rows = _top_rows(page)
    assert [("✓ shown" in r.text(0)) for r in rows] == [False, False, False, True]
    assert rows[2].text(1) == "failed: readability"
    assert rows[3].text(0) == "Evidence answer  ✓ shown" and rows[3].child(0).text(1) == reason
    assert result.note in page.answer_text() and "[Discharge Medications] 1. Cephalexin" in \
        page.answer_text()


def test_ask_tab_printed_html_escapes_everything(qtbot, quick_window):
    page = quick_window.ask_page
    summary = SHORT_SUMMARY.replace("Primary care clinic", "Clinic <b>A&B</b> \"R&D\"")
    _ask_for_evidence(qtbot, page, summary, "When is my follow-up <visit>?")
    printed = page.answer_html()
    assert "<b>A&B</b>" not in printed and "<visit>" not in printed
    assert "&lt;visit&gt;" in printed
    if any("A&B" in e["text"] for e in page.result.evidence):
        assert "&lt;b&gt;A&amp;B&lt;/b&gt;" in printed


def test_ask_tab_can_be_cancelled(qtbot, quick_window):
    page = quick_window.ask_page
    page.summary.setPlainText(SHORT_SUMMARY)
    page.question.setText("What medicine do I take?")
    page.ask()
    qtbot.waitUntil(lambda: page._streamed != "" or page.result is not None, timeout=60_000)
    page.progress.cancel_button.click()
    qtbot.waitUntil(lambda: page._task is None, timeout=60_000)
    assert page.ask_button.isEnabled()
    assert page.findChild(QMessageBox, "errorDialog") is None  # cancelling is not an error


def test_ask_tab_says_which_job_holds_the_model_and_cancels_while_waiting(qtbot, quick_window):
    """Another job (named Simplify) holds the generator; the Ask tab shows "Waiting for the
    model (Simplify is running)" with Cancel enabled, and Cancel ends the wait."""
    import threading

    from desktop_app.core.progress import job

    page = quick_window.ask_page
    model = quick_window.session._runtime.for_role("generator")
    holding, gate = threading.Event(), threading.Event()

    def simplify():
        with job("Simplify"):
            model.generate([{"role": "user", "content": "Say hello."}], max_tokens=2,
                           on_token=lambda piece: (holding.set(), gate.wait(60)))
    holder = threading.Thread(target=simplify)
    holder.start()
    try:
        assert holding.wait(60)
        page.summary.setPlainText(SHORT_SUMMARY)
        page.question.setText("What medicine do I take?")
        page.ask()
        qtbot.waitUntil(lambda: "Waiting for the model (Simplify is running)"
                        in page.progress.label.text(), timeout=60_000)
        assert not page.progress.isHidden() and page.progress.cancel_button.isEnabled()
        page.progress.cancel_button.click()
        qtbot.waitUntil(lambda: page._task is None, timeout=10_000)
        assert page.ask_button.isEnabled() and page.result is None
        assert page.findChild(QMessageBox, "errorDialog") is None
    finally:
        gate.set()
        holder.join(60)


def test_ask_tab_reports_a_missing_question(qtbot, quick_window):
    page = quick_window.ask_page
    page.summary.setPlainText(SHORT_SUMMARY)
    page.ask()
    qtbot.waitUntil(lambda: page.findChild(QMessageBox, "errorDialog") is not None, timeout=30_000)
    assert "no question" in page.findChild(QMessageBox, "errorDialog").text()


def test_glossary_links_show_definitions(qtbot, quick_window):
    page = quick_window.ask_page
    from desktop_app.gui.summary_input import highlighted_html

    html_text = highlighted_html("Take cephalexin BID.", page.glossary)
    assert "gloss:lumen:cephalexin" in html_text
    definition = page.answer.definition_for("gloss:lumen:cephalexin")
    assert definition.startswith("cephalexin:")


def test_simplify_tab_side_by_side_and_export(qtbot, quick_window, tmp_path):
    page = quick_window.simplify_page
    quick_window.tabs.setCurrentWidget(page)
    page.editor.setPlainText(SHORT_SUMMARY)
    page.simplify()
    qtbot.waitUntil(lambda: page.handout is not None, timeout=180_000)
    assert page.source.currentWidget() is page.original
    assert "gloss:" in page.original.toHtml() or "cellulitis" in page.original.toPlainText()
    shown = page.plain.toPlainText()
    assert "Your medicines" in shown and "Admission Date" in shown
    assert "Cephalexin" in shown and "Your appointments and tests" in shown
    # Page one, then the story, then the summary as written for the care team.
    order = [shown.index(h) for h in ("What to do now", "Your medicines",
                                      "What happened in hospital", "For your care team")]
    assert order == sorted(order)
    handout = page.handout
    # What the tab says matches what the handout is made of.
    story = handout.story()
    said = ("rewritten by the model" if story.source == "model" else
            "did not pass the checks" if story.problems else "the model was not asked")
    assert said in page.grades.text()
    assert f"{len(handout.medicines)} medicine(s)" in page.grades.text()
    assert f"Reading grade of what the patient reads first: {handout.trace.final_fkgl:.1f}" \
        f" (aim: {quick_window.session.settings.handout_grade_goal:g} or lower" in page.grades.text()
    page.grab().save(str(tmp_path / "simplify.png"))
    page.export(tmp_path / "handout.pdf")
    assert (tmp_path / "handout.pdf").read_bytes().startswith(b"%PDF")
    assert page.findChild(QMessageBox, "infoDialog") is not None
    runs = quick_window.session._store.query("SELECT kind FROM pipeline_run")
    assert ("simplify",) in runs
    exported = [e["detail"] for e in quick_window.session.records.audit_entries()
                if e["action"] == "simplify.exported"]
    assert exported == [{"format": "pdf", "run": handout.trace.id}]


@pytest.mark.parametrize("layout", ["03-plain_headings-knee-replacement", "09-letter_uk-thyrotoxicosis-af"])
def test_simplify_tab_lists_every_medicine_of_a_layout(qtbot, quick_window, tmp_path, layout):
    """A summary in a layout written apart from the parser (headings without colons; a UK
    letter to the family doctor): "Your medicines", shown as soon as it is read and before
    any model has written a word, holds every medicine of its hand-written facts; the
    record and letter matter stays out; the job is then cancelled."""
    from layout_corpus import CORPUS, load, same_name

    expected = next(e for e in load(CORPUS) if e.name == layout)
    page = quick_window.simplify_page
    quick_window.tabs.setCurrentWidget(page)
    page.editor.setPlainText(expected.text)
    page.simplify()
    qtbot.waitUntil(lambda: "Your medicines" in page.plain.toPlainText(), timeout=60_000)
    shown = page.plain.toPlainText()
    table = shown[shown.index("Your medicines"):]
    for medicine in expected.medications:
        assert any(same_name(medicine["name"], line) for line in table.splitlines()), medicine["name"]
    for phrase in expected.facts.get("hidden", {}).get("phrases", []):
        assert not re.search(rf"(?<!\w){re.escape(phrase)}(?!\w)", shown, re.IGNORECASE), phrase
    page.grab().save(str(tmp_path / f"{layout}.png"))
    if page._task is not None:
        page.progress.cancel_button.click()
    qtbot.waitUntil(lambda: page._task is None, timeout=120_000)
    assert page.findChild(QMessageBox, "errorDialog") is None


def test_dropping_a_file_on_the_summary_box_opens_it(qtbot, quick_window, tmp_path):
    from PySide6.QtCore import QMimeData, QPointF, QUrl
    from PySide6.QtGui import QDropEvent

    import docx

    path = tmp_path / "dropped.docx"
    document = docx.Document()
    for line in SHORT_SUMMARY.splitlines():
        document.add_paragraph(line)
    document.save(path)
    editor = quick_window.ask_page.summary
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(path))])
    event = QDropEvent(QPointF(5, 5), Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton,
                       Qt.KeyboardModifier.NoModifier)
    editor.dropEvent(event)
    assert "Cephalexin 500 mg" in editor.toPlainText()
    assert "Opened dropped.docx" in quick_window.ask_page.source_label.text()


def test_evaluation_scorers_follow_the_systems_until_chosen_by_hand(qtbot, quick_window):
    from PySide6.QtCore import Qt

    from desktop_app.core.evaluation.scorers import default_scorers

    page = quick_window.evaluation_page

    def checked():
        return [name for name, box in page.scorer_boxes.items() if box.isChecked()]

    def choose(*names):
        for index in range(page.systems.count()):
            item = page.systems.item(index)
            item.setCheckState(Qt.CheckState.Checked if item.text() in names
                               else Qt.CheckState.Unchecked)

    # The command line's default for the same system; the judges that ask the model several
    # questions per sample (MedJudge, HIVMedQA) only when chosen.
    assert page.checked_systems() == ["lamp:glossary"]
    assert checked() == default_scorers(["lamp:glossary"]) == [
        "reference", "similarity-judge", "key-facts"]
    choose("dialogue:dialogue")
    assert checked() == ["consultation"]
    choose("lamp:plain", "doctorrag:full")
    assert checked() == ["reference", "similarity-judge", "diagnosis-accuracy", "key-facts"]
    page.scorer_boxes["medjudge"].click()  # the user's choice now holds
    choose("dialogue:dialogue")
    assert checked() == ["reference", "similarity-judge", "diagnosis-accuracy", "key-facts",
                         "medjudge"]


@pytest.mark.slow
def test_evaluation_tab_runs_a_small_benchmark(qtbot, quick_window, tmp_path):
    from desktop_app.core.pipelines.calibration import demo_benchmark

    page = quick_window.evaluation_page
    quick_window.tabs.setCurrentWidget(page)
    page.import_file(demo_benchmark(), "medisumqa")
    assert not page.import_button.isEnabled()  # read off the GUI thread, the button held
    qtbot.waitUntil(lambda: page.findChild(QMessageBox, "infoDialog") is not None, timeout=60_000)
    assert page.import_button.isEnabled()
    assert page.dataset.count() == 1 and "84 samples" in page.dataset.currentText()
    info = page.findChild(QMessageBox, "infoDialog")
    assert info is not None and "84 samples" in info.text()
    info.close()
    for index in range(page.systems.count()):
        item = page.systems.item(index)
        item.setCheckState(Qt.CheckState.Checked if item.text() in ("zero-shot", "one-shot")
                           else Qt.CheckState.Unchecked)
    for judge in ("similarity-judge", "medjudge", "hivmedqa-judge"):  # tested on their own;
        page.scorer_boxes[judge].setChecked(False)  # MedJudge was 90 s of this test
    page.limit.setValue(2)
    qtbot.mouseClick(page.run_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: page.run_button.isEnabled() and page.results.rowCount() == 2,
                    timeout=180_000)
    statuses = {page.runs.item(r, 2).text() for r in range(page.runs.rowCount())}
    assert statuses == {"complete"}
    header = [page.results.horizontalHeaderItem(c).text() for c in range(page.results.columnCount())]
    assert any(h.startswith("SARI") for h in header) and any("FKGL" in h for h in header)
    cell = page.results.item(0, 2)  # 2 samples: a mean, and no interval
    assert "(n=2)" in cell.text() and "too few samples" in cell.toolTip()
    assert page.results.item(0, 1).text() == "not decided"  # 2 samples decide nothing
    page.runs.selectRow(0)
    assert page.samples.rowCount() == 2
    page.samples.selectRow(0)
    shown = page.detail.toPlainText()
    assert "Question" in shown and "Reference answer" in shown and "Trace" in shown
    assert "SARI" in page.samples.item(0, 1).text()  # labels, not stored names
    assert "sari " not in page.samples.item(0, 1).text()
    run_id = page.selected_run()
    page.write_report(run_id, tmp_path / "report.html")
    qtbot.waitUntil(lambda: (tmp_path / "report.html").exists(), timeout=60_000)
    written = (tmp_path / "report.html").read_text()
    assert "Lumen validation report" in written and "Not measured" in written
    assert escape(page.last_report.verdict["headline"]) in written
    assert {"format": "html", "run": run_id} in [
        e["detail"] for e in quick_window.session.records.audit_entries()
        if e["action"] == "bench.report_exported"]
    # The chart: both runs side by side, on the metric's axis, drawn (not blank).
    assert len(page.chart.rows) == 2 and "score, 0 to 100" in page.chart.svg
    image = page.chart.grab().toImage()
    colours = {image.pixelColor(x, y).name() for x in range(0, image.width(), 4)
               for y in range(0, image.height(), 4)}
    assert len(colours) > 3
    page.write_report(run_id, tmp_path / "report.docx")  # refused at once, with what to do
    error = page.findChild(QMessageBox, "errorDialog")
    assert error is not None and ".html, .pdf or .csv" in error.text() + error.informativeText()


@pytest.mark.slow
def test_quitting_during_a_replay_interrupts_the_run_without_a_dialog(qtbot, open_window, profile,
                                                                      monkeypatch):
    """Issue #33: the window closed mid-replay left an orphan "Something went wrong
    (ProgrammingError)" dialog (the stopped run's handler read the closed database) and the
    run "paused"; now no handler runs after the close, and the run reads "interrupted",
    ready to resume, as after a kill."""
    from PySide6.QtWidgets import QApplication

    from desktop_app.core.evaluation.runs import EvaluationStore
    from desktop_app.core.pipelines.calibration import demo_benchmark

    window = open_window(answer_tokens=24, extraction_attempts=1)
    page = window.evaluation_page
    session = window.session
    dataset, _ = session.evaluation.import_file(demo_benchmark(), "medisumqa")
    (run_id,) = session.evaluation.start(dataset.id, ["zero-shot"], ["reference"], limit=3)
    page.refresh()
    page._queue = [run_id]
    page._next()
    # The row says the run is going, not "paused, 0 done".
    qtbot.waitUntil(lambda: page.runs.item(0, 2).text() == "running", timeout=120_000)
    told = []
    monkeypatch.setattr("desktop_app.gui.evaluation_page.show_error",
                        lambda *args, **kwargs: told.append(args))
    window.close()
    qtbot.wait(500)  # what the stopped run's thread sent is delivered by now
    assert told == []
    assert not [w for w in QApplication.topLevelWidgets()
                if isinstance(w, QMessageBox) and w.isVisible()]
    with open_store(profile.database_file) as store:
        assert EvaluationStore(store).run(run_id)["status"] == "interrupted"


@pytest.mark.slow
def test_quitting_during_simplify_stops_the_model_at_its_next_step(qtbot, open_window, monkeypatch):
    """Issue #33: Ctrl+Q during Simplify held the window while the model read a long prompt.
    The window hides at once, the model stops inside the step it is on (llama.cpp's abort
    callback; docs/BENCHMARKS.md has the seconds), the close returns with no work left
    running, and no handler of the stopped job shows anything."""
    import json
    import threading

    import llama_cpp
    from PySide6.QtCore import QThreadPool
    from PySide6.QtWidgets import QApplication

    from desktop_app.core.pipelines.calibration import demo_benchmark

    window = open_window()
    page = window.simplify_page
    steps_after_quit = []
    model_busy, quitting = threading.Event(), threading.Event()
    real_eval = llama_cpp.Llama.eval

    def counted_eval(llama, tokens):
        if quitting.is_set():
            steps_after_quit.append(len(tokens))
        model_busy.set()
        return real_eval(llama, tokens)
    monkeypatch.setattr(llama_cpp.Llama, "eval", counted_eval)
    told = []
    monkeypatch.setattr("desktop_app.gui.simplify_page.show_error",
                        lambda *args, **kwargs: told.append(args))
    page.editor.setPlainText(json.loads(demo_benchmark().read_text().splitlines()[0])["summary"])
    page.simplify()
    qtbot.waitUntil(model_busy.is_set, timeout=120_000)
    quitting.set()
    window.close()
    assert not window.isVisible()
    assert QThreadPool.globalInstance().activeThreadCount() == 0  # nothing left running
    assert len(steps_after_quit) <= 1, steps_after_quit  # a step begun as the quit came
    qtbot.wait(200)  # anything the stopped job sent is delivered by now
    assert told == [] and page.handout is None
    assert not [w for w in QApplication.topLevelWidgets()
                if isinstance(w, QMessageBox) and w.isVisible()]


def test_a_sample_s_judges_are_shown_in_words_not_json():
    """Issue #33: sample details showed the judges' stored JSON with internal names."""
    from desktop_app.gui.evaluation_page import readable_judge

    shown = readable_judge({
        "medjudge": {"unparseable": False, "reply": "{...}", "seconds": 2.5, "labels": {
            "brief_analysis": "Misses the dose.", "correctness": "incorrect",
            "coverage": "partial", "clinical_impact": "moderate", "judge_confidence": "high"}},
        "similarity": {"unparseable": True, "reply": "maybe 3?", "reason": "not JSON"},
        "hivmedqa": {"unparseable": False, "blank": True, "scores": {"harm": 0}},
        "assessor": {"unparseable": False, "marks": {"1.3": "yes", "4.1": "competent"}},
    })
    assert "Score: 4" in readable_judge({"similarity": {"unparseable": False, "reply": "{}"}},
                                        {"judge_similarity": 4.0})
    assert "{" not in shown.replace("{...}", "") and "hivmedqa-judge" not in shown
    assert "Clinical correctness and impact (MedJudge)\n  Correctness: incorrect" in shown
    assert "Clinical impact: moderate" in shown and "Its reasoning: Misses the dose." in shown
    assert "could not be read (not JSON). It is left out of the scores." in shown
    assert "Its reply: maybe 3?" in shown
    assert "Not asked: the answer was blank" in shown
    assert "1.3 conclusion explained: yes" in shown
    assert readable_judge({}) == "(no judge was asked)"


def test_the_results_table_gives_each_run_its_verdict(qtbot, quick_window):
    """The verdict the report would give, in the tab: a column per run and the selected
    run's headline."""
    from desktop_app.core.evaluation.importers import import_dataset
    from desktop_app.core.pipelines.calibration import demo_benchmark

    page = quick_window.evaluation_page
    evaluations = quick_window.session.evaluation._store
    dataset = evaluations.save_dataset(import_dataset(demo_benchmark(), "medisumqa"))
    run_id = evaluations.create_run(dataset.id, "evidence", ["key-facts"], {}, 3)
    for index, sample in enumerate(evaluations.samples(dataset.id, limit=3)):
        evaluations.save_result(run_id, sample, index, output="I don't know.",
                                scores={"key_fact_recall": 0.0}, judge={}, trace={}, error="",
                                seconds=1.0, model_seconds=0.0)
    evaluations.set_status(run_id, "complete")
    page.refresh()
    qtbot.waitUntil(lambda: page.results.rowCount() == 1, timeout=60_000)
    assert page.results.horizontalHeaderItem(1).text() == "Verdict"
    cell = page.results.item(0, 1)
    assert cell.text() == "not decided" and "Not enough samples to decide: 3" in cell.toolTip()
    page.runs.selectRow(0)
    assert "Not enough samples to decide" in page.verdict.text()


def test_persian_samples_are_shown_right_to_left(qtbot, quick_window):
    from helpers import ROOT

    page = quick_window.evaluation_page
    page.import_file(ROOT / "tests" / "data" / "benchmarks" / "permedcqa_sample.jsonl", "permedcqa")
    qtbot.waitUntil(lambda: page.import_button.isEnabled(), timeout=60_000)
    dataset_id = page.dataset.currentData()
    assert dataset_id.startswith("permedcqa")
    session = quick_window.session
    (run_id,) = session.evaluation.start(dataset_id, ["qa"], ["reference"], limit=1)
    session.evaluation.resume(run_id)
    page.refresh()
    row = next(r for r in range(page.runs.rowCount()) if page.runs.item(r, 0).text() == run_id)
    page.runs.selectRow(row)
    page.samples.selectRow(0)
    assert 'dir="rtl"' in page.detail.toHtml() or "dir='rtl'" in page.detail.toHtml() \
        or "direction:rtl" in page.detail.toHtml().replace(" ", "")
