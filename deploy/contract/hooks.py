"""Schemathesis hooks of flashsale's contract run (deploy/contract/run.sh).

Two rules of the API cannot be written in OpenAPI 3.0, so Schemathesis
generates requests that obey the schema and that the server rightly refuses
(ingress/openapi.yaml, info.description):

- PUT /api/v1/admin/items/{id}: starts_at must be before ends_at;
- PATCH /api/v1/admin/items/{id}: the same, of the patch merged onto the
  stored item (this hook knows the window of every item the run saw
  answered, so it can merge);
- POST /api/v1/orders: qty must be at most the item's per_user_limit;
- PUT and PATCH /api/v1/admin/items/{id}: with queue true, queue_opens_at
  is required and at or before starts_at (for a PATCH with the stored
  item's queue, which this hook also records);
- POST /api/v1/orders with an Idempotency-Key first sent with another
  request: 422 idempotency_key_reused (this hook records the qty of each
  key's first 202 in this run, by caller and item).

filter_failure drops exactly those refusals, and only when this hook can
tell the refusal is right: the window really does not start before it ends,
or the limit the server names is one this run gave the item (a PUT asked
for it, or a PUT, PATCH or read answered with it) and the qty is above it. Every other failure of every check is kept.

flatmap_body steers half of the generated items to a sale window open now
(and some of those to a waiting room open since before it, so tickets are
taken in the stateful phase),
and half of the orders for an item this run saved to a qty within its
limit, so the stateful phase's chain (create item, order, poll, pay)
reaches the admission and the order writer rather than stopping at
sale_not_active or invalid_qty. The steered bodies are as valid as the ones
they replace.

before_call gives every POST /api/v1/admin/items/{id}/stock whose
operation_id is valid a fresh one: the id makes the call idempotent, and
Hypothesis draws the same few ids again and again, so a drawn id met with
another delta or item would rightly be refused (409 operation_conflict),
which is the server keeping its promise, not a contract failure. A
negative case's invalid id is left as it is.

after_call records the ids of the items the run saved, for the audit that
run.sh does once the run is over (deploy/contract/audit.py), and which
identity each accepted order was placed by.

filter_failure also drops one ST302 ("created resource not found") when the
call that got the 404 went out under another identity than the order it
names: Schemathesis retries an operation refused 403 as the next identity
(the operator), so a chain can place an order as the operator and then pay
or poll it as the buyer, and a request of another user is rightly 404
(ingress/openapi.yaml: "another user's request"; the object-level
authorization the peers check). The contract run of 2026-12-06 failed so:
the order's row says user 1 (the operator's token), the pay came as 1001.
A 404 to the identity that placed the order is kept.
"""

from __future__ import annotations

import atexit
import collections
import datetime
import os
import re
import threading
import uuid

import schemathesis
from hypothesis import strategies as st

PUT_ITEM = "PUT /api/v1/admin/items/{id}"
PATCH_ITEM = "PATCH /api/v1/admin/items/{id}"
POST_ORDER = "POST /api/v1/orders"
CHANGE_STOCK = "POST /api/v1/admin/items/{id}/stock"
# components.schemas.StockChange.operation_id.
_OPERATION_ID = re.compile(r"^[A-Za-z0-9._:-]{1,64}$")

MAX_ID = 2**63 - 1
# An open window: the sale started in the past and ends far in the future.
OPEN_WINDOW = {"starts_at": "2020-01-01T00:00:00Z", "ends_at": "2999-12-31T00:00:00Z"}
# A waiting room open since before OPEN_WINDOW's start.
OPEN_QUEUE = {"queue": True, "queue_opens_at": "2019-01-01T00:00:00Z"}

_lock = threading.Lock()
# item id -> every per_user_limit a PUT of this run asked for it or an
# answer of this run carried (PUT, PATCH, end, get, list).
_limits: dict[int, set[int]] = {}
_saved: set[int] = set()
# request id -> the Authorization an accepted order (202) went out with.
_creators: dict[str, str] = {}
# item id -> (starts_at, ends_at) as the last answer that carried the item said.
_windows: dict[int, tuple[str, str]] = {}
# item id -> (queue, queue_opens_at) as the last answer that carried the item said.
_queues: dict[int, tuple[object, object]] = {}
# (Authorization, item, Idempotency-Key) -> the qty of the key's first 202:
# the same key with another qty is 422 idempotency_key_reused.
_keyed: dict[tuple[str, int, str], object] = {}
# (operation, status) -> answers, printed when the run ends.
_answers: collections.Counter = collections.Counter()

# components.schemas.SaleTime, parsed into its parts.
_SALE_TIME = re.compile(
    r"^(?P<date>(?:19[7-9][0-9]|[2-8][0-9]{3}|9[0-8][0-9]{2}|99[0-8][0-9]|999[0-8])-[0-9]{2}-[0-9]{2})"
    r"T(?P<clock>[0-9]{2}:[0-9]{2}:[0-9]{2})(?:\.(?P<frac>[0-9]+))?(?P<offset>Z|[+-][0-9]{2}:[0-9]{2})$"
)
_LIMIT_MESSAGE = re.compile(r"per-user limit of (\d+)$")


