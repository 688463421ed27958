"""What each route declares, held to in one place before any handler runs.

- An API operation (one the OpenAPI document lists) takes only the query parameters its handler
  declares: a misspelt filter (`?limt=1`, `?sinse=...`) is a 422 naming it, never a silently
  unfiltered answer. The pages, their static files and the sockets take any query, since a
  shared link may carry a tracker's or a cache-buster's parameters.
- The methods a path takes are listed the same way everywhere (`allow_header`): HEAD wherever
  GET is (the front door serves HEAD as GET), in a fixed order. OPTIONS answers `204` with that
  list; Litestar's own OPTIONS handler lists the methods of the first handler registered on a
  path, not all of them.

The declarations are read once, from the routes Litestar built, when the app starts."""

from __future__ import annotations

from collections.abc import Iterable

from litestar import Litestar, Request, Response
from litestar.handlers import HTTPRouteHandler
from litestar.routes import HTTPRoute
from litestar.status_codes import HTTP_204_NO_CONTENT

from service.domain.errors import ValidationFailed, clip

_METHOD_ORDER = {
    m: i for i, m in enumerate(("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"))
}
_STATE_KEY = "declared"

# A handler's declaration: the query parameter names it takes, or, for an OPTIONS handler,
# the answer's Allow header.
Declaration = frozenset[str] | str


def allow_header(methods: str | Iterable[str]) -> str:
    """The `Allow` value for a path taking `methods` (an iterable or a comma-separated list)."""
    items = methods.split(",") if isinstance(methods, str) else methods
    names = {str(m).strip().upper() for m in items} - {""}
    if "GET" in names:
        names.add("HEAD")
    return ", ".join(sorted(names, key=lambda m: (_METHOD_ORDER.get(m, len(_METHOD_ORDER)), m)))


def _declarations(app: Litestar) -> dict[HTTPRouteHandler, Declaration]:
    table: dict[HTTPRouteHandler, Declaration] = {}
    for route in app.routes:
        if not isinstance(route, HTTPRoute):
            continue
        for method, (handler, kwargs_model) in route.route_handler_map.items():
            if method == "OPTIONS":  # no handler of ours takes OPTIONS: Litestar's own
                table[handler] = allow_header(route.methods)
            elif handler.resolve_include_in_schema():
                query = kwargs_model.expected_query_params
                table[handler] = frozenset(param.field_alias for param in query)
    return table


def install(app: Litestar) -> None:
    """Read the routes' declarations (at start-up, once every route exists)."""
    app.state[_STATE_KEY] = _declarations(app)


async def hold_to_declarations(request: Request) -> Response | None:
    """The app's `before_request`: answer OPTIONS, refuse undeclared query parameters."""
    declared = request.app.state[_STATE_KEY].get(request.route_handler)
    if isinstance(declared, str):
        return Response(None, status_code=HTTP_204_NO_CONTENT, headers={"Allow": declared})
    if declared is not None and request.scope["query_string"]:
        unknown = sorted(set(request.query_params) - declared)
        if unknown:
            raise _unknown_parameters(unknown, declared)
    return None


def _unknown_parameters(unknown: list[str], declared: frozenset[str]) -> ValidationFailed:
    taken = ", ".join(sorted(declared)) or "none"
    message = f"Unknown query parameter; this endpoint takes: {taken}."
    details = [{"field": clip(name), "message": message} for name in unknown]
    # One sentence however many there are: what an error repeats of the request is bounded.
    noun = "parameter" if len(unknown) == 1 else "parameters"
    names = clip(", ".join(unknown))
    sentence = f"Unknown query {noun} ({names}); this endpoint takes: {taken}."
    return ValidationFailed(sentence, details)
