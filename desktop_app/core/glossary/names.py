"""People's names and initials in clinical text.

A capital letter with a full stop is, in a summary, most often an initial: "Dr. K. Osei",
"B.K. is a 30-year-old woman", "Mr T. Ruiz".  Read as shorthand it becomes a medical word
("K" is potassium) or a sentence's end ("B." then "K. is ..."), and the patient is told
"Dr. Potassium level. Osei".  Names are never glossary terms and never end a sentence;
this module says where they are, for the glossary's matcher and the sentence splitter.
"""

from __future__ import annotations

import re

# Titles before a name; the full stop after them is optional (UK: "Dr Osei", "Mrs Hale").
TITLES = ("Dr", "Mr", "Mrs", "Ms", "Miss", "Mx", "Prof", "Drs", "Sr", "Sister", "Nurse",
          "Rev", "Capt")
_TITLE = rf"\b(?:{'|'.join(TITLES)})\b\.?"
_INITIAL = r"[A-Z]\.(?:-?[A-Z]\.)*"
_SURNAME = r"[A-Z][a-zA-Z'’]+(?:-[A-Z][a-zA-Z'’]+)*"

# A title and what follows it: initials, a first name, a surname or a blank ("Dr. ___").
_TITLED_NAME = re.compile(
    rf"{_TITLE}\s+(?:(?:{_INITIAL}\s*)+(?:{_SURNAME})?|{_SURNAME}(?:\s+(?:{_INITIAL}\s*)*{_SURNAME})?"
    rf"|(?:{_INITIAL}\s*)*{_SURNAME}|_+)")
# Two initials or more, run together or spaced ("B.K.", "J. R. R."), not known shorthand.
_INITIALS = re.compile(r"(?<![\w.])(?:[A-Z]\.\s?){2,4}(?![\w])")
# One initial before a surname that ends the name ("K. Osei," "K. Osei MD", "J. Park\n").
_INITIAL_SURNAME = re.compile(
    rf"(?<![\w.])(?:{_INITIAL}\s*)+{_SURNAME}(?=\s*(?:[,;)\n]|$|\b(?:MD|DO|MBBS|FRCP|MRCP|RN|NP|PA|"
    rf"PhD|FRCS|MBChB|Consultant|Registrar)\b))")

# A genus written as its initial before the species ("K. pneumoniae", "E. coli", "H. pylori"):
# the letter is no shorthand either ("K" is not potassium there).
_GENUS_INITIAL = re.compile(r"(?<![\w.])[A-Z]\.(?=\s?[a-z]{3,}\b)")

# Shorthand written with full stops that is not a person's initials.
_NOT_INITIALS = frozenset({
    "B.I.D.", "T.I.D.", "Q.I.D.", "Q.D.", "P.O.", "P.R.N.", "Q.H.S.", "H.S.", "Q.A.M.",
    "Q.O.D.", "A.M.", "P.M.", "I.V.", "I.M.", "S.C.", "S.L.", "O.D.", "O.S.", "O.U.",
    "U.S.", "U.K.", "E.D.", "E.R.", "I.C.U.", "N.P.O.", "D.O.B.", "S.O.B.", "G.P.",
})


def name_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of every name and initial in `text`: a title with the name after it,
    runs of initials, an initial before a surname that ends a name, and a genus's initial."""
    spans = [m.span() for m in _TITLED_NAME.finditer(text)]
    spans += [m.span() for m in _INITIALS.finditer(text)
              if re.sub(r"\s", "", m.group(0)).upper() not in _NOT_INITIALS]
    spans += [m.span() for m in _INITIAL_SURNAME.finditer(text)]
    spans += [m.span() for m in _GENUS_INITIAL.finditer(text)]
    return sorted(spans)


def in_name(spans: list[tuple[int, int]], start: int, end: int) -> bool:
    return any(a <= start and end <= b for a, b in spans)


_ENDS_IN_INITIAL = re.compile(rf"(?:{_TITLE}|(?<![\w.])(?:[A-Z]\.\s?)+)$")
_LOWER_WORD_BEFORE = re.compile(r"\b[a-z][a-z-]*\s+[A-Z]\.$")


# A dose form's shorthand written before a medicine's name (South Asian prescriptions:
# "Tab. Ecosprin", "Inj. Enoxaparin").
DOSE_FORM_SHORTHAND = r"(?:Tabs?|Caps?|Inj|Syp|Syr|Susp|Oint)"
_DOSE_FORM_BEFORE_NAME = re.compile(rf"(?<![\w.])(?<!\d ){DOSE_FORM_SHORTHAND}\.$")


def ends_no_sentence(before: str) -> bool:
    """Whether a full stop at the end of `before` belongs to a title or an initial (so no
    sentence ends there): "Dr.", "Mr. T.", "B.K.", "seen by J."; "hepatitis B." ends one."""
    tail = before[-40:]
    if re.search(rf"{_TITLE}$", tail) and tail.endswith("."):
        return True
    if _DOSE_FORM_BEFORE_NAME.search(tail):  # "... high dose statin, Inj. Enoxaparin 60 mg"
        return True
    if not _ENDS_IN_INITIAL.search(tail):
        return False
    # "vitamin K." and "hepatitis B." end sentences: a letter after a lower-case word
    # that is not a name's lead ("by", "with", "to", "from", "and").
    lower = _LOWER_WORD_BEFORE.search(tail)
    if lower and not re.search(r"\b(?:by|with|to|from|and|Dr|Mr|Mrs|Ms)\s+[A-Z]\.$", tail):
        return False
    return True
