"""The collector registry as operators change it (drain, resume, disable, retire): used by the
CLI and the operator console alike, below both."""
