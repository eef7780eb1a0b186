"""Log file set-up.  Log lines carry actions, ids, counts and timings: never
patient text (no prompt, document, answer or passphrase is ever logged)."""

from __future__ import annotations

import logging
import logging.handlers
import traceback

from .config import Paths

_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def configure_logging(paths: Paths, level: str = "INFO", *, console_level: str | None = None) -> None:
    root = logging.getLogger()
    for handler in list(root.handlers):
        if getattr(handler, "_lumen", False):
            root.removeHandler(handler)
    root.setLevel(logging.DEBUG)
    try:
        paths.log_dir.mkdir(parents=True, exist_ok=True)
        file_handler = logging.handlers.RotatingFileHandler(
            paths.log_file, maxBytes=2_000_000, backupCount=3, encoding="utf-8")
        file_handler.setLevel(level)
        file_handler.setFormatter(logging.Formatter(_FORMAT))
        file_handler._lumen = True  # type: ignore[attr-defined]
        root.addHandler(file_handler)
    except OSError:
        pass  # an unwritable log folder is reported by `lumen doctor`, not fatal here
    if console_level:
        console = logging.StreamHandler()
        console.setLevel(console_level)
        console.setFormatter(logging.Formatter("%(levelname)s: %(message)s"))
        console._lumen = True  # type: ignore[attr-defined]
        root.addHandler(console)
    # Third-party libraries that chatter at INFO.
    for noisy in ("chromadb", "httpx", "urllib3", "onnxruntime"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


def log_failure(logger: logging.Logger, what: str, exc: BaseException) -> None:
    """Log a failure without its message text.

    Exception messages from libraries can quote their input (llama.cpp's tokenizer
    quotes the prompt, jsonschema quotes the instance), which may be patient text.
    The log gets the exception's type and where it happened; LumenError messages,
    which Lumen writes itself and which never hold patient text, are kept.
    """
    from .errors import LumenError

    frames = "".join(traceback.format_tb(exc.__traceback__)) if exc.__traceback__ else ""
    if isinstance(exc, LumenError):
        logger.warning("%s: %s: %s", what, type(exc).__name__, exc.message)
    else:
        logger.error("%s: %s (message withheld)\n%s", what, type(exc).__name__, frames)
