"""Lumen's Qt face: windows and dialogs over desktop_app.core, nothing more."""
