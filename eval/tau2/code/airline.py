# τ²-bench airline tools, ported to the sandbox's restricted Python over the `db` facade (gym_envs/ENVSPEC.md,
# "Tool code"). Spec data, spliced by eval.tau2.domain after code/shared.py and code/arithmetic.py (the
# `calculate` tool) and the constants it reads from eval.tau2.airline (CABINS, STATUS_FIELDS): never imported.
# Each tool follows tau2/domains/airline/tools.py step for step (the same checks in the same order, the same error
# texts, the same arithmetic), so a call returns what τ²'s tool returns and leaves the tables holding what τ²'s
# database holds after it. Records are loaded into dicts shaped as τ²'s model_dump(), changed as τ² changes its
# models, then written back. τ² changes its models in place, so a tool that raises keeps what it changed before (the
# spec's failed_calls is "keep"): where a step can still raise after a change, the change is written when τ² makes
# it. Where τ² builds a pydantic model from an argument (FlightInfo, Passenger, Payment, and
# the Reservation holding them), the fields are checked and coerced as pydantic's lax mode does, at the same step,
# with pydantic's error text. A list argument that is not all dicts is kept as it is, as τ² keeps it, and fails
# where τ²'s tool first uses it.
AIRPORTS = (("SFO", "San Francisco"), ("JFK", "New York"), ("LAX", "Los Angeles"), ("ORD", "Chicago"),
            ("DFW", "Dallas"), ("DEN", "Denver"), ("SEA", "Seattle"), ("ATL", "Atlanta"), ("MIA", "Miami"),
            ("BOS", "Boston"), ("PHX", "Phoenix"), ("IAH", "Houston"), ("LAS", "Las Vegas"), ("MCO", "Orlando"),
            ("EWR", "Newark"), ("CLT", "Charlotte"), ("MSP", "Minneapolis"), ("DTW", "Detroit"),
            ("PHL", "Philadelphia"), ("LGA", "LaGuardia"))
NOW = "2024-05-15T15:00:00"
NEW_RESERVATION_IDS = ("HATHAT", "HATHAU", "HATHAV")
NEW_PAYMENT_IDS = (3221322, 3221323, 3221324)


# -- pydantic's lax validation of the models τ² builds from arguments ---------------------------------------------
# A field's coercion returns (value, None) or (None, problem); a model collects every field's problem, as pydantic
# does, and words them as pydantic's ValidationError does (PYDANTIC_ERRORS_URL is spliced in from eval.tau2.airline).
INT_MAX = 9223372036854775807  # pydantic parses a float into an int only within i64


def shown(value):
    """The ``input_value`` of pydantic: the repr, cut to its first 25 and last 24 bytes of UTF-8 (at whole characters)
    when longer than 50 bytes."""
    text = repr(value)
    data = text.encode("utf-8")
    if len(data) <= 50:
        return text
    head = 25
    while head > 0 and data[head] & 0xC0 == 0x80:
        head -= 1
    tail = len(data) - 24
    while tail < len(data) and data[tail] & 0xC0 == 0x80:
        tail += 1
    return data[:head].decode("utf-8") + "..." + data[tail:].decode("utf-8")


def problem(loc, kind, message, value):
    return (f"{loc}\n  {message} [type={kind}, input_value={shown(value)}, input_type={type_name(value)}]\n"
            f"    For further information visit {PYDANTIC_ERRORS_URL}{kind}")


def validation_error(model, problems):
    count = str(len(problems)) + (" validation errors" if len(problems) > 1 else " validation error")
    return ToolError(f"{count} for {model}\n" + "\n".join(problems))


def as_str(value, loc):
    if isinstance(value, str):
        return value, None
    return None, problem(loc, "string_type", "Input should be a valid string", value)


def int_text(text):
    """The int a string parses to in pydantic's lax mode (``None`` when it does not): blanks around, a sign, digits
    grouped by single underscores, and a fraction of zeros."""
    text = text.strip()
    body = text[1:] if text[:1] in ("+", "-") else text
    whole, dot, fraction = body.partition(".")
    if dot and (fraction.strip("0") != "" or fraction == ""):
        return None
    groups = whole.split("_")
    if not all(g != "" and all(c in "0123456789" for c in g) for g in groups):
        return None
    number = int("".join(groups))
    return -number if text[:1] == "-" else number


