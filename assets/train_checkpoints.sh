#!/usr/bin/env bash
# Re-train every shipped checkpoint in assets/checkpoints/ from scratch (CPU, about 30-40 min on 2 cores).
# Each command is also recorded inside its checkpoint (extra["train"]["command"]).
# Usage: bash assets/train_checkpoints.sh [task ...]
set -euo pipefail
cd "$(dirname "$0")/.."
declare -A FLAGS=(
  [copy]="--steps=2000 --stop_at=1.0"
  [reverse]="--steps=3000 --stop_at=1.0"
  [sort]="--steps=8000 --stop_at=1.0 --train_size=60000 --dropout=0.0 --label_smoothing=0.0"
  [dates]="--steps=5000 --stop_at=1.0"
  [addition]="--preset=medium --steps=8000 --warmup=800 --stop_at=0.998"
  [translation]="--steps=5000 --stop_at=1.0"
  [sentiment]="--steps=3000 --stop_at=1.0 --snapshot_every=25 --eval_every=50"
  [lm]="--steps=5000 --patience=4"
)
tasks=("$@")
[ ${#tasks[@]} -gt 0 ] || tasks=(copy reverse sort dates addition translation sentiment lm)
for task in "${tasks[@]}"; do
  # shellcheck disable=SC2086
  python -m core train --task="$task" --out="assets/checkpoints/$task.safetensors" --progress=false ${FLAGS[$task]}
  rm -f "assets/checkpoints/$task.train-state.safetensors"
done
python -m core evaluate assets/checkpoints/*.safetensors
