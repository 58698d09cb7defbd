"""hypa: dynamic PTX instruction counts without a GPU (hybrid PTX analysis)."""

__version__ = "0.1.0"