def _instant(value: object) -> tuple[datetime.datetime, int] | None:
    """A SaleTime as (UTC second, nanoseconds), as Go reads it; None if it is not one."""
    if not isinstance(value, str):
        return None
    m = _SALE_TIME.match(value)
    if m is None:
        return None
    offset = "+00:00" if m["offset"] == "Z" else m["offset"]
    try:
        t = datetime.datetime.fromisoformat(f"{m['date']}T{m['clock']}{offset}")
    except ValueError:
        return None
    nanos = int((m["frac"] or "0")[:9].ljust(9, "0"))
    return t.astimezone(datetime.timezone.utc), nanos


def _is_int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _json(response) -> object:
    try:
        return response.json()
    except ValueError:
        return None


@schemathesis.hook
def flatmap_body(context, body):
    if not isinstance(body, dict):
        return st.just(body)
    label = context.operation.label
    if label == PUT_ITEM:
        if _instant(body.get("starts_at")) is None or _instant(body.get("ends_at")) is None:
            return st.just(body)  # a negative case may be negative right there: leave it
        return st.sampled_from([body, {**body, **OPEN_WINDOW}, {**body, **OPEN_WINDOW, **OPEN_QUEUE}])
    if label == POST_ORDER:
        item, qty = body.get("item_id"), body.get("qty")
        if not _is_int(item) or not 1 <= item <= MAX_ID or not _is_int(qty) or not 1 <= qty <= 1000:
            return st.just(body)  # negative: leave it as it is
        with _lock:
            limits = _limits.get(item)
        if not limits:
            return st.just(body)
        # The smallest limit asked for the item is at most the one in force.
        return st.one_of(st.just(body), st.integers(1, min(limits)).map(lambda q: {**body, "qty": q}))
    return st.just(body)


@schemathesis.hook
def flatmap_path_parameters(context, path_parameters):
    item = path_parameters.get("id") if isinstance(path_parameters, dict) else None
    if context.operation.label != PUT_ITEM or not _is_int(item) or not 1 <= item <= MAX_ID:
        return st.just(path_parameters)  # a negative id must stay negative
    # Drawn ids repeat (small values, values seen in answers); a fresh one
    # makes a new item, the start of a chain that ends in a paid order.
    return st.one_of(st.just(path_parameters), st.integers(10**6, 2**62).map(lambda i: {**path_parameters, "id": i}))


@schemathesis.hook
def before_call(context, case, kwargs):
    if case.operation.label == CHANGE_STOCK and isinstance(case.body, dict):
        op = case.body.get("operation_id")
        if isinstance(op, str) and _OPERATION_ID.match(op):
            # Fresh per call (module docstring); kwargs carries the body sent.
            fresh = f"ct-{uuid.uuid4().hex}"
            case.body["operation_id"] = fresh
            if isinstance(kwargs.get("json"), dict):
                kwargs["json"]["operation_id"] = fresh
    if case.operation.label == PUT_ITEM and isinstance(case.body, dict):
        item, limit = case.path_parameters.get("id"), case.body.get("per_user_limit")
        # Only a limit the server could accept: a negative case asks for others.
        if _is_int(item) and _is_int(limit) and 1 <= limit <= 1000:
            with _lock:
                _limits.setdefault(item, set()).add(limit)


@schemathesis.hook
def after_call(context, case, response):
    body = _json(response) if response.status_code >= 400 else None
    code = body.get("error") if isinstance(body, dict) else None
    with _lock:
        _answers[(case.operation.label, f"{response.status_code} {code}" if code else str(response.status_code))] += 1
    if response.status_code == 200 and case.operation.label.startswith(("PUT ", "PATCH ", "POST /api/v1/admin/items/{id}/end", "GET /api/v1/admin/items")):
        answer = _json(response)
        # One item (PUT, PATCH, end, get) or a page of them (list).
        items = answer.get("items") if isinstance(answer, dict) and "items" in answer else [answer]
        for it in items if isinstance(items, list) else []:
            if isinstance(it, dict) and _is_int(it.get("id")):
                with _lock:
                    _windows[it["id"]] = (it.get("starts_at"), it.get("ends_at"))
                    _queues[it["id"]] = (it.get("queue"), it.get("queue_opens_at"))
                    # A limit the server answered with, whichever call set
                    # it: a PATCH changes per_user_limit too, and an
                    # order's invalid_qty names the limit in force.
                    if _is_int(it.get("per_user_limit")):
                        _limits.setdefault(it["id"], set()).add(it["per_user_limit"])
    if response.status_code == 202:
        k = _order_key(case, response)
        if k:
            with _lock:
                _keyed.setdefault(k, case.body.get("qty"))
        answer = _json(response)
        rid = answer.get("request_id") if isinstance(answer, dict) else None
        if case.operation.label == POST_ORDER and isinstance(rid, str):
            with _lock:
                _creators.setdefault(rid, str(_sent_headers(case, response).get("authorization", "")))
    if case.operation.label != PUT_ITEM or response.status_code != 200:
        return
    item = case.path_parameters.get("id")
    path = os.environ.get("FLASHSALE_CONTRACT_ITEMS")
    with _lock:
        if item in _saved:
            return
        _saved.add(item)
        if path:
            with open(path, "a", encoding="ascii") as f:
                f.write(f"{item}\n")


