"""Type stub of the optional compiled core (_fastcore.c); see sim/fast.py and selectors/accelerated.py."""
from typing import Any

def __getattr__(name: str) -> Any: ...
