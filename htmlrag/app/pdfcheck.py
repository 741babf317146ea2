"""Checks on an uploaded PDF before it is stored: a small file must not cost unbounded memory or time later.

Refused (with the file's name and the limit): a file MuPDF cannot open, an encrypted one (the app has no
password field), more than ``max_pages`` pages, a Flate-compressed stream that expands past ``max_stream_bytes``
(or all of them past ``max_total_bytes``: a decompression bomb; counted by inflating in steps, never holding
more than the limit), and an image whose declared size is over ``max_image_pixels`` (what MuPDF would allocate
to decode it). Content is counted **per use**: a page's content streams are laid out once per page that
draws them, so a stream shared by many pages counts once for each (25 KB of PDF whose 20 pages share one
7 MB stream took 221 s to parse, and held the server); a page's content past ``max_page_content_bytes``, or
all pages' past ``max_content_bytes``, is refused (the shared 10-Q filings draw 0.02-0.24 MB a page, 0.8-7.7 MB
a filing). Huge pages are allowed: page images are rendered at a zoom that keeps them under a pixel cap
(:func:`htmlrag.app.pdfview.render_page_png`).

Form XObjects count per use too: a form is laid out each time a content stream draws it (``/Fm0 Do``), with the
forms it draws in turn, so a page of 3 KB whose form draws the next one 4 times, 12 levels deep, lays out 4^12
copies (depth 9 already took 3.3 s to read one page's text); such a page draws more than the per-page limit and
is refused, and so is a form that draws itself.

Not inspected: streams under other expanding filters (``LZWDecode``, ``RunLengthDecode``; bounded ratios, rare in
current PDFs); images drawn many times (their pixels are checked once; the parse does not decode them).
"""

from __future__ import annotations

import re
import zlib

from htmlrag.app.uploads import UploadError

_STEP = 1 << 20
_FLATE = ("/FlateDecode", "/Fl")


def _mb(n: float) -> str:
    return f"{n / 1e6:.0f} MB"


def _filters(doc: object, xref: int) -> list[str]:
    kind, value = doc.xref_get_key(xref, "Filter")  # type: ignore[attr-defined]
    if kind == "null" or not value:
        return []
    return re.findall(r"/[A-Za-z0-9]+", value)


def inflate_capped(data: bytes, cap: int) -> bytes | None:
    """``data`` inflated (zlib or raw deflate), or None once the output passes ``cap`` bytes."""
    d = zlib.decompressobj(zlib.MAX_WBITS | 32)  # zlib or gzip header
    try:
        out = [d.decompress(data, _STEP)]
        size = len(out[0])
        while d.unconsumed_tail and size <= cap:
            out.append(d.decompress(d.unconsumed_tail, _STEP))
            size += len(out[-1])
    except zlib.error:
        return b""  # broken stream: MuPDF reads what it can; nothing to fear from its size
    return None if size > cap else b"".join(out)


def stream_size(doc: object, xref: int, cap: int) -> int | None:
    """Bytes a stream expands to through its leading Flate filters (None: over ``cap``)."""
    data = doc.xref_stream_raw(xref)  # type: ignore[attr-defined]
    for f in _filters(doc, xref):
        if f not in _FLATE:
            break
        data = inflate_capped(data, cap)
        if data is None:
            return None
    return len(data)


def _image_pixels(doc: object, xref: int) -> int:
    dims = []
    for key in ("Width", "Height"):
        kind, value = doc.xref_get_key(xref, key)  # type: ignore[attr-defined]
        dims.append(int(value) if kind == "int" and value.lstrip("-").isdigit() else 0)
    return max(dims[0], 0) * max(dims[1], 0)


_DO = re.compile(rb"/([^\s/<>\[\]()%{}]+)\s*Do\b")


