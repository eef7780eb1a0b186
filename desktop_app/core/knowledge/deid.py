"""De-identifying a patient case before it enters the case base.

A hospital's past cases arrive as free text (complaint, dialogue, notes) next to
structured fields.  Before a case is stored, `deidentify` replaces names, dates,
phone numbers, record and identity numbers, e-mail addresses, web and IP addresses and
street addresses with placeholders such as "[NAME]" and "[DATE]", and returns every
removal with its span in the original text, so the import dialog can show the user
exactly what went and why.

The rule set is deliberately narrow and documented (docs/DEIDENTIFICATION.md):
a name is removed only where a title or a label says it is a name, or where the same
record's name field gives it, because capitalised words in medicine are mostly
eponyms ("Parkinson disease", "Gram stain").  Clinical numbers are protected by
shape: a slash date needs three parts (or two after a word like "on" or "since"),
so "BP 120/80" and "2/3 of patients" stay; month names need a day or a year, so
"May cause drowsiness" stays.  It is a safeguard, not a certified method.

All rules run over the text; where matches overlap, the one that starts first wins,
then the longest, then the one earlier in RULES.  Placeholders are never matched
again, and the rules run over their own result until they find nothing more, so
de-identifying twice changes nothing.  The removed text is kept for the user's review
and must never be logged; it is left out of the reprs.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator

PLACEHOLDERS = {
    "name": "[NAME]",
    "date": "[DATE]",
    "phone": "[PHONE]",
    "record_number": "[RECORD]",
    "id_number": "[ID]",
    "email": "[EMAIL]",
    "url": "[URL]",
    "address": "[ADDRESS]",
}
KINDS = tuple(PLACEHOLDERS)

_PLACEHOLDER_RE = re.compile("|".join(re.escape(p) for p in PLACEHOLDERS.values()))

Span = tuple[int, int]


@dataclass(frozen=True)
class Rule:
    """One documented pattern: what it removes (kind), its name, and one sentence on it."""

    kind: str
    name: str
    description: str
    example: str  # a made-up phrase the rule removes something from, for the docs
    pattern: re.Pattern[str] | None = field(default=None, repr=False, compare=False)
    # Given a match, the span to remove, or None to reject the match.
    check: Callable[[re.Match[str]], Span | None] | None = field(default=None, repr=False, compare=False)

    @property
    def replacement(self) -> str:
        return PLACEHOLDERS[self.kind]

    def find(self, text: str) -> Iterator[Span]:
        """The spans this rule removes from `text` (none for "known-name", whose pattern
        is built from each record's names)."""
        if self.pattern is None:
            return
        for match in self.pattern.finditer(text):
            span = self.check(match) if self.check else _pii_span(match)
            if span is not None and span[0] < span[1]:
                yield span


@dataclass(frozen=True)
class Removal:
    kind: str
    rule: str
    start: int  # span in the original text
    end: int
    text: str = field(repr=False)  # shown to the user for review; never logged
    replacement: str

    def to_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass(frozen=True)
class Deidentified:
    text: str
    removals: tuple[Removal, ...]  # in order of position

    def counts(self) -> dict[str, int]:
        """Number removed per kind, for the kinds that had any, in KINDS order."""
        found = {kind: 0 for kind in KINDS}
        for removal in self.removals:
            found[removal.kind] += 1
        return {kind: n for kind, n in found.items() if n}


def _pii_span(match: re.Match[str]) -> Span:
    """The part a rule removes: the group named "pii" where the pattern has one (the
    label or title before it stays), otherwise the whole match."""
    if "pii" in match.re.groupindex and match.start("pii") >= 0:
        return match.span("pii")
    return match.span()


# --- Shared pieces -----------------------------------------------------------------

_UP = "A-ZÀ-ÖØ-Þ"
_LOW = "a-zß-öø-ÿā-ž"
# "Smith", "O'Brien", "McDonald", "Smith-Jones", "José"; or full caps "SMITH".
_NAME_WORD = (
    rf"(?:(?:[{_UP}]['’])?[{_UP}][{_LOW}]+(?:[{_UP}][{_LOW}]+)?(?:-[{_UP}][{_LOW}]+)*"
    rf"|[{_UP}]{{2,}}(?:['’-][{_UP}]+)*)"
)
_INITIAL = rf"[{_UP}]\.?"
_PARTICLE = r"(?:van|von|de|der|den|da|di|du|del|della|le|la|ten|ter|bin|binti|al|el)"
# Up to two initials, then up to three words; "SMITH, John" (surname first) allowed.
# One space between the words of a name: a run of spaces separates columns.
_NAME = (
    rf"(?:{_INITIAL}[ \t]){{0,2}}{_NAME_WORD}"
    rf"(?:,?[ \t](?:{_PARTICLE}[ \t]){{0,2}}{_NAME_WORD})?"
    rf"(?:[ \t](?:{_PARTICLE}[ \t]){{0,2}}{_NAME_WORD}){{0,2}}"
    rf"(?![{_UP}{_LOW}\d])"
)
_NAME_PART_RE = re.compile(rf"{_NAME_WORD}|{_INITIAL}")
# Title case, or full caps with a period: bare "MR", "MS" and "DR" are mitral
# regurgitation, multiple sclerosis and diabetic retinopathy far more often than titles.
_TITLE = r"(?:Mrs|Mr|Ms|Mx|Miss|Dr|Prof|Professor|Doctor|MRS\.?|MISS|PROF\.?|MR\.|MS\.|DR\.)"
_TITLE_WORDS = {"mr", "mrs", "ms", "mx", "miss", "dr", "prof", "professor", "doctor", "sir", "dame"}

# Capitalised words that start sentences, greet, or name a role or a place in a
# hospital: after "Patient:" or "seen by" these are not names ("Patient: Hello
# Doctor", "seen by Cardiology Team"), and a name is cut short at the first of them.
_NOT_NAMES = frozenset("""
a an the this that these those he she they it i we you his her their my our your
hello hi hey dear good morning afternoon evening thanks thank thankyou yes no not none
ok okay well sure please sorry so and or but also then now today yesterday tomorrow
patient patients pt pts doctor doctors dr nurse nurses team teams unit ward clinic
department dept service services hospital surgery surgical medicine medical cardiology
neurology oncology radiology pathology emergency er ed icu ccu gp consultant registrar
resident attending physician surgeon practitioner therapist physiotherapy staff
on call duty male female man woman boy girl child infant baby adult elderly
unknown known new old history hx age aged presents presented presenting admitted
discharged referred reviewed seen complains complained reports reported denies
dob mrn nhs ssn id tel phone mobile address sex dx rx care review plan note notes assessment advice
handover obs observations follow
md phd mbbs mbchb frcp frcs mrcp rn np pa do dds bsc msc jr sr ii iii iv
mon monday tue tuesday wed wednesday thu thursday fri friday sat saturday sun sunday
""".split()) | _TITLE_WORDS


_MONTHS = (r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
           r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)")
_MONTH = rf"(?i:(?<![\w])(?P<month>{_MONTHS})(?![\w]))\.?"
# Words that are also months, or English words, when written in lower case.
_AMBIGUOUS_MONTHS = {"may", "mar", "march", "dec"}
_YEAR = r"(?:19|20)\d{2}"
_DAY = r"(?P<day>\d{1,2})(?:st|nd|rd|th)?"
# A number followed by a unit is a dose or a count, not a day ("may 5 mg").
_NOT_A_UNIT = (r"(?![ \t]*(?i:mg|mcg|µg|ug|g|kg|ml|l|mmol|units?|iu|u|%|x|times|tabs?|tablets?"
               r"|caps?|capsules?|puffs?|drops?|hours?|hrs?|h|days?|weeks?|wks?|months?|years?|yrs?"
               r"|minutes?|mins?|cm|mm|lbs?|oz)\b)")

def _digits(text: str) -> int:
    return sum(c.isdigit() for c in text)


# --- Checks ------------------------------------------------------------------------

def _day_month_ok(a: int, b: int) -> bool:
    """Two numbers that can be a day and a month in either order."""
    return 1 <= a <= 31 and 1 <= b <= 31 and (a <= 12 or b <= 12)


def _check_numeric_date(match: re.Match[str]) -> Span | None:
    a, b = int(match["a"]), int(match["b"])
    year = match["y"]
    if len(year) == 4 and not 1900 <= int(year) <= 2099:
        return None
    if match["s"] == "." and len(year) == 2 and (len(match["a"]) < 2 or len(match["b"]) < 2):
        return None  # "1.5.10" is a version or a protocol; "01.05.10" is a date
    return match.span() if _day_month_ok(a, b) else None


def _check_iso_date(match: re.Match[str]) -> Span | None:
    return match.span() if 1 <= int(match["m"]) <= 12 and 1 <= int(match["d"]) <= 31 else None


def _check_short_date(match: re.Match[str]) -> Span | None:
    return match.span("pii") if _day_month_ok(int(match["a"]), int(match["b"])) else None


def _check_month_date(match: re.Match[str]) -> Span | None:
    """Day in range; and a lower-case "may" or "march" only counts next to a year."""
    groups = match.groupdict()
    if groups.get("day") is not None and not 1 <= int(groups["day"]) <= 31:
        return None
    month = match["month"]
    has_year = groups.get("year") or groups.get("year2")
    if month.lower() in _AMBIGUOUS_MONTHS and month.islower() and not has_year:
        return None
    return _pii_span(match)


def _check_digits(low: int, high: int = 15) -> Callable[[re.Match[str]], Span | None]:
    def check(match: re.Match[str]) -> Span | None:
        span = _pii_span(match)
        return span if low <= _digits(match.string[span[0]:span[1]]) <= high else None
    return check


def _check_labelled_phone(match: re.Match[str]) -> Span | None:
    # An extension or a pager number is short; anything else needs a phone's length.
    # "pH 7.35" has three digits and stays.
    short = match["label"].lower().startswith(("ext", "bleep", "pager"))
    return _check_digits(3 if short else 7)(match)


def _check_identifier(match: re.Match[str]) -> Span | None:
    """At least three digits, so "ID consult" and "ID 2 days" stay."""
    return match.span("pii") if _digits(match["pii"]) >= 3 else None


def _trim_name(match: re.Match[str], min_words: int, titled: bool) -> Span | None:
    """The name's span up to the first word that is not a name; None if too short.
    After a title "A" is an initial ("Dr A Smith"); after "Patient:" it is an article
    unless it has a period."""
    start, end = match.span("pii")
    kept: list[re.Match[str]] = []
    for word in _NAME_PART_RE.finditer(match.string, start, end):
        bare = word.group().rstrip(".")
        initial = len(bare) == 1 and (titled or word.group().endswith("."))
        if not initial and bare.lower() in _NOT_NAMES:
            break
        kept.append(word)
    while kept and len(kept[-1].group().rstrip(".")) == 1:
        kept.pop()  # a trailing initial alone is not a name
    full_words = [w for w in kept if len(w.group().rstrip(".")) > 1]
    if len(full_words) < min_words or not kept:
        return None
    return start, kept[-1].end()


def _check_titled_name(match: re.Match[str]) -> Span | None:
    return _trim_name(match, 1, titled=True)


def _check_labelled_name(match: re.Match[str]) -> Span | None:
    # "Name:" says outright that a name follows, and so does a title; after "Patient:"
    # or "seen by" one capitalised word is too often something else.
    titled = match["title"] is not None
    return _trim_name(match, 1 if titled or match["namelabel"] is not None else 2, titled)


# --- The rules ---------------------------------------------------------------------

_UK_POSTCODE = r"[A-Z]{1,2}\d[A-Z\d]?[ \t]*\d[A-Z]{2}"
_ZIP = r"\d{5}(?:-\d{4})?"
_STREET_TYPES = (r"(?:Street|St|Road|Rd|Avenue|Ave|Lane|Ln|Drive|Dr|Boulevard|Blvd|Court|Ct|Place|Pl"
                 r"|Close|Way|Terrace|Crescent|Square|Sq|Parkway|Pkwy|Highway|Hwy|Gardens|Grove|Mews"
                 r"|Circle)")
_STREET_WORD = rf"[{_UP}][\w'’.-]*"
_TOWN = rf"(?:[{_UP}][{_LOW}'’-]+|[{_UP}]{{2,}})(?:[ \t]+(?:[{_UP}][{_LOW}'’-]+|[{_UP}]{{2,}})){{0,2}}"
_NO = r"(?:number|no\.?|nr\.?|#)"
_RECORD_LABEL = (
    rf"(?i:\b(?:MRN|MR\s*{_NO}|medical\s+record(?:\s*{_NO})?|med(?:ical)?\s+rec(?:ord)?\.?\s*{_NO}"
    rf"|(?:record|chart|case|unit|UR)\s*{_NO}|URN|hospital\s*(?:{_NO}|id)"
    rf"|patient\s*(?:id|identifier|{_NO})|account\s*{_NO}|acct\.?(?:\s*{_NO})?"
    rf"|(?:encounter|visit|admission|specimen)\s*(?:id|{_NO})|accession\s*{_NO})(?![A-Za-z]))"
    r"|\b(?:ID|Id)\b"
)
_OTHER_ID_LABEL = (
    r"(?i:\b(?:insurance|policy|member|subscriber|beneficiary|health\s+plan|medicare|medicaid"
    r"|licen[cs]e|driver'?s\s+licen[cs]e|passport|national\s+(?:insurance|id(?:entity)?)|NI"
    rf"|certificate|serial|device|vehicle|registration|plate)\s*(?:id|{_NO})(?![A-Za-z]))"
)
_VALUE_SEP = r"[ \t]*\.?[ \t]*(?:[:#=]|\bis\b|-)?[ \t]*"
_IDENTIFIER = r"(?=[A-Za-z0-9-]*\d)[A-Za-z0-9][A-Za-z0-9-]*[A-Za-z0-9]"
_OCTET = r"(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)"
_ORDINAL = r"(?:st|nd|rd|th)?"
_NOT_BEFORE_NAME_LABEL = "".join(
    f"(?<!{word} )" for word in ("drug", "brand", "generic", "trade", "product", "test", "file", "user",
                                 "ward", "hospital", "clinic", "practice", "medication", "medicine"))
_NAME_LABEL = (rf"(?i:\b(?:(?:patient|full|first|given|last|family|maiden|sur)[ \t]*name"
               rf"|{_NOT_BEFORE_NAME_LABEL}name)\b)[ \t]*[:\-]")
_PERSON_LABEL = (r"(?i:\b(?:patient|pt|next\s+of\s+kin|nok|emergency\s+contact|contact|informant|interpreter"
                 r"|gp|consultant|attending|physician|surgeon|clinician|provider|author"
                 r"|(?:nurse\s+)?practitioner|nurse|carer|guardian|spouse|partner|relative|mother|father"
                 r"|parent|wife|husband|son|daughter|brother|sister)\b)[ \t]*:")
_BY_LABEL = (r"(?i:\b(?:signed|seen|reviewed|examined|dictated|referred|authori[sz]ed|verified|attended"
             r"|transcribed)[ \t]+by\b)")

RULES: tuple[Rule, ...] = (
    Rule("name", "known-name",
         "Every occurrence of a name given in the record's own name field, in full and each "
         "capitalised part of it, in any letter case.",
         "Ada Quill reports that Ada slept badly"),
    Rule("email", "email",
         "An e-mail address.",
         "write to a.quill@example.org",
         re.compile(r"(?<![\w.+-])[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}"
                    r"(?![\w-])")),
    Rule("url", "url",
         "A web address starting with http://, https://, ftp:// or www.",
         "see www.example.org/patients/4411",
         re.compile(r"(?i:\b(?:https?://|ftp://|www\.)[^\s<>\"'()\[\]]*[^\s<>\"'()\[\].,;:!?])")),
    Rule("url", "ip-address",
         "An IPv4 address: four numbers from 0 to 255 joined by dots.",
         "logged in from 192.0.2.44",
         re.compile(rf"(?<![\w.])(?:{_OCTET}\.){{3}}{_OCTET}(?![\w]|\.\d)")),
    Rule("id_number", "ssn",
         "A US Social Security number: three, two and four digits joined by hyphens, or after an "
         "SSN label.",
         "SSN 078-05-1120",
         re.compile(r"(?<![\w-])(?!000|666|9\d\d)\d{3}-(?!00)\d{2}-(?!0000)\d{4}(?![\w-])"
                    rf"|(?i:\b(?:SSN|social\s+security\s*{_NO}?)(?![A-Za-z])){_VALUE_SEP}"
                    r"(?P<pii>\d{3}[ -]?\d{2}[ -]?\d{4})(?!\d)")),
    Rule("id_number", "nhs-number",
         "A UK NHS number (ten digits, often written 3-3-4) after an NHS label.",
         "NHS no: 943 476 5919",
         re.compile(rf"(?i:\bNHS\s*{_NO}?){_VALUE_SEP}(?P<pii>\d{{3}}[ -]?\d{{3}}[ -]?\d{{4}})(?!\d)")),
    Rule("record_number", "record-number",
         "A number after a record label such as MRN, medical record number, hospital number, "
         "patient ID, account number or ID.",
         "MRN: RX2231987",
         re.compile(rf"(?:{_RECORD_LABEL}){_VALUE_SEP}(?P<pii>{_IDENTIFIER})(?![\w-])"),
         _check_identifier),
    Rule("id_number", "other-id-number",
         "A number after an insurance, policy, member, licence, passport, serial or device label.",
         "insurance no. HX-448812",
         re.compile(rf"{_OTHER_ID_LABEL}{_VALUE_SEP}(?P<pii>{_IDENTIFIER})(?![\w-])"),
         _check_identifier),
    Rule("phone", "labelled-phone",
         "A number after tel, telephone, phone, ph, mobile, cell, fax, contact, pager or ext.",
         "mobile: 07700 900 461",
         re.compile(r"(?i:\b(?P<label>tel(?:ephone)?|phone|ph|mob(?:ile)?|cell|fax|contact|pager|bleep"
                    r"|ext(?:ension)?)\b\.?(?:\s*(?:no\.?|number|#))?)[ \t]*[:.#-]?[ \t]*"
                    r"(?P<pii>\+?(?:\(\d+\)[ .-]?)?\d+(?:[ .-]\d{2,})*)(?![\w])"),
         _check_labelled_phone),
    Rule("phone", "international-phone",
         "A phone number starting with + and a country code.",
         "call +44 20 7946 0321",
         re.compile(r"(?<![\w+])\+\d{1,3}(?:[ .-]?\(0?\d{1,4}\))?(?:[ .-]?\d{1,4})(?:[ .-]?\d{2,5}){1,4}"
                    r"(?![\w]|\.\d)"),
         _check_digits(8)),
    Rule("phone", "north-american-phone",
         "A ten-digit phone number written 3-3-4, such as 555-201-7788 or (555) 201-7788.",
         "home (555) 201-7788",
         re.compile(r"(?<![\w+.-])(?:\(\d{3}\)[ ]?|\d{3}[-. ])\d{3}[-. ]\d{4}(?![\w-]|\.\d)")),
    Rule("phone", "uk-phone",
         "A UK phone number of ten or eleven digits starting with 0, such as 020 7946 0321 or "
         "07700 900461.",
         "ring 01632 960 555",
         re.compile(r"(?<![\w+.-])0\d{2,4}[ -]?\d{3,4}(?:[ -]?\d{3,4})?(?![\w-]|\.\d)"),
         _check_digits(10, 11)),
    Rule("date", "date-of-birth",
         "The date after a date-of-birth label (DOB, date of birth, born), whatever its format, a "
         "bare year included.",
         "DOB: 3rd Feb 1951",
         re.compile(r"(?i:\b(?:DOB|D\.O\.B\.?|date\s+of\s+birth|birth\s*date|born(?:\s+on)?)\b)"
                    r"[ \t]*[:\-]?[ \t]*"
                    r"(?P<pii>\d{1,4}[/.-]\d{1,2}(?:[/.-]\d{2,4})?"
                    rf"|(?:\d{{1,2}}{_ORDINAL}[ \t]+(?:of[ \t]+)?)?{_MONTH.replace('P<month>', ':')}"
                    rf"(?:[ \t]+\d{{1,2}}{_ORDINAL})?,?[ \t]+{_YEAR}"
                    rf"|{_YEAR})(?!\d){_NOT_A_UNIT}")),
    Rule("date", "iso-date",
         "A numeric date written year first: 2021-03-12, 2021/03/12 or 2021.03.12.",
         "scan on 2019-11-04",
         re.compile(rf"(?<![\w.])(?P<y>{_YEAR})(?P<s>[-/.])(?P<m>\d{{1,2}})(?P=s)(?P<d>\d{{1,2}})"
                    r"(?!\d|[.-]\d)"),
         _check_iso_date),
    Rule("date", "numeric-date",
         "A numeric date of three parts, day and month in either order: 12/03/2021, 3/4/21, "
         "12.03.2021, 12-03-2021.",
         "seen 14/09/2020",
         re.compile(r"(?<![\w.])(?P<a>\d{1,2})(?P<s>[/.-])(?P<b>\d{1,2})(?P=s)(?P<y>\d{4}|\d{2})"
                    rf"(?!\d|[.-]\d){_NOT_A_UNIT}"),
         _check_numeric_date),
    Rule("date", "short-date",
         "A day and month like 12/03 only after on, since, from, until, dated, date, admitted or "
         "discharged.",
         "admitted on 12/03",
         re.compile(r"(?i:\b(?:on|since|from|until|till|dated|date|admitted|discharged)\b)[ \t]*:?[ \t]*"
                    r"(?P<pii>(?P<a>\d{1,2})/(?P<b>\d{1,2}))(?![\d/]|\.\d)(?![ \t]+(?i:of|doses?)\b)"
                    + _NOT_A_UNIT),
         _check_short_date),
    Rule("date", "month-year-numeric",
         "A month and a four-digit year written 03/2021 (two-digit month).",
         "symptoms since 06/2018",
         re.compile(rf"(?<![\w./])(?:0[1-9]|1[0-2])/{_YEAR}(?![\d/]|\.\d)")),
    Rule("date", "month-day-date",
         "A month name followed by a day, with or without a year: March 12, 2021; Mar 12; Sept 3rd "
         "2020.",
         "reviewed Sept 3rd, 2020",
         re.compile(rf"{_MONTH}[ \t]+{_DAY}(?![\w:]){_NOT_A_UNIT}(?:,?[ \t]+(?P<year>{_YEAR})(?!\d))?"),
         _check_month_date),
    Rule("date", "day-month-date",
         "A day followed by a month name, with or without a year: 12 March 2021; 12th of March; "
         "3 Jan; 12-Mar-21.",
         "on the 12th of March 2021",
         re.compile(rf"(?<![\w.,]){_DAY}(?:[ \t]+(?:of[ \t]+)?|[-/]){_MONTH}"
                    rf"(?:,?[ \t]+(?P<year>{_YEAR})(?!\d)|[-/](?P<year2>{_YEAR}|\d{{2}})(?!\d))?"),
         _check_month_date),
    Rule("date", "month-year",
         "A month name followed by a four-digit year: March 2021, Mar. 2021.",
         "diagnosed in March 2017",
         re.compile(rf"{_MONTH},?[ \t]+(?P<year>{_YEAR})(?!\d)"),
         _check_month_date),
    Rule("name", "titled-name",
         "A name after a title (Mr, Mrs, Ms, Mx, Miss, Dr, Prof, with or without a period); the "
         "title stays.",
         "letter from Dr. Omar Haddad",
         re.compile(rf"(?<![\w.]){_TITLE}\.?[ \t]+(?P<pii>{_NAME})"),
         _check_titled_name),
    Rule("name", "labelled-name",
         "A name after a label such as Name:, Patient name:, Patient:, Pt:, Next of kin:, Mother:, "
         "GP:, Nurse:, signed by, seen by or reviewed by; two capitalised words are needed unless "
         "the label is a name label or a title follows.",
         "Patient: LENA MARSH, 54",
         re.compile(rf"(?:(?P<namelabel>{_NAME_LABEL})|{_PERSON_LABEL}|{_BY_LABEL})"
                    rf"[ \t]*(?:(?P<title>{_TITLE})\.?[ \t]+)?(?P<pii>{_NAME})"),
         _check_labelled_name),
    Rule("address", "street-address",
         "A house number, capitalised street name and street word (Street, St, Road, Avenue, Lane, "
         "Drive ...), with the town, state, ZIP or postcode that follow it.",
         "lives at 27 Larch Avenue, Millbrook, MN 55401",
         re.compile(rf"(?<![\w.,/-])\d{{1,5}}[A-Za-z]?(?:[-–]\d{{1,5}})?,?[ \t]+"
                    rf"(?:{_STREET_WORD}[ \t]+){{1,4}}"
                    rf"{_STREET_TYPES}\b\.?(?:[ \t]+(?:NE|NW|SE|SW|N|S|E|W)\.?(?![\w]))?"
                    rf"(?:,?[ \t]+(?:Apt|Apartment|Unit|Flat|Suite|Ste)\.?[ \t]*#?\w+)?"
                    rf"(?:,[ \t]*{_TOWN}(?![\w'’-])){{0,2}}"
                    rf"(?:,?[ \t]+(?:{_UK_POSTCODE}|(?:[A-Z]{{2}}[ \t]+)?{_ZIP})(?![\w]))?")),
    Rule("address", "labelled-address",
         "What follows an Address: label, up to the end of the line, a semicolon or the end of a "
         "sentence.",
         "Address: Flat 2, Rowan Court, Leeds",
         re.compile(r"(?i:\b(?:home\s+|street\s+|postal\s+)?address\b)[ \t]*[:\-][ \t]*"
                    r"(?P<pii>[^\s\[][^\n;|]{2,119}?)"
                    # A period ends it after a word of three letters or a postcode, not "St."
                    r"(?:(?=[ \t]*(?:[\n;|]|$))|(?:(?<=[A-Za-z]{3})|(?<=[0-9A-Z]{2}))(?=\.(?:\s|$)))")),
    Rule("address", "postcode",
         "A ZIP code or postcode after a ZIP, ZIP code, postcode or postal code label.",
         "postcode LS6 2QT",
         re.compile(r"(?i:\b(?:zip(?:[ \t]*code)?|post[ \t]*code|postal[ \t]+code)\b)[ \t]*[:#]?[ \t]*"
                    rf"(?P<pii>(?i:{_UK_POSTCODE})|{_ZIP}|(?i:[A-Z]\d[A-Z][ \t]?\d[A-Z]\d))(?![\w])")),
)

_KNOWN_NAME_RULE = RULES[0]  # found by `_known_name_pattern`, which needs the record's names


# --- Known names -------------------------------------------------------------------

_NAME_TOKEN_RE = re.compile(r"[^\W\d_]+(?:['’-][^\W\d_]+)*")


def known_name_forms(names: Iterable[str]) -> list[str]:
    """The forms of the given names to remove: each full name and each part of two or
    more letters that starts with a capital (hyphenated parts also split), titles left
    out.  A name field written all in lower case has no capitals to go by, so there
    every part except a particle ("van", "de") counts."""
    forms: set[str] = set()
    for raw in names:
        name = " ".join(str(raw or "").split())
        if not name:
            continue
        tokens = _NAME_TOKEN_RE.findall(name)
        if not any(_letters(t) >= 2 for t in tokens):
            continue
        forms.add(name)
        no_capitals = not any(c.isupper() for c in name)
        for token in tokens:
            for part in {token, *re.split(r"['’-]", token)}:
                if _letters(part) < 2 or part.lower() in _TITLE_WORDS:
                    continue
                if part[0].isupper() or (no_capitals and not re.fullmatch(_PARTICLE, part)):
                    forms.add(part)
    return sorted(forms, key=lambda f: (-len(f), f))


def _letters(text: str) -> int:
    return sum(c.isalpha() for c in text)


def _known_name_pattern(names: Iterable[str]) -> re.Pattern[str] | None:
    forms = known_name_forms(names)
    if not forms:
        return None
    alternatives = "|".join(r"\s+".join(re.escape(w) for w in form.split()) for form in forms)
    return re.compile(rf"(?<!\w)(?:{alternatives})(?!\w)", re.IGNORECASE)


# --- Applying the rules ------------------------------------------------------------

_MAX_PASSES = 4


def deidentify(text: str, *, known_names: Iterable[str] = (),
               check_cancel: Callable[[], None] | None = None) -> Deidentified:
    """Replace the identifiers the rules find with placeholders; return the new text and
    every removal, with spans in the original text.

    The rules run again over the result until they find nothing more: a placeholder can
    complete a context that the original lacked (in "12/03/2021DR. LEE" the date hides
    the word boundary before the title).  So de-identifying the result again removes
    nothing.  `check_cancel` is called between rules (it raises to stop), so a long field
    stops within a fraction of a second of Cancel."""
    if isinstance(known_names, str):
        known_names = [known_names]  # one name, not a sequence of letters
    names = _known_name_pattern(known_names)
    found: list[tuple[int, int, Rule]] = []  # spans in the original text
    current, anchors = text, [(0, 0)]
    for _ in range(_MAX_PASSES):
        new = _find(current, names, check_cancel)
        if not new:
            break
        # Each new span lies in a stretch copied unchanged from the original.
        found.extend((_to_original(start, anchors), _to_original(end, anchors), rule)
                     for start, end, rule in new)
        found.sort(key=lambda f: f[0])
        current, anchors = _replace(text, found)
    removals = tuple(Removal(rule.kind, rule.name, start, end, text[start:end], rule.replacement)
                     for start, end, rule in found)
    return Deidentified(current, removals)


def _find(text: str, names: re.Pattern[str] | None,
          check_cancel: Callable[[], None] | None = None) -> list[tuple[int, int, Rule]]:
    """Every rule's matches, overlaps resolved: earliest start first, then the longest,
    then the rule earlier in RULES; none that touches a placeholder."""
    candidates: list[tuple[int, int, int, Rule]] = []
    if names is not None:
        candidates.extend((m.start(), m.end(), 0, _KNOWN_NAME_RULE) for m in names.finditer(text))
    for order, rule in enumerate(RULES):
        if check_cancel is not None:
            check_cancel()
        candidates.extend((start, end, order, rule) for start, end in rule.find(text))
    placeholders = [m.span() for m in _PLACEHOLDER_RE.finditer(text)]
    if placeholders:
        candidates = [c for c in candidates if not _overlaps_any(c[0], c[1], placeholders)]
    candidates.sort(key=lambda c: (c[0], c[0] - c[1], c[2]))
    chosen: list[tuple[int, int, Rule]] = []
    position = 0
    for start, end, _, rule in candidates:
        if start >= position:
            chosen.append((start, end, rule))
            position = end
    return chosen


def _replace(text: str, found: list[tuple[int, int, Rule]]) -> tuple[str, list[Span]]:
    """The text with each span replaced by its placeholder, and where each unchanged
    stretch starts in the new text and in the original (new position, original position)."""
    pieces: list[str] = []
    anchors: list[Span] = [(0, 0)]
    position = length = 0
    for start, end, rule in found:
        pieces.append(text[position:start])
        length += start - position
        pieces.append(rule.replacement)
        length += len(rule.replacement)
        position = end
        anchors.append((length, position))
    pieces.append(text[position:])
    return "".join(pieces), anchors


def _to_original(position: int, anchors: list[Span]) -> int:
    new_start, original_start = anchors[bisect.bisect_right(anchors, position, key=lambda a: a[0]) - 1]
    return original_start + position - new_start


def _overlaps_any(start: int, end: int, spans: list[Span]) -> bool:
    """Whether [start, end) overlaps any of `spans`, which are sorted and disjoint: only
    the first span that ends after `start` can."""
    index = bisect.bisect_right(spans, start, key=lambda span: span[1])
    return index < len(spans) and spans[index][0] < end
