"""The English words of the translation grammar, and how many of English's commonest words the shipped model
knows (``wordfreq``: a test and build-time dependency only)."""

from __future__ import annotations

import ast
import random
import re
from pathlib import Path

import pytest

from core import get_task, load_checkpoint, input_vocabulary
from core.cli.frequent import frequent_english, known
from core.tasks import translation
from core.tasks.wordlist import ENGLISH_WORDS, FRAGMENTS, GRAMMAR_WORDS, english_word_count
from tests.helpers.paths import SHIPPED

ROOT = Path(__file__).resolve().parents[2]


def test_every_english_word_the_grammar_writes_is_counted():
    rng = random.Random(3)
    written = {w for _ in range(4000) for w in re.findall(r"\w+", translation.sentence(rng)[0])}
    names_and_digits = {w for w in written if w not in GRAMMAR_WORDS or w.isdigit()}
    assert written - names_and_digits <= ENGLISH_WORDS
    assert "gato" not in ENGLISH_WORDS and "cat" in ENGLISH_WORDS  # English only
    assert english_word_count() == len(ENGLISH_WORDS - FRAGMENTS) == 1369


def test_the_task_names_its_model_for_what_it_is():
    task = get_task("translation")
    assert f"a generated grammar of {english_word_count():,} English words" in task.scope
    assert f"({english_word_count():,} English words" in task.description


def test_the_frequent_words_skip_fragments_and_digits():
    words = frequent_english(300)
    assert len(words) == len(set(words)) == 300
    assert words[:4] == ("the", "to", "and", "of")
    assert not [w for w in words if w.isdigit() or w in FRAGMENTS or (len(w) == 1 and w not in "ai")]
    assert "don't" in words


def test_a_contraction_is_known_when_its_pieces_are():
    result = known(("the", "didn't", "don't", "of"), {"the", "didn", "t", "'"})
    assert result.missing == ("don't", "of") and result.share == 0.5


def test_the_shipped_models_vocabulary_covers_under_half_of_the_top_300():
    vocabulary = set(input_vocabulary(load_checkpoint(SHIPPED / "translation.safetensors").source_tokenizer))
    result = known(frequent_english(300), vocabulary)
    assert len(result.missing) == 163 and result.share == pytest.approx(137 / 300)  # 45.7 %
    assert result.missing[:6] == ("of", "for", "with", "as", "by", "from")


@pytest.mark.parametrize("folder", ["core", "app"])
def test_wordfreq_is_imported_only_inside_the_build_time_counter(folder):
    for path in (ROOT / folder).rglob("*.py"):
        tree = ast.parse(path.read_text())
        top_level = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
        anywhere = [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]
        named = [n for n in anywhere if "wordfreq" in ast.dump(n)]
        assert not [n for n in named if n in top_level], path
        assert not named or path == ROOT / "core/cli/frequent.py", path
