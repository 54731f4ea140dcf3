"""``python -m bench [SECTION …]``: run the benchmark sections and print one table.

Sections: ``inference`` (explain, forward vs nn.Transformer, long inputs), ``long`` (SmolLM2 on 512–8,192
tokens through the trace: explain, one head, a pooled layer, against transformers' SDPA floor and eager maps), ``pretrained`` (MiniLM and
SmolLM2: load time and a 32-token forward with every map), ``families`` (random models of real sizes as
Hugging Face folders: our forward with every map against transformers' eager one, load time and memory:
BERT-base), ``decoders`` (GPT-2-small), ``seq2seq`` (a Marian-sized model, greedy decoding), ``whisper``
(a 5 s clip: features, encoder, greedy decoding with every map), ``training`` (reverse to 99 % and tokens/s
against an nn.Transformer trainer), ``soak`` (16 sessions sharing the app's gate, one of them
hostile: p95 and mismatches), ``gpu`` (CUDA only: explain on the GPU against the CPU, the long input there,
a 1 B-parameter Llama-shaped folder, training tokens/s, MFU and memory of the base model in bf16),
``soak_fair`` (a translation session beside three SmolLM2 sessions: p95 ratio under the cost-weighted gate),
``soak_hostile`` (a victim beside 8 busy sessions, then beside them and a hostile uploader: GGUF bombs, a zip bomb,
a corrupted checkpoint, with a backtracking tokenizer and a slow legal upload)
``classroom`` (a class of non-rendering websocket sessions on loopback: a teacher's Next reaching 30 and 100
students, an idle class's CPU, 100 answers on the projector, and two classes of 50 on two processes behind nginx)
and ``browser`` (the app served and timed in Chromium: page drawn, edits, slider moves, long and deep models,
8 sessions; skipped with a line saying why where Chromium or Playwright is missing); ``browser_learn`` runs
the browser section's Learn-page rows alone, ``browser_floor`` its floor rows (each move and Learn first draw
against the bare page sending as many elements), ``big`` (random Llama-3.2-1B-shaped bf16 folder and Q4_K_M
GGUF against transformers: load time, peak memory against the file, explain of 512 tokens; a 7 B folder where
the machine holds it), ``research`` (SmolLM2's 270-head sweep and logit lens on 16 tokens against their forward
passes). With no argument every section runs. The table is Markdown; the machine, the date and the
load are printed above it, and the whole run is appended to ``bench/RESULTS.md`` (the benchmark record;
``$ATTNSCOPE_BENCH_RESULTS`` names another file, ``--no-record`` writes none).
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import sys
from pathlib import Path

import torch

from bench import (big, browser, browser_canvas, browser_floor, browser_learn, classroom, families, families_decoders,
                   families_seq2seq, gpu, inference, long, pretrained, research, soak, soak_fair, soak_hostile,
                   train_speed, whisper)
from bench.table import markdown

SECTIONS = {"inference": inference.run, "long": long.run, "pretrained": pretrained.run, "families": families.run,
            "decoders": families_decoders.run, "seq2seq": families_seq2seq.run, "whisper": whisper.run,
            "training": train_speed.run, "soak": soak.run, "soak_fair": soak_fair.run,
            "soak_hostile": soak_hostile.run, "gpu": gpu.run, "browser": browser.run,
            "browser_canvas": browser_canvas.run,
            "browser_learn": browser_learn.run, "browser_floor": browser_floor.run, "big": big.run,
            "classroom": classroom.run, "research": research.run}


def machine() -> str:
    """One line naming the machine the figures come from."""
    return (f"{platform.processor() or platform.machine()}, {torch.get_num_threads()} threads available, "
            f"torch {torch.__version__}, Python {platform.python_version()}")


RESULTS = Path(__file__).resolve().parent / "RESULTS.md"


def record(path: Path, sections: list[str], host: str, loads: tuple[tuple[float, ...], tuple[float, ...]],
           table: str, when: datetime.datetime) -> None:
    """Append one run to the benchmark record at ``path`` (created with its title when missing)."""
    before, after = (" / ".join(f"{x:.1f}" for x in load) for load in loads)
    header = (f"\n## {when:%Y-%m-%d %H:%M} UTC · `python -m bench {' '.join(sections)}`\n\n"
              f"Machine: {host}. Load average (1 / 5 / 15 min): {before} before, {after} after. "
              f"`OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}`.\n\n")
    if not path.exists():
        path.write_text("# Benchmark record\n\nEvery run of `python -m bench`, newest last: its machine, load and "
                        "table (each row's baseline measured in the same run).\n", encoding="utf-8")
    with path.open("a", encoding="utf-8") as out:
        out.write(header + table + "\n")


def main(argv: list[str] | None = None) -> int:
    """Run the chosen sections, print the machine and the table, and append the run to the record."""
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    parser.add_argument("sections", nargs="*", choices=[[], *SECTIONS, *big.PARTS],
                        help=f"sections to run (default: all); after big, its parts ({', '.join(big.PARTS)})")
    parser.add_argument("--no-record", action="store_true", help="do not append the run to bench/RESULTS.md")
    args = parser.parse_args(argv)
    rows, host, load = [], machine(), os.getloadavg()  # before the sections change the thread count
    chosen = args.sections or list(SECTIONS)
    parts = tuple(name for name in chosen if name in big.PARTS)  # ``big 1b gguf``: those parts of big only
    for name in (name for name in chosen if name in SECTIONS):
        sys.stderr.write(f"running {name}…\n")
        rows.extend(SECTIONS[name](parts) if name == "big" and parts else SECTIONS[name]())
    table = markdown(rows)
    sys.stdout.write(f"Machine: {host}\n\n{table}\n")
    if not args.no_record:
        record(Path(os.environ.get("ATTNSCOPE_BENCH_RESULTS") or RESULTS), chosen, host, (load, os.getloadavg()),
               table, datetime.datetime.now(datetime.timezone.utc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
