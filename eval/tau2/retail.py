"""τ²'s retail database as tables, and back.

Role: :data:`TABLES` declare the relational form of ``RetailDB`` (products and their variants, users and their
payment methods and order lists, orders with their items, fulfilments and payments); :func:`to_tables` maps
``RetailDB.model_dump()`` to rows and :func:`from_tables` maps rows back to exactly that dict (key order, ``int``
against ``float``, ``None`` fields), so τ²'s own hash of a state read back from our tables is the hash of the
state itself. The tool code over these tables is ``code/retail.py``.

Contract: ``from_tables(to_tables(d)) == d`` for every ``d`` that τ²'s retail tools can produce; ``pos`` columns
keep the order of τ²'s dicts and lists; small lists and option maps are JSON text (``json.dumps`` defaults).
"""

from __future__ import annotations

import json
from typing import Any

from eval.tau2.tables import ADDRESS_KEYS, NUMBER, Column, Rows, Table, grouped

__all__ = ["TABLES", "from_tables", "to_tables"]

_ADDRESS = tuple(Column(k) for k in ADDRESS_KEYS)

TABLES = (
    Table("products", (Column("product_id"), Column("name"), Column("pos", "INTEGER")), ("product_id",),
          "the store's product types"),
    Table("variants", (Column("product_id"), Column("item_id"), Column("options", comment="JSON object"),
                       Column("available", "INTEGER", comment="1 or 0"), Column("price", "", comment=NUMBER),
                       Column("pos", "INTEGER")), ("product_id", "item_id"), "the items of each product"),
    Table("users", (Column("user_id"), Column("first_name"), Column("last_name"), *_ADDRESS, Column("email"),
                    Column("pos", "INTEGER")), ("user_id",), "customers, with their default address"),
    Table("payment_methods", (Column("user_id"), Column("id"), Column("source"), Column("brand", null=True),
                              Column("last_four", null=True), Column("balance", "", null=True, comment=NUMBER),
                              Column("pos", "INTEGER")), ("user_id", "id"),
          "each user's payment methods (credit_card: brand, last_four; gift_card: balance; paypal)"),
    Table("user_orders", (Column("user_id"), Column("pos", "INTEGER"), Column("order_id")), ("user_id", "pos"),
          "each user's list of order ids"),
    Table("orders", (Column("order_id"), Column("user_id"), *_ADDRESS, Column("status"),
                     Column("cancel_reason", null=True), Column("exchange_items", null=True, comment="JSON list"),
                     Column("exchange_new_items", null=True, comment="JSON list"),
                     Column("exchange_payment_method_id", null=True),
                     Column("exchange_price_difference", "", null=True, comment=NUMBER),
                     Column("return_items", null=True, comment="JSON list"),
                     Column("return_payment_method_id", null=True), Column("pos", "INTEGER")), ("order_id",),
          "orders, with their shipping address"),
    Table("order_items", (Column("order_id"), Column("pos", "INTEGER"), Column("name"), Column("product_id"),
                          Column("item_id"), Column("price", "", comment=NUMBER),
                          Column("options", comment="JSON object")), ("order_id", "pos"), "the items of each order"),
    Table("fulfillments", (Column("order_id"), Column("pos", "INTEGER"), Column("tracking_id", comment="JSON list"),
                           Column("item_ids", comment="JSON list")), ("order_id", "pos"),
          "each order's shipments"),
    Table("order_payments", (Column("order_id"), Column("pos", "INTEGER"), Column("transaction_type"),
                             Column("amount", "", comment=NUMBER), Column("payment_method_id")), ("order_id", "pos"),
          "each order's payments and refunds"),
)

def _json(value: Any) -> str | None:
    return None if value is None else json.dumps(value)


def _unjson(text: str | None) -> Any:
    return None if text is None else json.loads(text)


