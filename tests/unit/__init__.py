"""Unit tests: core, seconds each (a few also check the app service a core result feeds: catalog, jobs)."""
