"""User-facing errors: one line that names the problem and the fix; and the exit codes of both command
lines (README lists them)."""

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERNAL, EXIT_INTERRUPTED = 0, 1, 2, 70, 130


class UserError(Exception):
    """A problem the user can fix; printed as one line, exit status EXIT_USAGE unless told otherwise."""

    def __init__(self, message: str, exit_code: int = EXIT_USAGE):
        super().__init__(message)
        self.exit_code = exit_code
