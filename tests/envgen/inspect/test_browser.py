"""The inspector's site in a real browser: headless Chromium (Debian's package) driven by Playwright.

The pages load from ``file://`` with no console error, the index's filters really narrow its table and
its headers sort it, an environment page's mutation filter works, and a spec's HTML never runs. Each test
saves a screenshot under its tmp folder and, when ``ENVWRIGHT_ARTIFACTS`` names a folder, there too.
No page is wider than a 375 px phone, even with a spec's 3,000-character tokens; a spec's bidi override
cannot reverse the inspector's own text; filters, "show all" and the sort survive Back; headers sort from
the keyboard and stick. The tests skip, saying why, only when no browser can be had (``apt-get install
chromium``; a browser elsewhere: ``ENVWRIGHT_CHROMIUM=/path/to/chrome``).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.envgen.inspect.conftest import RLO, env_ids

ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def chromium_path() -> str | None:
    """The Chromium to drive: $ENVWRIGHT_CHROMIUM, else a chromium on PATH or Debian's."""
    for candidate in (os.environ.get("ENVWRIGHT_CHROMIUM"), shutil.which("chromium"),
                      shutil.which("chromium-browser"), "/usr/bin/chromium"):
        if candidate and Path(candidate).is_file():
            return candidate
    return None


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    sync_api = pytest.importorskip("playwright.sync_api", reason="Playwright is not installed (pip install playwright)")
    exe = chromium_path()
    if exe is None:
        pytest.skip("no Chromium here: apt-get install chromium (or set ENVWRIGHT_CHROMIUM to a Chrome binary)")
    with sync_api.sync_playwright() as p:
        try:
            b = p.chromium.launch(executable_path=exe, args=ARGS)
        except Exception as e:  # a browser that does not start is no browser
            pytest.skip(f"Chromium at {exe} does not start: {e}")
        yield b
        b.close()


class Page:
    """A page with its console errors, uncaught exceptions and dialogs collected."""

    def __init__(self, browser: Any, width: int = 1400, height: int = 900):
        self.page = browser.new_page(viewport={"width": width, "height": height})
        self.errors: list[str] = []
        self.dialogs: list[str] = []
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("dialog", self._dialog)

    def _dialog(self, dialog: Any) -> None:
        self.dialogs.append(dialog.message)
        dialog.dismiss()

    def open(self, path: Path) -> Any:
        self.page.goto(path.resolve().as_uri())
        self.page.wait_for_load_state("load")
        return self.page

    def shot(self, tmp_path: Path, name: str, *, full: bool = False) -> Path:
        out = tmp_path / name
        self.page.screenshot(path=str(out), full_page=full)
        artifacts = os.environ.get("ENVWRIGHT_ARTIFACTS")
        if artifacts:
            Path(artifacts).mkdir(parents=True, exist_ok=True)
            shutil.copy(out, Path(artifacts) / name)
        assert out.stat().st_size > 10_000
        return out

    def close(self) -> None:
        self.page.close()


def _visible_rows(page: Any, table: str) -> int:
    return int(page.evaluate(f"document.querySelectorAll('#{table} tbody tr:not([hidden])').length"))


def test_index_loads_filters_and_sorts(browser: Any, site: Path, tmp_path: Path) -> None:
    p = Page(browser)
    page = p.open(site / "index.html")
    assert _visible_rows(page, "envs") == 5
    assert page.inner_text("[data-count-for=envs]") == "5 of 5 shown"
    page.fill("input[data-filter=search][data-for=envs]", "sched")
    page.wait_for_function("document.querySelector('[data-count-for=envs]').textContent.startsWith('1 of')")
    assert _visible_rows(page, "envs") == 1 and "tpl-sched" in page.inner_text("#envs tbody tr:not([hidden])")
    page.fill("input[data-filter=search][data-for=envs]", "")
    page.select_option("select[data-filter=proposer]", "template:ast")
    page.wait_for_function("document.querySelector('[data-count-for=envs]').textContent.startsWith('2 of')")
    assert _visible_rows(page, "envs") == 2
    page.select_option("select[data-filter=proposer]", "")
    page.select_option("select[data-filter=kinds]", "decline")
    narrowed = _visible_rows(page, "envs")
    assert 0 < narrowed < 5  # the fixture and hostile specs have no decline task
    page.select_option("select[data-filter=kinds]", "")
    page.click("th:has-text('tools')")
    page.click("th:has-text('tools')")  # descending
    column = page.evaluate("[...document.querySelectorAll('#envs th')].findIndex(h => h.textContent === 'tools') + 1")
    tools = [int(x) for x in page.eval_on_selector_all(f"#envs tbody tr td:nth-child({column})",
                                                       "cells => cells.map(c => c.textContent)")]
    assert tools == sorted(tools, reverse=True) and len(tools) == 5
    p.shot(tmp_path, "inspect-index.png")
    assert p.errors == [] and p.dialogs == []
    p.close()


