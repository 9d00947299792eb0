"""The inspector's site in a real browser: headless Chromium (Debian's package) driven by Playwright.

The pages load from ``file://`` with no console error, the index's filters really narrow its table and
its headers sort it, an environment page's mutation filter works, and a spec's HTML never runs. Each test
saves a screenshot under its tmp folder and, when ``ENVWRIGHT_ARTIFACTS`` names a folder, there too.
The tests skip, saying why, only when no browser can be had (``apt-get install chromium``; a browser
elsewhere: ``ENVWRIGHT_CHROMIUM=/path/to/chrome``).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.envgen.inspect.conftest import env_ids

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

    def __init__(self, browser: Any, width: int = 1400):
        self.page = browser.new_page(viewport={"width": width, "height": 900})
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
