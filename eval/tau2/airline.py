"""τ²'s airline database as tables, and back.

Role: :data:`TABLES` declare the relational form of ``FlightDB`` (flights and their dated instances, users with
their payment methods, saved passengers and reservation lists, reservations with their flights, passengers and
payments); :func:`to_tables` maps ``FlightDB.model_dump()`` to rows and :func:`from_tables` maps rows back to
exactly that dict (key order, ``int`` against ``float``, ``None`` fields), so τ²'s own hash of a state read back
from our tables is the hash of the state itself. The tool code over these tables is ``code/airline.py``.

Contract: ``from_tables(to_tables(d)) == d`` for every ``d`` that τ²'s airline tools can produce; ``pos`` columns
keep the order of τ²'s dicts and lists. A dated flight's fields depend on its status, as in τ²'s models
(:data:`STATUS_FIELDS`); its seats and prices are one column per cabin. The tool code reads these two, and the
address pydantic's validation errors cite (:data:`PYDANTIC_ERRORS_URL`), from here (:data:`CODE_CONSTANTS`, spliced
into it), so each is written once.
"""

from __future__ import annotations

from typing import Any

from pydantic.version import VERSION as _PYDANTIC_VERSION

from eval.tau2.tables import ADDRESS_KEYS, NUMBER, Column, Rows, Table, grouped

__all__ = ["CABINS", "CODE_CONSTANTS", "PYDANTIC_ERRORS_URL", "STATUS_FIELDS", "TABLES", "from_tables", "to_tables"]

CABINS = ("basic_economy", "economy", "business")
#: the fields of a dated flight beside ``status``, by status (τ²'s ``FlightDateStatus`` models, in field order)
STATUS_FIELDS = {
    "available": ("available_seats", "prices"),
    "landed": ("actual_departure_time_est", "actual_arrival_time_est"),
    "cancelled": (),
    "delayed": ("estimated_departure_time_est", "estimated_arrival_time_est"),
    "flying": ("actual_departure_time_est", "estimated_arrival_time_est"),
    "on time": ("estimated_departure_time_est", "estimated_arrival_time_est"),
}
#: where pydantic's validation errors send the reader (``https://errors.pydantic.dev/<major.minor>/v/<type>``): τ²'s
#: tools raise them when an argument does not build its model, and the tool code words them the same way
PYDANTIC_ERRORS_URL = "https://errors.pydantic.dev/{}/v/".format(".".join(_PYDANTIC_VERSION.split(".")[:2]))
#: what the tool code (``code/airline.py``) reads of this module, spliced into it by :class:`eval.tau2.domain.Domain`
CODE_CONSTANTS = {"CABINS": CABINS, "STATUS_FIELDS": STATUS_FIELDS, "PYDANTIC_ERRORS_URL": PYDANTIC_ERRORS_URL}
_TIMES = ("estimated_departure_time_est", "estimated_arrival_time_est", "actual_departure_time_est",
          "actual_arrival_time_est")

