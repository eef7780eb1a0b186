"""The first-level chapters of ICD-10 (WHO, 2019 edition), DoctorRAG's tag vocabulary.

DoctorRAG tags every knowledge statement and every query with one first-level
ICD-10 category and restricts knowledge retrieval to statements sharing the
query's tag.  The code ranges below are the only values the tagging grammar lets
a model write.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Chapter:
    numeral: str
    code: str  # the code range, which is the tag
    title: str


CHAPTERS: tuple[Chapter, ...] = (
    Chapter("I", "A00-B99", "Certain infectious and parasitic diseases"),
    Chapter("II", "C00-D48", "Neoplasms"),
    Chapter("III", "D50-D89", "Diseases of the blood and blood-forming organs and certain "
                              "disorders involving the immune mechanism"),
    Chapter("IV", "E00-E90", "Endocrine, nutritional and metabolic diseases"),
    Chapter("V", "F00-F99", "Mental and behavioural disorders"),
    Chapter("VI", "G00-G99", "Diseases of the nervous system"),
    Chapter("VII", "H00-H59", "Diseases of the eye and adnexa"),
    Chapter("VIII", "H60-H95", "Diseases of the ear and mastoid process"),
    Chapter("IX", "I00-I99", "Diseases of the circulatory system"),
    Chapter("X", "J00-J99", "Diseases of the respiratory system"),
    Chapter("XI", "K00-K93", "Diseases of the digestive system"),
    Chapter("XII", "L00-L99", "Diseases of the skin and subcutaneous tissue"),
    Chapter("XIII", "M00-M99", "Diseases of the musculoskeletal system and connective tissue"),
    Chapter("XIV", "N00-N99", "Diseases of the genitourinary system"),
    Chapter("XV", "O00-O99", "Pregnancy, childbirth and the puerperium"),
    Chapter("XVI", "P00-P96", "Certain conditions originating in the perinatal period"),
    Chapter("XVII", "Q00-Q99", "Congenital malformations, deformations and chromosomal "
                               "abnormalities"),
    Chapter("XVIII", "R00-R99", "Symptoms, signs and abnormal clinical and laboratory findings, "
                                "not elsewhere classified"),
    Chapter("XIX", "S00-T98", "Injury, poisoning and certain other consequences of external causes"),
    Chapter("XX", "V01-Y98", "External causes of morbidity and mortality"),
    Chapter("XXI", "Z00-Z99", "Factors influencing health status and contact with health services"),
    Chapter("XXII", "U00-U99", "Codes for special purposes"),
)

CODES: tuple[str, ...] = tuple(c.code for c in CHAPTERS)
BY_CODE: dict[str, Chapter] = {c.code: c for c in CHAPTERS}

# The tagging reply: one chapter code, nothing else (the grammar enforces the enum).
TAG_SCHEMA = {"type": "object",
              "properties": {"chapter": {"type": "string", "enum": list(CODES)}},
              "required": ["chapter"], "additionalProperties": False}


def chapter_list() -> str:
    """The list the tagging prompt shows the model, one chapter per line."""
    return "\n".join(f"{c.code}: {c.title}" for c in CHAPTERS)


def title(code: str) -> str:
    chapter = BY_CODE.get(code)
    return chapter.title if chapter else code
