# τ²-bench retail tools, ported to the sandbox's restricted Python over the `db` facade (gym_envs/ENVSPEC.md,
# "Tool code"). Spec data, spliced by eval.tau2.domain after code/shared.py and code/arithmetic.py (the
# `calculate` tool): never imported. Each tool follows tau2/domains/retail/tools.py step for step (the same checks
# in the same order, the same error texts, the same float arithmetic), so a call returns what τ²'s tool returns
# and leaves the tables holding what τ²'s database holds after it. Records are loaded into dicts shaped as τ²'s
# model_dump(), changed as τ² changes its models, then written back. τ² changes its models in place, so a tool that
# raises keeps what it changed before (the spec's failed_calls is "keep"): where a step can still raise after a
# change, the change is written when τ² makes it.
import json

REASONS = ("no longer needed", "ordered by mistake")


def payment_method_of(row):
    out = {"source": row["source"], "id": row["id"]}
    if row["source"] == "credit_card":
        out["brand"] = row["brand"]
        out["last_four"] = row["last_four"]
    elif row["source"] == "gift_card":
        out["balance"] = row["balance"]
    return out


def json_or_none(text):
    return None if text is None else json.loads(text)


def text_or_none(value):
    return None if value is None else json.dumps(value)


def load_user(db, user_id):
    rows = db.query("SELECT * FROM users WHERE user_id = ?", [user_id])
    if not rows:
        raise ToolError("User not found")
    u = rows[0]
    methods = db.query("SELECT * FROM payment_methods WHERE user_id = ? ORDER BY pos", [user_id])
    orders = db.query("SELECT order_id FROM user_orders WHERE user_id = ? ORDER BY pos", [user_id])
    return {"user_id": u["user_id"], "name": {"first_name": u["first_name"], "last_name": u["last_name"]},
            "address": address_of(u), "email": u["email"],
            "payment_methods": {m["id"]: payment_method_of(m) for m in methods},
            "orders": [o["order_id"] for o in orders]}


def save_balance(db, user, method):
    db.execute("UPDATE payment_methods SET balance = ? WHERE user_id = ? AND id = ?",
               [method["balance"], user["user_id"], method["id"]])


def save_user(db, user):
    a = user["address"]
    db.execute("UPDATE users SET address1 = ?, address2 = ?, city = ?, country = ?, state = ?, zip = ? "
               "WHERE user_id = ?", [a["address1"], a["address2"], a["city"], a["country"], a["state"], a["zip"],
                                     user["user_id"]])
    for m in user["payment_methods"].values():
        if m["source"] == "gift_card":
            save_balance(db, user, m)


def load_order(db, order_id):
    rows = db.query("SELECT * FROM orders WHERE order_id = ?", [order_id])
    if not rows:
        raise ToolError("Order not found")
    o = rows[0]
    items = db.query("SELECT * FROM order_items WHERE order_id = ? ORDER BY pos", [order_id])
    fulfillments = db.query("SELECT * FROM fulfillments WHERE order_id = ? ORDER BY pos", [order_id])
    payments = db.query("SELECT * FROM order_payments WHERE order_id = ? ORDER BY pos", [order_id])
    return {
        "order_id": o["order_id"], "user_id": o["user_id"], "address": address_of(o),
        "items": [{"name": i["name"], "product_id": i["product_id"], "item_id": i["item_id"], "price": i["price"],
                   "options": json.loads(i["options"])} for i in items],
        "status": o["status"],
        "fulfillments": [{"tracking_id": json.loads(f["tracking_id"]), "item_ids": json.loads(f["item_ids"])}
                         for f in fulfillments],
        "payment_history": [{"transaction_type": p["transaction_type"], "amount": p["amount"],
                             "payment_method_id": p["payment_method_id"]} for p in payments],
        "cancel_reason": o["cancel_reason"],
        "exchange_items": json_or_none(o["exchange_items"]),
        "exchange_new_items": json_or_none(o["exchange_new_items"]),
        "exchange_payment_method_id": o["exchange_payment_method_id"],
        "exchange_price_difference": o["exchange_price_difference"],
        "return_items": json_or_none(o["return_items"]),
        "return_payment_method_id": o["return_payment_method_id"],
    }