TABLES = (
    Table("flights", (Column("flight_number"), Column("origin"), Column("destination"),
                      Column("scheduled_departure_time_est"), Column("scheduled_arrival_time_est"),
                      Column("pos", "INTEGER")), ("flight_number",), "scheduled flights"),
    Table("flight_dates", (Column("flight_number"), Column("date"), Column("status"),
                           *(Column(f"seats_{c}", "INTEGER", null=True) for c in CABINS),
                           *(Column(f"price_{c}", "INTEGER", null=True) for c in CABINS),
                           *(Column(t, null=True) for t in _TIMES), Column("pos", "INTEGER")),
          ("flight_number", "date"), "each flight on each date: its status, and seats and prices while available"),
    Table("users", (Column("user_id"), Column("first_name"), Column("last_name"), Column("address1"),
                    Column("address2", null=True), Column("city"), Column("country"), Column("state"), Column("zip"),
                    Column("email"), Column("dob"), Column("membership"), Column("pos", "INTEGER")), ("user_id",),
          "customers"),
    Table("payment_methods", (Column("user_id"), Column("id"), Column("source"), Column("brand", null=True),
                              Column("last_four", null=True), Column("amount", "", null=True, comment=NUMBER),
                              Column("pos", "INTEGER")), ("user_id", "id"),
          "each user's payment methods (credit_card: brand, last_four; gift_card and certificate: amount)"),
    Table("saved_passengers", (Column("user_id"), Column("pos", "INTEGER"), Column("first_name"),
                               Column("last_name"), Column("dob")), ("user_id", "pos"), "each user's saved passengers"),
    Table("user_reservations", (Column("user_id"), Column("pos", "INTEGER"), Column("reservation_id")),
          ("user_id", "pos"), "each user's list of reservation ids"),
    Table("reservations", (Column("reservation_id"), Column("user_id"), Column("origin"), Column("destination"),
                           Column("flight_type"), Column("cabin"), Column("created_at"),
                           Column("total_baggages", "", comment=NUMBER), Column("nonfree_baggages", "", comment=NUMBER),
                           Column("insurance"), Column("status", null=True), Column("pos", "INTEGER")),
          ("reservation_id",), "reservations"),
    Table("reservation_flights", (Column("reservation_id"), Column("pos", "INTEGER"), Column("flight_number"),
                                  Column("origin"), Column("destination"), Column("date"),
                                  Column("price", "", comment=NUMBER)), ("reservation_id", "pos"),
          "the flights of each reservation, at the price paid"),
    Table("reservation_passengers", (Column("reservation_id"), Column("pos", "INTEGER"), Column("first_name"),
                                     Column("last_name"), Column("dob")), ("reservation_id", "pos"),
          "the passengers of each reservation"),
    Table("reservation_payments", (Column("reservation_id"), Column("pos", "INTEGER"), Column("payment_id"),
                                   Column("amount", "", comment=NUMBER)), ("reservation_id", "pos"),
          "each reservation's payments and refunds"),
)


def _date_row(number: str, date: str, d: dict[str, Any], pos: int) -> tuple[Any, ...]:
    seats = d.get("available_seats") or {}
    prices = d.get("prices") or {}
    if (d.get("available_seats") is not None and tuple(seats) != CABINS) or \
            (d.get("prices") is not None and tuple(prices) != CABINS):
        raise ValueError(f"flight {number} on {date}: cabins {list(seats)} / {list(prices)}, expected {list(CABINS)}")
    return (number, date, d["status"], *(seats.get(c) for c in CABINS), *(prices.get(c) for c in CABINS),
            *(d.get(t) for t in _TIMES), pos)


def to_tables(db: dict[str, Any]) -> Rows:
    """The rows of ``FlightDB.model_dump()``."""
    out: Rows = {t.name: [] for t in TABLES}
    for pos, f in enumerate(db["flights"].values()):
        out["flights"].append((f["flight_number"], f["origin"], f["destination"], f["scheduled_departure_time_est"],
                               f["scheduled_arrival_time_est"], pos))
        out["flight_dates"] += [_date_row(f["flight_number"], date, d, dpos)
                                for dpos, (date, d) in enumerate(f["dates"].items())]
    for pos, u in enumerate(db["users"].values()):
        out["users"].append((u["user_id"], u["name"]["first_name"], u["name"]["last_name"],
                             *(u["address"][k] for k in ADDRESS_KEYS), u["email"], u["dob"], u["membership"], pos))
        for mpos, m in enumerate(u["payment_methods"].values()):
            out["payment_methods"].append((u["user_id"], m["id"], m["source"], m.get("brand"), m.get("last_four"),
                                           m.get("amount"), mpos))
        out["saved_passengers"] += [(u["user_id"], i, p["first_name"], p["last_name"], p["dob"])
                                    for i, p in enumerate(u["saved_passengers"])]
        out["user_reservations"] += [(u["user_id"], i, rid) for i, rid in enumerate(u["reservations"])]
    for pos, r in enumerate(db["reservations"].values()):
        rid = r["reservation_id"]
        out["reservations"].append((rid, r["user_id"], r["origin"], r["destination"], r["flight_type"], r["cabin"],
                                    r["created_at"], r["total_baggages"], r["nonfree_baggages"], r["insurance"],
                                    r["status"], pos))
        out["reservation_flights"] += [(rid, i, f["flight_number"], f["origin"], f["destination"], f["date"],
                                        f["price"]) for i, f in enumerate(r["flights"])]
        out["reservation_passengers"] += [(rid, i, p["first_name"], p["last_name"], p["dob"])
                                          for i, p in enumerate(r["passengers"])]
        out["reservation_payments"] += [(rid, i, p["payment_id"], p["amount"])
                                        for i, p in enumerate(r["payment_history"])]
    return out


