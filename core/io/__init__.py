"""Everything that reads or writes files: checkpoints, tokenizers and importers."""
