"""What every AppTest of the app shares: where the app is, opening a page, and reading back the
charts a page drew (every view of a concatenated or layered Altair chart, every heatmap trace of a
Plotly figure, with its data).

Pages are named as in ``app/routes.py`` by their URL path ("explore", "train", "checkpoints", …).
"""

from __future__ import annotations

import base64
import json
import re
import time
from collections.abc import Callable, Iterator
from xml.etree import ElementTree

import numpy as np
import pandas as pd
import pyarrow as pa
from streamlit.testing.v1 import AppTest

from app import routes
from app.ui.widgets import DIAGRAM_CLASS
from tests.helpers.paths import ROOT

APP = ROOT / "app" / "streamlit_app.py"
SVG = "{http://www.w3.org/2000/svg}"  # the SVG namespace, as ElementTree names its tags
SCRIPTS = {r.url_path: r.script for section in routes.SECTIONS.values() for r in section}


def open_page(page: str = "explore", *, ckpt: str | None = None, query: dict[str, str] | None = None,
              timeout: float = 120, every_section: bool = True, state: dict | None = None) -> AppTest:
    """The app opened on ``page`` with ``ckpt`` chosen in the sidebar and ``query`` in the URL; with
    ``every_section`` the sidebar's "Open every section" is on (a Learn page then builds all its sections, not
    only its first); ``state``: session values set before the first run (``{"lesson_ask": False}``: the Lesson
    shows every stage without asking first)."""
    at = AppTest.from_file(str(APP), default_timeout=timeout)
    for key, value in (state or {}).items():
        at.session_state[key] = value
    for key, value in (query or {}).items():
        at.query_params[key] = value
    if ckpt is not None:
        at.session_state["ckpt"] = ckpt
    if every_section:
        at.session_state["all_sections"] = True
    at.run()  # pages are registered (with their URL paths) by the first run
    if page != "explore":
        at.switch_page(SCRIPTS[page]).run()
    assert not at.exception, [e.message for e in at.exception]
    return at


def sections(at: AppTest) -> list[str]:
    """The titles of the page's numbered sections, in order: a Learn page's section expanders
    (``app.ui.presentation.section``), or its headers on a page without them."""
    titled = [e.label for e in at.expander if e.proto.query_param_key.startswith("section-")]
    return titled or [h.value for h in at.header]


def outputs(at: AppTest) -> list[str]:
    """The model outputs on the page, in order: each is a text alone in a bordered box
    (``app.ui.widgets.output_text``)."""
    found: list[str] = []

    def walk(node) -> None:
        children = getattr(node, "children", None) or {}
        for child in (children.values() if isinstance(children, dict) else children):
            kids = list((getattr(child, "children", None) or {}).values())
            if (child.type == "flex_container" and child.proto.flex_container.border and len(kids) == 1
                    and kids[0].type == "text"):
                found.append(kids[0].value)
            else:
                walk(child)
    walk(at.main)
    return found


CHART_TYPES = ("arrow_vega_lite_chart", "vega_lite_chart", "plotly_chart")


def spec(element) -> dict:
    """The chart's spec: a Vega-Lite spec, or a Plotly figure (data + layout)."""
    return json.loads(element.proto.spec)


def is_plotly(element) -> bool:
    return element.type == "plotly_chart"


def plotly_array(value) -> np.ndarray:
    """A Plotly JSON array (a list, or plotly.py 6's ``{"dtype", "bdata", "shape"}``) as numpy."""
    if isinstance(value, dict) and "bdata" in value:
        array = np.frombuffer(base64.b64decode(value["bdata"]), dtype=np.dtype(value["dtype"]))
        shape = value.get("shape")
        return array.reshape([int(n) for n in str(shape).split(",")]) if shape else array
    return np.asarray(value)


def plotly_frames(element) -> list[pd.DataFrame]:
    """Each heatmap trace of a Plotly figure as a tidy frame: row, col, row_index, col_index, and the
    value (named as the trace: ``weight``, ``change``, ``score``), in row-major order."""
    found = []
    for trace in spec(element)["data"]:
        if trace.get("type") != "heatmap":
            continue
        z = plotly_array(trace["z"]).astype(float)
        rows, cols = np.meshgrid(np.arange(z.shape[0]), np.arange(z.shape[1]), indexing="ij")
        y, x = plotly_array(trace.get("y", range(z.shape[0]))), plotly_array(trace.get("x", range(z.shape[1])))
        found.append(pd.DataFrame({"row": y[rows.ravel()], "col": x[cols.ravel()], "row_index": rows.ravel(),
                                   "col_index": cols.ravel(), trace.get("name") or "weight": z.ravel()}))
    return found


