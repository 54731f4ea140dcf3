"""Learn pages open their first section and build the others only once they are opened (issue 23): a page's
first draw sends the first section's charts alone, a share link keeps which sections are open, and the sidebar's
"Open every section" opens them all."""

from __future__ import annotations

import functools
from unittest import mock

import pytest

from app import resources
from core import lessons
from tests.helpers.apptest_helpers import charts_in, open_page, sections

PAGES = {  # page → (its first section, a function only a later section calls, that section's key)
    "positional": ("1 · The encoding table", (lessons, "worked_example"), "pe-worked"),
    "playground": ("1 · Scores → softmax, from soft to hard", (lessons, "saturation"), "pg-scaling"),
    "masks": ("1 · The look-ahead (subsequent) mask", (lessons, "batch_masks"), "masks-padding"),
    "architecture": ("1 · The loaded model", (lessons, "ffn_as_convolution"), "arch-ffn"),
    "self-attention": ("1 · Why attention replaced recurrence", (resources, "attention_timing"), "cc-cost"),
}


def _open(at) -> list[str]:
    return [e.label for e in at.expander if e.proto.query_param_key.startswith("section-") and e.proto.expanded]


def _counting(owner: object, name: str) -> tuple[mock._patch, list[int]]:
    calls: list[int] = []
    real = getattr(owner, name)

    @functools.wraps(real)
    def counted(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)
    return mock.patch.object(owner, name, counted), calls


@pytest.mark.parametrize("page", list(PAGES))
def test_a_learn_page_builds_its_first_section_alone_until_another_is_opened(runs, page):
    first, (owner, name), later = PAGES[page]
    patch, calls = _counting(owner, name)
    with patch:
        at = open_page(page, every_section=False)
        assert not at.exception and len(sections(at)) >= 3
        assert _open(at) == [first] and calls == []  # the later sections' work is not done
        closed_charts = len(charts_in(at))
        at.session_state[f"section-{later}"] = True  # what a click on its title does
        at.run()
    assert not at.exception and len(_open(at)) == 2 and calls  # now it is
    assert len(charts_in(at)) >= closed_charts


def test_a_share_link_opens_the_sections_it_names(runs):
    at = open_page("positional", every_section=False, query={"section-pe-worked": "true"})
    assert _open(at) == ["1 · The encoding table", "5 · A worked example: 4 tokens, d_model = 4, base = 100"]
    assert at.query_params["section-pe-worked"] == "true"  # kept in the link


def test_open_every_section_opens_them_all_and_travels_in_the_link(runs):
    at = open_page("masks", every_section=False)
    assert len(_open(at)) == 1
    at.sidebar.toggle(key="all_sections").set_value(True).run()
    assert _open(at) == sections(at) and len(sections(at)) == 3
    assert at.query_params["all_sections"] == "1"
    linked = open_page("architecture", every_section=False, query={"all_sections": "1"})
    assert _open(linked) == sections(linked) and len(sections(linked)) >= 6
