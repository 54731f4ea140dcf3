"""Every page's share-link parameters walked with out-of-range values (L1b): never an error box or Streamlit's
error page, and every value the page cannot show as given is named in a notice (ignored, or clamped into range).

The parameters are each page's own, found by running it once with a spy on ``widgets.restore_from_url`` (so a
parameter added later is walked too); then each page opens once with every one of them far too large and once
far too small. A value the page shows as given (free text) needs no notice. The probe's case, ``/lesson?lesson_head=99999``
(an error box "head must be in 0..3, got 63"), is checked on its own as well: the head is clamped with a notice.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from app.ui import widgets
from tests.helpers.apptest_helpers import APP, SCRIPTS

VALUES = ("99999", "-99999")
EXPLORE = "explore"


def _open(page: str, query: dict[str, str]) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=120)
    for key, value in query.items():
        at.query_params[key] = value
    at.run()
    if page != EXPLORE:
        at.switch_page(SCRIPTS[page]).run()
    return at


def _taken(at: AppTest, key: str, parse: Callable[[str], Any], value: str) -> bool:
    """Whether the page shows the link's ``value`` of ``key`` as given (free text is)."""
    try:
        return key in at.session_state and at.session_state[key] == parse(value)
    except (TypeError, ValueError, OverflowError):
        return False


@pytest.fixture(scope="module")
def link_keys() -> dict[str, dict[str, Callable[[str], Any]]]:
    """Each page's own share-link parameters (the sidebar's go with Explore), found with a spy."""
    found: dict[str, dict[str, Callable[[str], Any]]] = {}
    real, recording = widgets.restore_from_url, {}

    def spy(keys, defaults=None, **options):
        recording.update(keys)
        return real(keys, defaults, **options)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(widgets, "restore_from_url", spy)
        for page in sorted(SCRIPTS, key=lambda name: name != EXPLORE):  # Explore (and the sidebar) first
            at = AppTest.from_file(str(APP), default_timeout=120)
            at.run()
            if page == EXPLORE:
                found[page] = dict(recording)
            else:
                recording.clear()
                at.switch_page(SCRIPTS[page]).run()
                found[page] = {k: v for k, v in recording.items() if k not in found[EXPLORE]}  # not the sidebar's
            recording.clear()
    assert found["lesson"].keys() >= {"lesson_head", "lesson_stage", "lesson_token", "lesson_step"}
    return found


@pytest.mark.parametrize("value", VALUES)
@pytest.mark.parametrize("page", sorted(SCRIPTS))
def test_every_link_parameter_out_of_range_is_named_in_a_notice(page, value, link_keys, runs):
    keys = link_keys[page]
    at = _open(page, {key: value for key in keys})
    assert not at.exception, [e.message for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    notices = " ".join(toast.value for toast in at.toast)
    silent = [key for key, parse in keys.items() if not _taken(at, key, parse, value) and key not in notices]
    assert not silent, (silent, notices)


def test_the_lessons_head_far_past_the_models_is_clamped_with_a_notice(runs):
    at = _open("lesson", {"lesson_head": "99999"})
    assert not at.exception and not at.error, [e.value for e in at.error]
    heads = at.selectbox(key="lesson_head")
    assert at.session_state["lesson_head"] == len(heads.options) - 1 == 3  # the shipped model's fourth head
    assert any("lesson_head 99999 cannot be shown here; 3 is shown" in toast.value for toast in at.toast)
