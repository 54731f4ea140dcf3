"""Text becomes tokens: tokenizers (ours and pretrained models'), input preparation and truncation."""
