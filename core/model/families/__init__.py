"""Pretrained model families beside the paper's model, each one file on the model contract."""