def as_int(value, loc):
    if isinstance(value, bool):
        return int(value), None
    if isinstance(value, int):
        return value, None
    if isinstance(value, float):
        if value != int(value):
            return None, problem(loc, "int_from_float",
                                 "Input should be a valid integer, got a number with a fractional part", value)
        if abs(value) > INT_MAX:
            return None, problem(loc, "int_parsing_size",
                                 "Unable to parse input string as an integer, exceeded maximum size", value)
        return int(value), None
    if isinstance(value, str):
        number = int_text(value)
        if number is None:
            return None, problem(loc, "int_parsing",
                                 "Input should be a valid integer, unable to parse string as an integer", value)
        return number, None
    return None, problem(loc, "int_type", "Input should be a valid integer", value)


FLIGHT_INFO = ("FlightInfo", (("flight_number", as_str), ("date", as_str)))
PASSENGER = ("Passenger", (("first_name", as_str), ("last_name", as_str), ("dob", as_str)))
PAYMENT = ("Payment", (("payment_id", as_str), ("amount", as_int)))


def model_problems(value, model, prefix=""):
    """``(fields, problems)`` of building ``model`` (a name and its fields with their coercions) from ``value``, as
    pydantic validates it; ``prefix`` is the location of ``value`` inside an outer model (``"passengers.0."``)."""
    name, fields = model
    if not isinstance(value, dict):
        return None, [problem(prefix[:-1], "model_type",
                              f"Input should be a valid dictionary or instance of {name}", value)]
    out = {}
    problems = []
    for field, coerce in fields:
        if field not in value:
            problems.append(problem(prefix + field, "missing", "Field required", value))
            continue
        out[field], p = coerce(value[field], prefix + field)
        if p is not None:
            problems.append(p)
    return out, problems


def models(values, model):
    """τ²'s ``if all(isinstance(x, dict) for x in values): values = [Model(**x) for x in values]``: the models of an
    all-dict list (the first item that does not build raises pydantic's error), else ``None``: τ² keeps a list that
    is not all dicts as it is, and it fails later, where the tool first uses it (:func:`raw_attribute`)."""
    if not all(isinstance(v, dict) for v in values):
        return None
    out = []
    for v in values:
        built, problems = model_problems(v, model)
        if problems:
            raise validation_error(model[0], problems)
        out.append(built)
    return out


def raw_attribute(values, attribute):
    """The error of τ² reading ``attribute`` off the first item of a list it kept unconverted (:func:`models`)."""
    return ToolError(f"'{type_name(values[0])}' object has no attribute '{attribute}'")


def list_problems(values, model, field):
    """The problems pydantic finds in a model's list field given a list kept unconverted: each item's, in order."""
    problems = []
    for i, v in enumerate(values):
        problems += model_problems(v, model, f"{field}.{i}.")[1]
    return problems


# -- records ---------------------------------------------------------------------------------------------------------
def dated_of(row):
    out = {"status": row["status"]}
    for f in STATUS_FIELDS[row["status"]]:
        if f == "available_seats":
            out[f] = {c: row["seats_" + c] for c in CABINS}
        elif f == "prices":
            out[f] = {c: row["price_" + c] for c in CABINS}
        else:
            out[f] = row[f]
    return out


def load_flight(db, flight_number):
    rows = db.query("SELECT * FROM flights WHERE flight_number = ?", [flight_number])
    if not rows:
        raise ToolError(f"Flight {flight_number} not found")
    return rows[0]


def load_flight_instance(db, flight_number, date):
    load_flight(db, flight_number)
    rows = db.query("SELECT * FROM flight_dates WHERE flight_number = ? AND date = ?", [flight_number, date])
    if not rows:
        raise ToolError(f"Flight {flight_number} not found on date {date}")
    return rows[0]


