"""Validator of the inventory-stock-limits skill.

Inventory: a numeric stock column with a limit, tools that move stock, checks on the stock.

Runs sandboxed (restricted Python, see gym_envs.sandbox); `spec` is the environment
spec as a plain JSON dict. Returns a list of problems, each saying what to fix; an empty
list means the spec has the structure this skill is about. The helpers of
envgen/skills/validator_helpers.py (tables, functions, write_tools, checks_of, called, ...) are
prepended before it runs.
"""


import re

STOCK = r"^(qty|quantity|stock|on_hand|in_stock|units|available|seats_left|inventory)$|_qty$|^qty_|_stock$|on_hand"
SHORTAGE = r"insufficient|not enough|out of stock|only %d|only [0-9]|exceed|fit|capacity|left"


def validate(spec):
    problems = []
    stock = []
    for name, t in tables(spec).items():
        for col, decl in t["columns"].items():
            if re.search(STOCK, col) and is_numeric(decl):
                stock.append((name, col))
    if not stock:
        problems.append("no table has a numeric stock column (e.g. on_hand INTEGER NOT NULL CHECK (on_hand >= 0))")
        return problems
    schema = ((spec.get("state") or {}).get("schema_sql") or "").lower()
    code = spec.get("code") or ""
    guarded = [c for t, c in stock if re.search(r"check\s*\(\s*" + c + r"\s*>=?\s*0", schema)]
    raises = [r for r in re.findall(r"ToolError\(([^\n]*)", code) if re.search(SHORTAGE, r, re.I)]
    if not guarded and not raises:
        problems.append("stock is never limited: add CHECK (%s >= 0) and a ToolError when a request exceeds what "
                        "is on hand" % stock[0][1])
    moved = [c for t, c in stock if re.search(r"SET\s+(\w+\s*=[^,]*,\s*)*" + c + r"\s*=\s*" + c + r"\s*[-+]",
                                              code, re.I)]
    if not moved:
        problems.append("no tool updates the stock relative to itself (UPDATE ... SET %s = %s - ?)" % (
            stock[0][1], stock[0][1]))
    checked = False
    for turn in every_turn(spec):
        for c in checks_of(turn, ("sql", "python")):
            if any(col in check_text(c).lower() for t, col in stock):
                checked = True
    if not checked:
        problems.append("no sql or python check reads the stock column; pin the quantities a task must leave")
    return problems
