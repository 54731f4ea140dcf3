#!/usr/bin/env bash
# The shipped speech clips (assets/audio/*.flac): synthesised offline with espeak-ng (130 words a
# minute, a short gap between words), then decoded, mixed to mono and resampled to 16 kHz by
# Attnscope's own audio front end (core.audio), given 0.4 s of silence at each end and written as
# 16-bit FLAC. (A longer Spanish sentence: espeak-ng's "Yo tengo gatos." alone is too robotic for
# Whisper base to translate.) Needs: apt-get install -y espeak-ng; run from the repository root:
#   bash assets/make_audio_clips.sh
set -euo pipefail
out=assets/audio
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$out"
# name|espeak-ng voice|sentence
clips=(
  "i_have_two_cats|en-us|I have two cats."
  "the_black_cat_sleeps|en-us|The black cat sleeps."
  "yo_tengo_gatos|es|Hola. Yo tengo gatos en mi casa."
)
for clip in "${clips[@]}"; do
  IFS='|' read -r name voice text <<<"$clip"
  espeak-ng -v "$voice" -s 130 -g 8 -w "$tmp/$name.wav" "$text"
  python - "$tmp/$name.wav" "$out/$name.flac" <<'PY'
import sys
from pathlib import Path

import numpy as np
import soundfile

from core.audio.decode import SAMPLE_RATE, load_audio

audio = load_audio(Path(sys.argv[1]).read_bytes(), name=Path(sys.argv[1]).name)
silence = np.zeros(int(0.4 * SAMPLE_RATE), dtype=np.float32)
soundfile.write(sys.argv[2], np.concatenate([silence, audio.samples, silence]), SAMPLE_RATE, format="FLAC",
                subtype="PCM_16")
PY
  echo "$out/$name.flac: $text"
done
