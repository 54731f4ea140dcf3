"""The paper's model: attention, masks, positional encodings, layers and the Transformer."""
