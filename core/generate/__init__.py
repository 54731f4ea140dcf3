"""Autoregressive generation for every decoder on the model contract: greedy, beam and sampling."""
