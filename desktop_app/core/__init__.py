"""Lumen's core: everything a user can do, with no Qt import.

The GUI (desktop_app.gui) and the command line (desktop_app.cli) are thin layers
over the calls in this package.
"""
