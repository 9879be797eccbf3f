"""User-facing errors: one line that names the problem and the fix."""


class UserError(Exception):
    """A problem the user can fix; printed as one line, exit status 2 unless told otherwise."""

    def __init__(self, message: str, exit_code: int = 2):
        super().__init__(message)
        self.exit_code = exit_code
