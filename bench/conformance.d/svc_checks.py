"""A schemathesis check for bench/conformance, loaded through SCHEMATHESIS_HOOKS=svc_checks.

`svc_internal_error`: a response is a 5xx, or a GraphQL response whose errors carry the
reference's message for an unexpected failure ("Whoops. Looks like an internal server error",
which the server gives with HTTP 200). GraphQL errors with a code (a node that does not exist,
a permission, a unique value taken, …) are answers, not failures.
"""

import schemathesis

WHOOPS = "Whoops. Looks like an internal server error"


@schemathesis.check
def svc_internal_error(ctx, response, case):
    if response.status_code >= 500:
        raise AssertionError(f"HTTP {response.status_code}: {response.text[:500]}")
    if WHOOPS in response.text:
        raise AssertionError(f"internal error: {response.text[:500]}")
