"""The floors of ``core/`` in the order of the flow: no module imports one on a floor above it.

text (and audio) → model → io → generate → inspect → training → lessons → the face (``core/__init__``, ``cli``);
``config``/``budget``/``device`` and ``tasks`` (pure data) are the ground. The app reaches core only
through ``core/__init__``, never imports torch, and neither ``core/`` nor ``app/`` imports ``transformers``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FLOORS = {
    "core.config": 0, "core.budget": 0, "core.device": 0,
    "core.tasks": 1, "core.text": 2, "core.audio": 2, "core.model": 3, "core.io": 4, "core.generate": 5,
    "core.inspect": 6, "core.training": 7, "core.lessons": 8, "core.cli": 9, "core": 10, "core.__main__": 10,
}


def floor(module: str) -> int:
    """The floor of a ``core`` module: its longest registered package prefix (a package with no floor
    raises KeyError, so a new package must be placed)."""
    parts = module.split(".")
    for end in range(len(parts), 1, -1):
        if ".".join(parts[:end]) in FLOORS:
            return FLOORS[".".join(parts[:end])]
    if module in FLOORS:
        return FLOORS[module]
    raise KeyError(module)


def imports(path: Path) -> list[str]:
    """Every module a file imports (absolute ``import``/``from … import``), type-only imports included."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append(node.module)
        elif isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names)
    return found


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


CORE_FILES = sorted((ROOT / "core").rglob("*.py"))


def test_every_core_package_has_a_floor():
    assert all(floor(module_name(path)) >= 0 for path in CORE_FILES)


def upward(path: Path, module: str) -> list[str]:
    """The ``core`` modules ``path`` (module ``module``) imports from a floor above its own."""
    return [m for m in imports(path) if m.startswith("core.") and floor(m) > floor(module)]


@pytest.mark.parametrize("path", CORE_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_core_module_imports_a_floor_above_its_own(path):
    assert not upward(path, module_name(path)), f"{module_name(path)} imports a floor above its own"


def test_the_rule_catches_an_upward_import(tmp_path):
    """The check itself can fail: a model module importing the explain pipeline is caught, a lateral one not."""
    path = tmp_path / "layer.py"
    path.write_text("from core.model.masks import subsequent_mask\nfrom core.inspect.explainer import explain\n")
    assert upward(path, "core.model.layers") == ["core.inspect.explainer"]


@pytest.mark.parametrize("folder", ["core", "app"])
def test_the_reference_library_is_never_imported(folder):
    offenders = [str(p) for p in (ROOT / folder).rglob("*.py")
                 if any(m.split(".")[0] == "transformers" for m in imports(p))]
    assert not offenders


def test_the_app_uses_only_cores_public_api_and_no_torch():
    for path in (ROOT / "app").rglob("*.py"):
        for module in imports(path):
            assert module.split(".")[0] != "torch", path
            assert not module.startswith("core."), f"{path} imports {module}: use `from core import …`"


#: The app by role: what each folder may import of the app. Services hold no Streamlit page code (no
#: widgets, no caches: only the server's own settings and Host check), UI helpers and charts never reach
#: a page, and pages (``app/views/``) are the only ones that import page parts. The message files' loader
#: (``app.i18n``) sits under charts and UI helpers: it imports nothing of the app.
APP_ROLES = {
    "app.i18n": ("app.i18n",),
    "app.services": ("app.services",),
    "app.charts": ("app.charts", "app.i18n"),
    "app.ui": ("app.services", "app.charts", "app.ui", "app.resources", "app.routes", "app.i18n"),
}
SERVICE_STREAMLIT = {"streamlit.config", "streamlit.web.server.starlette.starlette_websocket"}


def app_imports(path: Path) -> list[str]:
    """The ``app`` modules a file imports, each spelled out (``from app.ui import widgets`` → ``app.ui.widgets``)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "app":
            found.extend(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names if alias.name.split(".")[0] == "app")
    return found


@pytest.mark.parametrize("role", sorted(APP_ROLES))
def test_each_app_role_imports_only_what_sits_below_it(role):
    folder = ROOT / role.replace(".", "/")
    assert folder.is_dir()
    for path in folder.rglob("*.py"):
        for module in app_imports(path):
            assert module.startswith(APP_ROLES[role]), f"{path.relative_to(ROOT)} imports {module}"


def test_services_use_no_streamlit_page_api():
    for path in (ROOT / "app" / "services").rglob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                assert not any(a.name.split(".")[0] == "streamlit" for a in node.names), path
            elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "streamlit":
                used = {node.module} | {f"{node.module}.{a.name}" for a in node.names}
                assert used & SERVICE_STREAMLIT, f"{path.relative_to(ROOT)} imports {node.module}"


def test_the_role_rule_catches_a_service_that_reaches_a_page(tmp_path):
    service = tmp_path / "bad.py"
    service.write_text("from app.views.parts.explore import views\n")
    assert app_imports(service) == ["app.views.parts.explore.views"]
    assert not "app.views.parts.explore.views".startswith(APP_ROLES["app.services"])


#: The lessons still built on a family's own classes (a pretrained encoder-decoder's Lesson trace, Whisper's
#: parameter table); every other lesson reads the contract and the trace. The list may only shrink.
FAMILY_LESSONS = {"core.lessons.walkthrough_seq2seq", "core.lessons.whisper_parameters"}


def _private_imports(path: Path) -> list[str]:
    """``from core.x import _name`` imports of another module's private names."""
    return [f"{node.module}.{alias.name}" for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("core")
            for alias in node.names if alias.name.startswith("_")]


def test_lessons_import_no_family_and_no_private_name():
    """``core/lessons`` reads models through the contract and the trace: no ``core.model.families`` import (but
    :data:`FAMILY_LESSONS`) and no other module's ``_private`` name."""
    lessons = [p for p in CORE_FILES if module_name(p).startswith("core.lessons")]
    families = {module_name(p): [m for m in imports(p) if m.startswith("core.model.families")] for p in lessons}
    assert {m for m, found in families.items() if found} <= FAMILY_LESSONS
    assert {m: _private_imports(p) for p in lessons if _private_imports(p) for m in [module_name(p)]} == {}
    assert not any(m.startswith("core.model.families") for m in imports(ROOT / "core/lessons/walkthrough_stack.py"))
