"""One exception type for user-facing failures: the CLI prints its message as one line and exits non-zero."""


class LevanteError(Exception):
    """A problem with the user's input or environment, reported as one line naming the file and the problem."""
