"""Every relative link and #anchor in README.md and docs/*.md resolves (GitHub's anchor rules:
tests/doc_pages.py), and every docs page with sections opens with a contents list linking each
of them: a section moved or renamed while README was split (issue 31) must not leave a dead link."""

import pytest

from doc_pages import DOCS, anchors, broken_links, headings, pages, relative_links, slug


@pytest.mark.parametrize("page", pages(), ids=lambda p: p.name)
def test_every_relative_link_and_anchor_resolves(page):
    assert broken_links(page) == []


@pytest.mark.parametrize("page", sorted(DOCS.glob("*.md")), ids=lambda p: p.name)
def test_each_docs_page_lists_its_sections_in_its_contents(page):
    text = page.read_text(encoding="utf-8")
    sections = [h for level, h in headings(text) if level == 2 and h != "Contents"]
    if len(sections) < 3:
        return
    assert "\n## Contents\n" in text, f"{page.name} has no '## Contents'"
    contents = text.split("\n## Contents\n", 1)[1].split("\n## ", 1)[0]
    linked = {t.lstrip("#") for t in relative_links(contents)}
    missing = [h for h in sections if slug(h) not in linked]
    assert missing == [], f"{page.name}: Contents does not link {missing}"


def test_the_anchor_rules_are_githubs():
    text = "# A\n## Re-rendering and gating: `tbflow report`\n## `results.json` schema\n## 1. Package map\n" \
           "## Dup\n## Dup\n```\n## not a heading\n```\n<a id=\"the-cache-dir\"></a>\n"
    assert anchors(text) == {"a", "re-rendering-and-gating-tbflow-report", "resultsjson-schema", "1-package-map",
                             "dup", "dup-1", "the-cache-dir"}
    assert relative_links("[x](a.md#b) `[y](no.md)` [z](https://e.com) [w](#c)\n```\n[v](no2.md)\n```") == \
        ["a.md#b", "#c"]
