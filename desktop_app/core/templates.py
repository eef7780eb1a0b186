"""Lumen's HTML pages are Jinja2 templates: resources/templates/<name>.html.j2 (the
validation report, the handout, the Ask and Knowledge answers, a consultation's
transcript).  The code that calls `render` passes plain values; the templates decide the
markup.  (A model's chat template is another thing: models/chat.py.)

Every value is escaped unless a template marks it safe, so a summary, an answer or a
dataset's text is never read as markup.  A value a template names but is not given is
an error, not an empty string: a renamed field fails a test instead of vanishing from
a page."""

from __future__ import annotations

import functools

import jinja2
from markupsafe import Markup, escape

from .config import resource_root
from .errors import LumenError


def line_breaks(text: str) -> Markup:
    """Text escaped, each of its line breaks a <br>."""
    return escape(text).replace("\n", Markup("<br>"))


@functools.cache
def environment() -> jinja2.Environment:
    pages = jinja2.Environment(
        loader=jinja2.FileSystemLoader(resource_root() / "resources" / "templates"),
        autoescape=True, undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    pages.filters["line_breaks"] = line_breaks
    return pages


def render(name: str, /, **values: object) -> str:
    """The page `name` (a file in resources/templates) filled with `values`."""
    try:
        template = environment().get_template(name)
    except jinja2.TemplateNotFound:
        raise LumenError(f"Lumen's page template {name} is missing.",
                         "Reinstall Lumen; its templates ship with it.") from None
    return template.render(**values)
