"""`python -m logsense` is the same as the `logsense` command."""

from logsense.cli import main

main()
