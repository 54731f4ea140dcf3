"""The block diagram drawn as SVG by the server (app.charts.diagram): every box stacked bottom to top without
overlapping, a layer's sublayers inside its frame, each solid arrow joining two consecutive boxes, each dashed
residual arrow leaving from below its sublayer and ending on its Add box, the cross arrow from the encoder's
memory to the decoder's cross-attention, labels escaped, and the size following the font scale."""

from __future__ import annotations

from xml.etree import ElementTree

import pytest

from app.charts.architecture import architecture_diagram, whisper_diagram
from app.charts.diagram import CROSS, FONT, Box, Column, Diagram, Sublayer, describe, svg
from core.model.families.whisper import WhisperConfig
from tests.helpers.apptest_helpers import SVG, diagram_lines
from tests.helpers.tiny import tiny_model

WHISPER = WhisperConfig(vocab_size=40, d_model=16, n_encoder_layers=2, n_decoder_layers=3, n_heads=2, d_ff=32,
                        eot_id=30, sot_id=31, no_timestamps_id=35, n_mels=8, n_frames=20, max_len=12)


def _points(text: str) -> list[tuple[float, float]]:
    return [tuple(float(v) for v in pair.split(",")) for pair in text.split()]


def _drawn(diagram: Diagram, font_scale: float = 1.0):
    """(boxes as (x, y, w, h, lines), frames as (x, y, w, h), arrows as (points, tip, colour, dashed), lines with no
    arrowhead as points) of the SVG."""
    root = ElementTree.fromstring(svg(diagram, font_scale))
    boxes, frames, arrows, lines = [], [], [], []
    for node in root:
        if node.tag == f"{SVG}polyline":
            lines.append(_points(node.get("points")))
        elif node.tag == f"{SVG}rect":
            frames.append(tuple(float(node.get(k)) for k in ("x", "y", "width", "height")))
        elif node.tag == f"{SVG}g" and node.find(f"{SVG}rect") is not None:
            rect = node.find(f"{SVG}rect")
            label = [span.text or "" for span in node.iter(f"{SVG}tspan")]
            boxes.append((*(float(rect.get(k)) for k in ("x", "y", "width", "height")), label))
        elif node.tag == f"{SVG}g":
            line, head = node.find(f"{SVG}polyline"), node.find(f"{SVG}polygon")
            arrows.append((_points(line.get("points")), _points(head.get("points"))[0], line.get("stroke"),
                           line.get("stroke-dasharray") is not None))
    return boxes, frames, arrows, lines


def _in_order(column: Column) -> list[tuple[Box, str]]:
    """The column's boxes bottom to top, each with where it sits: below, in the frame, or above it."""
    inside = [b for s in column.sublayers for b in (*s.boxes, s.add)]
    return [(b, "below") for b in column.below] + [(b, "in") for b in inside] + [(b, "above") for b in column.above]


@pytest.mark.parametrize("norm", ["post", "pre"])
@pytest.mark.parametrize("architecture", ["encoder-decoder", "encoder", "decoder"])
def test_boxes_stack_bottom_to_top_inside_their_frame_and_arrows_join_them(architecture, norm):
    drawing = architecture_diagram(tiny_model(architecture).config, norm)
    boxes, frames, arrows, lines = _drawn(drawing)
    assert len(frames) == len(drawing.columns) == len(lines)
    solid = [a for a in arrows if not a[3] and a[2] != CROSS]
    start = 0
    for column, (fx, fy, fw, fh) in zip(drawing.columns, frames):
        order = _in_order(column)
        drawn = boxes[start:start + len(order)]
        start += len(order)
        for (box, where), (x, y, w, h, text) in zip(order, drawn):
            assert text == box.label.split("\n")
            inside = fx < x and x + w < fx + fw and fy < y and y + h < fy + fh
            assert inside == (where == "in"), (box.label, where)
        for lower, upper in zip(drawn, drawn[1:]):  # bottom to top: each next box higher, never overlapping
            assert upper[1] + upper[3] < lower[1]
            centre = lower[0] + lower[2] / 2
            # out of the frame: a line up to the frame's title, then an arrow from the frame's top
            leaves = any(line[0] == pytest.approx((centre, lower[1]), abs=0.15) and fy < line[1][1] for line in lines)
            source = (centre, fy) if leaves else (centre, lower[1])
            assert any(points[0] == pytest.approx(source, abs=0.15)
                       and tip == pytest.approx((centre, upper[1] + upper[3]), abs=0.15) for points, tip, _, _ in solid)
    assert start == len(boxes) and len(solid) == len(boxes) - len(frames)


