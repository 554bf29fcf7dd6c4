"""Output of runs: fio-compatible JSON and terminal tables."""
from .fio_json import fio_json
from .text import run_summary, share_table

__all__ = ["fio_json", "run_summary", "share_table"]
