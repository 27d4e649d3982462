"""Read models: typed views over the database for the CLI, the console and /metrics."""