def _sent_headers(case, response) -> dict:
    """The headers the request went out with (those the CLI adds included)."""
    request = getattr(response, "request", None)
    headers = dict(getattr(request, "headers", None) or {})
    for k, v in (case.headers or {}).items():
        headers.setdefault(k, v)
    return {k.lower(): v for k, v in headers.items()}


def _order_key(case, response) -> tuple[str, int, str] | None:
    """(Authorization, item, Idempotency-Key) of a keyed order, or None."""
    if case.operation.label != POST_ORDER or not isinstance(case.body, dict) or not _is_int(case.body.get("item_id")):
        return None
    headers = _sent_headers(case, response)
    key = headers.get("idempotency-key")
    if not isinstance(key, str) or not key:
        return None
    return (str(headers.get("authorization", "")), case.body["item_id"], key)


def _documented_refusal(case, response) -> bool:
    """Whether a refused positive case broke one of the rules the schema cannot state."""
    body = _json(response)
    if response.status_code == 422 and isinstance(body, dict) and body.get("error") == "idempotency_key_reused":
        # The key's first 202 in this run asked another qty.
        k = _order_key(case, response)
        with _lock:
            first = _keyed.get(k) if k else None
        return first is not None and first != case.body.get("qty")
    if response.status_code != 400 or not isinstance(body, dict) or not isinstance(case.body, dict):
        return False
    label = case.operation.label
    if label == PUT_ITEM and body.get("error") == "invalid_window":
        starts, ends = _instant(case.body.get("starts_at")), _instant(case.body.get("ends_at"))
        return starts is not None and ends is not None and not starts < ends
    if label == PATCH_ITEM and body.get("error") == "invalid_window":
        item = case.path_parameters.get("id")
        with _lock:
            stored = _windows.get(item)
        if stored is None:
            return False
        starts = _instant(case.body.get("starts_at", stored[0]))
        ends = _instant(case.body.get("ends_at", stored[1]))
        return starts is not None and ends is not None and not starts < ends
    if label == PUT_ITEM and body.get("error") == "invalid_queue":
        # queue left out, a conflict with the stored queue is 409 queue_kept,
        # never this 400: only the body's own queue fields are judged here.
        if "queue" not in case.body:
            return False
        return _queue_refused(case.body.get("queue"), case.body.get("queue_opens_at"), case.body.get("starts_at"))
    if label == PATCH_ITEM and body.get("error") == "invalid_queue":
        item = case.path_parameters.get("id")
        with _lock:
            stored, queue = _windows.get(item), _queues.get(item, (False, None))
        if stored is None:
            return False
        return _queue_refused(case.body.get("queue", queue[0]), case.body.get("queue_opens_at", queue[1]),
                              case.body.get("starts_at", stored[0]))
    if label == POST_ORDER and body.get("error") == "invalid_qty":
        m = _LIMIT_MESSAGE.search(str(body.get("message", "")))
        item, qty = case.body.get("item_id"), case.body.get("qty")
        if m is None or not _is_int(item) or not _is_int(qty):
            return False
        limit = int(m[1])
        with _lock:
            asked = limit in _limits.get(item, set())
        return asked and qty > limit
    return False


def _another_users_request(case, response) -> bool:
    """Whether a 404 names an order this run saw accepted under another identity."""
    if response.status_code != 404:
        return False
    rid = (case.path_parameters or {}).get("request_id")
    with _lock:
        creator = _creators.get(rid) if isinstance(rid, str) else None
    return creator is not None and creator != str(_sent_headers(case, response).get("authorization", ""))


def _queue_refused(queue: object, opens: object, starts: object) -> bool:
    """Whether a queue is rightly refused: on, with queue_opens_at missing or after starts_at."""
    if queue is not True:
        return False
    if opens is None:
        return True
    o, s = _instant(opens), _instant(starts)
    return o is not None and s is not None and o > s


@schemathesis.hook
def filter_failure(context, failure, case, response):
    """Keep every failure but a positive case refused by a rule the schema cannot express,
    and a 404 on another identity's order (module docstring)."""
    if type(failure).__name__ == "EnsureResourceAvailability":
        return not _another_users_request(case, response)
    if type(failure).__name__ != "RejectedPositiveData" or case.meta is None:
        return True
    if not case.meta.generation.mode.is_positive:
        return True
    return not _documented_refusal(case, response)


@atexit.register
def _print_answers() -> None:
    """What the run reached: a chain that never got a 202 or a paid order tested little."""
    if not _answers:
        return
    print("contract: answers by operation and status:")
    for label in sorted({label for label, _ in _answers}):
        statuses = ", ".join(f"{code}: {n}" for (lbl, code), n in sorted(_answers.items()) if lbl == label)
        print(f"  {label:40} {statuses}")
