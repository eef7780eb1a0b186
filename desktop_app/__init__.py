"""Lumen: a private medical text assistant that runs entirely on one workstation."""

__version__ = "0.1.0"
