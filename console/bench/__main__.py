"""`python -m console.bench ARGS` is `gpudeck bench ARGS`."""
import sys

from console.cli import main

raise SystemExit(main(["bench", *sys.argv[1:]]))
