"""The inspector's index shows the realism figures of the environments beside the shipped examples'."""

from __future__ import annotations

from pathlib import Path


def test_the_index_shows_the_realism_figures(site: Path) -> None:
    html = (site / "index.html").read_text(encoding="utf-8")
    section = html[html.index('<details class="realism"'):]
    section = section[:section.index("</details>")]
    assert "<th>these environments</th><th>examples</th>" in section
    assert "CRUD-verb tools (target &lt;=50%)" in section and "turns in the top 20 skeletons" in section
    assert '<td class="num">8</td>' in section  # the eight shipped examples
