"""Where records come from: recorded files (plain or .gz), stdin, followed files, journald."""

from logsense.sources.recorded import open_recorded, read_lines

__all__ = ["open_recorded", "read_lines"]
