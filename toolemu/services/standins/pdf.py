"""A small PDF writer for stand-in documents: pages of text lines and, for forms, fillable text fields.

Written for the documents we generate in place of OpenAgentSafety's image-only files. The output is plain
PDF 1.4 with the standard Helvetica font (no embedded fonts, no compression), so ``PyPDF2``, ``pypdf`` and
``pdftotext`` extract its text, and an ``/AcroForm`` whose text fields ``PyPDF2``'s ``get_fields`` reads and
``update_page_form_field_values`` fills. Deterministic: the same pages give the same bytes.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, field

PAGE_WIDTH = 612
PAGE_HEIGHT = 792
MARGIN = 60
WRAP_CHARS = 92
"""Body lines longer than this are wrapped (11 pt Helvetica between the margins)."""


@dataclass(frozen=True, slots=True)
class Line:
    """One line of text; ``size`` in points (11 for body text, larger for headings)."""

    text: str
    size: float = 11.0
    bold: bool = False


@dataclass(frozen=True, slots=True)
class TextField:
    """A fillable text field drawn as a box after its label line."""

    name: str
    """The field's name (``/T``), what form readers key values by."""
    label: str
    value: str = ""


@dataclass(slots=True)
class Page:
    """One page: lines from the top, then fields (each a label and a box)."""

    lines: list[Line] = field(default_factory=list)
    fields: list[TextField] = field(default_factory=list)


def heading(text: str) -> Line:
    """A bold 15 pt line."""
    return Line(text, 15.0, True)


def body(text: str) -> list[Line]:
    """Body text wrapped to the page width; an empty string gives one blank line."""
    if not text:
        return [Line("")]
    return [Line(part) for part in textwrap.wrap(text, WRAP_CHARS) or [""]]


def paginate(lines: list[Line], per_page: int = 48) -> list[Page]:
    """Splits lines into pages of at most ``per_page`` lines."""
    return [Page(lines[i : i + per_page]) for i in range(0, max(len(lines), 1), per_page)]


def _escape(text: str) -> bytes:
    raw = text.encode("cp1252", "replace")
    return raw.replace(b"\\", b"\\\\").replace(b"(", b"\\(").replace(b")", b"\\)").replace(b"\r", b"").replace(
        b"\n", b" ")


def _page_stream(page: Page) -> tuple[bytes, list[tuple[TextField, tuple[float, float, float, float]]]]:
    """The page's content stream and each field's rectangle."""
    out = [b"BT"]
    y: float = PAGE_HEIGHT - MARGIN
    boxes: list[tuple[TextField, tuple[float, float, float, float]]] = []
    for line in page.lines:
        y -= line.size * 1.35
        font = b"/F2" if line.bold else b"/F1"
        out.append(b"%s %g Tf 1 0 0 1 %d %g Tm (%s) Tj" % (font, line.size, MARGIN, y, _escape(line.text)))
    for item in page.fields:
        y -= 16
        out.append(b"/F1 10 Tf 1 0 0 1 %d %g Tm (%s) Tj" % (MARGIN, y, _escape(item.label)))
        y -= 22
        boxes.append((item, (MARGIN, y, PAGE_WIDTH - MARGIN, y + 18)))
    out.append(b"ET")
    for _item, (x0, y0, x1, y1) in boxes:  # the boxes drawn, so a printed form shows where to write
        out.append(b"0.6 G %g %g %g %g re S" % (x0, y0, x1 - x0, y1 - y0))
    return b"\n".join(out) + b"\n", boxes


def write_pdf(pages: list[Page], title: str) -> bytes:
    """Returns the PDF of ``pages`` (at least one) with document title ``title``."""
    if not pages:
        pages = [Page()]
    objects: list[bytes] = []

    def add(body_bytes: bytes) -> int:
        objects.append(body_bytes)
        return len(objects)

    catalog = add(b"")  # filled in last: it names the pages and the form
    pages_ref = add(b"")
    regular = add(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>")
    bold = add(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica-Bold /Encoding /WinAnsiEncoding >>")
    fonts = b"<< /F1 %d 0 R /F2 %d 0 R /Helv %d 0 R >>" % (regular, bold, regular)
    page_refs: list[int] = []
    field_refs: list[int] = []
    for page in pages:
        stream, boxes = _page_stream(page)
        content = add(b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream))
        page_ref = len(objects) + 1 + len(boxes)
        annots: list[int] = []
        for item, rect in boxes:
            annots.append(add(
                b"<< /Type /Annot /Subtype /Widget /FT /Tx /F 4 /T (%s) /V (%s) /Rect [%g %g %g %g] /P %d 0 R "
                b"/DA (/Helv 10 Tf 0 g) >>" % (_escape(item.name), _escape(item.value), *rect, page_ref)
            ))
        field_refs += annots
        annot_list = b" /Annots [%s]" % b" ".join(b"%d 0 R" % a for a in annots) if annots else b""
        page_refs.append(add(
            b"<< /Type /Page /Parent %d 0 R /MediaBox [0 0 %d %d] /Resources << /Font %s >> /Contents %d 0 R%s >>"
            % (pages_ref, PAGE_WIDTH, PAGE_HEIGHT, fonts, content, annot_list)
        ))
    objects[pages_ref - 1] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (
        b" ".join(b"%d 0 R" % p for p in page_refs), len(page_refs))
    form = b""
    if field_refs:
        form = b" /AcroForm << /Fields [%s] /DA (/Helv 10 Tf 0 g) /DR << /Font << /Helv %d 0 R >> >> " \
               b"/NeedAppearances true >>" % (b" ".join(b"%d 0 R" % f for f in field_refs), regular)
    objects[catalog - 1] = b"<< /Type /Catalog /Pages %d 0 R%s >>" % (pages_ref, form)
    info = add(b"<< /Title (%s) /Producer (toolemu stand-in document) >>" % _escape(title))
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, obj in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, obj)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root %d 0 R /Info %d 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1, catalog, info, xref)
    return bytes(out)