def to_tables(db: dict[str, Any]) -> Rows:
    """The rows of ``RetailDB.model_dump()``."""
    out: Rows = {t.name: [] for t in TABLES}
    for pos, p in enumerate(db["products"].values()):
        out["products"].append((p["product_id"], p["name"], pos))
        for vpos, v in enumerate(p["variants"].values()):
            out["variants"].append((p["product_id"], v["item_id"], json.dumps(v["options"]), int(v["available"]),
                                    v["price"], vpos))
    for pos, u in enumerate(db["users"].values()):
        out["users"].append((u["user_id"], u["name"]["first_name"], u["name"]["last_name"],
                             *(u["address"][k] for k in ADDRESS_KEYS), u["email"], pos))
        for mpos, m in enumerate(u["payment_methods"].values()):
            out["payment_methods"].append((u["user_id"], m["id"], m["source"], m.get("brand"), m.get("last_four"),
                                           m.get("balance"), mpos))
        out["user_orders"] += [(u["user_id"], opos, oid) for opos, oid in enumerate(u["orders"])]
    for pos, o in enumerate(db["orders"].values()):
        out["orders"].append((o["order_id"], o["user_id"], *(o["address"][k] for k in ADDRESS_KEYS), o["status"],
                              o["cancel_reason"], _json(o["exchange_items"]), _json(o["exchange_new_items"]),
                              o["exchange_payment_method_id"], o["exchange_price_difference"],
                              _json(o["return_items"]), o["return_payment_method_id"], pos))
        out["order_items"] += [(o["order_id"], i, it["name"], it["product_id"], it["item_id"], it["price"],
                                json.dumps(it["options"])) for i, it in enumerate(o["items"])]
        out["fulfillments"] += [(o["order_id"], i, json.dumps(f["tracking_id"]), json.dumps(f["item_ids"]))
                                for i, f in enumerate(o["fulfillments"])]
        out["order_payments"] += [(o["order_id"], i, p["transaction_type"], p["amount"], p["payment_method_id"])
                                  for i, p in enumerate(o["payment_history"])]
    return out


def _payment_method(r: tuple[Any, ...]) -> dict[str, Any]:
    _, mid, source, brand, last_four, balance, _ = r
    out: dict[str, Any] = {"source": source, "id": mid}
    if source == "credit_card":
        out |= {"brand": brand, "last_four": last_four}
    elif source == "gift_card":
        out["balance"] = balance
    return out


def from_tables(rows: Rows) -> dict[str, Any]:
    """``RetailDB.model_dump()`` of the state ``rows`` hold (each table's rows in any order)."""
    variants = grouped(rows["variants"], 5)
    methods = grouped(rows["payment_methods"], 6)
    user_orders = grouped(rows["user_orders"], 1)
    items = grouped(rows["order_items"], 1)
    fulfillments = grouped(rows["fulfillments"], 1)
    payments = grouped(rows["order_payments"], 1)
    products = {}
    for pid, name, _ in sorted(rows["products"], key=lambda r: r[2]):
        products[pid] = {"name": name, "product_id": pid, "variants": {
            v[1]: {"item_id": v[1], "options": json.loads(v[2]), "available": bool(v[3]), "price": v[4]}
            for v in variants.get(pid, [])}}
    users = {}
    for u in sorted(rows["users"], key=lambda r: r[-1]):
        uid = u[0]
        users[uid] = {"user_id": uid, "name": {"first_name": u[1], "last_name": u[2]},
                      "address": dict(zip(ADDRESS_KEYS, u[3:9], strict=True)), "email": u[9],
                      "payment_methods": {m[1]: _payment_method(m) for m in methods.get(uid, [])},
                      "orders": [r[2] for r in user_orders.get(uid, [])]}
    orders = {}
    for o in sorted(rows["orders"], key=lambda r: r[-1]):
        oid = o[0]
        orders[oid] = {
            "order_id": oid, "user_id": o[1], "address": dict(zip(ADDRESS_KEYS, o[2:8], strict=True)),
            "items": [{"name": i[2], "product_id": i[3], "item_id": i[4], "price": i[5], "options": json.loads(i[6])}
                      for i in items.get(oid, [])],
            "status": o[8],
            "fulfillments": [{"tracking_id": json.loads(f[2]), "item_ids": json.loads(f[3])}
                             for f in fulfillments.get(oid, [])],
            "payment_history": [{"transaction_type": p[2], "amount": p[3], "payment_method_id": p[4]}
                                for p in payments.get(oid, [])],
            "cancel_reason": o[9], "exchange_items": _unjson(o[10]), "exchange_new_items": _unjson(o[11]),
            "exchange_payment_method_id": o[12], "exchange_price_difference": o[13],
            "return_items": _unjson(o[14]), "return_payment_method_id": o[15]}
    return {"products": products, "users": users, "orders": orders}
