"""Real-browser test of uploads (issues 15 and 21): a valid and a hostile checkpoint uploaded through the
page in Chromium, a second browser context that must not see the upload, and every request the
browsers make recorded: none may leave 127.0.0.1 (favicon and fonts included); a zipped GPT-2 folder
uploaded through the real file input opens on Explore."""

from __future__ import annotations

import shutil
from pathlib import Path
from urllib.parse import urlparse

import pytest

from tests.helpers.paths import REVERSE
from tests.helpers.browser import app_in_chromium, problems_on, screenshot, wait_until_idle
from tests.helpers.checkpoint_files import hostile_bytes

LOCAL_SCHEMES = {"data", "blob", "about"}


def _local(url: str, port: int) -> bool:
    parsed = urlparse(url)
    return parsed.scheme in LOCAL_SCHEMES or (parsed.hostname == "127.0.0.1" and parsed.port == port)


def _upload(page, path: Path) -> None:
    expander = page.locator('[data-testid="stSidebar"] [data-testid="stExpander"]').filter(has_text="Upload a model")
    if not expander.locator('[data-testid="stFileUploader"]').is_visible():
        expander.locator("summary").click()
    expander.locator('input[type="file"]').set_input_files(str(path))
    wait_until_idle(page)


def _picker_options(page) -> list[str]:
    sidebar = page.locator('[data-testid="stSidebar"]')  # the model picker, not the language picker above it
    sidebar.locator('[data-testid="stSelectbox"]').filter(has=page.get_by_text("Model", exact=True)).click()
    options = page.locator('[role="option"]')
    options.first.wait_for(timeout=10_000)
    texts = [o.inner_text() for o in options.all()]
    page.keyboard.press("Escape")
    return texts


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    runs = tmp_path_factory.mktemp("browser-upload-runs")
    with app_in_chromium(runs) as (url, chromium):
        yield url, chromium, runs


def test_uploads_in_a_real_browser_stay_private_and_local(browser, tmp_path):
    url, chromium, runs = browser
    port = urlparse(url).port
    requests: list[str] = []
    valid = tmp_path / "my reverse.safetensors"
    valid.write_bytes(REVERSE.read_bytes())
    bomb = tmp_path / "bomb.safetensors"
    bomb.write_bytes(hostile_bytes(tmp_path, max_len=1_000_000))

    first = chromium.new_context(viewport={"width": 1400, "height": 1000})
    first.on("request", lambda request: requests.append(request.url))
    page = first.new_page()
    page.goto(url)
    wait_until_idle(page)
    _upload(page, valid)
    page.wait_for_function("() => document.querySelector('[data-testid=\"stMain\"]').innerText"
                           ".includes('my reverse.safetensors — ')", timeout=90_000)  # the Explore header
    wait_until_idle(page)
    main = page.locator('[data-testid="stMain"]').inner_text()
    assert "my reverse.safetensors" in main and "Generated output" in main and not problems_on(page)
    screenshot(page, "upload-valid")

    _upload(page, bomb)
    page.wait_for_function("() => document.body.innerText.includes('bomb.safetensors is refused')", timeout=60_000)
    errors = problems_on(page)
    assert len(errors) == 1 and "max_len" in errors[0], errors
    main = page.locator('[data-testid="stMain"]').inner_text()
    assert "my reverse.safetensors — " in main and "Generated output" in main  # the valid upload is still chosen
    screenshot(page, "upload-hostile")

    second = chromium.new_context(viewport={"width": 1400, "height": 1000})
    second.on("request", lambda request: requests.append(request.url))
    other = second.new_page()
    other.goto(url)
    wait_until_idle(other)
    options = _picker_options(other)
    assert any(o.startswith("reverse") for o in options), options
    assert not [o for o in options if "uploaded" in o], options
    assert not problems_on(other)

    icon = page.locator('link[rel~="icon"]').first.get_attribute("href") or ""
    assert icon and _local(page.evaluate("h => new URL(h, location.href).href", icon), port), icon
    outside = sorted({r for r in requests if not _local(r, port)})
    assert outside == [], outside
    assert any("/media/" in r or "favicon" in r for r in requests) or icon.startswith("data:")
    first.close()
    second.close()


def test_a_zipped_gpt2_folder_uploaded_in_a_real_browser_opens_on_explore(browser, tmp_path):
    """A Hugging Face folder of another family than BERT, zipped, through the real file input."""
    pytest.importorskip("transformers")
    from tests.app.test_app_uploads_families import gpt2_folder

    url, chromium, _ = browser
    gpt2_folder(tmp_path / "tiny-gpt2")
    archive = Path(shutil.make_archive(str(tmp_path / "tiny-gpt2"), "zip", tmp_path, "tiny-gpt2"))
    context = chromium.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    page.goto(url)
    wait_until_idle(page)
    _upload(page, archive)
    page.wait_for_function("() => document.querySelector('[data-testid=\"stMain\"]').innerText"
                           ".includes('tiny-gpt2.zip')", timeout=90_000)
    wait_until_idle(page)
    main = page.locator('[data-testid="stMain"]').inner_text()
    assert "Most likely next token" in main and not problems_on(page), main[:400]
    assert any(o.startswith("uploaded · tiny-gpt2.zip") for o in _picker_options(page))
    screenshot(page, "upload-gpt2-zip")
    context.close()
