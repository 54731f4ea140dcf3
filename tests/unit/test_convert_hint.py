"""The one-line way to convert a pickle-only Hugging Face folder keeps its task head and names its own path.

``AutoModel`` would drop a ``BertForSequenceClassification``'s classifier, so the command names the class of
``config.json``'s ``architectures`` when that is one plain identifier (it is untrusted text shown to the user),
else ``AutoModel``; the folder's path is quoted for Python and for the shell. Each command is parsed back
(``shlex`` then ``ast``) and must do exactly that; nothing is ever unpickled or run.
"""

from __future__ import annotations

import ast
import json
import pickle
import shlex
from pathlib import Path

import pytest

from core import CheckpointError, load_pretrained
from core.io.identify import identify
from core.io.pretrained.hf_files import convert_command


def _pickle_folder(root: Path, name: str, config: dict | None) -> Path:
    folder = root / name
    folder.mkdir()
    if config is not None:
        (folder / "config.json").write_text(json.dumps(config))
    (folder / "pytorch_model.bin").write_bytes(pickle.dumps({"weight": [1.0]}, protocol=2))
    return folder


def _parsed(command: str) -> tuple[str, list[str]]:
    """(the imported class, every string argument of its calls) of ``python -c CODE`` in backticks."""
    assert command.startswith("`") and command.endswith("`")
    words = shlex.split(command[1:-1])
    assert words[:2] == ["python", "-c"] and len(words) == 3
    tree = ast.parse(words[2])
    imported = [node for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)]
    assert len(imported) == 1 and imported[0].module == "transformers" and len(imported[0].names) == 1
    calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call)]
    assert sorted(c.func.attr for c in calls) == ["from_pretrained", "save_pretrained"]
    assert all(k.arg == "safe_serialization" and k.value.value is True for c in calls for k in c.keywords)
    return imported[0].names[0].name, [a.value for c in calls for a in c.args]


def test_a_classifier_folder_is_told_to_convert_with_its_own_class(tmp_path):
    folder = _pickle_folder(tmp_path, "sentiment", {"model_type": "bert",
                                                    "architectures": ["BertForSequenceClassification"]})
    with pytest.raises(CheckpointError) as caught:
        load_pretrained(folder)
    message = str(caught.value)
    assert "\n" not in message and message.startswith("sentiment has no safetensors weights: pytorch_model.bin is a")
    command = message[message.index("`"):]
    assert _parsed(command) == ("BertForSequenceClassification", [str(folder.absolute())] * 2)


@pytest.mark.parametrize("architectures", [["os; import os"], ["BertModel", "BertForMaskedLM"], "BertModel", [3],
                                           ["class"], ["Bért"], [], ["X" * 101]])
def test_architectures_that_are_not_one_plain_identifier_fall_back_to_automodel(architectures, tmp_path):
    folder = _pickle_folder(tmp_path, "odd", {"model_type": "bert", "architectures": architectures})
    assert _parsed(convert_command(folder))[0] == "AutoModel"


def test_a_folder_without_a_readable_config_falls_back_to_automodel(tmp_path):
    assert _parsed(convert_command(_pickle_folder(tmp_path, "bare", None)))[0] == "AutoModel"
    broken = _pickle_folder(tmp_path, "broken", None)
    (broken / "config.json").write_text("{not json")
    assert _parsed(convert_command(broken))[0] == "AutoModel"


def test_a_hostile_path_stays_one_string_for_the_shell_and_for_python(tmp_path):
    folder = _pickle_folder(tmp_path, "it's a \"$HOME\" `dir`\\ ; rm -rf x", {"architectures": ["GPT2LMHeadModel"]})
    name, paths = _parsed(convert_command(folder))
    assert name == "GPT2LMHeadModel" and paths == [str(folder.absolute())] * 2


def test_identify_names_the_class_of_the_folder_holding_a_pickle(tmp_path):
    folder = _pickle_folder(tmp_path, "tagger", {"architectures": ["BertForTokenClassification"]})
    with pytest.raises(CheckpointError, match="never loaded") as caught:
        identify(folder / "pytorch_model.bin")
    command = str(caught.value)
    command = command[command.index("`"):command.rindex("`") + 1]
    assert _parsed(command) == ("BertForTokenClassification", [str(folder.absolute())] * 2)
    without = _pickle_folder(tmp_path, "weights-only", None)
    (without / "pytorch_model.bin").rename(without / "pytorch_model-00001-of-00002.bin")
    with pytest.raises(CheckpointError, match="no config.json nor safetensors") as caught:
        identify(without)
    assert _parsed(str(caught.value)[str(caught.value).index("`"):])[0] == "AutoModel"
