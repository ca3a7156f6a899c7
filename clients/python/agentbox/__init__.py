"""agentbox: a client of the agentbox environment API (docs/API.md), standard library only.

    from agentbox import Client
    c = Client()                      # $AGENTBOX_URL/$AGENTBOX_TOKEN, else the local daemon
    e = c.create(workspace="/home/me/src/proj")
    r = c.exec(e.id, ["python3", "-m", "pytest", "-q"])
    proc = c.start(e.id, ["make"])
    for ev in c.events(e.id, proc):   # resumes after a dropped connection
        ...
    c.destroy(e.id)

Errors are subclasses of agentbox.APIError (NotFound, PermissionDenied, Conflict, ...),
one per code of the API's error envelope; agentbox.ConnectionFailed when no daemon answers.
"""

from .client import (Artifact, Client, Environment, Event, EventStream, FileEntry, PatchReport, Result,
                     default_socket)
from .errors import (AgentboxError, AlreadyExists, APIError, AuthError, BodyTimeout, Busy, Conflict,
                     ConnectionFailed, Internal, InvalidRequest, NoSpace, NotFound, Paused, PermissionDenied,
                     QuotaExceeded, RateLimited, TooLarge, Unavailable, from_envelope)
from .agent import AgentContext

__version__ = "0.1.0"
