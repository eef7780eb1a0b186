"""Plain words: the rewriting every sentence a patient reads goes through, without a model.

Four steps, each deterministic, on a line the Explainer (evidence.py) renders:

1. **To the reader** (`Reader`): in text meant for the patient, the patient is "you"
   ("She should not drive until ..." -> "Do not drive until ..."; "The patient was
   advised ..." -> "You were advised ..."; "Mrs Okafor's knee" -> "your knee"). Only the
   patient's pronouns (the gender the summary uses most for the patient), "the patient"
   and the patient's own name are turned; a sentence that names anyone else a pronoun
   could stand for (a daughter, a carer, a doctor) is left as written, and so is a
   summary about a child, whose reader is a parent.
2. **Lay words** (`lexicon`, resources/plain_words.toml): clinical words and phrases to
   the patient's words ("ambulating" -> "walking", "orthopnea" -> "trouble breathing when
   lying flat"), never inside a longer glossary term ("acute" of "acute kidney injury"
   stays, so the term and its definition survive).
3. **Record shorthand**: a dispensed quantity ("Dispensed #20") in words.
4. **Shorter sentences**: a sentence is cut at its semicolons.

Then `lost_facts` compares the rendering with the line it came from: every dose, timing,
date, medicine and number, every negation, and every glossary term not replaced by its
own plain words must still be there.  The Explainer shows the line without these steps
where anything is lost.
"""

from __future__ import annotations

import functools
import re
import tomllib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ..config import resource_root
from ..errors import ConfigError
from ..glossary.glossary import Glossary
from .grounding import missing_facts
from .vocabulary import vocabulary

# Where a lexicon form may start and end: not inside a word, a hyphenated word ("non-
# ambulatory" is not "non-walking") or a "w/o".
_EDGE_BEFORE = r"(?<![\w/-])"
_EDGE_AFTER = r"(?![\w/-])"


@dataclass(frozen=True)
class Lexicon:
    plain: dict[str, str]  # clinical form as written in the file -> plain words
    kinds: dict[str, str]  # clinical form -> its table ("actions", "body", ...)
    pattern: re.Pattern

    def key_of(self, written: str) -> str:
        """The lexicon's form for a form as found in a text ('' when none)."""
        written = re.sub(r"\s+", " ", written)
        return written if written in self.plain else written.lower() if written.lower() in self.plain else ""


@functools.lru_cache(maxsize=1)
def lexicon() -> Lexicon:
    return read_lexicon(resource_root() / "resources" / "plain_words.toml")


def read_lexicon(path: Path) -> Lexicon:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"Lumen's lay lexicon ({path}) cannot be read ({exc}).",
                          "Reinstall Lumen; the file ships with it.") from exc
    plain: dict[str, str] = {}
    kinds: dict[str, str] = {}
    for kind, table in data.items():
        if not isinstance(table, dict):
            continue
        for form, words in table.items():
            if not isinstance(words, str) or not form.strip() or form in plain:
                raise ConfigError(f"Lumen's lay lexicon ({path}) has a bad entry: {form!r} in "
                                  f"[{kind}] (a form given twice, or plain words that are "
                                  "not text).", "Reinstall Lumen; the file ships with it.")
            plain[form] = words
            kinds[form] = kind
    forms = sorted(plain, key=len, reverse=True)
    alternation = "|".join(re.escape(f).replace(r"\ ", r"\s+") for f in forms)
    pattern = re.compile(f"{_EDGE_BEFORE}(?:{alternation}){_EDGE_AFTER}", re.IGNORECASE)
    return Lexicon(plain, kinds, pattern)


# ---- 1. to the reader ---------------------------------------------------------------------

# Anyone else a "she" or "he" could stand for; a sentence naming one is left as written.
_OTHER_PERSON = re.compile(
    r"\b(?:wife|husband|partner|daughters?|sons?|mother|father|mum|mom|dad|parents?|sisters?|"
    r"brothers?|family(?!\s+history)|friends?|carers?|caregivers?|neighbou?rs?|children|child|"
    # (a person, not "a relative bradycardia")
    r"relatives|relative(?=\s*(?:[,.;)]|$|(?:and|or|who|is|was|will|has|had|says|said|reports|reported|"
    r"visits|visited|called|rang|phoned|brought|asked|agrees|agreed)\b))|"
    r"baby|dr|doctors?|gp|nurses?|surgeons?|consultant|physician|pharmacist|therapist|"
    r"physio(?:therapist)?|team|colleague|registrar|(?<!home )resident|staff|nok)\b", re.IGNORECASE)