def save_order(db, order):
    a = order["address"]
    oid = order["order_id"]
    db.execute("UPDATE orders SET address1 = ?, address2 = ?, city = ?, country = ?, state = ?, zip = ?, "
               "status = ?, cancel_reason = ?, exchange_items = ?, exchange_new_items = ?, "
               "exchange_payment_method_id = ?, exchange_price_difference = ?, return_items = ?, "
               "return_payment_method_id = ? WHERE order_id = ?",
               [a["address1"], a["address2"], a["city"], a["country"], a["state"], a["zip"], order["status"],
                order["cancel_reason"], text_or_none(order["exchange_items"]),
                text_or_none(order["exchange_new_items"]), order["exchange_payment_method_id"],
                order["exchange_price_difference"], text_or_none(order["return_items"]),
                order["return_payment_method_id"], oid])
    db.execute("DELETE FROM order_items WHERE order_id = ?", [oid])
    for pos, i in enumerate(order["items"]):
        db.execute("INSERT INTO order_items (order_id, pos, name, product_id, item_id, price, options) "
                   "VALUES (?, ?, ?, ?, ?, ?, ?)",
                   [oid, pos, i["name"], i["product_id"], i["item_id"], i["price"], json.dumps(i["options"])])
    db.execute("DELETE FROM order_payments WHERE order_id = ?", [oid])
    for pos, p in enumerate(order["payment_history"]):
        db.execute("INSERT INTO order_payments (order_id, pos, transaction_type, amount, payment_method_id) "
                   "VALUES (?, ?, ?, ?, ?)", [oid, pos, p["transaction_type"], p["amount"], p["payment_method_id"]])


def load_product(db, product_id):
    rows = db.query("SELECT * FROM products WHERE product_id = ?", [product_id])
    if not rows:
        raise ToolError("Product not found")
    variants = db.query("SELECT * FROM variants WHERE product_id = ? ORDER BY pos", [product_id])
    return {"name": rows[0]["name"], "product_id": rows[0]["product_id"],
            "variants": {v["item_id"]: {"item_id": v["item_id"], "options": json.loads(v["options"]),
                                        "available": v["available"] == 1, "price": v["price"]} for v in variants}}


def load_variant(db, product_id, variant_id):
    product = load_product(db, product_id)
    if variant_id not in product["variants"]:
        raise ToolError("Variant not found")
    return product["variants"][variant_id]


def payment_method(user, payment_method_id):
    if payment_method_id not in user["payment_methods"]:
        raise ToolError("Payment method not found")
    return user["payment_methods"][payment_method_id]


def count_check(order, item_ids, message):
    all_item_ids = [item["item_id"] for item in order["items"]]
    for item_id in item_ids:
        if item_ids.count(item_id) > all_item_ids.count(item_id):
            raise ToolError(message(item_id))


def first_item(order, item_id):
    item = next((item for item in order["items"] if item["item_id"] == item_id), None)
    if item is None:
        raise ToolError(f"Item {item_id} not found")
    return item


def cancel_pending_order(db, order_id, reason):
    order = load_order(db, order_id)
    if order["status"] != "pending":
        raise ToolError("Non-pending order cannot be cancelled")
    if reason not in REASONS:
        raise ToolError("Invalid reason")
    refunds = []
    user = None
    for payment in order["payment_history"]:
        payment_id = payment["payment_method_id"]
        refunds.append({"transaction_type": "refund", "amount": payment["amount"], "payment_method_id": payment_id})
        if user is None:
            user = load_user(db, order["user_id"])
        method = payment_method(user, payment_id)  # a later payment's method not the user's: the refunds stay
        if method["source"] == "gift_card":
            method["balance"] = method["balance"] + payment["amount"]
            method["balance"] = round(method["balance"], 2)
            save_balance(db, user, method)
    order["status"] = "cancelled"
    order["cancel_reason"] = reason
    order["payment_history"].extend(refunds)
    save_order(db, order)
    return order


def exchange_delivered_order_items(db, order_id, item_ids, new_item_ids, payment_method_id):
    order = load_order(db, order_id)
    if order["status"] != "delivered":
        raise ToolError("Non-delivered order cannot be exchanged")
    count_check(order, item_ids, lambda item_id: f"Number of {item_id} not found.")
    if len(item_ids) != len(new_item_ids):
        raise ToolError("The number of items to be exchanged should match.")
    diff_price = 0
    for item_id, new_item_id in zip(item_ids, new_item_ids, strict=False):
        item = first_item(order, item_id)
        variant = load_variant(db, item["product_id"], new_item_id)
        if not variant["available"]:
            raise ToolError(f"New item {new_item_id} not found or available")
        diff_price += variant["price"] - item["price"]
    diff_price = round(diff_price, 2)
    user = load_user(db, order["user_id"])
    method = payment_method(user, payment_method_id)
    if method["source"] == "gift_card" and method["balance"] < diff_price:
        raise ToolError("Insufficient gift card balance to pay for the price difference")
    order["status"] = "exchange requested"
    order["exchange_items"] = sorted(item_ids)
    order["exchange_new_items"] = sorted(new_item_ids)
    order["exchange_payment_method_id"] = payment_method_id
    order["exchange_price_difference"] = diff_price
    save_order(db, order)
    return order


def find_user_id_by_name_zip(db, first_name, last_name, zip):
    for u in db.query("SELECT user_id, first_name, last_name, zip FROM users ORDER BY pos"):
        if (u["first_name"].lower() == first_name.lower() and u["last_name"].lower() == last_name.lower()
                and u["zip"] == zip):
            return u["user_id"]
    raise ToolError("User not found")


def find_user_id_by_email(db, email):
    for u in db.query("SELECT user_id, email FROM users ORDER BY pos"):
        if u["email"].lower() == email.lower():
            return u["user_id"]
    raise ToolError("User not found")


