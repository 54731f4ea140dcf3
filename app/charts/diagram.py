"""A Transformer's block diagram as one SVG image, laid out and drawn by the server.

The diagram is columns side by side, as in the paper's Figure 1 (the encoder on the left, the decoder on the
right), each read bottom to top: its input boxes, a framed layer "× N" whose sublayers each sit in a residual
connection (a dashed arrow from below the sublayer to its Add box), then its output boxes; an arrow carries the
encoder's output into the decoder's cross-attention. The layout is fixed by the diagram's structure, so it is
computed here and sent as an SVG image: the page shows it as one image, with no script (a Graphviz chart makes
the page load and run Graphviz in the browser: the Architecture page's first draw took 783 ms against 700 ms with
this image, ``python -m bench.ab_browser BEFORE AFTER open:architecture``).

Pure functions: a :class:`Diagram` in, SVG text out; no Streamlit calls. An image does not take the page's
fonts or colours: text is in Helvetica or its metric twins (Arial, Liberation Sans), dark on the boxes' light
fills; arrows, frame titles and labels are a grey that reads on the light and on the dark theme.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from html import escape
from unicodedata import east_asian_width

FONT = 13.0  # px, at font scale 1
LINE = 1.25  # line height, in font sizes
FONTS = "Helvetica, Arial, 'Liberation Sans', sans-serif"  # one set of metrics on every system
GLYPH = 0.52  # a line's width per character, in font sizes (at most for these fonts' labels here; a browser test
# measures every label of the app's diagrams against its box)
BOLD = 1.1  # a bold line (a column's title) is this much wider
PAD = 7.0  # px inside a box around its text
GAP = 24.0  # px between two boxes stacked one on the other (the arrow between them)
FRAME = 12.0  # px between a layer's frame and its boxes, left and below
RESIDUAL = 26.0  # px from the boxes' right edge to the residual arrows' vertical run
COLUMN_GAP = 56.0  # px between two columns (the cross arrow runs there)
ARROW = 6.0  # px: an arrowhead's length
MARGIN = 4.0  # px around the whole drawing
INK = "#7f8690"  # arrows, frame titles: a grey readable on white and on the dark theme's near-black
TEXT = "#1f1f1f"  # text in the light boxes
CROSS = "#D55E00"  # the cross arrow, in the decoder's colour


@dataclass(frozen=True)
class Box:
    """One block: its text (lines split at ``\\n``), its fill colour and, for the cross arrow's ends, a key."""

    label: str
    fill: str
    key: str = ""


@dataclass(frozen=True)
class Sublayer:
    """A sublayer in its residual connection: ``boxes`` bottom to top (pre-norm: the LayerNorm, then the
    sublayer), then ``add``, where the residual arrow from below the first box arrives."""

    boxes: tuple[Box, ...]
    add: Box


@dataclass(frozen=True)
class Column:
    """One stack, bottom to top: the ``below`` boxes, a frame titled ``title`` (its lines split at ``\\n``) in
    ``colour`` around the ``sublayers`` of one layer repeated N times, then the ``above`` boxes."""

    below: tuple[Box, ...]
    title: str
    colour: str
    sublayers: tuple[Sublayer, ...]
    above: tuple[Box, ...] = ()


@dataclass(frozen=True)
class Diagram:
    """Columns side by side, bottoms aligned; ``cross``: (key of the box whose output the other column reads,
    key of the box reading it) and its arrow's label."""

    columns: tuple[Column, ...]
    cross: tuple[str, str] | None = None
    cross_label: str = "K, V"


@dataclass
class _Placed:
    """A box placed in up coordinates (y from the bottom of the drawing): left, bottom, width, height."""

    box: Box
    x: float
    y: float
    w: float
    h: float


@dataclass
class _Layout:
    """Every box and frame of one column, its arrows' paths (up coordinates) and its width and height."""

    boxes: list[_Placed] = field(default_factory=list)
    frame: tuple[float, float, float, float] = (0, 0, 0, 0)  # left, bottom, width, height
    arrows: list[list[tuple[float, float]]] = field(default_factory=list)
    residuals: list[list[tuple[float, float]]] = field(default_factory=list)
    lines: list[list[tuple[float, float]]] = field(default_factory=list)  # paths with no arrowhead
    width: float = 0.0
    height: float = 0.0


def _lines(text: str) -> list[str]:
    return text.split("\n")