# A summary about a child: its reader is a parent, not the patient.  The patient's age is
# the first one written ("Age: 74", "a 6-year-old", "15 yrs", "8 months old"); only without
# one do words of a children's ward decide (a newborn grandchild is not the patient).
_AGE = re.compile(r"\b(?:(?:age\s*:|aged)\s*(\d{1,3})\s*(years?|yrs?|y|months?|mos?|weeks?|wks?|days?)?\b"
                  r"|(\d{1,3})[- ]?(?:(years?|yrs?|months?|mos?|weeks?|wks?|days?)[- ]old|y/?o)\b)",
                  re.IGNORECASE)
_CHILDREN_S_WARD = re.compile(r"\b(?:infant|toddler|newborn|neonate|paediatric|pediatric|"
                              r"children's hospital)\b", re.IGNORECASE)


def is_child(summary: str) -> bool:
    """Whether the patient of `summary` is a child (under 16)."""
    for match in _AGE.finditer(summary):
        number = int(match.group(1) or match.group(3))
        unit = (match.group(2) or match.group(4) or "year").lower()
        if unit[0] in "mwd":
            return True
        return number < 16
    return bool(_CHILDREN_S_WARD.search(summary))


_PRONOUNS = {"she": ("she", "her", "hers", "herself"), "he": ("he", "him", "his", "himself")}
_SUBJECT_TURNS = {"is": "are", "was": "were", "has": "have", "does": "do", "isn't": "aren't",
                  "wasn't": "weren't", "hasn't": "haven't", "doesn't": "don't", "'s": "'re"}
# Words after "her" that show it is the object ("took her home"), not "her knee".
_AFTER_OBJECT = frozenset(
    "to and or with at in on for from that if when home up down back off out again today "
    "tomorrow as by about into onto over under after before until so but than the a an this "
    "these those some any all every each".split())
_ADVERBS = frozenset("also still now currently already then usually often always never not "
                     "really only just again generally rarely sometimes occasionally regularly normally "
                     "mostly seldom hardly barely frequently typically".split())
# Verbs that, after "and" or a comma in a sentence whose subject became "you", are the same
# subject's ("you deny chest pain and need bloods"; "if you become drowsy, have a fever or
# fall and hit your head"); any other word there may be a noun ("and legs").
_COORDINATED = frozenset(
    "is was has does needs reports denies takes uses lives feels wants knows understands "
    "agrees remains continues walks eats drinks sleeps says notes describes manages "
    "tolerates requires prefers declines smokes works cares becomes develops gets hits "
    "notices passes finds goes".split())
# The patient's name is taken only from the line that names the patient ("Re: Mrs E.
# Pendlebury, DOB ...", "Patient: OKONKWO-REID, Bernard"): a titled name elsewhere may be a
# surgeon's ("Mr Gallagher-Dunne").
_NAME_LINE = re.compile(r"^[ \t]*(?i:re|patient(?:[ \t]+name)?|name|pt)[ \t]*[:\-][ \t]*"
                        r"(?:(?:Mr|Mrs|Ms|Miss|Mx)\.?[ \t])?[ \t]*((?:[A-Z][\w'’-]*\.?(?: (?=[A-Z])|(?=[,\s])))+)(,?)",
                        re.MULTILINE)
_NOT_A_NAME = frozenset("dob mrn nhs no hospital number age sex male female unit ward bed "
                        "date admitted discharged mr mrs ms miss mx dr".split())


def _patient_surname(match: re.Match) -> str:
    """The surname of a name line: its first word in "SURNAME, First", else its last."""
    words = [w for w in match.group(1).split() if not w.endswith(".")]
    if not words or any(w.lower() in _NOT_A_NAME for w in words):
        words = [w for w in words if w.lower() not in _NOT_A_NAME][:1]
    if not words:
        return ""
    return words[0] if match.group(2) and len(words) == 1 else words[-1]


