#!/usr/bin/env bash
# The shipped speech clips (assets/audio/*.flac): synthesised offline with espeak-ng, then decoded,
# mixed to mono and resampled to 16 kHz by Attnscope's own audio front end (core.audio) and written
# as FLAC. Needs: apt-get install -y espeak-ng; run from the repository root:
#   bash assets/make_audio_clips.sh
set -euo pipefail
out=assets/audio
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$out"
# name|espeak-ng voice|sentence
clips=(
  "i_have_cats|en-us|I have cats."
  "the_black_cat_sleeps|en-us|The black cat sleeps."
  "yo_tengo_gatos|es|Yo tengo gatos."
)
for clip in "${clips[@]}"; do
  IFS='|' read -r name voice text <<<"$clip"
  espeak-ng -v "$voice" -s 140 -w "$tmp/$name.wav" "$text"
  python - "$tmp/$name.wav" "$out/$name.flac" <<'PY'
import sys
from pathlib import Path

import soundfile

from core.audio.decode import SAMPLE_RATE, load_audio

audio = load_audio(Path(sys.argv[1]).read_bytes(), name=Path(sys.argv[1]).name)
soundfile.write(sys.argv[2], audio.samples, SAMPLE_RATE, format="FLAC", subtype="PCM_16")
PY
  echo "$out/$name.flac: $text"
done