def plotly_titles(element) -> list[str]:
    """The titles of a Plotly figure's panels (its subplot titles, line breaks as spaces), or its own title."""
    layout = spec(element)["layout"]
    panels = [a["text"].replace("<br>", " ") for a in layout.get("annotations", [])
              if a.get("yref") == "paper" and "text" in a]
    own = (layout.get("title") or {}).get("text", "").replace("<br>", " ")
    return panels or [own]


def _title(view: dict) -> str:
    title = view.get("title", "")
    return str(title.get("text", "") if isinstance(title, dict) else title)


def _views(node: dict, data: str | None = None) -> Iterator[tuple[dict, str | None]]:
    """Every view of a chart spec that draws data, with the name of the dataset it draws."""
    data = (node.get("data") or {}).get("name", data)
    children = [c for key in ("hconcat", "vconcat", "concat", "layer") for c in node.get(key, [])]
    if "spec" in node:  # a facet
        children.append({**node["spec"], "title": node.get("title", node["spec"].get("title", ""))})
    if not children:
        yield node, data
    for child in children:
        if "layer" in node and not child.get("title"):
            child = {**child, "title": node.get("title", "")}
        yield from _views(child, data)


def frames(element) -> list[pd.DataFrame]:
    """The chart's datasets, one per view that draws data, in the order its views are drawn."""
    if is_plotly(element):
        return plotly_frames(element)
    data = {d.name: pa.ipc.open_stream(d.data.data).read_pandas() for d in element.proto.datasets}
    names = list(dict.fromkeys(name for _, name in _views(spec(element)) if name in data))
    return [data[name] for name in names] or list(data.values())


def titles(element) -> list[str]:
    """The title of each view of the chart that has one (the chart's own title first)."""
    if is_plotly(element):
        return plotly_titles(element)
    chart_spec = spec(element)
    views = chart_spec.get("hconcat") or [chart_spec]
    return [_title(v) for v in views]


def charts(at: AppTest) -> list:
    """The page's Altair and Plotly charts in page order (after checking the last run raised nothing)."""
    assert not at.exception, at.exception
    return [node for node in at._tree if getattr(node, "type", None) in CHART_TYPES]


def frames_with(at: AppTest, *columns: str) -> list[pd.DataFrame]:
    """The page's tables (``st.dataframe``) that have every one of ``columns``."""
    return [df.value for df in at.dataframe if all(c in df.value.columns for c in columns)]


def charts_in(at: AppTest) -> dict[str, list[pd.DataFrame]]:
    """Every titled view on the page → its data frames (a concatenated chart's views one by one)."""
    found: dict[str, list[pd.DataFrame]] = {}
    for element in charts(at):
        if is_plotly(element):
            for title, frame in zip(plotly_titles(element), plotly_frames(element)):
                found.setdefault(title, [frame])
            continue
        data = {d.name: pa.ipc.open_stream(d.data.data).read_pandas() for d in element.proto.datasets}
        whole = _title(spec(element))
        if whole:
            found.setdefault(whole, list(data.values()))
        for view, name in _views(spec(element)):
            if _title(view) and name in data:
                found.setdefault(_title(view), [data[name]])
    return found


def chart(at: AppTest, prefix: str) -> list[pd.DataFrame]:
    """The data of the first view whose title starts with ``prefix``."""
    matches = [frames for title, frames in charts_in(at).items() if title.startswith(prefix)]
    assert matches, f"no chart titled {prefix!r}; found {list(charts_in(at))}"
    return matches[0]


def as_matrix(frame: pd.DataFrame, value: str = "weight") -> np.ndarray:
    """A heatmap's tidy frame (row_index, col_index, value) back to its matrix."""
    rows, cols = frame["row_index"].max() + 1, frame["col_index"].max() + 1
    matrix = np.zeros((rows, cols))
    matrix[frame["row_index"], frame["col_index"]] = frame[value]
    return matrix