def _third_person_verb(word: str) -> str | None:
    """'needs' -> 'need', 'denies' -> 'deny', 'goes' -> 'go'; None for a word that is
    not a verb in the third person."""
    lowered = word.lower()
    if lowered in _SUBJECT_TURNS:
        return _SUBJECT_TURNS[lowered]
    if not re.fullmatch(r"[a-z]{3,}s", lowered) or lowered.endswith(("ss", "us", "is")):
        return None
    if lowered.endswith("ies") and len(lowered) > 4:
        return lowered[:-3] + "y"
    if lowered.endswith(("sses", "shes", "ches", "xes", "zes", "oes")):
        return lowered[:-2]
    return lowered[:-1]


def _named(names: str) -> str:
    """The patient named, with a title and a first name if written ("Mr Bernard Okonkwo",
    "OKONKWO"): the surname in any case, a first name only capitalised, so "told Okonkwo"
    is not read as a first name and a surname."""
    return (rf"(?:(?:Mr|Mrs|Ms|Miss|Mx)\.?\s+)?(?:(?-i:[A-Z][\w'’-]+)\s+(?=(?i:{names})\b))?"
            rf"(?i:{names})")


@dataclass(frozen=True)
class Reader:
    """Who the patient is in a summary's sentences, so they can be turned to "you"."""

    pronouns: tuple[str, ...]  # the patient's ("she", "her", ...), () when not to be turned
    names: tuple[str, ...]  # the patient's surname(s), as titled ("Okafor")

    @classmethod
    def of(cls, summary: str) -> "Reader":
        if not summary or is_child(summary):
            return cls((), ())
        counts = Counter(w.lower() for w in re.findall(r"\b(?:she|her|he|him|his)\b", summary,
                                                          re.IGNORECASE))
        she = counts["she"] + counts["her"]
        he = counts["he"] + counts["him"] + counts["his"]
        pronouns = _PRONOUNS["she"] if she > 2 * he else _PRONOUNS["he"] if he > 2 * she else ()
        names = [_patient_surname(m) for m in _NAME_LINE.finditer(summary)]
        return cls(pronouns, tuple(dict.fromkeys(n for n in names if len(n) > 1)))

    @property
    def active(self) -> bool:
        return bool(self.pronouns or self.names)

    def turn(self, text: str) -> str:
        """`text` with the patient as "you", sentence by sentence."""
        if not self.active:
            return text
        return "".join(self._sentence(part) for part in re.split(r"((?<=[.!?])\s+)", text))

    def _subject(self) -> str:
        names = "|".join(re.escape(n) for n in self.names)
        parts = [r"the\s+patient", r"patient(?=\s+(?:is|was|has|should|will|can|may|must|"
                 r"needs?|denies|reports?))"]
        if self.pronouns:
            parts.append(self.pronouns[0])
        if names:
            parts.append(_named(names))
        return "|".join(parts)

    def _sentence(self, written: str) -> str:
        if not written.strip() or _OTHER_PERSON.search(written):
            return written
        sentence = written
        subject = self._subject()
        # "She should not drive" -> "Do not drive"; "He should take" -> "Take".
        sentence = re.sub(rf"(?i)\b(?:{subject})\s+should\s+not\s+(?!be\b|have\b)(?=[a-z])",
                          "do not ", sentence)
        sentence = re.sub(rf"(?i)(^|[.!?]\s+)(?:{subject})\s+should\s+(?!be\b|have\b|not\b)([a-z]+)",
                          lambda m: m.group(1) + m.group(2), sentence)

        # "She needs" -> "you need"; "Mrs Okafor is" -> "you are".
        sentence = self._subjects(sentence, subject)
        if self.names:
            names = "|".join(re.escape(n) for n in self.names)
            sentence = re.sub(rf"\b{_named(names)}(?:’s|'s)\b", "your", sentence)
        sentence = re.sub(r"(?i)\bthe\s+patient(?:’s|'s)\b", "your", sentence)
        if self.pronouns:
            sentence = re.sub(rf"(?i)\b{self.pronouns[-1]}\b", "yourself", sentence)
            if self.pronouns[0] == "he":
                sentence = re.sub(r"(?i)\bhis\b", "your", sentence)
                sentence = re.sub(r"(?i)\bhim\b", "you", sentence)
            else:
                sentence = re.sub(r"(?i)\bhers\b", "yours", sentence)
                sentence = re.sub(r"(?i)\bher\b(?=(\s*[\w-]+)?)", self._her, sentence)
        if written.lstrip()[:1].isupper():  # a capital where the sentence starts, as written
            sentence = re.sub(r"^(\s*)([a-z])", lambda m: m.group(1) + m.group(2).upper(), sentence)
        return sentence

    @staticmethod
    def _her(m: re.Match) -> str:
        following = (m.group(1) or "").strip().lower()
        if following == "back" and re.search(r"\b(?:to|into|on|in|of|from|across|over|down|up)\s+$",
                                              m.string[:m.start()], re.IGNORECASE):
            return "your"  # "pain going through to her back": the body part, not "bring her back"
        return "you" if not following or following in _AFTER_OBJECT else "your"

    def _subjects(self, sentence: str, subject: str) -> str:
        pattern = re.compile(rf"(?i)\b(?:{subject})(?:’s|'s)?(?!\w)(\s+)((?:(?:{'|'.join(_ADVERBS)})\s+)?)"
                             r"([A-Za-z'’]+)")

        def replace(m: re.Match) -> str:
            written = m.group(0)
            if re.search(r"(?:’s|'s)\s", written[:len(written) - len(m.group(3)) - len(m.group(2))]):
                return written  # "the patient's" is a possessive, handled apart
            turned = _third_person_verb(m.group(3))
            return f"you{m.group(1)}{m.group(2)}{turned if turned is not None else m.group(3)}"
        turned = pattern.sub(replace, sentence)
        if turned == sentence:
            return sentence
        def coordinated(verbs: frozenset[str]) -> Callable[[re.Match], str]:
            return lambda m: (m.group(1) + (_third_person_verb(m.group(2)) or m.group(2))
                              if m.group(2) in verbs else m.group(0))
        turned = re.sub(r"(?:(?<=\band)|(?<=\bbut)|(?<=\bor))(\s+)([a-z]+)\b",
                        coordinated(_COORDINATED), turned)
        # After a comma "is" may be another subject's ("your wound, which is healing, is
        # clean"); a verb of doing is the patient's.
        return re.sub(r"(?<=,)(\s+)([a-z]+)\b",
                      coordinated(_COORDINATED - {"is", "was", "does"}), turned)


