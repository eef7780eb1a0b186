"""The Knowledge tab, driven with pytest-qt on real widgets (offscreen), real models,
chromadb and the encrypted store."""

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMessageBox

from desktop_app.gui.knowledge_page import ROUND_PARTS
from helpers import ROOT

DEMO = ROOT / "resources" / "knowledge"


@pytest.fixture
def page(open_window):
    window = open_window(context_size=2048, knowledge_answer_tokens=48, knowledge_critique_tokens=16,
                         knowledge_top_k=2)
    window.tabs.setCurrentWidget(window.knowledge_page)
    return window.knowledge_page


@pytest.mark.slow
def test_knowledge_tab_library_answer_sources_and_refinement(qtbot, page):
    assert "Add documents or import cases" in page.library_summary.text()
    page.inner.setCurrentIndex(1)
    page.add_documents([DEMO / "demo-kb" / "asthma-exacerbation.md"])
    assert page.library_progress.isVisible() and not page.ask_button.isEnabled()
    qtbot.waitUntil(lambda: page._task is None, timeout=180_000)
    page.import_cases(DEMO / "demo-cases.jsonl")
    qtbot.waitUntil(lambda: page._task is None, timeout=120_000)
    info = page.findChild(QMessageBox, "infoDialog")
    assert info is None  # every column of the demo file is used
    assert page.removals.rowCount() == 20
    kinds = {page.removals.item(r, 2).text() for r in range(page.removals.rowCount())}
    assert {"name", "date", "phone", "record number"} <= kinds
    assert "[NAME]" in {page.removals.item(r, 4).text() for r in range(page.removals.rowCount())}
    documents, sets = page.library.topLevelItem(0), page.library.topLevelItem(1)
    assert documents.childCount() == 1 and sets.childCount() == 1
    assert "60 past cases" in page.library_summary.text()

    page.inner.setCurrentIndex(0)
    page.refine.setChecked(True)
    page.rounds.setValue(1)
    assert page.calls.text() == "9 model calls per question"
    page.refine.setChecked(False)
    assert page.calls.text() == "2 model calls per question"
    page.refine.setChecked(True)
    qtbot.keyClicks(page.question, "What should be given first in a wheezy breathless attack?")
    events = []
    page.bridge.event.connect(lambda kind, data: events.append(kind))
    qtbot.mouseClick(page.ask_button, Qt.MouseButton.LeftButton)
    assert page.progress.isVisible()
    qtbot.waitUntil(lambda: page.result is not None, timeout=300_000)
    result = page.result
    assert {"tag", "retrieval", "answer", "round"} <= set(events)
    assert page.sources.rowCount() == len(result.retrieval.knowledge) == 2
    assert page.cases.rowCount() == len(result.retrieval.cases) == 2
    used = {page.sources.item(r, 0).text() for r in range(page.sources.rowCount())
            if page.sources.item(r, 1).text() == "✓"} | \
           {page.cases.item(r, 0).text() for r in range(page.cases.rowCount())
            if page.cases.item(r, 1).text() == "✓"}
    assert used == set(result.references) and used
    assert page.timeline.topLevelItemCount() == 1
    labels = {page.timeline.topLevelItem(0).child(i).text(0)
              for i in range(page.timeline.topLevelItem(0).childCount())}
    assert labels == {label for key, label in ROUND_PARTS if result.rounds[0].get(key)}
    assert "ICD-10 chapter of the question" in page.chapter.text()
    assert "References" in page.answer.toHtml() and page.copy_button.isEnabled()
    saved = page.session._store.query("SELECT kind FROM pipeline_run")
    assert saved == [("knowledge",)]

    # Diagnosis mode picks from the labels given; a list of one is refused with a message.
    page.mode.setCurrentIndex(page.mode.findData("diagnosis"))
    assert page.labels.isVisible() and not page.refine.isEnabled()
    page.labels.setPlainText("Asthma exacerbation")
    page.ask()
    qtbot.waitUntil(lambda: page.findChild(QMessageBox, "errorDialog") is not None, timeout=60_000)
    assert "list of diagnoses" in page.findChild(QMessageBox, "errorDialog").text()
    page.findChild(QMessageBox, "errorDialog").close()
    page.labels.setPlainText("Asthma exacerbation\nMigraine\nCellulitis")
    page.result = None
    page.ask()
    qtbot.waitUntil(lambda: page.result is not None, timeout=120_000)
    assert page.result.diagnosis in ("Asthma exacerbation", "Migraine", "Cellulitis")
    assert "Diagnosis:" in page.answer.toPlainText()

    # Removing a document takes it out of the library.
    doc_id = documents.child(0).data(0, Qt.ItemDataRole.UserRole)[1]
    page.remove("document", doc_id)
    assert page.library.topLevelItem(0).childCount() == 0


def test_knowledge_ingestion_can_be_cancelled(qtbot, page):
    page.add_documents([DEMO / "demo-kb" / "migraine.md", DEMO / "demo-kb" / "cellulitis.md"])
    qtbot.waitUntil(lambda: "tagging" in page.library_progress.label.text(), timeout=60_000)
    page.library_progress.cancel_button.click()
    qtbot.waitUntil(lambda: page._task is None, timeout=60_000)
    assert page.findChild(QMessageBox, "errorDialog") is None  # cancelling is not an error
    assert page.add_files_button.isEnabled()
    # Documents finished before the cancel stay; the one in progress left nothing behind.
    rag = page.session._knowledge()
    assert rag.knowledge.count() == rag.index.count("knowledge")