def test_env_page_loads_and_its_mutation_filter_narrows(browser: Any, site: Path, library: Path,
                                                       tmp_path: Path) -> None:
    env_id = next(i for i in env_ids(library) if i.startswith("tpl-sched"))
    p = Page(browser)
    page = p.open(site / "envs" / f"{env_id}.html")
    for section in ("provenance", "source", "tools", "tables", "tasks", "gate", "history", "episodes"):
        assert page.locator(f"section#{section}").count() == 1, section
    total = _visible_rows(page, "mutations")
    assert total > 0
    page.select_option("select[data-filter=outcome]", "survived")
    assert _visible_rows(page, "mutations") == 0  # an accepted spec has no survivor
    page.select_option("select[data-filter=outcome]", "killed")
    killed = _visible_rows(page, "mutations")
    assert 0 < killed <= total
    assert page.evaluate("document.querySelector('pre.code').scrollTop") > 0  # opened at the modelled class
    p.shot(tmp_path, "inspect-env.png", full=True)
    assert p.errors == [] and p.dialogs == []
    p.close()


def test_hostile_text_never_runs_and_runs_pages_load(browser: Any, site: Path, tmp_path: Path) -> None:
    p = Page(browser)
    page = p.open(site / "envs" / "hostile-desk.html")
    assert '<script>alert("title")</script>' in page.inner_text("h1")
    assert page.locator("main script, main img").count() == 0
    p.shot(tmp_path, "inspect-hostile.png")
    for rel in ("runs/empty/index.html", "rejected/index.html"):
        page = p.open(site / rel)
        assert _visible_rows(page, "episodes" if "runs" in rel else "rejected") > 0
    first = page.get_attribute("#rejected tbody tr a", "href")
    p.open(site / "rejected" / str(first))
    assert p.errors == [] and p.dialogs == []
    p.close()


