"""Typed errors of the agentbox API: one class per envelope code.

Every failure the daemon answers carries the envelope
``{"error": {"code", "message", "retryable", "suggested_action"}}`` and a status;
:func:`from_envelope` turns it into the matching subclass of :class:`APIError`.
"""


class AgentboxError(Exception):
    """Base of every error this client raises."""


class ConnectionFailed(AgentboxError):
    """Nothing answers at the address (no daemon, a dead socket, a dropped route)."""


class APIError(AgentboxError):
    """An error envelope from the daemon."""

    code = ""

    def __init__(self, message, status=0, code="", retryable=False, suggested_action="", request_id=""):
        super().__init__(message)
        self.message = message
        self.status = status
        self.code = code or self.code
        self.retryable = retryable
        self.suggested_action = suggested_action
        self.request_id = request_id

    def __str__(self):
        s = "%s: %s" % (self.code, self.message)
        if self.suggested_action:
            s += " (%s)" % self.suggested_action
        return s


class InvalidRequest(APIError):
    code = "EINVAL"


class AuthError(APIError):
    code = "EAUTH"


class PermissionDenied(APIError):
    code = "EPERM"


class NotFound(APIError):
    code = "ENOENT"


class AlreadyExists(APIError):
    code = "EEXIST"


class Busy(APIError):
    code = "EBUSY"


class Conflict(APIError):
    code = "ECONFLICT"


class Paused(APIError):
    """The environment is paused: resume it before running commands."""
    code = "EPAUSED"


class BodyTimeout(APIError):
    code = "ETIMEDOUT"


class TooLarge(APIError):
    code = "EFBIG"


class QuotaExceeded(APIError):
    code = "EQUOTA"


class RateLimited(APIError):
    code = "ERATE"


class Internal(APIError):
    code = "EINTERNAL"


class Unavailable(APIError):
    code = "EUNAVAIL"


class NoSpace(APIError):
    code = "ENOSPC"


_BY_CODE = {c.code: c for c in (InvalidRequest, AuthError, PermissionDenied, NotFound, AlreadyExists, Busy,
                                 Conflict, Paused, BodyTimeout, TooLarge, QuotaExceeded, RateLimited, Internal,
                                 Unavailable, NoSpace)}


def from_envelope(status, body, request_id=""):
    """Return the APIError for a response body (bytes or a decoded dict)."""
    import json

    env = body
    if isinstance(body, (bytes, str)):
        try:
            env = json.loads(body or b"{}")
        except ValueError:
            env = {}
    e = (env or {}).get("error") if isinstance(env, dict) else None
    if not isinstance(e, dict):
        text = body.decode("utf-8", "replace") if isinstance(body, bytes) else str(body)
        return APIError("HTTP %d: %s" % (status, text[:200].strip()), status=status, code="EUNKNOWN",
                        request_id=request_id)
    cls = _BY_CODE.get(e.get("code", ""), APIError)
    return cls(e.get("message", ""), status=status, code=e.get("code", ""), retryable=bool(e.get("retryable")),
               suggested_action=e.get("suggested_action", ""), request_id=request_id)