# ---- 2. lay words ------------------------------------------------------------------------


_SERVICE = re.compile(r"(?:\s+(?:and\s+)?[\w-]+)?\s+(?:clinic|service|team|unit|department|dept|"
                      r"centre|center|ward|nurses?|specialists?|consultants?|hospital|"
                      r"programme|program|office|lab|laboratory|suite|bay)\b", re.IGNORECASE)


# A word just before a condition that makes it a different condition ("portal", "intracranial",
# "pulmonary", "gestational", "malignant"): an adjective of the body or of a kind.
_MODIFIER = re.compile(r"\b(?!(?:new|known|chronic|acute|severe|mild|moderate|recurrent|"
                       r"essential|primary|uncontrolled|poorly|well|controlled|history|"
                       r"of|with|and|or|the|a|an|no|not)\b)[A-Za-z-]+(?:al|ic|ary|ar|ous|ant|ent|"
                       r"ial|ile)\s+$", re.IGNORECASE)


def lay_words(text: str, glossary: Glossary | None, protected: list[tuple[int, int]] = (),
              mark: tuple[str, str] = ("", ""), named: set[str] | None = None
              ) -> tuple[str, list[str]]:
    """`text` with every lexicon form in plain words (each between `mark`'s two strings),
    except inside `protected` spans and inside a longer glossary term; and the forms
    replaced, as written.  A condition keeps its name in brackets the first time (not yet
    in `named`, which it joins): "high blood pressure (hypertension)", since the patient
    will hear the name again."""
    words = lexicon()
    terms = [(m.start, m.end) for m in glossary.match(text)] if glossary is not None else []
    # and a medicine's name the glossary does not hold ("sliding scale insulin lispro": the
    # form would cut "insulin lispro")
    vocab = vocabulary()
    terms += [m.span() for m in vocab.stem_word.finditer(text) if vocab.is_medicine_word(m.group(0))]
    out, replaced, position = [], [], 0
    found = [m for m in words.pattern.finditer(text) if words.key_of(m.group(0))]
    # Two forms side by side make a term the lexicon does not know as a whole ("pulmonary
    # oedema" is not "lung swelling"): both stay.
    # A verb or the record's shorthand makes no such term with its neighbour ("underwent
    # uncomplicated ...", "status post laparoscopic ...").
    loose = ("actions", "record")
    joined = {i for i in range(len(found) - 1)
              if re.fullmatch(r"[\s-]+", text[found[i].end():found[i + 1].start()])
              and words.kinds.get(words.key_of(found[i].group(0))) not in loose
              and words.kinds.get(words.key_of(found[i + 1].group(0))) not in loose}
    joined |= {i + 1 for i in joined}
    for index, match in enumerate(found):
        start, end = match.span()
        plain = words.plain.get(words.key_of(match.group(0)))
        if (plain is None or index in joined
                or any(a < end and start < b for a, b in protected)):
            continue
        # A condition after a word that makes it another one ("portal hypertension",
        # "intracranial hypertension") stays.
        if words.kinds.get(words.key_of(match.group(0))) == "conditions" and _MODIFIER.search(
                text[max(0, start - 30):start]):
            continue
        # A service keeps the name it is found by ("anticoagulation clinic").
        if _SERVICE.match(text, end):
            continue
        # A part of a glossary term ("acute" of "acute kidney injury") stays.
        if any(a < end and start < b and (start > a or end < b) for a, b in terms):
            continue
        written = match.group(0)
        if written[:1].isupper() and not written.isupper() and plain[:1].islower():
            plain = plain[:1].upper() + plain[1:]
        form = re.sub(r"\s+", " ", written).lower()
        if named is not None and words.kinds.get(words.key_of(written)) == "conditions" \
                and form not in named:
            named.add(form)
            plain = f"{plain} ({written})"
        out += [text[position:start], mark[0], plain, mark[1]]
        replaced.append(written)
        position = end
    out.append(text[position:])
    return "".join(out), replaced


