"""``python -m core COMMAND …``: the command-line tools in one place.

- ``train``    train a model on a built-in task (``core.training.trainer``)
- ``evaluate`` re-measure checkpoints on their held-out split (``core.training.evaluation``)
- ``explain``  print a checkpoint's prediction and each head's most-attended key (``core.inspect.explainer``)
- ``import``   turn a PyTorch ``nn.Transformer`` state dict into a checkpoint (``core.io.convert.cli``)
"""

from __future__ import annotations

import sys
from typing import Callable

from core.inspect import explainer
from core.io.convert import cli as interop_cli
from core.training import evaluation, trainer

COMMANDS: dict[str, Callable[[list[str] | None], int]] = {
    "train": trainer.main,
    "evaluate": evaluation.main,
    "explain": explainer.main,
    "import": interop_cli.main,
}


def main(argv: list[str] | None = None) -> int:
    """Dispatch ``argv[0]`` to its command's ``main``; print the list of commands otherwise."""
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] not in COMMANDS:
        sys.stderr.write(__doc__.split("\n\n", 1)[1] if args and args[0] in ("-h", "--help") else
                         f"usage: python -m core {{{','.join(COMMANDS)}}} …\n")
        return 0 if args and args[0] in ("-h", "--help") else 2
    return COMMANDS[args[0]](args[1:])


if __name__ == "__main__":
    sys.exit(main())
