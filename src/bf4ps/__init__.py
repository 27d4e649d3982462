"""BF4PS: Battlefield 4 Player Stats."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("bf4ps")
except PackageNotFoundError:  # running from a source tree without install
    __version__ = "0.0.0+src"