# ---- 3. record shorthand, 4. shorter sentences ---------------------------------------------

def sides_written_out(text: str) -> str:
    """A side written as a letter before a part of the body in words: "lower L ureter" ->
    "lower left ureter" ("4 L" of oxygen stays)."""
    vocab = vocabulary()
    return vocab.side.sub(lambda m: vocab.side_word(m.group("side")), text)


# A label that heads a line ("STOPPED:", "Held medicines:").
_HEADING_LABEL = re.compile(r"^\s*(?:[-•*]\s*)?(?P<label>[A-Za-z][\w/ -]{0,30}):\s")


def _status_label(text: str) -> bool:
    """Whether a medicine's status heads the line as its label: what it says is said of
    every part after it ("STOPPED: sertraline ...; alprazolam 0.5 mg PRN" cut in two had
    read "Alprazolam 0.5 mg only when needed.")."""
    label = _HEADING_LABEL.match(text)
    if label is None or len(label.group("label").split()) > 3:
        return False
    said = f" {' '.join(label.group('label').lower().split())} "
    return any(f" {form} " in said for _value, _plain, forms in vocabulary().statuses
               for form in forms)


def shorter_sentences(text: str) -> str:
    """A sentence cut at its semicolons, outside brackets ("Worked with physio; walking 150
    feet" -> two sentences), unless a medicine's status heads it as a label."""
    if _status_label(text):
        return text
    out, depth = [], 0
    for index, char in enumerate(text):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == ";" and depth <= 0 and text[index + 1:index + 2].isspace():
            out.append(".")
        else:
            out.append(char)
    return "".join(out)


# A warning or an instruction that lists what to look for ("Return to the emergency
# department for fever, new pain, or vomiting.") is shown as a list under its lead when
# it is at least this long and names at least LIST_ITEMS things.
LIST_SENTENCE_WORDS = 18
LIST_ITEMS = 3
# The lead says what to do, then "for" or "if" ("Return to the emergency department for:");
# a sentence that starts with "If" lists its conditions and then what to do, and stays so.
_LIST_LEAD = re.compile(r"^(?P<lead>(?!if\b)\w[^,;:()]*?\s(?:for|if):?)\s+(?P<rest>\S.*)$",
                        re.IGNORECASE)
# "a sudden," in "a sudden, severe, or new headache": a word that describes a noun to come.
# ("grunting," alone is a thing to watch for; "a racing," is not).
_DESCRIBING_ONLY = re.compile(r"(?:a|an|the|any|more|new)\s+\w+(?:ing|ed|en|ful|ous|ive|al|ic|ish|ly)$"
                              r"|\w+(?:ed|en|ful|ous|ive|al|ic|ish|ly)$", re.IGNORECASE)