def _dated(r: tuple[Any, ...]) -> dict[str, Any]:
    status = r[2]
    out: dict[str, Any] = {"status": status}
    times = dict(zip(_TIMES, r[9:13], strict=True))
    for f in STATUS_FIELDS[status]:
        if f == "available_seats":
            out[f] = dict(zip(CABINS, r[3:6], strict=True))
        elif f == "prices":
            out[f] = dict(zip(CABINS, r[6:9], strict=True))
        else:
            out[f] = times[f]
    return out


def _payment_method(r: tuple[Any, ...]) -> dict[str, Any]:
    _, mid, source, brand, last_four, amount, _ = r
    if source == "credit_card":
        return {"source": source, "id": mid, "brand": brand, "last_four": last_four}
    return {"source": source, "id": mid, "amount": amount}


def from_tables(rows: Rows) -> dict[str, Any]:
    """``FlightDB.model_dump()`` of the state ``rows`` hold (each table's rows in any order)."""
    dates = grouped(rows["flight_dates"], 13)
    methods = grouped(rows["payment_methods"], 6)
    saved = grouped(rows["saved_passengers"], 1)
    user_res = grouped(rows["user_reservations"], 1)
    res_flights = grouped(rows["reservation_flights"], 1)
    res_passengers = grouped(rows["reservation_passengers"], 1)
    res_payments = grouped(rows["reservation_payments"], 1)
    flights = {}
    for f in sorted(rows["flights"], key=lambda r: r[5]):
        flights[f[0]] = {"flight_number": f[0], "origin": f[1], "destination": f[2],
                         "scheduled_departure_time_est": f[3], "scheduled_arrival_time_est": f[4],
                         "dates": {d[1]: _dated(d) for d in dates.get(f[0], [])}}
    users = {}
    for u in sorted(rows["users"], key=lambda r: r[12]):
        uid = u[0]
        users[uid] = {"user_id": uid, "name": {"first_name": u[1], "last_name": u[2]},
                      "address": dict(zip(ADDRESS_KEYS, u[3:9], strict=True)), "email": u[9], "dob": u[10],
                      "payment_methods": {m[1]: _payment_method(m) for m in methods.get(uid, [])},
                      "saved_passengers": [{"first_name": p[2], "last_name": p[3], "dob": p[4]}
                                           for p in saved.get(uid, [])],
                      "membership": u[11], "reservations": [r[2] for r in user_res.get(uid, [])]}
    reservations = {}
    for r in sorted(rows["reservations"], key=lambda r: r[11]):
        rid = r[0]
        reservations[rid] = {
            "reservation_id": rid, "user_id": r[1], "origin": r[2], "destination": r[3], "flight_type": r[4],
            "cabin": r[5],
            "flights": [{"flight_number": f[2], "origin": f[3], "destination": f[4], "date": f[5], "price": f[6]}
                        for f in res_flights.get(rid, [])],
            "passengers": [{"first_name": p[2], "last_name": p[3], "dob": p[4]} for p in res_passengers.get(rid, [])],
            "payment_history": [{"payment_id": p[2], "amount": p[3]} for p in res_payments.get(rid, [])],
            "created_at": r[6], "total_baggages": r[7], "nonfree_baggages": r[8], "insurance": r[9],
            "status": r[10]}
    return {"flights": flights, "users": users, "reservations": reservations}