def payment_method_of(row):
    if row["source"] == "credit_card":
        return {"source": row["source"], "id": row["id"], "brand": row["brand"], "last_four": row["last_four"]}
    return {"source": row["source"], "id": row["id"], "amount": row["amount"]}


def load_user(db, user_id):
    rows = db.query("SELECT * FROM users WHERE user_id = ?", [user_id])
    if not rows:
        raise ToolError(f"User {user_id} not found")
    u = rows[0]
    methods = db.query("SELECT * FROM payment_methods WHERE user_id = ? ORDER BY pos", [user_id])
    saved = db.query("SELECT * FROM saved_passengers WHERE user_id = ? ORDER BY pos", [user_id])
    reservations = db.query("SELECT reservation_id FROM user_reservations WHERE user_id = ? ORDER BY pos", [user_id])
    return {"user_id": u["user_id"], "name": {"first_name": u["first_name"], "last_name": u["last_name"]},
            "address": address_of(u),
            "email": u["email"], "dob": u["dob"],
            "payment_methods": {m["id"]: payment_method_of(m) for m in methods},
            "saved_passengers": [{"first_name": p["first_name"], "last_name": p["last_name"], "dob": p["dob"]}
                                 for p in saved],
            "membership": u["membership"], "reservations": [r["reservation_id"] for r in reservations]}


def save_user_money(db, user):
    """Write back a user's payment methods (amounts changed, certificates added or removed) and reservations."""
    uid = user["user_id"]
    db.execute("DELETE FROM payment_methods WHERE user_id = ?", [uid])
    for pos, m in enumerate(user["payment_methods"].values()):
        db.execute("INSERT INTO payment_methods (user_id, id, source, brand, last_four, amount, pos) "
                   "VALUES (?, ?, ?, ?, ?, ?, ?)",
                   [uid, m["id"], m["source"], m.get("brand"), m.get("last_four"), m.get("amount"), pos])
    db.execute("DELETE FROM user_reservations WHERE user_id = ?", [uid])
    for pos, rid in enumerate(user["reservations"]):
        db.execute("INSERT INTO user_reservations (user_id, pos, reservation_id) VALUES (?, ?, ?)", [uid, pos, rid])


def load_reservation(db, reservation_id):
    rows = db.query("SELECT * FROM reservations WHERE reservation_id = ?", [reservation_id])
    if not rows:
        raise ToolError(f"Reservation {reservation_id} not found")
    r = rows[0]
    flights = db.query("SELECT * FROM reservation_flights WHERE reservation_id = ? ORDER BY pos", [reservation_id])
    people = db.query("SELECT * FROM reservation_passengers WHERE reservation_id = ? ORDER BY pos", [reservation_id])
    paid = db.query("SELECT * FROM reservation_payments WHERE reservation_id = ? ORDER BY pos", [reservation_id])
    return {"reservation_id": r["reservation_id"], "user_id": r["user_id"], "origin": r["origin"],
            "destination": r["destination"], "flight_type": r["flight_type"], "cabin": r["cabin"],
            "flights": [{"flight_number": f["flight_number"], "origin": f["origin"], "destination": f["destination"],
                         "date": f["date"], "price": f["price"]} for f in flights],
            "passengers": [{"first_name": p["first_name"], "last_name": p["last_name"], "dob": p["dob"]}
                           for p in people],
            "payment_history": [{"payment_id": p["payment_id"], "amount": p["amount"]} for p in paid],
            "created_at": r["created_at"], "total_baggages": r["total_baggages"],
            "nonfree_baggages": r["nonfree_baggages"], "insurance": r["insurance"], "status": r["status"]}


