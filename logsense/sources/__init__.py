"""Where records come from: recorded files (plain or .gz), stdin, followed files, journald."""

from logsense.sources.recorded import open_recorded, read_lines

__all__ = ["FileFollower", "JournalSource", "open_recorded", "read_lines"]


def __getattr__(name: str):
    # the live sources are imported when asked for: `analyze` never pays for them
    if name == "FileFollower":
        from logsense.sources.follow import FileFollower

        return FileFollower
    if name == "JournalSource":
        from logsense.sources.journald import JournalSource

        return JournalSource
    raise AttributeError(f"module 'logsense.sources' has no attribute {name!r}")