_COMPLEMENT = re.compile(r"\b(?:or|and)\b.*\b(?:from|of|in|on|at|to|around|near)\b", re.IGNORECASE)


def list_items(sentence: str) -> tuple[str, list[str]] | None:
    """A long sentence listing what to look for, as (lead, items): "Call for fever, new
    pain, or vomiting that does not stop." -> ("Call for", ["fever", "new pain", "vomiting
    that does not stop"]); the items are the sentence's own words, in its order.  None
    where the list cannot be read without doubt: a lead that is not an action then "for"
    or "if" (or has a comma or a bracket); a list of more than one sentence; a last item
    without its own comma and "or"; an item before the last that starts with "or", "and"
    or "if" (a list inside the list) or is only words that describe ("a racing,",
    "severe,", "pale or blue"); a last item whose words after an "or" end in a place
    ("swelling or drainage from the wound": does "from the wound" belong to the items
    before it too?)."""
    text = sentence.strip()
    if len(text.split()) < LIST_SENTENCE_WORDS or text.count("(") != text.count(")"):
        return None
    match = _LIST_LEAD.match(text.rstrip("."))
    if match is None:
        return None
    lead, rest = match.group("lead").rstrip(":").strip(), match.group("rest")
    parts, depth, start = [], 0, 0
    for index, char in enumerate(rest):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            parts.append(rest[start:index].strip())
            start = index + 1
    parts.append(rest[start:].strip())
    # Only a list whose last item has its own comma and "or" ("..., or fever"): without it
    # the last "or" may join words that share a noun ("a racing, pounding or fluttering
    # heartbeat": "a racing" is no item).
    if not re.match(r"(?:or|and)\s", parts[-1], re.IGNORECASE):
        return None
    parts[-1] = re.sub(r"^(?:or|and)\s+", "", parts[-1], flags=re.IGNORECASE)
    if (len(parts) < LIST_ITEMS or not all(parts) or re.search(r"[;.!?]\s", rest)
            or any(re.fullmatch(r"\w+ (?:or|and) \w+", p) for p in parts[:-1])  # "pale or blue"
            or any(re.match(r"(?:or|and|if|then)\b", p, re.IGNORECASE) for p in parts[:-1])
            or any(_DESCRIBING_ONLY.match(p) for p in parts[:-1])
            or _COMPLEMENT.search(parts[-1])):
        return None
    return lead, parts


# ---- the check -----------------------------------------------------------------------------

_NEGATION = re.compile(
    r"\b(?:no|not|never|none|nothing|nor|neither|without|cannot|avoid\w*|den(?:y|ies|ied|ying)|"
    r"negative|absent|nil|stop\w*|free\s+of|unable)\b|n[’']t\b", re.IGNORECASE)


def negations(text: str) -> int:
    return len(_NEGATION.findall(text))


def _number(written: str) -> str:
    """A number as compared: "3,000" and "3000" are one number ("1,2" is two)."""
    return written.replace(",", "") if re.fullmatch(r"\d{1,3}(?:,\d{3})+", written) else written


def lost_facts(original: str, rendered: str, glossary: Glossary | None,
               replaced: list[str] = ()) -> list[str]:
    """What `rendered` lost of `original`: facts (grounding.missing_facts), numbers,
    negations, and glossary terms other than those the lexicon wrote in plain words
    (`replaced`); [] when nothing."""
    lost = [f"{f.kind} '{f.text}'" for f in missing_facts(original, rendered, glossary)]
    # A timing's number is checked as the timing ("q6h" is "four times a day").
    timings = [m.span() for m in vocabulary().frequency.finditer(original)]
    numbers = Counter(_number(m.group(0)) for m in re.finditer(r"\d+(?:[.,]\d+)*", original)
                      if not any(a <= m.start() < b for a, b in timings))
    kept = Counter(_number(n) for n in re.findall(r"\d+(?:[.,]\d+)*", rendered))
    lost += [f"number '{n}'" for n in numbers if kept[n] < numbers[n]]
    if negations(rendered) < negations(original):
        lost.append("a negation")
    if glossary is not None:
        plain_forms = [r.lower() for r in replaced]
        before = {m.key: m.text for m in glossary.match(original)
                  if not any(m.text.lower() in form for form in plain_forms)}
        after = {m.key for m in glossary.match(rendered)}
        lost += [f"term '{text}'" for key, text in before.items() if key not in after]
    return lost