def save_reservation(db, res, pos=None):
    rid = res["reservation_id"]
    if pos is not None:
        db.execute("INSERT INTO reservations (reservation_id, user_id, origin, destination, flight_type, cabin, "
                   "created_at, total_baggages, nonfree_baggages, insurance, status, pos) "
                   "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                   [rid, res["user_id"], res["origin"], res["destination"], res["flight_type"], res["cabin"],
                    res["created_at"], res["total_baggages"], res["nonfree_baggages"], res["insurance"],
                    res["status"], pos])
    else:
        db.execute("UPDATE reservations SET cabin = ?, total_baggages = ?, nonfree_baggages = ?, status = ? "
                   "WHERE reservation_id = ?",
                   [res["cabin"], res["total_baggages"], res["nonfree_baggages"], res["status"], rid])
    for table in ("reservation_flights", "reservation_passengers", "reservation_payments"):
        db.execute("DELETE FROM " + table + " WHERE reservation_id = ?", [rid])
    for i, f in enumerate(res["flights"]):
        db.execute("INSERT INTO reservation_flights (reservation_id, pos, flight_number, origin, destination, date, "
                   "price) VALUES (?, ?, ?, ?, ?, ?, ?)",
                   [rid, i, f["flight_number"], f["origin"], f["destination"], f["date"], f["price"]])
    for i, p in enumerate(res["passengers"]):
        db.execute("INSERT INTO reservation_passengers (reservation_id, pos, first_name, last_name, dob) "
                   "VALUES (?, ?, ?, ?, ?)", [rid, i, p["first_name"], p["last_name"], p["dob"]])
    for i, p in enumerate(res["payment_history"]):
        db.execute("INSERT INTO reservation_payments (reservation_id, pos, payment_id, amount) VALUES (?, ?, ?, ?)",
                   [rid, i, p["payment_id"], p["amount"]])


def search_direct(db, date, origin=None, destination=None, leave_after=None):
    results = []
    rows = db.query("SELECT f.flight_number AS flight_number, f.origin AS origin, f.destination AS destination, "
                    "f.scheduled_departure_time_est AS dep, f.scheduled_arrival_time_est AS arr, d.status AS status, "
                    "d.seats_basic_economy, d.seats_economy, d.seats_business, d.price_basic_economy, "
                    "d.price_economy, d.price_business "
                    "FROM flights f JOIN flight_dates d ON d.flight_number = f.flight_number AND d.date = ? "
                    "ORDER BY f.pos", [date])
    for r in rows:
        if ((origin is None or r["origin"] == origin) and (destination is None or r["destination"] == destination)
                and r["status"] == "available" and (leave_after is None or r["dep"] >= leave_after)):
            results.append({"flight_number": r["flight_number"], "origin": r["origin"],
                            "destination": r["destination"], "status": "available",
                            "scheduled_departure_time_est": r["dep"], "scheduled_arrival_time_est": r["arr"],
                            "date": None, "available_seats": {c: r["seats_" + c] for c in CABINS},
                            "prices": {c: r["price_" + c] for c in CABINS}})
    return results


def payment_for_update(user, payment_id, total_price):
    if payment_id not in user["payment_methods"]:
        raise ToolError("Payment method not found")
    method = user["payment_methods"][payment_id]
    if method["source"] == "certificate":
        raise ToolError("Certificate cannot be used to update reservation")
    elif method["source"] == "gift_card" and method["amount"] < total_price:
        raise ToolError("Gift card balance is not enough")
    if method["source"] == "gift_card":
        method["amount"] = method["amount"] - total_price
    if total_price != 0:
        return {"payment_id": payment_id, "amount": total_price}
    return None