def get_order_details(db, order_id):
    return load_order(db, order_id)


def get_product_details(db, product_id):
    return load_product(db, product_id)


def get_user_details(db, user_id):
    return load_user(db, user_id)


def list_all_product_types(db):
    product_dict = {p["name"]: p["product_id"] for p in db.query("SELECT name, product_id FROM products ORDER BY pos")}
    return json.dumps(product_dict, sort_keys=True)


def new_address(address1, address2, city, state, country, zip):
    return {"address1": address1, "address2": address2, "city": city, "country": country, "state": state,
            "zip": zip}


def modify_pending_order_address(db, order_id, address1, address2, city, state, country, zip):
    order = load_order(db, order_id)
    if "pending" not in order["status"]:
        raise ToolError("Non-pending order cannot be modified")
    order["address"] = new_address(address1, address2, city, state, country, zip)
    save_order(db, order)
    return order


def modify_pending_order_items(db, order_id, item_ids, new_item_ids, payment_method_id):
    order = load_order(db, order_id)
    if order["status"] != "pending":
        raise ToolError("Non-pending order cannot be modified")
    count_check(order, item_ids, lambda item_id: f"{item_id} not found")
    if len(item_ids) != len(new_item_ids):
        raise ToolError("The number of items to be exchanged should match")
    diff_price = 0
    variant = None
    for item_id, new_item_id in zip(item_ids, new_item_ids, strict=False):
        if item_id == new_item_id:
            raise ToolError("The new item id should be different from the old item id")
        item = first_item(order, item_id)
        variant = load_variant(db, item["product_id"], new_item_id)
        if not variant["available"]:
            raise ToolError(f"New item {new_item_id} not found or available")
        diff_price += variant["price"] - item["price"]
    user = load_user(db, order["user_id"])
    method = payment_method(user, payment_method_id)
    if method["source"] == "gift_card" and method["balance"] < diff_price:
        raise ToolError("Insufficient gift card balance to pay for the new item")
    order["payment_history"].append({"transaction_type": "payment" if diff_price > 0 else "refund",
                                     "amount": float(abs(diff_price)), "payment_method_id": payment_method_id})
    if method["source"] == "gift_card":
        method["balance"] = method["balance"] - diff_price
        method["balance"] = round(method["balance"], 2)
    for item_id, new_item_id in zip(item_ids, new_item_ids, strict=False):
        item = first_item(order, item_id)
        # τ² sets every modified item to the price and options of the loop's last variant
        item["item_id"] = new_item_id
        item["price"] = variant["price"]
        item["options"] = variant["options"]
    order["status"] = "pending (item modified)"
    save_user(db, user)
    save_order(db, order)
    return order


def modify_pending_order_payment(db, order_id, payment_method_id):
    order = load_order(db, order_id)
    if "pending" not in order["status"]:
        raise ToolError("Non-pending order cannot be modified")
    user = load_user(db, order["user_id"])
    method = payment_method(user, payment_method_id)
    history = order["payment_history"]
    if len(history) != 1 or history[0]["transaction_type"] != "payment":
        raise ToolError("There should be exactly one payment for a pending order")
    if history[0]["payment_method_id"] == payment_method_id:
        raise ToolError("The new payment method should be different from the current one")
    amount = history[0]["amount"]
    if method["source"] == "gift_card" and method["balance"] < amount:
        raise ToolError("Insufficient gift card balance to pay for the order")
    history.extend([
        {"transaction_type": "payment", "amount": float(amount), "payment_method_id": payment_method_id},
        {"transaction_type": "refund", "amount": float(amount), "payment_method_id": history[0]["payment_method_id"]},
    ])
    save_order(db, order)
    if method["source"] == "gift_card":
        method["balance"] = method["balance"] - amount
        method["balance"] = round(method["balance"], 2)
        save_balance(db, user, method)
    old = payment_method(user, history[0]["payment_method_id"])  # not the user's: the payments and charge stay
    if old["source"] == "gift_card":
        old["balance"] = old["balance"] + amount
        old["balance"] = round(old["balance"], 2)
        save_balance(db, user, old)
    return order


def modify_user_address(db, user_id, address1, address2, city, state, country, zip):
    user = load_user(db, user_id)
    user["address"] = new_address(address1, address2, city, state, country, zip)
    save_user(db, user)
    return user


def return_delivered_order_items(db, order_id, item_ids, payment_method_id):
    order = load_order(db, order_id)
    if order["status"] != "delivered":
        raise ToolError("Non-delivered order cannot be returned")
    user = load_user(db, order["user_id"])
    method = payment_method(user, payment_method_id)
    if method["source"] != "gift_card" and payment_method_id != order["payment_history"][0]["payment_method_id"]:
        raise ToolError("Payment method should be the original payment method")
    count_check(order, item_ids, lambda item_id: "Some item not found")
    order["status"] = "return requested"
    order["return_items"] = sorted(item_ids)
    order["return_payment_method_id"] = payment_method_id
    save_order(db, order)
    return order
