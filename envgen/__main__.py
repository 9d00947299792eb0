"""``python -m envgen ...``: the ``envwright`` command (:mod:`envgen.cli`); ``accelerate launch -m envgen`` too."""

from envgen.cli import main

main()