# -- tools ------------------------------------------------------------------------------------------------------------
def book_reservation(db, user_id, origin, destination, flight_type, cabin, flights, passengers, payment_methods,
                     total_baggages, nonfree_baggages, insurance):
    flight_models = models(flights, FLIGHT_INFO)
    passenger_models = models(passengers, PASSENGER)
    payment_models = models(payment_methods, PAYMENT)
    user = load_user(db, user_id)
    taken = [r["reservation_id"] for r in db.query(
        "SELECT reservation_id FROM reservations WHERE reservation_id IN (?, ?, ?)", list(NEW_RESERVATION_IDS))]
    reservation_id = next((r for r in NEW_RESERVATION_IDS if r not in taken), None)
    if reservation_id is None:
        raise ToolError("Too many reservations")
    # τ²'s Reservation(...) validates the passengers and payments it was given, converted or not
    problems = []
    if passenger_models is None:
        problems += list_problems(passengers, PASSENGER, "passengers")
    if payment_models is None:
        problems += list_problems(payment_methods, PAYMENT, "payment_history")
    if problems:
        raise validation_error("Reservation", problems)
    passengers = passenger_models
    payment_methods = payment_models
    reservation = {"reservation_id": reservation_id, "user_id": user_id, "origin": origin,
                   "destination": destination, "flight_type": flight_type, "cabin": cabin, "flights": [],
                   "passengers": [dict(p) for p in passengers],
                   "payment_history": [dict(p) for p in payment_methods], "created_at": NOW,
                   "total_baggages": total_baggages, "nonfree_baggages": nonfree_baggages,
                   "insurance": insurance, "status": None}
    if flight_models is None:  # τ²'s loop reads the first kept item's flight_number
        raise raw_attribute(flights, "flight_number")
    total_price = 0
    instances = []
    for info in flight_models:
        number = info["flight_number"]
        flight = load_flight(db, number)
        instance = load_flight_instance(db, number, info["date"])
        if instance["status"] != "available":
            raise ToolError(f"Flight {number} not available on date {info['date']}")
        if instance["seats_" + cabin] < len(passengers):
            raise ToolError(f"Not enough seats on flight {number}")
        price = instance["price_" + cabin]
        reservation["flights"].append({"flight_number": number, "origin": flight["origin"],
                                       "destination": flight["destination"], "date": info["date"], "price": price})
        instances.append(instance)
        total_price += price * len(passengers)
    if insurance == "yes":
        total_price += 30 * len(passengers)
    total_price += 50 * nonfree_baggages
    for method in payment_methods:
        payment_id = method["payment_id"]
        if payment_id not in user["payment_methods"]:
            raise ToolError(f"Payment method {payment_id} not found")
        held = user["payment_methods"][payment_id]
        if held["source"] in ("gift_card", "certificate") and held["amount"] < method["amount"]:
            raise ToolError(f"Not enough balance in payment method {payment_id}")
    total_payment = sum(p["amount"] for p in payment_methods)
    if total_payment != total_price:
        raise ToolError(f"Payment amount does not add up, total price is {total_price}, but paid {total_payment}")
    for method in payment_methods:
        payment_id = method["payment_id"]
        if payment_id not in user["payment_methods"]:  # τ² pops a certificate; a second use of it raises KeyError,
            raise ToolError(repr(payment_id))  # and the charges and certificates used before it stay
        held = user["payment_methods"][payment_id]
        if held["source"] == "gift_card":
            held["amount"] = held["amount"] - method["amount"]
        elif held["source"] == "certificate":
            user["payment_methods"].pop(payment_id)
        save_user_money(db, user)
    seats = {}  # a flight booked twice is one record in τ², decremented twice
    for instance in instances:
        key = (instance["flight_number"], instance["date"])
        seats[key] = seats.get(key, instance["seats_" + cabin]) - len(passengers)
    for (number, date), left in seats.items():
        db.execute("UPDATE flight_dates SET seats_" + cabin + " = ? WHERE flight_number = ? AND date = ?",
                   [left, number, date])
    pos = db.query("SELECT COALESCE(MAX(pos) + 1, 0) AS pos FROM reservations")[0]["pos"]
    save_reservation(db, reservation, pos)
    user["reservations"].append(reservation_id)
    save_user_money(db, user)
    return reservation


def cancel_reservation(db, reservation_id):
    reservation = load_reservation(db, reservation_id)
    refunds = [{"payment_id": p["payment_id"], "amount": -p["amount"]} for p in reservation["payment_history"]]
    reservation["payment_history"].extend(refunds)
    reservation["status"] = "cancelled"
    save_reservation(db, reservation)
    return reservation


def get_reservation_details(db, reservation_id):
    return load_reservation(db, reservation_id)


def get_user_details(db, user_id):
    return load_user(db, user_id)


def list_all_airports(db):
    return [{"iata": iata, "city": city} for iata, city in AIRPORTS]


