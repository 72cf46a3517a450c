"""The Great Expectations Data Docs, served offline and self-contained by the report app
(:mod:`kafkalab.airflow.report_app`, ``/kafkalab/data-docs/``).

GX builds the site (``spark_jobs/_gx.py``, ``UpdateDataDocsAction`` into
``<data_dir>/validation/docs/``) with pages whose ``<script>`` and ``<link>`` tags load jQuery,
Popper, Bootstrap, bootstrap-table (and its filter control), bootstrap-datepicker, Font
Awesome and bootstrap-dark from public CDNs (some unpinned, most without an integrity
hash), plus vega, vega-lite and vega-embed; its logo comes from an S3 bucket. The files on
disk stay as GX wrote them; :func:`offline_page` rewrites a page when it is served:

* every CDN stylesheet and script that :data:`ASSETS` names is replaced by the copy vendored
  in ``data_docs_assets/`` (from the npm registry at the version the URL pins, checked by
  sha256; Popper's and Bootstrap's equal the integrity hashes GX's own tags carry), inlined
  in the page; Font Awesome's solid and regular fonts become ``data:`` URIs;
* vega, vega-lite and vega-embed (``@5``/``@6``: unpinned) are dropped: they draw the charts
  of profiling expectations, and none of the lab's suites has one (a page that had a chart
  would show its table without it); any other external script or stylesheet is dropped too;
* the logo and the favicon become ``data:`` URIs of the site's own ``static/images/`` (a
  local ``<img>``/``<link>`` naming no file of the site: ``data:,``);
  a remaining ``url(https://…)`` in a style becomes ``url(data:,)``.

Why inline: the pages are served with a CSP ``sandbox`` (their scripts run in an opaque
origin, away from the api-server's cookies and APIs), and a sandboxed page's requests for its
own sub-resources carry no SameSite cookie, so each would meet the login
(:mod:`kafkalab.airflow.report_app`). A page is about 1.1 MB; the last pages served are kept
in memory (keyed by path, size and modification time). Nothing is read at import: the
assets on first use.

Re-vendoring (a new GX that pins other versions): ``npm pack <package>@<version>``, copy
the file at ``path`` to ``data_docs_assets/<file>``, and update :data:`ASSETS` (the unit
test checks every hash). Licences: ``data_docs_assets/LICENSES.md``.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import mimetypes
import posixpath
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

__all__ = ["ASSETS", "ASSETS_DIR", "DROPPED_SCRIPTS", "VendoredAsset", "asset_bytes",
           "offline_file", "offline_page", "sha256_of"]

ASSETS_DIR = Path(__file__).with_name("data_docs_assets")
"""The vendored copies (package data)."""


@dataclass(frozen=True)
class VendoredAsset:
    """One vendored file: what it is in the npm registry and which CDN URLs it stands for."""

    file: str
    """Its name in :data:`ASSETS_DIR`."""
    package: str
    """``<npm package>@<version>``."""
    path: str
    """Its path inside that package's tarball."""
    sha256: str
    urls: tuple[str, ...]
    """The CDN URLs of GX's templates it replaces (empty: used by another asset)."""

    @property
    def kind(self) -> str:
        """``script``, ``style`` or ``font``."""
        return {".js": "script", ".css": "style"}.get(Path(self.file).suffix, "font")


_UNPKG = "https://unpkg.com/bootstrap-table@"
_CDNJS = "https://cdnjs.cloudflare.com/ajax/libs/"

