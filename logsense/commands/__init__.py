"""One module per subcommand: each has `main(...) -> int` and knows nothing of typer."""