def wait_until(at: AppTest, done: Callable[[AppTest], bool], limit_s: float = 90.0) -> None:
    """Re-run the page (as its polling fragment would) until ``done(at)``; bounded."""
    deadline = time.monotonic() + limit_s
    while not done(at):
        assert time.monotonic() < deadline, "the page did not get there in time"
        time.sleep(0.5)
        at.run()
        assert not at.exception


def find_chart(at: AppTest, text: str) -> tuple[dict, pd.DataFrame]:
    """(spec, first dataset) of the first chart whose spec or titles (wrapped lines joined) mention ``text``."""
    for element in charts(at):
        if text in json.dumps(spec(element), ensure_ascii=False) or any(text in t for t in titles(element)):
            return spec(element), frames(element)[0]
    raise AssertionError(f"no chart mentions {text!r}")


def diagrams(at: AppTest) -> list[str]:
    """The SVG documents of the page's block diagrams (``app.ui.widgets.diagram``'s images), in page order."""
    assert not at.exception, at.exception
    found = (re.search(r'src="data:image/svg\+xml;base64,([^"]+)"', html.proto.body) for html in at.get("html")
             if f'class="{DIAGRAM_CLASS}"' in html.proto.body)
    return [base64.b64decode(match.group(1)).decode() for match in found if match]


def diagram_lines(svg: str) -> list[str]:
    """Every line of text a block diagram's SVG draws, in drawing order."""
    root = ElementTree.fromstring(svg)
    return ([span.text or "" for span in root.iter(f"{SVG}tspan")]
            + [text.text for text in root.iter(f"{SVG}text") if text.text])


def canvases(at: AppTest) -> list[tuple[dict, dict]]:
    """The attention canvases on the page in page order, each decoded as the browser reads it: (header, arrays)."""
    from app.ui.canvas import payload

    assert not at.exception, at.exception
    found = []

    def walk(node) -> None:
        for child in getattr(node, "children", {}).values():
            if getattr(child, "type", None) == "bidi_component" and child.proto.WhichOneof("data") == "bytes":
                found.append(payload.decode(child.proto.bytes))
            walk(child)
    walk(at._tree)
    return found


def component_data(at: AppTest, name: str) -> list[dict]:
    """The JSON data of each components-v2 element named ``name`` on the page, in page order."""
    assert not at.exception, at.exception
    found = []

    def walk(node) -> None:
        for child in getattr(node, "children", {}).values():
            proto = getattr(child, "proto", None)
            if (getattr(child, "type", None) == "bidi_component" and proto.component_name.endswith(name)
                    and proto.WhichOneof("data") == "json"):
                found.append(json.loads(proto.json))
            walk(child)
    walk(at._tree)
    return found


def canvas_weights(at: AppTest, layer: int, head: int, which: int = 0) -> np.ndarray:
    """The float16 weights the page's ``which``-th maps canvas carries for (layer, head), 0-based, as float32."""
    header, arrays = [c for c in canvases(at) if c[0]["mode"] == "maps"][which]
    return arrays["value"][header["sent"].index(layer), head].astype(np.float32)


def canvas_titles(at: AppTest) -> list[str]:
    """Each maps canvas's title as the browser writes it for the head it opens on ("Decoder masked self-attention
    — layer 1, head 3 · kv head 2 of 2"), and each panels canvas's panel titles."""
    found = []
    for header, _ in canvases(at):
        if header["mode"] == "panels":
            found += [p["title"] for p in header["panels"]]
            continue
        layer, head, groups = header["pinned"]["layer"], header["pinned"]["head"], header.get("groups") or []
        shared = f" · kv head {groups[head] + 1} of {len(set(groups))}" if groups else ""
        found.append(f"{header['title']} — layer {layer + 1}, head {head + 1}{shared}")
    return found


def panel_matrix(at: AppTest, title: str) -> np.ndarray:
    """The float16 values (as float32) of the first canvas panel whose title starts with ``title``."""
    for header, arrays in canvases(at):
        for i, panel in enumerate(header.get("panels", [])):
            if panel["title"].startswith(title):
                return arrays[f"value{i}"].astype(np.float32)
    raise AssertionError(f"no canvas panel titled {title!r} in {canvas_titles(at)}")