ASSETS: tuple[VendoredAsset, ...] = (
    # stylesheets, in the order GX's pages link them
    VendoredAsset("bootstrap-table-1.19.1.min.css", "bootstrap-table@1.19.1",
                  "dist/bootstrap-table.min.css",
                  "643f536f6982af4d7287af23f89ad457dd7e4a82f9c695330a112b0881c30a4a",
                  (f"{_UNPKG}1.19.1/dist/bootstrap-table.min.css",)),
    VendoredAsset("bootstrap-4.3.1.min.css", "bootstrap@4.3.1", "dist/css/bootstrap.min.css",
                  "60b19e5da6a9234ff9220668a5ec1125c157a268513256188ee80f2d2c8d8d36",
                  ("https://maxcdn.bootstrapcdn.com/bootstrap/4.3.1/css/bootstrap.min.css",)),
    VendoredAsset("bootstrap-table-filter-control-1.19.1.min.css", "bootstrap-table@1.19.1",
                  "dist/extensions/filter-control/bootstrap-table-filter-control.min.css",
                  "be4e0c0d11f9319f1ad191f7447a38f755728bbaa10903e469f367441ba79ae2",
                  # GX links 1.19.0's copy of the same two rules
                  (f"{_UNPKG}1.19.0/dist/extensions/filter-control/"
                   "bootstrap-table-filter-control.min.css",
                   f"{_UNPKG}1.19.0/dist/extensions/filter-control/"
                   "bootstrap-table-filter-control.css")),
    VendoredAsset("bootstrap-datepicker-1.9.0.min.css", "bootstrap-datepicker@1.9.0",
                  "dist/css/bootstrap-datepicker.min.css",
                  "b22c8ea45fe905650f8087108b5ed32c1923bcd80d400adc9b0241f18be40208",
                  (f"{_CDNJS}bootstrap-datepicker/1.9.0/css/bootstrap-datepicker.min.css",)),
    VendoredAsset("bootstrap-prefers-dark-1.1.0.min.css", "@forevolve/bootstrap-dark@1.1.0",
                  "dist/css/bootstrap-prefers-dark.min.css",
                  "424070f1f798087a68c110a776228f9eaae5406df143940faa67d77344293ac8",
                  # the minified build of the file GX links
                  ("https://cdn.jsdelivr.net/npm/@forevolve/bootstrap-dark@1.1.0/dist/css/"
                   "bootstrap-prefers-dark.css",)),
    VendoredAsset("fontawesome-free-6.6.0.all.min.css", "@fortawesome/fontawesome-free@6.6.0",
                  "css/all.min.css",
                  "e5e202e3c899507992952533f57b634722b69b34241d271963559d31aa33ef81",
                  (f"{_CDNJS}font-awesome/6.6.0/css/all.min.css",)),
    VendoredAsset("fa-solid-900-6.6.0.woff2", "@fortawesome/fontawesome-free@6.6.0",
                  "webfonts/fa-solid-900.woff2",
                  "1f0189e087fcefbf654fad74a3a06668b782c01353a61d5c0b7f0bf23e33c020", ()),
    VendoredAsset("fa-regular-400-6.6.0.woff2", "@fortawesome/fontawesome-free@6.6.0",
                  "webfonts/fa-regular-400.woff2",
                  "c732f106e91bc618767fbac8e2c7b27e5c736d477b2bb4fb83f597a43198c33c", ()),
    # scripts, in the order GX's pages load them
    VendoredAsset("jquery-3.7.1.min.js", "jquery@3.7.1", "dist/jquery.min.js",
                  "fc9a93dd241f6b045cbff0481cf4e1901becd0e12fb45166a8f17f95823f0b1a",
                  ("https://code.jquery.com/jquery-3.7.1.min.js",)),
    VendoredAsset("popper-1.12.9.min.js", "popper.js@1.12.9", "dist/umd/popper.min.js",
                  "a52f7aa54d7bcaafa056ee0a050262dfc5694ae28dee8b4cac3429af37ff0d66",
                  (f"{_CDNJS}popper.js/1.12.9/umd/popper.min.js",)),
    VendoredAsset("bootstrap-4.3.1.min.js", "bootstrap@4.3.1", "dist/js/bootstrap.min.js",
                  "0a34a87842c539c1f4feec56bba982fd596b73500046a6e6fe38a22260c6577b",
                  ("https://stackpath.bootstrapcdn.com/bootstrap/4.3.1/js/bootstrap.min.js",)),
    VendoredAsset("bootstrap-table-1.19.1.min.js", "bootstrap-table@1.19.1",
                  "dist/bootstrap-table.min.js",
                  "06a571a9beb50bd5ddd60517159775dfec1f3e798fff38fb117ae2350dc9ba9d",
                  (f"{_UNPKG}1.19.1/dist/bootstrap-table.min.js",)),
    VendoredAsset("bootstrap-table-filter-control-1.19.1.min.js", "bootstrap-table@1.19.1",
                  "dist/extensions/filter-control/bootstrap-table-filter-control.min.js",
                  "111f68d31d1bdd714f9503bf5f4e162e0739c363e4ff2feef950d39e78266ffc",
                  (f"{_UNPKG}1.19.1/dist/extensions/filter-control/"
                   "bootstrap-table-filter-control.min.js",)),
    VendoredAsset("bootstrap-datepicker-1.9.0.min.js", "bootstrap-datepicker@1.9.0",
                  "dist/js/bootstrap-datepicker.min.js",
                  "6ea55ea86749ee1fe560fabac6b3effd81b33046fa74dc657e24d41d28110a9f",
                  (f"{_CDNJS}bootstrap-datepicker/1.9.0/js/bootstrap-datepicker.min.js",)),
)
"""Every vendored file (see the module)."""

DROPPED_SCRIPTS = ("https://cdn.jsdelivr.net/npm/vega@5", "https://cdn.jsdelivr.net/npm/vega-lite@5",
                   "https://cdn.jsdelivr.net/npm/vega-embed@6")
"""External scripts of GX's pages that are not vendored (charts; see the module)."""

_FONT_FILES = {"../webfonts/fa-solid-900.woff2": "fa-solid-900-6.6.0.woff2",
               "../webfonts/fa-regular-400.woff2": "fa-regular-400-6.6.0.woff2"}
"""Font Awesome's ``url()`` -> the vendored font; its other fonts (brands, v4 shims, the
``.ttf`` fall-backs) become ``data:,`` (GX uses solid and regular icons only)."""

_GX_LOGO = re.compile(r"https://great-expectations-web-assets\.s3\.[a-z0-9-]+\.amazonaws\.com/"
                      r"(logo-long\.png)(?:\?[^\"']*)?")
