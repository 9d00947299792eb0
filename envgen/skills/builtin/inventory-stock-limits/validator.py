"""Validator of the inventory-stock-limits skill.

Inventory: a numeric stock column with a limit, tools that move stock, checks on the stock.

Runs sandboxed (restricted Python, see gym_envs.executor); `spec` is the environment
spec as a plain JSON dict. Returns a list of problems, each saying what to fix; an empty
list means the spec has the structure this skill is about.
"""



import re


def split_top(text, sep):
    """Split text at `sep` characters outside quotes and parentheses."""
    parts = []
    depth = 0
    quote = ""
    cur = ""
    for ch in text:
        if quote:
            cur += ch
            if ch == quote:
                quote = ""
            continue
        if ch == "'" or ch == '"':
            quote = ch
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == sep and depth == 0:
            parts.append(cur.strip())
            cur = ""
            continue
        cur += ch
    if cur.strip():
        parts.append(cur.strip())
    return parts

TABLE_RE = r"CREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?[\"`\[]?(\w+)[\"`\]]?\s*\((.*?)\)\s*(?:;|$)"
CONSTRAINT_WORDS = ("PRIMARY", "CHECK", "UNIQUE", "FOREIGN", "CONSTRAINT")


def tables(spec):
    """Table name -> {"columns": {column: declaration}, "constraints": [text]}, from state.schema_sql."""
    out = {}
    schema = (spec.get("state") or {}).get("schema_sql") or ""
    for m in re.finditer(TABLE_RE, schema, re.I | re.S):
        columns = {}
        constraints = []
        for part in split_top(m.group(2), ","):
            words = part.split(None, 1)
            if not words:
                continue
            if words[0].upper() in CONSTRAINT_WORDS:
                constraints.append(part)
            else:
                columns[words[0].strip('"`[]').lower()] = words[1] if len(words) > 1 else ""
        out[m.group(1).lower()] = {"columns": columns, "constraints": constraints}
    return out


def is_numeric(declaration):
    return re.match(r"\s*(INT|INTEGER|BIGINT|REAL|NUMERIC|DECIMAL|FLOAT|DOUBLE)\b", declaration, re.I) is not None

def all_turns(spec):
    """(task, turn index, turn) for every turn of every task."""
    out = []
    for task in spec.get("tasks", []):
        for i, turn in enumerate(task.get("turns", [])):
            out.append((task, i, turn))
    return out


def every_turn(spec):
    """Every turn of every task."""
    return [turn for task in spec.get("tasks", []) for turn in task.get("turns", [])]


def check_text(check):
    """The SQL or Python text of a check ('' for other kinds)."""
    return check.get("query") or check.get("code") or ""


def checks_of(turn, kinds):
    return [c for c in turn.get("checks", []) if c.get("kind") in kinds]


def called(turn):
    return [c.get("name") for c in turn.get("reference", [])]

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
