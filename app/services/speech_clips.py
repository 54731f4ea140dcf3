"""The shipped speech clips (``assets/audio``, synthesised offline by ``assets/make_audio_clips.sh``): the Whisper
page's samples and the Lesson's audio, each named by its file and described by what it says."""

from __future__ import annotations

from pathlib import Path

CLIPS = Path(__file__).resolve().parents[2] / "assets" / "audio"
SENTENCES = {"the_black_cat_sleeps.flac": "The black cat sleeps. (English)",
             "i_have_two_cats.flac": "I have two cats. (English)",
             "yo_tengo_gatos.flac": "Hola. Yo tengo gatos en mi casa. (Spanish)"}


def audio(clip: str) -> bytes:
    """The bytes of the shipped ``clip`` (one of :data:`SENTENCES`: a name from a link never opens another file).

    Raises:
        ValueError: a name that is not a shipped clip.
    """
    if clip not in SENTENCES:
        raise ValueError(f"{clip!r} is not a shipped clip; the clips are {', '.join(SENTENCES)}")
    return (CLIPS / clip).read_bytes()