_EXTERNAL_SCRIPT = re.compile(
    r"<script\b[^>]*?\bsrc=[\"'](https?://[^\"']+)[\"'][^>]*>\s*</script>", re.I)
_EXTERNAL_LINK = re.compile(r"<link\b[^>]*?\bhref=[\"'](https?://[^\"']+)[\"'][^>]*>", re.I)
_LOCAL_ICON = re.compile(r"(<link\b[^>]*?\bhref=[\"'])([^\"':]+)([\"'])", re.I)
_LOCAL_IMG = re.compile(r"(<img\b[^>]*?\bsrc=[\"'])([^\"':]+)([\"'])", re.I)
_EXTERNAL_URL = re.compile(r"url\(\s*[\"']?https?://[^)]*\)", re.I)
_CSS_URL = re.compile(r"url\(([^)]+)\)")

_BY_URL = {url: a for a in ASSETS for url in a.urls}
_BY_FILE = {a.file: a for a in ASSETS}


def asset_bytes(asset: VendoredAsset) -> bytes:
    """The vendored file's bytes, as they came from the npm registry."""
    return (ASSETS_DIR / asset.file).read_bytes()


def _data_uri(data: bytes, mime: str) -> str:
    return f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"


def _font_url(match: re.Match[str]) -> str:
    ref = match.group(1).strip("\"' ")
    if ref.startswith("data:"):
        return match.group(0)
    name = _FONT_FILES.get(ref)
    if name is None:
        return "url(data:,)"
    return f"url({_data_uri(asset_bytes(_BY_FILE[name]), 'font/woff2')})"


@functools.cache
def _inline(asset_file: str) -> str:
    """The tag that replaces a CDN tag: the asset inline (a ``</script`` or ``</style``
    inside it escaped)."""
    asset = _BY_FILE[asset_file]
    text = asset_bytes(asset).decode("utf-8")
    if asset.kind == "script":
        return "<script>" + re.sub(r"</(script)", r"<\\/\1", text, flags=re.I) + "</script>"
    if asset.file.startswith("fontawesome"):
        text = _CSS_URL.sub(_font_url, text)
    return "<style>" + re.sub(r"</(style)", r"<\\/\1", text, flags=re.I) + "</style>"


def _local_data_uri(root: Path, page_dir: str, ref: str) -> str | None:
    """A ``data:`` URI of the site's file ``ref`` (relative to the page's folder
    ``page_dir`` inside ``root``); None when it leaves the site or names no file."""
    rel = posixpath.normpath(posixpath.join(page_dir, ref.split("?", 1)[0]))
    if rel.startswith(("..", "/")):
        return None
    try:
        site = root.resolve(strict=True)
        target = (site / rel).resolve(strict=True)
    except (OSError, RuntimeError):
        return None
    if not target.is_relative_to(site) or not target.is_file():
        return None
    mime = mimetypes.guess_type(target.name)[0] or "application/octet-stream"
    return _data_uri(target.read_bytes(), mime)


def _replace_tag(match: re.Match[str]) -> str:
    asset = _BY_URL.get(match.group(1))
    return _inline(asset.file) if asset is not None else ""


def offline_page(html: str, root: Path, page: Path) -> str:
    """The Data Docs page ``html`` (the file ``page`` of the site ``root``) with nothing
    loaded from elsewhere (see the module)."""
    try:
        page_dir = page.parent.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        page_dir = "."
    html = _GX_LOGO.sub(r"static/images/\1" if page_dir == "." else
                        posixpath.relpath("static/images", page_dir) + r"/\1", html)

    def local(m: re.Match[str]) -> str:  # a file the site lacks (GX's favicon path) loads nothing
        uri = _local_data_uri(root, page_dir, m.group(2)) or "data:,"
        return f"{m.group(1)}{uri}{m.group(3)}"

    html = _EXTERNAL_SCRIPT.sub(_replace_tag, html)
    html = _EXTERNAL_LINK.sub(_replace_tag, html)
    html = _LOCAL_ICON.sub(local, html)
    html = _LOCAL_IMG.sub(local, html)
    return _EXTERNAL_URL.sub("url(data:,)", html)


_CACHE_SIZE = 8
_cache: OrderedDict[tuple[str, int, int], bytes] = OrderedDict()
_cache_lock = threading.Lock()


def offline_file(root: Path, page: Path) -> bytes:
    """:func:`offline_page` of the file ``page`` as UTF-8, from a small cache of the last
    pages served (keyed by path, size and modification time)."""
    stat = page.stat()
    key = (str(page), stat.st_size, stat.st_mtime_ns)
    with _cache_lock:
        if key in _cache:
            _cache.move_to_end(key)
            return _cache[key]
    body = offline_page(page.read_text(encoding="utf-8", errors="replace"), root,
                        page).encode("utf-8")
    with _cache_lock:
        _cache[key] = body
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return body


def sha256_of(asset: VendoredAsset) -> str:
    """The sha256 of the vendored file (compared with :attr:`VendoredAsset.sha256`)."""
    return hashlib.sha256(asset_bytes(asset)).hexdigest()