@pytest.mark.parametrize("norm", ["post", "pre"])
def test_each_residual_leaves_below_its_sublayer_and_ends_on_its_add(norm):
    drawing = architecture_diagram(tiny_model("encoder-decoder").config, norm)
    boxes, _, arrows, _ = _drawn(drawing)
    residuals = [a for a in arrows if a[3]]
    sublayers = [s for column in drawing.columns for s in column.sublayers]
    assert len(residuals) == len(sublayers) == 5  # encoder: attention, FFN; decoder: masked, cross, FFN
    by_label = {}
    for x, y, w, h, lines in boxes:
        by_label.setdefault("\n".join(lines), []).append((x, y, w, h))
    adds = sorted(by_label["Add & Norm" if norm == "post" else "Add (residual)"])
    assert len(adds) == 5
    for (x, y, w, h), (points, tip, _, _) in zip(adds, sorted(residuals, key=lambda a: (a[1][0], a[1][1]))):
        assert tip == pytest.approx((x + w, y + h / 2), abs=0.15)  # into the Add box's right edge, mid-height
        assert points[0][1] > tip[1] and points[0][0] == pytest.approx(x + w / 2, abs=0.15)  # from below, on the path
    first = "LayerNorm" if norm == "pre" else "self-attention"
    assert any(line.startswith(first) for line in diagram_lines(svg(drawing)))


@pytest.mark.parametrize("drawing", [architecture_diagram(tiny_model("encoder-decoder").config),
                                     whisper_diagram(WHISPER)], ids=["transformer", "whisper"])
def test_the_cross_arrow_carries_the_memory_into_cross_attention(drawing):
    boxes, _, arrows, _ = _drawn(drawing)
    (points, tip, _, _), = [a for a in arrows if a[2] == CROSS]
    memory = next(b for b in boxes if "memory" in " ".join(b[4]))
    cross = next(b for b in boxes if b[4][0] == "cross-attention")
    assert points[0] == pytest.approx((memory[0] + memory[2], memory[1] + memory[3] / 2), abs=0.15)
    assert tip == pytest.approx((cross[0], cross[1] + cross[3] / 2), abs=0.15)
    assert "K, V" in diagram_lines(svg(drawing))
    no_cross = architecture_diagram(tiny_model("decoder").config)
    assert no_cross.cross is None and not [a for a in _drawn(no_cross)[2] if a[2] == CROSS]


def test_labels_are_escaped_and_the_size_follows_the_font_scale():
    tricky = Box('<bos> & "x"', "#EDEDED")
    drawing = Diagram((Column((tricky,), "Layer × 1", "#0072B2", (Sublayer((Box("a", "#FFFFFF"),),
                                                                            Box("b", "#FFFFFF")),)),))
    assert diagram_lines(svg(drawing))[:2] == ["Layer × 1", '<bos> & "x"']
    small, large = (ElementTree.fromstring(svg(drawing, scale)) for scale in (1.0, 1.5))
    sizes = {float(text.get("font-size")) for text in large.iter(f"{SVG}text")}
    assert sizes == {FONT * 1.5} and {float(t.get("font-size")) for t in small.iter(f"{SVG}text")} == {FONT}
    assert float(large.get("width")) > float(small.get("width")) and float(large.get("height")) > float(
        small.get("height"))
    assert describe(drawing) == "Block diagram: Layer × 1" == small.find(f"{SVG}title").text


def test_a_longer_label_widens_its_column_not_its_neighbours():
    def drawing(label: str) -> Diagram:
        one = Sublayer((Box("attention", "#FFFFFF"),), Box("Add", "#FFFFFF"))
        return Diagram((Column((Box("x", "#FFFFFF"),), "A × 1", "#0072B2", (one,)),
                        Column((Box(label, "#FFFFFF"),), "B × 1", "#D55E00", (one,))))

    plain, longer = (_drawn(drawing(label))[1] for label in ("y", "a label much longer than the others"))
    assert longer[0][2] == plain[0][2] and longer[1][2] > plain[1][2]


@pytest.mark.parametrize("lang", ["ja", "ru", "zh"])
@pytest.mark.parametrize("drawing", [lambda lang: architecture_diagram(tiny_model("encoder-decoder").config, "pre", lang),
                                     lambda lang: whisper_diagram(WHISPER, lang)], ids=["transformer", "whisper"])
def test_the_diagram_speaks_the_language_and_its_boxes_hold_the_text(drawing, lang):
    """No English label of the diagram's messages is left, its own are drawn, and each box is at least as wide as
    its widest line counted at one font size per Japanese or Chinese character (0.52 per Latin or Cyrillic one)."""
    from app import i18n

    drawn = set(diagram_lines(svg(drawing(lang))))

    def lines(catalog: dict[str, str]) -> set[str]:  # the diagram's fixed lines of two words or more
        return {line for k, v in catalog.items() if k.startswith("diagram.") and "{" not in v
                for line in v.split("\n") if len(line.split()) >= 2}

    assert sorted(lines(i18n.catalog("en", "charts")) & drawn) == []
    assert i18n.text(lang, "charts", "diagram.final") in drawn
    for x, y, width, height, lines in _drawn(drawing(lang))[0]:
        wide = [sum(1.0 if "\u3000" <= ch <= "\u9fff" or "\uff00" <= ch <= "\uffef" else 0.52 for ch in line)
                for line in lines]
        assert width >= max(wide, default=0) * FONT, lines
