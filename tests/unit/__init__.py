"""Unit tests: core (and bench's pure parts), seconds each; a few also check the app service core feeds."""
