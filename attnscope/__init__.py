"""The ``attnscope`` command: ``attnscope serve | explain | train | evaluate | report | import``.

This small package is all that ``pip install -e .`` puts on the import path: the project's own packages keep
their short names (``core``, ``app``) inside the checkout, which the command adds to ``sys.path`` from its own
location, so an installed Attnscope never shadows another distribution's ``core`` or ``app``.
"""
