"""Readers of pretrained formats (Hugging Face folders, GGUF files) into the model families."""
