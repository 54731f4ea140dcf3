"""Helpers shared by the tests of every kind: tiny references, crafted files, AppTest and browser drivers."""