def _text_width(text: str, font: float) -> float:
    """The widest line of ``text``: a Latin or Cyrillic character is :data:`GLYPH` font sizes wide, a Japanese or
    Chinese one (East Asian wide or full-width) a whole font size."""
    return max(sum(1.0 if east_asian_width(ch) in "WF" else GLYPH for ch in line) for line in _lines(text)) * font


def _box_height(box: Box, font: float) -> float:
    return len(_lines(box.label)) * LINE * font + 2 * PAD


def _column_layout(column: Column, x0: float, font: float) -> _Layout:
    """Place ``column``'s boxes from the bottom up, starting ``x0`` from the drawing's left edge. The frame's
    title sits on the path out of the frame, centred on it: the path stops under the title and goes on above."""
    every = (*column.below, *(b for s in column.sublayers for b in (*s.boxes, s.add)), *column.above)
    box_w = max(max(_text_width(b.label, font) for b in every) + 2 * PAD, _text_width(column.title, font) * BOLD)
    out, left = _Layout(width=box_w + 2 * FRAME + RESIDUAL), x0 + FRAME
    centre, y = left + box_w / 2, 0.0

    def place(box: Box, start: float | None = None) -> None:
        nonlocal y
        placed = _Placed(box, left, y, box_w, _box_height(box, font))
        if out.boxes:  # an arrow up from the box below (or from ``start``)
            below = out.boxes[-1]
            out.arrows.append([(centre, below.y + below.h if start is None else start), (centre, placed.y)])
        out.boxes.append(placed)
        y += placed.h + GAP

    for box in column.below:
        place(box)
    frame_bottom = y - GAP / 2
    y = frame_bottom + GAP
    for sublayer in column.sublayers:
        split = y - GAP / 2  # the residual leaves the path in the gap below the sublayer's first box
        for box in sublayer.boxes:
            place(box)
        place(sublayer.add)
        add, right = out.boxes[-1], left + box_w + RESIDUAL
        out.residuals.append([(centre, split), (right, split), (right, add.y + add.h / 2),
                              (left + box_w, add.y + add.h / 2)])
    title_bottom = y - GAP + FRAME / 2
    frame_top = title_bottom + len(_lines(column.title)) * LINE * font + FRAME / 2
    out.frame = (x0, frame_bottom, out.width, frame_top - frame_bottom)
    out.lines.append([(centre, y - GAP), (centre, title_bottom)])  # up to the title
    y = frame_top + GAP
    for n, box in enumerate(column.above):
        place(box, start=frame_top if n == 0 else None)
    out.height = y - GAP
    return out


def _head(path: list[tuple[float, float]]) -> tuple[float, float, float, float]:
    """The last segment's unit direction and end point (dx, dy, x, y) of a path (SVG coordinates)."""
    (x1, y1), (x2, y2) = path[-2], path[-1]
    length = max(abs(x2 - x1) + abs(y2 - y1), 1e-9)  # the paths run along the axes
    return (x2 - x1) / length, (y2 - y1) / length, x2, y2


def _path(path: list[tuple[float, float]], colour: str = INK, width: float = 1.2, dashed: bool = False) -> str:
    """An arrow along ``path`` (SVG coordinates) in ``colour``, its head a small filled triangle at the end."""
    dx, dy, x, y = _head(path)
    back_x, back_y, side_x, side_y = x - dx * ARROW, y - dy * ARROW, -dy * ARROW / 2, dx * ARROW / 2
    head = (f"{x:.1f},{y:.1f} {back_x + side_x:.1f},{back_y + side_y:.1f} "
            f"{back_x - side_x:.1f},{back_y - side_y:.1f}")
    return (f'<g>{_line([*path[:-1], (back_x, back_y)], colour, width, dashed)}'
            f'<polygon points="{head}" fill="{colour}"/></g>')


def _line(path: list[tuple[float, float]], colour: str = INK, width: float = 1.2, dashed: bool = False) -> str:
    """A line along ``path`` (SVG coordinates), with no arrowhead."""
    points = " ".join(f"{x:.1f},{y:.1f}" for x, y in path)
    dash = ' stroke-dasharray="5 4"' if dashed else ""
    return f'<polyline points="{points}" fill="none" stroke="{colour}" stroke-width="{width}"{dash}/>'


