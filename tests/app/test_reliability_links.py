"""Issue 28, share links with values out of range: ignored with a notice, never Streamlit's error page."""

from __future__ import annotations

import pytest

from tests.helpers.apptest_helpers import open_page


@pytest.mark.parametrize("page, query, key, default", [
    ("train", {"train_smoothing": "nan"}, "train_smoothing", 0.1),
    ("train", {"train_smoothing": "1e400"}, "train_smoothing", 0.1),
    ("positional", {"pe_base": "1e400"}, "pe_base", 10000),
    ("positional", {"pe_base": "nan"}, "pe_base", 10000),
])
def test_a_link_value_out_of_range_is_ignored_with_a_notice(page: str, query: dict, key: str, default) -> None:
    at = open_page(page, query=query)  # asserts no exception reached the page
    assert at.session_state[key] == default
    assert any(key in toast.value for toast in at.toast)
