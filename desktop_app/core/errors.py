"""Errors a user can act on.

Every failure a user may meet is a LumenError carrying two texts: what went wrong
and what to do about it.  The GUI shows both in a dialog, the command line prints
both, and neither shows a traceback.  Messages never contain patient text.
"""

from __future__ import annotations


class LumenError(Exception):
    """A failure with a plain-language message and a fix."""

    def __init__(self, message: str, fix: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.fix = fix

    def __str__(self) -> str:
        return f"{self.message}\n{self.fix}" if self.fix else self.message


class ConfigError(LumenError):
    """The settings file or a folder Lumen needs is unusable."""


class ModelError(LumenError):
    """A model file is missing, corrupt, or not what it claims to be."""


class ServerError(ModelError):
    """A model server could not be used: unreachable, refusing, too slow, or a reply cut
    short.  Ask then shows the summary's own lines with a note; a benchmark replay counts
    the sample as an error."""


class ChatTemplateError(ModelError):
    """No chat template could be resolved for a GGUF model."""


class ContextOverflowError(LumenError):
    """A prompt does not fit in the model's context window."""

    def __init__(self, prompt_tokens: int, max_tokens: int, n_ctx: int) -> None:
        self.prompt_tokens = prompt_tokens
        self.max_tokens = max_tokens
        self.n_ctx = n_ctx
        super().__init__(
            f"The text is too long for the model: the prompt needs {prompt_tokens} tokens "
            f"plus {max_tokens} for the answer, but the context holds {n_ctx}.",
            "Shorten the text, or raise 'Longest text a model reads at once' in Settings (Generation) if the model supports it.",
        )


class ModelOutputError(LumenError):
    """The model's reply was not the structured output asked for."""

    def __init__(self, message: str, raw_text: str) -> None:
        super().__init__(
            message,
            "Try again; if it keeps happening, use a larger model for this role (Models page).",
        )
        # Kept for the trace in the encrypted store; never logged.
        self.raw_text = raw_text


class ReplyCutOff(ModelOutputError):
    """The token limit ended a constrained reply before its JSON closed."""

    def __init__(self, tokens: int, raw_text: str) -> None:
        super().__init__(f"reply cut off at {tokens} tokens", raw_text)
        self.tokens = tokens
        self.fix = ("The reply reached its token limit before it was complete; this should "
                    "not happen for Lumen's own grammars: report it with the log file.")


class Cancelled(LumenError):
    """The user cancelled a long-running operation."""

    def __init__(self) -> None:
        super().__init__("Cancelled.")


class StoreError(LumenError):
    """The encrypted database cannot be opened or used."""


class WrongKeyError(StoreError):
    """The key or passphrase does not open the database."""


class UnlockThrottled(StoreError):
    """Too many wrong keys in a row: the next try must wait (issue #32)."""


class PassphraseRequired(StoreError):
    """No OS keyring is available and no passphrase was given."""


class OfflineViolation(ConnectionRefusedError):
    """Raised by the network guard when code tries to reach another machine.

    It is a ConnectionRefusedError so that libraries which handle an unreachable
    network (telemetry clients, for example) fail quietly the way they would on an
    air-gapped workstation.
    """


class DatasetFormatError(LumenError):
    """A file that cannot be imported or read; names the file, the record (when there is
    one) and the reason, never a value of the record (which may be patient text)."""

    def __init__(self, source: str, record: int | str | None, reason: str, fix: str = "",
                 *, outcome: str = "Nothing was imported.") -> None:
        where = f"record {record} of {source}" if record is not None else source
        super().__init__(f"{where}: {reason}. {outcome}",
                         fix or "Correct the file, or choose the matching format and column mapping.")
        self.source = source
        self.record = record
        self.reason = reason
