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
