"""Extra math, as Triton's ``triton.language.extra``: ``from enceladus.language.extra import libdevice``."""

from . import libdevice

__all__ = ["libdevice"]
