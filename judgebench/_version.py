"""The package's version: a leaf module (it imports nothing), so any module may read it at
import time without importing the package's API."""

__version__ = "0.1.0"