def search_direct_flight(db, origin, destination, date):
    return search_direct(db, date, origin=origin, destination=destination)


def search_onestop_flight(db, origin, destination, date):
    results = []
    for first in search_direct(db, date, origin=origin):
        first["date"] = date
        if "+1" in first["scheduled_arrival_time_est"]:
            try:
                date2 = f"2024-05-{int(date[-2:]) + 1}"
            except ValueError as e:
                raise ToolError(str(e))
        else:
            date2 = date
        for second in search_direct(db, date2, origin=first["destination"], destination=destination,
                                    leave_after=first["scheduled_arrival_time_est"]):
            second["date"] = date2
            results.append([first, second])
    return results


def send_certificate(db, user_id, amount):
    user = load_user(db, user_id)
    for payment_id in ["certificate_" + str(n) for n in NEW_PAYMENT_IDS]:
        if payment_id not in user["payment_methods"]:
            user["payment_methods"][payment_id] = {"source": "certificate", "id": payment_id, "amount": float(amount)}
            save_user_money(db, user)
            return f"Certificate {payment_id} added to user {user_id} with amount {amount}."
    raise ToolError("Too many certificates")


def update_reservation_baggages(db, reservation_id, total_baggages, nonfree_baggages, payment_id):
    reservation = load_reservation(db, reservation_id)
    user = load_user(db, reservation["user_id"])
    total_price = 50 * max(0, nonfree_baggages - reservation["nonfree_baggages"])
    paid = payment_for_update(user, payment_id, total_price)
    if paid is not None:
        reservation["payment_history"].append(paid)
    reservation["total_baggages"] = total_baggages
    reservation["nonfree_baggages"] = nonfree_baggages
    save_user_money(db, user)
    save_reservation(db, reservation)
    return reservation


def update_reservation_flights(db, reservation_id, cabin, flights, payment_id):
    flight_models = models(flights, FLIGHT_INFO)
    reservation = load_reservation(db, reservation_id)
    user = load_user(db, reservation["user_id"])
    if flight_models is None:  # τ²'s loop reads the first kept item's flight_number
        raise raw_attribute(flights, "flight_number")
    flights = flight_models
    total_price = 0
    kept = []
    count = len(reservation["passengers"])
    for info in flights:
        match = next((f for f in reservation["flights"] if f["flight_number"] == info["flight_number"]
                      and f["date"] == info["date"] and cabin == reservation["cabin"]), None)
        if match is not None:
            total_price += match["price"] * count
            kept.append(match)
            continue
        flight = load_flight(db, info["flight_number"])
        instance = load_flight_instance(db, info["flight_number"], info["date"])
        if instance["status"] != "available":
            raise ToolError(f"Flight {info['flight_number']} not available on date {info['date']}")
        if instance["seats_" + cabin] < count:
            raise ToolError(f"Not enough seats on flight {info['flight_number']}")
        new = {"flight_number": info["flight_number"], "origin": flight["origin"],
               "destination": flight["destination"], "date": info["date"], "price": instance["price_" + cabin]}
        total_price += new["price"] * count
        kept.append(new)
    total_price -= sum(f["price"] for f in reservation["flights"]) * count
    paid = payment_for_update(user, payment_id, total_price)
    if paid is not None:
        reservation["payment_history"].append(paid)
    reservation["flights"] = kept
    reservation["cabin"] = cabin
    save_user_money(db, user)
    save_reservation(db, reservation)
    return reservation


def update_reservation_passengers(db, reservation_id, passengers):
    passenger_models = models(passengers, PASSENGER)
    reservation = load_reservation(db, reservation_id)
    if len(passengers) != len(reservation["passengers"]):
        raise ToolError("Number of passengers does not match")
    if passenger_models is None:  # τ² stores the items as they are; the tables hold only passengers
        raise raw_attribute(passengers, "first_name")
    reservation["passengers"] = [dict(p) for p in passenger_models]
    save_reservation(db, reservation)
    return reservation


def get_flight_status(db, flight_number, date):
    return load_flight_instance(db, flight_number, date)["status"]
