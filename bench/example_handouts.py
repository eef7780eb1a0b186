"""The example handouts of docs/examples: three summaries of the layout corpus in three
layouts (a one-page emergency department summary in capitals, a SOAP progress note, a UK
letter to the family doctor), each turned into the handout Lumen gives without a model
(simplify.handout_without_model: the same handout a run shows when the model's rewrite
of the story does not pass its checks), written as PDF and text, and each PDF page
rendered to PNG (pypdfium2) so it can be read as a patient sees it.

    python bench/example_handouts.py [--out docs/examples]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = {"handout-caps-ed-kidney-stone": "30-caps_colon-ed-kidney-stone",
            "handout-soap-cdiff-aki": "11-soap-cdiff-aki",
            "handout-uk-letter-thyrotoxicosis": "09-letter_uk-thyrotoxicosis-af"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "examples")
    parser.add_argument("--pages", type=Path, help="render every PDF page to PNG here")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from desktop_app.core import offline

    offline.activate()
    import tomllib

    from desktop_app.core.glossary.glossary import load_glossary
    from desktop_app.core.pipelines.simplify import handout_without_model
    from desktop_app.export import html_to_pdf

    glossary = load_glossary(None)
    args.out.mkdir(parents=True, exist_ok=True)
    for name, source in EXAMPLES.items():
        path = ROOT / "tests" / "data" / "layouts" / f"{source}.txt"
        facts = path.with_name(f"{source}.facts.toml")
        order = tomllib.loads(facts.read_text(encoding="utf-8")).get("date_order", "")
        handout = handout_without_model(path.read_text(encoding="utf-8"), glossary,
                                        date_order=order)
        (args.out / f"{name}.txt").write_text(handout.to_text(), encoding="utf-8")
        html_to_pdf(handout.to_html(), args.out / f"{name}.pdf")
        print(f"{name}: {args.out / name}.pdf ({len(path.read_text().split())} words of summary)")
        if args.pages:
            import pypdfium2
            from PySide6.QtGui import QImage

            args.pages.mkdir(parents=True, exist_ok=True)
            for number, page in enumerate(pypdfium2.PdfDocument(str(args.out / f"{name}.pdf"))):
                pixels = page.render(scale=1.2, rev_byteorder=True).to_numpy().copy()
                height, width, depth = pixels.shape
                image = QImage(pixels.data, width, height, width * depth,
                               QImage.Format.Format_RGB888 if depth == 3 else QImage.Format.Format_RGBA8888)
                image.save(str(args.pages / f"{name}-{number + 1}.png"))


if __name__ == "__main__":
    main()
