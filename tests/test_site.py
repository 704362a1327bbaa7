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
import time
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


def test_every_chapter_has_a_page_both_notebooks_to_download_and_slides(site):
    notes = (site / "instructors" / "chapters.html").read_text(encoding="utf-8")
    for notebook in CHAPTERS:
        assert (site / f"{notebook.stem}.html").is_file()
        assert (site / "exercises" / notebook.name).is_file()
        assert (site / "solutions" / notebook.name).is_file()
        assert (site / "slides" / f"{notebook.stem}.html").is_file()
        page = (site / f"{notebook.stem}.html").read_text(encoding="utf-8")
        assert f'href="slides/{notebook.stem}.html"' in page, f"{notebook.stem}: no link to its slides"
        assert f'href="../slides/{notebook.stem}.html"' in notes, f"the kit's notes do not link {notebook.stem}'s slides"
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


def test_each_page_has_one_main_landmark_and_no_solution_markers(site):
    for page in site.rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        assert text.count("<main") == 1, f"{page.name}: {text.count('<main')} <main> elements"
        if (ROOT / "solutions" / page.name.replace(".html", ".ipynb")).exists():  # (CONTRIBUTING explains them)
            assert "BEGIN SOLUTION" not in text and "END SOLUTION" not in text, f"{page.name} shows nbgrader's markers"


def test_search_snippets_of_code_read_as_code():
    highlighted = ('<div class="highlight"><pre><span class="n">ckpt</span> <span class="o">=</span> '
                   '<span class="n">tf</span><span class="o">.</span><span class="n">train</span><span class="o">.'
                   '</span><span class="n">Checkpoint</span><span class="p">(</span><span class="n">model</span>'
                   '<span class="o">=</span><span class="n">m</span><span class="p">)</span></pre></div><p>Then</p>')
    assert build_site._plain(highlighted) == "ckpt = tf.train.Checkpoint(model=m) Then"


URL = "https://github.com/example-org/tf-model-state-course"


def test_the_site_follows_the_course_address(site):
    chapters = [build_site.Chapter(path.stem, path.stem) for path in CHAPTERS]
    chapter = chapters[3]
    nav = build_site.navigation(chapter.page, chapters, chapter, URL)
    ref = build_site.course_address.release_ref()
    assert (f'href="https://colab.research.google.com/github/example-org/tf-model-state-course/blob/{ref}/'
            f'notebooks/{chapter.stem}.ipynb">Open in Colab</a>') in nav
    assert (f'href="https://mybinder.org/v2/gh/example-org/tf-model-state-course/{ref}'
            f'?urlpath=lab/tree/notebooks/{chapter.stem}.ipynb">Binder</a>') in nav  # this chapter, not 00
    assert f'href="{URL}">Source</a>' in nav
    assert 'href="https://' not in build_site.navigation(chapter.page, chapters, chapter, None)
    text_nav = build_site.navigation("index.html", chapters, None, URL)
    assert f'href="{URL}">Source</a>' in text_nav and "Open in Colab" not in text_nav
    # The built site uses this checkout's setting, whichever it is.
    built = (site / chapter.page).read_text(encoding="utf-8")
    titled = [build_site.Chapter(path.stem, build_site.chapter_title(nbformat.read(path, as_version=4), path.stem))
              for path in CHAPTERS]
    assert build_site.navigation(chapter.page, titled, titled[3], build_site.course_address.repository()) in built


# --------------------------------------------------------------------------- in a browser


def _page_names(site: Path) -> list[str]:
    """The site's pages, without the slides (a frame of their own: tests/test_slides.py)."""
    return sorted(str(path.relative_to(site)) for path in site.rglob("*.html") if path.parent.name != "slides")


def _plots_in(notebook: Path) -> int:
    cells = nbformat.read(notebook, as_version=4).cells
    return sum("image/png" in output.get("data", {}) for cell in cells for output in cell.get("outputs", []))


@needs_browser
def test_every_page_loads_with_its_plots_and_no_browser_errors(site, server, browser):
    screenshots = os.environ.get("COURSE_SCREENSHOTS")
    for name in _page_names(site):
        browser.get(server + name)
        # get() can return before a long page (stored plots) has finished loading on a busy machine.
        waited = time.monotonic()
        while browser.execute_script("return document.readyState") != "complete" and time.monotonic() - waited < 60:
            time.sleep(0.1)
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