def test_a_large_index_shows_a_page_but_filters_every_row(browser: Any, library: Path, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    from envgen.inspect import site as site_module

    monkeypatch.setattr(site_module, "INDEX_PAGE", 2)  # as a library of thousands would be paged
    out = tmp_path / "paged"
    site_module.build_site(str(library), out, executor="inprocess", gate="off", rows=0)
    p = Page(browser)
    page = p.open(out / "index.html")
    assert _visible_rows(page, "envs") == 2 and page.inner_text("[data-count-for=envs]") == "5 of 5, first 2 shown"
    last = sorted(env_ids(library))[-1]  # rows are sorted by id: the last one is past the page
    page.fill("input[data-filter=search][data-for=envs]", last)
    page.wait_for_function("document.querySelector('[data-count-for=envs]').textContent.startsWith('1 of')")
    assert _visible_rows(page, "envs") == 1 and last in page.inner_text("#envs tbody tr:not([hidden])")
    page.fill("input[data-filter=search][data-for=envs]", "")
    page.click("button[data-more-for=envs]")
    assert _visible_rows(page, "envs") == 5
    assert p.errors == []
    p.close()


def _count(page: Any) -> str:
    return str(page.inner_text("[data-count-for=envs]"))


def test_filters_show_all_and_sort_survive_back(browser: Any, library: Path, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from envgen.inspect import site as site_module

    monkeypatch.setattr(site_module, "INDEX_PAGE", 2)
    out = tmp_path / "paged"
    site_module.build_site(str(library), out, executor="inprocess", gate="off", rows=0)
    p = Page(browser)
    page = p.open(out / "index.html")
    page.click("button[data-more-for=envs]")
    page.click("th:has-text('tools')")
    assert _visible_rows(page, "envs") == 5
    page.click("#envs tbody tr a >> nth=0")
    page.wait_for_load_state("load")
    page.go_back()
    page.wait_for_load_state("load")
    page.wait_for_function("document.querySelector('[data-count-for=envs]').textContent !== ''")
    assert _visible_rows(page, "envs") == 5 and _count(page) == "5 of 5 shown"  # still all, not the first 2
    assert page.get_attribute("th[data-sort]:has-text('tools')", "aria-sort") == "ascending"
    page.select_option("select[data-filter=proposer]", "template:ast")
    page.fill("input[data-filter=search][data-for=envs]", "sched")
    page.wait_for_function("document.querySelector('[data-count-for=envs]').textContent.startsWith('1 of')")
    page.click("#envs tbody tr:not([hidden]) a")
    page.wait_for_load_state("load")
    page.go_back()
    page.wait_for_load_state("load")
    page.wait_for_timeout(200)  # the browser restores the controls' values late, firing no event
    assert page.input_value("input[data-filter=search][data-for=envs]") == "sched"
    assert page.input_value("select[data-filter=proposer]") == "template:ast"
    assert _visible_rows(page, "envs") == 1 and _count(page).startswith("1 of 5 match")  # the table agrees
    assert p.errors == []
    p.close()


def test_headers_sort_from_the_keyboard_and_stick(browser: Any, site: Path) -> None:
    p = Page(browser, height=260)  # shorter than the table: it scrolls in its box
    page = p.open(site / "index.html")
    for _ in range(20):  # Tab from the search box through the filters reaches the first header
        page.keyboard.press("Tab")
        if page.evaluate("!!document.activeElement.closest('th[data-sort]')"):
            break
    focused = page.evaluate("document.activeElement.closest('th[data-sort]').textContent")
    assert focused == "id"
    page.keyboard.press("Enter")
    assert page.get_attribute("#envs th >> nth=0", "aria-sort") == "ascending"
    page.keyboard.press(" ")
    assert page.get_attribute("#envs th >> nth=0", "aria-sort") == "descending"
    ids = page.eval_on_selector_all("#envs tbody td.id", "cells => cells.map(c => c.textContent)")
    assert ids == sorted(ids, reverse=True)
    stuck = page.evaluate("""() => {
        const box = document.querySelector('#envs').closest('.scroll'), th = document.querySelector('#envs th');
        box.scrollIntoView(); box.scrollTop = 120;
        return [box.scrollTop, th.getBoundingClientRect().top - box.getBoundingClientRect().top];
    }""")
    assert stuck[0] > 0 and 0 <= stuck[1] <= 2, stuck  # the table scrolled under its header, which stayed
    assert p.errors == []
    p.close()


def test_no_page_is_wider_than_a_phone(browser: Any, site: Path, hostile_site: Path, tmp_path: Path) -> None:
    pages = [site / "index.html", site / "rejected" / "index.html", *sorted((site / "rejected").glob("*.html")),
             *sorted((site / "envs").glob("*.html")), hostile_site / "index.html",
             *sorted((hostile_site / "envs").glob("*.html"))]
    for run in sorted((site / "runs").iterdir()):  # each run's index and one transcript
        pages += [run / "index.html", next(p for p in sorted(run.glob("*.html")) if p.name != "index.html")]
    p = Page(browser, width=375)
    wide = {}
    for path in pages:
        page = p.open(path)
        width = page.evaluate("document.documentElement.scrollWidth")
        if width > 375:
            wide[str(path)] = width
    p.page.set_viewport_size({"width": 375, "height": 900})
    p.open(hostile_site / "envs" / "rtl-desk.html")
    p.shot(tmp_path, "inspect-hostile-375.png")
    assert wide == {}
    assert p.errors == []
    p.close()


def test_a_spec_bidi_override_cannot_reorder_the_inspectors_text_and_odd_values_filter(browser: Any,
                                                                                        hostile_site: Path) -> None:
    p = Page(browser)
    page = p.open(hostile_site / "envs" / "rtl-desk.html")
    assert RLO in page.inner_text("h1")
    lefts = page.evaluate("""() => {
        const t = document.querySelector('h1 code').firstChild, r = document.createRange(), xs = [];
        for (let i = 0; i < t.length; i++) {
            r.setStart(t, i); r.setEnd(t, i + 1); xs.push(r.getBoundingClientRect().left);
        }
        return xs;
    }""")
    assert page.inner_text("h1 code") == "rtl-desk" and lefts == sorted(lefts)  # read left to right, not reversed
    page = p.open(hostile_site / "index.html")
    page.select_option("select[data-filter=skill]", index=1)  # "s  …  ": repeated and trailing whitespace
    assert _visible_rows(page, "envs") == 1
    assert p.errors == []
    p.close()