def _text(text: str, x: float, top: float, font: float, fill: str = INK, weight: str = "normal") -> str:
    """Centred lines of ``text`` whose first line's top is at ``top`` (SVG coordinates)."""
    spans = "".join(f'<tspan x="{x:.1f}" dy="{(0.95 if n == 0 else LINE) * font:.1f}">{escape(line)}</tspan>'
                    for n, line in enumerate(_lines(text)))
    return (f'<text x="{x:.1f}" y="{top:.1f}" text-anchor="middle" font-size="{font:.1f}" fill="{fill}" '
            f'font-weight="{weight}">{spans}</text>')


def _down(y: float, content: float) -> float:
    """An up coordinate (from the drawing's bottom, ``content`` high) as SVG's (from its top, margin included)."""
    return MARGIN + content - y


def svg(diagram: Diagram, font_scale: float = 1.0) -> str:
    """``diagram`` as an SVG document at its natural size for ``font_scale`` (an image's page scales it down,
    never up, to its column)."""
    font = FONT * font_scale
    layouts, x0 = [], MARGIN
    for column in diagram.columns:
        layouts.append(_column_layout(column, x0, font))
        x0 += layouts[-1].width + COLUMN_GAP
    width, content = x0 - COLUMN_GAP + MARGIN, max(layout.height for layout in layouts)

    def flip(points: list[tuple[float, float]]) -> list[tuple[float, float]]:
        return [(x, _down(y, content)) for x, y in points]

    parts = []
    for column, layout in zip(diagram.columns, layouts):
        left, bottom, w, h = layout.frame
        top = _down(bottom + h, content)
        parts.append(f'<rect x="{left:.1f}" y="{top:.1f}" width="{w:.1f}" height="{h:.1f}" rx="8" fill="none" '
                     f'stroke="{column.colour}" stroke-width="1.5"/>')
        parts.append(_text(column.title, layout.boxes[0].x + layout.boxes[0].w / 2, top + FRAME / 2, font,
                           weight="600"))
        parts += [_line(flip(points)) for points in layout.lines]
        parts += [_path(flip(arrow)) for arrow in layout.arrows]
        parts += [_path(flip(run), dashed=True) for run in layout.residuals]
        for placed in layout.boxes:
            y = _down(placed.y + placed.h, content)
            parts.append(f'<g><rect x="{placed.x:.1f}" y="{y:.1f}" width="{placed.w:.1f}" '
                         f'height="{placed.h:.1f}" rx="6" fill="{placed.box.fill}" stroke="#555555"/>'
                         + _text(placed.box.label, placed.x + placed.w / 2, y + PAD, font, fill=TEXT)
                         + "</g>")
    if diagram.cross is not None:
        parts.append(_cross(diagram, layouts, content, font))
    height = content + 2 * MARGIN
    return (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width:.0f} {height:.0f}" width="{width:.0f}" '
            f'height="{height:.0f}" font-family="{escape(FONTS)}"><title>{escape(describe(diagram))}</title>'
            f'{"".join(parts)}</svg>')


def _cross(diagram: Diagram, layouts: list[_Layout], content: float, font: float) -> str:
    """The arrow from the box keyed ``cross[0]`` to the box keyed ``cross[1]`` (in the column on its right),
    through the gap between the two columns, with its label over its last run."""
    found = {p.box.key: (n, p) for n, layout in enumerate(layouts) for p in layout.boxes if p.box.key}
    (source_column, source), (_, target) = found[diagram.cross[0]], found[diagram.cross[1]]
    frame_left, _, frame_w, _ = layouts[source_column].frame
    run = frame_left + frame_w + COLUMN_GAP / 2
    start_y, end_y = (_down(p.y + p.h / 2, content) for p in (source, target))
    path = [(source.x + source.w, start_y), (run, start_y), (run, end_y), (target.x, end_y)]
    label = (f'<text x="{(run + target.x) / 2:.1f}" y="{end_y - 5:.1f}" text-anchor="middle" '
             f'font-size="{0.85 * font:.1f}" fill="{CROSS}" font-weight="600">{escape(diagram.cross_label)}</text>')
    return _path(path, CROSS, 2.2) + label


def describe(diagram: Diagram) -> str:
    """The diagram in words, for its image's alternative text: its columns' titles, first line each."""
    return "Block diagram: " + "; ".join(column.title.splitlines()[0] for column in diagram.columns)

