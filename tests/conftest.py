"""The fixtures every kind of test shares (tests/unit, tests/app, tests/browser); the helpers they are
built from (tiny models, checkpoints, training settings) live in ``tests/helpers/tiny.py``.
"""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest
import torch

from core.config import ARCHITECTURES
from core.io.checkpoint import Checkpoint, load
from core.text.tokenizer import Tokenizer
from tests.helpers.tiny import CHAR_CORPUS, build_checkpoint, payload_bytes


@pytest.fixture(scope="session", autouse=True)
def single_intra_op_thread():
    """Tiny models run fastest on one thread; extra threads only spin when the CPU is shared."""
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)


@pytest.fixture(autouse=True)
def no_hub_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """The app offers the machine's Hugging Face cache when no models folder is given: tests never see the
    real one (a test that wants a cache sets ``HF_HUB_CACHE`` itself)."""
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path_factory.getbasetemp() / "no-hub-cache"))


@pytest.fixture
def marker_payload(tmp_path: Path) -> tuple[bytes, Path]:
    """(payload bytes, marker path). Verifies first that the payload is live, so tests that
    assert "the marker does not exist" could fail."""
    probe = tmp_path / "probe-marker"
    pickle.loads(payload_bytes(probe))["weight"].close()
    assert probe.exists(), "the pickle payload must really run code when unpickled"
    marker = tmp_path / "pwned-marker"
    return payload_bytes(marker), marker


@pytest.fixture(scope="session")
def char_tokenizer() -> Tokenizer:
    return Tokenizer.train("char", CHAR_CORPUS)


@pytest.fixture(scope="session")
def checkpoint_paths(tmp_path_factory: pytest.TempPathFactory, char_tokenizer: Tokenizer) -> dict[str, Path]:
    """architecture → path of a tiny random checkpoint with char tokenizers."""
    folder = tmp_path_factory.mktemp("checkpoints")
    return {
        arch: build_checkpoint(folder / f"{arch}.safetensors", arch, char_tokenizer, seed=i)
        for i, arch in enumerate(ARCHITECTURES)
    }


@pytest.fixture(scope="session")
def checkpoints(checkpoint_paths: dict[str, Path]) -> dict[str, Checkpoint]:
    """architecture → the loaded checkpoint (shared: tests must not modify the models)."""
    return {arch: load(path) for arch, path in checkpoint_paths.items()}



@pytest.fixture
def saved(tmp_path: Path, char_tokenizer: Tokenizer) -> Path:
    """A fresh tiny encoder-decoder checkpoint at ``tmp_path/model.safetensors`` (the test may break it)."""
    return build_checkpoint(tmp_path / "model.safetensors", "encoder-decoder", char_tokenizer)

# ----------------------------------------------------------------------------- the app
@pytest.fixture
def runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """An empty runs folder for the app (``ATTNSCOPE_RUNS``), so tests never touch the user's runs.

    The catalog cache and the training job registry are process-wide: the catalog is
    forgotten before and after, and no job is left training.
    """
    from app import resources  # the app's caches: only for the tests that use the app

    monkeypatch.setenv("ATTNSCOPE_RUNS", str(tmp_path))
    resources.entries.clear()
    yield tmp_path
    resources.entries.clear()
    for job in resources.registry().jobs():
        job.stop()
        assert job.join(timeout=120)
        resources.registry().forget(job.name)


# ----------------------------------------------------------------------------- parallel runs
@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups into the test ids
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under ``pytest -n N --dist loadgroup`` (the README's test command) the browser tests run one after another
    on one worker: each serves the app and drives Chromium, and two at once would starve each other's servers on a
    2-core machine. Unit and app tests spread over the other workers."""
    browser = Path(__file__).resolve().parent / "browser"
    for item in items:
        if browser in Path(item.path).resolve().parents:
            item.add_marker(pytest.mark.xdist_group("browser"))