class _Draws:
    """Bytes laid out to draw a page: its content streams and, per ``Do``, the form XObjects they draw, each as
    often as it is drawn, counted up to ``cap`` (then ``cap + 1``: the sum stops growing where it is refused)."""

    def __init__(self, doc: object, sizes: dict[int, int], cap: int) -> None:
        self.doc, self.sizes, self.cap = doc, sizes, cap
        self.forms: dict[int, int] = {}  # form xref -> bytes laid out to draw it once
        self.names: dict[tuple[int, str], int] = {}  # (invoker xref, 0 for the page; name) -> xobject xref
        self.stopped = False

    def _calls(self, xref: int) -> dict[str, int]:
        counts: dict[str, int] = {}
        try:
            data = self.doc.xref_stream(xref) or b""  # type: ignore[attr-defined]
        except Exception:  # a broken object: MuPDF reads what it can, nothing to count (the build reports it)
            return counts
        for m in _DO.finditer(data):
            name = m.group(1).decode("latin-1")
            counts[name] = counts.get(name, 0) + 1
        return counts

    def _drawn(self, invoker: int, calls: dict[str, int], within: tuple[int, ...]) -> int:
        total = 0
        for name, n in calls.items():
            child = self.names.get((invoker, name))
            if child is not None and self._is_form(child):
                total = min(total + n * self.form(child, within), self.cap + 1)
        return total

    def _is_form(self, xref: int) -> bool:
        try:
            return self.doc.xref_get_key(xref, "Subtype") == ("name", "/Form")  # type: ignore[attr-defined]
        except Exception:  # a broken object draws nothing
            return False

    def form(self, xref: int, within: tuple[int, ...] = ()) -> int:
        """Bytes laid out to draw form ``xref`` once (``within``: the forms drawing it; a form among them draws
        itself, which is refused)."""
        if xref in within:
            raise RecursionError(xref)
        if xref not in self.forms:
            cost = self.sizes.get(xref, 0) + self._drawn(xref, self._calls(xref), (*within, xref))
            self.forms[xref] = min(cost, self.cap + 1)
        return self.forms[xref]

    def page(self, page: object) -> int:
        try:
            xobjects = page.get_xobjects()  # type: ignore[attr-defined]
        except Exception:  # a broken resources dictionary: nothing drawn from it can be counted (nor laid out)
            xobjects = []
        for xref, name, invoker, _ in xobjects:
            self.names[(invoker, name)] = xref
        contents = page.get_contents()  # type: ignore[attr-defined]
        own = sum(self.sizes.get(x, 0) for x in contents)
        calls: dict[str, int] = {}
        for x in contents:
            for name, n in self._calls(x).items():
                calls[name] = calls.get(name, 0) + n
        drawn = self._drawn(0, calls, ())
        self.stopped = drawn > self.cap  # the count stopped past the limit: the page draws more than it says
        return own + drawn


def check_pdf(name: str, data: bytes, *, max_pages: int, max_stream_bytes: int, max_total_bytes: int,
              max_image_pixels: int, max_page_content_bytes: int = 16_000_000,
              max_content_bytes: int = 128_000_000) -> int:
    """Refuse a PDF that would cost unbounded memory or time (see the module docstring); returns its pages.

    Raises:
        UploadError: naming the file, what is over which limit (413), or why it cannot be read (415).
    """
    import pymupdf

    try:
        doc = pymupdf.open(stream=data, filetype="pdf")
    except Exception as exc:
        raise UploadError(f"{name}: cannot be opened as a PDF ({exc})") from exc
    with doc:
        if doc.needs_pass:
            raise UploadError(f"{name}: encrypted PDF (a password is needed, and the app has none to give)")
        if doc.page_count > max_pages:
            raise UploadError(f"{name}: {doc.page_count:,} pages; at most {max_pages:,} per PDF", 413)
        if doc.page_count == 0:
            raise UploadError(f"{name}: the PDF has no pages")
        total = 0
        sizes: dict[int, int] = {}
        for xref in range(1, doc.xref_length()):
            if not doc.xref_is_stream(xref):
                continue
            if doc.xref_get_key(xref, "Subtype") == ("name", "/Image"):
                px = _image_pixels(doc, xref)
                if px > max_image_pixels:
                    raise UploadError(f"{name}: an image of {px / 1e6:,.0f} megapixels (object {xref}); at most "
                                      f"{max_image_pixels / 1e6:,.0f}", 413)
            size = stream_size(doc, xref, max_stream_bytes)
            if size is None:
                raise UploadError(f"{name}: a compressed stream (object {xref}) expands to more than "
                                  f"{_mb(max_stream_bytes)} (a decompression bomb?)", 413)
            sizes[xref] = size
            total += size
            if total > max_total_bytes:
                raise UploadError(f"{name}: its compressed streams expand to more than {_mb(max_total_bytes)}", 413)
        used = 0
        draws = _Draws(doc, sizes, max_page_content_bytes)
        for page in doc:
            try:
                content = draws.page(page)
            except RecursionError as exc:
                raise UploadError(f"{name}: page {page.number + 1} draws a form (object {exc.args[0]}) that draws "
                                  "itself", 413) from None
            if content > max_page_content_bytes:
                amount = f"more than {_mb(content)}" if draws.stopped else _mb(content)
                raise UploadError(f"{name}: page {page.number + 1} draws {amount} of content; at most "
                                  f"{_mb(max_page_content_bytes)} per page (a form counts each time it is drawn)", 413)
            used += content
            if used > max_content_bytes:
                raise UploadError(f"{name}: its pages draw more than {_mb(max_content_bytes)} of content (a stream "
                                  "shared by many pages counts once per page)", 413)
        return doc.page_count
