"""The course's website: it builds, and a real headless browser finds every page, plot and link working.

The browser is the distribution's Chromium driven by Selenium through the distribution's
chromedriver; nothing is downloaded. Without them (`apt-get install chromium chromium-driver`)
the browser tests are skipped with that hint; the build tests still run.
Set COURSE_SCREENSHOTS=folder to keep a screenshot of every page.
"""

from __future__ import annotations

import functools
import http.server
import os
import shutil
import sys
import threading
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import urldefrag, urljoin

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import build_site  # noqa: E402

CHAPTERS = sorted((ROOT / "solutions").glob("*.ipynb"))


def _browser_binaries() -> tuple[str, str] | None:
    browser = next((shutil.which(name) for name in ("chromium", "chromium-browser", "google-chrome")
                    if shutil.which(name)), None)
    driver = shutil.which("chromedriver")
    return (browser, driver) if browser and driver else None


needs_browser = pytest.mark.skipif(
    _browser_binaries() is None,
    reason="no Chromium and chromedriver found (apt-get install chromium chromium-driver)",
)


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site") / "site"
    build_site.build(out)
    return out


@pytest.fixture(scope="module")
def server(site):
    handler = functools.partial(_QuietHandler, directory=str(site))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    httpd.shutdown()
    httpd.server_close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - the base class's name
        pass


@pytest.fixture(scope="module")
def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    os.environ.setdefault("SE_OFFLINE", "true")  # never let Selenium look for a browser online
    binary, driver = _browser_binaries()
    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--no-first-run", "--window-size=1280,900", "--force-device-scale-factor=1"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "SEVERE"})
    chrome = webdriver.Chrome(service=Service(executable_path=driver), options=options)
    chrome.set_page_load_timeout(60)
    yield chrome
    chrome.quit()


# --------------------------------------------------------------------------- the build


def test_every_chapter_has_a_page_and_both_notebooks_to_download(site):
    for notebook in CHAPTERS:
        assert (site / f"{notebook.stem}.html").is_file()
        assert (site / "exercises" / notebook.name).is_file()
        assert (site / "solutions" / notebook.name).is_file()
    assert (site / "index.html").is_file()


def test_pages_need_no_network(site):
    for page in site.rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        assert 'src="http' not in text, f"{page.name} loads something from the network"


def test_a_link_to_a_missing_file_stops_the_build():
    chapters = {"03_many_models": build_site.Chapter("03_many_models", "03")}
    with pytest.raises(build_site.SiteError, match="does not exist"):
        build_site.rewrite_links('<a href="nowhere.md">x</a>', "README.md", "index.html", chapters)
    rewritten = build_site.rewrite_links('<a href="../notebooks/03_many_models.ipynb#s2">x</a>',
                                         "instructors/README.md", "instructors/README.html", chapters)
    assert rewritten == '<a href="../03_many_models.html#s2">x</a>'


# --------------------------------------------------------------------------- in a browser


def _page_names(site: Path) -> list[str]:
    return sorted(str(path.relative_to(site)) for path in site.rglob("*.html"))


def _plots_in(notebook: Path) -> int:
    cells = nbformat.read(notebook, as_version=4).cells
    return sum("image/png" in output.get("data", {}) for cell in cells for output in cell.get("outputs", []))


@needs_browser
def test_every_page_loads_with_its_plots_and_no_browser_errors(site, server, browser):
    screenshots = os.environ.get("COURSE_SCREENSHOTS")
    for name in _page_names(site):
        browser.get(server + name)
        assert browser.execute_script("return document.readyState") == "complete", name
        assert browser.title.strip(), f"{name} has no title"
        images = browser.execute_script(
            "return Array.from(document.images).map(i => [i.complete, i.naturalWidth]);")
        assert all(complete and width > 0 for complete, width in images), f"{name}: an image did not render"
        if name.endswith(".html") and (ROOT / "solutions" / name.replace(".html", ".ipynb")).exists():
            expected = _plots_in(ROOT / "solutions" / name.replace(".html", ".ipynb"))
            assert len(images) >= expected, f"{name}: {len(images)} images shown, {expected} plots stored"
        errors = [entry["message"] for entry in browser.get_log("browser") if entry["level"] == "SEVERE"]
        assert not errors, f"{name}: the browser reported {errors}"
        if screenshots:
            Path(screenshots).mkdir(parents=True, exist_ok=True)
            browser.save_screenshot(str(Path(screenshots) / (name.replace("/", "_") + ".png")))


@needs_browser
def test_no_link_is_broken(site, server, browser):
    broken = []
    checked: set[str] = set()
    for name in _page_names(site):
        browser.get(server + name)
        links = browser.execute_script("return Array.from(document.querySelectorAll('a[href]')).map(a => a.href);")
        for link in links:
            target, anchor = urldefrag(urljoin(server + name, link))
            if not target.startswith(server) or (target, anchor) in checked:
                continue  # external sites are not reachable from here
            checked.add((target, anchor))
            try:
                with urllib.request.urlopen(target, timeout=10) as response:
                    body = response.read().decode("utf-8", errors="replace")
            except urllib.error.URLError as error:
                broken.append(f"{name}: {link} ({error})")
                continue
            if anchor and f'id="{anchor}"' not in body and f'name="{anchor}"' not in body:
                broken.append(f"{name}: {link} (no #{anchor} on that page)")
    assert not broken, "\n".join(broken)
    assert len(checked) > len(CHAPTERS)
