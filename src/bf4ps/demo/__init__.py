"""`bf4ps demo`: the whole system on its embedded defaults, in one command."""