# --------------------------------------------------------------------------- reading it like a book

PHONE, DESKTOP = (390, 844), (1280, 900)
CHAPTER = CHAPTERS[3].stem  # a long chapter with several exercises


def _viewport(browser, size: tuple[int, int], dark: bool = False) -> None:
    width, height = size
    browser.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
        "width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 600})
    browser.execute_cdp_cmd("Emulation.setEmulatedMedia", {
        "features": [{"name": "prefers-color-scheme", "value": "dark" if dark else "light"}]})


def _screenshot(browser, name: str) -> None:
    folder = os.environ.get("COURSE_SCREENSHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        browser.save_screenshot(str(Path(folder) / f"{name}.png"))


@pytest.fixture
def sized(browser):
    yield browser
    _viewport(browser, DESKTOP)
    browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


def test_search_index_covers_every_page(site):
    text = (site / "search-index.js").read_text(encoding="utf-8")
    assert text.startswith("window.COURSE_INDEX = ")
    index = __import__("json").loads(text[len("window.COURSE_INDEX = "):].rstrip().rstrip(";"))
    pages = {entry["p"].split("#")[0] for entry in index}
    assert pages == set(_page_names(site))
    assert any("shared_name" in entry["x"] for entry in index)


@needs_browser
def test_every_page_fits_a_phone_with_navigation_not_pinned(site, server, sized):
    _viewport(sized, PHONE)
    for name in _page_names(site):
        sized.get(server + name)
        # Not window.innerWidth: on a phone, a page wider than the screen widens the layout viewport too.
        width = sized.execute_script("return document.documentElement.scrollWidth;")
        assert width <= PHONE[0], f"{name} is {width} px wide on a {PHONE[0]} px screen"
        position = sized.execute_script(
            "return getComputedStyle(document.querySelector('.course-nav')).position;")
        assert position in {"static", "relative"}, f"{name}: the navigation stays pinned on a phone ({position})"
        wrapping = sized.execute_script(
            "return Array.from(document.querySelectorAll('pre')).map(p => getComputedStyle(p).whiteSpace)"
            ".filter(w => w !== 'pre');")
        assert not wrapping, f"{name}: code or output wraps instead of scrolling ({set(wrapping)})"
        tables = sized.execute_script(
            "return Array.from(document.querySelectorAll('table')).map(t => getComputedStyle(t).overflowX);")
        assert all(overflow == "auto" for overflow in tables), f"{name}: a table does not scroll sideways"
        cramped = sized.execute_script(
            "return Array.from(document.querySelectorAll('pre')).filter(p => p.scrollWidth > p.clientWidth)"
            ".map(p => parseFloat(getComputedStyle(p).paddingBottom)).filter(b => b < 10);")
        assert not cramped, f"{name}: a scrolling output has no room under its last line for the scrollbar"
        if name in {"index.html", f"{CHAPTER}.html"}:
            _screenshot(sized, f"phone-{name}")
    sized.get(server + f"{CHAPTER}.html")
    sized.execute_script("window.scrollTo(0, 2500);")
    on_screen = sized.execute_script("return document.querySelector('.course-nav').getBoundingClientRect().bottom;")
    assert on_screen < 0, "scrolled down, the navigation should have scrolled away"
    _screenshot(sized, f"phone-{CHAPTER}-scrolled")


@needs_browser
def test_one_navigation_style_pinned_on_a_desktop(site, server, sized):
    _viewport(sized, DESKTOP)
    styles = {}
    for name in ["index.html", f"{CHAPTER}.html", "instructors/cheatsheet.html"]:
        sized.get(server + name)
        styles[name] = sized.execute_script(
            "const nav = document.querySelector('.course-nav'), s = getComputedStyle(nav),"
            " box = nav.getBoundingClientRect();"
            "return [s.position, s.fontFamily, s.fontSize, s.backgroundColor, box.left, box.top,"
            " Math.round(box.width) === document.documentElement.clientWidth];")
        _screenshot(sized, f"desktop-{name.replace('/', '_')}")
    assert len({tuple(style) for style in styles.values()}) == 1, styles
    assert styles["index.html"][0] == "sticky" and styles["index.html"][4:] == [0, 0, True]


@needs_browser
def test_a_chapter_has_contents_and_folded_solutions(site, server, sized):
    _viewport(sized, DESKTOP)
    sized.get(server + f"{CHAPTER}.html")
    sections = sized.execute_script("return Array.from(document.querySelectorAll('h2[id]')).map(h => h.id);")
    links = sized.execute_script(
        "return Array.from(document.querySelectorAll('.course-toc a')).map(a => a.getAttribute('href'));")
    assert links == [f"#{section}" for section in sections] and len(links) >= 4
    solutions = nbformat.read(ROOT / "solutions" / f"{CHAPTER}.ipynb", as_version=4).cells
    expected = sum(cell.cell_type == "code" and "### BEGIN SOLUTION" in cell.source for cell in solutions)
    folds = sized.find_elements("css selector", "details.course-solution")
    assert len(folds) == expected >= 3
    assert not any(fold.get_attribute("open") for fold in folds)
    code = folds[0].find_element("css selector", ".jp-Cell")
    assert not code.is_displayed(), "a solution shows before it is opened"
    sized.execute_script("arguments[0].scrollIntoView({block: 'center'});", folds[0])
    folds[0].find_element("css selector", "summary").click()
    assert folds[0].get_attribute("open") is not None and code.is_displayed()
    _screenshot(sized, f"desktop-{CHAPTER}-solution-open")


def _landed_below_the_navigation(browser) -> tuple[float, float]:
    """The top of the heading the URL's #anchor names, and the bottom of the pinned bar."""
    return tuple(browser.execute_script(
        "const id = decodeURIComponent(location.hash.slice(1)), h = document.getElementById(id);"
        "return [h.getBoundingClientRect().top, document.querySelector('.course-nav').getBoundingClientRect().bottom];"))


@needs_browser
def test_a_contents_link_or_search_result_lands_below_the_pinned_navigation(site, server, sized):
    _viewport(sized, DESKTOP)
    sized.get(server + f"{CHAPTER}.html")
    links = sized.find_elements("css selector", ".course-toc a")
    sized.execute_script("arguments[0].scrollIntoView({block: 'center'});", links[4])
    links[4].click()
    heading, nav = _landed_below_the_navigation(sized)
    assert sized.execute_script("return window.scrollY;") > 0
    assert heading >= nav, f"the heading is hidden under the navigation ({heading} < {nav})"
    _screenshot(sized, f"desktop-{CHAPTER}-contents-jump")
    sized.get(server + "index.html")
    sized.find_element("id", "course-search").send_keys("safe_mode")
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(sized, 10).until(lambda b: b.find_elements("css selector", "#course-results a"))
    result = next(a for a in sized.find_elements("css selector", "#course-results a") if "#" in a.get_attribute("href"))
    result.click()
    WebDriverWait(sized, 10).until(lambda b: "#" in b.current_url and b.execute_script(
        "return document.readyState") == "complete")
    heading, nav = _landed_below_the_navigation(sized)
    assert heading >= nav, f"{sized.current_url}: the heading is hidden under the navigation ({heading} < {nav})"
    _screenshot(sized, "desktop-search-landed")


@needs_browser
def test_the_cheat_sheet_tables_fit_a_desktop_page(site, server, sized):
    _viewport(sized, DESKTOP)
    sized.get(server + "instructors/cheatsheet.html")
    widths = sized.execute_script(
        "return Array.from(document.querySelectorAll('table')).map(t => [t.scrollWidth, t.clientWidth]);")
    assert widths and all(scroll <= client for scroll, client in widths), f"a table scrolls sideways: {widths}"
    _screenshot(sized, "desktop-cheatsheet")


@needs_browser
def test_search_finds_a_section_from_any_page_offline(site, server, sized):
    _viewport(sized, PHONE)
    for start in ["index.html", "instructors/setup.html"]:
        sized.get(server + start)
        box = sized.find_element("id", "course-search")
        box.send_keys("shared_name trap")
        sized.implicitly_wait(0)
        from selenium.webdriver.support.ui import WebDriverWait

        WebDriverWait(sized, 10).until(lambda b: b.execute_script(
            "return !document.getElementById('course-results').hidden;"))
        results = sized.find_elements("css selector", "#course-results a")
        assert results, f"searching from {start} found nothing"
        assert any("03_many_models.html#" in result.get_attribute("href") for result in results)
        left, right, inner = sized.execute_script(
            "const box = document.getElementById('course-results').getBoundingClientRect();"
            "return [box.left, box.right, window.innerWidth];")
        assert 0 <= left and right <= inner, f"the results stick out of the screen ({left}..{right} of {inner})"
        _screenshot(sized, f"phone-search-from-{start.replace('/', '_')}")
        results[0].click()
        assert sized.current_url.startswith(server) and "#" in sized.current_url
    errors = [entry["message"] for entry in sized.get_log("browser") if entry["level"] == "SEVERE"]
    assert not errors, errors


def _background_lightness(browser) -> float:
    rgb = browser.execute_script("return getComputedStyle(document.body).backgroundColor;")
    red, green, blue = (int(part) for part in rgb[rgb.index("(") + 1: rgb.index(")")].split(",")[:3])
    return (red + green + blue) / (3 * 255)


_CONTRAST = """
function rgb(s) { return s.match(/[\\d.]+/g).map(Number); }
function lum(c) { const a = c.slice(0, 3).map(v => { v /= 255;
  return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); });
  return 0.2126 * a[0] + 0.7152 * a[1] + 0.0722 * a[2]; }
function background(e) { while (e) { const c = rgb(getComputedStyle(e).backgroundColor);
  if (c.length < 4 || c[3] > 0) return c; e = e.parentElement; } return [255, 255, 255]; }
const worst = {};
const kinds = {"striped table cell": "tbody tr:nth-child(even) td", "table cell": "td", "table heading": "th",
  "code punctuation": ".highlight .p", "code": "pre span", "text": "p", "prompt": ".jp-InputPrompt"};
for (const [kind, selector] of Object.entries(kinds)) {
  document.querySelectorAll(selector).forEach(e => {
    if (!e.textContent.trim() || !e.getClientRects().length) return;
    const back = background(e), seen = Number(getComputedStyle(e).opacity);  // a faded text is seen blended
    const f = lum(rgb(getComputedStyle(e).color).slice(0, 3).map((c, i) => c * seen + back[i] * (1 - seen)));
    const g = lum(back);
    const ratio = (Math.max(f, g) + 0.05) / (Math.min(f, g) + 0.05);
    if (!(kind in worst) || ratio < worst[kind][0]) worst[kind] = [Math.round(ratio * 100) / 100, e.textContent.slice(0, 30)];
  });
}
return worst;
"""


def _lowest_contrast(browser) -> dict[str, list]:
    """For each kind of text on the page (table cells, striped rows, code punctuation...), its lowest contrast."""
    return browser.execute_script(_CONTRAST)


@needs_browser
def test_dark_mode_follows_the_system_setting(site, server, sized):
    for name in ["index.html", f"{CHAPTER}.html"]:
        _viewport(sized, DESKTOP, dark=False)
        sized.get(server + name)
        assert _background_lightness(sized) > 0.8, f"{name} is not light in light mode"
        _viewport(sized, DESKTOP, dark=True)
        sized.get(server + name)
        assert _background_lightness(sized) < 0.2, f"{name} is not dark in dark mode"
        text = sized.execute_script(
            "const p = document.querySelector('main p, .jp-RenderedMarkdown p'); return getComputedStyle(p).color;")
        assert sum(int(x) for x in text[text.index("(") + 1: text.index(")")].split(",")[:3]) > 3 * 150, text
        _screenshot(sized, f"dark-{name}")
    for dark in (False, True):
        _viewport(sized, DESKTOP, dark=dark)
        for name in ["index.html", f"{CHAPTER}.html"]:
            sized.get(server + name)
            worst = _lowest_contrast(sized)
            if name != "index.html":
                assert {"striped table cell", "code punctuation"} <= worst.keys(), worst
            assert worst and all(ratio >= 4.5 for ratio, *_ in worst.values()), \
                f"{name} ({'dark' if dark else 'light'}): text below WCAG AA contrast 4.5: {worst}"
    _viewport(sized, PHONE, dark=True)
    sized.get(server + f"{CHAPTER}.html")
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(sized, 60).until(lambda b: b.find_elements("css selector", "details.course-solution"))
    sized.execute_script("document.querySelector('details.course-solution').open = true;"
                         "document.querySelector('details.course-solution').scrollIntoView();")
    _screenshot(sized, f"dark-phone-{CHAPTER}-solution")


_HEADER = """
const nav = document.querySelector('.course-nav'), input = document.querySelector('#course-search');
const links = Array.from(nav.querySelectorAll('.course-links > a'));
const tops = links.map(a => a.getBoundingClientRect().top);
const ctx = document.createElement('canvas').getContext('2d'); ctx.font = getComputedStyle(input).font;
const room = input.clientWidth - parseFloat(getComputedStyle(input).paddingLeft) - parseFloat(getComputedStyle(input).paddingRight);
return [nav.getBoundingClientRect().height, innerHeight, Math.max(...tops) - Math.min(...tops),
        ctx.measureText(input.placeholder).width <= room];
"""


_NAV_ROW = """
const row = document.querySelector('.course-links'), style = getComputedStyle(row);
const mask = style.maskImage || style.webkitMaskImage || 'none';
const overflows = row.scrollWidth > row.clientWidth + 1;
row.scrollLeft = row.scrollWidth;
const links = Array.from(row.querySelectorAll(':scope > a'));
const last = links[links.length - 1].getBoundingClientRect(), box = row.getBoundingClientRect();
return [overflows, mask, box.right - last.right, links[links.length - 1].textContent];
"""


@needs_browser
@pytest.mark.parametrize("dark", [False, True], ids=["light", "dark"])
def test_on_a_phone_the_navigation_row_fades_at_its_edge_and_its_last_link_scrolls_clear(site, server, sized, dark):
    """Issue 34's review: at 390 px the row scrolled sideways with no hint and cut "Instructors" to "In"."""
    for name in ["index.html", f"{CHAPTER}.html", "instructors/glossary.html"]:
        _viewport(sized, PHONE, dark=dark)
        sized.get(server + name)
        overflows, mask, room, last = sized.execute_script(_NAV_ROW)
        if overflows:
            assert "gradient" in mask, f"{name}: the row scrolls sideways with no fade at its edge"
        assert room >= 2.5 * 16 - 1, f"{name}: scrolled to its end, {last!r} is still under the fade ({room:.0f} px)"
        _screenshot(sized, f"nav-phone-end-{'dark' if dark else 'light'}-{name.replace('/', '_')}")
        _viewport(sized, DESKTOP, dark=dark)
        sized.get(server + name)
        overflows, mask, *_ = sized.execute_script(_NAV_ROW)
        assert not overflows and mask == "none", f"{name}: at 1280 px the row neither scrolls nor fades"


@needs_browser
@pytest.mark.parametrize("dark", [False, True], ids=["light", "dark"])
def test_the_header_is_small_on_a_phone_and_one_row_on_a_desktop(site, server, sized, dark):
    """Issue 34: on a phone the bar took a quarter of the screen and cut the search's placeholder;
    at 1280 px it wrapped to two pinned rows, and the contents box sat left of the code cells."""
    for name in ["index.html", f"{CHAPTER}.html", "instructors/glossary.html"]:
        _viewport(sized, PHONE, dark=dark)
        sized.get(server + name)
        height, screen, _, placeholder = sized.execute_script(_HEADER)
        assert height <= 0.12 * screen, f"{name}: the bar is {height:.0f} px of a {screen} px phone screen"
        assert placeholder, f"{name}: the search box cuts its placeholder on a phone"
        _screenshot(sized, f"header-phone-{'dark' if dark else 'light'}-{name.replace('/', '_')}")
        _viewport(sized, DESKTOP, dark=dark)
        sized.get(server + name)
        height, _, spread, placeholder = sized.execute_script(_HEADER)
        assert spread <= 2 and height < 60, f"{name}: the bar wraps to two rows at 1280 px ({height:.0f} px)"
        assert placeholder, f"{name}: the search box cuts its placeholder"
        _screenshot(sized, f"header-desktop-{'dark' if dark else 'light'}-{name.replace('/', '_')}")
    sized.get(server + f"{CHAPTER}.html")
    contents, code = sized.execute_script(
        "return [document.querySelector('.course-toc details').getBoundingClientRect().left,"
        " document.querySelector('.jp-CodeCell .jp-InputArea-editor').getBoundingClientRect().left];")
    assert abs(contents - code) <= 1, f"the contents box ({contents}) is not aligned with the code cells ({code})"
