"""The `bf4ps` command line: one module per command group."""
